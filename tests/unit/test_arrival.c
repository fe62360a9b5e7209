/* Arrival schedules: vLLM's normalised gamma, SGLang's poisson-yield, constant, trace, inf. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <math.h>
#include <stdlib.h>
#include "workload/arrival.h"

#define START 1000000000000ull

/* Walks a schedule the way the driver does: request i is asked for right after i-1 went out
 * (now = its deadline). Returns the last deadline minus start. */
static uint64_t walk(struct ls_arrival *a, size_t n, uint64_t *deadlines)
{
	uint64_t now = START, d = START;
	for (size_t i = 0; i < n; i++) {
		d = ls_arrival_deadline(a, i, START, now);
		if (d > now)
			now = d;
		if (deadlines)
			deadlines[i] = d;
	}
	return d - START;
}

Test(arrival, gamma_last_arrival_is_exactly_n_over_rate)
{
	const double rates[] = { 20.0, 3.0, 1234.5 };
	const double bursts[] = { 1.0, 0.25, 4.0 };
	for (int k = 0; k < 3; k++) {
		struct ls_arrival a;
		size_t n = 500 + 77 * (size_t)k;
		cr_assert_eq(ls_arrival_init(&a, LS_ARRIVAL_GAMMA, rates[k], bursts[k], 42 + k, n, NULL), 0);
		uint64_t want = (uint64_t)llround((double)n / rates[k] * 1e9);
		cr_expect_eq(ls_arrival_deadline(&a, n - 1, START, START) - START, want,
			     "rate %g: last arrival at %llu ns, want N/rate = %llu", rates[k],
			     (unsigned long long)(ls_arrival_deadline(&a, n - 1, START, START) - START),
			     (unsigned long long)want);
		/* monotonic, first one waits a gap (vLLM's cumulative sum starts with a draw) */
		cr_expect_gt(a.offsets_ns[0], 0);
		for (size_t i = 1; i < n; i++)
			cr_assert_geq(a.offsets_ns[i], a.offsets_ns[i - 1]);
		ls_arrival_free(&a);
	}
}

Test(arrival, gamma_gaps_have_the_burstiness_shape)
{
	/* Gamma(shape k): coefficient of variation 1/sqrt(k). Poisson k=1 -> 1; k=4 -> 0.5. */
	const double shapes[] = { 1.0, 4.0, 0.5 };
	for (int s = 0; s < 3; s++) {
		struct ls_arrival a;
		size_t n = 20000;
		cr_assert_eq(ls_arrival_init(&a, LS_ARRIVAL_GAMMA, 100.0, shapes[s], 7, n, NULL), 0);
		double sum = 0, sq = 0;
		for (size_t i = 0; i < n; i++) {
			double gap = (double)(a.offsets_ns[i] - (i ? a.offsets_ns[i - 1] : 0)) / 1e9;
			sum += gap;
			sq += gap * gap;
		}
		double mean = sum / n, cv = sqrt(sq / n - mean * mean) / mean;
		cr_expect(fabs(mean - 0.01) < 1e-9, "mean gap %g, want exactly 1/rate after normalisation", mean);
		cr_expect(fabs(cv - 1.0 / sqrt(shapes[s])) < 0.05, "shape %g: CV %g, want %g", shapes[s], cv,
			  1.0 / sqrt(shapes[s]));
		ls_arrival_free(&a);
	}
}

Test(arrival, seed_determinism)
{
	struct ls_arrival a, b, c;
	cr_assert_eq(ls_arrival_init(&a, LS_ARRIVAL_GAMMA, 20, 1, 5, 300, NULL), 0);
	cr_assert_eq(ls_arrival_init(&b, LS_ARRIVAL_GAMMA, 20, 1, 5, 300, NULL), 0);
	cr_assert_eq(ls_arrival_init(&c, LS_ARRIVAL_GAMMA, 20, 1, 6, 300, NULL), 0);
	int differ = 0;
	for (size_t i = 0; i < 300; i++) {
		cr_assert_eq(a.offsets_ns[i], b.offsets_ns[i]);
		differ += a.offsets_ns[i] != c.offsets_ns[i];
	}
	cr_expect_gt(differ, 250, "another seed should give another schedule");
	ls_arrival_free(&a);
	ls_arrival_free(&b);
	ls_arrival_free(&c);

	struct ls_arrival p, q;
	uint64_t dp[200], dq[200];
	cr_assert_eq(ls_arrival_init(&p, LS_ARRIVAL_POISSON_YIELD, 20, 1, 9, 200, NULL), 0);
	cr_assert_eq(ls_arrival_init(&q, LS_ARRIVAL_POISSON_YIELD, 20, 1, 9, 200, NULL), 0);
	walk(&p, 200, dp);
	walk(&q, 200, dq);
	cr_assert_arr_eq(dp, dq, sizeof(dp));
	ls_arrival_free(&p);
	ls_arrival_free(&q);
}

