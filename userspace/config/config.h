/* config.h — `latscope bench` settings: CLI flags named as `vllm bench serve` names them, a
 * JSON config file (--config FILE) with the same keys, and a profile's defaults.
 * Takes: argv (vLLM and SGLang flag names), a --config JSON file, a profile (config/profile.h).
 * Gives: struct ls_config: every stage's settings, filled; the profile's send and read rules.
 * Precedence: built-in defaults < profile < config file < flags. */
#ifndef LATSCOPE_CONFIG_H
#define LATSCOPE_CONFIG_H

#include <stdint.h>
#include <stdio.h>
#include "workload/arrival.h"
#include "driver/backend.h"
#include "workload/dataset.h"
#include "workload/dataset_peer.h"
#include "metrics/metrics.h"
#include "config/profile.h"
#include "config/config_peer.h"

enum ls_probes_mode {
	LS_PROBES_AUTO,
	LS_PROBES_ON,
	LS_PROBES_OFF,
};

#define LS_DEFAULT_VOCAB 32000
#define LS_MAX_SERVER_PIDS 16

struct ls_config {
	char    *backend_name;     /* --backend as the user gave it ("vllm"); NULL: the profile's */
	/* server (the backend is a send rule: profile.send) */
	char    *base_url;          /* NULL: http://host:port */
	char    *host;
	int      port;
	char    *endpoint;          /* NULL: the backend's default */
	char    *model;             /* NULL: the first of GET /v1/models */
	/* workload */
	enum ls_dataset_kind dataset;
	char    *dataset_path;
	char    *dataset_name;      /* --dataset-name as typed (NULL: the default); c->dataset is its kind */
	uint32_t random_input_len, random_output_len;
	double   random_range_ratio;
	uint32_t random_vocab_size; /* 0 = auto (ask the server, at most LS_DEFAULT_VOCAB) */
	uint32_t sharegpt_output_len; /* 0: from the gpt turn */
	size_t   num_prompts;
	/* sending (arrival, connection, warmups, ignore_eos, range semantics: profile.send) */
	double   request_rate;      /* inf = all at once */
	double   burstiness;
	uint32_t max_concurrency;   /* 0 = unlimited */
	uint64_t seed;
	uint64_t loop_delay_ns;     /* --test-loop-delay-us */
	int      http2;
	int      insecure;
	char    *cacert;
	double   request_timeout_s; /* 0 = none */
	double   ready_check_timeout_s;
	int      disable_tqdm;
	int      skip_initial_test; /* no test request before the run (vLLM always sends one) */
	int      busy_poll;         /* the loop spins instead of sleeping */
	uint32_t spin_us;           /* the loop spins this long before sleeping */
	uint32_t preconnect;        /* connections opened before the clock starts (0 = none) */
	uint32_t server_metrics_ms; /* poll the server's /metrics this often during the run (0 = off) */
	int      perf_metrics;      /* after the run, join TensorRT-LLM's GET /perf_metrics to the requests */
	/* results */
	unsigned percentile_metrics; /* LS_PM_* */
	struct ls_goodput goodput;
	int      save_result;
	char    *result_dir;
	char    *result_filename;
	char    *record_path;
	/* The profile, with the config file and flags over its rules: profile.send is what this
	 * run sends (--backend, --arrival, ...), profile.read its headline rules
	 * (--metric-percentiles). */
	char    *profile_name;
	struct ls_profile profile;
	unsigned send_set;          /* bit per send rule the config file or a flag set (config_opts.c) */
	char    *config_path;
	/* probes, attribution and GPU steps (bench_probes.c) */
	enum ls_probes_mode probes;
	int      server_pids[LS_MAX_SERVER_PIDS]; /* --server-pid, repeatable */
	uint32_t n_server_pids;
	char    *server_comm;
	char    *trace_path;
	char    *gpu_dir;
	/* the peers' datasets (config_datasets.c; built in cmd/bench_dataset.c) */
	struct ls_config_datasets {
		uint32_t input_len, output_len;       /* vLLM's --input-len / --output-len: 0 = unset */
		uint32_t random_prefix_len;
		int      disable_shuffle, no_oversample;
		struct ls_prefix_rep_opts prefix_rep; /* n, seed: from --num-prompts, --seed */
		struct ls_sonnet_opts sonnet;
		uint32_t custom_output_len;
		uint32_t spec_bench_output_len;
		char     spec_bench_category[64]; /* "": every category */
		struct ls_gsp_opts gsp;
		int      gsp_send_routing_key;
		int      gsp_zipf;                    /* --gsp-group-distribution zipf */
		double   gsp_zipf_alpha;
		struct ls_mooncake_opts mooncake;     /* n: --num-prompts */
		struct ls_timed_trace_opts timed_trace; /* n, vocab_size, as_text: bench's */
		char     timed_trace_labels[4][64];   /* --timed-trace-label-*: the fields' names */
		int      use_trace_timestamps;
		uint32_t sharegpt_context_len;        /* SGLang's filter, 0 = none */
		size_t   dataset_offset;
	} datasets;
	char    *html_path;         /* --html FILE (report/html.h) */
	/* the peers' request, server-control and output flags, and the harness (config_peer.h) */
	struct ls_peer_opts peer;
};

/* Parses argv (argv[0] is "bench"). Returns 0 ok, 1 when --help was printed (exit 0), or 2
 * after one line on stderr naming the bad flag, value or config key (exit 2). */
int ls_config_parse(struct ls_config *c, int argc, char **argv);
/* The same under a profile already loaded (--profile and the config file's "profile" are then
 * not read): `latscope compare` parses its flags once, for every profile it reads. */
int ls_config_parse_with(struct ls_config *c, int argc, char **argv, const struct ls_profile *p);
/* The send rules a run under profile p sends with c's config file and flags: p's, with every
 * rule they set taken from c (c->send_set). */
void ls_config_send_rules(const struct ls_config *c, const struct ls_profile *p, struct ls_send_rules *out);
/* Whether c's settings can run with these send rules (c's own: &c->profile.send). 0, or 2
 * after one line on stderr naming the flags that do not go together. */
int ls_config_check(const struct ls_config *c, const struct ls_send_rules *send);
void ls_config_free(struct ls_config *c);
void ls_config_help(FILE *out);

/* base_url + endpoint (malloc'd) and the server root (base_url or http://host:port, malloc'd). */
char *ls_config_url(const struct ls_config *c);
char *ls_config_base(const struct ls_config *c);

#endif
