/* sim/sim_main.c — `latscope sim`: flags and --help, then the server loop (sim_server.c). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "commands.h"
#include "base/opts.h"
#include "sim/sim.h"

enum {
	O_HOST, O_PORT, O_MODEL, O_MAX_MODEL_LEN, O_MAX_CONNS, O_MAX_HEADER, O_MAX_BODY, O_TRUTH,
	O_SEED, O_QUIET, O_STEP_MS, O_DECODE_US, O_PREFILL_US, O_MAX_BATCH, O_MAX_BATCH_TOKENS,
	O_PREFIX_CACHE, O_PREFIX_BLOCK, O_ACCEPT_LEN, O_NUM_SPEC, O_ACCEPT_DIST, O_EMPTY_EVERY, O_EMPTY_FIRST,
	O_API_FRAME_US, O_ENGINE_FIELDS, O_ENGINE_FIELDS_BAD, O_FAIL_RATE, O_FAIL_KIND, O_TLS, O_TLS_CERT, O_TLS_KEY, O_TLS_MAX, O_GPU, O_GPU_LIB,
	O_GPU_DEVICE, O_METRICS_NAMES, O_METRICS_FAULT, O_KV_TOKENS, O_PERF_MAX, O_PERF_FAULT, O_HELP,
};

static const struct ls_opt opts[] = {
	{ "host", O_HOST, LS_ARG_ONE, "ADDR", "listen address (default 127.0.0.1)", "server" },
	{ "port", O_PORT, LS_ARG_ONE, "N", "listen port (default 8000)", NULL },
	{ "model", O_MODEL, LS_ARG_ONE, "NAME",
	  "model name served by /v1/models and echoed in frames (default latscope-sim)", NULL },
	{ "max-model-len", O_MAX_MODEL_LEN, LS_ARG_ONE, "N",
	  "prompt + max_tokens limit, else 400 (default 131072)", NULL },
	{ "max-conns", O_MAX_CONNS, LS_ARG_ONE, "N",
	  "connections held at once, more are closed (default: open-file limit - 64)", NULL },
	{ "max-header-bytes", O_MAX_HEADER, LS_ARG_ONE, "N", "request head limit, else 431 (default 16384)", NULL },
	{ "max-body-bytes", O_MAX_BODY, LS_ARG_ONE, "N", "request body limit, else 413 (default 16777216)", NULL },
	{ "truth", O_TRUTH, LS_ARG_ONE, "FILE",
	  "append one JSON line per generation request (ground truth, docs/sim.md)", NULL },
	{ "seed", O_SEED, LS_ARG_ONE, "N", "seed of every random choice (default 1)", NULL },
	{ "quiet", O_QUIET, LS_ARG_NONE, NULL, "no start/stop lines on stderr", NULL },
	{ "step-ms", O_STEP_MS, LS_ARG_ONE, "MS", "fixed time of every engine step (default 10)", "engine" },
	{ "decode-token-us", O_DECODE_US, LS_ARG_ONE, "US",
	  "+ per token a decoding request processes in a step, 1 + drafts (default 0)", NULL },
	{ "prefill-token-us", O_PREFILL_US, LS_ARG_ONE, "US",
	  "+ per prompt token prefilled in a step (default 10)", NULL },
	{ "max-batch", O_MAX_BATCH, LS_ARG_ONE, "N", "running requests at most; the rest wait (default 256)", NULL },
	{ "max-batch-tokens", O_MAX_BATCH_TOKENS, LS_ARG_ONE, "N",
	  "tokens per step at most: long prompts prefill in chunks (default 8192)", NULL },
	{ "prefix-cache", O_PREFIX_CACHE, LS_ARG_NONE, NULL,
	  "prompt blocks seen before cost no prefill (POST /flush_cache empties it)", NULL },
	{ "prefix-block", O_PREFIX_BLOCK, LS_ARG_ONE, "N", "tokens per prefix-cache block (default 16)", NULL },
	{ "accept-len", O_ACCEPT_LEN, LS_ARG_ONE, "A",
	  "speculative decoding: mean tokens per decode frame (default 1 = off)", NULL },
	{ "num-spec-tokens", O_NUM_SPEC, LS_ARG_ONE, "K", "drafts per decode step (default ceil(A) + 1)", NULL },
	{ "accept-dist", O_ACCEPT_DIST, LS_ARG_ONE, "D",
	  "geometric (each draft accepted with probability p until the first\n"
	  "rejection; p solves the mean A) or two-point (floor(A) or floor(A)+1)\n"
	  "(default geometric)", NULL },
	{ "empty-frame-every", O_EMPTY_EVERY, LS_ARG_ONE, "N",
	  "every Nth frame carries only special tokens with empty text (default 0 = never)", NULL },
	{ "empty-first-frame", O_EMPTY_FIRST, LS_ARG_NONE, NULL,
	  "the first token frame of every stream has empty text (a special token):\n"
	  "harnesses that gate TTFT on text start their clock one step later", NULL },
	{ "api-frame-us", O_API_FRAME_US, LS_ARG_ONE, "US",
	  "the API server's CPU per frame it writes, spent busy before the write\n"
	  "(a Python server's serialising + detokenising: tens of us), so one\n"
	  "step's frames leave at least US apart (default 0)", NULL },
	{ "engine-fields", O_ENGINE_FIELDS, LS_ARG_ONE, "FORMAT",
	  "the engine's own per-request account in its frames, from the sim's steps:\n"
	  "llama.cpp (\"timings\" on the last frame), sglang (meta_info timings),\n"
	  "vllm (\"metrics\" on the usage frame), trtllm (GET /perf_metrics: each\n"
	  "finished request's timing_metrics, emptied by each read) or none\n"
	  "(default none)", NULL },
	{ "engine-fields-bad", O_ENGINE_FIELDS_BAD, LS_ARG_ONE, "P",
	  "share of requests whose account values are malformed: a string, a\n"
	  "negative, NaN or a huge number, seeded per request (default 0)", NULL },
	{ "perf-metrics-max-requests", O_PERF_MAX, LS_ARG_ONE, "N",
	  "trtllm: GET /perf_metrics keeps the last N finished requests, the\n"
	  "older ones dropped, as TensorRT-LLM's perf_metrics_max_requests\n"
	  "(default 1000)", NULL },
	{ "perf-metrics-fault", O_PERF_FAULT, LS_ARG_ONE, "KIND",
	  "GET /perf_metrics misbehaves: hang (never answers), huge (a 10 MB\n"
	  "answer), garbage (200 with bytes that are not JSON) (default none)", NULL },
	{ "metrics-names", O_METRICS_NAMES, LS_ARG_ONE, "LIST",
	  "GET /metrics gives running, waiting and KV-use gauges under the names of\n"
	  "vllm, sglang, llama.cpp, tgi (comma list, or all) (default vllm)", "GET /metrics" },
	{ "metrics-fault", O_METRICS_FAULT, LS_ARG_ONE, "KIND",
	  "GET /metrics misbehaves: hang (never answers), huge (a 10 MB answer),\n"
	  "garbage (200 with bytes that are not Prometheus text) (default none)", NULL },
	{ "kv-tokens", O_KV_TOKENS, LS_ARG_ONE, "N",
	  "KV-cache size the use gauges report against: tokens held by running\n"
	  "requests (prompt + generated) / N; it limits nothing (default 65536)", NULL },
	{ "fail-rate", O_FAIL_RATE, LS_ARG_ONE, "P", "probability a generation request gets a fault (default 0)",
	  "faults (seeded, per request)" },
	{ "fail-kind", O_FAIL_KIND, LS_ARG_ONE, "LIST",
	  "comma list of http500, http429, http400-empty, http503-empty,\n"
	  "reset-before-headers, reset-mid-stream, stall, malformed-frame,\n"
	  "truncated-chunk, oversize-frame, bad-utf8, no-blank-line, endless-stream,\n"
	  "no-headers, close-after-accept (per connection); or mixed (all) (default mixed)", NULL },
	{ "tls", O_TLS, LS_ARG_NONE, NULL,
	  "serve HTTPS with a self-signed ECDSA P-256 certificate made at start", "TLS" },
	{ "tls-cert", O_TLS_CERT, LS_ARG_ONE, "FILE", "serve HTTPS with this PEM certificate (chain) ...", NULL },
	{ "tls-key", O_TLS_KEY, LS_ARG_ONE, "FILE", "... and this PEM key", NULL },
	{ "tls-max", O_TLS_MAX, LS_ARG_ONE, "V", "highest TLS version: 1.2 or 1.3 (default 1.3)", NULL },
	{ "gpu", O_GPU, LS_ARG_NONE, NULL,
	  "run each step's work on the GPU through liblatscope_simgpu.so", "GPU" },
	{ "gpu-lib", O_GPU_LIB, LS_ARG_ONE, "PATH",
	  "that library (default <dir of latscope>/gpu/liblatscope_simgpu.so)", NULL },
	{ "gpu-device", O_GPU_DEVICE, LS_ARG_ONE, "N", "CUDA device (default 0)", NULL },
	{ "help", O_HELP, LS_ARG_NONE, NULL, "this text", "other" },
	{ "h", O_HELP, LS_ARG_NONE, NULL, NULL, NULL },
};
#define N_OPTS (sizeof(opts) / sizeof(opts[0]))

const struct ls_opt *sim_opts(size_t *n)
{
	*n = N_OPTS;
	return opts;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: latscope sim [flags]\n\n"
		     "An OpenAI/SGLang-compatible streaming server that behaves like a continuous-batching engine\n"
		     "and writes per-request ground truth. One thread, epoll; SIGINT/SIGTERM exit cleanly.\n");
	ls_opt_help(out, opts, N_OPTS);
	fprintf(out, "\nexample: latscope sim --port 8000 --step-ms 10 --accept-len 3.5 --truth truth.jsonl\n");
}

/* An integer flag into an int or size_t field: 0, or -EINVAL with the field untouched. */
static int set_int(const char *v, uint64_t lo, uint64_t hi, int *dst)
{
	uint64_t u;
	if (ls_opt_parse_u64(v, lo, hi, &u))
		return -EINVAL;
	*dst = (int)u;
	return 0;
}

