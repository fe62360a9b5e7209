/* sweep_slo.c — see sweep_slo.h: the SLO, its verdict on one run per clock, and the sweep's
 * search over points. Pure: records and numbers in, numbers out. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "metrics/sweep_slo.h"

static const char *const slo_names[] = { "ttft", "itl", "e2el", "tpot" };

const char *ls_slo_metric_name(enum ls_slo_metric m)
{
	return (unsigned)m < LS_SLO__COUNT ? slo_names[m] : "?";
}

/* One "metric:pNN<=VALUE[unit]" item of len bytes at s. 0 or -EINVAL with err. */
static int parse_item(const char *s, size_t len, struct ls_slo *out, char *err, size_t errcap)
{
	char item[128];
	if (len >= sizeof(item)) {
		snprintf(err, errcap, "'%.40s...': too long", s);
		return -EINVAL;
	}
	memcpy(item, s, len);
	item[len] = 0;
	const char *colon = strchr(item, ':');
	size_t mlen = colon ? (size_t)(colon - item) : 0;
	int metric = -1;
	for (int i = 0; colon && i < LS_SLO__COUNT; i++)
		if (strlen(slo_names[i]) == mlen && !strncmp(item, slo_names[i], mlen))
			metric = i;
	if (metric < 0) {
		snprintf(err, errcap, "'%s': the metric must be ttft, itl, e2el or tpot, then ':'", item);
		return -EINVAL;
	}
	char *end;
	const char *p = colon + 1;
	if (*p != 'p' || (errno = 0, out->pct = strtod(p + 1, &end), end == p + 1) || errno ||
	    !(out->pct > 0.0 && out->pct <= 100.0)) {
		snprintf(err, errcap, "'%s': expected a percentile p1..p100 after ':' (e.g. ttft:p99<=500ms)", item);
		return -EINVAL;
	}
	if (strncmp(end, "<=", 2)) {
		snprintf(err, errcap, "'%s': expected '<=' after the percentile", item);
		return -EINVAL;
	}
	p = end + 2;
	errno = 0;
	double v = strtod(p, &end);
	double scale = 1.0; /* ms */
	if (end == p || errno || !(v >= 0.0) || isinf(v)) {
		snprintf(err, errcap, "'%s': expected a limit >= 0 after '<=' (e.g. 500ms, 10s)", item);
		return -EINVAL;
	}
	if (!strcmp(end, "s"))
		scale = 1e3;
	else if (!strcmp(end, "us"))
		scale = 1e-3;
	else if (*end && strcmp(end, "ms")) {
		snprintf(err, errcap, "'%s': unit '%s' is not us, ms or s", item, end);
		return -EINVAL;
	}
	out->metric = (enum ls_slo_metric)metric;
	out->limit_ms = v * scale;
	return 0;
}

int ls_slo_parse(const char *s, struct ls_slo_set *set, char *err, size_t errcap)
{
	struct ls_slo_set tmp = *set;
	tmp.n = 0;
	if (!s || !*s) {
		snprintf(err, errcap, "empty: give e.g. \"ttft:p99<=500ms,itl:p99<=50ms\"");
		return -EINVAL;
	}
	for (const char *p = s;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		while (len && *p == ' ')
			p++, len--;
		while (len && p[len - 1] == ' ')
			len--;
		if (tmp.n == LS_SLO_MAX) {
			snprintf(err, errcap, "more than %d items", LS_SLO_MAX);
			return -EINVAL;
		}
		if (!len) {
			snprintf(err, errcap, "an empty item in \"%s\"", s);
			return -EINVAL;
		}
		struct ls_slo *o = &tmp.slo[tmp.n];
		int rc = parse_item(p, len, o, err, errcap);
		if (rc)
			return rc;
		for (size_t i = 0; i < tmp.n; i++)
			if (tmp.slo[i].metric == o->metric && tmp.slo[i].pct == o->pct) {
				snprintf(err, errcap, "'%.*s': %s:p%g is given twice", (int)len, p,
					 slo_names[o->metric], o->pct);
				return -EINVAL;
			}
		tmp.n++;
		if (!comma)
			break;
		p = comma + 1;
	}
	*set = tmp;
	return 0;
}

/* Per-request values one SLO reads (seconds); the sample of ok requests is built from these. */
struct req_vals {
	double ttft, e2el, tpot;
	int    has_tpot;
};

static double req_value(const struct req_vals *v, enum ls_slo_metric m)
{
	return m == LS_SLO_TTFT ? v->ttft : m == LS_SLO_E2EL ? v->e2el : v->tpot;
}

/* Whether one ok request meets every SLO on its own (its own ITLs at each ITL SLO's
 * percentile). itls: its ITL samples, sorted. */
static int req_good(const struct ls_slo_set *set, const struct req_vals *v, const double *itls, size_t n_itl)
{
	for (size_t k = 0; k < set->n; k++) {
		const struct ls_slo *s = &set->slo[k];
		double ms;
		if (s->metric == LS_SLO_ITL) {
			if (!n_itl)
				continue; /* one token: no gap to judge */
			ms = ls_percentile(itls, n_itl, s->pct) * 1e3;
		} else if (s->metric == LS_SLO_TPOT && !v->has_tpot) {
			continue;
		} else {
			ms = req_value(v, s->metric) * 1e3;
		}
		if (ms > s->limit_ms)
			return 0;
	}
	return 1;
}

