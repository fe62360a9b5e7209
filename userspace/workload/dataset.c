/* dataset.c — builds the prompts of a run (see dataset.h). Pure file/RNG work: the server's
 * tokenizer, when used, comes in through a counting callback. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "workload/dataset.h"
#include "workload/dataset_peer_int.h"
#include "base/json_file.h"
#include "base/rng.h"
#include "base/strbuf.h"

#define SHAREGPT_MIN_LEN        4
#define SHAREGPT_MAX_PROMPT_LEN 1024
#define SHAREGPT_MAX_TOTAL_LEN  2048

void ls_dataset_free(struct ls_dataset *ds)
{
	for (size_t i = 0; ds->prompts && i < ds->n; i++) {
		free(ds->prompts[i].text);
		free(ds->prompts[i].token_ids);
	}
	free(ds->prompts);
	ds->prompts = NULL;
	ds->n = 0;
}

int ls_range_semantics_parse(const char *name, enum ls_range_semantics *out)
{
	if (name && !strcmp(name, "vllm"))
		*out = LS_RANGE_VLLM;
	else if (name && !strcmp(name, "sglang"))
		*out = LS_RANGE_SGLANG;
	else
		return -EINVAL;
	return 0;
}

const char *ls_range_semantics_name(enum ls_range_semantics sem)
{
	return sem == LS_RANGE_SGLANG ? "sglang" : "vllm";
}

int ls_random_bounds(uint32_t len, double ratio, enum ls_range_semantics sem, int is_output,
		     uint32_t *lo, uint32_t *hi)
{
	const char *side = is_output ? "--random-output-len" : "--random-input-len";
	double l = (double)len, low, high;
	if (sem == LS_RANGE_VLLM) {
		if (!(ratio >= 0.0 && ratio < 1.0)) {
			fprintf(stderr, "latscope: --random-range-ratio %g must be in [0, 1) under vLLM's "
					"range semantics\n", ratio);
			return -EINVAL;
		}
		low = floor(l * (1.0 - ratio));
		high = ceil(l * (1.0 + ratio));
		if (is_output && low < 1.0)
			low = 1.0;
		if (high < 1.0)
			high = 1.0;
	} else {
		if (!(ratio >= 0.0 && ratio <= 1.0)) {
			fprintf(stderr, "latscope: --random-range-ratio %g must be in [0, 1] under SGLang's "
					"range semantics\n", ratio);
			return -EINVAL;
		}
		low = floor(l * ratio); /* python int() of a non-negative float */
		if (low < 1.0)
			low = 1.0;
		high = l;
	}
	if (high > (double)UINT32_MAX / 2 || low > high || low < 1.0) {
		fprintf(stderr, "latscope: %s %u with --random-range-ratio %g gives no valid length "
				"(range [%.0f, %.0f]); use a length of at least 1\n", side, len, ratio, low, high);
		return -EINVAL;
	}
	*lo = (uint32_t)low;
	*hi = (uint32_t)high;
	return 0;
}

