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
	uint32_t  prefix_group; /* 1 + the shared-prefix group it belongs to (gsp), 0 when none */
};

struct ls_dataset {
	struct ls_prompt *prompts;
	size_t n;
	int    lens_estimated;  /* prompt_len (and output_len) are estimates, not tokenizer counts */
	size_t n_unique;        /* sharegpt: prompts before oversampling repeated them (0: all are) */
};

void ls_dataset_free(struct ls_dataset *ds);

/* Where the prompts come from (--dataset-name). */
enum ls_dataset_kind {
	LS_DATASET_RANDOM,
	LS_DATASET_SHAREGPT,
	LS_DATASET_JSONL,
	/* the peers' (dataset_peer.h) */
	LS_DATASET_CUSTOM,            /* vLLM's custom: jsonl, --custom-output-len */
	LS_DATASET_PREFIX_REPETITION, /* vLLM */
	LS_DATASET_SONNET,            /* vLLM */
	LS_DATASET_BURSTGPT,          /* vLLM */
	LS_DATASET_RANDOM_IDS,        /* SGLang: random token ids (latscope's random) */
	LS_DATASET_GSP,               /* SGLang: generated-shared-prefix */
	LS_DATASET_MOONCAKE,          /* SGLang */
	LS_DATASET_SPEC_BENCH,        /* vLLM: Spec-Bench question.jsonl, turns[0] */
	LS_DATASET_TIMED_TRACE,       /* vLLM: a Mooncake-style trace at its own times (--self-timed) */
};
const char *ls_dataset_kind_name(enum ls_dataset_kind kind);


/* How --random-range-ratio r turns a length L into a range (both inclusive):
 * vLLM:   [floor(L (1 - r)), ceil(L (1 + r))], r in [0, 1)
 * SGLang: [max(int(L r), 1), L],               r in [0, 1]  (so r = 1 means "exactly L") */
enum ls_range_semantics {
	LS_RANGE_VLLM,
	LS_RANGE_SGLANG,
};
int ls_range_semantics_parse(const char *name, enum ls_range_semantics *out); /* 0 / -EINVAL */
const char *ls_range_semantics_name(enum ls_range_semantics sem);

/* The inclusive length range for one side. Output ranges never go below 1 token (vLLM clamps;
 * SGLang's int(L r) can be 0, which no server accepts as max_tokens). 0 or -EINVAL + message. */
int ls_random_bounds(uint32_t len, double ratio, enum ls_range_semantics sem, int is_output,
		     uint32_t *lo, uint32_t *hi);

struct ls_random_opts {
	size_t   n;
	uint32_t input_len;
	uint32_t output_len;
	double   range_ratio;
	enum ls_range_semantics semantics;
	uint32_t vocab_size;    /* token ids are drawn below this */
	uint64_t seed;
	uint32_t prefix_len;    /* vLLM's --random-prefix-len: ids shared by every prompt, before its own */
};

/* vLLM's RandomDataset without a tokenizer: request i gets the token ids
 * (offset_i + i + arange(input_len_i)) % vocab_size, so its prompt length is exact. */
int ls_dataset_random(struct ls_dataset *ds, const struct ls_random_opts *o);

/* Counts the tokens of a text (the server's /tokenize); 0 or -errno. */
typedef int (*ls_token_count_fn)(void *ctx, const char *text, uint32_t *tokens);

/* The random dataset as text, for APIs that take no token ids (chat): the same lengths and
 * draws, each prompt a run of common English words (one token each in usual vocabularies)
 * starting at offset + i. With count, words are added or dropped until the server's count
 * matches (a few rounds) and prompt_len is what it counted; without, 1 token per word. */
int ls_dataset_random_text(struct ls_dataset *ds, const struct ls_random_opts *o, ls_token_count_fn count,
			   void *count_ctx);


/* ShareGPT JSON (a list of {"conversations": [{"from": "human", "value": ...}, {"from": "gpt",
 * ...}]}): first human turn is the prompt, the gpt turn after it sets output_len (or
 * fixed_output_len when > 0). Shuffled by seed; vLLM's filter (prompt and output >= 4 tokens,
 * prompt <= 1024, total <= 2048); repeated when fewer than n survive (vLLM oversamples).
 * Lengths come from count (when non-NULL) else an estimate of 1 token per 4 bytes.
 * Errors name the file (and line for malformed JSON). */
int ls_dataset_sharegpt(struct ls_dataset *ds, const char *path, size_t n, uint32_t fixed_output_len,
			uint64_t seed, ls_token_count_fn count, void *count_ctx);
/* The same in file order (vLLM's --disable-shuffle). */
int ls_dataset_sharegpt_in_order(struct ls_dataset *ds, const char *path, size_t n, uint32_t fixed_output_len,
				 ls_token_count_fn count, void *count_ctx);

/* JSONL, one request per line: {"prompt": "text"} or {"prompt_token_ids": [1, 2, ...]},
 * "output_len" (or "max_tokens"; default_output_len when absent), optional "prompt_len",
 * optional "timestamp" (seconds from run start, for --arrival trace). Blank lines are skipped.
 * Takes the first n requests (all when n == 0). Errors name the file and line. */
int ls_dataset_jsonl(struct ls_dataset *ds, const char *path, size_t n, uint32_t default_output_len,
		     ls_token_count_fn count, void *count_ctx);

/* Timestamps of every prompt as an array for ls_arrival_init (malloc'd), or NULL (errno =
 * ENOENT) when any prompt has none. */
double *ls_dataset_timestamps(const struct ls_dataset *ds);

/* 1 token per 4 bytes, at least 1: latscope's estimate when the server cannot count. */
uint32_t ls_dataset_estimate_tokens(const char *text);

#endif
