/* sweep_point.c — see sweep_slo.h: one point's run read per clock, the verdict at an x over
 * its repeats, and the sweep's summary (capacity per clock, the started clock's overstatement,
 * the knee). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "metrics/sweep_slo.h"

/* The value of percentile pct in a stat computed at {50, 99}. */
static double stat_at(const struct ls_stat *st, double pct)
{
	for (size_t i = 0; i < st->n_pcts; i++)
		if (st->pcts[i] == pct)
			return st->pct_ms[i];
	return 0.0;
}

/* Per-clock figures of one origin. */
static int read_clock(const struct ls_run *run, const struct ls_read_rules *base, const struct ls_slo_set *slo,
		      enum ls_origin c, struct ls_sweep_point *p)
{
	struct ls_read_rules rules = *base;
	struct ls_metrics m;
	rules.origin = c;
	rules.n_percentiles = 2;
	rules.percentiles[0] = 50;
	rules.percentiles[1] = 99;
	rules.n_itl_percentiles = 0;
	int rc = ls_metrics_compute(run, &rules, NULL, &m);
	if (rc)
		return rc;
	struct ls_sweep_clock *k = &p->clock[c];
	k->ttft_p50_ms = stat_at(&m.ttft, 50);
	k->ttft_p99_ms = stat_at(&m.ttft, 99);
	k->e2el_p50_ms = stat_at(&m.e2el, 50);
	k->e2el_p99_ms = stat_at(&m.e2el, 99);
	if (c == LS_ORIGIN_SCHEDULED) { /* clock-free figures: once */
		p->n_measured = m.n_measured;
		p->failed = m.failed;
		ls_metrics_fail_list(&m, p->fail_list, sizeof(p->fail_list));
		p->slot_wait_p50_ms = stat_at(&m.slot_wait, 50);
		p->slot_wait_p99_ms = stat_at(&m.slot_wait, 99);
		p->itl_p50_ms = stat_at(&m.itl, 50);
		p->itl_p99_ms = stat_at(&m.itl, 99);
	}
	ls_metrics_free(&m);
	rc = ls_slo_evaluate(run, &rules, slo, &k->eval);
	p->pass[c] = k->eval.pass;
	return rc;
}

int ls_sweep_point_read(struct ls_run *run, const struct ls_read_rules *rules, const struct ls_slo_set *slo,
			double warm, double cool, struct ls_sweep_point *p)
{
	/* The rates are the whole run's: the trimmed ramp and drain are part of the run's span, so
	 * rates over the trimmed requests alone would read low. */
	struct ls_metrics whole;
	struct ls_read_rules r = *rules;
	r.n_itl_percentiles = 0;
	if (ls_metrics_compute(run, &r, NULL, &whole))
		return -ENOMEM;
	p->realised_rate = whole.realised_rate;
	p->throughput = whole.request_throughput;
	ls_metrics_free(&whole);
	p->trimmed = ls_sweep_trim(run, warm, cool);
	p->target_rate = run->target_rate;
	for (int c = 0; c < LS_ORIGIN__COUNT; c++) {
		int rc = read_clock(run, rules, slo, (enum ls_origin)c, p);
		if (rc)
			return rc;
	}
	if (!strcmp(p->stopped, "oversaturated"))
		p->pass[LS_ORIGIN_SCHEDULED] = 0;
	return 0;
}

static int same_x(double a, double b)
{
	return fabs(a - b) <= 1e-9 * (fabs(a) + 1.0);
}

int ls_sweep_obs_at(const struct ls_sweep_point *pts, size_t n, const struct ls_slo_set *slo, double x,
		    struct ls_sweep_obs *obs)
{
	size_t k = 0;
	double sum[LS_ORIGIN__COUNT][LS_SLO_MAX] = { { 0 } }, good[LS_ORIGIN__COUNT] = { 0 };
	int all_ok[LS_ORIGIN__COUNT] = { 1, 1, 1 }, oversat = 0;
	for (size_t i = 0; i < n; i++) {
		if (!same_x(pts[i].x, x))
			continue;
		k++;
		oversat |= !strcmp(pts[i].stopped, "oversaturated");
		for (int c = 0; c < LS_ORIGIN__COUNT; c++) {
			const struct ls_slo_eval *e = &pts[i].clock[c].eval;
			all_ok[c] &= e->n_ok > 0;
			good[c] += e->goodput;
			for (size_t s = 0; s < slo->n; s++)
				sum[c][s] += e->value_ms[s];
		}
	}
	if (!k)
		return 0;
	obs->x = x;
	for (int c = 0; c < LS_ORIGIN__COUNT; c++) {
		int pass = all_ok[c] && (slo->goodput_min < 0 || good[c] / (double)k >= slo->goodput_min);
		for (size_t s = 0; s < slo->n; s++)
			pass = pass && sum[c][s] / (double)k <= slo->slo[s].limit_ms;
		obs->pass[c] = pass;
	}
	if (oversat)
		obs->pass[LS_ORIGIN_SCHEDULED] = 0;
	return 1;
}

