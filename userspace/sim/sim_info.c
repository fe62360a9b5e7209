/* sim/sim_info.c — the small endpoints: GET /health, /v1/models, /metrics (Prometheus text:
 * vLLM's counters, and the running / waiting / KV-use gauges under the names of each engine
 * --metrics-names asks for, from the engine's own lists; or a --metrics-fault), /perf_metrics
 * (--engine-fields trtllm: TensorRT-LLM's list, drained per read; or a --perf-metrics-fault),
 * /server_info (SGLang shape), POST /tokenize, /detokenize, /flush_cache, /start_profile and
 * /stop_profile (200, nothing else). */
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

static const char *const names_of[] = { "vllm", "sglang", "llama.cpp", "tgi" };

int sim_metrics_parse_names(const char *list, unsigned *mask)
{
	unsigned m = 0;
	for (const char *p = list; p && *p;) {
		size_t len = strcspn(p, ",");
		int found = len == 3 && !strncmp(p, "all", 3);
		if (found)
			m |= (1u << (sizeof(names_of) / sizeof(names_of[0]))) - 1;
		for (size_t k = 0; !found && k < sizeof(names_of) / sizeof(names_of[0]); k++)
			if (strlen(names_of[k]) == len && !strncmp(p, names_of[k], len)) {
				m |= 1u << k;
				found = 1;
			}
		if (!found)
			return -1;
		p += len + (p[len] == ',');
	}
	if (!m)
		return -1;
	*mask = m;
	return 0;
}

int sim_metrics_parse_fault(const char *name, int *fault)
{
	static const char *const kinds[] = { "none", "hang", "huge", "garbage" };
	for (int k = 0; k < (int)(sizeof(kinds) / sizeof(kinds[0])); k++)
		if (!strcmp(name, kinds[k])) {
			*fault = k;
			return 0;
		}
	return -1;
}

/* Tokens the running requests hold in the KV cache: their prompt computed so far + generated. */
static uint64_t kv_held(const struct sim_engine *e)
{
	uint64_t n = 0;
	for (const struct sim_req *r = e->running.head; r; r = r->next)
		n += (uint64_t)r->prefilled + (uint64_t)r->generated;
	return n;
}

/* The running / waiting / KV-use gauges under each engine's own names (the engines' sources:
 * vLLM's V1 loggers, SGLang's collector, llama.cpp's server-task.cpp, TGI's router). */
static int engine_gauges(struct ls_strbuf *b, const struct sim_server *srv)
{
	const struct sim_engine *e = &srv->engine;
	const char *m = srv->cfg->model;
	unsigned names = srv->cfg->metrics_names;
	double kv = (double)kv_held(e) / (double)srv->cfg->kv_tokens;
	int run = e->running.count, wait = e->waiting.count, rc = 0;
#define G(name, fmt, val) rc |= ls_strbuf_printf(b, "# TYPE " name " gauge\n" name fmt "\n", val)
	if (names & (1u << SIM_MNAMES_VLLM)) {
		rc |= ls_strbuf_printf(b, "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{model_name=\"%s\","
				       "engine=\"0\"} %.6f\n", m, kv);
	}
	if (names & (1u << SIM_MNAMES_SGLANG)) {
		rc |= ls_strbuf_printf(b, "# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs{model_name=\"%s\","
				       "engine_type=\"unified\",tp_rank=\"0\",pp_rank=\"0\"} %d.0\n", m, run);
		rc |= ls_strbuf_printf(b, "# TYPE sglang:num_queue_reqs gauge\nsglang:num_queue_reqs{model_name=\"%s\","
				       "engine_type=\"unified\",tp_rank=\"0\",pp_rank=\"0\"} %d.0\n", m, wait);
		rc |= ls_strbuf_printf(b, "# TYPE sglang:token_usage gauge\nsglang:token_usage{model_name=\"%s\","
				       "engine_type=\"unified\",tp_rank=\"0\",pp_rank=\"0\"} %.6f\n", m, kv);
	}
	if (names & (1u << SIM_MNAMES_LLAMACPP)) { /* llama-server prints no labels */
		G("llamacpp:requests_processing", " %d", run);
		G("llamacpp:requests_deferred", " %d", wait);
		G("llamacpp:kv_cache_usage_ratio", " %.6f", kv);
	}
	if (names & (1u << SIM_MNAMES_TGI)) {
		G("tgi_batch_current_size", " %d", run);
		G("tgi_queue_size", " %d", wait);
	}
#undef G
	return rc;
}

