/* bench_probe_req.h — vLLM's --probe-request-rate around a bench run (vllm/benchmarks/serve.py
 * benchmark(): probe_loop): the probe's body (the run's model and request flags, prompt "Hi",
 * one output token), a record per probe the driver sends beside the measured jobs, their
 * figures after the run (metrics/metrics_probe.h). Rank 0 of an MPI run sends them. */
#ifndef LATSCOPE_BENCH_PROBE_REQ_H
#define LATSCOPE_BENCH_PROBE_REQ_H

#include <stddef.h>
#include <stdint.h>
#include "config/config.h"
#include "driver/driver.h"
#include "metrics/metrics_probe.h"
#include "attribution/attribution.h"

#define LS_PROBE_REQ_MAX 100000 /* probes one run keeps at most (then it sends no more) */

struct ls_probe_reqs {
	char  *body;
	size_t body_len;
	struct ls_driver_job job;    /* the one in flight (the driver sends one at a time) */
	struct ls_request **recs;    /* every probe sent, in order */
	size_t n, cap;
	uint64_t first_id;           /* probe k's record id (X-Request-Id): first_id + k */
};

/* Builds the probe body for the run (*pr zeroed first). 0 or -errno after a message. */
int ls_probe_reqs_init(struct ls_probe_reqs *pr, const struct ls_config *c, const char *model, uint64_t first_id);
/* The driver's options for the measured run: probes every 1/rate s (nothing when off). */
void ls_probe_reqs_driver(struct ls_probe_reqs *pr, const struct ls_config *c, struct ls_driver_opts *o);
/* With the eBPF probes' events (NULL: nothing, 0): each probe's TTFT split into parts under
 * rules (attribution/, the parts add up to the TTFT the rules read), into *attr (one entry per
 * probe), and each part's mean over the probes that had events into mean_ms (*n_split of them).
 * 0 or -ENOMEM. */
int ls_probe_reqs_split(const struct ls_probe_reqs *pr, const struct ls_evstore *events,
			const struct ls_read_rules *rules, struct ls_attribution **attr,
			double mean_ms[LS_PART__COUNT], size_t *n_split);
void ls_probe_reqs_free(struct ls_probe_reqs *pr);

#endif
