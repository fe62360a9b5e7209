/* sweep_html.c — `latscope sweep --html FILE`: one self-contained page (inline SVG, no script)
 * with the capacity per clock and, for each SLO, its throughput-latency curve per clock (the
 * completed rate of each point against the SLO's percentile under that clock) with the SLO's
 * limit as a line. Every number is the points' (metrics/sweep_point.c); this file draws them. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/outfile.h"
#include "report/sweep_report.h"

#define W  640.0
#define H  300.0
#define ML 60.0  /* left margin: the y labels */
#define MB 40.0  /* bottom margin: the x labels */
#define MT 16.0
#define MR 16.0

static const char *const clock_colour[LS_ORIGIN__COUNT] = { "#d62728", "#ff7f0e", "#1f77b4" };

static void esc(FILE *out, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '<')
			fputs("&lt;", out);
		else if (*s == '>')
			fputs("&gt;", out);
		else if (*s == '&')
			fputs("&amp;", out);
		else if (*s == '"')
			fputs("&quot;", out);
		else
			fputc(*s, out);
	}
}

/* A point's y for chart k under clock c (ms): the SLO's value, else the median TTFT. */
static double y_of(const struct ls_sweep_desc *d, const struct ls_sweep_point *p, size_t k, int c)
{
	return d->slo->n ? p->clock[c].eval.value_ms[k] : p->clock[c].ttft_p50_ms;
}

/* The points' order by target x (the curve's order). */
static int cmp_x(const void *a, const void *b)
{
	const struct ls_sweep_point *x = *(const struct ls_sweep_point *const *)a;
	const struct ls_sweep_point *y = *(const struct ls_sweep_point *const *)b;
	return x->x < y->x ? -1 : x->x > y->x;
}

static void axes(FILE *out, double xmax, double ymax, const char *xlabel, const char *ylabel)
{
	fprintf(out, "<line x1='%g' y1='%g' x2='%g' y2='%g' stroke='#000'/>", ML, H - MB, W - MR, H - MB);
	fprintf(out, "<line x1='%g' y1='%g' x2='%g' y2='%g' stroke='#000'/>", ML, MT, ML, H - MB);
	for (int t = 0; t <= 4; t++) {
		double fx = ML + (W - ML - MR) * t / 4, fy = H - MB - (H - MB - MT) * t / 4;
		fprintf(out, "<text x='%g' y='%g' font-size='11' text-anchor='middle'>%.3g</text>", fx, H - MB + 14,
			xmax * t / 4);
		fprintf(out, "<text x='%g' y='%g' font-size='11' text-anchor='end'>%.3g</text>", ML - 4, fy + 4,
			ymax * t / 4);
	}
	fprintf(out, "<text x='%g' y='%g' font-size='12' text-anchor='middle'>%s</text>", (ML + W - MR) / 2, H - 6,
		xlabel);
	fprintf(out, "<text x='12' y='%g' font-size='12' transform='rotate(-90 12 %g)' text-anchor='middle'>", H / 2,
		H / 2);
	esc(out, ylabel);
	fputs("</text>", out);
}

/* One chart: completed req/s against chart k's value per clock, the limit dashed. */
static void chart(FILE *out, const struct ls_sweep_desc *d, const struct ls_sweep_point *const *o, size_t n, size_t k)
{
	double xmax = 0, ymax = d->slo->n ? d->slo->slo[k].limit_ms : 0;
	for (size_t i = 0; i < n; i++) {
		xmax = fmax(xmax, o[i]->throughput);
		for (int c = 0; c < LS_ORIGIN__COUNT; c++)
			ymax = fmax(ymax, y_of(d, o[i], k, c));
	}
	xmax = xmax > 0 ? xmax * 1.05 : 1;
	ymax = ymax > 0 ? ymax * 1.1 : 1;
	char ylabel[96];
	if (d->slo->n)
		snprintf(ylabel, sizeof(ylabel), "%s p%g (ms)", ls_slo_metric_name(d->slo->slo[k].metric), d->slo->slo[k].pct);
	else
		snprintf(ylabel, sizeof(ylabel), "ttft p50 (ms)");
	fprintf(out, "<h3>");
	esc(out, ylabel);
	fprintf(out, " against completed requests/s</h3>\n<svg width='%g' height='%g' xmlns='http://www.w3.org/2000/svg'>", W, H);
	axes(out, xmax, ymax, "completed requests/s", ylabel);
#define SX(v) (ML + (W - ML - MR) * (v) / xmax)
#define SY(v) (H - MB - (H - MB - MT) * (v) / ymax)
	if (d->slo->n)
		fprintf(out, "<line x1='%g' y1='%g' x2='%g' y2='%g' stroke='#2ca02c' stroke-dasharray='6 4'/>"
			"<text x='%g' y='%g' font-size='11' fill='#2ca02c'>SLO %g ms</text>", ML, SY(d->slo->slo[k].limit_ms),
			W - MR, SY(d->slo->slo[k].limit_ms), ML + 4, SY(d->slo->slo[k].limit_ms) - 4, d->slo->slo[k].limit_ms);
	for (int c = 0; c < LS_ORIGIN__COUNT; c++) {
		fprintf(out, "<polyline fill='none' stroke='%s' stroke-width='1.5' points='", clock_colour[c]);
		for (size_t i = 0; i < n; i++)
			fprintf(out, "%.1f,%.1f ", SX(o[i]->throughput), SY(y_of(d, o[i], k, c)));
		fputs("'/>", out);
		for (size_t i = 0; i < n; i++)
			fprintf(out, "<circle cx='%.1f' cy='%.1f' r='3' fill='%s'><title>%s %.4g %s: %.1f ms</title></circle>",
				SX(o[i]->throughput), SY(y_of(d, o[i], k, c)), clock_colour[c],
				ls_origin_name((enum ls_origin)c), o[i]->x, d->unit, y_of(d, o[i], k, c));
	}
#undef SX
#undef SY
	fputs("</svg>\n", out);
}

