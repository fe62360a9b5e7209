/* arrival.c — arrival schedules (see arrival.h). The gamma schedule follows vLLM's get_request:
 * gaps ~ Gamma(shape = burstiness, scale = 1 / (rate * burstiness)), summed, then scaled so the
 * cumulative delay of the last request is exactly N / rate (the first request waits one gap). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "workload/arrival.h"
#include "base/rng.h"

static const char *const kind_names[] = {
	[LS_ARRIVAL_GAMMA] = "gamma",
	[LS_ARRIVAL_POISSON_YIELD] = "poisson-yield",
	[LS_ARRIVAL_CONSTANT] = "constant",
	[LS_ARRIVAL_CLOSED] = "closed",
	[LS_ARRIVAL_TRACE] = "trace",
	[LS_ARRIVAL_INF] = "inf",
};

int ls_arrival_parse_kind(const char *name, enum ls_arrival_kind *out)
{
	for (size_t k = 0; k < sizeof(kind_names) / sizeof(kind_names[0]); k++)
		if (name && !strcmp(name, kind_names[k])) {
			*out = (enum ls_arrival_kind)k;
			return 0;
		}
	return -EINVAL;
}

const char *ls_arrival_kind_name(enum ls_arrival_kind kind)
{
	if ((unsigned)kind >= sizeof(kind_names) / sizeof(kind_names[0]))
		return "?";
	return kind_names[kind];
}

static int rate_is_inf(double rate)
{
	return !(rate > 0.0) || isinf(rate);
}

uint64_t ls_arrival_s_to_ns(double s)
{
	if (!(s > 0.0))
		return 0;
	if (s > 1.8e10) /* ~570 years: clamp rather than overflow */
		return UINT64_MAX / 2;
	return (uint64_t)llround(s * 1e9);
}

int ls_arrival_check_burstiness(double burstiness)
{
	if (burstiness > 0.0) /* NaN is not */
		return 0;
	fprintf(stderr, "latscope: --burstiness %g must be > 0 (1 = Poisson)\n", burstiness);
	return -EINVAL;
}

double ls_arrival_gap_s(uint64_t rng[2], double rate, double burstiness)
{
	return isinf(burstiness) ? 1.0 / rate : ls_rng_gamma(rng, burstiness, 1.0 / (rate * burstiness));
}

/* vLLM's gamma schedule: gaps ~ Gamma(burstiness, 1 / (rate * burstiness)) (every gap 1/rate
 * when burstiness is inf), summed, scaled so the last offset is exactly N / rate. */
static int gamma_init(struct ls_arrival *a, double rate, double burstiness, size_t n)
{
	if (ls_arrival_check_burstiness(burstiness))
		return -EINVAL;
	if (!n)
		return 0;
	double *cum = malloc(n * sizeof(*cum));
	a->offsets_ns = malloc(n * sizeof(*a->offsets_ns));
	if (!cum || !a->offsets_ns) {
		free(cum);
		ls_arrival_free(a);
		return -ENOMEM;
	}
	double total = 0.0;
	for (size_t i = 0; i < n; i++)
		cum[i] = total += ls_arrival_gap_s(a->rng, rate, burstiness);
	double target_s = (double)n / rate;
	double factor = total > 0.0 ? target_s / total : 1.0;
	for (size_t i = 0; i < n; i++)
		a->offsets_ns[i] = ls_arrival_s_to_ns(cum[i] * factor);
	/* Exactly N / rate, not whatever the last product rounded to. */
	a->offsets_ns[n - 1] = ls_arrival_s_to_ns(target_s);
	for (size_t i = 1; i < n; i++) /* keep the schedule monotonic after rounding */
		if (a->offsets_ns[i] < a->offsets_ns[i - 1])
			a->offsets_ns[i] = a->offsets_ns[i - 1];
	free(cum);
	return 0;
}

