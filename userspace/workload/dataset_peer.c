/* dataset_peer.c — vLLM's prefix_repetition and SGLang's generated-shared-prefix (the prefix
 * caching workloads), SGLang's ShareGPT-based random, and dataset helpers (see dataset_peer.h).
 * The file-backed ones (sonnet, burstgpt, mooncake) are dataset_trace.c. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "workload/dataset_peer.h"
#include "workload/dataset_peer_int.h"
#include "base/json_file.h"
#include "base/rng.h"
#include "base/strbuf.h"

int ls_peer_words(uint64_t rng[2], uint32_t n, uint32_t **out)
{
	*out = malloc(((size_t)n + 1) * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (uint32_t j = 0; j < n; j++)
		(*out)[j] = (uint32_t)ls_rng_below(rng, ls_dataset_n_words());
	return 0;
}

int ls_peer_finish(struct ls_prompt *p, struct ls_strbuf *text, uint32_t words, uint32_t output_len,
		   const struct ls_peer_count *c)
{
	p->text = text->data ? text->data : strdup("");
	text->data = NULL;
	text->len = text->cap = 0;
	if (!p->text)
		return -ENOMEM;
	p->output_len = output_len;
	p->timestamp_s = -1.0;
	p->prompt_len = words ? words : ls_dataset_estimate_tokens(p->text);
	if (!c->count) {
		*c->estimated = 1;
		return 0;
	}
	int err = c->count(c->ctx, p->text, &p->prompt_len);
	if (err)
		fprintf(stderr, "latscope: counting a prompt's tokens (/tokenize) failed (%s)\n", strerror(-err));
	return err;
}

int ls_peer_count_text(const struct ls_peer_count *c, const char *text, uint32_t *out)
{
	if (c->count)
		return c->count(c->ctx, text, out);
	*c->estimated = 1;
	*out = ls_dataset_estimate_tokens(text);
	return 0;
}

int ls_peer_done(struct ls_dataset *ds, int estimated, int err)
{
	ds->lens_estimated = estimated;
	if (err)
		ls_dataset_free(ds);
	return err;
}

int ls_peer_alloc(struct ls_dataset *ds, size_t n)
{
	memset(ds, 0, sizeof(*ds));
	ds->prompts = n ? calloc(n, sizeof(*ds->prompts)) : NULL;
	return n && !ds->prompts ? -ENOMEM : 0;
}

/* One prompt of word indices a (na) then b (nb), separated by sep (may be ""). */
static int two_part(struct ls_prompt *p, const uint32_t *a, uint32_t na, const char *sep, const uint32_t *b,
		    uint32_t nb, uint32_t output_len, const struct ls_peer_count *c)
{
	struct ls_strbuf text = { 0 };
	int err = ls_dataset_word_text(&text, a, na);
	if (!err)
		err = ls_strbuf_puts(&text, sep);
	if (!err)
		err = ls_dataset_word_text(&text, b, nb);
	if (!err)
		return ls_peer_finish(p, &text, na + nb, output_len, c);
	ls_strbuf_free(&text);
	return err;
}

int ls_dataset_prefix_repetition(struct ls_dataset *ds, const struct ls_prefix_rep_opts *o,
				 ls_token_count_fn count, void *count_ctx)
{
	if (!o->num_prefixes || o->n < o->num_prefixes) {
		fprintf(stderr, "latscope: --num-prompts (%zu) must be at least --prefix-repetition-num-prefixes (%u)\n",
			o->n, o->num_prefixes);
		return -EINVAL;
	}
	size_t per = o->n / o->num_prefixes, total = per * o->num_prefixes;
	int err = ls_peer_alloc(ds, total), estimated = 0;
	struct ls_peer_count c = { count, count_ctx, &estimated };
	uint64_t rng[2];
	ls_rng_seed(rng, o->seed);
	uint32_t *prefix = NULL, *suffix = NULL;
	/* vLLM's order: a prefix, then its suffixes, prefix after prefix. */
	for (uint32_t k = 0; !err && k < o->num_prefixes; k++) {
		free(prefix);
		if ((err = ls_peer_words(rng, o->prefix_len, &prefix)))
			break;
		for (size_t s = 0; !err && s < per; s++) {
			free(suffix);
			err = ls_peer_words(rng, o->suffix_len, &suffix);
			if (!err)
				err = two_part(&ds->prompts[ds->n], prefix, o->prefix_len, "", suffix, o->suffix_len,
					       o->output_len, &c);
			ds->n++;
		}
	}
	free(prefix);
	free(suffix);
	if (err) {
		ls_dataset_free(ds);
		return err;
	}
	if (!o->disable_shuffle)
		ls_rng_shuffle(rng, ds->prompts, ds->n, sizeof(*ds->prompts));
	if (total < o->n)
		fprintf(stderr, "latscope: prefix_repetition: %zu prompts (%u prefixes x %zu), as vLLM builds it for "
				"--num-prompts %zu\n", total, o->num_prefixes, per, o->n);
	ds->lens_estimated = estimated;
	return 0;
}

