/* sweep_search.c — see sweep_slo.h: capacity per clock from the points so far, the next point
 * of the search, over-saturation and the knee. Pure functions of the points' numbers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "metrics/sweep_slo.h"

void ls_sweep_capacity(const struct ls_sweep_obs *obs, size_t n, enum ls_origin clock, struct ls_sweep_cap *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < n; i++)
		if (!obs[i].pass[clock] && (!out->has_fail || obs[i].x < out->fail)) {
			out->has_fail = 1;
			out->fail = obs[i].x;
		}
	/* Only a pass below the first failure counts: a pass above it is noise on a rate the
	 * deployment already failed at, not capacity. */
	for (size_t i = 0; i < n; i++)
		if (obs[i].pass[clock] && (!out->has_fail || obs[i].x < out->fail) &&
		    (!out->has_cap || obs[i].x > out->cap)) {
			out->has_cap = 1;
			out->cap = obs[i].x;
		}
}

static int was_run(const struct ls_sweep_obs *obs, size_t n, double x)
{
	for (size_t i = 0; i < n; i++)
		if (fabs(obs[i].x - x) <= 1e-9 * (fabs(x) + 1.0))
			return 1;
	return 0;
}

static double clamp_x(const struct ls_sweep_search *s, double x)
{
	if (s->integer)
		x = round(x);
	if (x > s->max)
		x = s->max;
	if (x < s->min)
		x = s->min;
	return x;
}

/* The lowest and highest x run. */
static void x_range(const struct ls_sweep_obs *obs, size_t n, double *lo, double *hi)
{
	*lo = *hi = obs[0].x;
	for (size_t i = 1; i < n; i++) {
		if (obs[i].x < *lo)
			*lo = obs[i].x;
		if (obs[i].x > *hi)
			*hi = obs[i].x;
	}
}

/* The geometric phase: up while a clock has not failed, down while a clock has no pass. */
static int next_geometric(const struct ls_sweep_search *s, const struct ls_sweep_obs *obs, size_t n, double *next)
{
	double lo, hi;
	x_range(obs, n, &lo, &hi);
	for (int c = 0; c < LS_ORIGIN__COUNT; c++) {
		struct ls_sweep_cap k;
		ls_sweep_capacity(obs, n, (enum ls_origin)c, &k);
		double x;
		if (!k.has_fail && hi < s->max)
			x = clamp_x(s, hi * s->factor);
		else if (!k.has_cap && lo > s->min)
			x = clamp_x(s, lo / s->factor);
		else
			continue;
		if (!was_run(obs, n, x)) {
			*next = x;
			return 1;
		}
	}
	return 0;
}

/* The bisection phase: the midpoint of the widest open bracket (relative to its low end). */
static int next_bisect(const struct ls_sweep_search *s, const struct ls_sweep_obs *obs, size_t n, double *next,
		       size_t *open)
{
	double best = 0.0, best_x = 0.0;
	*open = 0;
	for (int c = 0; c < LS_ORIGIN__COUNT; c++) {
		struct ls_sweep_cap k;
		ls_sweep_capacity(obs, n, (enum ls_origin)c, &k);
		if (!k.has_cap || !k.has_fail || k.fail - k.cap <= s->precision * k.cap)
			continue;
		double mid = s->integer ? floor((k.cap + k.fail) / 2.0) : (k.cap + k.fail) / 2.0;
		if (mid <= k.cap || mid >= k.fail || was_run(obs, n, mid))
			continue; /* whole numbers with nothing between them: settled */
		/* Bisections left for this bracket, for the ETA. */
		double w = (k.fail - k.cap) / (s->precision * k.cap > 0 ? s->precision * k.cap : 1.0);
		*open += (size_t)ceil(log2(w > 1.0 ? w : 1.0));
		double rel = (k.fail - k.cap) / k.cap;
		if (rel > best) {
			best = rel;
			best_x = mid;
		}
	}
	if (best <= 0.0)
		return 0;
	*next = best_x;
	return 1;
}

