/* report_html_dist.c — the run page's timeline (per request, by phase; in flight and output
 * tokens per second under it) and distributions (TTFT CDFs from each clock, ITL per frame and
 * per token, tokens per frame, client delay per frame). See report_html_charts.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/stats.h"
#include "report/html_int.h"

#define N_STAMPS 7
static const char *const phase_names[N_STAMPS - 1] = {
	"slot wait", "dispatch", "connect+TLS", "send", "to first frame", "streaming",
};

static void add_ms(cJSON *arr, const double *v, size_t n)
{
	for (size_t i = 0; arr && i < n; i++)
		cJSON_AddItemToArray(arr, lp_round(v[i], 2));
}

/* Where the run's clock starts on the page: its start, else its first schedule. */
static uint64_t run_t0(const struct ls_run *run)
{
	uint64_t t0 = run->start_ns ? run->start_ns : UINT64_MAX;
	for (size_t i = 0; i < run->n_requests; i++)
		if (!run->requests[i].warmup && run->requests[i].scheduled_ns && run->requests[i].scheduled_ns < t0)
			t0 = run->requests[i].scheduled_ns;
	return t0 == UINT64_MAX ? 0 : t0;
}

/* scheduled, admitted, started, connected, sent, first frame, last frame (ns; each at least
 * the one before it, a missing one equal to it). A failed request's stream is sent -> finished. */
static int stamps(const struct ls_request *r, const struct ls_read_rules *rules, uint64_t s[N_STAMPS])
{
	struct ls_req_view v;
	int ok = ls_request_view(r, rules, &v);
	uint64_t conn = r->tls_ns > r->connect_ns ? r->tls_ns : r->connect_ns;
	uint64_t last = r->n_frames ? r->frames[r->n_frames - 1].arrived_ns : 0;
	s[0] = r->scheduled_ns ? r->scheduled_ns : r->started_ns;
	s[1] = r->admitted_ns;
	s[2] = r->started_ns;
	s[3] = conn;
	s[4] = r->sent_ns;
	s[5] = ok && v.first_frame >= 0 ? r->frames[v.first_frame].arrived_ns : 0;
	s[6] = ok ? (r->finished_ns > last ? r->finished_ns : last) : r->finished_ns;
	for (int k = 1; k < N_STAMPS; k++)
		if (s[k] < s[k - 1])
			s[k] = s[k - 1];
	return ok;
}

static void timeline_chart(struct ls_page *p, const struct ls_html_run *h, uint64_t t0)
{
	const struct ls_run *run = h->run;
	size_t n = h->m->n_measured, step = (n + LS_HTML_TIMELINE_MAX - 1) / LS_HTML_TIMELINE_MAX, k = 0;
	char note[256];
	if (!step)
		step = 1;
	if (step == 1)
		snprintf(note, sizeof(note), "All %zu requests, one row each, in the order they were sent.", n);
	else
		snprintf(note, sizeof(note), "%zu of %zu requests (every %zu-th, evenly), one row each: the page holds "
			 "a sample, not every request.", (n + step - 1) / step, n, step);
	cJSON *c = lp_chart(p, "timeline", "Each request, phase by phase", note);
	cJSON *ph = cJSON_AddArrayToObject(c, "phases"), *rows = cJSON_AddArrayToObject(c, "rows");
	cJSON *ids = cJSON_AddArrayToObject(c, "ids"), *failed = cJSON_AddArrayToObject(c, "failed");
	cJSON_AddStringToObject(c, "xlabel", "ms from the run's start");
	cJSON_AddStringToObject(c, "ylabel", "request");
	for (int i = 0; i < N_STAMPS - 1; i++)
		cJSON_AddItemToArray(ph, cJSON_CreateString(phase_names[i]));
	for (size_t i = 0; rows && i < run->n_requests; i++) {
		const struct ls_request *r = &run->requests[i];
		if (r->warmup || k++ % step)
			continue;
		uint64_t s[N_STAMPS];
		int ok = stamps(r, &h->m->rules, s);
		double ms[N_STAMPS];
		for (int j = 0; j < N_STAMPS; j++)
			ms[j] = s[j] > t0 ? (s[j] - t0) / 1e6 : 0;
		cJSON *row = cJSON_CreateArray();
		cJSON_AddItemToArray(rows, row);
		add_ms(row, ms, N_STAMPS);
		cJSON_AddItemToArray(ids, cJSON_CreateNumber((double)r->id));
		cJSON_AddItemToArray(failed, cJSON_CreateNumber(!ok));
	}
}

