/* dataset_sglang.c — SGLang's mooncake trace and its ShareGPT-based random (see dataset_peer.h). */
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

#define MOONCAKE_HI          128  /* " hi" per hash id, as SGLang builds the query */
#define MOONCAKE_DEFAULT_OUT 256  /* output_length when a record has none */
#define MOONCAKE_MAX_ROUNDS  64
#define MOONCAKE_MAX_OUT     (1 << 20) /* each later round carries this many placeholder words */

struct mc_record {
	double  ts_ms;
	uint32_t output_len;
	cJSON  *hash_ids; /* borrowed from the parsed line */
	cJSON  *obj;
	size_t  line;
};

static int mc_cmp(const void *a, const void *b)
{
	const struct mc_record *x = a, *y = b;
	if (x->ts_ms != y->ts_ms)
		return x->ts_ms < y->ts_ms ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line; /* stable, as Python's sort */
}

/* The base query: each hash id, then " hi" x 128, then the request. */
static int mc_query(struct ls_strbuf *q, const cJSON *hash_ids)
{
	int err = 0;
	for (const cJSON *h = cJSON_IsArray(hash_ids) ? hash_ids->child : NULL; !err && h; h = h->next) {
		if (!cJSON_IsNumber(h))
			return -EINVAL;
		err = ls_strbuf_printf(q, "%.0f", h->valuedouble);
		for (int k = 0; !err && k < MOONCAKE_HI; k++)
			err = ls_strbuf_puts(q, k ? " hi" : "hi");
	}
	return err ? err : ls_strbuf_puts(q, "Tell me a story based on this context.");
}

/* Round k's prompt: the history so far in SGLang's no-template form ("role: content" lines). */
static int mc_round(struct ls_strbuf *b, const char *query, uint32_t round, uint32_t output_len)
{
	int err = 0;
	for (uint32_t r = 0; !err && r <= round; r++) {
		err = ls_strbuf_printf(b, "%suser: Round %u: %s", r ? "\n" : "", r + 1, query);
		if (r == round)
			break;
		err = err ? err : ls_strbuf_puts(b, "\nassistant: ");
		for (uint32_t k = 0; !err && k < output_len; k++)
			err = ls_strbuf_puts(b, k ? " story" : "story");
	}
	return err;
}

static int mc_parse(char *buf, size_t len, const char *path, size_t n, struct mc_record *recs, size_t *n_recs)
{
	size_t line = 0;
	for (char *at = buf; at < buf + len && (!n || *n_recs < n);) {
		char *nl = memchr(at, '\n', (size_t)(buf + len - at));
		size_t llen = nl ? (size_t)(nl - at) : (size_t)(buf + len - at);
		char *line_start = at;
		at = nl ? nl + 1 : buf + len;
		line++;
		if (strspn(line_start, " \t\r") >= llen)
			continue;
		cJSON *o = cJSON_ParseWithLength(line_start, llen);
		const cJSON *ts = cJSON_GetObjectItemCaseSensitive(o, "timestamp");
		const cJSON *out = cJSON_GetObjectItemCaseSensitive(o, "output_length");
		if (!cJSON_IsObject(o) || !cJSON_IsNumber(ts) || (out && !cJSON_IsNumber(out))) {
			fprintf(stderr, "latscope: %s:%zu: not a mooncake record ({\"timestamp\": ms, \"output_length\": N, "
					"\"hash_ids\": [...]})\n", path, line);
			cJSON_Delete(o);
			return -EINVAL;
		}
		struct mc_record *r = &recs[(*n_recs)++];
		r->obj = o;
		r->ts_ms = ts->valuedouble;
		if (out && !(out->valuedouble <= MOONCAKE_MAX_OUT)) {
			fprintf(stderr, "latscope: %s:%zu: output_length over %d\n", path, line, MOONCAKE_MAX_OUT);
			cJSON_Delete(o);
			return -EINVAL;
		}
		r->output_len = out && out->valuedouble >= 1 ? (uint32_t)out->valuedouble : MOONCAKE_DEFAULT_OUT;
		r->hash_ids = cJSON_GetObjectItemCaseSensitive(o, "hash_ids");
		r->line = line;
	}
	return 0;
}

static int mc_build(struct ls_dataset *ds, struct mc_record *recs, size_t n_recs, const struct ls_mooncake_opts *o,
		    const struct ls_peer_count *c)
{
	uint32_t rounds = o->num_rounds ? o->num_rounds : 1;
	for (size_t i = 0; i < n_recs; i++) {
		struct ls_strbuf q = { 0 };
		int err = mc_query(&q, recs[i].hash_ids);
		for (uint32_t k = 0; !err && k < rounds; k++) {
			struct ls_strbuf b = { 0 };
			struct ls_prompt *p = &ds->prompts[ds->n];
			err = mc_round(&b, q.data, k, recs[i].output_len);
			if (!err)
				err = ls_peer_finish(p, &b, 0, recs[i].output_len, c);
			ls_strbuf_free(&b);
			ds->n++;
			p->timestamp_s = (recs[i].ts_ms - recs[0].ts_ms) / 1000.0 * o->slowdown;
		}
		ls_strbuf_free(&q);
		if (err)
			return err;
	}
	return 0;
}