/* Growable pool of ITL samples of every ok request. */
struct pool {
	double *v;
	size_t  n, cap;
};

static int pool_reserve(struct pool *p, size_t extra)
{
	if (p->n + extra <= p->cap)
		return 0;
	size_t cap = p->cap ? p->cap : 256;
	while (cap < p->n + extra)
		cap *= 2;
	double *v = realloc(p->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	p->v = v;
	p->cap = cap;
	return 0;
}

/* Reads every measured request: fills vals (ok ones), the ITL pool and out's counts. */
static int read_requests(const struct ls_run *run, const struct ls_read_rules *rules, const struct ls_slo_set *set,
			 struct req_vals *vals, struct pool *itl, struct ls_slo_eval *out)
{
	for (size_t i = 0; i < run->n_requests; i++) {
		const struct ls_request *r = &run->requests[i];
		struct ls_req_view v;
		if (r->warmup)
			continue;
		out->n_measured++;
		if (!ls_request_view(r, rules, &v))
			continue;
		struct req_vals *rv = &vals[out->n_ok++];
		rv->ttft = v.ttft_s[rules->origin];
		rv->e2el = v.e2el_s[rules->origin];
		rv->tpot = v.tpot_s;
		rv->has_tpot = v.has_tpot;
		size_t k = ls_request_itls(r, rules, rules->itl_mode, NULL, 0);
		if (pool_reserve(itl, k))
			return -ENOMEM;
		double *mine = itl->v + itl->n;
		ls_request_itls(r, rules, rules->itl_mode, mine, k);
		itl->n += k;
		ls_sort_doubles(mine, k);
		out->n_good += req_good(set, rv, mine, k);
	}
	return 0;
}

/* Each SLO's percentile over the ok requests; met when within its limit. */
static int judge_percentiles(const struct ls_slo_set *set, const struct req_vals *vals, struct pool *itl,
			     struct ls_slo_eval *out)
{
	double *sample = malloc((out->n_ok ? out->n_ok : 1) * sizeof(*sample));
	if (!sample)
		return -ENOMEM;
	ls_sort_doubles(itl->v, itl->n);
	for (size_t k = 0; k < set->n; k++) {
		const struct ls_slo *s = &set->slo[k];
		double v;
		if (s->metric == LS_SLO_ITL) {
			v = ls_percentile(itl->v, itl->n, s->pct);
		} else {
			size_t m = 0;
			for (size_t i = 0; i < out->n_ok; i++)
				if (s->metric != LS_SLO_TPOT || vals[i].has_tpot)
					sample[m++] = req_value(&vals[i], s->metric);
			ls_sort_doubles(sample, m);
			v = ls_percentile(sample, m, s->pct);
		}
		out->value_ms[k] = v * 1e3;
		out->met[k] = out->n_ok > 0 && out->value_ms[k] <= s->limit_ms;
	}
	free(sample);
	return 0;
}

int ls_slo_evaluate(const struct ls_run *run, const struct ls_read_rules *rules, const struct ls_slo_set *set,
		    struct ls_slo_eval *out)
{
	memset(out, 0, sizeof(*out));
	struct req_vals *vals = malloc((run->n_requests ? run->n_requests : 1) * sizeof(*vals));
	struct pool itl = { 0 };
	int rc = -ENOMEM;
	if (!vals)
		return rc;
	rc = read_requests(run, rules, set, vals, &itl, out);
	if (!rc)
		rc = judge_percentiles(set, vals, &itl, out);
	free(vals);
	free(itl.v);
	if (rc)
		return rc;
	out->goodput = out->n_measured ? (double)out->n_good / (double)out->n_measured : 0.0;
	out->pass = out->n_ok > 0 && (set->goodput_min < 0.0 || out->goodput >= set->goodput_min);
	for (size_t k = 0; k < set->n; k++)
		out->pass = out->pass && out->met[k];
	return 0;
}

/* A measured request's place in the schedule. */
struct sched_ix {
	uint64_t t;
	size_t   i;
};

static int cmp_sched(const void *a, const void *b)
{
	const struct sched_ix *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i; /* ties in run order: the same cut every time */
}

size_t ls_sweep_trim(struct ls_run *run, double warm, double cool)
{
	size_t n = 0;
	for (size_t i = 0; i < run->n_requests; i++)
		n += !run->requests[i].warmup;
	size_t n_warm = (size_t)floor((double)n * (warm > 0 ? warm : 0));
	size_t n_cool = (size_t)floor((double)n * (cool > 0 ? cool : 0));
	if (!n || n_warm + n_cool >= n)
		return 0;
	struct sched_ix *ix = malloc(n * sizeof(*ix));
	if (!ix)
		return 0; /* nothing trimmed: the point is read whole, which is still a reading */
	size_t k = 0;
	for (size_t i = 0; i < run->n_requests; i++)
		if (!run->requests[i].warmup)
			ix[k++] = (struct sched_ix){ run->requests[i].scheduled_ns, i };
	qsort(ix, n, sizeof(*ix), cmp_sched);
	for (k = 0; k < n_warm; k++)
		run->requests[ix[k].i].warmup = 1;
	for (k = n - n_cool; k < n; k++)
		run->requests[ix[k].i].warmup = 1;
	free(ix);
	return n_warm + n_cool;
}
