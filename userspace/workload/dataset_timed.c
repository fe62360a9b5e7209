/* dataset_timed.c — vLLM's timed_trace (see dataset_peer.h): a Mooncake-style JSONL trace whose
 * hash_ids stand for blocks of chunk_hash_size prompt tokens, sent at the trace's own times. */
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

#define TT_MAX_TOKENS (1u << 24) /* input_length / output_length past this is not a request */
#define TT_UNIQUE_SALT 0x74696d6564ull /* tokens past the hash blocks: this request's own */

/* Token j of the block a hash id names: the same id gives the same block in every request
 * (what a prefix cache keys on), other ids other blocks. */
static uint32_t block_token(uint64_t hash_id, uint32_t j, uint32_t vocab)
{
	uint64_t s = hash_id * 0x9e3779b97f4a7c15ull + j;
	return (uint32_t)(ls_splitmix64(&s) % vocab);
}

struct tt_record {
	double   t;          /* the trace's timestamp (its unit) */
	uint32_t in, out;
	const cJSON *hash_ids;
	size_t   line;
};

/* A number field as a count in [lo, TT_MAX_TOKENS]; -EINVAL after a message naming the line. */
static int tt_count(const cJSON *o, const char *key, const char *path, size_t line, uint32_t lo, uint32_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo) || v->valuedouble > TT_MAX_TOKENS) {
		fprintf(stderr, "latscope: %s:%zu: \"%s\" must be a count %u..%u (timed_trace: --timed-trace-label-* "
				"name the fields)\n", path, line, key, lo, TT_MAX_TOKENS);
		return -EINVAL;
	}
	*out = (uint32_t)v->valuedouble;
	return 0;
}

/* One line into r (o kept for its hash_ids). 0, 1 for a blank line, or -EINVAL after a message. */
static int tt_line(const char *at, size_t len, const char *path, size_t line, const struct ls_timed_trace_opts *op,
		   cJSON **o, struct tt_record *r)
{
	if (strspn(at, " \t\r") >= len)
		return 1;
	*o = cJSON_ParseWithLength(at, len);
	const cJSON *ts = cJSON_GetObjectItemCaseSensitive(*o, op->label_timestamp);
	const cJSON *h = cJSON_GetObjectItemCaseSensitive(*o, op->label_hash_ids);
	if (!cJSON_IsObject(*o) || !cJSON_IsNumber(ts) || !(ts->valuedouble >= 0) || (h && !cJSON_IsArray(h))) {
		fprintf(stderr, "latscope: %s:%zu: not a timed_trace record ({\"%s\": T >= 0, \"%s\": N, \"%s\": N, "
				"\"%s\": [...]})\n", path, line, op->label_timestamp, op->label_input_length,
			op->label_output_length, op->label_hash_ids);
		return -EINVAL;
	}
	r->t = ts->valuedouble;
	r->hash_ids = h;
	r->line = line;
	if (tt_count(*o, op->label_input_length, path, line, 1, &r->in) ||
	    tt_count(*o, op->label_output_length, path, line, 1, &r->out))
		return -EINVAL;
	return 0;
}

/* r's prompt: each hash id's block of chunk tokens in order, cut at input_length; tokens past
 * the blocks are the request's own. */
static int tt_tokens(const struct tt_record *r, size_t i, const struct ls_timed_trace_opts *op, uint32_t *ids)
{
	uint32_t k = 0;
	const cJSON *h;
	cJSON_ArrayForEach(h, r->hash_ids) {
		if (!cJSON_IsNumber(h) || !(h->valuedouble >= 0))
			return -EINVAL;
		for (uint32_t j = 0; j < op->chunk_hash_size && k < r->in; j++)
			ids[k++] = block_token((uint64_t)h->valuedouble, j, op->vocab_size);
		if (k == r->in)
			break;
	}
	for (uint64_t s = (TT_UNIQUE_SALT << 32) ^ i; k < r->in; k++)
		ids[k] = (uint32_t)(ls_splitmix64(&s) % op->vocab_size);
	return 0;
}

