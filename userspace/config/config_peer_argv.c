/* config_peer_argv.c — a peer's command line as latscope reads it: --harness, SGLang's
 * defaults and argparse's unique prefixes (--random-input 1024), vLLM's bare --profile (a
 * switch, not latscope's profile name), the flags out of scope (multimodal, audio, pooling,
 * embeddings), and --help grouped by tool. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config/config_int.h"
#include "config/config_peer.h"

#define PROG "latscope bench"

/* Flags and values of the peers that are not text generation: refused by name. */
static const struct {
	const char *what, *tool;
	const char *names[12];
} out_of_scope[] = {
	{ "multimodal", "vLLM", { "random-mm-base-items-per-request", "random-mm-num-mm-items-range-ratio",
				  "random-mm-limit-mm-per-prompt", "random-mm-bucket-config", NULL } },
	{ "pooling / reranking", "vLLM", { "no-reranker", NULL } },
	{ "multimodal / audio", "vLLM", { "enable-multimodal-chat", "custom-ensure-client-side-data", NULL } },
	{ "multimodal", "SGLang", { "image-count", "image-resolution", "random-image-count", "image-format",
				    "image-content", "random-image-num-images", "random-image-resolution", NULL } },
	{ "embedding", "SGLang", { "return-routed-experts", NULL } },
};
static const char *const out_of_scope_backends[] = {
	"openai-audio", "openai-embeddings", "openai-embeddings-chat", "openai-embeddings-clip",
	"openai-embeddings-vlm2vec", "infinity-embeddings", "infinity-embeddings-clip", "vllm-pooling",
	"vllm-rerank", "sglang-embedding", "vllm-embedding", NULL,
};
static const char *const out_of_scope_datasets[] = {
	"random-mm", "random-rerank", "custom_audio", "custom_image", "mmmu", "image", NULL,
};

/* 2 after a message when arg (a flag, maybe "--x=v") or its value is out of scope, else 0. */
static int refuse_out_of_scope(const char *flag, size_t len, const char *value)
{
	for (size_t g = 0; g < sizeof(out_of_scope) / sizeof(out_of_scope[0]); g++)
		for (const char *const *n = out_of_scope[g].names; *n; n++)
			if (strlen(*n) == len && !strncmp(*n, flag, len)) {
				fprintf(stderr, PROG ": --%s is a %s flag of %s: out of scope (latscope benchmarks text "
						"generation)\n", *n, out_of_scope[g].what, out_of_scope[g].tool);
				return 2;
			}
	int backend = len == 7 && !strncmp(flag, "backend", 7);
	int dataset = len == 12 && !strncmp(flag, "dataset-name", 12);
	const char *const *list = backend ? out_of_scope_backends : dataset ? out_of_scope_datasets : NULL;
	for (; value && list && *list; list++)
		if (!strcmp(*list, value)) {
			fprintf(stderr, PROG ": --%s %s is an audio, pooling, embedding or multimodal %s: out of scope "
					"(latscope benchmarks text generation)\n", backend ? "backend" : "dataset-name",
				value, backend ? "backend" : "dataset");
			return 2;
		}
	return 0;
}

static int own(struct ls_peer_argv *pa, char *s)
{
	char **grown = realloc(pa->owned, (pa->n_owned + 1) * sizeof(*grown));
	if (!grown || !s) {
		free(s);
		if (grown)
			pa->owned = grown;
		return -ENOMEM;
	}
	pa->owned = grown;
	pa->owned[pa->n_owned++] = s;
	return 0;
}

/* argparse's allow_abbrev (both peers' parsers): a unique prefix of one flag stands for it
 * (vLLM's recipes write --random-input 2048, SGLang's docstring --num-prompt 10). */
static const char *expand_prefix(struct ls_peer_argv *pa, const char *arg, size_t len)
{
	size_t n;
	const struct ls_opt *opts = ls_config_all_opts(&n), *hit = NULL;
	for (size_t i = 0; i < n; i++) {
		if (strlen(opts[i].name) < 2 || strncmp(opts[i].name, arg + 2, len))
			continue;
		if (strlen(opts[i].name) == len)
			return arg; /* exact */
		if (hit && hit->id != opts[i].id)
			return arg; /* ambiguous: the parser says so */
		hit = &opts[i];
	}
	char *full = NULL;
	if (!hit || asprintf(&full, "--%s%s", hit->name, arg + 2 + len) < 0 || own(pa, full))
		return arg;
	return full;
}

/* vLLM's FlexibleArgumentParser reads --num_prompts as --num-prompts. */
static const char *dashes(struct ls_peer_argv *pa, const char *arg, size_t len)
{
	char *copy = strdup(arg);
	if (!copy || own(pa, copy))
		return arg;
	for (size_t i = 2; i < 2 + len; i++)
		if (copy[i] == '_')
			copy[i] = '-';
	return copy;
}

