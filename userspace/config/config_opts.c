/* config_opts.c — every `latscope bench` option: its name (vllm bench serve's where the meaning
 * is the same), --help text, and how its value is read. */
#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config/config_int.h"

const struct ls_opt ls_config_opts[] = {
	{ "backend", O_BACKEND, LS_ARG_ONE, "NAME",
	  "openai (= vllm, sglang-oai, lmdeploy, scalellm: /v1/completions), openai-chat (= vllm-chat, "
	  "sglang-oai-chat, lmdeploy-chat), sglang (= sglang-native: /generate), tgi (/generate_stream), "
	  "tensorrt-llm (= trt: /v2/models/ensemble/generate_stream), llama.cpp-native (llama-server's "
	  "/completion; llama.cpp is vLLM's name for openai), openai-responses (/v1/responses) [the profile's: openai]",
	  "server" },
	{ "base-url", O_BASE_URL, LS_ARG_ONE, "URL",
	  "server root, e.g. http://127.0.0.1:8000 (else http://HOST:PORT)", NULL },
	{ "host", O_HOST, LS_ARG_ONE, "HOST", "server host when no --base-url [127.0.0.1]", NULL },
	{ "port", O_PORT, LS_ARG_ONE, "PORT", "server port when no --base-url [8000]", NULL },
	{ "endpoint", O_ENDPOINT, LS_ARG_ONE, "PATH",
	  "API path [the backend's: /v1/completions, /v1/chat/completions, /generate]", NULL },
	{ "model", O_MODEL, LS_ARG_ONE, "NAME", "model name sent in each request [the first of GET /v1/models]", NULL },
	{ "dataset-name", O_DATASET_NAME, LS_ARG_ONE, "NAME", "random, sharegpt, jsonl; vLLM's custom, prefix_repetition, sonnet, burstgpt, spec_bench, timed_trace; "
	  "SGLang's random-ids, generated-shared-prefix, mooncake [random]", "workload" },
	{ "dataset-path", O_DATASET_PATH, LS_ARG_ONE, "FILE",
	  "ShareGPT JSON, or JSONL: one request per line (prompt or prompt_token_ids, output_len, timestamp); "
	  "sonnet's poem text, burstgpt's CSV, mooncake's trace", NULL },
	{ "random-input-len", O_RANDOM_INPUT_LEN, LS_ARG_ONE, "N", "prompt tokens of the random dataset [1024]", NULL },
	{ "random-output-len", O_RANDOM_OUTPUT_LEN, LS_ARG_ONE, "N",
	  "output tokens (max_tokens) of the random dataset; also jsonl's default [128]", NULL },
	{ "random-range-ratio", O_RANDOM_RANGE_RATIO, LS_ARG_ONE, "R",
	  "spread of random lengths, see --random-range-semantics [0.0]", NULL },
	{ "random-range-semantics", O_RANDOM_RANGE_SEMANTICS, LS_ARG_ONE, "vllm|sglang",
	  "vllm: [L(1-R), L(1+R)]; sglang: [max(L R, 1), L] [the profile's]", NULL },
	{ "random-vocab-size", O_RANDOM_VOCAB_SIZE, LS_ARG_ONE, "N|auto",
	  "token ids of random prompts stay below N; auto asks the server, at most 32000 [auto]", NULL },
	{ "sharegpt-output-len", O_SHAREGPT_OUTPUT_LEN, LS_ARG_ONE, "N",
	  "fixed output length for sharegpt [the gpt turn's length]", NULL },
	{ "num-prompts", O_NUM_PROMPTS, LS_ARG_ONE, "N", "measured requests; -1: every prompt of a custom/jsonl/spec_bench file [1000]", NULL },
	{ "ignore-eos", O_IGNORE_EOS, LS_ARG_NONE, NULL,
	  "ask the server to ignore EOS (always generate max_tokens); --ignore-eos=false turns off a "
	  "profile's default [the profile's: on for sglang]", NULL },
	/* ---- the peers' datasets (config_datasets.c) ---- */
	{ "input-len", O_INPUT_LEN, LS_ARG_ONE, "N",
	  "vLLM: input length of the chosen dataset (random, sonnet) [the dataset's]", "datasets of vLLM and SGLang" },
	{ "output-len", O_OUTPUT_LEN, LS_ARG_ONE, "N", "vLLM: output length of any dataset [the dataset's]", NULL },
	{ "random-prefix-len", O_RANDOM_PREFIX_LEN, LS_ARG_ONE, "N",
	  "vLLM random: N token ids shared by every prompt, before its own [0]", NULL },
	{ "random-batch-size", O_RANDOM_BATCH_SIZE, LS_ARG_ONE, "1",
	  "vLLM random: prompts per request; only 1 (batches are for embedding, out of scope) [1]", NULL },
	{ "disable-shuffle", O_DISABLE_SHUFFLE, LS_ARG_NONE, NULL, "vLLM: keep sharegpt in file order, prefix_repetition in build order", NULL },
	{ "no-oversample", O_NO_OVERSAMPLE, LS_ARG_NONE, NULL,
	  "vLLM: run only the conversations sharegpt has, never repeated", NULL },
	{ "prefix-repetition-prefix-len", O_PREFIX_REP_PREFIX_LEN, LS_ARG_ONE, "N", "prefix_repetition: prefix tokens [256]", NULL },
	{ "prefix-repetition-suffix-len", O_PREFIX_REP_SUFFIX_LEN, LS_ARG_ONE, "N", "prefix_repetition: suffix tokens [256]", NULL },
	{ "prefix-repetition-num-prefixes", O_PREFIX_REP_NUM_PREFIXES, LS_ARG_ONE, "N",
	  "prefix_repetition: distinct prefixes, each with num-prompts / N suffixes [10]", NULL },
	{ "prefix-repetition-output-len", O_PREFIX_REP_OUTPUT_LEN, LS_ARG_ONE, "N", "prefix_repetition: output tokens [128]", NULL },
	{ "sonnet-input-len", O_SONNET_INPUT_LEN, LS_ARG_ONE, "N", "sonnet (--dataset-path poem.txt): prompt tokens at most [550]", NULL },
	{ "sonnet-output-len", O_SONNET_OUTPUT_LEN, LS_ARG_ONE, "N", "sonnet: output tokens [150]", NULL },
	{ "sonnet-prefix-len", O_SONNET_PREFIX_LEN, LS_ARG_ONE, "N", "sonnet: tokens of poem lines shared by every prompt [200]", NULL },
	{ "spec-bench-output-len", O_SPEC_BENCH_OUTPUT_LEN, LS_ARG_ONE, "N", "spec_bench: output tokens per request [256]", NULL },
	{ "spec-bench-category", O_SPEC_BENCH_CATEGORY, LS_ARG_ONE, "NAME", "spec_bench: only this \"category\" [every one]", NULL },
	{ "custom-output-len", O_CUSTOM_OUTPUT_LEN, LS_ARG_ONE, "N", "custom (jsonl of prompts): output tokens when a line has none [256]", NULL },
	{ "gsp-num-groups", O_GSP_NUM_GROUPS, LS_ARG_ONE, "N", "generated-shared-prefix: system prompts [64]", NULL },
	{ "gsp-prompts-per-group", O_GSP_PROMPTS_PER_GROUP, LS_ARG_ONE, "N",
	  "generated-shared-prefix: questions per system prompt (requests = groups x this; --num-prompts is not read) [16]", NULL },
	{ "gsp-system-prompt-len", O_GSP_SYSTEM_PROMPT_LEN, LS_ARG_ONE, "N", "generated-shared-prefix: system prompt tokens [2048]", NULL },
	{ "gsp-question-len", O_GSP_QUESTION_LEN, LS_ARG_ONE, "N", "generated-shared-prefix: question tokens [128]", NULL },
	{ "gsp-output-len", O_GSP_OUTPUT_LEN, LS_ARG_ONE, "N", "generated-shared-prefix: output tokens [256]", NULL },
	{ "gsp-range-ratio", O_GSP_RANGE_RATIO, LS_ARG_ONE, "R",
	  "generated-shared-prefix: lengths drawn in [max(L R, 1), L]; 1 = exact [1.0]", NULL },
	{ "gsp-fast-prepare", O_GSP_FAST_PREPARE, LS_ARG_NONE, NULL, "generated-shared-prefix: do not count prompt tokens", NULL },
	{ "gsp-send-routing-key", O_GSP_SEND_ROUTING_KEY, LS_ARG_NONE, NULL,
	  "generated-shared-prefix: X-SMG-Routing-Key, one per group, on each request", NULL },
	{ "gsp-num-turns", O_GSP_NUM_TURNS, LS_ARG_ONE, "N", "generated-shared-prefix: turns per conversation, each with the ones before and their replies\n"
	  "(a chat backend; the next turn goes when the last returns) [1]", NULL },
	{ "gsp-ordered", O_GSP_ORDERED, LS_ARG_NONE, NULL, "generated-shared-prefix: send group by group (no shuffle)", NULL },
	{ "gsp-group-distribution", O_GSP_GROUP_DISTRIBUTION, LS_ARG_ONE, "uniform|zipf",
	  "generated-shared-prefix: requests per group equal, or Zipf-skewed (--gsp-zipf-alpha) [uniform]", NULL },
	{ "gsp-zipf-alpha", O_GSP_ZIPF_ALPHA, LS_ARG_ONE, "A", "generated-shared-prefix: Zipf exponent [1.0]", NULL },
	{ "mooncake-slowdown-factor", O_MOONCAKE_SLOWDOWN, LS_ARG_ONE, "F", "mooncake: stretch the trace's times by F [1.0]", NULL },
	{ "mooncake-num-rounds", O_MOONCAKE_NUM_ROUNDS, LS_ARG_ONE, "N", "mooncake: rounds per session [1]", NULL },
	{ "mooncake-workload", O_MOONCAKE_WORKLOAD, LS_ARG_ONE, "NAME",
	  "mooncake: accepted; latscope downloads nothing: give the trace with --dataset-path", NULL },
	{ "use-trace-timestamps", O_USE_TRACE_TIMESTAMPS, LS_ARG_NONE, NULL,
	  "send at the trace's times (mooncake, jsonl with timestamp): --arrival trace", NULL },
	{ "self-timed", O_SELF_TIMED, LS_ARG_NONE, NULL,
	  "vLLM: send at the trace's times (timed_trace, jsonl with timestamp): --arrival trace", NULL },
	{ "no-self-timed", O_NO_SELF_TIMED, LS_ARG_NONE, NULL, "vLLM: send by --request-rate, not the trace's times [this]", NULL },
	{ "timed-trace-chunk-hash-size", O_TIMED_TRACE_CHUNK, LS_ARG_ONE, "N", "timed_trace: prompt tokens per hash id [16]", NULL },
	{ "timed-trace-sec-multiplier", O_TIMED_TRACE_SEC_MULT, LS_ARG_ONE, "X",
	  "timed_trace: a timestamp x X is seconds from the run's start [1]", NULL },
	{ "timed-trace-label-timestamp", O_TIMED_TRACE_LABEL_TS, LS_ARG_ONE, "KEY", "timed_trace: its time field [timestamp]", NULL },
	{ "timed-trace-label-input-length", O_TIMED_TRACE_LABEL_IN, LS_ARG_ONE, "KEY",
	  "timed_trace: its prompt length field [input_length]", NULL },
	{ "timed-trace-label-output-length", O_TIMED_TRACE_LABEL_OUT, LS_ARG_ONE, "KEY",
	  "timed_trace: its output length field [output_length]", NULL },
	{ "timed-trace-label-hash-ids", O_TIMED_TRACE_LABEL_HASH, LS_ARG_ONE, "KEY", "timed_trace: its hash id list [hash_ids]", NULL },
	{ "sharegpt-context-len", O_SHAREGPT_CONTEXT_LEN, LS_ARG_ONE, "N",
	  "SGLang: drop conversations whose prompt + output exceed N tokens", NULL },
	{ "dataset-offset", O_DATASET_OFFSET, LS_ARG_ONE, "N", "SGLang: skip the dataset's first N prompts [0]", NULL },
	/* ---- */
	{ "request-rate", O_REQUEST_RATE, LS_ARG_ONE, "RPS", "target requests per second, or inf [inf]", "sending" },
	{ "burstiness", O_BURSTINESS, LS_ARG_ONE, "B",
	  "gamma shape of the gaps: 1 = Poisson, < 1 burstier [1.0]", NULL },
	{ "arrival", O_ARRIVAL, LS_ARG_ONE, "KIND",
	  "gamma (vLLM, normalised to N/rate), poisson-yield (SGLang), constant, closed, trace, inf [the profile's]", NULL },
	{ "max-concurrency", O_MAX_CONCURRENCY, LS_ARG_ONE, "C",
	  "at most C requests in flight (the clients of --arrival closed) [unlimited]", NULL },
	{ "num-warmups", O_NUM_WARMUPS, LS_ARG_ONE, "N",
	  "warmup requests before the run, never measured [the profile's]", NULL },
	{ "warmup-shape", O_WARMUP_SHAPE, LS_ARG_ONE, "vllm|sglang",
	  "vllm: N copies of the first prompt; sglang: output capped at 32, then 1 s pause", NULL },
	{ "seed", O_SEED, LS_ARG_ONE, "N", "seed of the dataset and arrival draws [0]", NULL },
	{ "connection", O_CONNECTION, LS_ARG_ONE, "reuse|per-request",
	  "keep-alive pool (vLLM) or a fresh TCP/TLS connection per request (SGLang) [the profile's]", NULL },
	{ "http2", O_HTTP2, LS_ARG_NONE, NULL, "use HTTP/2 where libcurl and the server have it", NULL },
	{ "insecure", O_INSECURE, LS_ARG_NONE, NULL, "skip TLS certificate verification", NULL },
	{ "cacert", O_CACERT, LS_ARG_ONE, "FILE", "trust this CA bundle for https", NULL },
	{ "request-timeout", O_REQUEST_TIMEOUT, LS_ARG_ONE, "S",
	  "fail a request after S seconds, 0 = never [21600]", NULL },
	{ "ready-check-timeout-sec", O_READY_CHECK_TIMEOUT, LS_ARG_ONE, "S",
	  "wait up to S seconds for the server to answer before the run, 0 = skip [600]", NULL },
	{ "skip-initial-test", O_SKIP_INITIAL_TEST, LS_ARG_NONE, NULL,
	  "do not send the one test request (the first prompt) that checks the setup before the run", NULL },
	{ "disable-tqdm", O_DISABLE_TQDM, LS_ARG_NONE, NULL,
	  "no progress (a line that redraws on a terminal, else a plain line every 10 s)", NULL },
	{ "spin-us", O_SPIN_US, LS_ARG_ONE, "US",
	  "spin up to US for the next event before sleeping: a frame within US needs no wake-up "
	  "(20-80 us on a VM), for up to US of CPU per idle gap; keep the server off this core [0]", NULL },
	{ "busy-poll", O_BUSY_POLL, LS_ARG_NONE, NULL, "the loop never sleeps (--spin-us forever: one core at 100%)", NULL },
	{ "preconnect", O_PRECONNECT, LS_ARG_ONE, "N",
	  "open N keep-alive connections (GET /v1/models) before the clock starts, at most --max-concurrency; "
	  "reported [0: the first requests open them, as the profiles do]", NULL },
	{ "server-metrics-ms", O_SERVER_METRICS_MS, LS_ARG_ONE, "MS",
	  "poll the server's Prometheus /metrics every MS during the run, on a thread of its own: running "
	  "and waiting requests, KV-cache use (vLLM, SGLang, llama.cpp, TGI names) as a time series in the "
	  "report, result JSON, record and --html timeline [0: off]", NULL },
	{ "perf-metrics", O_PERF_METRICS, LS_ARG_NONE, NULL,
	  "after the run, GET the server's /perf_metrics (trtllm-serve with return_perf_metrics: true and "
	  "perf_metrics_max_requests at least the run's requests) and join each entry's timing_metrics to "
	  "its request by arrival time: the engine's queue, prefill, decode and e2e in the report, result "
	  "JSON and record; one 5 s try, a failure is a note [off]", NULL },
	{ "test-loop-delay-us", O_TEST_LOOP_DELAY_US, LS_ARG_ONE, "US",
	  "test only: add US of loop overhead per dispatch (arrival drift experiment) [0]", NULL },
	{ "percentile-metrics", O_PERCENTILE_METRICS, LS_ARG_ONE, "LIST",
	  "metrics that get a block: ttft,tpot,itl,e2el [ttft,tpot,itl,e2el]", "results" },
	{ "metric-percentiles", O_METRIC_PERCENTILES, LS_ARG_ONE, "LIST",
	  "percentiles to print, e.g. 50,90,99 [the profile's; vllm: 99]", NULL },
	{ "goodput", O_GOODPUT, LS_ARG_MANY, "KEY:MS ...",
	  "SLOs for goodput, e.g. --goodput ttft:900 e2el:14100 (ttft, tpot, e2el in ms)", NULL },
	{ "save-result", O_SAVE_RESULT, LS_ARG_NONE, NULL,
	  "write the result JSON (vLLM's keys plus a \"latscope\" object)", NULL },
	{ "result-dir", O_RESULT_DIR, LS_ARG_ONE, "DIR", "directory of the result JSON [.]", NULL },
	{ "result-filename", O_RESULT_FILENAME, LS_ARG_ONE, "FILE",
	  "name of the result JSON [BACKEND-RATEqps[-concurrencyC]-MODEL-DATE.json]", NULL },
	{ "record", O_RECORD, LS_ARG_ONE, "FILE",
	  "write one JSON line per finished request with every stamp, as it finishes", NULL },
	{ "profile", O_PROFILE, LS_ARG_ONE, "NAME|PATH",
	  "old spelling of --rules NAME; bare --profile (no value) is vLLM's and SGLang's, see --server-profile", "profile" },
	{ "config", O_CONFIG, LS_ARG_ONE, "FILE",
	  "JSON object of these flags' keys (e.g. {\"request-rate\": 20}); flags override it", NULL },
	{ "probes", O_PROBES, LS_ARG_ONE, "auto|on|off",
	  "eBPF probes: auto = on when root and kernel BTF allow, else off (the report says why); "
	  "on = fail (exit 1) without them [auto]", "attribution (where the latency went)" },
	{ "server-pid", O_SERVER_PID, LS_ARG_ONE, "PID",
	  "server process on this host to probe too, splitting network from server (repeatable)", NULL },
	{ "server-comm", O_SERVER_COMM, LS_ARG_ONE, "NAME", "probe every process with this name as a server", NULL },
	{ "trace", O_TRACE, LS_ARG_ONE, "FILE", "write a Perfetto / Chrome trace-event JSON of the run", NULL },
	{ "gpu-dir", O_GPU_DIR, LS_ARG_ONE, "DIR",
	  "CUPTI GPU step rings of the server (liblatscope_cupti.so): splits server into queue + gpu", NULL },
	{ "html", O_HTML, LS_ARG_ONE, "FILE",
	  "also write one self-contained HTML page of the run (charts by Debian's libjs-chart.js, inlined)",
	  "page" },
	{ "help", O_HELP, LS_ARG_NONE, NULL, "this help", "other" },
	{ "h", O_HELP, LS_ARG_NONE, NULL, NULL, NULL }, /* -h */
};
const size_t ls_config_n_opts = sizeof(ls_config_opts) / sizeof(ls_config_opts[0]);

