/* sim/sim_main.c — `latscope sim`: flags and --help, then the server loop (sim_server.c). */
#include <getopt.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "commands.h"
#include "sim/sim.h"

static void usage(FILE *out)
{
	fprintf(out,
"usage: latscope sim [flags]\n"
"\n"
"An OpenAI/SGLang-compatible streaming server that behaves like a continuous-batching engine\n"
"and writes per-request ground truth. One thread, epoll; SIGINT/SIGTERM exit cleanly.\n"
"\n"
"server:\n"
"  --host ADDR              listen address (default 127.0.0.1)\n"
"  --port N                 listen port (default 8000)\n"
"  --model NAME             model name served by /v1/models and echoed in frames (default latscope-sim)\n"
"  --max-model-len N        prompt + max_tokens limit, else 400 (default 131072)\n"
"  --max-conns N            connections held at once, more are closed (default: open-file limit - 64)\n"
"  --max-header-bytes N     request head limit, else 431 (default 16384)\n"
"  --max-body-bytes N       request body limit, else 413 (default 16777216)\n"
"  --truth FILE             append one JSON line per generation request (ground truth, README `sim`)\n"
"  --seed N                 seed of every random choice (default 1)\n"
"  --quiet                  no start/stop lines on stderr\n"
"engine:\n"
"  --step-ms MS             fixed time of every engine step (default 10)\n"
"  --decode-token-us US     + per token a decoding request processes in a step, 1 + drafts (default 0)\n"
"  --prefill-token-us US    + per prompt token prefilled in a step (default 10)\n"
"  --max-batch N            running requests at most; the rest wait (default 256)\n"
"  --max-batch-tokens N     tokens per step at most: long prompts prefill in chunks (default 8192)\n"
"  --prefix-cache           prompt blocks seen before cost no prefill (POST /flush_cache empties it)\n"
"  --prefix-block N         tokens per prefix-cache block (default 16)\n"
"  --accept-len A           speculative decoding: mean tokens per decode frame (default 1 = off)\n"
"  --num-spec-tokens K      drafts per decode step (default ceil(A) + 1)\n"
"  --accept-dist D          geometric (each draft accepted with probability p until the first\n"
"                           rejection; p solves the mean A) or two-point (floor(A) or floor(A)+1)\n"
"                           (default geometric)\n"
"  --empty-frame-every N    every Nth frame carries only special tokens with empty text (default 0 = never)\n"
"  --empty-first-frame      the first token frame of every stream has empty text (a special token):\n"
"                           harnesses that gate TTFT on text start their clock one step later\n"
"  --api-frame-us US        the API server's CPU per frame it writes, spent busy before the write\n"
"                           (a Python server's serialising + detokenising: tens of us), so one\n"
"                           step's frames leave at least US apart (default 0)\n"
"faults (seeded, per request):\n"
"  --fail-rate P            probability a generation request gets a fault (default 0)\n"
"  --fail-kind LIST         comma list of http500, http429, http400-empty, http503-empty,\n"
"                           reset-before-headers, reset-mid-stream, stall, malformed-frame,\n"
"                           truncated-chunk, oversize-frame, bad-utf8, no-blank-line, endless-stream,\n"
"                           no-headers, close-after-accept (per connection); or mixed (all) (default mixed)\n"
"TLS:\n"
"  --tls                    serve HTTPS with a self-signed ECDSA P-256 certificate made at start\n"
"  --tls-cert FILE          serve HTTPS with this PEM certificate (chain) ...\n"
"  --tls-key FILE           ... and this PEM key\n"
"  --tls-max V              highest TLS version: 1.2 or 1.3 (default 1.3)\n"
"GPU:\n"
"  --gpu                    run each step's work on the GPU through liblatscope_simgpu.so\n"
"  --gpu-lib PATH           that library (default <dir of latscope>/gpu/liblatscope_simgpu.so)\n"
"  --gpu-device N           CUDA device (default 0)\n"
"  -h, --help               this text\n"
"\n"
"example: latscope sim --port 8000 --step-ms 10 --accept-len 3.5 --truth truth.jsonl\n");
}

enum {
	O_HOST = 1000, O_PORT, O_MODEL, O_MAX_MODEL_LEN, O_MAX_CONNS, O_MAX_HEADER, O_MAX_BODY, O_TRUTH,
	O_SEED, O_QUIET, O_STEP_MS, O_DECODE_US, O_PREFILL_US, O_MAX_BATCH, O_MAX_BATCH_TOKENS,
	O_PREFIX_CACHE, O_PREFIX_BLOCK, O_ACCEPT_LEN, O_NUM_SPEC, O_ACCEPT_DIST, O_EMPTY_EVERY, O_EMPTY_FIRST, O_API_FRAME_US,
	O_FAIL_RATE, O_FAIL_KIND, O_TLS, O_TLS_CERT, O_TLS_KEY, O_TLS_MAX, O_GPU, O_GPU_LIB, O_GPU_DEVICE,
};

