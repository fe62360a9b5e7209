/* report_html_charts.c — the run page's charts (html.h): where the latency went, the timeline
 * with requests in flight and output tokens per second, and the distributions. The data are
 * computed here once, in C, from the same functions the text and JSON use (the attribution
 * window of report_attribution.c, the metrics' request view, ITL samples and one-second
 * output buckets, the server's /metrics samples beside latscope's own in-flight count); the page
 * draws them and computes nothing. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/stats.h"
#include "metrics/server_gauges.h"
#include "report/html_int.h"

static void add_numbers(cJSON *arr, const double *v, size_t n, int decimals)
{
	for (size_t i = 0; arr && i < n; i++)
		cJSON_AddItemToArray(arr, lp_round(v[i], decimals));
}

/* "TTFT P99: 81% server, 17% client (12.0 ms of it slot wait)": the band around the total's
 * P99, its largest parts. */
static void reading(char *buf, size_t cap, enum ls_attr_win w, const struct ls_attr_window *s)
{
	int k = LS_ATTR_BANDS - 1, used[LS_PART__COUNT] = { 0 };
	size_t len = (size_t)snprintf(buf, cap, "%s P%g (%.2f ms):", ls_attr_win_name(w), s->band_pct[k], s->band_total_ms[k]);
	for (int shown = 0; shown < 3 && len < cap; shown++) {
		int best = -1;
		for (int part = 0; part < LS_PART__COUNT; part++)
			if (!used[part] && (best < 0 || s->band_ms[k][part] > s->band_ms[k][best]))
				best = part;
		double share = s->band_total_ms[k] > 0 ? 100.0 * s->band_ms[k][best] / s->band_total_ms[k] : 0;
		if (best < 0 || share < 1.0)
			break;
		used[best] = 1;
		len += (size_t)snprintf(buf + len, cap - len, "%s %.0f%% %s", shown ? "," : "", share,
					ls_part_name((enum ls_part)best));
		if (best == LS_PART_CLIENT && w != LS_ATTR_ITL && s->band_slot_wait_ms[k] > 0.05 * s->band_total_ms[k] &&
		    len < cap)
			len += (size_t)snprintf(buf + len, cap - len, " (%.2f ms of it slot wait)", s->band_slot_wait_ms[k]);
	}
}

/* The stacked bars of one window kind, and its table of percentiles and shares. */
static void attr_window(struct ls_page *p, const struct ls_html_run *h, enum ls_attr_win w, struct ls_attr_window *s)
{
	char title[128], note[256];
	snprintf(title, sizeof(title), "%s: the parts at P50, P90, P99 (ms, n=%zu)", ls_attr_win_name(w), s->n);
	snprintf(note, sizeof(note), "Each bar: the parts of the samples within 1%% of n (in rank) around that "
		 "percentile of the total, averaged, so they add up to the bar.");
	cJSON *c = lp_chart(p, "stack", title, note);
	cJSON *labels = cJSON_AddArrayToObject(c, "labels"), *parts = cJSON_AddArrayToObject(c, "parts");
	cJSON_AddStringToObject(c, "unit", "ms");
	for (int k = 0; k < LS_ATTR_BANDS; k++) {
		char l[64];
		snprintf(l, sizeof(l), "P%g ≈ %.2f ms", s->band_pct[k], s->band_total_ms[k]);
		cJSON_AddItemToArray(labels, cJSON_CreateString(l));
	}
	for (int part = 0; parts && part < LS_PART__COUNT; part++) {
		if (!s->shown[part])
			continue;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddItemToArray(parts, o);
		cJSON_AddStringToObject(o, "name", ls_part_name((enum ls_part)part));
		double v[LS_ATTR_BANDS];
		for (int k = 0; k < LS_ATTR_BANDS; k++)
			v[k] = s->band_ms[k][part];
		add_numbers(cJSON_AddArrayToObject(o, "values"), v, LS_ATTR_BANDS, 3);
	}
	(void)h;
}

static void attr_table(struct ls_page *p, enum ls_attr_win w, const struct ls_attr_window *s)
{
	lp_printf(p, "<table><tr><th>%s (ms, n=%zu)</th>", ls_attr_win_name(w), s->n);
	for (size_t k = 0; k < s->n_pcts; k++)
		lp_printf(p, "<th>P%g</th>", s->pcts[k]);
	lp_puts(p, "<th>share</th></tr>\n");
	for (int part = 0; part <= LS_PART__COUNT; part++) {
		if (!s->shown[part])
			continue;
		lp_printf(p, "<tr><td>%s</td>", part == LS_PART__COUNT ? "total" : ls_part_name((enum ls_part)part));
		for (size_t k = 0; k < s->n_pcts; k++)
			lp_printf(p, "<td class=\"n\">%.3f</td>", s->pct_ms[part][k]);
		lp_printf(p, "<td class=\"n\">%.1f%%</td></tr>\n", s->share[part]);
	}
	lp_puts(p, "</table>\n");
}