void ls_config_help(FILE *out)
{
	size_t n;
	const struct ls_opt *all = ls_config_all_opts(&n);
	fprintf(out, "usage: latscope bench [--harness vllm|sglang] [flags]\n\n"
		     "Drives streaming requests at a server and reports TTFT, TPOT, ITL and E2EL in the layout of\n"
		     "`vllm bench serve` (flags use its names), plus the clock each number uses and the slot wait.\n"
		     "A `vllm bench serve` command line runs as it is; so does everything after\n"
		     "`python -m sglang.bench_serving` behind --harness sglang.\n");
	ls_config_help_grouped(out, all, n);
	fprintf(out, "\nexample:\n  latscope bench --base-url http://127.0.0.1:8000 --model m --dataset-name random \\\n"
		     "    --random-input-len 128 --random-output-len 64 --num-prompts 100 --request-rate 20\n");
}

const struct ls_opt *ls_config_find_opt(const char *name, size_t len)
{
	size_t n;
	const struct ls_opt *all = ls_config_all_opts(&n);
	return ls_opt_find(all, n, name, len);
}

int ls_config_set_str(char **dst, const char *v)
{
	char *copy = strdup(v);
	if (!copy)
		return -ENOMEM;
	free(*dst);
	*dst = copy;
	return 0;
}