int ls_dataset_random(struct ls_dataset *ds, const struct ls_random_opts *o)
{
	memset(ds, 0, sizeof(*ds));
	uint32_t in_lo, in_hi, out_lo, out_hi;
	if (ls_random_bounds(o->input_len, o->range_ratio, o->semantics, 0, &in_lo, &in_hi) ||
	    ls_random_bounds(o->output_len, o->range_ratio, o->semantics, 1, &out_lo, &out_hi))
		return -EINVAL;
	if (o->vocab_size < 1) {
		fprintf(stderr, "latscope: --random-vocab-size must be at least 1\n");
		return -EINVAL;
	}
	if (!o->n)
		return 0;
	ds->prompts = calloc(o->n, sizeof(*ds->prompts));
	if (!ds->prompts)
		return -ENOMEM;
	ds->n = o->n;
	uint64_t rng[2];
	ls_rng_seed(rng, o->seed);
	/* Draw order as vLLM: the shared prefix (--random-prefix-len), all input lengths, then all
	 * output lengths, then all offsets. A prompt is the prefix, then its own ids. */
	uint32_t *prefix = o->prefix_len ? malloc((size_t)o->prefix_len * sizeof(*prefix)) : NULL;
	if (o->prefix_len && !prefix) {
		ls_dataset_free(ds);
		return -ENOMEM;
	}
	for (uint32_t j = 0; j < o->prefix_len; j++)
		prefix[j] = (uint32_t)ls_rng_below(rng, o->vocab_size);
	for (size_t i = 0; i < o->n; i++)
		ds->prompts[i].prompt_len = in_lo + (uint32_t)ls_rng_below(rng, (uint64_t)in_hi - in_lo + 1);
	for (size_t i = 0; i < o->n; i++)
		ds->prompts[i].output_len = out_lo + (uint32_t)ls_rng_below(rng, (uint64_t)out_hi - out_lo + 1);
	for (size_t i = 0; i < o->n; i++) {
		struct ls_prompt *p = &ds->prompts[i];
		uint64_t offset = ls_rng_below(rng, o->vocab_size);
		p->timestamp_s = -1.0;
		p->n_token_ids = o->prefix_len + p->prompt_len;
		p->token_ids = malloc((size_t)p->n_token_ids * sizeof(*p->token_ids));
		if (!p->token_ids) {
			free(prefix);
			ls_dataset_free(ds);
			return -ENOMEM;
		}
		if (o->prefix_len)
			memcpy(p->token_ids, prefix, (size_t)o->prefix_len * sizeof(*prefix));
		for (uint32_t j = 0; j < p->prompt_len; j++)
			p->token_ids[o->prefix_len + j] = (uint32_t)((offset + i + j) % o->vocab_size);
		p->prompt_len = p->n_token_ids;
	}
	free(prefix);
	return 0;
}

static const char *const text_words[] = {
	"the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by",
	"on", "not", "this", "are", "or", "from", "at", "which", "but", "have", "an", "they", "you",
	"were", "one", "all", "we", "can", "has", "there", "been", "if", "more", "when", "will",
	"would", "who", "so", "no", "time", "model", "token", "server", "request", "batch", "step",
	"stream", "frame", "queue", "network", "kernel", "client", "cache", "city", "light", "water",
	"world", "people", "system", "number", "part", "first", "new", "way", "may", "only", "other",
	"two", "could", "then", "than", "into", "some", "like", "what", "out", "up", "about", "also",
	"after", "many", "most", "made", "such", "where", "through", "between", "under", "each",
};
#define N_TEXT_WORDS (sizeof(text_words) / sizeof(text_words[0]))

/* words [start, start + n) of the endless word sequence, space-separated with a leading space. */
static char *word_run(uint64_t start, uint32_t n)
{
	size_t len = 1;
	for (uint32_t j = 0; j < n; j++)
		len += 1 + strlen(text_words[(start + j) % N_TEXT_WORDS]);
	char *text = malloc(len), *p = text;
	if (!text)
		return NULL;
	for (uint32_t j = 0; j < n; j++) {
		const char *w = text_words[(start + j) % N_TEXT_WORDS];
		*p++ = ' ';
		size_t wl = strlen(w);
		memcpy(p, w, wl);
		p += wl;
	}
	*p = 0;
	return text;
}

uint32_t ls_dataset_n_words(void)
{
	return (uint32_t)N_TEXT_WORDS;
}

int ls_dataset_word_text(struct ls_strbuf *out, const uint32_t *words, uint32_t n)
{
	for (uint32_t j = 0; j < n; j++) {
		const char *w = text_words[words[j] % N_TEXT_WORDS];
		if (ls_strbuf_puts(out, " ") || ls_strbuf_puts(out, w))
			return -ENOMEM;
	}
	return 0;
}

/* The prefix's words, then the prompt's own (both from word_run). */
static char *prefixed_word_run(uint64_t pre_start, uint32_t pre, uint64_t start, uint32_t n)
{
	if (!pre)
		return word_run(start, n);
	char *a = word_run(pre_start, pre), *b = word_run(start, n), *both = NULL;
	if (a && b && (both = malloc(strlen(a) + strlen(b) + 1))) {
		strcpy(both, a);
		strcat(both, b);
	}
	free(a);
	free(b);
	return both;
}

