/* record.c — growing and freeing per-request records. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "base/record.h"

static const char *const fail_names[LS_FAIL__COUNT] = {
	[LS_OK] = "ok",
	[LS_FAIL_HTTP_STATUS] = "http_status",
	[LS_FAIL_CONNECT] = "connect",
	[LS_FAIL_TLS] = "tls",
	[LS_FAIL_RESET_BEFORE_HEADERS] = "reset_before_headers",
	[LS_FAIL_RESET_MID_STREAM] = "reset_mid_stream",
	[LS_FAIL_TIMEOUT] = "timeout",
	[LS_FAIL_MALFORMED_FRAME] = "malformed_frame",
	[LS_FAIL_TRUNCATED] = "truncated",
	[LS_FAIL_OVERSIZE] = "oversize",
	[LS_FAIL_NO_DONE] = "no_done",
	[LS_FAIL_SERVER_ERROR_FRAME] = "server_error_frame",
	[LS_FAIL_CANCELLED] = "cancelled",
	[LS_FAIL_OTHER] = "other",
	[LS_FAIL_PROTOCOL] = "protocol",
};

const char *ls_fail_name(enum ls_fail fail)
{
	if ((unsigned)fail >= LS_FAIL__COUNT)
		return "other";
	return fail_names[fail];
}

static const char *const engine_source_names[LS_ENGINE__COUNT] = {
	[LS_ENGINE_NONE] = "none",     [LS_ENGINE_LLAMACPP] = "llama.cpp", [LS_ENGINE_SGLANG] = "sglang",
	[LS_ENGINE_VLLM] = "vllm",     [LS_ENGINE_TGI] = "tgi",            [LS_ENGINE_TRTLLM] = "trtllm",
};

const char *ls_engine_source_name(int source)
{
	return source >= 0 && source < LS_ENGINE__COUNT ? engine_source_names[source] : "none";
}

const char *ls_engine_fields_name(int source)
{
	static const char *const fields[LS_ENGINE__COUNT] = {
		[LS_ENGINE_NONE] = "none",         [LS_ENGINE_LLAMACPP] = "timings",
		[LS_ENGINE_SGLANG] = "meta_info",  [LS_ENGINE_VLLM] = "metrics",
		[LS_ENGINE_TGI] = "x-*-time headers", [LS_ENGINE_TRTLLM] = "/perf_metrics",
	};
	return source >= 0 && source < LS_ENGINE__COUNT ? fields[source] : "none";
}

struct ls_frame *ls_request_add_frame(struct ls_request *req)
{
	if (req->n_frames == req->cap_frames) {
		uint32_t cap = req->cap_frames ? req->cap_frames * 2 : 64;
		struct ls_frame *grown = realloc(req->frames, (size_t)cap * sizeof(*grown));
		if (!grown)
			return NULL;
		req->frames = grown;
		req->cap_frames = cap;
	}
	struct ls_frame *fr = &req->frames[req->n_frames++];
	memset(fr, 0, sizeof(*fr));
	fr->tokens = -1;
	fr->cum_tokens = -1;
	return fr;
}

void ls_request_reset(struct ls_request *req, uint64_t id)
{
	struct ls_frame *frames = req->frames;
	uint32_t cap = req->cap_frames;
	memset(req, 0, sizeof(*req));
	req->frames = frames;
	req->cap_frames = cap;
	req->id = id;
	req->fd = -1;
	req->usage_prompt_tokens = -1;
	req->usage_completion_tokens = -1;
	req->engine_prompt_n = req->engine_predicted_n = req->engine_cache_n = -1;
}

void ls_request_free(struct ls_request *req)
{
	free(req->frames);
	req->frames = NULL;
	req->n_frames = req->cap_frames = 0;
}

void ls_run_free(struct ls_run *run)
{
	for (size_t i = 0; i < run->n_requests; i++)
		ls_request_free(&run->requests[i]);
	free(run->requests);
	run->requests = NULL;
	run->n_requests = 0;
}
