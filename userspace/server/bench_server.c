/* bench_server.c — see bench_server.h. Blocking libcurl easy calls, before the run only. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "server/bench_server.h"
#include "base/clock.h"
#include "base/numconv.h"

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int ls_server_wait_ready(struct ls_server *s, double timeout_s)
{
	char url[1024];
	snprintf(url, sizeof(url), "%s/v1/models", s->base);
	uint64_t deadline = ls_now_ns() + (uint64_t)(timeout_s * 1e9);
	struct ls_http_opts o = s->http;
	char last[300] = "";
	int told = 0;
	for (;;) {
		struct ls_http_resp resp;
		o.timeout_s = 5.0;
		int rc = ls_http_call(url, NULL, &o, &resp);
		long status = resp.status;
		int hopeless = rc && ls_http_hopeless(&resp);
		if (rc)
			snprintf(last, sizeof(last), "%s", resp.error);
		else
			snprintf(last, sizeof(last), "HTTP %ld", status);
		if (hopeless)
			fprintf(stderr, "latscope bench: %s: %s; %s\n", url, last, ls_http_fix(&resp));
		ls_http_resp_free(&resp);
		if (hopeless)
			return -1;
		if (!rc && status < 500)
			return 0;
		if (ls_now_ns() >= deadline) {
			fprintf(stderr, "latscope bench: the server at %s did not answer within %.0f s (%s); "
					"is it running? (--ready-check-timeout-sec sets the wait)\n", s->base, timeout_s, last);
			return -1;
		}
		if (!told++)
			fprintf(stderr, "latscope bench: waiting up to %.0f s for %s (%s)\n", timeout_s, url, last);
		sleep_ms(200);
	}
}

/* What an answer that is not the JSON asked for was, in words, into s->why. */
static void say_why(struct ls_server *s, const char *path, int rc, const struct ls_http_resp *resp)
{
	if (rc)
		snprintf(s->why, sizeof(s->why), "%s: no answer (%s)", path, resp->error);
	else if (resp->status == 401 || resp->status == 403)
		snprintf(s->why, sizeof(s->why), "%s: the server refused the request (HTTP %ld): %s", path,
			 resp->status, getenv("OPENAI_API_KEY") ? "check OPENAI_API_KEY" : "set OPENAI_API_KEY");
	else if (resp->status != 200)
		snprintf(s->why, sizeof(s->why), "%s: HTTP %ld (%s)", path, resp->status,
			 resp->content_type[0] ? resp->content_type : "no Content-Type");
	else
		snprintf(s->why, sizeof(s->why), "%s: HTTP 200 but not the JSON expected (%s)", path,
			 resp->content_type[0] ? resp->content_type : "no Content-Type");
}

/* GET (body NULL) or POST path, parsed as JSON, tried up to LS_SERVER_PROBE_TRIES times while
 * no answer comes. NULL with s->why set. */
static cJSON *get_json(struct ls_server *s, const char *path, const char *body)
{
	char url[1024];
	snprintf(url, sizeof(url), "%s%s", s->base, path);
	for (int attempt = 0; attempt < LS_SERVER_PROBE_TRIES; attempt++) {
		struct ls_http_resp resp;
		int rc = ls_http_call(url, body, &s->http, &resp);
		cJSON *root = !rc && resp.status == 200 && resp.body ? cJSON_Parse(resp.body) : NULL;
		if (!root)
			say_why(s, path, rc, &resp);
		ls_http_resp_free(&resp);
		if (root || !rc)
			return root; /* an answer, even a refusal, is final */
		sleep_ms(20L << attempt);
	}
	return NULL;
}

static const cJSON *first_model(const cJSON *root)
{
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(root, "data");
	return cJSON_IsArray(data) ? cJSON_GetArrayItem(data, 0) : NULL;
}

char *ls_server_first_model(struct ls_server *s)
{
	cJSON *root = get_json(s, "/v1/models", NULL);
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(first_model(root), "id");
	char *name = cJSON_IsString(id) ? strdup(id->valuestring) : NULL;
	if (root && !name)
		snprintf(s->why, sizeof(s->why), "/v1/models: its JSON has no data[0].id");
	cJSON_Delete(root);
	return name;
}

