/* report.h — a run's results for people (the text block) and for tools (--save-result JSON).
 * Takes: struct ls_metrics, ls_checks, ls_attribution, GPU steps, compare columns, what the run was.
 * Gives: the text block, --save-result JSON, per-request JSONL (record_file.h), the Perfetto trace.
 * Both read struct ls_metrics (metrics.h) plus what the run was; neither computes a metric. */
#ifndef LATSCOPE_REPORT_H
#define LATSCOPE_REPORT_H

#include <stdint.h>
#include <stdio.h>
#include "metrics/checks.h"
#include "metrics/metrics.h"
#include "config/profile.h"
#include "base/record.h"
#include "server/specdecode.h"
#include "attribution/attribution.h"
#include "attribution/gpu_steps.h"
#include "report/peer_report.h"

/* What the run was (for labels and the JSON's vLLM header keys). Strings may be NULL. */
struct ls_report_ctx {
	const char *profile;          /* profile name */
	const char *profile_source;   /* "built-in" or a path */
	const char *backend;
	const char *model;
	const char *base_url;
	const char *endpoint;
	const char *dataset;
	const char *arrival;
	const char *date;             /* YYYYmmdd-HHMMSS */
	const char *run_tag;
	const char *record_path;
	double      request_rate;     /* inf when unpaced */
	double      burstiness;
	uint32_t    max_concurrency;  /* 0 = unlimited */
	size_t      num_prompts;
	unsigned    percentile_metrics; /* LS_PM_* (metrics/metrics.h) */
	int         show_client_queue;  /* vLLM's client queue blocks (when max_concurrency) */
	int         interrupted;
	/* The server stopped accepting connections mid-run (ls_run.server_gone_ns): when, from the
	 * run's start, and how many requests failed to connect from then on. */
	int         server_gone;
	double      server_gone_at_s;
	size_t      n_connect_failed_gone;
	const struct ls_spec_stats *spec; /* NULL or !has: no spec-decode block */
	const struct ls_checks *checks;   /* NULL: none; the JSON carries them, the text caller prints them last */
	enum ls_report_layout layout;     /* whose result block the text copies */
	const char *profile_description;
	const struct ls_peer_report *peer; /* NULL: none of the peers' output flags (peer_report.h) */
};

/* The block `vllm bench serve` prints (or sglang.bench_serving's, by ctx->layout; same
 * labels where the meaning matches), then latscope's lines: clocks, slot wait, TTFT/E2EL
 * from every clock, both ITLs, tokens per frame, failures by reason. */
void ls_report_text(FILE *out, const struct ls_metrics *m, const struct ls_report_ctx *ctx);

/* vLLM's result-file keys for the shared metrics plus a "latscope" object; run gives the
 * per-request error strings. 0 or -errno (message names the path). */
int ls_report_json_write(const char *path, const struct ls_metrics *m, const struct ls_run *run,
			 const struct ls_report_ctx *ctx);
/* The same JSON as a malloc'd string (NULL on ENOMEM). */
char *ls_report_json(const struct ls_metrics *m, const struct ls_run *run, const struct ls_report_ctx *ctx);

/* The sections that stages own the data of, printed here. */
/* The report section "Where the latency went": p50/p90/p99 of every part for TTFT, ITL and
 * E2EL over measured requests, each part's share of the total, and what is missing and why. */
void ls_attribution_print(FILE *out, const struct ls_attribution *a);

/* The GPU steps section: steps, step times, busy share, idle gaps, losses, per-process state. */
void ls_gpu_report_print(FILE *out, const struct ls_gpu_steps *gs, uint64_t from_ns,
			 uint64_t to_ns);

/* The block that ends every report. */
void ls_checks_print(FILE *out, const struct ls_checks *c);

#endif
