/* ramp.c — vLLM's ramp-up schedule (see ramp.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "workload/ramp.h"

int ls_ramp_parse(const char *name, enum ls_ramp *out)
{
	if (name && !strcmp(name, "linear"))
		*out = LS_RAMP_LINEAR;
	else if (name && !strcmp(name, "exponential"))
		*out = LS_RAMP_EXPONENTIAL;
	else
		return -EINVAL;
	return 0;
}

const char *ls_ramp_name(enum ls_ramp r)
{
	return r == LS_RAMP_LINEAR ? "linear" : r == LS_RAMP_EXPONENTIAL ? "exponential" : "none";
}

double ls_ramp_rate(enum ls_ramp r, double start_rps, double end_rps, size_t i, size_t n)
{
	double progress = (double)i / (double)(n > 1 ? n - 1 : 1);
	if (r == LS_RAMP_LINEAR)
		return start_rps + (end_rps - start_rps) * progress;
	if (r == LS_RAMP_EXPONENTIAL)
		return start_rps * pow(end_rps / start_rps, progress);
	return NAN;
}

const char *ls_ramp_check(enum ls_ramp r, double start_rps, double end_rps, int start_set, int end_set)
{
	if (r == LS_RAMP_NONE)
		return (start_set || end_set) ? "--ramp-up-start-rps and --ramp-up-end-rps need --ramp-up-strategy" : NULL;
	if (!start_set || !end_set)
		return "--ramp-up-strategy needs both --ramp-up-start-rps and --ramp-up-end-rps";
	if (start_rps < 0 || end_rps < 0)
		return "ramp-up start and end RPS must be non-negative";
	if (start_rps > end_rps)
		return "ramp-up start RPS must be less than end RPS";
	if (r == LS_RAMP_EXPONENTIAL && start_rps == 0)
		return "for exponential ramp-up, the start RPS cannot be 0";
	return NULL;
}

int ls_arrival_init_ramp(struct ls_arrival *a, enum ls_ramp r, double start_rps, double end_rps,
			 double burstiness, uint64_t seed, size_t n)
{
	int err = ls_arrival_init(a, LS_ARRIVAL_INF, INFINITY, burstiness, seed, 0, NULL);
	if (err)
		return err;
	a->kind = LS_ARRIVAL_GAMMA; /* precomputed offsets, read by ls_arrival_deadline */
	a->n = n;
	a->rate = end_rps;
	if (ls_arrival_check_burstiness(burstiness))
		return -EINVAL;
	if (!n)
		return 0;
	if (!(a->offsets_ns = malloc(n * sizeof(*a->offsets_ns))))
		return -ENOMEM;
	double t = 0.0;
	for (size_t i = 0; i < n; i++) {
		double rate = ls_ramp_rate(r, start_rps, end_rps, i, n);
		if (!(rate > 0.0)) {
			fprintf(stderr, "latscope: ramp-up gives request %zu a rate of %g req/s; vLLM's get_request "
					"needs every rate positive (start above 0)\n", i, rate);
			ls_arrival_free(a);
			return -EINVAL;
		}
		t += ls_arrival_gap_s(a->rng, rate, burstiness);
		a->offsets_ns[i] = ls_arrival_s_to_ns(t);
	}
	return 0;
}
