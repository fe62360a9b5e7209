/* config_datasets.c — the flags of the peers' datasets (vLLM's prefix_repetition, sonnet, custom,
 * burstgpt and random extras; SGLang's generated-shared-prefix, mooncake, offsets): their
 * defaults are the peers' own (vllm/benchmarks/datasets, sglang/benchmark/datasets). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config/config_int.h"

const char ls_config_not_mine[] = "unknown option";

void ls_config_datasets_defaults(struct ls_config *c)
{
	struct ls_config_datasets *p = &c->datasets;
	memset(p, 0, sizeof(*p));
	p->prefix_rep = (struct ls_prefix_rep_opts){ .prefix_len = 256, .suffix_len = 256, .num_prefixes = 10,
						    .output_len = 128 };
	p->sonnet = (struct ls_sonnet_opts){ .input_len = 550, .output_len = 150, .prefix_len = 200 };
	p->custom_output_len = 256;
	p->spec_bench_output_len = 256; /* vLLM's --spec-bench-output-len */
	p->gsp = (struct ls_gsp_opts){ .num_groups = 64, .prompts_per_group = 16, .system_prompt_len = 2048,
				       .question_len = 128, .output_len = 256, .range_ratio = 1.0 };
	p->mooncake = (struct ls_mooncake_opts){ .num_rounds = 1, .slowdown = 1.0 };
	p->timed_trace = (struct ls_timed_trace_opts){ .chunk_hash_size = 16, .sec_multiplier = 1.0 }; /* vLLM's */
	static const char *const labels[4] = { "timestamp", "input_length", "output_length", "hash_ids" };
	for (int i = 0; i < 4; i++)
		snprintf(p->timed_trace_labels[i], sizeof(p->timed_trace_labels[i]), "%s", labels[i]);
	p->gsp_zipf_alpha = 1.0;
}

int ls_config_dataset_parse(const char *v, enum ls_dataset_kind *out)
{
	static const struct {
		const char *name;
		enum ls_dataset_kind kind;
	} names[] = {
		{ "random", LS_DATASET_RANDOM },
		{ "sharegpt", LS_DATASET_SHAREGPT },
		{ "jsonl", LS_DATASET_JSONL },
		{ "custom", LS_DATASET_CUSTOM },
		{ "prefix_repetition", LS_DATASET_PREFIX_REPETITION },
		{ "prefix-repetition", LS_DATASET_PREFIX_REPETITION },
		{ "sonnet", LS_DATASET_SONNET },
		{ "burstgpt", LS_DATASET_BURSTGPT },
		{ "random-ids", LS_DATASET_RANDOM_IDS },
		{ "generated-shared-prefix", LS_DATASET_GSP },
		{ "mooncake", LS_DATASET_MOONCAKE },
		{ "spec_bench", LS_DATASET_SPEC_BENCH },
		{ "timed_trace", LS_DATASET_TIMED_TRACE },
		/* SGLang's docs name the trace in the dataset: the file still comes from --dataset-path */
		{ "mooncake-conversation", LS_DATASET_MOONCAKE },
		{ "mooncake-synthetic", LS_DATASET_MOONCAKE },
		{ "mooncake-toolagent", LS_DATASET_MOONCAKE },
	};
	for (size_t i = 0; v && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(v, names[i].name)) {
			*out = names[i].kind;
			return 0;
		}
	return -EINVAL;
}

/* A length flag's target field, or NULL when id is not one. */
static uint32_t *len_field(struct ls_config_datasets *p, enum opt_id id)
{
	switch (id) {
	case O_INPUT_LEN: return &p->input_len;
	case O_OUTPUT_LEN: return &p->output_len;
	case O_RANDOM_PREFIX_LEN: return &p->random_prefix_len;
	case O_PREFIX_REP_PREFIX_LEN: return &p->prefix_rep.prefix_len;
	case O_PREFIX_REP_SUFFIX_LEN: return &p->prefix_rep.suffix_len;
	case O_PREFIX_REP_NUM_PREFIXES: return &p->prefix_rep.num_prefixes;
	case O_PREFIX_REP_OUTPUT_LEN: return &p->prefix_rep.output_len;
	case O_SONNET_INPUT_LEN: return &p->sonnet.input_len;
	case O_SONNET_OUTPUT_LEN: return &p->sonnet.output_len;
	case O_SONNET_PREFIX_LEN: return &p->sonnet.prefix_len;
	case O_CUSTOM_OUTPUT_LEN: return &p->custom_output_len;
	case O_SPEC_BENCH_OUTPUT_LEN: return &p->spec_bench_output_len;
	case O_GSP_NUM_GROUPS: return &p->gsp.num_groups;
	case O_GSP_PROMPTS_PER_GROUP: return &p->gsp.prompts_per_group;
	case O_GSP_SYSTEM_PROMPT_LEN: return &p->gsp.system_prompt_len;
	case O_GSP_QUESTION_LEN: return &p->gsp.question_len;
	case O_GSP_OUTPUT_LEN: return &p->gsp.output_len;
	case O_MOONCAKE_NUM_ROUNDS: return &p->mooncake.num_rounds;
	case O_SHAREGPT_CONTEXT_LEN: return &p->sharegpt_context_len;
	case O_TIMED_TRACE_CHUNK: return &p->timed_trace.chunk_hash_size;
	default: return NULL;
	}
}