static const struct option options[] = {
	{ "host", required_argument, NULL, O_HOST },
	{ "port", required_argument, NULL, O_PORT },
	{ "model", required_argument, NULL, O_MODEL },
	{ "max-model-len", required_argument, NULL, O_MAX_MODEL_LEN },
	{ "max-conns", required_argument, NULL, O_MAX_CONNS },
	{ "max-header-bytes", required_argument, NULL, O_MAX_HEADER },
	{ "max-body-bytes", required_argument, NULL, O_MAX_BODY },
	{ "truth", required_argument, NULL, O_TRUTH },
	{ "seed", required_argument, NULL, O_SEED },
	{ "quiet", no_argument, NULL, O_QUIET },
	{ "step-ms", required_argument, NULL, O_STEP_MS },
	{ "decode-token-us", required_argument, NULL, O_DECODE_US },
	{ "prefill-token-us", required_argument, NULL, O_PREFILL_US },
	{ "max-batch", required_argument, NULL, O_MAX_BATCH },
	{ "max-batch-tokens", required_argument, NULL, O_MAX_BATCH_TOKENS },
	{ "prefix-cache", no_argument, NULL, O_PREFIX_CACHE },
	{ "prefix-block", required_argument, NULL, O_PREFIX_BLOCK },
	{ "accept-len", required_argument, NULL, O_ACCEPT_LEN },
	{ "num-spec-tokens", required_argument, NULL, O_NUM_SPEC },
	{ "accept-dist", required_argument, NULL, O_ACCEPT_DIST },
	{ "empty-frame-every", required_argument, NULL, O_EMPTY_EVERY },
	{ "empty-first-frame", no_argument, NULL, O_EMPTY_FIRST },
	{ "api-frame-us", required_argument, NULL, O_API_FRAME_US },
	{ "fail-rate", required_argument, NULL, O_FAIL_RATE },
	{ "fail-kind", required_argument, NULL, O_FAIL_KIND },
	{ "tls", no_argument, NULL, O_TLS },
	{ "tls-cert", required_argument, NULL, O_TLS_CERT },
	{ "tls-key", required_argument, NULL, O_TLS_KEY },
	{ "tls-max", required_argument, NULL, O_TLS_MAX },
	{ "gpu", no_argument, NULL, O_GPU },
	{ "gpu-lib", required_argument, NULL, O_GPU_LIB },
	{ "gpu-device", required_argument, NULL, O_GPU_DEVICE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int bad_flag(const char *flag, const char *val, const char *want)
{
	fprintf(stderr, "latscope sim: --%s: expected %s, got '%s' (see latscope sim --help)\n", flag, want, val);
	return 2;
}

static int parse_num(const char *s, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int parse_int(const char *s, long long lo, long long hi, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
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
		.max_body_bytes = 16u << 20, .max_conns = -1,
	};
	const char *fail_kind = "mixed";
	opterr = 0;
	optind = 1;
	int opt;
	while ((opt = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
		const char *name = NULL;
		for (const struct option *o = options; o->name; o++)
			if (o->val == opt)
				name = o->name;
		long long i;
		switch (opt) {
		case 'h':
			usage(stdout);
			return -1;
		case '?':
			fprintf(stderr, "latscope sim: unknown flag '%s' (see latscope sim --help)\n", argv[optind - 1]);
			return 2;
		case ':':
			fprintf(stderr, "latscope sim: %s needs a value (see latscope sim --help)\n", argv[optind - 1]);
			return 2;
		case O_HOST: cfg->host = optarg; break;
		case O_PORT:
			if (parse_int(optarg, 1, 65535, &i))
				return bad_flag(name, optarg, "a port 1-65535");
			cfg->port = (int)i;
			break;
		case O_MODEL: cfg->model = optarg; break;
		case O_MAX_MODEL_LEN:
			if (parse_int(optarg, 2, 1 << 30, &i))
				return bad_flag(name, optarg, "an integer >= 2");
			cfg->max_model_len = (int)i;
			break;
		case O_MAX_CONNS:
			if (parse_int(optarg, 1, 1 << 24, &i))
				return bad_flag(name, optarg, "an integer >= 1");
			cfg->max_conns = (int)i;
			break;
		case O_MAX_HEADER:
			if (parse_int(optarg, 256, 1 << 24, &i))
				return bad_flag(name, optarg, "an integer 256..16777216");
			cfg->max_header_bytes = (size_t)i;
			break;
		case O_MAX_BODY:
			if (parse_int(optarg, 0, 1ll << 32, &i))
				return bad_flag(name, optarg, "an integer 0..4294967296");
			cfg->max_body_bytes = (size_t)i;
			break;
		case O_TRUTH: cfg->truth_path = optarg; break;
		case O_SEED: {
			char *end;
			errno = 0;
			unsigned long long s = strtoull(optarg, &end, 0);
			if (errno || end == optarg || *end || optarg[0] == '-')
				return bad_flag(name, optarg, "an unsigned integer");
			cfg->seed = s;
			break;
		}
		case O_QUIET: cfg->quiet = 1; break;
		case O_STEP_MS:
			if (parse_num(optarg, 0, 60000, &cfg->step_ms))
				return bad_flag(name, optarg, "milliseconds 0..60000");
			break;
		case O_DECODE_US:
			if (parse_num(optarg, 0, 1e6, &cfg->decode_token_us))
				return bad_flag(name, optarg, "microseconds 0..1000000");
			break;
		case O_PREFILL_US:
			if (parse_num(optarg, 0, 1e6, &cfg->prefill_token_us))
				return bad_flag(name, optarg, "microseconds 0..1000000");
			break;
		case O_MAX_BATCH:
			if (parse_int(optarg, 1, 1 << 20, &i))
				return bad_flag(name, optarg, "an integer >= 1");
			cfg->max_batch = (int)i;
			break;
		case O_MAX_BATCH_TOKENS:
			if (parse_int(optarg, 1, 1 << 30, &i))
				return bad_flag(name, optarg, "an integer >= 1");
			cfg->max_batch_tokens = (int)i;
			break;
		case O_PREFIX_CACHE: cfg->prefix_cache = 1; break;
		case O_PREFIX_BLOCK:
			if (parse_int(optarg, 1, 1 << 16, &i))
				return bad_flag(name, optarg, "an integer >= 1");
			cfg->prefix_block = (int)i;
			break;
		case O_ACCEPT_LEN:
			if (parse_num(optarg, 1, 64, &cfg->accept_len))
				return bad_flag(name, optarg, "a number 1..64");
			break;
		case O_NUM_SPEC:
			if (parse_int(optarg, 0, 63, &i))
				return bad_flag(name, optarg, "an integer 0..63");
			cfg->num_spec_tokens = (int)i;
			break;
		case O_ACCEPT_DIST:
			if (!strcmp(optarg, "geometric"))
				cfg->accept_dist = SIM_ACCEPT_GEOMETRIC;
			else if (!strcmp(optarg, "two-point"))
				cfg->accept_dist = SIM_ACCEPT_TWO_POINT;
			else
				return bad_flag(name, optarg, "geometric or two-point");
			break;
		case O_EMPTY_EVERY:
			if (parse_int(optarg, 0, 1 << 30, &i))
				return bad_flag(name, optarg, "an integer >= 0");
			cfg->empty_frame_every = (int)i;
			break;
		case O_EMPTY_FIRST:
			cfg->empty_first_frame = 1;
			break;
		case O_API_FRAME_US:
			if (parse_num(optarg, 0, 1e5, &cfg->api_frame_us))
				return bad_flag(name, optarg, "microseconds 0..100000");
			break;
		case O_FAIL_RATE:
			if (parse_num(optarg, 0, 1, &cfg->fail_rate))
				return bad_flag(name, optarg, "a probability 0..1");
			break;
		case O_FAIL_KIND: fail_kind = optarg; break;
		case O_TLS: cfg->tls = 1; break;
		case O_TLS_CERT: cfg->tls_cert = optarg; break;
		case O_TLS_KEY: cfg->tls_key = optarg; break;
		case O_TLS_MAX:
			if (!strcmp(optarg, "1.2"))
				cfg->tls_max = 12;
			else if (!strcmp(optarg, "1.3"))
				cfg->tls_max = 13;
			else
				return bad_flag(name, optarg, "1.2 or 1.3");
			break;
		case O_GPU: cfg->gpu = 1; break;
		case O_GPU_LIB: cfg->gpu_lib = optarg; break;
		case O_GPU_DEVICE:
			if (parse_int(optarg, 0, 1024, &i))
				return bad_flag(name, optarg, "a device index >= 0");
			cfg->gpu_device = (int)i;
			break;
		default:
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "latscope sim: unexpected argument '%s' (see latscope sim --help)\n", argv[optind]);
		return 2;
	}
	if (sim_fault_parse_kinds(fail_kind, &cfg->fail_kinds))
		return bad_flag("fail-kind", fail_kind, "a comma list of fault kinds, or mixed");
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