/* Turns per conversation (SGLang's --gsp-num-turns; 0 means 1). */
static uint32_t gsp_turns(const struct ls_gsp_opts *o)
{
	return o->num_turns > 1 ? o->num_turns : 1;
}

/* SGLang's compute_random_lens: n draws in [max(int(L r), 1), L]; all 0 when L is 0. */
static void random_lens(uint64_t rng[2], uint32_t len, double ratio, uint32_t *out, size_t n)
{
	uint32_t lo = (uint32_t)floor((double)len * ratio);
	if (lo < 1)
		lo = 1;
	for (size_t i = 0; i < n; i++)
		out[i] = len ? lo + (uint32_t)ls_rng_below(rng, (uint64_t)len - lo + 1) : 0;
}

/* Each request's group: prompts_per_group each (uniform), or Zipf(alpha) draws over groups. */
static void gsp_groups(uint64_t rng[2], const struct ls_gsp_opts *o, uint32_t *group, size_t n)
{
	double norm = 0.0;
	for (uint32_t g = 0; o->zipf_alpha > 0 && g < o->num_groups; g++)
		norm += pow(g + 1.0, -o->zipf_alpha);
	for (size_t i = 0; i < n; i++) {
		group[i] = (uint32_t)(i / o->prompts_per_group);
		if (o->zipf_alpha <= 0)
			continue;
		double u = ls_rng_uniform(rng) * norm, acc = 0.0;
		uint32_t g = 0;
		while (g + 1 < o->num_groups && (acc += pow(g + 1.0, -o->zipf_alpha)) <= u)
			g++;
		group[i] = g;
	}
}

/* The draws, in SGLang's order: system lengths, question lengths, output lengths, system
 * prompts, questions. arrays: [0] system lens (groups), [1] question lens, [2] output lens. */
static int gsp_draw(uint64_t rng[2], const struct ls_gsp_opts *o, size_t n, uint32_t *lens[3], uint32_t ***sys)
{
	lens[0] = calloc(o->num_groups, sizeof(uint32_t));
	lens[1] = calloc(n * gsp_turns(o), sizeof(uint32_t)); /* SGLang: (groups, prompts, turns) */
	lens[2] = calloc(n, sizeof(uint32_t));
	*sys = calloc(o->num_groups, sizeof(**sys));
	if (!lens[0] || !lens[1] || !lens[2] || !*sys)
		return -ENOMEM;
	random_lens(rng, o->system_prompt_len, o->range_ratio, lens[0], o->num_groups);
	random_lens(rng, o->question_len, o->range_ratio, lens[1], n * gsp_turns(o));
	random_lens(rng, o->output_len, o->range_ratio, lens[2], n);
	for (uint32_t g = 0; g < o->num_groups; g++)
		if (ls_peer_words(rng, lens[0][g], &(*sys)[g]))
			return -ENOMEM;
	return 0;
}

static int gsp_check(const struct ls_gsp_opts *o)
{
	if (!o->num_groups || !o->prompts_per_group || (uint64_t)o->num_groups * o->prompts_per_group > 10000000) {
		fprintf(stderr, "latscope: --gsp-num-groups and --gsp-prompts-per-group must be >= 1 (at most 10^7 "
				"prompts in all)\n");
		return -EINVAL;
	}
	if (gsp_turns(o) > 1000 || (uint64_t)o->num_groups * o->prompts_per_group * gsp_turns(o) > 10000000) {
		fprintf(stderr, "latscope: --gsp-num-turns must be 1..1000 (at most 10^7 requests in all)\n");
		return -EINVAL;
	}
	if (!(o->range_ratio >= 0.0 && o->range_ratio <= 1.0)) {
		fprintf(stderr, "latscope: --gsp-range-ratio %g must be in [0, 1]\n", o->range_ratio);
		return -EINVAL;
	}
	if (!o->output_len) {
		fprintf(stderr, "latscope: --gsp-output-len must be at least 1\n");
		return -EINVAL;
	}
	return 0;
}

