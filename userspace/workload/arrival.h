/* arrival.h — when each request should go out (the *scheduled* stamp).
 * gamma: vLLM's precomputed absolute schedule, normalised so the last arrival is at N/rate;
 * poisson-yield: SGLang's "yield, then sleep a fresh exponential" (not normalised, loop
 * overhead accumulates); constant; closed (C clients send-wait-send); trace; inf. */
#ifndef LATSCOPE_ARRIVAL_H
#define LATSCOPE_ARRIVAL_H

#include <stddef.h>
#include <stdint.h>

enum ls_arrival_kind {
	LS_ARRIVAL_GAMMA,
	LS_ARRIVAL_POISSON_YIELD,
	LS_ARRIVAL_CONSTANT,
	LS_ARRIVAL_CLOSED,
	LS_ARRIVAL_TRACE,
	LS_ARRIVAL_INF,
};

struct ls_arrival {
	enum ls_arrival_kind kind;
	double    rate;              /* req/s; inf when <= 0 (or isinf) */
	double    burstiness;        /* gamma shape; 1 = Poisson */
	uint64_t  seed;
	size_t    n;                 /* measured requests */
	uint64_t *offsets_ns;        /* precomputed offsets from run start (gamma, constant, trace) */
	uint64_t  rng[2];            /* poisson-yield state (xoroshiro128++, rng.h) */
	uint64_t  loop_delay_ns;     /* test-only: added per dispatch (arrival drift experiment) */
};

/* "gamma" | "poisson-yield" | "constant" | "closed" | "trace" | "inf". 0 or -EINVAL. */
int ls_arrival_parse_kind(const char *name, enum ls_arrival_kind *out);
const char *ls_arrival_kind_name(enum ls_arrival_kind kind);

/* trace_offsets_s: per-request timestamps for LS_ARRIVAL_TRACE (else NULL). 0 or -errno
 * (-EINVAL with a message on stderr for a rate, burstiness or timestamp that cannot work).
 * gamma/poisson-yield/constant with an infinite rate behave as inf, as in vLLM. */
int ls_arrival_init(struct ls_arrival *a, enum ls_arrival_kind kind, double rate, double burstiness,
		    uint64_t seed, size_t n, const double *trace_offsets_s);
void ls_arrival_free(struct ls_arrival *a);

/* What the schedules share (arrival.c, ramp.c): burstiness must be > 0 (-EINVAL after a
 * message); one gap at rate (1/rate when burstiness is inf, else Gamma(burstiness,
 * 1 / (rate * burstiness)), vLLM's); seconds from the start as an offset (0 for <= 0, clamped
 * past ~570 years rather than overflowing). */
int ls_arrival_check_burstiness(double burstiness);
double ls_arrival_gap_s(uint64_t rng[2], double rate, double burstiness);
uint64_t ls_arrival_s_to_ns(double s);

/* Absolute CLOCK_MONOTONIC deadline for measured request i. Called in order, right after
 * request i-1 was dispatched (now_ns = that moment: poisson-yield draws its sleep from
 * there). Closed and inf return run_start_ns: the concurrency limit paces them.
 * With loop_delay_ns set, no request goes out before now_ns + loop_delay_ns: absolute
 * schedules (gamma, constant, trace) catch up after it, poisson-yield accumulates it. */
uint64_t ls_arrival_deadline(struct ls_arrival *a, size_t i, uint64_t run_start_ns, uint64_t now_ns);

#endif