int ls_sweep_next(const struct ls_sweep_search *s, const struct ls_sweep_obs *obs, size_t n, double *next)
{
	size_t open;
	if (!n) {
		*next = clamp_x(s, s->start);
		return 1;
	}
	return next_geometric(s, obs, n, next) || next_bisect(s, obs, n, next, &open);
}

size_t ls_sweep_points_left(const struct ls_sweep_search *s, const struct ls_sweep_obs *obs, size_t n)
{
	double lo, hi, x;
	size_t left = 0, open = 0;
	if (!n)
		return 1 + (size_t)ceil(log(s->max / (s->start > 0 ? s->start : 1)) / log(s->factor));
	x_range(obs, n, &lo, &hi);
	for (int c = 0; c < LS_ORIGIN__COUNT; c++) {
		struct ls_sweep_cap k;
		ls_sweep_capacity(obs, n, (enum ls_origin)c, &k);
		if (!k.has_fail && hi < s->max) {
			size_t up = (size_t)ceil(log(s->max / hi) / log(s->factor));
			left = up > left ? up : left;
		}
	}
	/* The bisections open now; after a geometric step a new bracket opens, guessed as one
	 * factor wide. */
	next_bisect(s, obs, n, &x, &open);
	if (left)
		open += (size_t)ceil(log2((s->factor - 1.0) / s->precision));
	return left + open;
}

/* Mean schedule -> first token wait of requests ix[from..to) (ok ones). */
static double mean_wait(const struct ls_request *const *r, size_t from, size_t to)
{
	double sum = 0.0;
	size_t k = 0;
	for (size_t i = from; i < to; i++) {
		uint64_t t = r[i]->n_frames ? r[i]->frames[0].arrived_ns : r[i]->finished_ns;
		if (t > r[i]->scheduled_ns) {
			sum += (double)(t - r[i]->scheduled_ns) / 1e9;
			k++;
		}
	}
	return k ? sum / (double)k : 0.0;
}

static int cmp_sched_req(const void *a, const void *b)
{
	const struct ls_request *x = *(const struct ls_request *const *)a, *y = *(const struct ls_request *const *)b;
	return x->scheduled_ns < y->scheduled_ns ? -1 : x->scheduled_ns > y->scheduled_ns;
}

void ls_sweep_oversat(const struct ls_run *run, double target_rate, struct ls_oversat *out)
{
	memset(out, 0, sizeof(*out));
	size_t n = 0;
	uint64_t first = UINT64_MAX, last = 0;
	for (size_t i = 0; i < run->n_requests; i++) {
		const struct ls_request *r = &run->requests[i];
		if (r->warmup || !r->finished_ns)
			continue;
		n++;
		first = r->scheduled_ns < first ? r->scheduled_ns : first;
		last = r->finished_ns > last ? r->finished_ns : last;
	}
	if (target_rate <= 0.0 || n < LS_OVERSAT_MIN_DONE || last <= first)
		return;
	const struct ls_request **rs = malloc(n * sizeof(*rs));
	if (!rs)
		return; /* not judged: the point runs to its end, which is slower, not wrong */
	size_t k = 0;
	for (size_t i = 0; i < run->n_requests; i++)
		if (!run->requests[i].warmup && run->requests[i].finished_ns)
			rs[k++] = &run->requests[i];
	qsort(rs, n, sizeof(*rs), cmp_sched_req);
	out->done_rate = (double)n / ((double)(last - first) / 1e9);
	out->early_wait_s = mean_wait(rs, 0, n / 4);
	out->late_wait_s = mean_wait(rs, n - n / 4, n);
	free(rs);
	out->oversat = out->done_rate < LS_OVERSAT_RATE * target_rate &&
		       out->late_wait_s > LS_OVERSAT_GROWTH * out->early_wait_s &&
		       out->late_wait_s > LS_OVERSAT_MIN_WAIT_S;
}

long ls_sweep_knee(const double *throughput, const double *latency_s, size_t n)
{
	long best = -1;
	double best_power = 0.0;
	for (size_t i = 0; i < n; i++) {
		if (!(throughput[i] > 0.0 && latency_s[i] > 0.0))
			continue;
		double power = throughput[i] / latency_s[i];
		if (power > best_power) {
			best_power = power;
			best = (long)i;
		}
	}
	return best;
}
