/* The sweep's search and verdicts: capacity per clock from pass/fail points, the search run
 * against an oracle with a known capacity per clock (it must bracket each to the precision and
 * stop), over-saturation on hand-made records, repeats' mean verdict, and the knee. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "metrics/sweep_slo.h"

#define MS 1000000ull
#define T0 (1000000 * MS)

static struct ls_sweep_obs ob(double x, int s, int a, int st)
{
	return (struct ls_sweep_obs){ .x = x, .pass = { s, a, st } };
}

Test(sweep_search, capacity_is_the_last_pass_below_the_first_failure)
{
	struct ls_sweep_obs o[] = { ob(10, 1, 1, 1), ob(20, 1, 1, 1), ob(40, 0, 1, 1), ob(30, 1, 1, 1),
				    ob(80, 1, 0, 1) /* noise: a pass above a failure */ };
	struct ls_sweep_cap k;
	ls_sweep_capacity(o, 5, LS_ORIGIN_SCHEDULED, &k);
	cr_expect(k.has_cap && k.cap == 30 && k.has_fail && k.fail == 40, "scheduled %g..%g", k.cap, k.fail);
	ls_sweep_capacity(o, 5, LS_ORIGIN_ADMITTED, &k);
	cr_expect(k.has_cap && k.cap == 40 && k.fail == 80);
	ls_sweep_capacity(o, 5, LS_ORIGIN_STARTED, &k);
	cr_expect(k.has_cap && k.cap == 80 && !k.has_fail, "no failure: capacity is the highest run");
	struct ls_sweep_obs none[] = { ob(10, 0, 0, 0), ob(5, 0, 0, 0) };
	ls_sweep_capacity(none, 2, LS_ORIGIN_SCHEDULED, &k);
	cr_expect(!k.has_cap && k.fail == 5);
	struct ls_sweep_obs noisy[] = { ob(10, 0, 0, 0), ob(20, 1, 1, 1) };
	ls_sweep_capacity(noisy, 2, LS_ORIGIN_SCHEDULED, &k);
	cr_expect(!k.has_cap, "a pass above the lowest failure is not capacity");
}

/* Runs the search against clocks whose true capacities are cap[]; returns points run. */
static size_t search(const struct ls_sweep_search *s, const double cap[3], struct ls_sweep_obs *o, size_t max_n)
{
	size_t n = 0;
	double x;
	while (ls_sweep_next(s, o, n, &x)) {
		cr_assert_lt(n, max_n, "the search did not stop (last x %g)", x);
		cr_assert(x >= s->min && x <= s->max, "x %g left [%g, %g]", x, s->min, s->max);
		for (size_t i = 0; i < n; i++)
			cr_assert_neq(o[i].x, x, "x %g run twice", x);
		o[n] = ob(x, x <= cap[0], x <= cap[1], x <= cap[2]);
		n++;
	}
	return n;
}

Test(sweep_search, brackets_every_clock_to_the_precision)
{
	struct ls_sweep_search s = { .start = 10, .factor = 2, .min = 0.1, .max = 1000, .precision = 0.05 };
	const double cap[3] = { 50, 83, 310 };
	struct ls_sweep_obs o[64];
	size_t n = search(&s, cap, o, 64);
	for (int c = 0; c < 3; c++) {
		struct ls_sweep_cap k;
		ls_sweep_capacity(o, n, (enum ls_origin)c, &k);
		cr_expect(k.has_cap && k.has_fail, "clock %d bracketed", c);
		cr_expect(k.cap <= cap[c] && k.fail > cap[c], "clock %d: [%g, %g) holds %g", c, k.cap, k.fail, cap[c]);
		cr_expect(k.fail - k.cap <= s.precision * k.cap, "clock %d: [%g, %g) wider than 5%%", c, k.cap, k.fail);
	}
	cr_expect_leq(n, 24, "%zu points: the clocks share points", n);
	cr_expect_eq(o[0].x, 10, "starts at --start");
	cr_expect_eq(o[1].x, 20, "then geometric");
}

Test(sweep_search, goes_down_when_the_first_point_fails_and_stops_at_the_ends)
{
	struct ls_sweep_search s = { .start = 100, .factor = 2, .min = 1, .max = 400, .precision = 0.1 };
	const double low[3] = { 3, 3, 3 };
	struct ls_sweep_obs o[64];
	size_t n = search(&s, low, o, 64);
	struct ls_sweep_cap k;
	ls_sweep_capacity(o, n, LS_ORIGIN_SCHEDULED, &k);
	cr_expect(k.has_cap && k.cap <= 3 && k.fail > 3 && k.fail - k.cap <= 0.1 * k.cap + 1e-9, "[%g, %g)", k.cap,
		  k.fail);
	const double never[3] = { 0.5, 0.5, 0.5 };
	n = search(&s, never, o, 64);
	ls_sweep_capacity(o, n, LS_ORIGIN_SCHEDULED, &k);
	cr_expect(!k.has_cap, "below --min: none met");
	cr_expect_eq(o[n - 1].x, 1, "it went down to --min");
	const double always[3] = { 1e9, 1e9, 1e9 };
	n = search(&s, always, o, 64);
	ls_sweep_capacity(o, n, LS_ORIGIN_STARTED, &k);
	cr_expect(k.has_cap && !k.has_fail && k.cap == 400, "up to --max and no further: %g", k.cap);
}