static int gsp_build(struct ls_dataset *ds, const struct ls_gsp_opts *o, uint64_t rng[2], uint32_t *lens[3],
		     uint32_t **sys, uint32_t *group, const struct ls_peer_count *c)
{
	size_t n = (size_t)o->num_groups * o->prompts_per_group, turns = gsp_turns(o);
	struct ls_peer_count none = { NULL, NULL, c->estimated };
	for (size_t k = 0; k < n * turns; k++) {
		size_t i = k / turns; /* the conversation; k % turns its turn */
		uint32_t *q = NULL, g = group[i];
		int err = ls_peer_words(rng, lens[1][k], &q);
		if (!err) /* turn 0 carries the group's system prompt; later turns the question alone */
			err = k % turns ? two_part(&ds->prompts[k], NULL, 0, "", q, lens[1][k], lens[2][i],
						   o->fast_prepare ? &none : c)
					: two_part(&ds->prompts[k], sys[g], lens[0][g], "\n\n", q, lens[1][k], lens[2][i],
						   o->fast_prepare ? &none : c);
		free(q);
		ds->n = k + 1;
		if (err)
			return err;
		ds->prompts[k].prefix_group = g + 1;
		if (o->fast_prepare)
			ds->prompts[k].prompt_len = 1; /* SGLang's --gsp-fast-prepare: not counted */
	}
	return 0;
}

int ls_dataset_gsp(struct ls_dataset *ds, const struct ls_gsp_opts *o, ls_token_count_fn count, void *count_ctx)
{
	memset(ds, 0, sizeof(*ds));
	if (gsp_check(o))
		return -EINVAL;
	size_t n = (size_t)o->num_groups * o->prompts_per_group;
	int estimated = 0, err = ls_peer_alloc(ds, n * gsp_turns(o));
	struct ls_peer_count c = { count, count_ctx, &estimated };
	uint32_t *lens[3] = { NULL, NULL, NULL }, **sys = NULL, *group = calloc(n, sizeof(*group));
	uint64_t rng[2];
	ls_rng_seed(rng, o->seed);
	if (!err && !group)
		err = -ENOMEM;
	if (!err)
		err = gsp_draw(rng, o, n, lens, &sys);
	if (!err) {
		gsp_groups(rng, o, group, n);
		err = gsp_build(ds, o, rng, lens, sys, group, &c);
	}
	for (uint32_t g = 0; sys && g < o->num_groups; g++)
		free(sys[g]);
	free(sys);
	for (int k = 0; k < 3; k++)
		free(lens[k]);
	free(group);
	if (err) {
		ls_dataset_free(ds);
		return err;
	}
	if (!o->ordered) /* conversations as wholes: their turns stay together, in order */
		ls_rng_shuffle(rng, ds->prompts, n, gsp_turns(o) * sizeof(*ds->prompts));
	ds->lens_estimated = estimated;
	return 0;
}

void ls_dataset_skip(struct ls_dataset *ds, size_t offset)
{
	if (!offset)
		return;
	size_t drop = offset < ds->n ? offset : ds->n;
	for (size_t i = 0; i < drop; i++) {
		free(ds->prompts[i].text);
		free(ds->prompts[i].token_ids);
	}
	memmove(ds->prompts, ds->prompts + drop, (ds->n - drop) * sizeof(*ds->prompts));
	ds->n -= drop;
}

