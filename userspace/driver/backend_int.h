/* backend_int.h — between backend.c (names, OpenAI and SGLang shapes, the frame arena) and
 * backend_peer.c (the TGI and Triton/TensorRT-LLM shapes). Not a public interface. */
#ifndef LATSCOPE_BACKEND_INT_H
#define LATSCOPE_BACKEND_INT_H

#include <cjson/cJSON.h>
#include "driver/backend.h"

/* ls_backend_body for LS_BACKEND_TGI and LS_BACKEND_TRT (text prompts only). */
char *ls_backend_body_peer(enum ls_backend backend, const struct ls_prompt *prompt, int ignore_eos,
			   size_t *len_out);
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

#endif
