/* The sweep's SLO: its parser names what is wrong, the verdict per clock reads the clock it is
 * given (slot wait counts from scheduled only), goodput counts failures as not good, and the
 * warm/cool trim cuts by schedule, not by run order. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <string.h>
#include "metrics/sweep_slo.h"
#include "config/profile.h"

#define MS 1000000ull
#define T0 (1000000 * MS)

static struct ls_slo_set parse_ok(const char *s)
{
	struct ls_slo_set set = { .goodput_min = -1 };
	char err[256] = "";
	cr_assert_eq(ls_slo_parse(s, &set, err, sizeof(err)), 0, "%s: %s", s, err);
	return set;
}

Test(sweep_slo, parses_units_and_percentiles)
{
	struct ls_slo_set s = parse_ok("ttft:p99<=500ms, itl:p99<=50,e2el:p90<=10s,tpot:p50<=800us");
	cr_assert_eq(s.n, 4);
	cr_expect_eq(s.slo[0].metric, LS_SLO_TTFT);
	cr_expect_eq(s.slo[0].pct, 99);
	cr_expect_eq(s.slo[0].limit_ms, 500);
	cr_expect_eq(s.slo[1].metric, LS_SLO_ITL);
	cr_expect_eq(s.slo[1].limit_ms, 50, "no unit is ms");
	cr_expect_eq(s.slo[2].metric, LS_SLO_E2EL);
	cr_expect_eq(s.slo[2].pct, 90);
	cr_expect_eq(s.slo[2].limit_ms, 10000, "s is 1000 ms");
	cr_expect(fabs(s.slo[3].limit_ms - 0.8) < 1e-12, "us is a thousandth of a ms");
	cr_expect_eq(s.goodput_min, -1, "the parser leaves goodput_min alone");
	s = parse_ok("ttft:p99.9<=1.5s");
	cr_expect(fabs(s.slo[0].pct - 99.9) < 1e-12 && s.slo[0].limit_ms == 1500);
}

Test(sweep_slo, bad_items_are_named)
{
	static const struct {
		const char *spec, *in_err;
	} bad[] = {
		{ "ttft:p99<500ms", "ttft:p99<500ms" },   /* '<' is not '<=' */
		{ "ttfb:p99<=5", "ttfb" },                /* unknown metric */
		{ "ttft:99<=5", "percentile" },           /* no p */
		{ "ttft:p0<=5", "percentile" },
		{ "ttft:p101<=5", "percentile" },
		{ "ttft:p99<=-1", "limit" },
		{ "ttft:p99<=5min", "unit 'min'" },
		{ "ttft:p99<=5,,itl:p99<=1", "empty item" },
		{ "ttft:p99<=5,ttft:p99<=6", "twice" },
		{ "", "empty" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ls_slo_set set = { .n = 7, .goodput_min = -1 };
		char err[256] = "";
		cr_expect_eq(ls_slo_parse(bad[i].spec, &set, err, sizeof(err)), -EINVAL, "'%s' accepted", bad[i].spec);
		cr_expect(strstr(err, bad[i].in_err), "'%s': message '%s' does not name '%s'", bad[i].spec, err,
			  bad[i].in_err);
		cr_expect_eq(set.n, 7, "'%s': a failed parse leaves the set as it was", bad[i].spec);
	}
}

/* A request scheduled at s ms, admitted after wait ms, started 1 ms later, frames every 10 ms
 * from ttft ms after start (n_tok of them), done 1 ms after the last. */
static void req(struct ls_request *r, uint64_t id, uint64_t s, uint64_t wait, uint64_t ttft, int n_tok)
{
	ls_request_reset(r, id);
	r->output_len = (uint32_t)n_tok;
	r->scheduled_ns = T0 + s * MS;
	r->admitted_ns = r->scheduled_ns + wait * MS;
	r->started_ns = r->admitted_ns + 1 * MS;
	uint64_t t = r->started_ns + ttft * MS;
	for (int i = 0; i < n_tok; i++, t += 10 * MS) {
		struct ls_frame *f = ls_request_add_frame(r);
		cr_assert_not_null(f);
		f->arrived_ns = t;
		f->flags = LS_FRAME_CHOICES | (i == n_tok - 1 ? LS_FRAME_FINISH : 0);
		f->text_len = 3;
		f->tokens = 1;
	}
	struct ls_frame *d = ls_request_add_frame(r);
	cr_assert_not_null(d);
	d->arrived_ns = t - 9 * MS;
	d->flags = LS_FRAME_DONE;
	r->done_frame_ns = d->arrived_ns;
	r->finished_ns = d->arrived_ns + MS;
	r->usage_completion_tokens = n_tok;
}

static struct ls_read_rules rules_at(enum ls_origin c)
{
	struct ls_profile p;
	cr_assert_eq(ls_profile_builtin("honest", &p), 0);
	p.read.origin = c;
	return p.read;
}

/* 10 requests 100 ms apart, TTFT 20 ms from started; the last 3 waited 200 ms for a slot. */
static void slot_run(struct ls_run *run, struct ls_request *rs)
{
	memset(run, 0, sizeof(*run));
	for (int i = 0; i < 10; i++)
		req(&rs[i], (uint64_t)i, (uint64_t)i * 100, i >= 7 ? 200 : 0, 20, 5);
	run->requests = rs;
	run->n_requests = 10;
	run->start_ns = T0;
}

static void free_run(struct ls_request *rs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ls_request_free(&rs[i]);
}