int ls_dataset_mooncake(struct ls_dataset *ds, const char *path, const struct ls_mooncake_opts *o,
			ls_token_count_fn count, void *count_ctx)
{
	memset(ds, 0, sizeof(*ds));
	if (o->num_rounds > MOONCAKE_MAX_ROUNDS || !(o->slowdown > 0) || isinf(o->slowdown)) {
		fprintf(stderr, "latscope: --mooncake-num-rounds must be 1..%d and --mooncake-slowdown-factor > 0\n",
			MOONCAKE_MAX_ROUNDS);
		return -EINVAL;
	}
	size_t len = 0, n_recs = 0;
	char *buf = ls_read_file(path, "latscope", "dataset", &len);
	if (!buf)
		return -EIO;
	size_t cap = 1;
	for (size_t i = 0; i < len; i++)
		cap += buf[i] == '\n';
	struct mc_record *recs = calloc(cap, sizeof(*recs));
	int estimated = 0, err = recs ? mc_parse(buf, len, path, o->n, recs, &n_recs) : -ENOMEM;
	struct ls_peer_count c = { count, count_ctx, &estimated };
	if (!err && !n_recs) {
		fprintf(stderr, "latscope: %s: no records\n", path);
		err = -EINVAL;
	}
	if (!err) {
		qsort(recs, n_recs, sizeof(*recs), mc_cmp); /* SGLang takes the first n lines, then sorts */
		err = ls_peer_alloc(ds, n_recs * (o->num_rounds ? o->num_rounds : 1));
	}
	if (!err && (err = mc_build(ds, recs, n_recs, o, &c)) == -EINVAL)
		fprintf(stderr, "latscope: %s: a hash_ids item is not a number\n", path);
	for (size_t i = 0; recs && i < n_recs; i++)
		cJSON_Delete(recs[i].obj);
	free(recs);
	free(buf);
	return ls_peer_done(ds, estimated, err);
}

/* ---- SGLang's random: ShareGPT prompts repeated to length ---- */

/* Turn k's text (0: the prompt, 1: the answer) of an entry with at least two turns
 * ("conversations" or "conversation"), whoever spoke them; or NULL. */
static const char *turn(const cJSON *e, int k)
{
	const cJSON *conv = cJSON_GetObjectItemCaseSensitive(e, "conversations");
	if (!conv)
		conv = cJSON_GetObjectItemCaseSensitive(e, "conversation");
	if (!cJSON_IsArray(conv) || cJSON_GetArraySize(conv) < 2)
		return NULL;
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(k ? conv->child->next : conv->child, "value");
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* text's words, repeated (or cut) to want words, space-joined. 0, -ENOMEM, or 1 when text has
 * no word (SGLang skips an empty prompt). */
static int repeat_words(struct ls_strbuf *b, const char *text, uint32_t want)
{
	const char *ws = " \t\r\n";
	if (!text[strspn(text, ws)])
		return 1;
	const char *p = text;
	for (uint32_t k = 0; k < want; k++) {
		p += strspn(p, ws);
		if (!*p)
			p = text + strspn(text, ws); /* wrap around: the prompt again */
		size_t n = strcspn(p, ws);
		if ((k && ls_strbuf_puts(b, " ")) || ls_strbuf_append(b, p, n))
			return -ENOMEM;
		p += n;
	}
	return 0;
}

/* SGLang cuts the prompt's token ids to exactly want (sample_random_requests: (ids * ratio)[:want],
 * then decodes): without a local tokenizer, the longest byte prefix of b (whole UTF-8 characters)
 * the server counts at most want tokens for. want words are at least want tokens, so it is cut,
 * never padded. No counter (no /tokenize): left as want words, the lengths said to be estimates. */
static int cut_to_tokens(struct ls_strbuf *b, uint32_t want, const struct ls_peer_count *c)
{
	uint32_t got = 0;
	int err = c->count ? c->count(c->ctx, b->data, &got) : 0;
	if (err || !c->count || got <= want)
		return err;
	size_t lo = 0, hi = b->len; /* count(lo bytes) <= want < count(hi bytes) */
	char *text = b->data;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2, at = mid;
		while (at > lo && ((unsigned char)text[at] & 0xC0) == 0x80)
			at--; /* a UTF-8 character whole */
		if (at == lo)
			at = mid;
		char keep = text[at];
		text[at] = 0;
		err = c->count(c->ctx, text, &got);
		text[at] = keep;
		if (err)
			return err;
		*(got <= want ? &lo : &hi) = at;
	}
	text[lo] = 0;
	b->len = lo;
	return 0;
}

