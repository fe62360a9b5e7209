/* config_int.h — the option table shared by config.c (parsing, --config files) and
 * config_opts.c (the table, --help, and what each value means). Not a public interface. */
#ifndef LATSCOPE_CONFIG_INT_H
#define LATSCOPE_CONFIG_INT_H

#include <stddef.h>
#include "config/config.h"
#include "base/opts.h"

enum opt_id {
	O_BACKEND, O_BASE_URL, O_HOST, O_PORT, O_ENDPOINT, O_MODEL,
	O_DATASET_NAME, O_DATASET_PATH, O_RANDOM_INPUT_LEN, O_RANDOM_OUTPUT_LEN, O_RANDOM_RANGE_RATIO,
	O_RANDOM_RANGE_SEMANTICS, O_RANDOM_VOCAB_SIZE, O_SHAREGPT_OUTPUT_LEN, O_NUM_PROMPTS, O_IGNORE_EOS,
	O_REQUEST_RATE, O_BURSTINESS, O_ARRIVAL, O_MAX_CONCURRENCY, O_NUM_WARMUPS, O_WARMUP_SHAPE, O_SEED,
	O_CONNECTION, O_HTTP2, O_INSECURE, O_CACERT, O_REQUEST_TIMEOUT, O_READY_CHECK_TIMEOUT, O_SKIP_INITIAL_TEST, O_DISABLE_TQDM, O_BUSY_POLL, O_SPIN_US,
	O_TEST_LOOP_DELAY_US,
	O_PERCENTILE_METRICS, O_METRIC_PERCENTILES, O_GOODPUT, O_SAVE_RESULT, O_RESULT_DIR, O_RESULT_FILENAME,
	O_RECORD,
	O_PROFILE, O_CONFIG,
	O_PROBES, O_SERVER_PID, O_SERVER_COMM, O_TRACE, O_GPU_DIR,
	O_HTML,
	O_HELP,
	/* the peers' datasets (config_datasets.c) */
	O_INPUT_LEN, O_OUTPUT_LEN, O_RANDOM_PREFIX_LEN, O_RANDOM_BATCH_SIZE, O_DISABLE_SHUFFLE, O_NO_OVERSAMPLE,
	O_PREFIX_REP_PREFIX_LEN, O_PREFIX_REP_SUFFIX_LEN, O_PREFIX_REP_NUM_PREFIXES, O_PREFIX_REP_OUTPUT_LEN,
	O_SONNET_INPUT_LEN, O_SONNET_OUTPUT_LEN, O_SONNET_PREFIX_LEN, O_CUSTOM_OUTPUT_LEN, O_SPEC_BENCH_OUTPUT_LEN, O_SPEC_BENCH_CATEGORY,
	O_GSP_NUM_GROUPS, O_GSP_PROMPTS_PER_GROUP, O_GSP_SYSTEM_PROMPT_LEN, O_GSP_QUESTION_LEN, O_GSP_OUTPUT_LEN,
	O_GSP_RANGE_RATIO, O_GSP_FAST_PREPARE, O_GSP_SEND_ROUTING_KEY, O_GSP_NUM_TURNS, O_GSP_ORDERED,
	O_GSP_GROUP_DISTRIBUTION, O_GSP_ZIPF_ALPHA,
	O_MOONCAKE_SLOWDOWN, O_MOONCAKE_NUM_ROUNDS, O_MOONCAKE_WORKLOAD, O_USE_TRACE_TIMESTAMPS,
	O_SHAREGPT_CONTEXT_LEN, O_DATASET_OFFSET,
	O_TIMED_TRACE_CHUNK, O_TIMED_TRACE_SEC_MULT, O_TIMED_TRACE_LABEL_TS, O_TIMED_TRACE_LABEL_IN,
	O_TIMED_TRACE_LABEL_OUT, O_TIMED_TRACE_LABEL_HASH, O_SELF_TIMED, O_NO_SELF_TIMED,
	O_PRECONNECT,
	O_SERVER_METRICS_MS,
	O_PERF_METRICS,
};

/* The table of every option (base/opts.h's struct ls_opt, id = enum opt_id). */
extern const struct ls_opt ls_config_opts[];
extern const size_t ls_config_n_opts;

const struct ls_opt *ls_config_find_opt(const char *name, size_t len); /* '_' matches '-' */
/* Applies one option's value. NULL, or why the value is wrong. */
const char *ls_config_apply(struct ls_config *c, const struct ls_opt *o, const char *v);
int ls_config_set_str(char **dst, const char *v);
/* An on/off option's value ("true"/"1", "false"/"0"; bare on the command line) into *field
 * (NULL: only checked). NULL, or why the value is wrong. */
const char *ls_config_switch(int *field, const char *v);

/* The peers' dataset options (config_datasets.c): defaults, and one option's value (NULL, why it
 * is wrong, or ls_config_not_mine for an option of another group). */
extern const char ls_config_not_mine[];
void ls_config_datasets_defaults(struct ls_config *c);
const char *ls_config_apply_datasets(struct ls_config *c, enum opt_id id, const char *v);
/* The dataset's name (--dataset-name): 0, or -EINVAL. */
int ls_config_dataset_parse(const char *v, enum ls_dataset_kind *out);

#endif