/* vLLM's burstiness = inf: every gap is 1/rate, the first one included. */
static int constant_init(struct ls_arrival *a, double rate, size_t n)
{
	if (!n)
		return 0;
	a->offsets_ns = malloc(n * sizeof(*a->offsets_ns));
	if (!a->offsets_ns)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		a->offsets_ns[i] = ls_arrival_s_to_ns((double)(i + 1) / rate);
	return 0;
}

/* The dataset's own timestamps, seconds from run start, in order. */
static int trace_init(struct ls_arrival *a, size_t n, const double *trace_offsets_s)
{
	if (!trace_offsets_s) {
		fprintf(stderr, "latscope: --arrival trace needs a dataset with a timestamp on every "
				"request (jsonl \"timestamp\")\n");
		return -EINVAL;
	}
	if (!n)
		return 0;
	a->offsets_ns = malloc(n * sizeof(*a->offsets_ns));
	if (!a->offsets_ns)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		double t = trace_offsets_s[i];
		if (isnan(t) || t < 0.0 || (i && t < trace_offsets_s[i - 1])) {
			fprintf(stderr, "latscope: trace timestamp of request %zu (%g s) is negative or "
					"earlier than the one before it: timestamps must be seconds from "
					"run start, in order\n", i, t);
			ls_arrival_free(a);
			return -EINVAL;
		}
		a->offsets_ns[i] = ls_arrival_s_to_ns(t);
	}
	return 0;
}

int ls_arrival_init(struct ls_arrival *a, enum ls_arrival_kind kind, double rate, double burstiness,
		    uint64_t seed, size_t n, const double *trace_offsets_s)
{
	memset(a, 0, sizeof(*a));
	a->kind = kind;
	a->rate = rate;
	a->burstiness = burstiness;
	a->seed = seed;
	a->n = n;
	ls_rng_seed(a->rng, seed);

	if ((kind == LS_ARRIVAL_GAMMA || kind == LS_ARRIVAL_POISSON_YIELD || kind == LS_ARRIVAL_CONSTANT) &&
	    rate_is_inf(rate))
		a->kind = kind = LS_ARRIVAL_INF; /* vLLM: rate inf sends everything at once */
	if (isnan(rate) || rate < 0.0) {
		fprintf(stderr, "latscope: request rate %g is not a rate (use a positive number or inf)\n", rate);
		return -EINVAL;
	}

	switch (kind) {
	case LS_ARRIVAL_GAMMA:
		return gamma_init(a, rate, burstiness, n);
	case LS_ARRIVAL_CONSTANT:
		return constant_init(a, rate, n);
	case LS_ARRIVAL_TRACE:
		return trace_init(a, n, trace_offsets_s);
	case LS_ARRIVAL_POISSON_YIELD:
	case LS_ARRIVAL_CLOSED:
	case LS_ARRIVAL_INF:
		return 0;
	}
	return -EINVAL;
}

void ls_arrival_free(struct ls_arrival *a)
{
	free(a->offsets_ns);
	a->offsets_ns = NULL;
}

uint64_t ls_arrival_deadline(struct ls_arrival *a, size_t i, uint64_t run_start_ns, uint64_t now_ns)
{
	uint64_t deadline = run_start_ns;
	switch (a->kind) {
	case LS_ARRIVAL_GAMMA:
	case LS_ARRIVAL_CONSTANT:
	case LS_ARRIVAL_TRACE:
		if (a->offsets_ns && i < a->n)
			deadline = run_start_ns + a->offsets_ns[i];
		break;
	case LS_ARRIVAL_POISSON_YIELD:
		/* SGLang: the first request is yielded at once; after each one the loop sleeps a
		 * fresh exponential from *that* moment, so any loop overhead adds up. */
		if (i == 0)
			return run_start_ns + a->loop_delay_ns;
		return now_ns + a->loop_delay_ns + ls_arrival_s_to_ns(ls_rng_exponential(a->rng, 1.0 / a->rate));
	case LS_ARRIVAL_CLOSED:
	case LS_ARRIVAL_INF:
		return run_start_ns;
	}
	if (a->loop_delay_ns && i > 0 && deadline < now_ns + a->loop_delay_ns)
		deadline = now_ns + a->loop_delay_ns;
	return deadline;
}