/* bench's number rules on base/opts.h's parsers: unsigned up to max; any finite double. */
static int parse_u64(const char *v, uint64_t max, uint64_t *out)
{
	return ls_opt_parse_u64(v, 0, max, out);
}

static int parse_double(const char *v, double *out)
{
	return ls_opt_parse_double(v, -INFINITY, INFINITY, out);
}

/* What a group's setter returns for an option that is not in its group. */
static const char *const not_mine = ls_config_not_mine;

/* The options whose value is kept as text, and where. */
static char **text_field(struct ls_config *c, enum opt_id id)
{
	switch (id) {
	case O_BASE_URL: return &c->base_url;
	case O_HOST: return &c->host;
	case O_MODEL: return &c->model;
	case O_DATASET_PATH: return &c->dataset_path;
	case O_CACERT: return &c->cacert;
	case O_RESULT_DIR: return &c->result_dir;
	case O_RESULT_FILENAME: return &c->result_filename;
	case O_RECORD: return &c->record_path;
	case O_PROFILE: return &c->profile_name;
	case O_CONFIG: return &c->config_path;
	case O_SERVER_COMM: return &c->server_comm;
	case O_TRACE: return &c->trace_path;
	case O_GPU_DIR: return &c->gpu_dir;
	case O_HTML: return &c->html_path;
	default: return NULL;
	}
}

