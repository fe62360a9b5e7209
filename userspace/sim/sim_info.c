/* sim/sim_info.c — the small endpoints: GET /health, /v1/models, /metrics (Prometheus text,
 * vLLM names), /server_info (SGLang shape), POST /tokenize, /detokenize, /flush_cache,
 * /start_profile and /stop_profile (200, nothing else). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include "base/clock.h"
#include "sim/sim.h"

static void send_body(struct sim_conn *c, int status, const char *ctype, const char *body, size_t len,
		      int keep_alive)
{
	struct ls_strbuf out = { 0 };
	int rc = ls_strbuf_printf(&out, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s\r\n",
				status, sim_http_reason(status), ctype, len, keep_alive ? "" : "Connection: close\r\n");
	rc |= ls_strbuf_append(&out, body, len);
	sim_conn_reply(c, &out, rc, keep_alive);
}

static void send_json(struct sim_conn *c, cJSON *obj, int keep_alive)
{
	char *s = obj ? cJSON_PrintUnformatted(obj) : NULL;
	cJSON_Delete(obj);
	if (!s) {
		sim_api_send_error(c, 503, "ServiceUnavailable", "out of memory", 0);
		return;
	}
	send_body(c, 200, "application/json", s, strlen(s), keep_alive);
	free(s);
}

static double avg_accept_len(const struct sim_engine *e)
{
	if (!e->spec_drafts_total)
		return 1.0;
	return (double)(e->spec_drafts_total + e->spec_accepted_total) / (double)e->spec_drafts_total;
}

static void metrics(struct sim_conn *c, int keep_alive)
{
	struct sim_server *srv = c->srv;
	const struct sim_engine *e = &srv->engine;
	const char *m = srv->cfg->model;
	struct ls_strbuf b = { 0 };
	int rc = 0;
#define GAUGE(name, help, val) \
	rc |= ls_strbuf_printf(&b, "# HELP " name " " help "\n# TYPE " name " gauge\n" name "{model_name=\"%s\"} %llu\n", \
			     m, (unsigned long long)(val))
#define COUNTER(name, help, val) \
	rc |= ls_strbuf_printf(&b, "# HELP " name " " help "\n# TYPE " name " counter\n" name "{model_name=\"%s\"} %llu\n", \
			     m, (unsigned long long)(val))
	GAUGE("vllm:num_requests_running", "Requests in the running batch.", e->running.count);
	GAUGE("vllm:num_requests_waiting", "Requests waiting to be admitted.", e->waiting.count);
	COUNTER("vllm:prompt_tokens_total", "Prompt tokens processed (prefilled or found in the prefix cache).",
		e->prompt_tokens_total);
	COUNTER("vllm:generation_tokens_total", "Tokens generated.", e->generation_tokens_total);
	COUNTER("vllm:spec_decode_num_drafts_total", "Decode steps that verified drafts.", e->spec_drafts_total);
	COUNTER("vllm:spec_decode_num_draft_tokens_total", "Draft tokens proposed.", e->spec_draft_tokens_total);
	COUNTER("vllm:spec_decode_num_accepted_tokens_total", "Draft tokens accepted.", e->spec_accepted_total);
	COUNTER("vllm:prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.",
		e->prefix_queries_total);
	COUNTER("vllm:prefix_cache_hits_total", "Prompt tokens found in the prefix cache.", e->prefix_hits_total);
	rc |= ls_strbuf_printf(&b, "# HELP vllm:request_success_total Requests finished.\n"
				 "# TYPE vllm:request_success_total counter\n"
				 "vllm:request_success_total{model_name=\"%s\",finished_reason=\"length\"} %llu\n"
				 "vllm:request_success_total{model_name=\"%s\",finished_reason=\"stop\"} %llu\n",
			     m, (unsigned long long)srv->finished_total[0], m,
			     (unsigned long long)srv->finished_total[1]);
	COUNTER("latscope_sim_steps_total", "Engine steps run.", e->steps_total);
	COUNTER("latscope_sim_connections_total", "Connections accepted.", srv->accepted_total);
	GAUGE("latscope_sim_connections_open", "Connections open now.", srv->n_conns);
	rc |= ls_strbuf_puts(&b, "# HELP latscope_sim_faults_total Faults injected.\n"
			       "# TYPE latscope_sim_faults_total counter\n");
	for (int k = 1; k < SIM_FAULT__COUNT; k++)
		rc |= ls_strbuf_printf(&b, "latscope_sim_faults_total{kind=\"%s\"} %llu\n", sim_fault_name(k),
				     (unsigned long long)srv->faults_total[k]);
#undef GAUGE
#undef COUNTER
	if (rc)
		sim_api_send_error(c, 503, "ServiceUnavailable", "out of memory", 0);
	else
		send_body(c, 200, "text/plain; version=0.0.4; charset=utf-8", b.data, b.len, keep_alive);
	ls_strbuf_free(&b);
}

static void server_info(struct sim_conn *c, int keep_alive)
{
	struct sim_server *srv = c->srv;
	const struct sim_config *cfg = srv->cfg;
	cJSON *o = cJSON_CreateObject();
	cJSON *states = cJSON_AddArrayToObject(o, "internal_states");
	cJSON *st = cJSON_CreateObject();
	cJSON_AddItemToArray(states, st);
	cJSON_AddNumberToObject(st, "avg_spec_accept_length", avg_accept_len(&srv->engine));
	double secs = (double)(ls_now_ns() - srv->start_ns) / 1e9;
	cJSON_AddNumberToObject(st, "last_gen_throughput", secs > 0 ? (double)srv->engine.generation_tokens_total / secs : 0);
	cJSON_AddStringToObject(o, "version", "latscope-sim");
	cJSON_AddStringToObject(o, "model_path", cfg->model);
	cJSON_AddNumberToObject(o, "max_running_requests", cfg->max_batch);
	cJSON_AddNumberToObject(o, "chunked_prefill_size", cfg->max_batch_tokens);
	cJSON_AddNumberToObject(o, "speculative_num_draft_tokens", cfg->accept_len > 1.0 ? cfg->num_spec_tokens : 0);
	cJSON_AddNumberToObject(o, "step_ms", cfg->step_ms);
	cJSON_AddNumberToObject(o, "seed", (double)cfg->seed);
	send_json(c, o, keep_alive);
}

static void models(struct sim_conn *c, int keep_alive)
{
	const struct sim_config *cfg = c->srv->cfg;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "object", "list");
	cJSON *data = cJSON_AddArrayToObject(o, "data");
	cJSON *m = cJSON_CreateObject();
	cJSON_AddItemToArray(data, m);
	cJSON_AddStringToObject(m, "id", cfg->model);
	cJSON_AddStringToObject(m, "object", "model");
	/* Unix time, as vLLM's ModelCard sets it when it answers (start_ns is CLOCK_MONOTONIC). */
	cJSON_AddNumberToObject(m, "created", (double)time(NULL));
	cJSON_AddStringToObject(m, "owned_by", "latscope");
	cJSON_AddStringToObject(m, "root", cfg->model);
	cJSON_AddNumberToObject(m, "max_model_len", cfg->max_model_len);
	send_json(c, o, keep_alive);
}

