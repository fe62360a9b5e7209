/* sim/sim_api.c — request routing and the generation endpoints' request side: parse the JSON
 * body (cJSON), build the request, decide its seeded fate (output length, fault), answer
 * errors, send the streaming response head, hand it to the engine. The frames themselves are
 * sim_stream.c; the small endpoints are sim_info.c. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base/clock.h"
#include "sim/sim.h"

void sim_api_req_free(struct sim_req *r)
{
	if (!r)
		return;
	free(r->prompt_ids);
	free(r->steps);
	free(r->frames);
	ls_strbuf_free(&r->text);
	free(r);
}

static int method_is(const struct sim_http_req *h, const char *m)
{
	return h->method_len == strlen(m) && !memcmp(h->method, m, h->method_len);
}

void sim_api_send_error(struct sim_conn *c, int status, const char *type, const char *msg, int keep_alive)
{
	struct ls_strbuf body = { 0 }, out = { 0 };
	int rc = ls_strbuf_puts(&body, "{\"object\":\"error\",\"message\":");
	rc |= ls_strbuf_json_str(&body, msg, strlen(msg));
	rc |= ls_strbuf_printf(&body, ",\"type\":\"%s\",\"param\":null,\"code\":%d}", type, status);
	rc |= ls_strbuf_printf(&out, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
			     "Content-Length: %zu\r\n%s%s\r\n",
			     status, sim_http_reason(status), body.len,
			     status == 429 ? "Retry-After: 1\r\n" : "",
			     keep_alive ? "" : "Connection: close\r\n");
	rc |= ls_strbuf_append(&out, body.data, body.len);
	sim_conn_reply(c, &out, rc, keep_alive);
	ls_strbuf_free(&body);
}

static int bad(struct sim_conn *c, const struct sim_http_req *h, const char *msg)
{
	sim_api_send_error(c, 400, "BadRequestError", msg, h->keep_alive);
	return -1;
}

int sim_api_int_field(const cJSON *obj, const char *name, int dflt, int lo, int hi, int *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
	if (!v || cJSON_IsNull(v)) {
		*out = dflt;
		return 0;
	}
	/* The range first: casting a double outside long long is undefined. */
	if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi) ||
	    v->valuedouble != (double)(long long)v->valuedouble)
		return -1;
	*out = (int)v->valuedouble;
	return 0;
}

int sim_api_bool_field(const cJSON *obj, const char *name, int *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsBool(v))
		return -1;
	*out = cJSON_IsTrue(v);
	return 0;
}

/* A prompt from a JSON string or array of token ids. */
static const char *prompt_from(const cJSON *v, struct sim_req *r)
{
	if (cJSON_IsString(v)) {
		r->prompt_len = sim_tok_encode(v->valuestring, strlen(v->valuestring), &r->prompt_ids);
		return r->prompt_len < 0 ? "out of memory tokenizing the prompt" : NULL;
	}
	if (!cJSON_IsArray(v))
		return "prompt must be a string or an array of token ids";
	int n = cJSON_GetArraySize(v);
	if (n == 1 && cJSON_IsString(cJSON_GetArrayItem(v, 0)))
		return prompt_from(cJSON_GetArrayItem(v, 0), r);
	r->prompt_ids = malloc(((size_t)n + 1) * sizeof(int));
	if (!r->prompt_ids)
		return "out of memory";
	int vocab = sim_tok_vocab_size(), i = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, v) {
		if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble >= vocab ||
		    it->valuedouble != (double)(int)it->valuedouble)
			return "prompt token ids must be integers within the vocabulary (see POST /tokenize)";
		r->prompt_ids[i++] = (int)it->valuedouble;
	}
	r->prompt_len = n;
	return NULL;
}

/* Chat messages rendered with a fixed template, "<|role|>\ncontent\n" ... "<|assistant|>\n". */
static const char *chat_prompt(const cJSON *msgs, struct sim_req *r)
{
	if (!cJSON_IsArray(msgs) || cJSON_GetArraySize(msgs) == 0)
		return "messages must be a non-empty array";
	struct ls_strbuf t = { 0 };
	const cJSON *m;
	const char *err = NULL;
	cJSON_ArrayForEach(m, msgs) {
		const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
		const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
		if (!cJSON_IsString(role)) {
			err = "each message needs a string role";
			break;
		}
		ls_strbuf_printf(&t, "<|%s|>\n", role->valuestring);
		if (cJSON_IsString(content)) {
			ls_strbuf_puts(&t, content->valuestring);
		} else if (cJSON_IsArray(content)) {
			const cJSON *part;
			cJSON_ArrayForEach(part, content) {
				const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
				if (cJSON_IsString(text))
					ls_strbuf_puts(&t, text->valuestring);
			}
		} else if (content && !cJSON_IsNull(content)) {
			err = "message content must be a string or an array of parts";
			break;
		}
		ls_strbuf_puts(&t, "\n");
	}
	if (!err) {
		ls_strbuf_puts(&t, "<|assistant|>\n");
		r->prompt_len = sim_tok_encode(t.data ? t.data : "", t.len, &r->prompt_ids);
		if (r->prompt_len < 0)
			err = "out of memory tokenizing the messages";
	}
	ls_strbuf_free(&t);
	return err;
}