Test(arrival, poisson_yield_mean_rate_and_not_normalised)
{
	size_t n = 20000;
	struct ls_arrival a;
	cr_assert_eq(ls_arrival_init(&a, LS_ARRIVAL_POISSON_YIELD, 50.0, 1.0, 3, n, NULL), 0);
	cr_expect_null(a.offsets_ns, "poisson-yield has no precomputed schedule");
	uint64_t *d = malloc(n * sizeof(*d));
	uint64_t total = walk(&a, n, d);
	cr_expect_eq(d[0], START, "SGLang yields the first request at once");
	double mean_gap = (double)total / 1e9 / (double)(n - 1);
	cr_expect(fabs(mean_gap - 0.02) / 0.02 < 0.03, "mean gap %g, want ~1/rate", mean_gap);
	/* Not normalised: the last arrival is wherever the draws put it, not at N/rate. */
	cr_expect_neq(total, (uint64_t)llround((double)n / 50.0 * 1e9));
	free(d);
	ls_arrival_free(&a);
}

Test(arrival, loop_delay_drifts_poisson_yield_but_not_gamma)
{
	size_t n = 400;
	uint64_t delay = 2000000; /* 2 ms per dispatch */
	struct ls_arrival p0, p1, g0, g1;
	cr_assert_eq(ls_arrival_init(&p0, LS_ARRIVAL_POISSON_YIELD, 20, 1, 11, n, NULL), 0);
	cr_assert_eq(ls_arrival_init(&p1, LS_ARRIVAL_POISSON_YIELD, 20, 1, 11, n, NULL), 0);
	p1.loop_delay_ns = delay;
	uint64_t base = walk(&p0, n, NULL), drifted = walk(&p1, n, NULL);
	cr_expect_eq(drifted - base, n * delay, "poisson-yield drift %llu ns, want N x delay = %llu",
		     (unsigned long long)(drifted - base), (unsigned long long)(n * delay));

	cr_assert_eq(ls_arrival_init(&g0, LS_ARRIVAL_GAMMA, 20, 1, 11, n, NULL), 0);
	cr_assert_eq(ls_arrival_init(&g1, LS_ARRIVAL_GAMMA, 20, 1, 11, n, NULL), 0);
	g1.loop_delay_ns = delay;
	uint64_t g_base = walk(&g0, n, NULL), g_drift = walk(&g1, n, NULL);
	cr_expect_eq(g_base, 20000000000ull);
	/* Absolute deadlines catch up: at most one delay late at the end, never N of them. */
	cr_expect_leq(g_drift - g_base, delay, "gamma drifted %llu ns", (unsigned long long)(g_drift - g_base));
	ls_arrival_free(&p0);
	ls_arrival_free(&p1);
	ls_arrival_free(&g0);
	ls_arrival_free(&g1);
}

Test(arrival, constant_closed_inf_trace)
{
	struct ls_arrival a;
	cr_assert_eq(ls_arrival_init(&a, LS_ARRIVAL_CONSTANT, 4.0, 1.0, 0, 8, NULL), 0);
	for (size_t i = 0; i < 8; i++)
		cr_expect_eq(ls_arrival_deadline(&a, i, START, START) - START, (i + 1) * 250000000ull);
	ls_arrival_free(&a);

	cr_assert_eq(ls_arrival_init(&a, LS_ARRIVAL_CLOSED, 4.0, 1.0, 0, 8, NULL), 0);
	cr_expect_eq(ls_arrival_deadline(&a, 5, START, START + 99), START);
	ls_arrival_free(&a);

	cr_assert_eq(ls_arrival_init(&a, LS_ARRIVAL_GAMMA, INFINITY, 1.0, 0, 8, NULL), 0);
	cr_expect_eq(a.kind, LS_ARRIVAL_INF, "an infinite rate sends everything at once, as vLLM");
	cr_expect_eq(ls_arrival_deadline(&a, 7, START, START + 5), START);
	ls_arrival_free(&a);

	const double ts[] = { 0.0, 0.5, 0.5, 2.25 };
	cr_assert_eq(ls_arrival_init(&a, LS_ARRIVAL_TRACE, 0, 1.0, 0, 4, ts), 0);
	cr_expect_eq(ls_arrival_deadline(&a, 3, START, START) - START, 2250000000ull);
	cr_expect_eq(ls_arrival_deadline(&a, 1, START, START) - START, 500000000ull);
	ls_arrival_free(&a);
}

Test(arrival, bad_input_is_rejected, .init = cr_redirect_stderr)
{
	struct ls_arrival a;
	const double back[] = { 1.0, 0.5 };
	cr_expect_neq(ls_arrival_init(&a, LS_ARRIVAL_TRACE, 0, 1, 0, 2, back), 0);
	cr_expect_neq(ls_arrival_init(&a, LS_ARRIVAL_TRACE, 0, 1, 0, 2, NULL), 0);
	cr_expect_neq(ls_arrival_init(&a, LS_ARRIVAL_GAMMA, 10, 0.0, 0, 2, NULL), 0);
	cr_expect_neq(ls_arrival_init(&a, LS_ARRIVAL_GAMMA, NAN, 1.0, 0, 2, NULL), 0);
	enum ls_arrival_kind k;
	cr_expect_eq(ls_arrival_parse_kind("poisson-yield", &k), 0);
	cr_expect_eq(k, LS_ARRIVAL_POISSON_YIELD);
	cr_expect_neq(ls_arrival_parse_kind("poisson", &k), 0);
	cr_expect_str_eq(ls_arrival_kind_name(LS_ARRIVAL_CLOSED), "closed");
}
