/* t_peer_truth.h — the simulator's ground truth (--truth JSONL) joined to latscope's record file:
 * per request the sim's TTFT and gaps next to the client's. For the peers' backends and
 * datasets tests (test_peer_truth.c) and bench's own (test_bench_truth.c). */
#ifndef LATSCOPE_T_PEER_TRUTH_H
#define LATSCOPE_T_PEER_TRUTH_H

#include <stddef.h>
#include <stdint.h>
#include "base/record.h"

struct t_peer_truth {
	char     id[96];
	char     endpoint[32];
	uint64_t received_ns;
	int      prompt_tokens, cached_tokens;
	uint64_t *token_ns;  /* each token frame's write */
	size_t   n_token;
	uint64_t first_token_ns; /* token_ns[0], 0 without tokens */
	uint64_t last_write_ns;  /* the sim's last frame write ([DONE]), stamped just before it */
};

/* The truth file's lines, waiting (up to 5 s) until it has at least want of them. */
struct t_peer_truth *t_peer_truth_load(const char *path, size_t want, size_t *n_out);
const struct t_peer_truth *t_peer_truth_find(const struct t_peer_truth *t, size_t n, const char *tag, uint64_t id);
void t_peer_truth_free(struct t_peer_truth *t, size_t n);

/* A record's frames that carried text (CHOICES and not empty): the client's token frames. */
size_t t_text_frames(const struct ls_request *r, uint64_t *at, size_t cap);

#endif
