/* ramp.h — vLLM's --ramp-up-strategy: the request rate grows from --ramp-up-start-rps to
 * --ramp-up-end-rps over the run, one rate per request (vllm/benchmarks/serve.py
 * _get_current_request_rate), each gap drawn from Gamma(burstiness, 1 / (rate * burstiness))
 * at that request's rate, summed, and never rescaled (get_request normalises only without a
 * ramp). The schedule is an ls_arrival of kind gamma whose offsets are these sums. */
#ifndef LATSCOPE_RAMP_H
#define LATSCOPE_RAMP_H

#include <stddef.h>
#include <stdint.h>
#include "workload/arrival.h"

enum ls_ramp {
	LS_RAMP_NONE,
	LS_RAMP_LINEAR,      /* start + (end - start) * progress */
	LS_RAMP_EXPONENTIAL, /* start * (end / start) ^ progress */
};

/* "linear" | "exponential". 0 or -EINVAL. */
int ls_ramp_parse(const char *name, enum ls_ramp *out);
const char *ls_ramp_name(enum ls_ramp r);

/* The rate of request i of n: progress = i / max(n - 1, 1). */
double ls_ramp_rate(enum ls_ramp r, double start_rps, double end_rps, size_t i, size_t n);

/* vLLM's checks of the three flags together (main_async): NULL, or what is wrong. */
const char *ls_ramp_check(enum ls_ramp r, double start_rps, double end_rps, int start_set, int end_set);

/* The schedule: offsets_ns[i] = sum of gaps 0..i (the first request waits its own gap too, as
 * in vLLM). 0, or -EINVAL after a message (a rate that is not positive: vLLM asserts), -ENOMEM. */
int ls_arrival_init_ramp(struct ls_arrival *a, enum ls_ramp r, double start_rps, double end_rps,
			 double burstiness, uint64_t seed, size_t n);

#endif
