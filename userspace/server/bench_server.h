/* bench_server.h — what `latscope bench` asks the server before the measured run: is it up,
 * which model, how many tokens a text is (/tokenize), how large the vocabulary is. */
#ifndef LATSCOPE_BENCH_SERVER_H
#define LATSCOPE_BENCH_SERVER_H

#include <stdint.h>
#include "server/http_easy.h"

struct ls_server {
	const char *base;              /* server root, no trailing slash */
	const char *model;             /* may be NULL */
	struct ls_http_opts http;
	uint64_t    tokenize_calls;
	int         tokenize_content;  /* /tokenize reads "content" (llama.cpp), not "prompt" */
	char        why[320];          /* what the last failed probe got back, in words */
};

/* A probe of the server is tried this many times (each a fresh connection) before it is
 * reported as failed: a server under fault injection drops some connections at accept. */
#define LS_SERVER_PROBE_TRIES 5

/* Polls GET base/v1/models until any HTTP answer below 500 or timeout_s. 0, or -1 with a
 * message naming the URL and the last error. A failure that retrying cannot fix (a bad URL,
 * an untrusted certificate, TLS to a plain-HTTP server) ends it at once, with the fix. */
int ls_server_wait_ready(struct ls_server *s, double timeout_s);

/* The first model id of GET /v1/models (malloc'd) or NULL with s->why saying what came back
 * (no answer, HTTP 401/403: the API key, another status with its Content-Type, no "data"). */
char *ls_server_first_model(struct ls_server *s);

/* ls_token_count_fn over POST /tokenize ({"model", "prompt"} -> "count" or len("tokens")).
 * llama.cpp's llama-server reads "content" and answers "prompt" with no tokens: an empty answer
 * for a text that is not empty is asked again with "content", which it then keeps using. */
int ls_server_count_tokens(void *ctx, const char *text, uint32_t *tokens);

/* 1 when /tokenize answers for a probe text. */
int ls_server_has_tokenize(struct ls_server *s);

/* The vocabulary size for random token ids: /v1/models data[0].vocab_size when present, else
 * the largest id below cap that /detokenize accepts when it refuses cap - 1 (a small
 * vocabulary, e.g. the simulator's), else cap (a server without /detokenize). 0, or -EIO with
 * s->why set when a probe got no answer LS_SERVER_PROBE_TRIES times: never a guess. */
int ls_server_vocab_size(struct ls_server *s, uint32_t cap, uint32_t *vocab);

#endif