static void capacity_table(FILE *out, const struct ls_sweep_desc *d, const struct ls_sweep_summary *s)
{
	fputs("<table><tr><th>clock</th><th>capacity</th><th>first failure</th></tr>\n", out);
	for (int c = 0; c < LS_ORIGIN__COUNT; c++) {
		const struct ls_sweep_cap *k = &s->cap[c];
		fprintf(out, "<tr><td style='color:%s'>%s</td><td>", clock_colour[c], ls_origin_name((enum ls_origin)c));
		if (k->has_cap)
			fprintf(out, "%s%.2f %s", s->above_all[c] ? "&ge; " : "", k->cap, d->unit);
		else
			fputs("none met", out);
		if (k->has_fail)
			fprintf(out, "</td><td>%.2f</td></tr>\n", k->fail);
		else
			fputs("</td><td>-</td></tr>\n", out);
	}
	fputs("</table>\n", out);
	if (s->has_overstatement)
		fprintf(out, "<p>A harness whose clock starts at <code>started</code> (vLLM, SGLang) overstates the capacity "
			"by <b>%+.1f %%</b>%s.</p>\n", s->overstatement_pct, s->above_all[LS_ORIGIN_STARTED] ? " or more" : "");
}

static void page(FILE *out, const struct ls_sweep_desc *d, const struct ls_sweep_point *const *o, size_t n,
		 const struct ls_sweep_summary *s)
{
	fputs("<!doctype html>\n<html><head><meta charset='utf-8'><title>latscope sweep</title><style>"
	      "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
	      "td,th{border:1px solid #ccc;padding:2px 8px}</style></head><body>\n<h1>latscope sweep</h1>\n<p>", out);
	fprintf(out, "%s sweep, %zu runs, SLO <code>", d->mode, n);
	esc(out, d->slo_text ? d->slo_text : "none");
	fputs("</code>", out);
	if (d->slo->goodput_min >= 0)
		fprintf(out, ", goodput &ge; %g", d->slo->goodput_min);
	fputs(", read under the rules of <code>", out);
	esc(out, d->run_profile ? d->run_profile : "?");
	fputs("</code>. Runs in <code>", out);
	esc(out, d->dir);
	fputs("</code>.</p>\n", out);
	if (d->stop_reason) {
		fputs("<p><b>Stopped early:</b> ", out);
		esc(out, d->stop_reason);
		fputs("</p>\n", out);
	}
	capacity_table(out, d, s);
	fputs("<p>Clocks: <span style='color:#d62728'>scheduled</span>, <span style='color:#ff7f0e'>admitted</span>, "
	      "<span style='color:#1f77b4'>started</span>.</p>\n", out);
	for (size_t k = 0; k < (d->slo->n ? d->slo->n : 1); k++)
		chart(out, d, o, n, k);
	fputs("</body></html>\n", out);
}

int ls_sweep_html_write(const char *path, const struct ls_sweep_desc *d, const struct ls_sweep_point *pts, size_t n,
			const struct ls_sweep_summary *s)
{
	const struct ls_sweep_point **o = malloc((n ? n : 1) * sizeof(*o));
	struct ls_outfile f;
	if (!o) {
		fprintf(stderr, "latscope sweep: out of memory writing %s\n", path);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		o[i] = &pts[i];
	qsort(o, n, sizeof(*o), cmp_x);
	int err = ls_outfile_open(&f, "--html", path);
	if (!err) {
		page(f.f, d, o, n, s);
		err = ls_outfile_commit(&f);
	}
	free(o);
	return err;
}