/* Word counts tried so far: the most that gave too few tokens, the fewest that gave too many. */
struct word_bracket {
	uint32_t lo, lo_got, hi, hi_got;
};

/* The next word count to try, from the last (words gave got tokens); 0 when none can be nearer
 * the target. Tokens per word is anything but 1 (a character-level vocabulary gives 3-4, a
 * word-level one 1): a step of (target - got) words diverged there, so the count is scaled by
 * target / got until the target is bracketed, then the line between the two ends is followed
 * (a token count grows with the words, so the bracket holds the answer). */
static uint32_t next_word_count(uint32_t words, uint32_t got, uint32_t target, struct word_bracket *b)
{
	if (got < target && words >= b->lo)
		b->lo = words, b->lo_got = got;
	if (got > target && (!b->hi || words <= b->hi))
		b->hi = words, b->hi_got = got;
	if (!got || (b->hi && b->hi <= b->lo + 1 && b->lo_got < target))
		return 0; /* no tokens: no scale to go by; neighbours: no count between them */
	double next;
	if (b->hi && b->lo_got && b->hi_got > b->lo_got)
		next = b->lo + (double)(target - b->lo_got) * (b->hi - b->lo) / (b->hi_got - b->lo_got);
	else
		next = (double)words * target / got;
	uint32_t w = next < 1 ? 1 : next > 1e8 ? 100000000u : (uint32_t)(next + 0.5);
	if (b->hi && w >= b->hi)
		w = b->hi - 1;
	if (w <= b->lo && b->lo_got)
		w = b->lo + 1;
	return w == words ? 0 : w;
}

/* The bracket's end nearest the target, when it is nearer than the last try (words, got):
 * its word count (prefix included), or 0 to keep the last. */
static uint32_t nearest_end(const struct word_bracket *b, uint32_t pre, uint32_t words, uint32_t got,
			    uint32_t target, uint32_t *best_got)
{
	uint32_t best = 0, off = got > target ? got - target : target - got;
	if (b->lo > pre && b->lo != pre + words && target - b->lo_got < off)
		best = b->lo, *best_got = b->lo_got, off = target - b->lo_got;
	if (b->hi > pre && b->hi != pre + words && b->hi_got - target < off)
		best = b->hi, *best_got = b->hi_got;
	return best;
}

/* The words of prompt p (after a prefix of pre words) until the server counts target tokens,
 * or as near as whole words get (8 counts at most). */
static int fit_prompt(struct ls_prompt *p, uint32_t pre, uint64_t pre_start, uint64_t start, uint32_t target,
		      ls_token_count_fn count, void *count_ctx)
{
	struct word_bracket br = { 0 };
	uint32_t words = target - pre, got = 0;
	for (int round = 0; round < 8; round++) {
		free(p->text);
		if (!(p->text = prefixed_word_run(pre_start, pre, start, words)))
			return -ENOMEM;
		int err = count(count_ctx, p->text, &got);
		if (err)
			return err;
		p->prompt_len = got;
		if (got == target)
			return 0;
		uint32_t next = next_word_count(pre + words, got, target, &br);
		if (!next || (pre && next <= pre))
			break;
		words = next - pre;
	}
	uint32_t best_got = 0, best = nearest_end(&br, pre, words, got, target, &best_got);
	if (!best)
		return 0;
	free(p->text);
	if (!(p->text = prefixed_word_run(pre_start, pre, start, best - pre)))
		return -ENOMEM;
	p->prompt_len = best_got; /* counted already: the same words give the same text */
	return 0;
}