static void per_second(struct ls_page *p, const struct ls_html_run *h, uint64_t t0)
{
	const struct ls_metrics *m = h->m;
	double *x = malloc((m->n_out_bins + 1) * sizeof(*x));
	if (!x) {
		p->err = -ENOMEM;
		return;
	}
	double off = m->out_bins_from_ns > t0 ? (m->out_bins_from_ns - t0) / 1e9 : 0;
	for (size_t b = 0; b < m->n_out_bins; b++)
		x[b] = off + (double)b;
	const char *titles[2] = { "Requests in flight (mean over each second)", "Output tokens per second" };
	const char *notes[2] = { "Ok requests from started to their E2EL end, as the peak-concurrency figure counts them.",
				 m->rules.itl_mode == LS_ITL_FRAME ? "One-second buckets from the first start, as "
				 "max_output_tokens_per_s reads them (this profile counts a frame as a token)."
				 : "One-second buckets from the first start, as max_output_tokens_per_s reads them." };
	for (int i = 0; i < 2; i++) {
		cJSON *c = lp_chart(p, "lines", titles[i], notes[i]);
		add_ms(cJSON_AddArrayToObject(c, "x"), x, m->n_out_bins);
		cJSON *series = cJSON_AddArrayToObject(c, "series"), *o = cJSON_CreateObject();
		cJSON_AddItemToArray(series, o);
		cJSON_AddStringToObject(o, "name", i ? "output tokens/s" : "in flight");
		add_ms(cJSON_AddArrayToObject(o, "values"), i ? m->out_bins : m->in_flight_bins, m->n_out_bins);
		cJSON_AddStringToObject(c, "xlabel", "s from the run's start");
		cJSON_AddStringToObject(c, "ylabel", i ? "tokens/s" : "requests");
	}
	free(x);
}

void lp_section_timeline(struct ls_page *p, const struct ls_html_run *h)
{
	uint64_t t0 = run_t0(h->run);
	lp_puts(p, "<h2>Timeline</h2>\n<div class=\"grid\">\n");
	if (h->m->n_measured)
		timeline_chart(p, h, t0);
	else
		lp_missing(p, "Each request, phase by phase", "no request was measured");
	if (h->m->n_out_bins)
		per_second(p, h, t0);
	else
		lp_missing(p, "Requests in flight and output tokens per second", "no request succeeded");
	lp_server_gauges(p, h, t0);
	lp_puts(p, "</div>\n");
}

/* Sorts v and adds it as one CDF series (x in v's unit times scale). */
static void cdf_series(cJSON *series, const char *name, double *v, size_t n, double scale)
{
	cJSON *o = cJSON_CreateObject();
	if (!o || !cJSON_AddItemToArray(series, o)) {
		cJSON_Delete(o);
		return;
	}
	ls_sort_doubles(v, n);
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddItemToObject(o, "pts", lp_cdf(v, n, scale));
}

static void ttft_cdfs(struct ls_page *p, const struct ls_html_run *h)
{
	size_t n = 0, cap = h->m->n_measured + 1;
	double *v[LS_ORIGIN__COUNT];
	int oom = 0;
	for (int c = 0; c < LS_ORIGIN__COUNT; c++)
		oom |= !(v[c] = malloc(cap * sizeof(double)));
	for (size_t i = 0; !oom && i < h->run->n_requests; i++) {
		struct ls_req_view view;
		if (h->run->requests[i].warmup || !ls_request_view(&h->run->requests[i], &h->m->rules, &view))
			continue;
		for (int c = 0; c < LS_ORIGIN__COUNT; c++)
			v[c][n] = view.ttft_s[c];
		n++;
	}
	if (!oom && n) {
		cJSON *ch = lp_chart(p, "cdf", "TTFT from each clock (CDF)", "The gap between the curves is the wait for "
				     "a concurrency slot (scheduled → admitted) and the dispatch (admitted → started).");
		cJSON *series = cJSON_AddArrayToObject(ch, "series");
		cJSON_AddStringToObject(ch, "xlabel", "TTFT (ms)");
		for (int c = 0; c < LS_ORIGIN__COUNT; c++) {
			char name[64];
			snprintf(name, sizeof(name), "from %s", ls_origin_name((enum ls_origin)c));
			cdf_series(series, name, v[c], n, 1000);
		}
	} else if (!oom) {
		lp_missing(p, "TTFT from each clock (CDF)", "no request succeeded");
	}
	for (int c = 0; c < LS_ORIGIN__COUNT; c++)
		free(oom ? NULL : v[c]);
	if (oom)
		p->err = -ENOMEM;
}

/* Every ITL sample of the run's ok requests in mode (seconds), malloc'd; NULL with *n 0 when none. */
static double *itl_samples(const struct ls_html_run *h, enum ls_itl_mode mode, size_t *n)
{
	size_t cap = 0;
	double *v;
	struct ls_req_view view;
	*n = 0;
	for (size_t i = 0; i < h->run->n_requests; i++)
		if (!h->run->requests[i].warmup && ls_request_view(&h->run->requests[i], &h->m->rules, &view))
			cap += ls_request_itls(&h->run->requests[i], &h->m->rules, mode, NULL, 0);
	if (!cap || !(v = malloc(cap * sizeof(*v))))
		return NULL;
	for (size_t i = 0; i < h->run->n_requests; i++)
		if (!h->run->requests[i].warmup && ls_request_view(&h->run->requests[i], &h->m->rules, &view))
			*n += ls_request_itls(&h->run->requests[i], &h->m->rules, mode, v + *n, cap - *n);
	return v;
}