static int sgl_random_fill(struct ls_dataset *ds, cJSON **entries, size_t total, const uint32_t *in,
			   const uint32_t *out, size_t n, const struct ls_peer_count *c)
{
	for (size_t e = 0; e < total && ds->n < n; e++) {
		const char *text = turn(entries[e], 0);
		struct ls_strbuf b = { 0 };
		int rc = text ? repeat_words(&b, text, in[ds->n]) : 1;
		if (rc == 0)
			rc = cut_to_tokens(&b, in[ds->n], c);
		if (rc == 0)
			rc = ls_peer_finish(&ds->prompts[ds->n], &b, in[ds->n], out[ds->n], c);
		ls_strbuf_free(&b);
		if (rc < 0)
			return rc;
		if (rc == 0)
			ds->n++;
	}
	return 0;
}

int ls_dataset_sglang_random(struct ls_dataset *ds, const char *path, const struct ls_sglang_random_opts *o,
			     ls_token_count_fn count, void *count_ctx)
{
	int estimated = 0, err = ls_peer_alloc(ds, o->n);
	struct ls_peer_count c = { count, count_ctx, &estimated };
	uint32_t *in = calloc(o->n + 1, sizeof(*in)), *out = calloc(o->n + 1, sizeof(*out));
	uint64_t rng[2];
	ls_rng_seed(rng, o->seed);
	/* SGLang's order: input lengths, output lengths, then the shuffle. */
	uint32_t in_lo = (uint32_t)fmax(floor(o->input_len * o->range_ratio), 1);
	uint32_t out_lo = (uint32_t)fmax(floor(o->output_len * o->range_ratio), 1);
	for (size_t i = 0; in && out && i < o->n; i++)
		in[i] = in_lo + (uint32_t)ls_rng_below(rng, (uint64_t)o->input_len - in_lo + 1);
	for (size_t i = 0; in && out && i < o->n; i++)
		out[i] = out_lo + (uint32_t)ls_rng_below(rng, (uint64_t)o->output_len - out_lo + 1);
	cJSON *root = NULL, **entries = NULL;
	size_t total = 0;
	if (!err)
		err = !in || !out ? -ENOMEM : ls_sharegpt_entries(path, rng, &root, &entries, &total);
	if (!err)
		err = sgl_random_fill(ds, entries, total, in, out, o->n, &c);
	if (!err && ds->n < o->n)
		fprintf(stderr, "latscope: %s: %zu usable prompts for %zu (SGLang runs those)\n", path, ds->n, o->n);
	free(entries);
	free(in);
	free(out);
	cJSON_Delete(root);
	return ls_peer_done(ds, estimated, err ? err : ds->n ? 0 : -EINVAL);
}

/* ---- SGLang's sharegpt ---- */

static int sgl_sharegpt_take(struct ls_dataset *ds, cJSON **entries, size_t total, const struct ls_sglang_sharegpt_opts *o,
			     const struct ls_peer_count *c)
{
	for (size_t e = 0; e < total && ds->n < o->n; e++) {
		const char *prompt = turn(entries[e], 0), *answer = turn(entries[e], 1);
		if (!prompt || !answer)
			continue;
		struct ls_prompt *p = &ds->prompts[ds->n];
		uint32_t out = o->fixed_output_len;
		int err = ls_peer_count_text(c, prompt, &p->prompt_len);
		if (!err && !out)
			err = ls_peer_count_text(c, answer, &out);
		if (err)
			return err;
		/* SGLang prunes prompts or outputs under 2 tokens, and past --sharegpt-context-len */
		if (p->prompt_len < 2 || out < 2 || (o->context_len && (uint64_t)p->prompt_len + out > o->context_len))
			continue;
		if (!(p->text = strdup(prompt)))
			return -ENOMEM;
		p->output_len = out;
		p->timestamp_s = -1.0;
		ds->n++;
	}
	return 0;
}

int ls_dataset_sglang_sharegpt(struct ls_dataset *ds, const char *path, const struct ls_sglang_sharegpt_opts *o,
			       ls_token_count_fn count, void *count_ctx)
{
	if (o->fixed_output_len && o->fixed_output_len < 4) {
		fprintf(stderr, "latscope: --sharegpt-output-len %u: SGLang needs at least 4\n", o->fixed_output_len);
		return -EINVAL;
	}
	int estimated = 0, err = ls_peer_alloc(ds, o->n);
	struct ls_peer_count c = { count, count_ctx, &estimated };
	uint64_t rng[2];
	ls_rng_seed(rng, o->seed);
	cJSON *root = NULL, **entries = NULL;
	size_t total = 0;
	if (!err)
		err = ls_sharegpt_entries(path, rng, &root, &entries, &total);
	if (!err)
		err = sgl_sharegpt_take(ds, entries, total, o, &c);
	if (!err && !ds->n) {
		fprintf(stderr, "latscope: %s: no usable conversation (SGLang: two turns, prompt and output of at least "
				"2 tokens%s)\n", path, o->context_len ? ", within --sharegpt-context-len" : "");
		err = -EINVAL;
	} else if (!err && ds->n < o->n) {
		fprintf(stderr, "latscope: %s: %zu usable conversations for %zu prompts (SGLang runs those)\n", path,
			ds->n, o->n);
	}
	free(entries);
	cJSON_Delete(root);
	return ls_peer_done(ds, estimated, err);
}