/* POST /tokenize {"prompt": "..."} (or "text") -> {"tokens": [...], "count": N, "max_model_len": L} */
static void tokenize(struct sim_conn *c, const char *body, size_t len, int keep_alive)
{
	cJSON *root = cJSON_ParseWithLength(body, len);
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "prompt");
	if (!p)
		p = cJSON_GetObjectItemCaseSensitive(root, "text");
	if (!cJSON_IsString(p)) {
		cJSON_Delete(root);
		sim_api_send_error(c, 400, "BadRequestError", "tokenize needs {\"prompt\": \"text\"}", keep_alive);
		return;
	}
	int *ids = NULL;
	int n = sim_tok_encode(p->valuestring, strlen(p->valuestring), &ids);
	cJSON_Delete(root);
	if (n < 0) {
		sim_api_send_error(c, 503, "ServiceUnavailable", "out of memory", 0);
		return;
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "tokens", cJSON_CreateIntArray(ids, n));
	cJSON_AddNumberToObject(o, "count", n);
	cJSON_AddNumberToObject(o, "max_model_len", c->srv->cfg->max_model_len);
	free(ids);
	send_json(c, o, keep_alive);
}

/* POST /detokenize {"tokens": [...]} -> {"prompt": "..."} */
static void detokenize(struct sim_conn *c, const char *body, size_t len, int keep_alive)
{
	cJSON *root = cJSON_ParseWithLength(body, len);
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "tokens");
	const char *err = cJSON_IsArray(t) ? NULL : "detokenize needs {\"tokens\": [ids]}";
	int n = err ? 0 : cJSON_GetArraySize(t), i = 0;
	int *ids = err ? NULL : malloc(((size_t)n + 1) * sizeof(int));
	if (!err && !ids)
		err = "out of memory";
	const cJSON *it;
	if (!err) {
		cJSON_ArrayForEach(it, t) {
			if (!cJSON_IsNumber(it) || !(fabs(it->valuedouble) < 2147483648.0) ||
			    it->valuedouble != (double)(int)it->valuedouble) {
				err = "tokens must be integers";
				break;
			}
			ids[i++] = (int)it->valuedouble;
		}
	}
	cJSON_Delete(root);
	struct ls_strbuf text = { 0 };
	if (!err && sim_tok_decode(ids, (size_t)n, &text))
		err = "a token id is outside the vocabulary";
	free(ids);
	if (err) {
		ls_strbuf_free(&text);
		sim_api_send_error(c, 400, "BadRequestError", err, keep_alive);
		return;
	}
	struct ls_strbuf out = { 0 };
	int rc = ls_strbuf_puts(&out, "{\"prompt\":");
	rc |= ls_strbuf_json_str(&out, text.data ? text.data : "", text.len);
	rc |= ls_strbuf_puts(&out, "}");
	if (rc)
		sim_api_send_error(c, 503, "ServiceUnavailable", "out of memory", 0);
	else
		send_body(c, 200, "application/json", out.data, out.len, keep_alive);
	ls_strbuf_free(&out);
	ls_strbuf_free(&text);
}

