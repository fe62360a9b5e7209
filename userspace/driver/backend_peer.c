/* backend_peer.c — the generation APIs vLLM's and SGLang's benchmarks still drive besides
 * OpenAI's and SGLang's: TGI's /generate_stream and Triton's (TensorRT-LLM) generate_stream.
 * Bodies are what vLLM's backend_request_func.py sends (async_request_tgi,
 * async_request_trt_llm); frames are what those servers stream. And llama.cpp's native
 * /completion (llama-server, tools/server/README.md), which neither benchmark drives. And
 * OpenAI's Responses API, /v1/responses (vllm/benchmarks/lib/endpoint_request_func.py
 * async_request_openai_responses, vLLM's --backend openai-responses). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "driver/backend_int.h"

int ls_backend_needs_text(enum ls_backend backend)
{
	return backend == LS_BACKEND_OPENAI_CHAT || backend == LS_BACKEND_TGI || backend == LS_BACKEND_TRT ||
	       backend == LS_BACKEND_OPENAI_RESPONSES; /* "input" is text */
}

int ls_backend_sends_model(enum ls_backend backend)
{
	return backend == LS_BACKEND_OPENAI || backend == LS_BACKEND_OPENAI_CHAT || backend == LS_BACKEND_OPENAI_RESPONSES;
}

int ls_backend_final_frame_ends(enum ls_backend backend)
{
	/* llama-server's /completion stream ends with its stop: true frame, no [DONE] */
	/* Responses: response.completed (or .incomplete) is the last event; vLLM sends no [DONE] */
	return backend == LS_BACKEND_SGLANG || backend == LS_BACKEND_TGI || backend == LS_BACKEND_LLAMACPP ||
	       backend == LS_BACKEND_OPENAI_RESPONSES;
}

int ls_backend_eof_ends(enum ls_backend backend)
{
	return backend == LS_BACKEND_TRT; /* Triton's stream has no end marker */
}

/* TGI: {"inputs", "parameters": {...}}. TGI refuses temperature 0 and top_p 1 (vLLM's note). */
static int tgi_body(cJSON *root, const struct ls_prompt *prompt, int ignore_eos)
{
	cJSON *params = cJSON_CreateObject();
	int ok = params && cJSON_AddItemToObject(root, "parameters", params);
	if (!ok) {
		cJSON_Delete(params);
		return 0;
	}
	ok = cJSON_AddStringToObject(root, "inputs", prompt->text) &&
	     cJSON_AddNumberToObject(params, "max_new_tokens", prompt->output_len) &&
	     cJSON_AddTrueToObject(params, "do_sample") && cJSON_AddNumberToObject(params, "temperature", 0.01) &&
	     cJSON_AddNumberToObject(params, "top_p", 0.99) &&
	     cJSON_AddBoolToObject(params, "ignore_eos_token", ignore_eos) &&
	     cJSON_AddTrueToObject(params, "details");
	if (ok && prompt->prompt_len)
		ok = cJSON_AddNumberToObject(params, "truncate", prompt->prompt_len) != NULL;
	return ok;
}

/* Triton's TensorRT-LLM ensemble. It has no ignore_eos: min_length = max_tokens is vLLM's way. */
static int trt_body(cJSON *root, const struct ls_prompt *prompt, int ignore_eos)
{
	int ok = cJSON_AddTrueToObject(root, "accumulate_tokens") &&
		 cJSON_AddStringToObject(root, "text_input", prompt->text) &&
		 cJSON_AddNumberToObject(root, "temperature", 0.0) && cJSON_AddNumberToObject(root, "top_p", 1.0) &&
		 cJSON_AddNumberToObject(root, "max_tokens", prompt->output_len) &&
		 cJSON_AddTrueToObject(root, "stream");
	if (ok && ignore_eos)
		ok = cJSON_AddNumberToObject(root, "min_length", prompt->output_len) != NULL;
	return ok;
}

/* llama.cpp's /completion: {"prompt": text or token ids, "n_predict", "stream", "ignore_eos"}.
 * The model is the one the server loaded: no model field. */