/* The on/off options (no value on the command line, true/false in a file), and where. */
static int *switch_field(struct ls_config *c, enum opt_id id)
{
	switch (id) {
	case O_IGNORE_EOS: return &c->profile.send.ignore_eos;
	case O_HTTP2: return &c->http2;
	case O_INSECURE: return &c->insecure;
	case O_DISABLE_TQDM: return &c->disable_tqdm;
	case O_SKIP_INITIAL_TEST: return &c->skip_initial_test;
	case O_BUSY_POLL: return &c->busy_poll;
	case O_PERF_METRICS: return &c->perf_metrics;
	case O_SAVE_RESULT: return &c->save_result;
	default: return NULL;
	}
}

const char *ls_config_switch(int *field, const char *v)
{
	int on;
	if (ls_opt_parse_bool(v, &on))
		return "takes no value (or true/false in a config file)";
	if (field)
		*field = on;
	return NULL;
}

static const char *apply_server(struct ls_config *c, enum opt_id id, const char *v)
{
	uint64_t u;
	switch (id) {
	case O_BACKEND:
		if (ls_backend_parse(v, &c->profile.send.backend)) {
			static char why[320];
			snprintf(why, sizeof(why), "must be one of %s", ls_backend_names());
			return why;
		}
		/* kept as given: the result file says "vllm" when the user said so */
		return ls_config_set_str(&c->backend_name, v) ? "out of memory" : NULL;
	case O_PORT:
		if (parse_u64(v, 65535, &u) || !u)
			return "must be a port number 1..65535";
		c->port = (int)u;
		return NULL;
	case O_ENDPOINT:
		if (v[0] != '/')
			return "must be a path starting with /";
		return ls_config_set_str(&c->endpoint, v) ? "out of memory" : NULL;
	default:
		return not_mine;
	}
}

