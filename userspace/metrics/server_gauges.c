/* server_gauges.c — see server_gauges.h. */
#include <math.h>
#include <string.h>
#include "metrics/server_gauges.h"

void ls_gauge_summarize(const struct ls_gauge_series *s, uint64_t run_start_ns, struct ls_gauge_summary *out)
{
	memset(out, 0, sizeof(*out));
	if (!s || !s->on)
		return;
	out->on = 1;
	out->n_samples = s->n;
	for (int m = 0; m < LS_GMISS__COUNT; m++)
		out->n_missed += s->n_missed[m];
	double sum[LS_GAUGE__COUNT] = { 0 }, answer_sum = 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct ls_gauge_sample *x = &s->samples[i];
		double answer_ms = x->arrived_ns > x->start_ns ? (double)(x->arrived_ns - x->start_ns) / 1e6 : 0;
		answer_sum += answer_ms;
		if (answer_ms > out->answer_ms_max)
			out->answer_ms_max = answer_ms;
		for (int g = 0; g < LS_GAUGE__COUNT; g++) {
			struct ls_gauge_stat *st = &out->g[g];
			if (isnan(x->v[g]))
				continue;
			if (!st->n++ || x->v[g] > st->peak) {
				st->peak = x->v[g];
				st->peak_at_s = x->arrived_ns > run_start_ns ? (double)(x->arrived_ns - run_start_ns) / 1e9 : 0;
			}
			sum[g] += x->v[g];
		}
	}
	for (int g = 0; g < LS_GAUGE__COUNT; g++)
		out->g[g].mean = out->g[g].n ? sum[g] / (double)out->g[g].n : 0;
	out->answer_ms_mean = s->n ? answer_sum / (double)s->n : 0;
	if (s->n > 1)
		out->interval_ms_mean = (double)(s->samples[s->n - 1].arrived_ns - s->samples[0].arrived_ns) / 1e6 /
					(double)(s->n - 1);
}

size_t ls_gauge_in_flight_at(const struct ls_run *run, uint64_t t_ns)
{
	size_t n = 0;
	for (size_t i = 0; i < run->n_requests; i++) {
		const struct ls_request *r = &run->requests[i];
		if (!r->warmup && r->started_ns && r->started_ns <= t_ns && (!r->finished_ns || r->finished_ns > t_ns))
			n++;
	}
	return n;
}
