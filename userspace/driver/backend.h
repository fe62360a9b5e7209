/* backend.h — what a request body looks like and what a frame means, per server API.
 * Owned by the driver stage; pure functions, no I/O. */
#ifndef LATSCOPE_BACKEND_H
#define LATSCOPE_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include "base/record.h"
#include "workload/dataset.h"

enum ls_backend {
	LS_BACKEND_OPENAI,      /* /v1/completions: choices[0].text */
	LS_BACKEND_OPENAI_CHAT, /* /v1/chat/completions: choices[0].delta.content */
	LS_BACKEND_SGLANG,      /* SGLang native /generate: cumulative text + meta_info */
	LS_BACKEND_TGI,         /* TGI /generate_stream: one token per frame, details on the last */
	LS_BACKEND_TRT,         /* Triton/TensorRT-LLM /v2/models/M/generate_stream: text_output deltas */
	LS_BACKEND_LLAMACPP,    /* llama.cpp's native /completion: content deltas, cumulative
				 * tokens_predicted, the last frame stop: true with timings */
	LS_BACKEND_OPENAI_RESPONSES, /* /v1/responses: typed events, output/reasoning text deltas,
				      * response.completed with the usage last */
};

/* "openai" | "openai-chat" | "sglang" and the other names vLLM and SGLang use for them
 * (ls_backend_names lists every one). 0 or -EINVAL. */
int ls_backend_parse(const char *name, enum ls_backend *out);
const char *ls_backend_names(void); /* "openai, vllm, ..., sglang-native" */
const char *ls_backend_name(enum ls_backend backend);
const char *ls_backend_default_endpoint(enum ls_backend backend);
/* What the API needs and how its stream ends (backend_peer.c):
 * text: prompts must be text (no token-id field); model: the body names the model;
 * final_frame_ends: the frame with a finish reason is the last (no [DONE] follows);
 * eof_ends: the stream has no end marker at all: a clean end of the body is its end. */
int ls_backend_needs_text(enum ls_backend backend);
int ls_backend_sends_model(enum ls_backend backend);
int ls_backend_final_frame_ends(enum ls_backend backend);
int ls_backend_eof_ends(enum ls_backend backend);

/* Per-request decoding state for backends whose frames are cumulative. */
struct ls_decode_state {
	int32_t  last_cum_tokens;
	uint64_t last_text_len;
};
void ls_decode_state_init(struct ls_decode_state *st);

/* JSON request body (malloc'd, NUL-terminated) for one prompt; NULL on ENOMEM. */
char *ls_backend_body(enum ls_backend backend, const char *model, const struct ls_prompt *prompt,
		      int ignore_eos, size_t *len_out);

/* Decodes one SSE data payload (without "data: ") into fr (flags, text_len, tokens, cum_tokens)
 * and request-level fields (usage). Returns 0, or -EBADMSG with req->error set for a payload
 * that is not this backend's JSON, or -EPROTO for an error object sent in the stream. */
int ls_backend_decode(enum ls_backend backend, const char *data, size_t len,
		      struct ls_decode_state *st, struct ls_frame *fr, struct ls_request *req);

/* The engine's own account from the response head (TGI's x-queue-time, x-total-time, ...; ms):
 * one header line (with its CRLF) into req->engine_*. Other lines are ignored. */
void ls_backend_engine_header(struct ls_request *req, const char *line, size_t len);
/* TensorRT-LLM's GET /perf_metrics body joined to reqs by its server arrival time (the server's
 * steady clock: CLOCK_MONOTONIC, the same host): entries in arrival order, each to the request
 * not yet joined that was open when it arrived (sent - 1 ms <= arrival <= its response head),
 * had not ended before the engine's last token, and whose window closes first
 * (backend_engine.c says why). A joined request gets source LS_ENGINE_TRTLLM, its parts, and
 * its entry's malformed values in engine_bad. 0, -EBADMSG when the body is no JSON list, or -ENOMEM; *st counts. */
struct ls_perf_join {
	size_t   entries;     /* items in the list */
	size_t   joined;      /* entries joined to a request */
	size_t   unjoined;    /* entries with an arrival that no request of reqs was open for */
	size_t   unreadable;  /* entries with no timing_metrics or no readable arrival */
	uint32_t bad_values;  /* malformed values in all entries (NaN, a string, <= 0, out of order) */
};
int ls_engine_perf_metrics_join(const char *body, size_t len, struct ls_request *reqs, size_t n,
				struct ls_perf_join *st);

#endif