/* One argument: returns the spelling latscope reads, NULL after a message (exit 2). */
static const char *rewrite(struct ls_peer_argv *pa, char **argv, int i, int argc)
{
	const char *a = argv[i];
	if (strncmp(a, "--", 2) || !a[2])
		return a;
	size_t len = strcspn(a + 2, "=");
	const char *value = a[2 + len] ? a + 3 + len : (i + 1 < argc ? argv[i + 1] : NULL);
	if (refuse_out_of_scope(a + 2, len, value))
		return NULL;
	if (pa->harness == LS_HARNESS_VLLM && memchr(a + 2, '_', len))
		a = dashes(pa, a, len);
	len = strcspn(a + 2, "=");
	a = expand_prefix(pa, a, len); /* both parsers are argparse's, abbreviations allowed */
	len = strcspn(a + 2, "=");
	if ((len == 4 && !strncmp(a + 2, "port", 4)) || (len == 8 && !strncmp(a + 2, "base-url", 8)))
		pa->port_given = 1;
	if (len == 12 && !strncmp(a + 2, "request-rate", 12))
		pa->request_rate_set = 1;
	if (len == 7 && !strncmp(a + 2, "backend", 7))
		pa->backend = value;
	if (len == 7 && !strncmp(a + 2, "profile", 7)) {
		const char *v = a[9] == '=' ? a + 10 : NULL;
		int bare = !v && (pa->harness == LS_HARNESS_SGLANG || !value || !strncmp(value, "--", 2));
		if (bare || (v && (!strcmp(v, "true") || !strcmp(v, "false"))))
			return v && !strcmp(v, "false") ? "--server-profile=false" : "--server-profile";
		pa->profile_named = 1;
	}
	if ((len == 5 && !strncmp(a + 2, "rules", 5)))
		pa->profile_named = 1;
	return a;
}

static int parse_harness(const char *v, enum ls_harness *h)
{
	if (v && !strcmp(v, "vllm"))
		*h = LS_HARNESS_VLLM;
	else if (v && !strcmp(v, "sglang"))
		*h = LS_HARNESS_SGLANG;
	else {
		fprintf(stderr, PROG ": --harness '%s' must be vllm or sglang\n", v ? v : "");
		return 2;
	}
	return 0;
}

/* --harness NAME (or =NAME), anywhere: taken out first, it decides how the rest reads. */
static int take_harness(struct ls_peer_argv *pa, int argc, char **argv, char *skip)
{
	for (int i = 1; i < argc; i++) {
		const char *v = NULL;
		if (!strcmp(argv[i], "--harness")) {
			v = i + 1 < argc ? argv[i + 1] : NULL;
			skip[i] = 1;
			if (i + 1 < argc)
				skip[++i] = 1;
		} else if (!strncmp(argv[i], "--harness=", 10)) {
			v = argv[i] + 10;
			skip[i] = 1;
		} else {
			continue;
		}
		if (parse_harness(v, &pa->harness))
			return 2;
	}
	return 0;
}

int ls_config_peer_argv(struct ls_peer_argv *pa, int argc, char **argv)
{
	memset(pa, 0, sizeof(*pa));
	char *skip = calloc((size_t)argc + 1, 1);
	pa->argv = calloc((size_t)argc + 3, sizeof(*pa->argv));
	if (!skip || !pa->argv) {
		free(skip);
		fprintf(stderr, PROG ": out of memory reading the command line\n");
		return 2;
	}
	int rc = take_harness(pa, argc, argv, skip);
	pa->argv[pa->argc++] = argc ? argv[0] : (char *)"bench";
	for (int i = 1; !rc && i < argc; i++) {
		if (skip[i])
			continue;
		const char *a = rewrite(pa, argv, i, argc);
		if (!a)
			rc = 2;
		pa->argv[pa->argc++] = (char *)a;
	}
	/* SGLang's rules follow its backend: /generate or an OpenAI API. */
	if (!rc && pa->harness == LS_HARNESS_SGLANG && !pa->profile_named) {
		const char *b = pa->backend;
		int oai = b && (strstr(b, "oai") || strstr(b, "chat") || !strcmp(b, "vllm") || !strcmp(b, "lmdeploy"));
		pa->argv[pa->argc++] = (char *)"--rules";
		pa->argv[pa->argc++] = (char *)(oai ? "sglang-oai" : "sglang");
	}
	free(skip);
	return rc;
}

void ls_config_peer_argv_free(struct ls_peer_argv *pa)
{
	for (size_t i = 0; i < pa->n_owned; i++)
		free(pa->owned[i]);
	free(pa->owned);
	free(pa->argv);
	memset(pa, 0, sizeof(*pa));
}

