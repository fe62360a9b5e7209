/* dataset.h — the prompts of a run: random (vLLM and SGLang length rules), sharegpt, jsonl. */
#ifndef LATSCOPE_DATASET_H
#define LATSCOPE_DATASET_H

#include <stddef.h>
#include <stdint.h>

struct ls_prompt {
	char     *text;         /* prompt text, or NULL when token_ids are used */
	uint32_t *token_ids;    /* prompt as token ids (random dataset), or NULL */
	uint32_t  n_token_ids;
	uint32_t  prompt_len;   /* tokens, as far as latscope knows */
	uint32_t  output_len;   /* max_tokens to request */
	double    timestamp_s;  /* trace replay offset, < 0 when absent */
};

struct ls_dataset {
	struct ls_prompt *prompts;
	size_t n;
};

void ls_dataset_free(struct ls_dataset *ds);

#endif
