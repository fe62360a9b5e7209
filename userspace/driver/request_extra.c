/* request_extra.c — sampling parameters, logprobs, LoRA, extra body and headers over a
 * backend's request body (see request_extra.h). The body is parsed and printed again with
 * cJSON once per request before the run, never in the loop. */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "driver/request_extra.h"
#include "base/rng.h"

const char *const ls_sampling_keys[LS_SAMP__COUNT] = {
	[LS_SAMP_TEMPERATURE] = "temperature",
	[LS_SAMP_TOP_P] = "top_p",
	[LS_SAMP_TOP_K] = "top_k",
	[LS_SAMP_MIN_P] = "min_p",
	[LS_SAMP_FREQUENCY_PENALTY] = "frequency_penalty",
	[LS_SAMP_PRESENCE_PENALTY] = "presence_penalty",
	[LS_SAMP_REPETITION_PENALTY] = "repetition_penalty",
};

void ls_request_extra_init(struct ls_request_extra *x)
{
	memset(x, 0, sizeof(*x));
	x->logprobs = -1;
	x->logprob_start_len = -1;
}

static void free_list(char **list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

void ls_request_extra_free(struct ls_request_extra *x)
{
	free_list(x->headers, x->n_headers);
	free_list(x->lora, x->n_lora);
	free(x->extra_body);
	free(x->served_model_name);
	free(x->request_id_prefix);
	free(x->prompt_suffix);
	ls_request_extra_init(x);
}

int ls_request_extra_add_str(char ***list, size_t *n, const char *v)
{
	char **grown = realloc(*list, (*n + 1) * sizeof(**list));
	if (!grown)
		return -ENOMEM;
	*list = grown;
	if (!(grown[*n] = strdup(v)))
		return -ENOMEM;
	(*n)++;
	return 0;
}

/* A header name is an HTTP token; a value has no control characters (no header injection). */
static int token_char(unsigned char ch)
{
	return isalnum(ch) || (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

const char *ls_request_extra_add_header(struct ls_request_extra *x, const char *kv)
{
	const char *eq = strchr(kv, '=');
	if (!eq)
		return "must be KEY=VALUE, e.g. x-additional-info=0.3.3";
	const char *k = kv, *k_end = eq;
	while (k < k_end && isspace((unsigned char)*k)) /* vLLM strips both sides of each */
		k++;
	while (k_end > k && isspace((unsigned char)k_end[-1]))
		k_end--;
	if (k == k_end)
		return "has an empty header name (KEY=VALUE)";
	for (const char *p = k; p < k_end; p++)
		if (!token_char((unsigned char)*p))
			return "has a header name with a character HTTP does not allow";
	const char *v = eq + 1, *v_end = v + strlen(v);
	while (*v && isspace((unsigned char)*v))
		v++;
	while (v_end > v && isspace((unsigned char)v_end[-1]))
		v_end--;
	for (const char *p = v; p < v_end; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return "has a control character in the header value";
	char *line = NULL;
	if (asprintf(&line, "%.*s: %.*s", (int)(k_end - k), k, (int)(v_end - v), v) < 0)
		return "out of memory";
	int rc = ls_request_extra_add_str(&x->headers, &x->n_headers, line);
	free(line);
	return rc ? "out of memory" : NULL;
}

const char *ls_request_extra_check_object(const char *text)
{
	cJSON *j = cJSON_Parse(text);
	int ok = cJSON_IsObject(j);
	cJSON_Delete(j);
	return ok ? NULL : "must be a JSON object, e.g. '{\"temperature\": 0.8}'";
}

const char *ls_request_extra_lora(const struct ls_request_extra *x, size_t i, int warmup, uint64_t rng[2])
{
	if (!x->n_lora)
		return NULL;
	if (x->rules == LS_BODY_SGLANG && warmup) /* serving.py benchmark(): warmup lora_names[0] */
		return x->lora[0];
	if (x->rules == LS_BODY_SGLANG && x->lora_zipf_alpha > 0) { /* skewed: weights alpha^-k, normalised */
		double total = 0, w = 1, u;
		for (size_t k = 0; k < x->n_lora; k++, w /= x->lora_zipf_alpha)
			total += w;
		u = ls_rng_uniform(rng) * total;
		w = 1;
		for (size_t k = 0; k < x->n_lora; k++, w /= x->lora_zipf_alpha)
			if ((u -= w) < 0)
				return x->lora[k];
		return x->lora[x->n_lora - 1];
	}
	if (x->rules == LS_BODY_SGLANG) /* uniform (random.choice), or distinct: round robin from 0 */
		return x->lora[x->lora_round_robin ? i % x->n_lora : ls_rng_below(rng, x->n_lora)];
	if (warmup)
		return NULL; /* vLLM's test_input and warmups carry model_id */
	return x->lora[x->lora_round_robin ? i % x->n_lora : ls_rng_below(rng, x->n_lora)];
}

int ls_request_extra_touches_body(const struct ls_request_extra *x)
{
	return x->rules == LS_BODY_SGLANG || x->sampling_set || x->logprobs >= 0 || x->return_logprob ||
	       x->top_logprobs_num > 0 || x->logprob_start_len != -1 || x->extra_body || x->served_model_name ||
	       x->n_lora || (x->prompt_suffix && x->prompt_suffix[0]);
}

/* Sets key in o to item, replacing what was there (Python's dict update). 0 or -ENOMEM. */
static int put(cJSON *o, const char *key, cJSON *item)
{
	if (!item)
		return -ENOMEM;
	if (cJSON_GetObjectItemCaseSensitive(o, key))
		return cJSON_ReplaceItemInObjectCaseSensitive(o, key, item) ? 0 : -ENOMEM;
	return cJSON_AddItemToObject(o, key, item) ? 0 : -ENOMEM;
}

/* The sampling parameters: top level for OpenAI APIs, in "sampling_params" for /generate.
 * SGLang sends temperature 0.0 unless given; top_p only below 1 on /generate. */
static int put_sampling(const struct ls_request_extra *x, enum ls_backend backend, cJSON *root)
{
	cJSON *dst = root;
	if (backend == LS_BACKEND_SGLANG && !(dst = cJSON_GetObjectItemCaseSensitive(root, "sampling_params")))
		dst = cJSON_AddObjectToObject(root, "sampling_params");
	int rc = dst ? 0 : -ENOMEM;
	for (int k = 0; !rc && k < LS_SAMP__COUNT; k++) {
		int given = (x->sampling_set >> k) & 1;
		double v = x->sampling[k];
		if (x->rules == LS_BODY_SGLANG && k == LS_SAMP_TEMPERATURE && !given) {
			given = 1;
			v = 0.0;
		}
		if (x->rules == LS_BODY_SGLANG && k == LS_SAMP_TOP_P && backend == LS_BACKEND_SGLANG && v >= 1.0)
			given = 0;
		if (given)
			rc = put(dst, ls_sampling_keys[k], cJSON_CreateNumber(v));
	}
	return rc;
}

/* Logprobs: vLLM's completions "logprobs": N; SGLang's top_logprobs_num (completions: as
 * "logprobs"), return_logprob and logprob_start_len on /generate. */
static int put_logprobs(const struct ls_request_extra *x, enum ls_backend backend, cJSON *root)
{
	int rc = 0;
	if (backend == LS_BACKEND_SGLANG) {
		if (x->rules == LS_BODY_SGLANG || x->return_logprob)
			rc = put(root, "return_logprob", cJSON_CreateBool(x->return_logprob));
		if (!rc && (x->rules == LS_BODY_SGLANG || x->logprob_start_len != -1))
			rc = put(root, "logprob_start_len", cJSON_CreateNumber(x->logprob_start_len));
		if (!rc && x->top_logprobs_num > 0)
			rc = put(root, "top_logprobs_num", cJSON_CreateNumber(x->top_logprobs_num));
		return rc;
	}
	if (backend != LS_BACKEND_OPENAI)
		return 0; /* neither tool sends logprobs on chat */
	if (x->logprobs >= 0)
		rc = put(root, "logprobs", cJSON_CreateNumber(x->logprobs));
	else if (x->return_logprob && x->top_logprobs_num > 0)
		rc = put(root, "logprobs", cJSON_CreateNumber(x->top_logprobs_num));
	return rc;
}

/* The model name sent and the LoRA adapter: vLLM names the adapter as the model; SGLang
 * also sends lora_path (its own server reads that, vLLM's the model). */
static int put_model(const struct ls_request_extra *x, enum ls_backend backend, const char *lora, cJSON *root)
{
	int rc = 0;
	if (backend != LS_BACKEND_SGLANG) {
		const char *model = lora ? lora : x->served_model_name;
		if (model)
			rc = put(root, "model", cJSON_CreateString(model));
		if (!rc && x->rules == LS_BODY_SGLANG && backend == LS_BACKEND_OPENAI &&
		    !cJSON_GetObjectItemCaseSensitive(root, "best_of"))
			rc = put(root, "best_of", cJSON_CreateNumber(1));
	}
	if (!rc && (backend == LS_BACKEND_SGLANG || x->rules == LS_BODY_SGLANG) &&
	    (lora || (backend == LS_BACKEND_SGLANG && x->rules == LS_BODY_SGLANG)))
		rc = put(root, "lora_path", lora ? cJSON_CreateString(lora) : cJSON_CreateNull());
	return rc;
}

/* SGLang's --prompt-suffix on a text prompt ("prompt", "text" or the last message). */
static int put_suffix(const char *suffix, cJSON *root)
{
	cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "prompt");
	if (!cJSON_IsString(p))
		p = cJSON_GetObjectItemCaseSensitive(root, "text");
	if (!cJSON_IsString(p)) {
		cJSON *msgs = cJSON_GetObjectItemCaseSensitive(root, "messages");
		cJSON *last = cJSON_IsArray(msgs) ? cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1) : NULL;
		p = last ? cJSON_GetObjectItemCaseSensitive(last, "content") : NULL;
	}
	if (!cJSON_IsString(p))
		return 0; /* token ids: nothing to append to */
	size_t a = strlen(p->valuestring), b = strlen(suffix);
	char *joined = malloc(a + b + 1);
	if (!joined)
		return -ENOMEM;
	memcpy(joined, p->valuestring, a);
	memcpy(joined + a, suffix, b + 1);
	char *set = cJSON_SetValuestring(p, joined);
	free(joined);
	return set ? 0 : -ENOMEM;
}

/* The extra body, key by key over the body (vLLM: payload.update(extra_body)). */
static int put_extra(const char *extra, cJSON *root)
{
	cJSON *e = cJSON_Parse(extra);
	if (!cJSON_IsObject(e)) {
		cJSON_Delete(e);
		return -EINVAL;
	}
	int rc = 0;
	for (cJSON *it = e->child; !rc && it; it = it->next)
		rc = put(root, it->string, cJSON_Duplicate(it, 1));
	cJSON_Delete(e);
	return rc;
}

int ls_request_extra_apply(const struct ls_request_extra *x, enum ls_backend backend, const char *body,
			   const char *lora, char **out, size_t *len)
{
	cJSON *root = cJSON_Parse(body);
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return -EINVAL;
	}
	int rc = put_sampling(x, backend, root);
	if (!rc)
		rc = put_logprobs(x, backend, root);
	if (!rc)
		rc = put_model(x, backend, lora, root);
	if (!rc && x->prompt_suffix && x->prompt_suffix[0])
		rc = put_suffix(x->prompt_suffix, root);
	if (!rc && x->extra_body)
		rc = put_extra(x->extra_body, root);
	char *text = rc ? NULL : cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	if (!rc && !text)
		rc = -ENOMEM;
	if (rc)
		return rc;
	*out = text;
	*len = strlen(text);
	return 0;
}

/* {"Name": "<redacted>"} for every header that goes out but the constant ones. */
static cJSON *headers_json(const struct ls_request_extra *x, int has_auth)
{
	cJSON *h = cJSON_CreateObject();
	if (h && has_auth)
		cJSON_AddStringToObject(h, "Authorization", "<redacted>");
	for (size_t i = 0; h && i < x->n_headers; i++) {
		const char *colon = strchr(x->headers[i], ':');
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)(colon ? colon - x->headers[i] : 0), x->headers[i]);
		cJSON_DeleteItemFromObject(h, name); /* the user's header replaces ours */
		cJSON_AddStringToObject(h, name, "<redacted>");
	}
	if (h)
		cJSON_AddStringToObject(h, "X-Request-Id", x->request_id_prefix ? "<prefix><index>" : "<run tag>-<index>");
	return h;
}