int ls_dataset_random_text(struct ls_dataset *ds, const struct ls_random_opts *o, ls_token_count_fn count,
			   void *count_ctx)
{
	int err = ls_dataset_random(ds, o);
	if (err)
		return err;
	for (size_t i = 0; i < ds->n; i++) {
		struct ls_prompt *p = &ds->prompts[i];
		/* The shared prefix's words start at its first id; the prompt's own at offset + i. */
		uint32_t pre = o->prefix_len;
		uint64_t pre_start = pre ? p->token_ids[0] : 0;
		uint64_t start = p->n_token_ids > pre ? p->token_ids[pre] : 0;
		uint32_t target = p->prompt_len;
		free(p->token_ids);
		p->token_ids = NULL;
		p->n_token_ids = 0;
		if (!count) {
			free(p->text);
			p->text = prefixed_word_run(pre_start, pre, start, target - pre);
			ds->lens_estimated = 1;
			err = p->text ? 0 : -ENOMEM;
		} else {
			err = fit_prompt(p, pre, pre_start, start, target, count, count_ctx);
		}
		if (err) {
			ls_dataset_free(ds);
			return err;
		}
	}
	return 0;
}

/* 1 token per 4 bytes, at least 1: the usual rule of thumb for English BPE vocabularies. */
uint32_t ls_dataset_estimate_tokens(const char *text)
{
	size_t len = strlen(text);
	size_t est = (len + 3) / 4;
	if (est < 1)
		est = 1;
	return est > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)est;
}

static int count_tokens(ls_token_count_fn count, void *ctx, const char *text, uint32_t *out, int *estimated)
{
	if (count) {
		int err = count(ctx, text, out);
		if (err)
			return err;
		return 0;
	}
	*estimated = 1;
	*out = ls_dataset_estimate_tokens(text);
	return 0;
}

static const char *turn_value(const cJSON *turn, const char *role)
{
	const cJSON *from = cJSON_GetObjectItemCaseSensitive(turn, "from");
	const cJSON *value = cJSON_GetObjectItemCaseSensitive(turn, "value");
	if (!cJSON_IsString(from) || !cJSON_IsString(value) || strcmp(from->valuestring, role))
		return NULL;
	return value->valuestring;
}

/* The file as a JSON list: 0 with *root (the caller's), or -errno with a message naming
 * path:line. */
static int sharegpt_parse(const char *path, cJSON **root_out)
{
	size_t len = 0;
	char *buf = ls_read_file(path, "latscope", "dataset", &len);
	if (!buf)
		return -EIO;
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
	if (!root) {
		const char *at = cJSON_GetErrorPtr();
		if (!at || at < buf || at > buf + len)
			at = buf + len;
		fprintf(stderr, "latscope: %s:%zu: malformed JSON (ShareGPT format is a JSON list of "
				"{\"conversations\": [...]})\n", path, ls_line_at(buf, at));
		free(buf);
		return -EINVAL;
	}
	free(buf); /* cJSON holds copies of its strings */
	if (!cJSON_IsArray(root)) {
		fprintf(stderr, "latscope: %s:1: not a ShareGPT file: the top level must be a JSON list\n", path);
		cJSON_Delete(root);
		return -EINVAL;
	}
	*root_out = root;
	return 0;
}

int ls_sharegpt_entries(const char *path, uint64_t rng[2], cJSON **root, cJSON ***entries, size_t *total)
{
	int err = sharegpt_parse(path, root);
	if (err)
		return err;
	*total = (size_t)cJSON_GetArraySize(*root);
	*entries = malloc((*total ? *total : 1) * sizeof(**entries));
	if (!*entries) {
		cJSON_Delete(*root);
		*root = NULL;
		return -ENOMEM;
	}
	size_t k = 0;
	for (cJSON *e = (*root)->child; e; e = e->next)
		(*entries)[k++] = e;
	if (rng)
		ls_rng_shuffle(rng, *entries, *total, sizeof(**entries));
	return 0;
}

/* The conversation's first human turn and the turn right after it when that is gpt's. 1 when
 * entry has both, else 0. */
static int sharegpt_pair(const cJSON *entry, const char **prompt, const char **completion)
{
	const cJSON *conv = cJSON_GetObjectItemCaseSensitive(entry, "conversations");
	*prompt = *completion = NULL;
	if (!cJSON_IsArray(conv))
		return 0;
	for (const cJSON *t = conv->child; t; t = t->next) {
		if (!*prompt) {
			*prompt = turn_value(t, "human");
			continue;
		}
		*completion = turn_value(t, "gpt");
		break;
	}
	return *prompt && *completion;
}