void lp_section_attribution(struct ls_page *p, const struct ls_html_run *h)
{
	const struct ls_attribution *a = h->attr;
	struct ls_attr_window s[LS_ATTR_WIN__COUNT];
	char line[800];
	lp_puts(p, "<h2>Where the latency went</h2>\n");
	if (!a || !a->have_client) {
		snprintf(line, sizeof(line), "no kernel stamps split the latency into client, network and server: %s",
			 a && a->why[0] ? a->why : h->attr_why ? h->attr_why : "the run has no attribution");
		lp_missing(p, "TTFT, ITL and E2EL by part", line);
		return;
	}
	for (int w = 0; w < LS_ATTR_WIN__COUNT; w++)
		if (ls_attribution_window(a, (enum ls_attr_win)w, h->run, &s[w])) {
			p->err = -ENOMEM;
			return;
		}
	if (!s[LS_ATTR_TTFT].n) {
		lp_missing(p, "TTFT, ITL and E2EL by part", "no request succeeded: there is no latency to split");
		return;
	}
	for (int w = 0; w < LS_ATTR_WIN__COUNT; w++) {
		if (!s[w].n)
			continue;
		reading(line, sizeof(line), (enum ls_attr_win)w, &s[w]);
		lp_puts(p, "<p class=\"reading\">");
		lp_text(p, line);
		lp_puts(p, "</p>\n");
	}
	if (a->why[0]) {
		lp_puts(p, "<p class=\"note\">Note: ");
		lp_text(p, a->why);
		lp_puts(p, "</p>\n");
	}
	lp_puts(p, "<p class=\"note\">Attribution reads every request the honest way: TTFT and E2EL from "
		   "<b>scheduled</b>, E2EL to the last byte. Percentiles are per part and do not add up; shares do.</p>\n"
		   "<div class=\"grid\">\n");
	for (int w = 0; w < LS_ATTR_WIN__COUNT; w++) {
		if (!s[w].n)
			continue;
		attr_window(p, h, (enum ls_attr_win)w, &s[w]);
		lp_puts(p, "<div class=\"box\">");
		attr_table(p, (enum ls_attr_win)w, &s[w]);
		lp_puts(p, "</div>\n");
	}
	lp_puts(p, "</div>\n");
}

/* One "lines" series of the /metrics samples: gauge g (NaN: a gap), times scale. */
static void gauge_series(cJSON *series, const char *name, const struct ls_gauge_series *s, int g, double scale)
{
	cJSON *o = cJSON_CreateObject(), *v = cJSON_CreateArray();
	if (!o || !v || !cJSON_AddItemToArray(series, o)) {
		cJSON_Delete(o);
		cJSON_Delete(v);
		return;
	}
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddItemToObject(o, "values", v);
	for (size_t i = 0; i < s->n; i++)
		cJSON_AddItemToArray(v, isnan(s->samples[i].v[g]) ? cJSON_CreateNull()
							   : lp_round(s->samples[i].v[g] * scale, 3));
}

/* The x of each sample: its answer, s from t0. */
static void gauge_x(cJSON *c, const struct ls_gauge_series *s, uint64_t t0)
{
	cJSON *x = cJSON_AddArrayToObject(c, "x");
	for (size_t i = 0; x && i < s->n; i++)
		cJSON_AddItemToArray(x, lp_round(((double)s->samples[i].arrived_ns - (double)t0) / 1e9, 4));
}

void lp_server_gauges(struct ls_page *p, const struct ls_html_run *h, uint64_t t0)
{
	const struct ls_gauge_series *s = h->ctx ? h->ctx->gauges : NULL;
	char note[400];
	if (!s || !s->on)
		return;
	if (!s->n) {
		snprintf(note, sizeof(note), "%llu polls of GET /metrics gave no sample%s%s",
			 (unsigned long long)s->n_polls, s->first_miss[0] ? ": " : "", s->first_miss);
		lp_missing(p, "The server's /metrics: requests running and waiting", note);
		return;
	}
	struct ls_gauge_summary sum;
	ls_gauge_summarize(s, t0, &sum);
	const struct ls_gauge_stat *run = &sum.g[LS_GAUGE_RUNNING], *wait = &sum.g[LS_GAUGE_WAITING];
	snprintf(note, sizeof(note), "GET /metrics (%s names) every %u ms, drawn at each answer: peak waiting %.0f, "
		 "mean running %.2f. In flight: started and not finished in latscope's own records at that instant "
		 "(it includes what the server has not yet received or has finished but not yet sent).",
		 ls_gauge_engine_name(s->engine), s->period_ms, wait->n ? wait->peak : 0, run->n ? run->mean : 0);
	cJSON *c = lp_chart(p, "lines", "The server's /metrics: requests running and waiting", note);
	gauge_x(c, s, t0);
	cJSON *series = cJSON_AddArrayToObject(c, "series");
	gauge_series(series, "running (server)", s, LS_GAUGE_RUNNING, 1);
	gauge_series(series, "waiting (server)", s, LS_GAUGE_WAITING, 1);
	cJSON *o = cJSON_CreateObject(), *v = cJSON_CreateArray();
	if (o && v && cJSON_AddItemToArray(series, o)) {
		cJSON_AddStringToObject(o, "name", "in flight (latscope)");
		cJSON_AddItemToObject(o, "values", v);
		for (size_t i = 0; i < s->n; i++)
			cJSON_AddItemToArray(v, cJSON_CreateNumber((double)ls_gauge_in_flight_at(h->run, s->samples[i].arrived_ns)));
	} else {
		cJSON_Delete(o);
		cJSON_Delete(v);
	}
	cJSON_AddStringToObject(c, "xlabel", "s from the run's start");
	cJSON_AddStringToObject(c, "ylabel", "requests");
	if (!sum.g[LS_GAUGE_KV_USE].n)
		return;
	snprintf(note, sizeof(note), "The server's own KV-cache use gauge: peak %.1f%%, mean %.1f%%.",
		 100 * sum.g[LS_GAUGE_KV_USE].peak, 100 * sum.g[LS_GAUGE_KV_USE].mean);
	c = lp_chart(p, "lines", "The server's /metrics: KV-cache use", note);
	gauge_x(c, s, t0);
	gauge_series(cJSON_AddArrayToObject(c, "series"), "KV-cache use", s, LS_GAUGE_KV_USE, 100);
	cJSON_AddStringToObject(c, "xlabel", "s from the run's start");
	cJSON_AddStringToObject(c, "ylabel", "%");
}