int ls_dataset_oversample(struct ls_dataset *ds, size_t n, uint64_t seed)
{
	if (!ds->n || ds->n >= n)
		return 0;
	struct ls_prompt *grown = realloc(ds->prompts, n * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	ds->prompts = grown;
	uint64_t rng[2];
	ls_rng_seed(rng, seed);
	size_t base = ds->n;
	for (size_t i = base; i < n; i++) {
		const struct ls_prompt *src = &ds->prompts[ls_rng_below(rng, base)];
		struct ls_prompt *p = &ds->prompts[i];
		*p = *src;
		p->text = src->text ? strdup(src->text) : NULL;
		p->token_ids = src->n_token_ids ? malloc(src->n_token_ids * sizeof(*p->token_ids)) : NULL;
		if ((src->text && !p->text) || (src->n_token_ids && !p->token_ids)) {
			free(p->text);
			free(p->token_ids);
			return -ENOMEM;
		}
		if (p->token_ids)
			memcpy(p->token_ids, src->token_ids, src->n_token_ids * sizeof(*p->token_ids));
		ds->n = i + 1;
	}
	fprintf(stderr, "latscope: %zu prompts for --num-prompts %zu: oversampled (as vLLM; --no-oversample "
			"runs only those)\n", base, n);
	return 0;
}

/* One Spec-Bench line: its turns[0] (strdup'd) into *prompt, or NULL when its category is not
 * the one asked. 0, or -errno after a message naming path:line. */
static int spec_bench_line(const char *path, size_t line, const char *text, size_t len, const char *category,
			   char **prompt)
{
	cJSON *o = cJSON_ParseWithLength(text, len);
	const cJSON *turns = cJSON_GetObjectItemCaseSensitive(o, "turns");
	const cJSON *cat = cJSON_GetObjectItemCaseSensitive(o, "category");
	int err = 0;
	*prompt = NULL;
	if (!cJSON_IsArray(turns) || !cJSON_IsString(turns->child)) {
		fprintf(stderr, "latscope: %s:%zu: needs \"turns\", a list of strings (Spec-Bench's question.jsonl)\n",
			path, line);
		err = -EINVAL;
	} else if (!category || !*category || (cJSON_IsString(cat) && !strcmp(cat->valuestring, category))) {
		*prompt = strdup(turns->child->valuestring);
		err = *prompt ? 0 : -ENOMEM;
	}
	cJSON_Delete(o);
	return err;
}

/* The file's prompts of the category, in file order. 0 or -errno after a message. */
static int spec_bench_read(const char *path, const char *category, char ***out, size_t *n_out)
{
	size_t len = 0, n = 0, line = 0;
	char *buf = ls_read_file(path, "latscope", "dataset", &len), **list = NULL;
	int err = buf ? 0 : -EIO;
	for (char *at = buf; !err && at && at < buf + len;) {
		char *nl = memchr(at, '\n', (size_t)(buf + len - at)), *next = nl ? nl + 1 : buf + len, *prompt;
		size_t llen = (size_t)((nl ? nl : buf + len) - at);
		line++;
		if (llen && strspn(at, " \t\r") < llen && !(err = spec_bench_line(path, line, at, llen, category, &prompt))
		    && prompt) {
			char **grown = realloc(list, (n + 1) * sizeof(*grown));
			if (!grown) {
				free(prompt);
				err = -ENOMEM;
				break;
			}
			list = grown;
			list[n++] = prompt;
		}
		at = next;
	}
	free(buf);
	*out = list;
	*n_out = n;
	return err;
}

int ls_dataset_spec_bench(struct ls_dataset *ds, const char *path, const struct ls_spec_bench_opts *o,
			  ls_token_count_fn count, void *count_ctx)
{
	char **list = NULL;
	size_t total = 0;
	int estimated = 0, err = spec_bench_read(path, o->category, &list, &total);
	if (!err && !total) {
		fprintf(stderr, "latscope: %s: no question%s%s\n", path, o->category && *o->category ? " of category " : "",
			o->category && *o->category ? o->category : "");
		err = -EINVAL;
	}
	uint64_t rng[2];
	ls_rng_seed(rng, o->seed);
	if (!err && !o->in_order) /* SpecBench.load_data shuffles by seed (latscope's generator, not Python's) */
		ls_rng_shuffle(rng, list, total, sizeof(*list));
	size_t take = o->n && o->n < total ? o->n : total;
	struct ls_peer_count c = { count, count_ctx, &estimated };
	if (!err)
		err = ls_peer_alloc(ds, take);
	for (size_t i = 0; !err && i < take; i++) {
		struct ls_strbuf b = { list[i], strlen(list[i]), strlen(list[i]) + 1 };
		list[i] = NULL; /* the prompt owns it now */
		err = ls_peer_finish(&ds->prompts[i], &b, 0, o->output_len, &c);
		ds->n++;
	}
	if (!err && !o->no_oversample && o->n > ds->n)
		err = ls_dataset_oversample(ds, o->n, o->seed);
	for (size_t i = 0; i < total; i++)
		free(list[i]);
	free(list);
	return ls_peer_done(ds, estimated, err);
}