/* Fills r from the body. NULL on success, else the message for a 400. */
static const char *parse_body(const cJSON *root, enum sim_endpoint ep, struct sim_req *r, const char **rid)
{
	const char *err;
	int max_tokens, min_tokens = 0;
	const cJSON *opts = NULL;
	if (sim_api_is_peer(ep))
		return sim_api_parse_peer(root, ep, r);
	if (ep == SIM_EP_GENERATE) {
		const cJSON *text = cJSON_GetObjectItemCaseSensitive(root, "text");
		const cJSON *ids = cJSON_GetObjectItemCaseSensitive(root, "input_ids");
		if (text && !cJSON_IsNull(text))
			err = cJSON_IsString(text) ? prompt_from(text, r) : "text must be a string";
		else if (ids && !cJSON_IsNull(ids))
			err = cJSON_IsArray(ids) ? prompt_from(ids, r) : "input_ids must be an array";
		else
			err = "one of text or input_ids is required";
		if (err)
			return err;
		const cJSON *sp = cJSON_GetObjectItemCaseSensitive(root, "sampling_params");
		if (sp && !cJSON_IsNull(sp) && !cJSON_IsObject(sp))
			return "sampling_params must be an object";
		if (sim_api_int_field(sp, "max_new_tokens", 128, 1, 1 << 24, &max_tokens))
			return "sampling_params.max_new_tokens must be an integer >= 1";
		if (sim_api_int_field(sp, "min_new_tokens", 0, 0, 1 << 24, &min_tokens))
			return "sampling_params.min_new_tokens must be an integer >= 0";
		if (sim_api_bool_field(sp, "ignore_eos", &r->ignore_eos))
			return "sampling_params.ignore_eos must be a boolean";
		const cJSON *rv = cJSON_GetObjectItemCaseSensitive(root, "rid");
		if (cJSON_IsString(rv))
			*rid = rv->valuestring;
		r->stream = 0;
	} else {
		if (ep == SIM_EP_COMPLETIONS) {
			const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "prompt");
			if (!p)
				return "prompt is required";
			err = prompt_from(p, r);
		} else {
			err = chat_prompt(cJSON_GetObjectItemCaseSensitive(root, "messages"), r);
		}
		if (err)
			return err;
		int dflt = ep == SIM_EP_COMPLETIONS ? 16 : 128;
		if (ep == SIM_EP_CHAT && cJSON_GetObjectItemCaseSensitive(root, "max_completion_tokens")) {
			if (sim_api_int_field(root, "max_completion_tokens", dflt, 1, 1 << 24, &max_tokens))
				return "max_completion_tokens must be an integer >= 1";
		} else if (sim_api_int_field(root, "max_tokens", dflt, 1, 1 << 24, &max_tokens)) {
			return "max_tokens must be an integer >= 1";
		}
		if (sim_api_int_field(root, "min_tokens", 0, 0, 1 << 24, &min_tokens))
			return "min_tokens must be an integer >= 0";
		if (sim_api_bool_field(root, "ignore_eos", &r->ignore_eos))
			return "ignore_eos must be a boolean";
		opts = cJSON_GetObjectItemCaseSensitive(root, "stream_options");
		if (opts && !cJSON_IsNull(opts) && sim_api_bool_field(opts, "include_usage", &r->include_usage))
			return "stream_options.include_usage must be a boolean";
	}
	if (sim_api_bool_field(root, "stream", &r->stream))
		return "stream must be a boolean";
	if (min_tokens > max_tokens)
		return "min_tokens must not exceed max_tokens";
	r->max_tokens = max_tokens;
	r->min_tokens = min_tokens;
	return NULL;
}

static int send_stream_head(struct sim_conn *c, struct sim_req *r)
{
	struct ls_strbuf out = { 0 };
	int rc = ls_strbuf_puts(&out, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
				    "Cache-Control: no-cache\r\n");
	if (r->chunked)
		rc |= ls_strbuf_puts(&out, "Transfer-Encoding: chunked\r\n");
	rc |= ls_strbuf_puts(&out, "X-Request-Id: ");
	rc |= ls_strbuf_puts(&out, r->id);
	rc |= ls_strbuf_puts(&out, r->keep_alive ? "\r\n\r\n" : "\r\nConnection: close\r\n\r\n");
	r->headers_ns = ls_now_ns();
	if (!rc)
		rc = sim_conn_send(c, out.data, out.len);
	ls_strbuf_free(&out);
	return rc;
}

