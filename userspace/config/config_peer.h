/* config_peer.h — the peers' command lines: the flags of `vllm bench serve` and SGLang's
 * bench_serving that shape requests, headers, server controls and output files, and the
 * harness whose spellings and defaults a command line follows (--harness vllm|sglang).
 * Options live in their own table (config_peer.c), joined to config_opts.c's for parsing and
 * --help (grouped by tool). */
#ifndef LATSCOPE_CONFIG_PEER_H
#define LATSCOPE_CONFIG_PEER_H

#include <stdio.h>
#include "driver/request_extra.h"
#include "workload/ramp.h"
#include "base/opts.h"

enum ls_harness {
	LS_HARNESS_VLLM,   /* `vllm bench serve` (the default) */
	LS_HARNESS_SGLANG, /* `python -m sglang.bench_serving` / sglang.benchmark.serving */
};

struct ls_peer_opts {
	enum ls_harness harness;
	struct ls_request_extra req;  /* body and headers (driver/request_extra.h) */
	enum ls_ramp ramp;            /* vLLM --ramp-up-strategy */
	double   ramp_start_rps, ramp_end_rps;
	int      ramp_start_set, ramp_end_set;
	int      request_rate_set;    /* --request-rate was given (vLLM refuses it with a ramp) */
	int      server_profile;      /* --profile as vLLM and SGLang mean it: /start_profile, /stop_profile */
	int      flush_cache;         /* SGLang --flush-cache: POST /flush_cache before the run */
	/* SGLang's --profile-* (the /start_profile body) */
	char    *profile_activities, *profile_stages, *profile_output_dir, *profile_prefix; /* lists: commas */
	long     profile_start_step, profile_steps, profile_num_steps; /* -1: not given */
	int      profile_by_stage;
	int      pd_separated;        /* SGLang --pd-separated: --profile goes to the workers below */
	char   **prefill_urls, **decode_urls; /* SGLang --profile-prefill-url / --profile-decode-url */
	size_t   n_prefill_urls, n_decode_urls;
	/* output files */
	int      save_detailed, append_result;
	char    *label, *tag;
	char   **metadata;            /* "KEY=VALUE" per --metadata */
	size_t   n_metadata;
	char    *output_file;         /* SGLang's JSONL; NULL: its default name under --harness sglang */
	int      output_details;
	int      print_requests, plot_throughput, plot_timeline;
	unsigned notes;               /* bit per accepted flag that only prints what latscope does */
	int      port_given;          /* --port or --base-url on the command line */
	int      lora_skewed, lora_distinct; /* SGLang --lora-request-distribution skewed / distinct */
	double   lora_zipf_alpha;     /* SGLang --lora-zipf-alpha (0: not given) */
	double   probe_request_rate;  /* vLLM --probe-request-rate: probes per second (0: none) */
	int      percentile_metrics_set; /* --percentile-metrics given (else vLLM's: ttft,tpot,itl) */
};

/* Ids of the options in config_peer.c's table start here (config_int.h's enum stays below). */
#define LS_PEER_OPT_FIRST 1000

/* The argv a command line means under its harness (--harness taken out, SGLang's unique
 * prefixes spelled out, vLLM's bare --profile renamed) and what was learnt on the way. */
struct ls_peer_argv {
	int      argc;
	char   **argv;      /* malloc'd array; entries point into the given argv or into `owned` */
	char   **owned;
	size_t   n_owned;
	enum ls_harness harness;
	int      port_given;
	int      request_rate_set;
	int      profile_named; /* --rules NAME or --profile NAME chose the profile */
	const char *backend; /* --backend's value, NULL when not given */
};

/* Rewrites argv. 0, or 2 after one line on stderr (an out-of-scope flag or value, a bad
 * --harness). */
int ls_config_peer_argv(struct ls_peer_argv *pa, int argc, char **argv);
void ls_config_peer_argv_free(struct ls_peer_argv *pa);

/* The option tables joined (config_opts.c's, then config_peer.c's). */
const struct ls_opt *ls_config_all_opts(size_t *n);
/* config_peer.c's table. */
extern const struct ls_opt ls_config_peer_opts[];
extern const size_t ls_config_peer_n_opts;

struct ls_config;
/* The harness's defaults, before the profile, the file and the flags. */
void ls_config_peer_defaults(struct ls_config *c, const struct ls_peer_argv *pa);
/* Applies one of config_peer.c's options. NULL, or why the value is wrong. */
const char *ls_config_peer_apply(struct ls_config *c, int id, const char *v);
/* After every flag: the checks across flags, the harness's port, one line per accepted flag
 * that latscope does differently. 0 or 2 after a message. */
int ls_config_peer_finish(struct ls_config *c);
void ls_config_peer_free(struct ls_peer_opts *p);
/* A list flag (--metadata, --header, --lora-modules, ...) on the command line again: both peers'
 * argparse stores nargs lists, so the last flag's values replace what came before. */
void ls_config_peer_list_begins(struct ls_config *c, int id);
/* The port: SGLang's per backend under --harness sglang without --port or --base-url. */
int ls_config_peer_port(const struct ls_config *c);

/* --help: the flags grouped by tool (shared, vLLM, SGLang, latscope's own). */
void ls_config_help_grouped(FILE *out, const struct ls_opt *opts, size_t n);

#endif