/* Takes the entries that pass vLLM's length filters, in order, into ds->prompts until want.
 * *have: prompts taken (their texts are ds's, also on error). 0 or -errno. */
static int sharegpt_take(struct ls_dataset *ds, cJSON **entries, size_t total, size_t want,
			 uint32_t fixed_output_len, ls_token_count_fn count, void *count_ctx, int *estimated,
			 size_t *have)
{
	for (size_t i = 0; i < total && *have < want; i++) {
		const char *prompt, *completion;
		if (!sharegpt_pair(entries[i], &prompt, &completion))
			continue;
		uint32_t plen, olen = fixed_output_len;
		int err = count_tokens(count, count_ctx, prompt, &plen, estimated);
		if (!err && !fixed_output_len)
			err = count_tokens(count, count_ctx, completion, &olen, estimated);
		if (err)
			return err;
		if (plen < SHAREGPT_MIN_LEN || (!fixed_output_len && olen < SHAREGPT_MIN_LEN) ||
		    plen > SHAREGPT_MAX_PROMPT_LEN || (uint64_t)plen + olen > SHAREGPT_MAX_TOTAL_LEN)
			continue;
		struct ls_prompt *p = &ds->prompts[*have];
		p->text = strdup(prompt);
		if (!p->text)
			return -ENOMEM;
		p->prompt_len = plen;
		p->output_len = olen;
		p->timestamp_s = -1.0;
		(*have)++;
	}
	return 0;
}

/* vLLM oversamples to reach num_prompts: repeats the ds->n prompts that survived, in order. */
static int sharegpt_repeat(struct ls_dataset *ds, const char *path, size_t want)
{
	size_t base = ds->n;
	ds->n_unique = base;
	for (size_t have = base; have < want; have++) {
		const struct ls_prompt *src = &ds->prompts[have % base];
		struct ls_prompt *p = &ds->prompts[have];
		*p = *src;
		p->text = strdup(src->text);
		if (!p->text)
			return -ENOMEM;
		ds->n = have + 1;
	}
	fprintf(stderr, "latscope: %s: %zu usable conversations for %zu prompts; repeating them\n", path, base,
		want);
	return 0;
}

static int sharegpt_load(struct ls_dataset *ds, const char *path, size_t n, uint32_t fixed_output_len,
			 uint64_t seed, int shuffle, ls_token_count_fn count, void *count_ctx)
{
	cJSON *root = NULL, **entries = NULL;
	size_t total = 0;
	uint64_t rng[2];
	memset(ds, 0, sizeof(*ds));
	ls_rng_seed(rng, seed); /* Fisher-Yates, as vLLM shuffles before sampling */
	int err = ls_sharegpt_entries(path, shuffle ? rng : NULL, &root, &entries, &total);
	if (err)
		return err;

	int estimated = 0;
	size_t want = n ? n : total, have = 0;
	if (want)
		ds->prompts = calloc(want, sizeof(*ds->prompts));
	if (want && !ds->prompts)
		err = -ENOMEM;
	if (!err)
		err = sharegpt_take(ds, entries, total, want, fixed_output_len, count, count_ctx, &estimated, &have);
	if (!err && have == 0 && want > 0) {
		fprintf(stderr, "latscope: %s: no usable conversation (need a human turn followed by a gpt "
				"turn, prompt 4..1024 tokens, prompt + output <= 2048)\n", path);
		err = -EINVAL;
	} else if (err && err != -ENOMEM) {
		fprintf(stderr, "latscope: %s: counting tokens failed (%s)\n", path, strerror(-err));
	}
	ds->n = have;
	if (!err && have < want)
		err = sharegpt_repeat(ds, path, want);
	ds->lens_estimated = estimated;
	free(entries);
	cJSON_Delete(root);
	if (err)
		ls_dataset_free(ds);
	return err;
}

int ls_dataset_sharegpt(struct ls_dataset *ds, const char *path, size_t n, uint32_t fixed_output_len,
			uint64_t seed, ls_token_count_fn count, void *count_ctx)
{
	return sharegpt_load(ds, path, n, fixed_output_len, seed, 1, count, count_ctx);
}

