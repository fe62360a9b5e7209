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
		if (rc)
			snprintf(last, sizeof(last), "%s", resp.error);
		else
			snprintf(last, sizeof(last), "HTTP %ld", status);
		ls_http_resp_free(&resp);
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

static cJSON *get_json(struct ls_server *s, const char *path, const char *body)
{
	char url[1024];
	snprintf(url, sizeof(url), "%s%s", s->base, path);
	struct ls_http_resp resp;
	cJSON *root = NULL;
	if (!ls_http_call(url, body, &s->http, &resp) && resp.status == 200 && resp.body)
		root = cJSON_Parse(resp.body);
	ls_http_resp_free(&resp);
	return root;
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
	cJSON_Delete(root);
	return name;
}

int ls_server_count_tokens(void *ctx, const char *text, uint32_t *tokens)
{
	struct ls_server *s = ctx;
	cJSON *req = cJSON_CreateObject();
	if (!req)
		return -ENOMEM;
	if (s->model)
		cJSON_AddStringToObject(req, "model", s->model);
	cJSON_AddStringToObject(req, "prompt", text);
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

int ls_server_has_tokenize(struct ls_server *s)
{
	uint32_t n;
	return ls_server_count_tokens(s, "Hello world", &n) == 0;
}

/* 1 when /detokenize takes [id], 0 when it refuses it (4xx), -1 when there is no answer. */
static int detokenize_ok(struct ls_server *s, uint32_t id)
{
	char url[1024], body[128];
	snprintf(url, sizeof(url), "%s/detokenize", s->base);
	snprintf(body, sizeof(body), "{\"tokens\":[%u]}", id); /* model is optional here */
	struct ls_http_resp resp;
	int rc = ls_http_call(url, body, &s->http, &resp);
	long status = resp.status;
	ls_http_resp_free(&resp);
	if (rc)
		return -1;
	if (status == 200)
		return 1;
	return status >= 400 && status < 500 && status != 404 && status != 405 ? 0 : -1;
}

uint32_t ls_server_vocab_size(struct ls_server *s, uint32_t cap)
{
	cJSON *root = get_json(s, "/v1/models", NULL);
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(first_model(root), "vocab_size");
	if (cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble < 1e9) {
		uint32_t vocab = (uint32_t)v->valuedouble;
		cJSON_Delete(root);
		return vocab;
	}
	cJSON_Delete(root);
	if (detokenize_ok(s, cap - 1) != 0)
		return cap; /* accepted, or no opinion: keep the usual size */
	uint32_t lo = 0, hi = cap - 1; /* lo accepted (id 0 always is), hi refused */
	if (detokenize_ok(s, 0) != 1)
		return cap;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		int ok = detokenize_ok(s, mid);
		if (ok < 0)
			return cap;
		if (ok)
			lo = mid;
		else
			hi = mid;
	}
	return lo + 1;
}