/* --metrics-fault, --perf-metrics-fault: no answer (for /metrics only while the engine has work:
 * the client's timeout ends the wait; an idle engine answers, so the counters read before and
 * after a run still come), 10 MB of comment lines, or 4 KB of seeded bytes that are no
 * Prometheus text and no JSON. 1 when the fault took the request, 0 otherwise. */
static int fault_answer(struct sim_conn *c, int fault, int hang_always, const char *ctype, int keep_alive)
{
	const struct sim_server *srv = c->srv;
	if (fault == SIM_MFAULT_HANG)
		return hang_always || srv->engine.running.count || srv->engine.waiting.count;
	if (fault != SIM_MFAULT_HUGE && fault != SIM_MFAULT_GARBAGE)
		return 0;
	static char *huge; /* built once: the fault is the answer's size, not the sim's time making it */
	size_t len = fault == SIM_MFAULT_HUGE ? 10u * 1000 * 1000 : 4096;
	char *body = fault == SIM_MFAULT_HUGE && huge ? huge : malloc(len);
	if (!body) {
		sim_api_send_error(c, 503, "ServiceUnavailable", "out of memory", 0);
		return 1;
	}
	if (fault == SIM_MFAULT_HUGE && !huge) { /* valid text, only far too much of it */
		memset(body, 'x', len);
		for (size_t i = 0; i < len; i += 80) {
			body[i] = '#';
			body[i + 79 < len ? i + 79 : len - 1] = '\n';
		}
		huge = body;
	} else if (fault == SIM_MFAULT_GARBAGE) {
		uint64_t x = srv->cfg->seed * 0x9e3779b97f4a7c15ull + 1;
		for (size_t i = 0; i < len; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			body[i] = (char)(x >> 56);
		}
	}
	send_body(c, 200, ctype, body, len, keep_alive);
	if (body != huge)
		free(body);
	return 1;
}

/* GET /perf_metrics (--engine-fields trtllm): the finished requests' timing_metrics, emptied. */
static void perf_metrics(struct sim_conn *c, int keep_alive)
{
	if (fault_answer(c, c->srv->cfg->perf_metrics_fault, 1, "application/json", keep_alive))
		return;
	struct ls_strbuf b = { 0 };
	if (sim_perf_drain(c->srv, &b))
		sim_api_send_error(c, 503, "ServiceUnavailable", "out of memory", 0);
	else
		send_body(c, 200, "application/json", b.data, b.len, keep_alive);
	ls_strbuf_free(&b);
}

static void metrics(struct sim_conn *c, int keep_alive)
{
	struct sim_server *srv = c->srv;
	const struct sim_engine *e = &srv->engine;
	const char *m = srv->cfg->model;
	struct ls_strbuf b = { 0 };
	int rc = 0;
	if (fault_answer(c, srv->cfg->metrics_fault, 0, "text/plain; version=0.0.4", keep_alive))
		return;
#define GAUGE(name, help, val) \
	rc |= ls_strbuf_printf(&b, "# HELP " name " " help "\n# TYPE " name " gauge\n" name "{model_name=\"%s\"} %llu\n", \
			     m, (unsigned long long)(val))
#define COUNTER(name, help, val) \
	rc |= ls_strbuf_printf(&b, "# HELP " name " " help "\n# TYPE " name " counter\n" name "{model_name=\"%s\"} %llu\n", \
			     m, (unsigned long long)(val))
	if (srv->cfg->metrics_names & (1u << SIM_MNAMES_VLLM)) {
		GAUGE("vllm:num_requests_running", "Requests in the running batch.", e->running.count);
		GAUGE("vllm:num_requests_waiting", "Requests waiting to be admitted.", e->waiting.count);
	}
	rc |= engine_gauges(&b, srv);
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
	else if (get && sim_http_path_is(h, "/perf_metrics") && c->srv->cfg->engine_fields == SIM_EF_TRTLLM)
		perf_metrics(c, keep_alive);
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