static const char *apply_workload(struct ls_config *c, enum opt_id id, const char *v)
{
	uint64_t u;
	double d;
	switch (id) {
	case O_DATASET_NAME: /* the name as typed too: SGLang's file name carries it (mooncake-conversation) */
		if (ls_config_dataset_parse(v, &c->dataset))
			return "must be random, sharegpt, jsonl, custom, prefix_repetition, sonnet, burstgpt, random-ids, "
			       "spec_bench, timed_trace, generated-shared-prefix or mooncake";
		return ls_config_set_str(&c->dataset_name, v) ? "out of memory" : NULL;
	case O_RANDOM_VOCAB_SIZE:
		if (!strcmp(v, "auto")) {
			c->random_vocab_size = 0;
			return NULL;
		}
		if (parse_u64(v, UINT32_MAX / 2, &u) || !u)
			return "must be a whole number >= 1, or auto";
		c->random_vocab_size = (uint32_t)u;
		return NULL;
	case O_RANDOM_INPUT_LEN:
	case O_RANDOM_OUTPUT_LEN:
	case O_SHAREGPT_OUTPUT_LEN:
		if (parse_u64(v, 1u << 24, &u) || (!u && id != O_SHAREGPT_OUTPUT_LEN))
			return "must be a whole number 1..16777216";
		if (id == O_RANDOM_INPUT_LEN)
			c->random_input_len = (uint32_t)u;
		else if (id == O_RANDOM_OUTPUT_LEN)
			c->random_output_len = (uint32_t)u;
		else
			c->sharegpt_output_len = (uint32_t)u;
		return NULL;
	case O_RANDOM_RANGE_RATIO:
		if (parse_double(v, &d) || d < 0.0 || d > 1.0)
			return "must be a number in [0, 1]";
		c->random_range_ratio = d;
		return NULL;
	case O_RANDOM_RANGE_SEMANTICS:
		return ls_range_semantics_parse(v, &c->profile.send.range_semantics) ? "must be vllm or sglang" : NULL;
	case O_NUM_PROMPTS:
		if (!strcmp(v, "-1")) { /* vLLM: every prompt of the dataset file (0 here; config_check limits it) */
			c->num_prompts = 0;
			return NULL;
		}
		if (parse_u64(v, 10000000, &u) || !u)
			return "must be a count 1..10000000, or -1 (every prompt of the dataset file)";
		c->num_prompts = (size_t)u;
		return NULL;
	default:
		return not_mine;
	}
}

