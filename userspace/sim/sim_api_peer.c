/* sim/sim_api_peer.c — the simulator answering as TGI (POST /generate_stream), as Triton's
 * TensorRT-LLM ensemble (POST /v2/models/M/generate_stream) and as OpenAI's Responses API
 * (POST /v1/responses, its typed events as vLLM's server streams them): their request bodies and
 * their stream frames, so latscope's tgi, tensorrt-llm and openai-responses backends are tested
 * against truth. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include "sim/sim.h"

int sim_api_peer_endpoint(const struct sim_http_req *h)
{
	static const char v2[] = "/v2/models/", tail[] = "/generate_stream";
	size_t n = h->path_len;
	const char *q = memchr(h->path, '?', n);
	if (q)
		n = (size_t)(q - h->path);
	if (sim_http_path_is(h, "/generate_stream"))
		return SIM_EP_TGI;
	if (sim_http_path_is(h, "/v1/responses"))
		return SIM_EP_RESPONSES;
	if (n > sizeof(v2) - 1 + sizeof(tail) - 1 && !memcmp(h->path, v2, sizeof(v2) - 1) &&
	    !memcmp(h->path + n - (sizeof(tail) - 1), tail, sizeof(tail) - 1))
		return SIM_EP_TRT;
	return -1;
}

static const char *peer_prompt(const cJSON *text, struct sim_req *r, const char *what)
{
	if (!cJSON_IsString(text))
		return what;
	r->prompt_len = sim_tok_encode(text->valuestring, strlen(text->valuestring), &r->prompt_ids);
	return r->prompt_len < 0 ? "out of memory tokenizing the prompt" : NULL;
}

/* TGI: {"inputs": "...", "parameters": {"max_new_tokens", "ignore_eos_token", ...}}. */
static const char *parse_tgi(const cJSON *root, struct sim_req *r)
{
	const char *err = peer_prompt(cJSON_GetObjectItemCaseSensitive(root, "inputs"), r, "inputs must be a string");
	if (err)
		return err;
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(root, "parameters");
	if (params && !cJSON_IsNull(params) && !cJSON_IsObject(params))
		return "parameters must be an object";
	if (sim_api_int_field(params, "max_new_tokens", 20, 1, 1 << 24, &r->max_tokens)) /* TGI's default: 20 */
		return "parameters.max_new_tokens must be an integer >= 1";
	r->ignore_eos = 0;
	if (sim_api_bool_field(params, "ignore_eos_token", &r->ignore_eos))
		return "parameters.ignore_eos_token must be a boolean";
	return NULL;
}

/* Triton: {"text_input": "...", "max_tokens": N, "min_length": M, "stream": true, ...}. */
static const char *parse_trt(const cJSON *root, struct sim_req *r)
{
	const char *err = peer_prompt(cJSON_GetObjectItemCaseSensitive(root, "text_input"), r,
				      "text_input must be a string");
	if (err)
		return err;
	if (sim_api_int_field(root, "max_tokens", 16, 1, 1 << 24, &r->max_tokens))
		return "max_tokens must be an integer >= 1";
	if (sim_api_int_field(root, "min_length", 0, 0, 1 << 24, &r->min_tokens))
		return "min_length must be an integer >= 0";
	if (r->min_tokens > r->max_tokens)
		r->min_tokens = r->max_tokens;
	return NULL;
}

/* Responses: {"model", "input": "..." , "max_output_tokens": N, "stream", "store", "ignore_eos"}. */
static const char *parse_responses(const cJSON *root, struct sim_req *r)
{
	const char *err = peer_prompt(cJSON_GetObjectItemCaseSensitive(root, "input"), r, "input must be a string");
	if (err)
		return err;
	if (sim_api_int_field(root, "max_output_tokens", 16, 1, 1 << 24, &r->max_tokens))
		return "max_output_tokens must be an integer >= 1";
	r->ignore_eos = 0;
	if (sim_api_bool_field(root, "ignore_eos", &r->ignore_eos))
		return "ignore_eos must be a boolean";
	return NULL;
}

int sim_api_is_peer(enum sim_endpoint ep)
{
	return ep == SIM_EP_TGI || ep == SIM_EP_TRT || ep == SIM_EP_RESPONSES;
}

const char *sim_api_parse_peer(const cJSON *root, enum sim_endpoint ep, struct sim_req *r)
{
	r->stream = 1; /* these paths stream by name (Responses: the sim streams only) */
	r->min_tokens = 0;
	return ep == SIM_EP_TGI ? parse_tgi(root, r) : ep == SIM_EP_TRT ? parse_trt(root, r) : parse_responses(root, r);
}

/* One "event: TYPE\ndata: {"type": TYPE, ...body}\n\n". */
static int responses_event(struct ls_strbuf *msg, const char *type, const char *body)
{
	return ls_strbuf_printf(msg, "event: %s\ndata: {\"type\":\"%s\"%s%s}\n\n", type, type, *body ? "," : "", body);
}