Test(sweep_search, concurrency_is_whole)
{
	struct ls_sweep_search s = { .start = 1, .factor = 2, .min = 1, .max = 256, .precision = 0.01, .integer = 1 };
	const double cap[3] = { 7, 23, 23 };
	struct ls_sweep_obs o[64];
	size_t n = search(&s, cap, o, 64);
	for (size_t i = 0; i < n; i++)
		cr_expect_eq(o[i].x, floor(o[i].x), "x %g is not whole", o[i].x);
	struct ls_sweep_cap k;
	ls_sweep_capacity(o, n, LS_ORIGIN_SCHEDULED, &k);
	cr_expect(k.cap == 7 && k.fail == 8, "exact at whole numbers: [%g, %g)", k.cap, k.fail);
	ls_sweep_capacity(o, n, LS_ORIGIN_STARTED, &k);
	cr_expect(k.cap == 23 && k.fail == 24, "[%g, %g)", k.cap, k.fail);
	cr_expect_eq(ls_sweep_points_left(&s, o, n), 0, "nothing left once settled");
}

/* n requests at target rate; the k-th finishes at k / done_rate s, its first token after a
 * wait that grows by grow ms per request. */
static void sat_run(struct ls_run *run, struct ls_request *rs, size_t n, double rate, double done_rate, double grow)
{
	memset(run, 0, sizeof(*run));
	for (size_t i = 0; i < n; i++) {
		struct ls_request *r = &rs[i];
		ls_request_reset(r, i);
		r->scheduled_ns = T0 + (uint64_t)((double)i / rate * 1e9);
		r->admitted_ns = r->started_ns = r->scheduled_ns;
		struct ls_frame *f = ls_request_add_frame(r);
		cr_assert_not_null(f);
		f->arrived_ns = r->scheduled_ns + (uint64_t)((20 + grow * (double)i) * 1e6);
		f->flags = LS_FRAME_CHOICES;
		r->finished_ns = T0 + (uint64_t)((double)(i + 1) / done_rate * 1e9);
		if (r->finished_ns < f->arrived_ns)
			r->finished_ns = f->arrived_ns;
	}
	run->requests = rs;
	run->n_requests = n;
}

Test(sweep_search, oversaturation_needs_a_low_rate_and_a_growing_backlog)
{
	static struct ls_request rs[100];
	struct ls_run run;
	struct ls_oversat o;
	sat_run(&run, rs, 100, 100, 40, 15);
	ls_sweep_oversat(&run, 100, &o);
	cr_expect(o.oversat, "finishing at %.1f/s of 100 with the wait %g -> %g s", o.done_rate, o.early_wait_s,
		  o.late_wait_s);
	for (size_t i = 0; i < 100; i++)
		ls_request_free(&rs[i]);
	sat_run(&run, rs, 100, 40, 40, 0);
	ls_sweep_oversat(&run, 40, &o);
	cr_expect(!o.oversat, "keeping up: rate %.1f, wait flat", o.done_rate);
	ls_sweep_oversat(&run, 100, &o);
	cr_expect(!o.oversat, "slow but not backing up: the wait stays %g s", o.late_wait_s);
	ls_sweep_oversat(&run, 0, &o);
	cr_expect(!o.oversat, "closed loop: never");
	for (size_t i = 0; i < 100; i++)
		ls_request_free(&rs[i]);
}

static struct ls_sweep_point pt(double x, double ttft_sched, double ttft_started, const char *stopped)
{
	struct ls_sweep_point p = { .x = x };
	snprintf(p.stopped, sizeof(p.stopped), "%s", stopped);
	for (int c = 0; c < 3; c++) {
		p.clock[c].eval.n_ok = 10;
		p.clock[c].eval.n_measured = 10;
		p.clock[c].eval.goodput = 1.0;
		p.clock[c].eval.value_ms[0] = c == 0 ? ttft_sched : ttft_started;
	}
	return p;
}