static char *llamacpp_body(const struct ls_prompt *prompt, int ignore_eos, size_t *len_out)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *p = root ? ls_backend_prompt_json(prompt) : NULL;
	int ok = p && cJSON_AddItemToObject(root, "prompt", p);
	if (!ok)
		cJSON_Delete(p);
	ok = ok && cJSON_AddNumberToObject(root, "n_predict", prompt->output_len) &&
	     cJSON_AddTrueToObject(root, "stream") && cJSON_AddBoolToObject(root, "ignore_eos", ignore_eos);
	return ls_backend_print_body(root, ok, len_out);
}

/* vLLM's Responses payload: {"model", "input": text, "max_output_tokens", "stream": true,
 * "store": false} and "ignore_eos" when set. */
static int responses_body(cJSON *root, const char *model, const struct ls_prompt *prompt, int ignore_eos)
{
	int ok = (!model || cJSON_AddStringToObject(root, "model", model)) &&
		 cJSON_AddStringToObject(root, "input", prompt->text) &&
		 cJSON_AddNumberToObject(root, "max_output_tokens", prompt->output_len) &&
		 cJSON_AddTrueToObject(root, "stream") && cJSON_AddFalseToObject(root, "store");
	if (ok && ignore_eos)
		ok = cJSON_AddTrueToObject(root, "ignore_eos") != NULL;
	return ok;
}

char *ls_backend_body_peer(enum ls_backend backend, const char *model, const struct ls_prompt *prompt,
			   int ignore_eos, size_t *len_out)
{
	if (backend == LS_BACKEND_LLAMACPP)
		return llamacpp_body(prompt, ignore_eos, len_out);
	if (!prompt->text) { /* none of these APIs takes token ids */
		errno = EINVAL;
		return NULL;
	}
	cJSON *root = cJSON_CreateObject();
	int ok = root && (backend == LS_BACKEND_TGI ? tgi_body(root, prompt, ignore_eos)
			  : backend == LS_BACKEND_TRT ? trt_body(root, prompt, ignore_eos)
			  : responses_body(root, model, prompt, ignore_eos));
	return ls_backend_print_body(root, ok, len_out);
}

static int error_frame(const cJSON *root, struct ls_request *req)
{
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(root, "error");
	if (!err || cJSON_IsNull(err))
		return 0;
	if (cJSON_IsObject(err)) /* llama.cpp: {"error": {"code", "message", "type"}} */
		return ls_backend_stream_error(cJSON_GetObjectItemCaseSensitive(err, "message"), req);
	return ls_backend_stream_error(err, req);
}

/* {"index": k, "token": {"id", "text", "special"}, "generated_text": null | "...",
 * "details": null | {"finish_reason", "generated_tokens"}}: the last frame has the text whole. */
static void decode_tgi(const cJSON *root, struct ls_decode_state *st, struct ls_frame *fr, struct ls_request *req)
{
	const cJSON *token = cJSON_GetObjectItemCaseSensitive(root, "token");
	const cJSON *index = cJSON_GetObjectItemCaseSensitive(root, "index");
	const cJSON *whole = cJSON_GetObjectItemCaseSensitive(root, "generated_text");
	const cJSON *details = cJSON_GetObjectItemCaseSensitive(root, "details");
	if (cJSON_IsObject(token)) {
		const cJSON *text = cJSON_GetObjectItemCaseSensitive(token, "text");
		fr->flags |= LS_FRAME_CHOICES;
		if (cJSON_IsString(text) && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(token, "special")))
			fr->text_len = (uint32_t)strlen(text->valuestring);
		fr->tokens = 1;
	}
	int32_t cum = ls_backend_int_value(index);
	if (cum >= 0) {
		fr->tokens = cum >= st->last_cum_tokens ? cum - st->last_cum_tokens : -1;
		fr->cum_tokens = cum;
		st->last_cum_tokens = cum;
	}
	if (cJSON_IsString(whole))
		fr->flags |= LS_FRAME_FINISH;
	if (cJSON_IsObject(details)) {
		const cJSON *reason = cJSON_GetObjectItemCaseSensitive(details, "finish_reason");
		int32_t n = ls_backend_int_value(cJSON_GetObjectItemCaseSensitive(details, "generated_tokens"));
		if (reason && !cJSON_IsNull(reason))
			fr->flags |= LS_FRAME_FINISH;
		if (n >= 0)
			req->usage_completion_tokens = n;
	}
}