static int set_size(const char *v, uint64_t lo, uint64_t hi, size_t *dst)
{
	uint64_t u;
	if (ls_opt_parse_u64(v, lo, hi, &u))
		return -EINVAL;
	*dst = (size_t)u;
	return 0;
}

static const char *set_switch(const char *v, int *dst)
{
	return ls_opt_parse_bool(v, dst) ? "takes no value (or =true / =false)" : NULL;
}

/* The flags that shape the engine's steps and frames. NULL, or why the value is wrong. */
static const char *apply_engine(struct sim_config *cfg, const struct ls_opt *o, const char *v)
{
	switch (o->id) {
	case O_STEP_MS:
		return ls_opt_parse_double(v, 0, 60000, &cfg->step_ms) ? "must be milliseconds 0..60000" : NULL;
	case O_DECODE_US:
		return ls_opt_parse_double(v, 0, 1e6, &cfg->decode_token_us) ?
			"must be microseconds 0..1000000" : NULL;
	case O_PREFILL_US:
		return ls_opt_parse_double(v, 0, 1e6, &cfg->prefill_token_us) ?
			"must be microseconds 0..1000000" : NULL;
	case O_MAX_BATCH:
		return set_int(v, 1, 1 << 20, &cfg->max_batch) ? "must be an integer 1..1048576" : NULL;
	case O_MAX_BATCH_TOKENS:
		return set_int(v, 1, 1 << 30, &cfg->max_batch_tokens) ? "must be an integer 1..1073741824" : NULL;
	case O_PREFIX_CACHE:
		return set_switch(v, &cfg->prefix_cache);
	case O_PREFIX_BLOCK:
		return set_int(v, 1, 1 << 16, &cfg->prefix_block) ? "must be an integer 1..65536" : NULL;
	case O_ACCEPT_LEN:
		return ls_opt_parse_double(v, 1, 64, &cfg->accept_len) ? "must be a number 1..64" : NULL;
	case O_NUM_SPEC:
		return set_int(v, 0, 63, &cfg->num_spec_tokens) ? "must be an integer 0..63" : NULL;
	case O_ACCEPT_DIST:
		if (!strcmp(v, "geometric"))
			cfg->accept_dist = SIM_ACCEPT_GEOMETRIC;
		else if (!strcmp(v, "two-point"))
			cfg->accept_dist = SIM_ACCEPT_TWO_POINT;
		else
			return "must be geometric or two-point";
		return NULL;
	case O_EMPTY_EVERY:
		return set_int(v, 0, 1 << 30, &cfg->empty_frame_every) ?
			"must be an integer 0..1073741824" : NULL;
	case O_EMPTY_FIRST:
		return set_switch(v, &cfg->empty_first_frame);
	case O_ENGINE_FIELDS:
		return sim_engine_fields_parse(v, &cfg->engine_fields) ? "must be llama.cpp, sglang, vllm, trtllm or none" : NULL;
	case O_ENGINE_FIELDS_BAD:
		return ls_opt_parse_double(v, 0, 1, &cfg->engine_fields_bad) ? "must be a share 0..1" : NULL;
	case O_API_FRAME_US:
		return ls_opt_parse_double(v, 0, 1e5, &cfg->api_frame_us) ?
			"must be microseconds 0..100000" : NULL;
	}
	return "unknown option";
}