int sim_responses_preamble(struct ls_strbuf *msg, const struct sim_req *r)
{
	char resp[256];
	snprintf(resp, sizeof(resp), "\"response\":{\"id\":\"resp_%.90s\",\"object\":\"response\","
		 "\"status\":\"in_progress\",\"usage\":null}", r->id);
	int rc = responses_event(msg, "response.created", resp);
	rc |= responses_event(msg, "response.in_progress", resp);
	rc |= responses_event(msg, "response.output_item.added", "\"output_index\":0,\"item\":{\"type\":\"message\","
			      "\"role\":\"assistant\",\"status\":\"in_progress\",\"content\":[]}");
	return rc | responses_event(msg, "response.content_part.added", "\"output_index\":0,\"content_index\":0,"
				    "\"part\":{\"type\":\"output_text\",\"text\":\"\"}");
}

int sim_responses_end(struct ls_strbuf *msg, const struct sim_req *r)
{
	struct ls_strbuf text = { 0 }, body = { 0 };
	int rc = ls_strbuf_json_str(&text, r->text.data ? r->text.data : "", r->text.len);
	const char *t = text.data ? text.data : "\"\"";
	rc |= ls_strbuf_printf(&body, "\"output_index\":0,\"content_index\":0,\"text\":%s", t);
	rc |= responses_event(msg, "response.output_text.done", body.data ? body.data : "");
	body.len = 0;
	rc |= ls_strbuf_printf(&body, "\"output_index\":0,\"content_index\":0,\"part\":{\"type\":\"output_text\","
			       "\"text\":%s}", t);
	rc |= responses_event(msg, "response.content_part.done", body.data ? body.data : "");
	rc |= responses_event(msg, "response.output_item.done", "\"output_index\":0,\"item\":{\"type\":\"message\","
			      "\"role\":\"assistant\",\"status\":\"completed\"}");
	body.len = 0; /* vLLM: hitting max_output_tokens is status "incomplete" on response.completed */
	rc |= ls_strbuf_printf(&body, "\"response\":{\"id\":\"resp_%.90s\",\"object\":\"response\",\"status\":"
			       "\"%s\",\"usage\":{\"input_tokens\":%d,\"output_tokens\":%d,\"total_tokens\":%d}}",
			       r->id, r->generated >= r->max_tokens ? "incomplete" : "completed", r->prompt_len,
			       r->generated, r->prompt_len + r->generated);
	rc |= responses_event(msg, "response.completed", body.data ? body.data : "");
	ls_strbuf_free(&text);
	ls_strbuf_free(&body);
	return rc;
}

/* TGI's StreamResponse (the final one carries generated_text and details) and Triton's
 * ensemble response. TGI writes "data:" with no space, as axum's SSE does. */
int sim_stream_peer_json(struct ls_strbuf *msg, const struct sim_req *r, const char *text, size_t text_len,
			 int last_id, const char *reason)
{
	int rc = 0;
	if (r->ep == SIM_EP_RESPONSES) { /* one token frame: an output text delta */
		rc |= ls_strbuf_puts(msg, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\","
					"\"item_id\":\"msg_0\",\"output_index\":0,\"content_index\":0,\"delta\":");
		rc |= ls_strbuf_json_str(msg, text, text_len);
		return rc | ls_strbuf_printf(msg, ",\"logprobs\":[],\"sequence_number\":%d}", r->token_frames);
	}
	if (r->ep == SIM_EP_TRT) {
		rc |= ls_strbuf_puts(msg, "data: {\"context_logits\":0.0,\"cum_log_probs\":0.0,\"generation_logits\":0.0,"
					"\"model_name\":\"ensemble\",\"model_version\":\"1\",\"output_log_probs\":[0.0],"
					"\"sequence_end\":false,\"sequence_id\":0,\"sequence_start\":false,\"text_output\":");
		rc |= ls_strbuf_json_str(msg, text, text_len);
		return rc | ls_strbuf_puts(msg, "}");
	}
	rc |= ls_strbuf_printf(msg, "data:{\"index\":%d,\"token\":{\"id\":%d,\"text\":", r->generated, last_id);
	rc |= ls_strbuf_json_str(msg, text, text_len);
	rc |= ls_strbuf_printf(msg, ",\"logprob\":0.0,\"special\":%s},\"generated_text\":",
			     last_id == SIM_TOK_EOS || last_id == SIM_TOK_EMPTY ? "true" : "false");
	if (!reason)
		return rc | ls_strbuf_puts(msg, "null,\"details\":null}");
	rc |= ls_strbuf_json_str(msg, r->text.data ? r->text.data : "", r->text.len);
	return rc | ls_strbuf_printf(msg, ",\"details\":{\"finish_reason\":\"%s\",\"generated_tokens\":%d,"
				   "\"seed\":null}}", strcmp(reason, "stop") ? "length" : "eos_token", r->generated);
}