int ls_dataset_sharegpt_in_order(struct ls_dataset *ds, const char *path, size_t n, uint32_t fixed_output_len,
				 ls_token_count_fn count, void *count_ctx)
{
	return sharegpt_load(ds, path, n, fixed_output_len, 0, 0, count, count_ctx);
}

static int json_uint(const cJSON *item, uint32_t *out)
{
	if (!cJSON_IsNumber(item) || !(item->valuedouble >= 0.0) || item->valuedouble > (double)UINT32_MAX / 2 ||
	    item->valuedouble != floor(item->valuedouble))
		return -1;
	*out = (uint32_t)item->valuedouble;
	return 0;
}

/* "prompt_token_ids" into p (token_ids allocated here). 0, -ENOMEM, or -EINVAL with a message
 * naming path:line. */
static int jsonl_token_ids(const char *path, size_t line, const cJSON *ids, struct ls_prompt *p)
{
	int n = cJSON_GetArraySize(ids);
	if (n <= 0) {
		fprintf(stderr, "latscope: %s:%zu: \"prompt_token_ids\" is empty\n", path, line);
		return -EINVAL;
	}
	p->token_ids = malloc((size_t)n * sizeof(*p->token_ids));
	if (!p->token_ids)
		return -ENOMEM;
	uint32_t k = 0;
	for (const cJSON *id = ids->child; id; id = id->next) {
		if (json_uint(id, &p->token_ids[k])) {
			fprintf(stderr, "latscope: %s:%zu: \"prompt_token_ids\" item %u is not a token id\n",
				path, line, k);
			return -EINVAL;
		}
		k++;
	}
	p->n_token_ids = k;
	p->prompt_len = k;
	return 0;
}

/* One jsonl line into p. Returns 0 or -EINVAL with a message naming path:line. */
static int parse_jsonl_line(const char *path, size_t line, const char *text, size_t len, struct ls_prompt *p,
			    uint32_t default_output_len, ls_token_count_fn count, void *count_ctx, int *estimated)
{
	cJSON *obj = cJSON_ParseWithLength(text, len);
	int err = -EINVAL;
	if (!obj || !cJSON_IsObject(obj)) {
		fprintf(stderr, "latscope: %s:%zu: not a JSON object (each line is one request: "
				"{\"prompt\": ..., \"output_len\": ...})\n", path, line);
		goto out;
	}
	const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(obj, "prompt");
	const cJSON *ids = cJSON_GetObjectItemCaseSensitive(obj, "prompt_token_ids");
	const cJSON *out_len = cJSON_GetObjectItemCaseSensitive(obj, "output_len");
	const cJSON *prompt_len = cJSON_GetObjectItemCaseSensitive(obj, "prompt_len");
	const cJSON *ts = cJSON_GetObjectItemCaseSensitive(obj, "timestamp");
	if (!out_len)
		out_len = cJSON_GetObjectItemCaseSensitive(obj, "max_tokens");
	p->timestamp_s = -1.0;
	p->output_len = default_output_len;
	if (out_len && (json_uint(out_len, &p->output_len) || p->output_len == 0)) {
		fprintf(stderr, "latscope: %s:%zu: \"output_len\" must be a positive integer\n", path, line);
		goto out;
	}
	if (ts) {
		if (!cJSON_IsNumber(ts) || !(ts->valuedouble >= 0.0) || isinf(ts->valuedouble)) {
			fprintf(stderr, "latscope: %s:%zu: \"timestamp\" must be seconds from run start (>= 0)\n",
				path, line);
			goto out;
		}
		p->timestamp_s = ts->valuedouble;
	}
	if (cJSON_IsArray(ids)) {
		if ((err = jsonl_token_ids(path, line, ids, p)))
			goto out;
	} else if (cJSON_IsString(prompt)) {
		p->text = strdup(prompt->valuestring);
		if (!p->text) {
			err = -ENOMEM;
			goto out;
		}
		if (prompt_len) {
			if (json_uint(prompt_len, &p->prompt_len)) {
				fprintf(stderr, "latscope: %s:%zu: \"prompt_len\" must be an integer\n", path, line);
				goto out;
			}
		} else {
			int cerr = count_tokens(count, count_ctx, p->text, &p->prompt_len, estimated);
			if (cerr) {
				fprintf(stderr, "latscope: %s:%zu: counting the prompt's tokens failed (%s)\n",
					path, line, strerror(-cerr));
				err = cerr;
				goto out;
			}
		}
	} else {
		fprintf(stderr, "latscope: %s:%zu: needs \"prompt\" (a string) or \"prompt_token_ids\" "
				"(a list of integers)\n", path, line);
		goto out;
	}
	err = 0;
out:
	cJSON_Delete(obj);
	return err;
}

