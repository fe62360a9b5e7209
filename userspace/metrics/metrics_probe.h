/* metrics_probe.h — vLLM's --probe-request-rate figures (vllm/benchmarks/serve.py benchmark():
 * probe_stats over the successful probes' latencies) and latscope's beside them: each probe's
 * TTFT and E2EL under the run's read rules, apart from the run's own metrics.
 * Takes: the probe requests' records (kept beside the run, never in it) and the read rules.
 * Gives: struct ls_probe_stats. */
#ifndef LATSCOPE_METRICS_PROBE_H
#define LATSCOPE_METRICS_PROBE_H

#include <stddef.h>
#include "metrics/metrics.h"

struct ls_probe_stats {
	size_t n, completed, failed;  /* sent; ok under the rules; the others */
	struct ls_stat ttft, e2el;    /* over the completed ones, at 50 and 99 (vLLM: median, p99, max) */
	double *ttft_s, *e2el_s;      /* per probe in send order, NaN for a failed one (n of each) */
};

/* 0 or -ENOMEM. recs[i] is probe i's record. */
int ls_probe_stats_compute(struct ls_request *const *recs, size_t n, const struct ls_read_rules *rules,
			   struct ls_probe_stats *out);
void ls_probe_stats_free(struct ls_probe_stats *ps);

#endif