/* Applies one flag's value (v is "true" for a bare switch). NULL, or why the value is wrong. */
static const char *apply(void *ctx, const struct ls_opt *o, const char *v)
{
	struct sim_config *cfg = ctx;
	switch (o->id) {
	case O_HOST: cfg->host = v; return NULL;
	case O_PORT: return set_int(v, 1, 65535, &cfg->port) ? "must be a port 1-65535" : NULL;
	case O_MODEL: cfg->model = v; return NULL;
	case O_MAX_MODEL_LEN:
		return set_int(v, 2, 1 << 30, &cfg->max_model_len) ? "must be an integer 2..1073741824" : NULL;
	case O_MAX_CONNS:
		return set_int(v, 1, 1 << 24, &cfg->max_conns) ? "must be an integer 1..16777216" : NULL;
	case O_MAX_HEADER:
		return set_size(v, 256, 1 << 24, &cfg->max_header_bytes) ? "must be an integer 256..16777216" : NULL;
	case O_MAX_BODY:
		return set_size(v, 0, 1ull << 32, &cfg->max_body_bytes) ? "must be an integer 0..4294967296" : NULL;
	case O_TRUTH: cfg->truth_path = v; return NULL;
	case O_SEED: return ls_opt_parse_seed(v, &cfg->seed) ? "must be an unsigned integer" : NULL;
	case O_QUIET: return set_switch(v, &cfg->quiet);
	case O_FAIL_RATE: return ls_opt_parse_double(v, 0, 1, &cfg->fail_rate) ? "must be a probability 0..1" : NULL;
	case O_FAIL_KIND:
		return sim_fault_parse_kinds(v, &cfg->fail_kinds) ? "must be a comma list of fault kinds, or mixed" : NULL;
	case O_TLS: return set_switch(v, &cfg->tls);
	case O_TLS_CERT: cfg->tls_cert = v; return NULL;
	case O_TLS_KEY: cfg->tls_key = v; return NULL;
	case O_TLS_MAX:
		if (!strcmp(v, "1.2"))
			cfg->tls_max = 12;
		else if (!strcmp(v, "1.3"))
			cfg->tls_max = 13;
		else
			return "must be 1.2 or 1.3";
		return NULL;
	case O_GPU: return set_switch(v, &cfg->gpu);
	case O_GPU_LIB: cfg->gpu_lib = v; return NULL;
	case O_GPU_DEVICE:
		return set_int(v, 0, 1024, &cfg->gpu_device) ? "must be a device index 0..1024" : NULL;
	case O_METRICS_NAMES:
		return sim_metrics_parse_names(v, &cfg->metrics_names) ? "must be a comma list of vllm, sglang, llama.cpp, "
			"tgi, or all" : NULL;
	case O_METRICS_FAULT:
		return sim_metrics_parse_fault(v, &cfg->metrics_fault) ? "must be none, hang, huge or garbage" : NULL;
	case O_KV_TOKENS:
		return set_int(v, 1, 1 << 30, &cfg->kv_tokens) ? "must be an integer 1..1073741824" : NULL;
	case O_PERF_MAX:
		return set_int(v, 1, 1 << 24, &cfg->perf_metrics_max) ? "must be an integer 1..16777216" : NULL;
	case O_PERF_FAULT:
		return sim_metrics_parse_fault(v, &cfg->perf_metrics_fault) ? "must be none, hang, huge or garbage" : NULL;
	}
	return apply_engine(cfg, o, v);
}