/* The send rules a profile gives and a flag can override: how a run sends. */
static const char *apply_send_rule(struct ls_config *c, enum opt_id id, const char *v)
{
	struct ls_send_rules *s = &c->profile.send;
	uint64_t u;
	switch (id) {
	case O_ARRIVAL:
		return ls_arrival_parse_kind(v, &s->arrival) ?
			"must be gamma, poisson-yield, constant, closed, trace or inf" : NULL;
	case O_NUM_WARMUPS:
		if (parse_u64(v, 100000, &u))
			return "must be a count 0..100000";
		s->num_warmups = (uint32_t)u;
		return NULL;
	case O_WARMUP_SHAPE:
		return ls_warmup_shape_parse(v, &s->warmup_shape) ? "must be vllm or sglang" : NULL;
	case O_CONNECTION:
		if (!strcmp(v, "reuse"))
			s->per_request_conn = 0;
		else if (!strcmp(v, "per-request"))
			s->per_request_conn = 1;
		else
			return "must be reuse or per-request";
		return NULL;
	default:
		return not_mine;
	}
}

static const char *apply_sending(struct ls_config *c, enum opt_id id, const char *v)
{
	uint64_t u;
	double d;
	switch (id) {
	case O_REQUEST_RATE:
		if (parse_double(v, &d) || !(d > 0.0))
			return "must be a positive number of requests per second, or inf";
		c->request_rate = d;
		return NULL;
	case O_BURSTINESS:
		if (parse_double(v, &d) || !(d > 0.0))
			return "must be a positive number (1 = Poisson)";
		c->burstiness = d;
		return NULL;
	case O_MAX_CONCURRENCY:
		if (parse_u64(v, 1000000, &u))
			return "must be a count 0..1000000 (0 = unlimited)";
		c->max_concurrency = (uint32_t)u;
		return NULL;
	case O_SEED:
		if (parse_u64(v, UINT64_MAX, &u))
			return "must be a non-negative integer";
		c->seed = u;
		return NULL;
	case O_REQUEST_TIMEOUT:
	case O_READY_CHECK_TIMEOUT:
		if (parse_double(v, &d) || d < 0.0 || d > 1e7)
			return "must be seconds, 0 or more";
		if (id == O_REQUEST_TIMEOUT)
			c->request_timeout_s = d;
		else
			c->ready_check_timeout_s = d;
		return NULL;
	case O_SPIN_US:
		if (parse_u64(v, 1000000, &u))
			return "must be microseconds 0..1000000";
		c->spin_us = (uint32_t)u;
		return NULL;
	case O_PRECONNECT:
		if (parse_u64(v, 65536, &u))
			return "must be a number of connections 0..65536";
		c->preconnect = (uint32_t)u;
		return NULL;
	case O_SERVER_METRICS_MS:
		if (parse_u64(v, 3600000, &u) || (u && u < 10))
			return "must be milliseconds, 0 (off) or 10..3600000";
		c->server_metrics_ms = (uint32_t)u;
		return NULL;
	case O_TEST_LOOP_DELAY_US:
		if (parse_u64(v, 10000000, &u))
			return "must be microseconds 0..10000000";
		c->loop_delay_ns = u * 1000;
		return NULL;
	default:
		return not_mine;
	}
}