/* Decides the request's fate from its own seeded stream: fault, then output length. */
static void seed_request(struct sim_server *srv, struct sim_req *r, int id_given)
{
	const struct sim_config *cfg = srv->cfg;
	r->rng = id_given ? sim_hash64(r->id, strlen(r->id), cfg->seed)
			  : sim_hash64(&r->seq, sizeof(r->seq), cfg->seed ^ 0x5eedull);
	r->fault = sim_fault_pick(cfg->fail_rate, cfg->fail_kinds, &r->rng);
	r->fault_frame = 2 + (int)(sim_rng_next(&r->rng) % 3);
	r->engine_bad = sim_engine_fields_bad_pick(cfg, r->seq);
	if (r->ignore_eos) {
		r->target_tokens = r->max_tokens;
	} else {
		int lo = r->min_tokens > 1 ? r->min_tokens : 1;
		r->target_tokens = lo + (int)(sim_rng_next(&r->rng) % (uint64_t)(r->max_tokens - lo + 1));
	}
}

static void generation(struct sim_conn *c, const struct sim_http_req *h, const char *body, size_t len,
		       enum sim_endpoint ep, uint64_t received_ns)
{
	struct sim_server *srv = c->srv;
	const struct sim_config *cfg = srv->cfg;
	cJSON *root = cJSON_ParseWithLength(body, len);
	if (!root || !cJSON_IsObject(root)) {
		cJSON_Delete(root);
		bad(c, h, "request body is not a JSON object");
		return;
	}
	struct sim_req *r = calloc(1, sizeof(*r));
	if (!r) {
		cJSON_Delete(root);
		sim_api_send_error(c, 503, "ServiceUnavailable", "out of memory", 0);
		return;
	}
	const char *rid = NULL;
	const char *err = parse_body(root, ep, r, &rid);
	char msg[160];
	if (!err && r->prompt_len < 1)
		err = "the prompt is empty";
	if (!err && (long long)r->prompt_len + r->max_tokens > cfg->max_model_len) {
		snprintf(msg, sizeof(msg), "This model's maximum context length is %d tokens; the prompt has %d "
			 "and max_tokens is %d", cfg->max_model_len, r->prompt_len, r->max_tokens);
		err = msg;
	}
	if (err) {
		bad(c, h, err);
		cJSON_Delete(root);
		sim_api_req_free(r);
		return;
	}
	r->ep = ep;
	r->conn = c;
	r->seq = srv->next_req_seq++;
	r->received_ns = received_ns;
	r->chunked = h->minor_version >= 1;
	r->keep_alive = h->keep_alive && r->chunked; /* an HTTP/1.0 stream ends at close */
	r->created = (long long)time(NULL);
	int id_given = 1;
	if (h->request_id && h->request_id_len) {
		size_t n = h->request_id_len < sizeof(r->id) - 1 ? h->request_id_len : sizeof(r->id) - 1;
		memcpy(r->id, h->request_id, n);
	} else if (rid && *rid) {
		snprintf(r->id, sizeof(r->id), "%s", rid);
	} else {
		snprintf(r->id, sizeof(r->id), "sim-%llu", (unsigned long long)r->seq);
		id_given = 0;
	}
	for (char *p = r->id; *p; p++) /* ids are embedded raw in frames and headers */
		if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			*p = '_';
	cJSON_Delete(root);
	seed_request(srv, r, id_given);
	srv->requests_total++;

	if (sim_fault_before_head(srv, c, r))
		return; /* answered (or parked) by its fault: sim_fault.c */
	c->req = r;
	if (r->stream && send_stream_head(c, r)) {
		c->req = NULL;
		sim_stream_abort(srv, r, "client_closed");
		return;
	}
	sim_engine_submit(srv, r);
}

void sim_api_dispatch(struct sim_conn *c, const struct sim_http_req *h, const char *body, size_t body_len)
{
	uint64_t received_ns = ls_now_ns();
	if (method_is(h, "POST")) {
		if (sim_http_path_is(h, "/v1/completions"))
			return generation(c, h, body, body_len, SIM_EP_COMPLETIONS, received_ns);
		if (sim_http_path_is(h, "/v1/chat/completions"))
			return generation(c, h, body, body_len, SIM_EP_CHAT, received_ns);
		if (sim_http_path_is(h, "/generate"))
			return generation(c, h, body, body_len, SIM_EP_GENERATE, received_ns);
		int peer = sim_api_peer_endpoint(h);
		if (peer >= 0)
			return generation(c, h, body, body_len, (enum sim_endpoint)peer, received_ns);
	}
	if (sim_info_dispatch(c, h, body, body_len, h->keep_alive))
		return;
	char msg[200];
	snprintf(msg, sizeof(msg), "no route for %.*s %.*s", (int)(h->method_len > 16 ? 16 : h->method_len),
		 h->method, (int)(h->path_len > 120 ? 120 : h->path_len), h->path);
	sim_api_send_error(c, 404, "NotFoundError", msg, h->keep_alive);
}