Test(sweep_slo, each_clock_reads_its_own_origin)
{
	struct ls_request rs[10] = { 0 };
	struct ls_run run;
	slot_run(&run, rs);
	struct ls_slo_set set = parse_ok("ttft:p90<=50ms,itl:p99<=15ms");
	struct ls_slo_eval e[LS_ORIGIN__COUNT];
	for (int c = 0; c < LS_ORIGIN__COUNT; c++) {
		struct ls_read_rules rules = rules_at((enum ls_origin)c);
		cr_assert_eq(ls_slo_evaluate(&run, &rules, &set, &e[c]), 0);
	}
	/* p90 of TTFT from scheduled: 7 x 21 ms and 3 x 221 ms -> 221 ms; from started 20 ms. */
	cr_expect(fabs(e[LS_ORIGIN_SCHEDULED].value_ms[0] - 221) < 1e-6, "%g", e[LS_ORIGIN_SCHEDULED].value_ms[0]);
	cr_expect(fabs(e[LS_ORIGIN_ADMITTED].value_ms[0] - 21) < 1e-6, "%g", e[LS_ORIGIN_ADMITTED].value_ms[0]);
	cr_expect(fabs(e[LS_ORIGIN_STARTED].value_ms[0] - 20) < 1e-6, "%g", e[LS_ORIGIN_STARTED].value_ms[0]);
	cr_expect(!e[LS_ORIGIN_SCHEDULED].pass, "the slot wait breaks the SLO from scheduled");
	cr_expect(e[LS_ORIGIN_STARTED].pass && e[LS_ORIGIN_ADMITTED].pass, "it is invisible after the slot");
	cr_expect(fabs(e[LS_ORIGIN_STARTED].value_ms[1] - 10) < 1e-6, "ITL is 10 ms: %g", e[2].value_ms[1]);
	cr_expect(fabs(e[LS_ORIGIN_SCHEDULED].goodput - 0.7) < 1e-12, "7 of 10 meet 50 ms from scheduled");
	cr_expect_eq(e[LS_ORIGIN_STARTED].goodput, 1.0);
	free_run(rs, 10);
}

Test(sweep_slo, failures_are_never_good_and_goodput_min_decides)
{
	struct ls_request rs[10] = { 0 };
	struct ls_run run;
	slot_run(&run, rs);
	rs[3].fail = LS_FAIL_HTTP_STATUS;
	rs[3].http_status = 500;
	struct ls_slo_set set = parse_ok("ttft:p50<=50ms");
	struct ls_read_rules rules = rules_at(LS_ORIGIN_STARTED);
	struct ls_slo_eval e;
	set.goodput_min = 0.95;
	cr_assert_eq(ls_slo_evaluate(&run, &rules, &set, &e), 0);
	cr_expect_eq(e.n_measured, 10);
	cr_expect_eq(e.n_ok, 9);
	cr_expect(fabs(e.goodput - 0.9) < 1e-12, "the failed request is not good: %g", e.goodput);
	cr_expect(e.met[0], "the percentile is over the successes");
	cr_expect(!e.pass, "goodput 0.9 < 0.95 fails the point");
	set.goodput_min = 0.9;
	cr_assert_eq(ls_slo_evaluate(&run, &rules, &set, &e), 0);
	cr_expect(e.pass);
	for (int i = 0; i < 10; i++)
		rs[i].fail = LS_FAIL_CONNECT;
	cr_assert_eq(ls_slo_evaluate(&run, &rules, &set, &e), 0);
	cr_expect(!e.pass && e.n_ok == 0, "a point with no success never meets an SLO");
	free_run(rs, 10);
}

Test(sweep_slo, a_requests_own_itl_decides_its_goodput)
{
	struct ls_request rs[2] = { 0 };
	req(&rs[0], 0, 0, 0, 20, 5);
	req(&rs[1], 1, 100, 0, 20, 5);
	rs[1].frames[3].arrived_ns += 40 * MS; /* one gap of 50 ms, the next of -30: the stall */
	rs[1].frames[4].arrived_ns += 40 * MS;
	struct ls_run run = { .requests = rs, .n_requests = 2, .start_ns = T0 };
	struct ls_slo_set set = parse_ok("itl:p99<=20ms");
	struct ls_read_rules rules = rules_at(LS_ORIGIN_STARTED);
	struct ls_slo_eval e;
	cr_assert_eq(ls_slo_evaluate(&run, &rules, &set, &e), 0);
	cr_expect_eq(e.n_good, 1, "the request with a 50 ms gap is not good");
	cr_expect(!e.met[0], "p99 over the pooled gaps sees the 50 ms one: %g", e.value_ms[0]);
	free_run(rs, 2);
}

Test(sweep_slo, trim_cuts_by_schedule_not_run_order)
{
	struct ls_request rs[10] = { 0 };
	struct ls_run run;
	slot_run(&run, rs);
	/* Run order is finish order: swap so the earliest scheduled is not first. */
	struct ls_request tmp = rs[0];
	rs[0] = rs[9];
	rs[9] = tmp;
	cr_expect_eq(ls_sweep_trim(&run, 0.2, 0.1), 3);
	uint64_t first = T0, second = T0 + 100 * MS, last = T0 + 900 * MS;
	for (int i = 0; i < 10; i++) {
		uint64_t s = rs[i].scheduled_ns;
		cr_expect_eq(rs[i].warmup, s == first || s == second || s == last, "scheduled at +%llu ms",
			     (unsigned long long)((s - T0) / MS));
	}
	cr_expect_eq(ls_sweep_trim(&run, 0.6, 0.5), 0, "of the 7 left, 4 + 3 would leave nothing: nothing is trimmed");
	cr_expect_eq(ls_sweep_trim(&run, 0.3, 0), 2, "the marked ones are out of the count: 30%% of 7");
	free_run(rs, 10);
}