void ls_config_peer_defaults(struct ls_config *c, const struct ls_peer_argv *pa)
{
	struct ls_peer_opts *p = &c->peer;
	memset(p, 0, sizeof(*p));
	ls_request_extra_init(&p->req);
	p->harness = pa->harness;
	p->port_given = pa->port_given;
	p->request_rate_set = pa->request_rate_set;
	p->profile_start_step = p->profile_steps = p->profile_num_steps = -1;
	if (pa->harness != LS_HARNESS_SGLANG)
		return;
	/* python/sglang/benchmark/serving.py cli_main's defaults where they differ from vLLM's */
	c->dataset = LS_DATASET_SHAREGPT;
	c->random_output_len = 1024;
	c->seed = 42;
	c->ready_check_timeout_s = 60;
}

/* SGLang's port per backend (run_benchmark), when neither --port nor --base-url was given. */
int ls_config_peer_port(const struct ls_config *c)
{
	const char *b = c->backend_name ? c->backend_name : "sglang";
	if (c->peer.harness != LS_HARNESS_SGLANG || c->peer.port_given)
		return c->port;
	if (!strcmp(b, "lmdeploy"))
		return 23333;
	if (!strcmp(b, "vllm") || !strcmp(b, "trt") || !strcmp(b, "vllm-embedding"))
		return 8000;
	if (!strcmp(b, "truss"))
		return 8080;
	return 30000;
}

/* --help's groups: which tool a flag comes from (by name; the rest is latscope's own). */
static const char *const shared_names[] = {
	"backend", "base-url", "host", "port", "model", "dataset-name", "dataset-path", "num-prompts",
	"random-input-len", "random-output-len", "random-range-ratio", "sharegpt-output-len", "request-rate",
	"max-concurrency", "seed", "disable-tqdm", "ready-check-timeout-sec", "tokenizer", "served-model-name",
	"header", "temperature", "top-p", "server-profile", "harness", NULL,
};
static const char *const vllm_names[] = {
	"endpoint", "burstiness", "num-warmups", "ignore-eos", "percentile-metrics", "metric-percentiles",
	"goodput", "save-result", "result-dir", "result-filename", "insecure", "tokenizer-mode",
	"trust-remote-code", "skip-tokenizer-init", "extra-body", "top-k", "min-p", "frequency-penalty",
	"presence-penalty", "repetition-penalty", "logprobs", "use-beam-search", "request-id-prefix",
	"ramp-up-", "probe-request-rate", "save-detailed", "append-result", "metadata", "label", "plot-timeline",
	"timeline-itl-thresholds", "plot-dataset-stats", "no-stream", "skip-chat-template", "custom-skip-chat-template", "endpoint-type", "lora-modules", "lora-assignment",
	"input-len", "output-len", "random-prefix-len", "random-batch-size", "prefix-repetition-", "sonnet-",
	"custom-output-len", "spec-bench-", "disable-shuffle", "no-oversample", "self-timed", "no-self-timed",
	"timed-trace-", NULL,
};
static const char *const sglang_names[] = {
	"warmup-requests", "output-file", "output-details", "flush-cache", "disable-stream", "disable-ignore-eos",
	"extra-request-body", "apply-chat-template", "return-logprob", "top-logprobs-num", "logprob-start-len",
	"prompt-suffix", "tokenize-prompt", "lora-name", "pd-separated", "lora-request-distribution", "lora-zipf-alpha", "tag", "print-requests", "plot-throughput", "profile-",
	"sharegpt-context-len", "dataset-offset", "use-trace-timestamps", "gsp-", "mooncake-", NULL,
};

/* Whether name is in list (an entry ending in '-' is a prefix). */
static int named(const char *const *list, const char *name)
{
	for (; *list; list++) {
		size_t n = strlen(*list);
		if ((*list)[n - 1] == '-' ? !strncmp(name, *list, n) : !strcmp(name, *list))
			return 1;
	}
	return 0;
}

void ls_config_help_grouped(FILE *out, const struct ls_opt *opts, size_t n)
{
	static const char *const titles[] = {
		"shared: vllm bench serve and sglang.bench_serving both take these, meaning the same",
		"vllm bench serve", "sglang.bench_serving (python -m sglang.bench_serving)", "latscope's own",
	};
	struct ls_opt *g = malloc(n * sizeof(*g));
	if (!g)
		return;
	for (int t = 0; t < 4; t++) {
		size_t k = 0;
		for (size_t i = 0; i < n; i++) {
			const char *name = opts[i].name;
			if (strlen(name) == 1) { /* a short form follows its long one's group */
				for (size_t j = 0; j < n; j++)
					if (opts[j].id == opts[i].id && strlen(opts[j].name) > 1)
						name = opts[j].name;
			}
			int tool = named(shared_names, name) ? 0 : named(vllm_names, name) ? 1
				   : named(sglang_names, name) ? 2 : 3;
			if (tool != t || (opts[i].id == O_PROFILE && strcmp(opts[i].name, "rules") && t != 3))
				continue;
			g[k] = opts[i];
			g[k].group = k ? NULL : titles[t];
			k++;
		}
		ls_opt_help(out, g, k);
	}
	free(g);
}