/* What no single flag can check: pairs, and the speculative-decoding arithmetic. 0 or 2. */
static int check_combinations(struct sim_config *cfg)
{
	if (!!cfg->tls_cert != !!cfg->tls_key) {
		fprintf(stderr, "latscope sim: --tls-cert and --tls-key go together\n");
		return 2;
	}
	if (cfg->tls_cert)
		cfg->tls = 1;
	if (cfg->tls_max && !cfg->tls) {
		fprintf(stderr, "latscope sim: --tls-max needs --tls or --tls-cert/--tls-key\n");
		return 2;
	}
	if (cfg->num_spec_tokens < 0)
		cfg->num_spec_tokens = cfg->accept_len > 1.0 ? (int)ceil(cfg->accept_len) + 1 : 0;
	if (cfg->num_spec_tokens > 63)
		cfg->num_spec_tokens = 63;
	if (cfg->accept_len > cfg->num_spec_tokens + 1) {
		fprintf(stderr, "latscope sim: --accept-len %g needs --num-spec-tokens >= %d\n", cfg->accept_len,
			(int)ceil(cfg->accept_len) - 1);
		return 2;
	}
	int decode_cost = 1 + (cfg->accept_len > 1.0 ? cfg->num_spec_tokens : 0);
	if (cfg->max_batch_tokens < decode_cost) {
		fprintf(stderr, "latscope sim: --max-batch-tokens %d is below one decoding request's %d tokens\n",
			cfg->max_batch_tokens, decode_cost);
		return 2;
	}
	return 0;
}

