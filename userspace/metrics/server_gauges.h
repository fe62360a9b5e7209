/* server_gauges.h — the summary of the server's /metrics series polled during a run
 * (server/metrics_poll.h): per gauge its peak, when, and its mean over the samples; how fast
 * /metrics answered; and, per sample, how many requests latscope's own records had in flight
 * at that instant (started, not yet finished), to set beside the server's running + waiting.
 * Percentiles of server parts never come from here (nor from Prometheus buckets). */
#ifndef LATSCOPE_SERVER_GAUGES_H
#define LATSCOPE_SERVER_GAUGES_H

#include <stddef.h>
#include <stdint.h>
#include "base/record.h"
#include "server/metrics_poll.h"

struct ls_gauge_stat {
	size_t n;          /* samples that had this gauge */
	double peak, mean;
	double peak_at_s;  /* the first sample at the peak: its answer, s from the run's start */
};

struct ls_gauge_summary {
	int      on;                          /* polling was asked for */
	size_t   n_samples;
	uint64_t n_missed;                    /* every reason together */
	struct ls_gauge_stat g[LS_GAUGE__COUNT];
	double   answer_ms_mean, answer_ms_max; /* GET handed to libcurl -> whole answer */
	double   interval_ms_mean;            /* between consecutive samples' answers */
};

void ls_gauge_summarize(const struct ls_gauge_series *s, uint64_t run_start_ns, struct ls_gauge_summary *out);

/* Requests of run (measured) in flight at t: started_ns <= t < finished_ns (or still going). */
size_t ls_gauge_in_flight_at(const struct ls_run *run, uint64_t t_ns);

#endif