/* The distinct x of pts, as observations, in first-run order. */
static size_t observations(const struct ls_sweep_point *pts, size_t n, const struct ls_slo_set *slo,
			   struct ls_sweep_obs *obs)
{
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		int seen = 0;
		for (size_t j = 0; j < m && !seen; j++)
			seen = same_x(obs[j].x, pts[i].x);
		if (!seen)
			m += (size_t)ls_sweep_obs_at(pts, n, slo, pts[i].x, &obs[m]);
	}
	return m;
}

void ls_sweep_summarise(const struct ls_sweep_point *pts, size_t n, const struct ls_slo_set *slo,
			struct ls_sweep_obs *obs_buf, struct ls_sweep_summary *s)
{
	memset(s, 0, sizeof(*s));
	s->knee = -1;
	s->n_x = observations(pts, n, slo, obs_buf);
	for (int c = 0; c < LS_ORIGIN__COUNT; c++) {
		ls_sweep_capacity(obs_buf, s->n_x, (enum ls_origin)c, &s->cap[c]);
		s->above_all[c] = s->cap[c].has_cap && !s->cap[c].has_fail;
	}
	const struct ls_sweep_cap *st = &s->cap[LS_ORIGIN_STARTED], *sc = &s->cap[LS_ORIGIN_SCHEDULED];
	/* Only a bracketed scheduled capacity can be overstated: one above every point is unknown. */
	if (st->has_cap && sc->has_cap && sc->has_fail && sc->cap > 0) {
		s->has_overstatement = 1;
		s->overstatement_pct = (st->cap / sc->cap - 1.0) * 100.0;
	}
	/* The knee on the completed throughput and the scheduled clock's median E2EL: the latency
	 * a user sees, queue included. */
	double thr[256], lat[256];
	size_t m = n < 256 ? n : 256;
	for (size_t i = 0; i < m; i++) {
		thr[i] = pts[i].throughput;
		lat[i] = pts[i].clock[LS_ORIGIN_SCHEDULED].e2el_p50_ms / 1e3;
	}
	s->knee = ls_sweep_knee(thr, lat, m);
}

/* Welford's running mean and variance: one pass, no cancellation. */
struct acc {
	double n, mean, m2;
};

static void acc_add(struct acc *a, double v)
{
	a->n += 1;
	double d = v - a->mean;
	a->mean += d / a->n;
	a->m2 += d * (v - a->mean);
}

static double acc_sd(const struct acc *a)
{
	return a->n > 0 ? sqrt(a->m2 / a->n) : 0.0;
}

/* The spread of the points at x. */
static void spread_at(const struct ls_sweep_point *pts, size_t n, const struct ls_slo_set *slo, double x,
		      struct ls_sweep_spread *o)
{
	struct acc v[LS_ORIGIN__COUNT][LS_SLO_MAX], g[LS_ORIGIN__COUNT], thr = { 0 };
	memset(v, 0, sizeof(v));
	memset(g, 0, sizeof(g));
	memset(o, 0, sizeof(*o));
	o->x = x;
	for (size_t i = 0; i < n; i++) {
		if (!same_x(pts[i].x, x))
			continue;
		o->n++;
		acc_add(&thr, pts[i].throughput);
		for (int c = 0; c < LS_ORIGIN__COUNT; c++) {
			acc_add(&g[c], pts[i].clock[c].eval.goodput);
			for (size_t s = 0; s < slo->n; s++)
				acc_add(&v[c][s], pts[i].clock[c].eval.value_ms[s]);
		}
	}
	o->throughput_mean = thr.mean;
	o->throughput_sd = acc_sd(&thr);
	for (int c = 0; c < LS_ORIGIN__COUNT; c++) {
		o->goodput_mean[c] = g[c].mean;
		o->goodput_sd[c] = acc_sd(&g[c]);
		for (size_t s = 0; s < slo->n; s++) {
			o->mean_ms[c][s] = v[c][s].mean;
			o->sd_ms[c][s] = acc_sd(&v[c][s]);
		}
	}
}

size_t ls_sweep_spreads(const struct ls_sweep_point *pts, size_t n, const struct ls_slo_set *slo,
			struct ls_sweep_spread *out, size_t cap)
{
	size_t m = 0;
	for (size_t i = 0; i < n && m < cap; i++) {
		int seen = 0;
		for (size_t j = 0; j < m && !seen; j++)
			seen = same_x(out[j].x, pts[i].x);
		if (!seen)
			spread_at(pts, n, slo, pts[i].x, &out[m++]);
	}
	return m;
}

enum ls_sweep_verdict ls_sweep_verdict_of(const struct ls_sweep_summary *s, enum ls_origin clock)
{
	if (!s->cap[clock].has_cap)
		return LS_SWEEP_NONE_MET;
	return s->above_all[clock] ? LS_SWEEP_ALL_MET : LS_SWEEP_FOUND;
}
