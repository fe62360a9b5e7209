/* fuzz_dataset_in.h — what the dataset targets (fuzz_dataset.c, fuzz_dataset_peer.c) make of an
 * input: its first byte selects, the rest is the dataset file (fuzz_file.h), and the loader
 * gets a token counter standing for a server's /tokenize whose answers come from the input too. */
#ifndef LATSCOPE_FUZZ_DATASET_IN_H
#define LATSCOPE_FUZZ_DATASET_IN_H

#include <stdint.h>
#include <string.h>
#include "workload/dataset.h"
#include "fuzz_file.h"

struct fuzz_counter {
	int      fail; /* it fails, as a server's can */
	unsigned div;  /* else one token per div bytes */
};

static inline int fuzz_count(void *ctx, const char *text, uint32_t *tokens)
{
	const struct fuzz_counter *c = ctx;
	if (c->fail)
		return -5; /* the server's /tokenize failed */
	*tokens = (uint32_t)(strlen(text) / c->div);
	return 0;
}

struct fuzz_dataset_in {
	uint8_t             sel;   /* the first byte */
	int                 fd;    /* the caller closes it */
	char                path[64];
	struct fuzz_counter fc;    /* fails when sel & 0x10; div 1 + (sel & div_mask) */
	ls_token_count_fn   fn;    /* fuzz_count when sel & 0x20, else NULL (the estimate) */
};

/* 0, or -1 when the input is empty or the file cannot be made. */
static inline int fuzz_dataset_in(const uint8_t *data, size_t size, unsigned div_mask, struct fuzz_dataset_in *in)
{
	if (size < 1)
		return -1;
	in->sel = data[0];
	in->fd = fuzz_file(data + 1, size - 1, in->path, sizeof(in->path));
	in->fc = (struct fuzz_counter){ in->sel & 0x10, 1u + (in->sel & div_mask) };
	in->fn = (in->sel & 0x20) ? fuzz_count : NULL;
	return in->fd < 0 ? -1 : 0;
}

#endif