int ls_dataset_jsonl(struct ls_dataset *ds, const char *path, size_t n, uint32_t default_output_len,
		     ls_token_count_fn count, void *count_ctx)
{
	memset(ds, 0, sizeof(*ds));
	size_t len = 0;
	char *buf = ls_read_file(path, "latscope", "dataset", &len);
	if (!buf)
		return -EIO;
	size_t cap = 0, line = 0;
	int err = 0, estimated = 0;
	for (char *at = buf; at < buf + len && (!n || ds->n < n);) {
		char *nl = memchr(at, '\n', (size_t)(buf + len - at));
		size_t llen = nl ? (size_t)(nl - at) : (size_t)(buf + len - at);
		char *next = nl ? nl + 1 : buf + len;
		line++;
		size_t k = 0;
		while (k < llen && (at[k] == ' ' || at[k] == '\t' || at[k] == '\r'))
			k++;
		if (k == llen) {
			at = next;
			continue;
		}
		if (ds->n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct ls_prompt *grown = realloc(ds->prompts, ncap * sizeof(*grown));
			if (!grown) {
				err = -ENOMEM;
				break;
			}
			ds->prompts = grown;
			cap = ncap;
		}
		struct ls_prompt *p = &ds->prompts[ds->n];
		memset(p, 0, sizeof(*p));
		err = parse_jsonl_line(path, line, at, llen, p, default_output_len, count, count_ctx, &estimated);
		ds->n++; /* counted even on error so ls_dataset_free releases its parts */
		if (err)
			break;
		at = next;
	}
	if (!err && ds->n == 0) {
		fprintf(stderr, "latscope: %s: no requests in the file (one JSON object per line)\n", path);
		err = -EINVAL;
	}
	if (!err && n && ds->n < n)
		fprintf(stderr, "latscope: %s has %zu requests; running those (asked for %zu)\n", path, ds->n, n);
	ds->lens_estimated = estimated;
	free(buf);
	if (err)
		ls_dataset_free(ds);
	return err;
}

double *ls_dataset_timestamps(const struct ls_dataset *ds)
{
	if (!ds->n) {
		errno = ENOENT;
		return NULL;
	}
	double *ts = malloc(ds->n * sizeof(*ts));
	if (!ts)
		return NULL;
	for (size_t i = 0; i < ds->n; i++) {
		if (ds->prompts[i].timestamp_s < 0.0) {
			free(ts);
			errno = ENOENT;
			return NULL;
		}
		ts[i] = ds->prompts[i].timestamp_s;
	}
	return ts;
}

const char *ls_dataset_kind_name(enum ls_dataset_kind kind)
{
	switch (kind) {
	case LS_DATASET_RANDOM: return "random";
	case LS_DATASET_SHAREGPT: return "sharegpt";
	case LS_DATASET_JSONL: return "jsonl";
	case LS_DATASET_CUSTOM: return "custom";
	case LS_DATASET_PREFIX_REPETITION: return "prefix_repetition";
	case LS_DATASET_SONNET: return "sonnet";
	case LS_DATASET_BURSTGPT: return "burstgpt";
	case LS_DATASET_RANDOM_IDS: return "random-ids";
	case LS_DATASET_GSP: return "generated-shared-prefix";
	case LS_DATASET_MOONCAKE: return "mooncake";
	case LS_DATASET_SPEC_BENCH: return "spec_bench";
	case LS_DATASET_TIMED_TRACE: return "timed_trace";
	}
	return "?";
}