static const char *apply_results(struct ls_config *c, enum opt_id id, const char *v)
{
	switch (id) {
	case O_PERCENTILE_METRICS:
		c->peer.percentile_metrics_set = 1; /* else the harness's default (ls_config_peer_finish) */
		return ls_parse_percentile_metrics(v, &c->percentile_metrics) ? "must be a comma list of ttft, tpot, itl, e2el" : NULL;
	case O_METRIC_PERCENTILES:
		return ls_percentiles_parse(v, &c->profile.read) ?
			"must be a comma list of at most 16 percentiles in (0, 100], e.g. 50,90,99" : NULL;
	case O_GOODPUT:
		return ls_goodput_parse(v, &c->goodput) ?
			"must be KEY:MS with KEY ttft, tpot or e2el and MS >= 0, e.g. ttft:900" : NULL;
	default:
		return not_mine;
	}
}

/* --server-pid: repeatable; a comma list too (a config file's array joins so). */
static const char *apply_server_pids(struct ls_config *c, const char *v)
{
	char one[32];
	uint64_t u;
	for (const char *p = v;;) {
		size_t len = strcspn(p, ",");
		if (len >= sizeof(one))
			return "must be a process id (or a comma list of them)";
		memcpy(one, p, len);
		one[len] = 0;
		if (parse_u64(one, 4194304, &u) || !u)
			return "must be a process id (or a comma list of them)";
		uint32_t k = 0;
		while (k < c->n_server_pids && c->server_pids[k] != (int)u)
			k++;
		if (k == c->n_server_pids) {
			if (c->n_server_pids == LS_MAX_SERVER_PIDS)
				return "is one too many: at most 16 server processes";
			c->server_pids[c->n_server_pids++] = (int)u;
		}
		if (!p[len])
			break;
		p += len + 1;
	}
	return NULL;
}

