/* backend_int.h — between backend.c (names, OpenAI and SGLang shapes, the frame arena) and
 * backend_peer.c (the TGI and Triton/TensorRT-LLM shapes). Not a public interface. */
#ifndef LATSCOPE_BACKEND_INT_H
#define LATSCOPE_BACKEND_INT_H

#include <cjson/cJSON.h>
#include "driver/backend.h"

/* 1 for the backends backend_peer.c reads (TGI, TRT, LLAMACPP): cJSON only, no fast path. */
static inline int ls_backend_is_peer(enum ls_backend b)
{
	return b == LS_BACKEND_TGI || b == LS_BACKEND_TRT || b == LS_BACKEND_LLAMACPP || b == LS_BACKEND_OPENAI_RESPONSES;
}
/* The prompt as JSON: its text, or its token ids as an array; NULL on ENOMEM. */
cJSON *ls_backend_prompt_json(const struct ls_prompt *prompt);
/* ls_backend_body for LS_BACKEND_TGI and LS_BACKEND_TRT (text prompts only) and
 * LS_BACKEND_LLAMACPP (text or token ids). */
char *ls_backend_body_peer(enum ls_backend backend, const char *model, const struct ls_prompt *prompt,
			   int ignore_eos, size_t *len_out);
/* One parsed frame object of LS_BACKEND_TGI or LS_BACKEND_TRT into fr / req (text_len, tokens,
 * flags; req->error on an error object: -EPROTO). */
int ls_backend_decode_peer(enum ls_backend backend, const cJSON *root, struct ls_decode_state *st,
			   struct ls_frame *fr, struct ls_request *req);
/* Shared by both files: prints root (freed here; ok 0: a build step failed) as the request
 * body (NULL with errno ENOMEM); a stream's error message into req->error (-EPROTO); a JSON
 * number within [0, INT32_MAX] (-1 when it is not one). */
char *ls_backend_print_body(cJSON *root, int ok, size_t *len_out);
int ls_backend_stream_error(const cJSON *msg, struct ls_request *req);
int32_t ls_backend_int_value(const cJSON *v);

/* What decoding needs of a frame of LS_BACKEND_OPENAI, _OPENAI_CHAT or _SGLANG: read from it by
 * frame_fast.c (the common shapes, no tree) or by cJSON (backend.c), decoded by backend.c alone. */
struct ls_frame_fields {
	int      choice;     /* OpenAI: choices[0] is an object; SGLang: "text" is a string */
	int      finish;     /* OpenAI: choices[0].finish_reason, SGLang: meta_info's; present, not null */
	int      usage;      /* OpenAI: "usage" is an object; SGLang: "meta_info" is one */
	uint64_t text_len;   /* bytes of the text, as strlen() of the decoded string (chat: delta.content
			      * + delta.reasoning_content; SGLang: the cumulative text) */
	int32_t  prompt_tokens, completion_tokens; /* of usage / meta_info; -1: absent or not a count */
};

/* frame_fast.c: 1 with *f filled when data is a frame of backend (OPENAI, OPENAI_CHAT or
 * SGLANG) that it reads exactly as cJSON would and that is no error object; 0 for anything else
 * (cJSON's path decides: malformed, errors, shapes it does not take), *f then unspecified. */
int ls_frame_fast(enum ls_backend backend, const char *data, size_t len, struct ls_frame_fields *f);

/* ls_backend_decode by cJSON alone (the fast path's fallback; tests compare the two). */
int ls_backend_decode_json(enum ls_backend backend, const char *data, size_t len,
			   struct ls_decode_state *st, struct ls_frame *fr, struct ls_request *req);

/* backend_engine.c: the engine's own account in a parsed frame (llama.cpp "timings", vLLM
 * "metrics", SGLang's finishing meta_info) into req->engine_* (non_finite: NaN / Infinity
 * tokens the frame had, read as null, counted bad); a copy of data with those tokens outside
 * strings as null (malloc'd, NULL on ENOMEM; *n_replaced how many). */
void ls_backend_engine_fields(const cJSON *root, uint32_t non_finite, struct ls_request *req);
char *ls_backend_non_finite_to_null(const char *data, size_t len, size_t *out_len, uint32_t *n_replaced);

#endif