/* Fills cfg from argv. 0 to run, 2 on a usage error, -1 after --help. */
static int parse_flags(int argc, char **argv, struct sim_config *cfg)
{
	*cfg = (struct sim_config){
		.host = "127.0.0.1", .port = 8000, .seed = 1, .model = "latscope-sim",
		.max_model_len = 131072, .step_ms = 10, .decode_token_us = 0, .prefill_token_us = 10,
		.max_batch = 256, .max_batch_tokens = 8192, .prefix_block = 16, .accept_len = 1,
		.num_spec_tokens = -1, .fail_kinds = 0, .max_header_bytes = 16384,
		.max_body_bytes = 16u << 20, .max_conns = -1, .metrics_names = 1u << SIM_MNAMES_VLLM,
		.kv_tokens = 65536, .perf_metrics_max = 1000,
	};
	if (sim_fault_parse_kinds("mixed", &cfg->fail_kinds))
		return 2;
	struct ls_opt_walk w;
	ls_opt_walk_init(&w, "latscope sim", opts, N_OPTS, argc, argv);
	const char *v;
	int step = ls_opt_flags(&w, O_HELP, apply, cfg, &v);
	if (step == LS_OPT_HELP) {
		usage(stdout);
		return -1;
	}
	if (step < 0)
		return 2;
	if (step == LS_OPT_ARG || w.i < argc) {
		fprintf(stderr, "latscope sim: unexpected argument '%s' (see latscope sim --help)\n",
			step == LS_OPT_ARG ? v : argv[w.i]);
		return 2;
	}
	return check_combinations(cfg);
}

int cmd_sim(int argc, char **argv)
{
	struct sim_config cfg;
	int rc = parse_flags(argc, argv, &cfg);
	if (rc == -1)
		return 0;
	if (rc)
		return rc;
	return sim_server_run(&cfg);
}
