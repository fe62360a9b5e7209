/* report_gauges.c — the server's /metrics series (server/metrics_poll.h) in the text report and
 * the result JSON: its summary (metrics/server_gauges.h) and, in the JSON, every sample. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "metrics/server_gauges.h"
#include "report/report.h"

static const char *const gauge_label[LS_GAUGE__COUNT] = { "Running requests", "Waiting requests", "KV-cache use" };

/* "where the samples came from, and what went wrong" in words. */
static void misses_line(FILE *out, const struct ls_gauge_series *s)
{
	char buf[512];
	size_t len = (size_t)snprintf(buf, sizeof(buf), "%llu of %llu", (unsigned long long)(s->n_polls - s->n),
				      (unsigned long long)s->n_polls);
	for (int m = 0; m < LS_GMISS__COUNT && len < sizeof(buf); m++)
		if (s->n_missed[m])
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, ", %s %llu", ls_gauge_miss_name(m),
						(unsigned long long)s->n_missed[m]);
	if (s->first_miss[0] && len < sizeof(buf))
		snprintf(buf + len, sizeof(buf) - len, " (first: %s)", s->first_miss);
	fprintf(out, "%-40s %s\n", "Polls without a sample:", buf);
}

void ls_gauges_print(FILE *out, const struct ls_gauge_series *s, uint64_t run_start_ns)
{
	if (!s || !s->on)
		return;
	struct ls_gauge_summary sum;
	ls_gauge_summarize(s, run_start_ns, &sum);
	fprintf(out, "------------ Server /metrics (%s names) ------------\n",
		s->engine ? ls_gauge_engine_name(s->engine) : "no known");
	fprintf(out, "%-40s every %u ms (each GET at most %u ms), %zu samples\n", "Polled:", s->period_ms,
		s->timeout_ms, s->n);
	if (s->n_polls > s->n)
		misses_line(out, s);
	for (int g = 0; g < LS_GAUGE__COUNT; g++) {
		const struct ls_gauge_stat *st = &sum.g[g];
		char label[64];
		snprintf(label, sizeof(label), "%s peak / mean:", gauge_label[g]);
		if (!st->n)
			fprintf(out, "%-40s not given by the server\n", label);
		else if (g == LS_GAUGE_KV_USE)
			fprintf(out, "%-40s %.1f%% / %.1f%% (peak at %.2f s)\n", label, 100 * st->peak, 100 * st->mean,
				st->peak_at_s);
		else
			fprintf(out, "%-40s %.0f / %.2f (peak at %.2f s)\n", label, st->peak, st->mean, st->peak_at_s);
	}
	if (s->n)
		fprintf(out, "%-40s %.2f / %.2f ms\n", "/metrics answer mean / max:", sum.answer_ms_mean, sum.answer_ms_max);
	if (s->n_polls)
		fprintf(out, "%-40s %.1f ms, %.3f ms per GET (inside the harness CPU)\n", "Poll thread CPU:",
			(double)s->cpu_ns / 1e6, (double)s->cpu_ns / 1e6 / (double)s->n_polls);
	if (s->n_dropped)
		fprintf(out, "%-40s %llu (past %u kept)\n", "Samples not kept:", (unsigned long long)s->n_dropped,
			LS_GAUGE_MAX_SAMPLES);
}

static cJSON *stat_obj(const struct ls_gauge_stat *st)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "samples", (double)st->n);
	if (st->n) {
		cJSON_AddNumberToObject(o, "peak", st->peak);
		cJSON_AddNumberToObject(o, "mean", st->mean);
		cJSON_AddNumberToObject(o, "peak_at_s", st->peak_at_s);
	}
	return o;
}

/* "samples": [[start_ms, answer_ms, running, waiting, kv_use], ...], ms from the run's start. */
static cJSON *samples_arr(const struct ls_gauge_series *s, uint64_t t0)
{
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; arr && i < s->n; i++) {
		const struct ls_gauge_sample *x = &s->samples[i];
		cJSON *row = cJSON_CreateArray();
		if (!row || !cJSON_AddItemToArray(arr, row)) {
			cJSON_Delete(row);
			break;
		}
		cJSON_AddItemToArray(row, cJSON_CreateNumber(((double)x->start_ns - (double)t0) / 1e6));
		cJSON_AddItemToArray(row, cJSON_CreateNumber(((double)x->arrived_ns - (double)t0) / 1e6));
		for (int g = 0; g < LS_GAUGE__COUNT; g++)
			cJSON_AddItemToArray(row, isnan(x->v[g]) ? cJSON_CreateNull() : cJSON_CreateNumber(x->v[g]));
	}
	return arr;
}

cJSON *ls_gauges_json(const struct ls_gauge_series *s, uint64_t run_start_ns)
{
	struct ls_gauge_summary sum;
	ls_gauge_summarize(s, run_start_ns, &sum);
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "engine", ls_gauge_engine_name(s->engine));
	cJSON_AddNumberToObject(o, "period_ms", s->period_ms);
	cJSON_AddNumberToObject(o, "timeout_ms", s->timeout_ms);
	cJSON_AddNumberToObject(o, "polls", (double)s->n_polls);
	cJSON *missed = cJSON_AddObjectToObject(o, "missed");
	for (int m = 0; missed && m < LS_GMISS__COUNT; m++)
		cJSON_AddNumberToObject(missed, ls_gauge_miss_name(m), (double)s->n_missed[m]);
	cJSON_AddStringToObject(o, "first_miss", s->first_miss);
	cJSON_AddNumberToObject(o, "samples_dropped", (double)s->n_dropped);
	cJSON_AddNumberToObject(o, "poll_cpu_ms", (double)s->cpu_ns / 1e6);
	cJSON_AddNumberToObject(o, "answer_ms_mean", sum.answer_ms_mean);
	cJSON_AddNumberToObject(o, "answer_ms_max", sum.answer_ms_max);
	for (int g = 0; g < LS_GAUGE__COUNT; g++)
		cJSON_AddItemToObject(o, ls_gauge_name(g), stat_obj(&sum.g[g]));
	cJSON_AddStringToObject(o, "sample_fields", "start_ms,answer_ms,running,waiting,kv_use");
	cJSON_AddItemToObject(o, "samples", samples_arr(s, run_start_ns));
	return o;
}