int sim_info_dispatch(struct sim_conn *c, const struct sim_http_req *h, const char *body, size_t body_len,
		      int keep_alive)
{
	int get = h->method_len == 3 && !memcmp(h->method, "GET", 3);
	int post = h->method_len == 4 && !memcmp(h->method, "POST", 4);
	if (get && (sim_http_path_is(h, "/health") || sim_http_path_is(h, "/ping")))
		send_body(c, 200, "application/json", "", 0, keep_alive);
	else if (get && sim_http_path_is(h, "/v1/models"))
		models(c, keep_alive);
	else if (get && sim_http_path_is(h, "/metrics"))
		metrics(c, keep_alive);
	else if (get && (sim_http_path_is(h, "/server_info") || sim_http_path_is(h, "/get_server_info")))
		server_info(c, keep_alive);
	else if (post && sim_http_path_is(h, "/tokenize"))
		tokenize(c, body, body_len, keep_alive);
	else if (post && sim_http_path_is(h, "/detokenize"))
		detokenize(c, body, body_len, keep_alive);
	else if ((post || get) && sim_http_path_is(h, "/flush_cache")) {
		sim_engine_flush_cache(c->srv);
		static const char msg[] = "Cache flushed.\n";
		send_body(c, 200, "text/plain", msg, sizeof(msg) - 1, keep_alive);
	} else if (post && (sim_http_path_is(h, "/start_profile") || sim_http_path_is(h, "/stop_profile"))) {
		static const char msg[] = "{}"; /* vLLM's and SGLang's --profile: nothing to profile here */
		send_body(c, 200, "application/json", msg, sizeof(msg) - 1, keep_alive);
	} else
		return 0;
	return 1;
}
