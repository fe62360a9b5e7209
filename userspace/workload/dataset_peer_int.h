/* dataset_peer_int.h — helpers the workload's dataset files share (dataset.c, dataset_peer.c,
 * dataset_trace.c, dataset_sglang.c). Not public. */
#ifndef LATSCOPE_DATASET_PEER_INT_H
#define LATSCOPE_DATASET_PEER_INT_H

#include <stddef.h>
#include <stdint.h>
#include "workload/dataset_peer.h"

struct ls_strbuf;
struct cJSON;

/* A ShareGPT file's entries (its top-level JSON list), shuffled by rng as random.shuffle and
 * vLLM's sampling do (NULL: file order). 0 with *root (the caller deletes it) and *entries
 * (malloc'd), or -errno after a message naming path:line. */
int ls_sharegpt_entries(const char *path, uint64_t rng[2], struct cJSON **root, struct cJSON ***entries,
			size_t *total);

/* How prompt lengths are learned: the counter (the server's /tokenize), or else an estimate
 * (and *estimated is set). */
struct ls_peer_count {
	ls_token_count_fn count;
	void *ctx;
	int  *estimated;
};

/* n random word indices (malloc'd, room for one more). 0 or -ENOMEM. */
int ls_peer_words(uint64_t rng[2], uint32_t n, uint32_t **out);
/* p takes text's bytes (text is left empty) and output_len; prompt_len is the counter's count,
 * else words (0: ls_dataset_estimate_tokens of the text). 0 or -errno (with a message). */
int ls_peer_finish(struct ls_prompt *p, struct ls_strbuf *text, uint32_t words, uint32_t output_len,
		   const struct ls_peer_count *c);
/* text's tokens: the counter's, else the estimate (and *estimated is set). 0 or -errno. */
int ls_peer_count_text(const struct ls_peer_count *c, const char *text, uint32_t *out);
/* ds emptied, with room for n prompts (calloc'd). 0 or -ENOMEM. */
int ls_peer_alloc(struct ls_dataset *ds, size_t n);
/* A loader's end: ds->lens_estimated = estimated, and ds freed when err (which it returns). */
int ls_peer_done(struct ls_dataset *ds, int estimated, int err);

#endif
