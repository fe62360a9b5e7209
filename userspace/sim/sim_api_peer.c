/* sim/sim_api_peer.c — the simulator answering as TGI (POST /generate_stream) and as Triton's
 * TensorRT-LLM ensemble (POST /v2/models/M/generate_stream): their request bodies and their
 * stream frames, so latscope's tgi and tensorrt-llm backends are tested against truth. */
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

const char *sim_api_parse_peer(const cJSON *root, enum sim_endpoint ep, struct sim_req *r)
{
	r->stream = 1; /* both paths stream by name */
	r->min_tokens = 0;
	return ep == SIM_EP_TGI ? parse_tgi(root, r) : parse_trt(root, r);
}

/* TGI's StreamResponse (the final one carries generated_text and details) and Triton's
 * ensemble response. TGI writes "data:" with no space, as axum's SSE does. */
int sim_stream_peer_json(struct ls_strbuf *msg, const struct sim_req *r, const char *text, size_t text_len,
			 int last_id, const char *reason)
{
	int rc = 0;
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