/* The on/off flags, or NULL. */
static int *switch_of(struct ls_config_datasets *p, enum opt_id id)
{
	switch (id) {
	case O_DISABLE_SHUFFLE: return &p->disable_shuffle;
	case O_NO_OVERSAMPLE: return &p->no_oversample;
	case O_GSP_FAST_PREPARE: return &p->gsp.fast_prepare;
	case O_GSP_SEND_ROUTING_KEY: return &p->gsp_send_routing_key;
	case O_GSP_ORDERED: return &p->gsp.ordered;
	case O_USE_TRACE_TIMESTAMPS: return &p->use_trace_timestamps;
	default: return NULL;
	}
}

/* The flags that are neither a length nor a switch. */
static const char *apply_other(struct ls_config *c, enum opt_id id, const char *v)
{
	struct ls_config_datasets *p = &c->datasets;
	uint64_t u;
	double d;
	switch (id) {
	case O_RANDOM_BATCH_SIZE:
		return ls_opt_parse_u64(v, 1, 1, &u) ? "must be 1: a batch of prompts in one request is vLLM's "
						       "embedding benchmark, out of latscope's scope" : NULL;
	case O_GSP_NUM_TURNS:
		if (ls_opt_parse_u64(v, 1, 1000, &u))
			return "must be a whole number 1..1000";
		p->gsp.num_turns = (uint32_t)u;
		return NULL;
	case O_GSP_RANGE_RATIO:
		if (ls_opt_parse_double(v, 0.0, 1.0, &d))
			return "must be a number in [0, 1]";
		p->gsp.range_ratio = d;
		return NULL;
	case O_GSP_ZIPF_ALPHA:
		if (ls_opt_parse_double(v, 0.0, 100.0, &d) || !(d > 0))
			return "must be a number in (0, 100]";
		p->gsp_zipf_alpha = d;
		return NULL;
	case O_GSP_GROUP_DISTRIBUTION:
		if (strcmp(v, "uniform") && strcmp(v, "zipf"))
			return "must be uniform or zipf";
		p->gsp_zipf = !strcmp(v, "zipf");
		return NULL;
	case O_MOONCAKE_SLOWDOWN:
		if (ls_opt_parse_double(v, 1e-6, 1e6, &d))
			return "must be a positive number";
		p->mooncake.slowdown = d;
		return NULL;
	case O_TIMED_TRACE_SEC_MULT:
		if (ls_opt_parse_double(v, 1e-9, 1e9, &d))
			return "must be a positive number";
		p->timed_trace.sec_multiplier = d;
		return NULL;
	case O_TIMED_TRACE_LABEL_TS:
	case O_TIMED_TRACE_LABEL_IN:
	case O_TIMED_TRACE_LABEL_OUT:
	case O_TIMED_TRACE_LABEL_HASH: {
		char *dst = p->timed_trace_labels[id - O_TIMED_TRACE_LABEL_TS];
		if (!*v || strlen(v) >= sizeof(p->timed_trace_labels[0]))
			return "must be a field name of 1..63 bytes";
		snprintf(dst, sizeof(p->timed_trace_labels[0]), "%s", v);
		return NULL;
	}
	case O_SELF_TIMED:
	case O_NO_SELF_TIMED: { /* vLLM's BooleanOptionalAction, default off: --request-rate paces */
		int on;
		const char *why = ls_config_switch(&on, v);
		if (why)
			return why;
		on = id == O_SELF_TIMED ? on : !on;
		p->use_trace_timestamps = on;
		if (on)
			c->profile.send.arrival = LS_ARRIVAL_TRACE;
		else if (c->profile.send.arrival == LS_ARRIVAL_TRACE) /* an earlier --self-timed */
			c->profile.send.arrival = LS_ARRIVAL_GAMMA;
		return NULL;
	}
	case O_SPEC_BENCH_CATEGORY:
		if (strlen(v) >= sizeof(p->spec_bench_category))
			return "must be a category name (at most 63 characters)";
		snprintf(p->spec_bench_category, sizeof(p->spec_bench_category), "%s", v);
		return NULL;
	case O_MOONCAKE_WORKLOAD:
		return NULL; /* the name only picks SGLang's download; bench says to give --dataset-path */
	case O_DATASET_OFFSET:
		if (ls_opt_parse_u64(v, 0, 10000000, &u))
			return "must be a count 0..10000000";
		p->dataset_offset = (size_t)u;
		return NULL;
	default:
		return ls_config_not_mine;
	}
}

const char *ls_config_apply_datasets(struct ls_config *c, enum opt_id id, const char *v)
{
	struct ls_config_datasets *p = &c->datasets;
	uint32_t *len = len_field(p, id);
	int *on = switch_of(p, id);
	uint64_t u;
	if (len) {
		int zero_ok = id == O_RANDOM_PREFIX_LEN || id == O_SONNET_PREFIX_LEN || id == O_PREFIX_REP_PREFIX_LEN ||
			      id == O_SHAREGPT_CONTEXT_LEN;
		if (ls_opt_parse_u64(v, zero_ok ? 0 : 1, 1u << 24, &u))
			return zero_ok ? "must be a whole number 0..16777216" : "must be a whole number 1..16777216";
		*len = (uint32_t)u;
		return NULL;
	}
	if (on) {
		const char *why = ls_config_switch(on, v);
		if (!why && id == O_USE_TRACE_TIMESTAMPS)
			c->profile.send.arrival = *on ? LS_ARRIVAL_TRACE : c->profile.send.arrival;
		return why;
	}
	return apply_other(c, id, v);
}
