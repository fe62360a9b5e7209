/* dataset_peer.h — the other datasets of vLLM's and SGLang's benchmarks, built as each builds
 * them (lengths, which parts are shared, order), without a local tokenizer: prompts are text
 * made of common English words (one token each in usual vocabularies, and exactly one in the
 * simulator's), and their lengths are the server's /tokenize count when a counter is given
 * (else one token per word). The draws are latscope's seeded rng (base/rng.h), not numpy's. */
#ifndef LATSCOPE_DATASET_PEER_H
#define LATSCOPE_DATASET_PEER_H

#include <stddef.h>
#include <stdint.h>
#include "workload/dataset.h"

struct ls_strbuf;
/* The words behind random text (dataset.c): how many, and " w0 w1 ..." for word indices. */
uint32_t ls_dataset_n_words(void);
int ls_dataset_word_text(struct ls_strbuf *out, const uint32_t *words, uint32_t n);

/* vLLM's prefix_repetition: num_prefixes random prefixes of prefix_len tokens, each followed by
 * n / num_prefixes random suffixes of suffix_len; shuffled unless disable_shuffle. n must be
 * at least num_prefixes; the run has num_prefixes * (n / num_prefixes) prompts (as vLLM). */
struct ls_prefix_rep_opts {
	size_t   n;
	uint32_t prefix_len, suffix_len, num_prefixes, output_len;
	int      disable_shuffle;
	uint64_t seed;
};
int ls_dataset_prefix_repetition(struct ls_dataset *ds, const struct ls_prefix_rep_opts *o,
				 ls_token_count_fn count, void *count_ctx);

/* SGLang's generated-shared-prefix: num_groups system prompts, prompts_per_group questions
 * each, prompt = system + "\n\n" + question; lengths drawn in [max(int(L r), 1), L] (r =
 * range_ratio, 1 = exact); all num_groups * prompts_per_group requests (SGLang ignores
 * --num-prompts here), shuffled unless ordered. zipf_alpha > 0: each request's group is drawn
 * with P(group k) ~ 1 / (k + 1)^alpha instead of prompts_per_group per group. routing keys:
 * ds->prompts[i].group is the request's group (X-SMG-Routing-Key is built from it).
 * num_turns T > 1 (SGLang's multi-turn): each request is a conversation of T questions, turn 0
 * system + "\n\n" + question, later turns a question alone; the dataset holds conversation c's
 * turn t at c * T + t (conversations shuffled as wholes), each turn with its conversation's
 * output length; a later turn's prompt_len is its question's (the server counts the history). */
struct ls_gsp_opts {
	uint32_t num_groups, prompts_per_group, system_prompt_len, question_len, output_len;
	uint32_t num_turns;                   /* 0 or 1: single turn */
	double   range_ratio;
	double   zipf_alpha;
	int      ordered, fast_prepare;
	uint64_t seed;
};
int ls_dataset_gsp(struct ls_dataset *ds, const struct ls_gsp_opts *o, ls_token_count_fn count, void *count_ctx);

/* vLLM's sonnet: poem lines of a text file. prompt = "Pick as many lines as you can from these
 * poem lines:\n" + the first round((prefix_len - base) / avg) lines (shared by every prompt) +
 * random lines up to round((input_len - base) / avg) lines, kept when its count <= input_len
 * (base: the instruction's tokens, avg: a line's mean tokens). */
struct ls_sonnet_opts {
	size_t   n;
	uint32_t input_len, output_len, prefix_len;
	uint64_t seed;
};
int ls_dataset_sonnet(struct ls_dataset *ds, const char *path, const struct ls_sonnet_opts *o,
		      ls_token_count_fn count, void *count_ctx);

/* vLLM's burstgpt: the BurstGPT CSV (Timestamp,Model,Request tokens,Response tokens,...): rows
 * of Model "GPT-4" with Response tokens > 0, n sampled by seed (with replacement when the file
 * has fewer); request i's prompt is request-tokens words starting at word i ((i + j) % vocab,
 * as vLLM). Errors name the file and line. */
int ls_dataset_burstgpt(struct ls_dataset *ds, const char *path, size_t n, uint64_t seed);