static int tokenize(struct ls_server *s, const char *field, const char *text, uint32_t *tokens)
{
	cJSON *req = cJSON_CreateObject();
	if (!req)
		return -ENOMEM;
	if (s->model)
		cJSON_AddStringToObject(req, "model", s->model);
	cJSON_AddStringToObject(req, field, text);
	char *body = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	if (!body)
		return -ENOMEM;
	cJSON *root = get_json(s, "/tokenize", body);
	free(body);
	s->tokenize_calls++;
	const cJSON *count = cJSON_GetObjectItemCaseSensitive(root, "count");
	const cJSON *ids = cJSON_GetObjectItemCaseSensitive(root, "tokens");
	int rc = 0;
	if (cJSON_IsNumber(count) && count->valuedouble >= 0)
		*tokens = (uint32_t)ls_d2i(count->valuedouble, 0, UINT32_MAX);
	else if (cJSON_IsArray(ids))
		*tokens = (uint32_t)cJSON_GetArraySize(ids);
	else
		rc = -EPROTO;
	cJSON_Delete(root);
	return rc;
}

int ls_server_count_tokens(void *ctx, const char *text, uint32_t *tokens)
{
	struct ls_server *s = ctx;
	if (s->tokenize_content)
		return tokenize(s, "content", text, tokens);
	int rc = tokenize(s, "prompt", text, tokens);
	if (rc || *tokens || !*text)
		return rc;
	uint32_t n = 0;
	rc = tokenize(s, "content", text, &n);
	if (!rc && n) {
		s->tokenize_content = 1;
		*tokens = n;
	}
	return rc;
}

int ls_server_has_tokenize(struct ls_server *s)
{
	uint32_t n;
	return ls_server_count_tokens(s, "Hello world", &n) == 0;
}

/* 1 when /detokenize takes [id], 0 when it refuses it (4xx), -1 when no answer came in
 * LS_SERVER_PROBE_TRIES tries or the server has no opinion (404/405/5xx: s->why says which). */
static int detokenize_ok(struct ls_server *s, uint32_t id)
{
	char url[1024], body[128];
	snprintf(url, sizeof(url), "%s/detokenize", s->base);
	snprintf(body, sizeof(body), "{\"tokens\":[%u]}", id); /* model is optional here */
	for (int attempt = 0; attempt < LS_SERVER_PROBE_TRIES; attempt++) {
		struct ls_http_resp resp;
		int rc = ls_http_call(url, body, &s->http, &resp);
		long status = resp.status;
		say_why(s, "/detokenize", rc, &resp);
		ls_http_resp_free(&resp);
		if (!rc && status == 200)
			return 1;
		if (!rc && status >= 400 && status < 500 && status != 404 && status != 405)
			return 0;
		if (!rc)
			return -1; /* no such endpoint, or an error of its own: no opinion */
		sleep_ms(20L << attempt);
	}
	return -2;
}

/* The vocabulary from /v1/models' vocab_size (vLLM, SGLang) or meta.n_vocab (llama.cpp's
 * llama-server, whose /detokenize answers an id past the vocabulary with a 500, not a 4xx, so
 * the search below cannot find it); 0 when it does not say. */
static uint32_t listed_vocab(struct ls_server *s)
{
	cJSON *root = get_json(s, "/v1/models", NULL);
	const cJSON *model = first_model(root);
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(model, "vocab_size");
	if (!v)
		v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(model, "meta"), "n_vocab");
	uint32_t vocab = cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble < 1e9 ? (uint32_t)v->valuedouble : 0;
	cJSON_Delete(root);
	return vocab;
}

int ls_server_vocab_size(struct ls_server *s, uint32_t cap, uint32_t *vocab)
{
	if ((*vocab = listed_vocab(s)))
		return 0;
	*vocab = cap;
	int top = detokenize_ok(s, cap - 1);
	if (top == -2)
		return -EIO;
	if (top != 0)
		return 0; /* accepted, or no /detokenize to ask: the usual size */
	uint32_t lo = 0, hi = cap - 1; /* lo accepted (id 0 always is), hi refused */
	int zero = detokenize_ok(s, 0);
	if (zero == -2)
		return -EIO;
	if (zero != 1)
		return 0;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		int ok = detokenize_ok(s, mid);
		if (ok < 0)
			return ok == -2 ? -EIO : 0;
		if (ok)
			lo = mid;
		else
			hi = mid;
	}
	*vocab = lo + 1;
	return 0;
}