/* {"content": "new text", "tokens": [ids], "stop": false, "tokens_predicted": k (cumulative),
 * "tokens_evaluated": prompt tokens}; the last frame has stop: true, the counts and "timings".
 * A frame's tokens are what tokens_predicted grew by: a frame that holds back a partial UTF-8
 * character carries a token and no text, the next two tokens and their text. */
static void decode_llamacpp(const cJSON *root, struct ls_decode_state *st, struct ls_frame *fr,
			    struct ls_request *req)
{
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(root, "content");
	int32_t cum = ls_backend_int_value(cJSON_GetObjectItemCaseSensitive(root, "tokens_predicted"));
	int32_t prompt = ls_backend_int_value(cJSON_GetObjectItemCaseSensitive(root, "tokens_evaluated"));
	if (cJSON_IsString(content)) {
		fr->flags |= LS_FRAME_CHOICES;
		fr->text_len = (uint32_t)strlen(content->valuestring);
	}
	if (cum >= 0) {
		fr->tokens = cum >= st->last_cum_tokens ? cum - st->last_cum_tokens : -1;
		fr->cum_tokens = cum;
		st->last_cum_tokens = cum;
	}
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "stop"))) {
		fr->flags |= LS_FRAME_FINISH | LS_FRAME_USAGE;
		if (cum >= 0)
			req->usage_completion_tokens = cum;
		if (prompt >= 0)
			req->usage_prompt_tokens = prompt;
	}
}

/* A Responses event by its "type": output and reasoning text deltas are tokens (vLLM times both;
 * its generated_text keeps the output's); response.completed / response.incomplete end the
 * stream with the usage; an error event or response.failed is the server's error; the rest
 * (created, in_progress, *.added, *.done: the text again) carry nothing. */
static int decode_responses(const cJSON *root, struct ls_frame *fr, struct ls_request *req)
{
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "type");
	const char *t = cJSON_IsString(type) ? type->valuestring : "";
	if (!strcmp(t, "response.output_text.delta") || !strcmp(t, "response.reasoning_text.delta")) {
		const cJSON *delta = cJSON_GetObjectItemCaseSensitive(root, "delta");
		fr->flags |= LS_FRAME_CHOICES;
		if (cJSON_IsString(delta))
			fr->text_len = (uint32_t)strlen(delta->valuestring);
		return 0;
	}
	if (!strcmp(t, "error"))
		return ls_backend_stream_error(cJSON_GetObjectItemCaseSensitive(root, "message"), req);
	const cJSON *resp = cJSON_GetObjectItemCaseSensitive(root, "response");
	if (!strcmp(t, "response.failed")) {
		const cJSON *err = cJSON_GetObjectItemCaseSensitive(resp, "error");
		return ls_backend_stream_error(cJSON_GetObjectItemCaseSensitive(err, "message"), req);
	}
	if (strcmp(t, "response.completed") && strcmp(t, "response.incomplete"))
		return 0;
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(resp, "usage");
	fr->flags |= LS_FRAME_FINISH;
	if (cJSON_IsObject(usage)) {
		int32_t in = ls_backend_int_value(cJSON_GetObjectItemCaseSensitive(usage, "input_tokens"));
		int32_t out = ls_backend_int_value(cJSON_GetObjectItemCaseSensitive(usage, "output_tokens"));
		fr->flags |= LS_FRAME_USAGE;
		if (in >= 0)
			req->usage_prompt_tokens = in;
		if (out >= 0)
			req->usage_completion_tokens = out;
	}
	return 0;
}

int ls_backend_decode_peer(enum ls_backend backend, const cJSON *root, struct ls_decode_state *st,
			   struct ls_frame *fr, struct ls_request *req)
{
	int rc = error_frame(root, req);
	if (rc)
		return rc;
	if (backend == LS_BACKEND_OPENAI_RESPONSES)
		return decode_responses(root, fr, req);
	if (backend == LS_BACKEND_LLAMACPP) {
		decode_llamacpp(root, st, fr, req);
		return 0;
	}
	if (backend == LS_BACKEND_TGI) {
		decode_tgi(root, st, fr, req);
		return 0;
	}
	/* Triton: {"model_name", "model_version", ..., "text_output": "the new text"} */
	const cJSON *text = cJSON_GetObjectItemCaseSensitive(root, "text_output");
	if (cJSON_IsString(text)) {
		fr->flags |= LS_FRAME_CHOICES;
		fr->text_len = (uint32_t)strlen(text->valuestring);
	}
	return 0;
}