/* SGLang's mooncake trace (JSONL: timestamp in ms, input_length, output_length, hash_ids):
 * first n records by time; round k's prompt is "user: Round k: " + for each hash id "ID" +
 * " hi" * 128, + "Tell me a story based on this context." after the earlier rounds and their
 * placeholder answers (SGLang without a chat template); timestamp_s = (t - t0) / 1000 *
 * slowdown, every round of a record at its time. */
struct ls_mooncake_opts {
	size_t   n;
	uint32_t num_rounds;
	double   slowdown;
};
int ls_dataset_mooncake(struct ls_dataset *ds, const char *path, const struct ls_mooncake_opts *o,
			ls_token_count_fn count, void *count_ctx);

/* vLLM's timed_trace (--dataset-name timed_trace): JSONL records of a timestamp, input and output
 * lengths and hash_ids (the field names are label_*), the first n (0: all) in file order. Hash
 * id h stands for chunk_hash_size prompt tokens, the same in every record that names h (so a
 * prefix cache hits on shared ids); the prompt is the blocks in order cut at the input length,
 * its tokens past the blocks its own; as token ids below vocab_size, or (as_text) one common
 * word per token. timestamp_s = timestamp x sec_multiplier, never before the record before it. */
struct ls_timed_trace_opts {
	size_t   n;
	uint32_t chunk_hash_size;
	double   sec_multiplier;
	uint32_t vocab_size;
	int      as_text;
	const char *label_timestamp, *label_input_length, *label_output_length, *label_hash_ids;
};
int ls_dataset_timed_trace(struct ls_dataset *ds, const char *path, const struct ls_timed_trace_opts *o);

/* SGLang's random (--dataset-name random under SGLang's rules): ShareGPT first human turns,
 * shuffled by seed, each repeated to its drawn length in words and cut to that many tokens as
 * the counter (the server's /tokenize) counts them, as SGLang cuts token ids; lengths drawn
 * [max(int(L r), 1), L] for input and output. Empty prompts are skipped. */
struct ls_sglang_random_opts {
	size_t   n;
	uint32_t input_len, output_len;
	double   range_ratio;
	uint64_t seed;
};
int ls_dataset_sglang_random(struct ls_dataset *ds, const char *path, const struct ls_sglang_random_opts *o,
			     ls_token_count_fn count, void *count_ctx);

/* SGLang's sharegpt (under SGLang's rules): entries with two turns, whoever spoke them, shuffled
 * by seed; prompt = turn 0, output = turn 1's tokens (or fixed_output_len, at least 4); pruned
 * when either is under 2 tokens or together past context_len (0: no limit). No oversampling:
 * fewer usable conversations run as fewer prompts. */
struct ls_sglang_sharegpt_opts {
	size_t   n;
	uint32_t fixed_output_len;
	uint32_t context_len;
	uint64_t seed;
};
int ls_dataset_sglang_sharegpt(struct ls_dataset *ds, const char *path, const struct ls_sglang_sharegpt_opts *o,
			       ls_token_count_fn count, void *count_ctx);

/* vLLM's spec_bench (SpecBench, a CustomDataset): Spec-Bench's question.jsonl, one object per
 * line with "turns" (a list of strings) and "category"; the prompt is turns[0], lines of another
 * category than `category` (NULL or "": any) are skipped, the rest shuffled by seed unless
 * in_order, the first n taken (0: all) with output_len each, and topped up to n as vLLM
 * oversamples unless no_oversample. Errors name the file and line. */
struct ls_spec_bench_opts {
	size_t      n;
	uint32_t    output_len;
	const char *category;
	uint64_t    seed;
	int         in_order, no_oversample;
};
int ls_dataset_spec_bench(struct ls_dataset *ds, const char *path, const struct ls_spec_bench_opts *o,
			  ls_token_count_fn count, void *count_ctx);

/* vLLM's maybe_oversample_requests: fewer than n prompts are topped up to n with copies of
 * prompts drawn at random (by seed), and one line says so. 0 or -ENOMEM. */
int ls_dataset_oversample(struct ls_dataset *ds, size_t n, uint64_t seed);

/* Drops the first offset prompts (SGLang's --dataset-offset); 0. */
void ls_dataset_skip(struct ls_dataset *ds, size_t offset);

#endif