char *ls_request_extra_summary(const struct ls_request_extra *x, enum ls_backend backend, int has_auth)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *s = o ? cJSON_AddObjectToObject(o, "sampling") : NULL;
	for (int k = 0; s && k < LS_SAMP__COUNT; k++)
		if ((x->sampling_set >> k) & 1)
			cJSON_AddNumberToObject(s, ls_sampling_keys[k], x->sampling[k]);
	if (s && x->rules == LS_BODY_SGLANG && !(x->sampling_set & (1u << LS_SAMP_TEMPERATURE)))
		cJSON_AddNumberToObject(s, "temperature", 0.0); /* SGLang's default, sent */
	if (o && x->logprobs >= 0)
		cJSON_AddNumberToObject(o, "logprobs", x->logprobs);
	if (o && backend == LS_BACKEND_SGLANG && (x->return_logprob || x->rules == LS_BODY_SGLANG))
		cJSON_AddBoolToObject(o, "return_logprob", x->return_logprob);
	if (o && x->top_logprobs_num > 0)
		cJSON_AddNumberToObject(o, "top_logprobs_num", x->top_logprobs_num);
	if (o && x->served_model_name)
		cJSON_AddStringToObject(o, "served_model_name", x->served_model_name);
	cJSON *lora = o && x->n_lora ? cJSON_AddArrayToObject(o, "lora") : NULL;
	for (size_t i = 0; lora && i < x->n_lora; i++)
		cJSON_AddItemToArray(lora, cJSON_CreateString(x->lora[i]));
	if (o && x->extra_body) {
		cJSON *e = cJSON_Parse(x->extra_body);
		if (e)
			cJSON_AddItemToObject(o, "extra_body", e);
	}
	if (o && x->request_id_prefix)
		cJSON_AddStringToObject(o, "request_id_prefix", x->request_id_prefix);
	if (o)
		cJSON_AddItemToObject(o, "headers", headers_json(x, has_auth));
	char *text = o ? cJSON_PrintUnformatted(o) : NULL;
	cJSON_Delete(o);
	return text;
}