Test(sweep_search, repeats_are_judged_on_their_mean_and_oversaturation_fails_scheduled)
{
	struct ls_slo_set slo = { .n = 1, .slo = { { LS_SLO_TTFT, 99, 100 } }, .goodput_min = -1 };
	struct ls_sweep_point p[] = { pt(10, 60, 20, ""), pt(10, 130, 20, ""), pt(20, 90, 20, "oversaturated") };
	struct ls_sweep_obs o;
	cr_assert(ls_sweep_obs_at(p, 3, &slo, 10, &o));
	cr_expect(o.pass[0], "mean 95 ms <= 100 although one repeat was 130");
	p[0].clock[0].eval.value_ms[0] = 80;
	cr_assert(ls_sweep_obs_at(p, 3, &slo, 10, &o));
	cr_expect(!o.pass[0], "mean 105 ms > 100");
	cr_assert(ls_sweep_obs_at(p, 3, &slo, 20, &o));
	cr_expect(!o.pass[LS_ORIGIN_SCHEDULED] && o.pass[LS_ORIGIN_STARTED],
		  "over-saturated: scheduled fails, started judged on its numbers");
	cr_expect(!ls_sweep_obs_at(p, 3, &slo, 30, &o), "no point at 30");
}

Test(sweep_search, summary_gives_the_overstatement)
{
	struct ls_slo_set slo = { .n = 1, .slo = { { LS_SLO_TTFT, 99, 100 } }, .goodput_min = -1 };
	struct ls_sweep_point p[] = { pt(10, 50, 20, ""), pt(20, 150, 20, ""), pt(40, 300, 20, ""), pt(80, 900, 200, "") };
	for (int i = 0; i < 4; i++) {
		p[i].throughput = p[i].x > 20 ? 20 : p[i].x;
		p[i].clock[0].e2el_p50_ms = p[i].clock[0].eval.value_ms[0] + 100;
	}
	struct ls_sweep_obs buf[4];
	struct ls_sweep_summary s;
	ls_sweep_summarise(p, 4, &slo, buf, &s);
	cr_expect(s.cap[0].cap == 10 && s.cap[2].cap == 40, "scheduled %g started %g", s.cap[0].cap, s.cap[2].cap);
	cr_expect(s.has_overstatement && fabs(s.overstatement_pct - 300) < 1e-9, "%g %%", s.overstatement_pct);
	cr_expect_eq(s.knee, 1, "power 20/0.25 beats 10/0.15 and 20/0.4");
	cr_expect_eq(ls_sweep_verdict_of(&s, LS_ORIGIN_SCHEDULED), LS_SWEEP_FOUND);
	cr_expect_eq(ls_sweep_verdict_of(&s, LS_ORIGIN_STARTED), LS_SWEEP_FOUND, "started failed at 80");
	struct ls_sweep_point all[] = { pt(10, 50, 20, ""), pt(20, 60, 20, "") };
	ls_sweep_summarise(all, 2, &slo, buf, &s);
	cr_expect_eq(ls_sweep_verdict_of(&s, LS_ORIGIN_SCHEDULED), LS_SWEEP_ALL_MET);
	cr_expect(!s.has_overstatement, "a scheduled capacity above every point cannot be overstated");
	struct ls_sweep_point none[] = { pt(10, 500, 20, ""), pt(20, 600, 20, "") };
	ls_sweep_summarise(none, 2, &slo, buf, &s);
	cr_expect_eq(ls_sweep_verdict_of(&s, LS_ORIGIN_SCHEDULED), LS_SWEEP_NONE_MET);
	cr_expect_eq(ls_sweep_verdict_of(&s, LS_ORIGIN_STARTED), LS_SWEEP_ALL_MET);
	double thr[] = { 10, 20, 20 }, lat[] = { 0.1, 0.1, 1.0 };
	cr_expect_eq(ls_sweep_knee(thr, lat, 3), 1);
	cr_expect_eq(ls_sweep_knee(thr, lat, 0), -1);
}

Test(sweep_search, spreads_are_per_x_mean_and_sd)
{
	struct ls_slo_set slo = { .n = 1, .slo = { { LS_SLO_TTFT, 99, 100 } }, .goodput_min = -1 };
	struct ls_sweep_point p[] = { pt(10, 60, 20, ""), pt(20, 90, 30, ""), pt(10, 80, 40, "") };
	p[0].throughput = 9;
	p[2].throughput = 11;
	struct ls_sweep_spread sp[3];
	cr_assert_eq(ls_sweep_spreads(p, 3, &slo, sp, 3), 2, "two distinct x");
	cr_expect(sp[0].x == 10 && sp[0].n == 2 && sp[1].x == 20 && sp[1].n == 1);
	cr_expect(fabs(sp[0].mean_ms[0][0] - 70) < 1e-9 && fabs(sp[0].sd_ms[0][0] - 10) < 1e-9, "scheduled %g +- %g",
		  sp[0].mean_ms[0][0], sp[0].sd_ms[0][0]);
	cr_expect(fabs(sp[0].mean_ms[2][0] - 30) < 1e-9 && fabs(sp[0].sd_ms[2][0] - 10) < 1e-9, "started per clock");
	cr_expect(fabs(sp[0].throughput_mean - 10) < 1e-9 && fabs(sp[0].throughput_sd - 1) < 1e-9);
	cr_expect_eq(sp[1].sd_ms[0][0], 0, "one run: no spread");
}