static void itl_cdfs(struct ls_page *p, const struct ls_html_run *h)
{
	size_t nf, nt;
	double *f = itl_samples(h, LS_ITL_FRAME, &nf), *t = itl_samples(h, LS_ITL_TOKEN, &nt);
	if (f && t) {
		cJSON *ch = lp_chart(p, "cdf", "ITL per frame and per token (CDF)", "Per frame: one gap between token frames "
				     "(vLLM). Per token: a gap spread over the tokens its frame carried (SGLang); they differ "
				     "when frames carry several tokens.");
		cJSON *series = cJSON_AddArrayToObject(ch, "series");
		cJSON_AddStringToObject(ch, "xlabel", "ITL (ms)");
		cdf_series(series, "per frame", f, nf, 1000);
		cdf_series(series, "per token", t, nt, 1000);
	} else {
		lp_missing(p, "ITL per frame and per token (CDF)", "no request had two token frames");
	}
	free(f);
	free(t);
}

static double num_or0(const cJSON *v)
{
	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static void tpf_chart(struct ls_page *p, const cJSON *tree)
{
	const cJSON *hist = lp_get(tree, "latscope/tokens_per_frame/histogram"), *b;
	char note[256];
	double counted = 0;
	cJSON_ArrayForEach(b, hist)
		counted += b->valuedouble;
	if (!counted) {
		snprintf(note, sizeof(note), "no frame carried a token count (the backend's frames say none; "
			 "%.0f frames of unknown count); usage gives %.2f tokens per frame",
			 num_or0(lp_get(tree, "latscope/tokens_per_frame/unknown")),
			 num_or0(lp_get(tree, "latscope/tokens_per_frame/mean_from_usage")));
		lp_missing(p, "Tokens per frame", note);
		return;
	}
	snprintf(note, sizeof(note), "Token frames by the tokens they carried (more than 1: speculative decoding or "
		 "batched streaming); frames of unknown count: %.0f.",
		 num_or0(lp_get(tree, "latscope/tokens_per_frame/unknown")));
	cJSON *c = lp_chart(p, "bars", "Tokens per frame", note);
	cJSON *labels = cJSON_AddArrayToObject(c, "labels"), *values = cJSON_AddArrayToObject(c, "values");
	int i = 0;
	cJSON_ArrayForEach(b, hist) {
		char l[16];
		snprintf(l, sizeof(l), i == LS_TPF_MAX ? "%d+" : "%d", i);
		cJSON_AddItemToArray(labels, cJSON_CreateString(l));
		cJSON_AddItemToArray(values, cJSON_CreateNumber(b->valuedouble));
		i++;
	}
	cJSON_AddStringToObject(c, "label", "frames");
	cJSON_AddStringToObject(c, "xlabel", "tokens in the frame");
	cJSON_AddStringToObject(c, "ylabel", "frames");
}

static void client_delay_chart(struct ls_page *p, const struct ls_html_run *h)
{
	const char *title = "Client delay per frame (CDF)";
	uint64_t *d = NULL;
	size_t n = 0;
	if (!h->attr || !h->attr->have_client) {
		lp_missing(p, title, h->attr && h->attr->why[0] ? h->attr->why : h->attr_why ? h->attr_why
			   : "the probes did not run: no kernel arrival to measure the harness against");
		return;
	}
	if (ls_attribution_client_delays(h->run, h->attr, &d, &n) || !n) {
		lp_missing(p, title, n ? "out of memory" : "no frame has a kernel arrival stamp");
		free(d);
		return;
	}
	double *v = malloc(n * sizeof(*v));
	if (v) {
		for (size_t i = 0; i < n; i++)
			v[i] = (double)d[i];
		cJSON *c = lp_chart(p, "cdf", title, "Harness stamp − kernel arrival of each frame: what the harness "
				    "itself added to every number above.");
		cJSON_AddStringToObject(c, "xlabel", "delay (ms)");
		cdf_series(cJSON_AddArrayToObject(c, "series"), "client delay", v, n, 1e-6);
	}
	free(v);
	free(d);
}

void lp_section_distributions(struct ls_page *p, const struct ls_html_run *h, const cJSON *tree)
{
	lp_puts(p, "<h2>Distributions</h2>\n<div class=\"grid\">\n");
	ttft_cdfs(p, h);
	itl_cdfs(p, h);
	tpf_chart(p, tree);
	client_delay_chart(p, h);
	lp_puts(p, "</div>\n");
}
