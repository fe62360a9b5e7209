/* harness_result.c — a harness's own saved TTFTs and ITLs (seconds), for `watch --harness-result`.
 * vLLM's --save-result: one JSON object, "ttfts" a list, "itls" a list per request (a flat list
 * too, as tests/clients/aiohttp_client.py writes). SGLang's --output-file: JSONL, one object per
 * run appended; with --output-details it has "ttfts" and "itls": the last such line is read.
 * Both are read as Python's json writes them (Infinity, NaN: base/json_file.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "base/json_file.h"
#include "watch/watch.h"

/* Appends every number under item (a number, or arrays of them at any depth) as ns. */
static int add_values(const cJSON *item, uint64_t **v, size_t *n, size_t *cap)
{
	if (cJSON_IsArray(item)) {
		for (const cJSON *c = item->child; c; c = c->next)
			if (add_values(c, v, n, cap))
				return -ENOMEM;
		return 0;
	}
	if (!cJSON_IsNumber(item) || !(item->valuedouble >= 0) || item->valuedouble > 1e6)
		return 0; /* null (a failed request), negative, absurd: not a latency */
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 256;
		uint64_t *g = realloc(*v, c * sizeof(*g));
		if (!g)
			return -ENOMEM;
		*v = g;
		*cap = c;
	}
	(*v)[(*n)++] = (uint64_t)(item->valuedouble * 1e9 + 0.5);
	return 0;
}

static int from_object(const cJSON *o, struct ls_harness_result *r)
{
	size_t cap_t = 0, cap_i = 0;
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "ttfts");
	const cJSON *i = cJSON_GetObjectItemCaseSensitive(o, "itls");

	if (!cJSON_IsArray(t))
		return -ENOENT;
	if (add_values(t, &r->ttfts, &r->n_ttfts, &cap_t) || (i && add_values(i, &r->itls, &r->n_itls, &cap_i)))
		return -ENOMEM;
	return 0;
}

/* SGLang's JSONL: the last line that has "ttfts". */
static int from_lines(char *text, struct ls_harness_result *r)
{
	cJSON *last = NULL;

	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		cJSON *o = ls_json_parse_py(line); /* SGLang's default rate is written Infinity */
		if (o && cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(o, "ttfts"))) {
			cJSON_Delete(last);
			last = o;
		} else {
			cJSON_Delete(o);
		}
	}
	if (!last)
		return -ENOENT;
	int err = from_object(last, r);
	cJSON_Delete(last);
	return err;
}

int ls_harness_result_read(const char *path, struct ls_harness_result *r, char *why, size_t why_len)
{
	size_t len;
	char *text = ls_read_file(path, "latscope watch", "--harness-result", &len);
	int err;

	memset(r, 0, sizeof(*r));
	if (!text) {
		snprintf(why, why_len, "--harness-result %s: cannot read it", path);
		return -EIO;
	}
	cJSON *o = ls_json_parse_py(text); /* whole file: one object, or JSONL; Python's NaN, Infinity */
	if (o) {
		err = from_object(o, r);
		r->format = cJSON_GetObjectItemCaseSensitive(o, "backend") ||
				    cJSON_GetObjectItemCaseSensitive(o, "mean_ttft_ms") ? "vllm --save-result" : "generic";
		cJSON_Delete(o);
	} else {
		err = from_lines(text, r);
		r->format = "sglang --output-details";
	}
	free(text);
	if (err == -ENOENT)
		snprintf(why, why_len, "--harness-result %s: no \"ttfts\" list (vLLM --save-result JSON, SGLang "
			 "--output-file JSONL with --output-details, or {\"ttfts\":[...],\"itls\":[...]})", path);
	else if (err)
		snprintf(why, why_len, "--harness-result %s: out of memory", path);
	if (err)
		ls_harness_result_free(r);
	return err;
}

void ls_harness_result_free(struct ls_harness_result *r)
{
	free(r->ttfts);
	free(r->itls);
	memset(r, 0, sizeof(*r));
}