/* Record i as prompt p: token ids, or (as_text) one word per token. */
static int tt_prompt(struct ls_prompt *p, const struct tt_record *r, size_t i, const struct ls_timed_trace_opts *op)
{
	uint32_t *ids = malloc(((size_t)r->in + 1) * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	if (tt_tokens(r, i, op, ids)) {
		free(ids);
		return -EINVAL;
	}
	p->prompt_len = r->in;
	p->output_len = r->out;
	if (!op->as_text) {
		p->token_ids = ids;
		p->n_token_ids = r->in;
		return 0;
	}
	struct ls_strbuf b = { 0 };
	int err = ls_dataset_word_text(&b, ids, r->in);
	free(ids);
	if (err) {
		ls_strbuf_free(&b);
		return err;
	}
	p->text = b.data; /* " w0 w1 ...": one token per word at the sim */
	return 0;
}

static int tt_parse(char *buf, size_t len, const char *path, const struct ls_timed_trace_opts *op, cJSON **objs,
		    struct tt_record *recs, size_t *n)
{
	size_t line = 0;
	for (char *at = buf; at < buf + len && (!op->n || *n < op->n);) {
		char *nl = memchr(at, '\n', (size_t)(buf + len - at));
		size_t llen = nl ? (size_t)(nl - at) : (size_t)(buf + len - at);
		char *start = at;
		at = nl ? nl + 1 : buf + len;
		int rc = tt_line(start, llen, path, ++line, op, &objs[*n], &recs[*n]);
		if (rc < 0) {
			cJSON_Delete(objs[*n]);
			objs[*n] = NULL;
			return rc;
		}
		*n += rc == 0;
	}
	return 0;
}

/* The prompts in file order; request i at max(t_i x sec_multiplier, request i-1's time): vLLM
 * sleeps until start + t x multiplier, so a time already past sends at once, in file order. */
static int tt_build(struct ls_dataset *ds, const struct tt_record *recs, size_t n, const char *path,
		    const struct ls_timed_trace_opts *op)
{
	double prev = 0;
	for (size_t i = 0; i < n; i++) {
		struct ls_prompt *p = &ds->prompts[ds->n];
		int err = tt_prompt(p, &recs[i], i, op);
		if (err == -EINVAL)
			fprintf(stderr, "latscope: %s:%zu: a \"%s\" item is not a number >= 0\n", path, recs[i].line,
				op->label_hash_ids);
		if (err)
			return err;
		ds->n++;
		double t = recs[i].t * op->sec_multiplier;
		p->timestamp_s = prev = t > prev ? t : prev;
	}
	return 0;
}

int ls_dataset_timed_trace(struct ls_dataset *ds, const char *path, const struct ls_timed_trace_opts *op)
{
	memset(ds, 0, sizeof(*ds));
	if (!op->chunk_hash_size || !op->vocab_size || !(op->sec_multiplier > 0) || isinf(op->sec_multiplier)) {
		fprintf(stderr, "latscope: --timed-trace-chunk-hash-size must be >= 1 and --timed-trace-sec-multiplier "
				"> 0\n");
		return -EINVAL;
	}
	size_t len = 0, n = 0, cap = 1;
	char *buf = ls_read_file(path, "latscope", "dataset", &len);
	if (!buf)
		return -EIO;
	for (size_t i = 0; i < len; i++)
		cap += buf[i] == '\n';
	cJSON **objs = calloc(cap, sizeof(*objs));
	struct tt_record *recs = calloc(cap, sizeof(*recs));
	int err = objs && recs ? tt_parse(buf, len, path, op, objs, recs, &n) : -ENOMEM;
	if (!err && !n) {
		fprintf(stderr, "latscope: %s: no records\n", path);
		err = -EINVAL;
	}
	if (!err)
		err = ls_peer_alloc(ds, n);
	if (!err)
		err = tt_build(ds, recs, n, path, op);
	for (size_t i = 0; objs && i < n; i++)
		cJSON_Delete(objs[i]);
	free(objs);
	free(recs);
	free(buf);
	return ls_peer_done(ds, 0, err);
}
