/* checks.h — the checks a careful reader runs by hand before believing a benchmark number,
 * computed from a run's records and the metrics read from them. Every report (bench,
 * compare, report) ends with them: one line each, "ok: ..." or what is off and why.
 *   failures      failed requests exist, so every percentile is conditioned on survival
 *   tokens        usage, cumulative counts and the requested length disagree (EOS, tokenizer)
 *   itl/tpot      mean ITL / mean TPOT is not 1: tokens per frame, pooled vs per-request weighting
 *   prefix cache  prompts sent twice (warmups, repeated runs) may skip prefill on the server
 *   rate          the realised request rate is off the target by more than 2% (drift, saturation)
 *   client        the client itself was the bottleneck: its CPU near a whole core over the run,
 *                 requests leaving long after their slot, or (probes) frames read long after the
 *                 kernel had them: each P99 against the median ITL
 *   engine        (only when the responses carried the engine's own account) its queue+prefill
 *                 longer than latscope's TTFT from the send, its end-to-end longer than send ->
 *                 last byte, malformed values ignored; else how much of TTFT it does not count */
#ifndef LATSCOPE_CHECKS_H
#define LATSCOPE_CHECKS_H

#include <stdio.h>
#include "metrics/metrics.h"
#include "base/record.h"

struct cJSON;

enum ls_check_kind {
	LS_CHECK_FAILURES,
	LS_CHECK_TOKENS,
	LS_CHECK_ITL_TPOT,
	LS_CHECK_PREFIX_CACHE,
	LS_CHECK_RATE,
	LS_CHECK_CLIENT,
	LS_CHECK_ENGINE, /* last: left out (n = LS_CHECK__COUNT - 1) when no request had an account */
	LS_CHECK__COUNT
};

#define LS_CHECK_TEXT 640
#define LS_CHECK_RATE_TOLERANCE 0.02 /* realised vs target rate */
#define LS_CHECK_RATIO_TOLERANCE 0.05 /* mean ITL / mean TPOT */
#define LS_CHECK_TOKENS_TOLERANCE 0.01 /* token totals */
#define LS_CHECK_PREFIX_RATIO 0.35     /* a repeated prompt's TTFT below this x the rest's median */
#define LS_CHECK_CLIENT_CPU 0.85       /* the client's CPU share of its core(s) over the run */
#define LS_CHECK_CLIENT_LAG 0.5        /* dispatch P99 against the median ITL (and over 1 ms) */
#define LS_CHECK_ENGINE_SLACK_NS 500000 /* the engine's clock against latscope's: 0.5 ms */

struct ls_check {
	enum ls_check_kind kind;
	int  ok;                    /* 1: nothing to explain */
	char text[LS_CHECK_TEXT];   /* "ok: ..." or the explanation, one line */
};

struct ls_checks {
	struct ls_check c[LS_CHECK__COUNT];
	size_t n;
	size_t n_bad;
};

/* What the records do not say. */
struct ls_checks_ctx {
	const char *arrival;      /* arrival kind name ("gamma", "poisson-yield", ...), NULL unknown */
	int repeated_run;         /* these prompts were sent to this server before (compare's later runs) */
	int cache_flushed;        /* and POST /flush_cache answered 200 before this run */
};

const char *ls_check_name(enum ls_check_kind kind); /* "failures", "tokens", ... */

/* Fills out from the run's measured (non-warmup) requests and m (computed from the same run). */
void ls_checks_compute(const struct ls_run *run, const struct ls_metrics *m, const struct ls_checks_ctx *ctx,
		       struct ls_checks *out);


/* [{"check": "failures", "ok": true, "text": "..."}, ...]; NULL on ENOMEM. */
struct cJSON *ls_checks_json(const struct ls_checks *c);

#endif