static const char *apply_probes(struct ls_config *c, enum opt_id id, const char *v)
{
	switch (id) {
	case O_PROBES:
		if (!strcmp(v, "auto"))
			c->probes = LS_PROBES_AUTO;
		else if (!strcmp(v, "on"))
			c->probes = LS_PROBES_ON;
		else if (!strcmp(v, "off"))
			c->probes = LS_PROBES_OFF;
		else
			return "must be auto, on or off";
		return NULL;
	case O_SERVER_PID:
		return apply_server_pids(c, v);
	default:
		return not_mine;
	}
}

/* The options that set a send rule, and the rule's place in struct ls_send_rules: bit i of
 * send_set says send_rule_opts[i]'s rule came from the config file or a flag. */
#define SEND_RULE(opt, field) { opt, offsetof(struct ls_send_rules, field), sizeof(((struct ls_send_rules *)0)->field) }
static const struct {
	enum opt_id id;
	size_t      off, size;
} send_rule_opts[] = {
	SEND_RULE(O_BACKEND, backend),
	SEND_RULE(O_ARRIVAL, arrival),
	SEND_RULE(O_CONNECTION, per_request_conn),
	SEND_RULE(O_RANDOM_RANGE_SEMANTICS, range_semantics),
	SEND_RULE(O_WARMUP_SHAPE, warmup_shape),
	SEND_RULE(O_NUM_WARMUPS, num_warmups),
	SEND_RULE(O_IGNORE_EOS, ignore_eos),
	SEND_RULE(O_USE_TRACE_TIMESTAMPS, arrival), /* SGLang's mooncake replay: --arrival trace */
	SEND_RULE(O_SELF_TIMED, arrival),           /* vLLM's timed_trace replay: the same */
};
#undef SEND_RULE
#define N_SEND_RULE_OPTS (sizeof(send_rule_opts) / sizeof(send_rule_opts[0]))

void ls_config_send_rules(const struct ls_config *c, const struct ls_profile *p, struct ls_send_rules *out)
{
	struct ls_send_rules s = p->send;
	for (size_t i = 0; i < N_SEND_RULE_OPTS; i++)
		if (c->send_set & (1u << i))
			memcpy((char *)&s + send_rule_opts[i].off, (const char *)&c->profile.send + send_rule_opts[i].off,
			       send_rule_opts[i].size);
	*out = s;
}

/* Applies one option's value. Returns NULL, or why the value is wrong. */
const char *ls_config_apply(struct ls_config *c, const struct ls_opt *o, const char *v)
{
	static const char *(*const groups[])(struct ls_config *, enum opt_id, const char *) = {
		apply_server, apply_workload, apply_send_rule, apply_sending, apply_results, apply_probes,
		ls_config_apply_datasets,
	};
	if (o->id >= LS_PEER_OPT_FIRST) /* config_peer.c's options */
		return ls_config_peer_apply(c, o->id, v);
	char **text = text_field(c, o->id);
	int *on = switch_field(c, o->id);
	const char *why = not_mine;
	if (text)
		why = ls_config_set_str(text, v) ? "out of memory" : NULL;
	else if (on || o->id == O_HELP)
		why = ls_config_switch(on, v);
	for (size_t i = 0; why == not_mine && i < sizeof(groups) / sizeof(groups[0]); i++)
		why = groups[i](c, o->id, v);
	for (size_t i = 0; !why && i < N_SEND_RULE_OPTS; i++)
		if ((int)send_rule_opts[i].id == o->id)
			c->send_set |= 1u << i;
	return why;
}
