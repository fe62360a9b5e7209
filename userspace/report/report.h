/* report.h — a run's results for people (the text block) and for tools (--save-result JSON).
 * Takes: struct ls_metrics, ls_checks, ls_attribution, GPU steps, compare columns, what the run was.
 * Gives: the text block, --save-result JSON, per-request JSONL (record_file.h), the Perfetto trace,
 * the --html page (html.h).
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
#include "server/metrics_poll.h"
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
	/* --preconnect (ls_run.n_preconnected): connections opened before the clock, in how long. */
	int         preconnected;
	uint32_t    n_preconnected;
	double      preconnect_ms;
	const struct ls_spec_stats *spec; /* NULL or !has: no spec-decode block */
	const struct ls_gauge_series *gauges; /* NULL or !on: no server /metrics block */
	uint64_t    run_start_ns;         /* the run's start (the gauges' peak times count from it) */
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
/* The same JSON as a cJSON tree (caller deletes it; NULL on ENOMEM): the HTML page reads every
 * number it shows from this tree, so page and file cannot disagree. */
struct cJSON;
struct cJSON *ls_report_json_tree(const struct ls_metrics *m, const struct ls_run *run, const struct ls_report_ctx *ctx);

/* The result JSON's name of percentile p: prefix "p", p 99, suffix "_ttft_ms" -> "p99_ttft_ms". */
void ls_report_pct_key(char *buf, size_t cap, const char *prefix, double p, const char *suffix);

/* The sections that stages own the data of, printed here. */
/* The report section "Where the latency went": p50/p90/p99 of every part for TTFT, ITL and
 * E2EL over measured requests, each part's share of the total, and what is missing and why. */
void ls_attribution_print(FILE *out, const struct ls_attribution *a);
/* The server's /metrics polled during the run (report_gauges.c): its text block (nothing when
 * s is NULL or off) and its result-JSON object (peaks, means, misses, every sample). */
void ls_gauges_print(FILE *out, const struct ls_gauge_series *s, uint64_t run_start_ns);
struct cJSON *ls_gauges_json(const struct ls_gauge_series *s, uint64_t run_start_ns);
/* Its connect/TLS lines: fresh connections' connect() -> handshake done (and the TLS handshake
 * alone) split into network, client and server, P50/P99 (report_handshake.c). */
void ls_handshake_print(FILE *out, const struct ls_attribution *a);

/* One window kind of "Where the latency went", as the text prints it and the HTML page draws
 * it (one computation for both). */
enum ls_attr_win { LS_ATTR_TTFT, LS_ATTR_ITL, LS_ATTR_E2EL, LS_ATTR_WIN__COUNT };
#define LS_ATTR_BANDS 3 /* the stacked bars: P50, P90, P99 */
struct ls_attr_window {
	size_t n;                                  /* samples (requests; gaps for ITL) */
	size_t n_pcts;
	double pcts[LS_MAX_PERCENTILES];           /* the attribution rules' percentiles */
	int    shown[LS_PART__COUNT + 1];          /* rows the report shows; [LS_PART__COUNT]: total */
	double pct_ms[LS_PART__COUNT + 1][LS_MAX_PERCENTILES]; /* each part's own percentiles */
	double share[LS_PART__COUNT + 1];          /* % of the summed total */
	/* The parts of the samples around the total's P50/P90/P99 (within 1% of n in rank),
	 * averaged: they add up to band_total_ms, the bar's length. */
	double band_pct[LS_ATTR_BANDS];
	double band_ms[LS_ATTR_BANDS][LS_PART__COUNT];
	double band_total_ms[LS_ATTR_BANDS];
	double band_slot_wait_ms[LS_ATTR_BANDS];   /* their mean admitted - scheduled (run given; not ITL) */
	size_t band_n[LS_ATTR_BANDS];
};
const char *ls_attr_win_name(enum ls_attr_win w); /* "TTFT", "ITL", "E2EL" */
/* Fills out for window kind w over a's measured requests; run (NULL: none) gives the slot
 * waits, a->req[i] being run->requests[i]. 0 or -ENOMEM. */
int ls_attribution_window(const struct ls_attribution *a, enum ls_attr_win w, const struct ls_run *run,
			  struct ls_attr_window *out);
/* Harness stamp - kernel arrival of every frame of run's measured requests (a->req[i] being
 * run->requests[i]), ascending, malloc'd into *out (NULL when none). 0 or -ENOMEM. */
int ls_attribution_client_delays(const struct ls_run *run, const struct ls_attribution *a, uint64_t **out,
				 size_t *n_out);

/* Reads the attribution JSONL bench wrote beside a --record file (attribution_file.c) back into
 * an attribution of run (one entry per run record, matched by id; requests without a line are
 * marked no_events and not_ok), under rules' percentiles. NULL with errno: ENOENT (no such
 * file: no message), or after a message naming path:line. */
struct ls_attribution *ls_attribution_load(const char *path, const struct ls_run *run,
					   const struct ls_read_rules *rules);

/* The GPU steps section: steps, step times, busy share, idle gaps, losses, per-process state. */
void ls_gpu_report_print(FILE *out, const struct ls_gpu_steps *gs, uint64_t from_ns,
			 uint64_t to_ns);

/* The block that ends every report. */
void ls_checks_print(FILE *out, const struct ls_checks *c);

#endif
