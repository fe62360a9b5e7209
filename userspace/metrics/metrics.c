/* metrics.c — see metrics.h: rule names, percentiles, and a run's aggregates (each request is
 * read in metrics_request.c). Formulas follow vllm/benchmarks/serve.py (calculate_metrics) and
 * SGLang's bench_serving where a profile asks for its rule; every choice is a rule, not code. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "metrics/metrics.h"
#include "metrics/metrics_int.h"

#define NS 1e9

static const char *const clock_names[] = { "scheduled", "admitted", "started" };
static const char *const gate_names[] = { "choices", "text", "cum_text" };
static const char *const itl_names[] = { "frame", "token" };
static const char *const end_names[] = { "last_content", "done", "last_byte" };
static const char *const out_names[] = { "usage", "cumulative", "requested" };

#define NAME_OF(table, v) ((unsigned)(v) < sizeof(table) / sizeof(table[0]) ? table[v] : "?")

const char *ls_origin_name(enum ls_origin c) { return NAME_OF(clock_names, c); }
const char *ls_gate_name(enum ls_ttft_gate g) { return NAME_OF(gate_names, g); }
const char *ls_itl_mode_name(enum ls_itl_mode m) { return NAME_OF(itl_names, m); }
const char *ls_e2el_end_name(enum ls_e2el_end e) { return NAME_OF(end_names, e); }
const char *ls_out_tokens_name(enum ls_out_tokens o) { return NAME_OF(out_names, o); }

static int parse_name(const char *s, const char *const *names, size_t n, int *out)
{
	for (size_t i = 0; s && i < n; i++)
		if (!strcmp(s, names[i])) {
			*out = (int)i;
			return 0;
		}
	return -EINVAL;
}

#define PARSE_ENUM(fn, type, table)                                              \
	int fn(const char *s, type *out)                                         \
	{                                                                        \
		int v;                                                           \
		if (parse_name(s, table, sizeof(table) / sizeof(table[0]), &v)) \
			return -EINVAL;                                          \
		*out = (type)v;                                                  \
		return 0;                                                        \
	}
PARSE_ENUM(ls_origin_parse, enum ls_origin, clock_names)
PARSE_ENUM(ls_gate_parse, enum ls_ttft_gate, gate_names)
PARSE_ENUM(ls_itl_mode_parse, enum ls_itl_mode, itl_names)
PARSE_ENUM(ls_e2el_end_parse, enum ls_e2el_end, end_names)
PARSE_ENUM(ls_out_tokens_parse, enum ls_out_tokens, out_names)

int ls_percentiles_parse(const char *s, struct ls_read_rules *rules)
{
	double vals[LS_MAX_PERCENTILES];
	size_t n = 0;
	const char *p = s;
	if (!s || !*s)
		return -EINVAL;
	for (;;) {
		char *end;
		errno = 0;
		double v = strtod(p, &end);
		if (end == p || errno || !(v > 0.0 && v <= 100.0) || n == LS_MAX_PERCENTILES)
			return -EINVAL;
		vals[n++] = v;
		while (*end == ' ')
			end++;
		if (!*end)
			break;
		if (*end != ',')
			return -EINVAL;
		p = end + 1;
	}
	memcpy(rules->percentiles, vals, n * sizeof(vals[0]));
	rules->n_percentiles = n;
	rules->n_itl_percentiles = 0;
	return 0;
}

int ls_goodput_parse(const char *s, struct ls_goodput *g)
{
	const char *colon = s ? strchr(s, ':') : NULL;
	if (!colon || !colon[1])
		return -EINVAL;
	char *end;
	errno = 0;
	double v = strtod(colon + 1, &end);
	if (*end || errno || !(v >= 0.0) || isinf(v))
		return -EINVAL;
	size_t len = (size_t)(colon - s);
	if (len == 4 && !strncmp(s, "ttft", 4)) {
		g->has_ttft = 1;
		g->ttft_ms = v;
	} else if (len == 4 && !strncmp(s, "tpot", 4)) {
		g->has_tpot = 1;
		g->tpot_ms = v;
	} else if (len == 4 && !strncmp(s, "e2el", 4)) {
		g->has_e2el = 1;
		g->e2el_ms = v;
	} else {
		return -EINVAL;
	}
	return 0;
}

void ls_stat_compute(double *values, size_t n, const struct ls_read_rules *rules, struct ls_stat *out)
{
	ls_stat_compute_at(values, n, rules->percentiles, rules->n_percentiles, out);
}

void ls_stat_compute_at(double *values, size_t n, const double *pcts, size_t n_pcts, struct ls_stat *out)
{
	memset(out, 0, sizeof(*out));
	out->n = n;
	out->n_pcts = n_pcts < LS_MAX_PERCENTILES ? n_pcts : LS_MAX_PERCENTILES;
	memcpy(out->pcts, pcts, out->n_pcts * sizeof(*pcts));
	if (!n)
		return;
	ls_sort_doubles(values, n);
	double sum = 0.0;
	for (size_t i = 0; i < n; i++)
		sum += values[i];
	double mean = sum / (double)n, var = 0.0;
	for (size_t i = 0; i < n; i++)
		var += (values[i] - mean) * (values[i] - mean);
	out->mean_ms = mean * 1e3;
	out->std_ms = sqrt(var / (double)n) * 1e3; /* numpy's np.std: population */
	out->median_ms = ls_percentile(values, n, 50.0) * 1e3;
	out->min_ms = values[0] * 1e3;
	out->max_ms = values[n - 1] * 1e3;
	for (size_t k = 0; k < out->n_pcts; k++)
		out->pct_ms[k] = ls_percentile(values, n, out->pcts[k]) * 1e3;
}

void ls_metrics_free(struct ls_metrics *m)
{
	free(m->ttfts_s);
	free(m->e2els_s);
	free(m->slot_waits_s);
	free(m->queue_times_s);
	free(m->start_times_s);
	free(m->input_lens);
	free(m->output_lens);
	free(m->ok);
	free(m->itl_off);
	free(m->itl_pool);
	free(m->out_bins);
	free(m->in_flight_bins);
	memset(m, 0, sizeof(*m));
}

static void fail_list_add(char *buf, size_t cap, size_t *len, const char *name, size_t count)
{
	if (!count || *len + 1 >= cap)
		return;
	int w = snprintf(buf + *len, cap - *len, "%s%s %zu", *len ? ", " : "", name, count);
	if (w > 0)
		*len = *len + (size_t)w < cap ? *len + (size_t)w : cap - 1;
}

void ls_metrics_fail_list(const struct ls_metrics *m, char *buf, size_t cap)
{
	size_t len = 0;
	if (!cap)
		return;
	buf[0] = 0;
	for (int f = 1; f < LS_FAIL__COUNT; f++)
		fail_list_add(buf, cap, &len, ls_fail_name((enum ls_fail)f), m->fail_counts[f]);
	fail_list_add(buf, cap, &len, "no_first_token", m->no_first_token);
}

static int cmp_event(const void *a, const void *b)
{
	const struct ls_conc_event *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->delta - y->delta; /* departures (-1) before arrivals at the same instant */
}

size_t ls_peak_in_flight(struct ls_conc_event *ev, size_t n)
{
	qsort(ev, n, sizeof(*ev), cmp_event);
	long cur = 0;
	size_t peak = 0;
	for (size_t e = 0; e < n; e++) {
		cur += ev[e].delta;
		if (cur > (long)peak)
			peak = (size_t)cur;
	}
	return peak;
}

size_t ls_run_peak_streams(const struct ls_run *run)
{
	struct ls_conc_event *ev = malloc((2 * run->n_requests + 1) * sizeof(*ev));
	size_t n = 0;
	if (!ev)
		return 0;
	for (size_t i = 0; i < run->n_requests; i++) {
		const struct ls_request *r = &run->requests[i];
		if (!r->started_ns || r->finished_ns < r->started_ns)
			continue;
		ev[n++] = (struct ls_conc_event){ r->started_ns, +1 };
		ev[n++] = (struct ls_conc_event){ r->finished_ns, -1 };
	}
	size_t peak = ls_peak_in_flight(ev, n);
	free(ev);
	return peak;
}

/* Connections the measured requests opened and their connect (+TLS) time inside TTFT. */
static void connections(const struct ls_run *run, struct ls_metrics *m)
{
	double sum = 0;
	size_t k = 0;
	for (size_t i = 0; i < run->n_requests; i++) {
		const struct ls_request *r = &run->requests[i];
		if (r->warmup || !r->new_connection)
			continue;
		m->conns_opened++;
		uint64_t up = r->tls_ns ? r->tls_ns : r->connect_ns;
		if (up > r->started_ns && r->started_ns) {
			sum += (double)(up - r->started_ns) / 1e6;
			k++;
		}
	}
	m->conn_setup_mean_ms = k ? sum / (double)k : 0;
}

/* Scratch arrays freed together. */
struct scratch {
	struct ls_req_view *views;
	double *buf;                  /* room for the largest series (buf_n values) */
	size_t buf_n;
	struct ls_conc_event *events;
	double *buckets;
};

static void scratch_free(struct scratch *s)
{
	free(s->views);
	free(s->buf);
	free(s->events);
	free(s->buckets);
}

/* Peak output tokens in a one-second bucket counted from the earliest start (vLLM). Frame
 * mode counts a frame as one token, as vLLM does; token mode counts what the frame carried. */
static int peak_output(const struct ls_run *run, const struct ls_read_rules *rules, struct scratch *s,
		       struct ls_metrics *m)
{
	uint64_t min_start = UINT64_MAX, max_end = 0;
	for (size_t i = 0, k = 0; i < run->n_requests; i++) {
		if (run->requests[i].warmup)
			continue;
		const struct ls_req_view *v = &s->views[k++];
		if (!v->ok)
			continue;
		uint64_t start = ls_origin_ns(&run->requests[i], LS_ORIGIN_STARTED);
		if (start < min_start)
			min_start = start;
		if (v->end_ns > max_end)
			max_end = v->end_ns;
	}
	if (min_start == UINT64_MAX || max_end < min_start)
		return 0;
	double span = (double)(max_end - min_start) / NS;
	if (span > 86400.0 * 30) /* a month of one-second buckets is the most we keep */
		span = 86400.0 * 30;
	size_t n_buckets = (size_t)ceil(span) + 1;
	s->buckets = calloc(n_buckets, sizeof(*s->buckets));
	if (!s->buckets)
		return -ENOMEM;
	for (size_t i = 0, k = 0; i < run->n_requests; i++) {
		const struct ls_request *r = &run->requests[i];
		if (r->warmup)
			continue;
		if (!s->views[k++].ok)
			continue;
		uint64_t cum = 0;
		struct ls_tok_est est;
		ls_tok_est_init(r, rules, &est);
		for (uint32_t f = 0; f < r->n_frames; f++) {
			const struct ls_frame *fr = &r->frames[f];
			if (!ls_gate_pass(fr, rules->ttft_gate, &cum))
				continue;
			uint32_t t = ls_tok_next(fr, &est);
			if (fr->arrived_ns < min_start)
				continue;
			size_t b = (size_t)((fr->arrived_ns - min_start) / 1000000000ull);
			if (b < n_buckets)
				s->buckets[b] += rules->itl_mode == LS_ITL_FRAME ? 1.0 : (double)t;
		}
	}
	for (size_t b = 0; b < n_buckets; b++)
		if (s->buckets[b] > m->peak_output_tps)
			m->peak_output_tps = s->buckets[b];
	m->out_bins = s->buckets; /* kept: the HTML report draws the same buckets */
	m->n_out_bins = n_buckets;
	m->out_bins_from_ns = min_start;
	s->buckets = NULL;
	return 0;
}

static int peak_concurrency(const struct ls_run *run, struct scratch *s, struct ls_metrics *m)
{
	if (!m->completed)
		return 0;
	s->events = malloc(2 * m->completed * sizeof(*s->events));
	if (!s->events)
		return -ENOMEM;
	size_t ne = 0;
	for (size_t i = 0, k = 0; i < run->n_requests; i++) {
		if (run->requests[i].warmup)
			continue;
		const struct ls_req_view *v = &s->views[k++];
		if (!v->ok)
			continue;
		uint64_t start = ls_origin_ns(&run->requests[i], LS_ORIGIN_STARTED);
		s->events[ne++] = (struct ls_conc_event){ start, +1 };
		s->events[ne++] = (struct ls_conc_event){ v->end_ns > start ? v->end_ns : start, -1 };
	}
	m->peak_concurrency = (uint32_t)ls_peak_in_flight(s->events, ne);
	return 0;
}

/* Requests in flight, time-weighted over each of the output buckets (out_bins' grid), over
 * the intervals peak_concurrency sweeps: started -> E2EL end of the ok requests. */
static int in_flight_bins(const struct ls_run *run, struct scratch *s, struct ls_metrics *m)
{
	const uint64_t from = m->out_bins_from_ns, sec = 1000000000ull;
	if (!m->n_out_bins)
		return 0;
	if (!(m->in_flight_bins = calloc(m->n_out_bins, sizeof(*m->in_flight_bins))))
		return -ENOMEM;
	for (size_t i = 0, k = 0; i < run->n_requests; i++) {
		if (run->requests[i].warmup)
			continue;
		const struct ls_req_view *v = &s->views[k++];
		uint64_t start = ls_origin_ns(&run->requests[i], LS_ORIGIN_STARTED);
		if (!v->ok || v->end_ns <= start)
			continue;
		uint64_t a = start > from ? start - from : 0, e = v->end_ns > from ? v->end_ns - from : 0;
		for (size_t b = a / sec; b < m->n_out_bins && b * sec < e; b++) {
			uint64_t lo = b * sec > a ? b * sec : a, hi = (b + 1) * sec < e ? (b + 1) * sec : e;
			m->in_flight_bins[b] += (double)(hi - lo) / (double)sec;
		}
	}
	return 0;
}

static int alloc_per_request(struct ls_metrics *m, size_t n)
{
	size_t k = n ? n : 1;
	m->ttfts_s = calloc(k, sizeof(double));
	m->e2els_s = calloc(k, sizeof(double));
	m->slot_waits_s = calloc(k, sizeof(double));
	m->queue_times_s = calloc(k, sizeof(double));
	m->start_times_s = calloc(k, sizeof(double));
	m->input_lens = calloc(k, sizeof(uint32_t));
	m->output_lens = calloc(k, sizeof(uint32_t));
	m->ok = calloc(k, sizeof(int));
	m->itl_off = calloc(k + 1, sizeof(size_t));
	if (!m->ttfts_s || !m->e2els_s || !m->slot_waits_s || !m->queue_times_s || !m->start_times_s || !m->input_lens ||
	    !m->output_lens || !m->ok || !m->itl_off)
		return -ENOMEM;
	return 0;
}

/* The per-request series the summaries read, each over the ok requests. */
enum series {
	SERIES_TTFT,      /* at a clock */
	SERIES_E2EL,      /* at a clock */
	SERIES_TPOT,      /* requests with more than one output token */
	SERIES_SLOT_WAIT,
	SERIES_DISPATCH,
	SERIES_QUEUE,
};

/* Collects series `which` (at clock, for TTFT and E2EL) of the ok requests into buf. */
static size_t gather(const struct scratch *s, size_t n, enum series which, enum ls_origin clock, double *buf)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const struct ls_req_view *v = &s->views[i];
		if (!v->ok)
			continue;
		switch (which) {
		case SERIES_TTFT: buf[k++] = v->ttft_s[clock]; break;
		case SERIES_E2EL: buf[k++] = v->e2el_s[clock]; break;
		case SERIES_TPOT: if (v->has_tpot) buf[k++] = v->tpot_s; break;
		case SERIES_SLOT_WAIT: buf[k++] = v->slot_wait_s; break;
		case SERIES_DISPATCH: buf[k++] = v->dispatch_s; break;
		case SERIES_QUEUE: buf[k++] = v->queue_s; break;
		}
	}
	return k;
}

/* Run bounds: start as the driver stamped it, end at the last measured finish when unset.
 * Sets the duration and the realised rate; returns the start. */
static uint64_t run_bounds(const struct ls_run *run, struct ls_metrics *m)
{
	uint64_t start = run->start_ns, end = run->end_ns, last_started = 0;
	size_t n_started = 0;
	for (size_t i = 0; i < run->n_requests; i++) {
		const struct ls_request *r = &run->requests[i];
		if (r->warmup)
			continue;
		if (!run->start_ns && r->scheduled_ns && (!start || r->scheduled_ns < start))
			start = r->scheduled_ns;
		uint64_t fin = r->finished_ns ? r->finished_ns : r->done_frame_ns;
		if (!run->end_ns && fin > end)
			end = fin;
		if (r->started_ns) {
			n_started++;
			if (r->started_ns > last_started)
				last_started = r->started_ns;
		}
	}
	m->duration_s = end > start ? (double)(end - start) / NS : 0.0;
	if (n_started && last_started > start)
		m->realised_rate = (double)n_started / ((double)(last_started - start) / NS);
	return start;
}

/* What reading the requests counted, for the passes after it. */
struct tally {
	size_t   n_itl_frame, n_itl_token;    /* ITL samples of the ok requests, in each mode */
	uint64_t usage_tokens, usage_frames;  /* ok requests with usage: its tokens, their token frames */
};

/* Tokens per gated frame of one ok request, into the histogram. */
static void count_tokens_per_frame(const struct ls_request *r, const struct ls_read_rules *rules,
				   struct ls_metrics *m)
{
	uint64_t cum = 0;
	for (uint32_t f = 0; f < r->n_frames; f++) {
		const struct ls_frame *fr = &r->frames[f];
		if (!ls_gate_pass(fr, rules->ttft_gate, &cum))
			continue;
		if (fr->tokens < 0)
			m->tpf_unknown++;
		else
			m->tpf_hist[fr->tokens > LS_TPF_MAX ? LS_TPF_MAX : fr->tokens]++;
	}
}

/* The k-th measured request r read under the rules: its view, vLLM's per-request arrays, the
 * ok/failed counts, and where its ITLs go in the pool (itl_off). */
static void read_request(const struct ls_request *r, const struct ls_read_rules *rules, uint64_t start,
			 size_t k, struct ls_req_view *v, struct ls_metrics *m, struct tally *t)
{
	ls_request_view(r, rules, v);
	m->input_lens[k] = v->input_tokens;
	m->slot_waits_s[k] = v->slot_wait_s;
	m->queue_times_s[k] = v->queue_s;
	m->start_times_s[k] = r->started_ns && start ? span_s(start, r->started_ns) : 0.0;
	if (!v->ok) {
		m->failed++;
		if (r->fail != LS_OK)
			m->fail_counts[(unsigned)r->fail < LS_FAIL__COUNT ? r->fail : LS_FAIL_OTHER]++;
		else
			m->no_first_token++;
		m->itl_off[k + 1] = m->itl_off[k];
		return;
	}
	m->ok[k] = 1;
	m->completed++;
	m->total_input += v->input_tokens;
	m->total_output += v->output_tokens;
	m->output_lens[k] = v->output_tokens;
	if (r->usage_completion_tokens >= 0) {
		t->usage_tokens += (uint64_t)r->usage_completion_tokens;
		t->usage_frames += v->token_frames;
	}
	m->ttfts_s[k] = v->ttft_s[rules->origin];
	m->e2els_s[k] = v->e2el_s[rules->origin];
	size_t nf = ls_request_itls(r, rules, LS_ITL_FRAME, NULL, 0);
	size_t nt = ls_request_itls(r, rules, LS_ITL_TOKEN, NULL, 0);
	t->n_itl_frame += nf;
	t->n_itl_token += nt;
	m->itl_off[k + 1] = m->itl_off[k] + (rules->itl_mode == LS_ITL_FRAME ? nf : nt);
	count_tokens_per_frame(r, rules, m);
}

/* Every measured request read (views, per-request arrays, counts, the ITL pool sized), then
 * the headline-mode ITL pool filled and the scratch buffer sized for the largest series. */
static int read_requests(const struct ls_run *run, const struct ls_read_rules *rules, uint64_t start,
			 struct scratch *s, struct ls_metrics *m, struct tally *t)
{
	for (size_t i = 0, k = 0; i < run->n_requests; i++)
		if (!run->requests[i].warmup) {
			read_request(&run->requests[i], rules, start, k, &s->views[k], m, t);
			k++;
		}
	size_t n = m->n, n_itl = m->itl_off[n];
	s->buf_n = t->n_itl_frame > t->n_itl_token ? t->n_itl_frame : t->n_itl_token;
	if (s->buf_n < n)
		s->buf_n = n;
	m->itl_pool = malloc((n_itl ? n_itl : 1) * sizeof(double));
	s->buf = malloc((s->buf_n ? s->buf_n : 1) * sizeof(double));
	if (!m->itl_pool || !s->buf)
		return -ENOMEM;
	for (size_t i = 0, k = 0; i < run->n_requests; i++) {
		const struct ls_request *r = &run->requests[i];
		if (r->warmup)
			continue;
		if (s->views[k].ok)
			ls_request_itls(r, rules, rules->itl_mode, m->itl_pool + m->itl_off[k],
					m->itl_off[k + 1] - m->itl_off[k]);
		k++;
	}
	return 0;
}

/* ITL in both modes, pooled over the ok requests, at the ITL percentiles when the profile
 * has its own. */
static void itl_stats(const struct ls_run *run, const struct ls_read_rules *rules, struct scratch *s,
		      struct ls_metrics *m)
{
	for (int mode = 0; mode < 2; mode++) {
		struct ls_stat *out = mode == LS_ITL_FRAME ? &m->itl_frame : &m->itl_token;
		size_t got = 0;
		for (size_t i = 0, k = 0; i < run->n_requests; i++) {
			const struct ls_request *r = &run->requests[i];
			if (r->warmup)
				continue;
			if (s->views[k++].ok)
				got += ls_request_itls(r, rules, (enum ls_itl_mode)mode, s->buf + got, s->buf_n - got);
		}
		if (rules->n_itl_percentiles)
			ls_stat_compute_at(s->buf, got, rules->itl_percentiles, rules->n_itl_percentiles, out);
		else
			ls_stat_compute(s->buf, got, rules, out);
	}
	m->itl = rules->itl_mode == LS_ITL_FRAME ? m->itl_frame : m->itl_token;
}

/* The latency summaries. Each gather overwrites the scratch buffer, which the stat sorts. */
static void summaries(const struct ls_run *run, const struct ls_read_rules *rules, struct scratch *s,
		      struct ls_metrics *m)
{
	size_t n = m->n;
	double *buf = s->buf;
	for (int c = 0; c < LS_ORIGIN__COUNT; c++) {
		ls_stat_compute(buf, gather(s, n, SERIES_TTFT, (enum ls_origin)c, buf), rules, &m->ttft_by_clock[c]);
		ls_stat_compute(buf, gather(s, n, SERIES_E2EL, (enum ls_origin)c, buf), rules, &m->e2el_by_clock[c]);
	}
	m->ttft = m->ttft_by_clock[rules->origin];
	m->e2el = m->e2el_by_clock[rules->origin];
	ls_stat_compute(buf, gather(s, n, SERIES_TPOT, 0, buf), rules, &m->tpot);
	ls_stat_compute(buf, gather(s, n, SERIES_SLOT_WAIT, 0, buf), rules, &m->slot_wait);
	ls_stat_compute(buf, gather(s, n, SERIES_DISPATCH, 0, buf), rules, &m->dispatch);
	ls_stat_compute(buf, gather(s, n, SERIES_QUEUE, 0, buf), rules, &m->queue);
	itl_stats(run, rules, s, m);
}

int ls_engine_has(const struct ls_request *r, uint32_t part)
{
	if (r->engine_known & part)
		return 1;
	if (r->engine_known)
		return 0;
	if (part == LS_ENGINE_PREFILL)
		return r->engine_prompt_ns != 0;
	if (part == LS_ENGINE_DECODE)
		return r->engine_predicted_ns != 0 && r->engine_predicted_n > 0;
	return part == LS_ENGINE_CACHED && r->engine_prompt_ns != 0 && r->engine_cache_n >= 0;
}

static int engine_any(const struct ls_request *r)
{
	return ls_engine_has(r, LS_ENGINE_QUEUE | LS_ENGINE_PREFILL | LS_ENGINE_DECODE | LS_ENGINE_E2E);
}

enum engine_series { ENGINE_QUEUE, ENGINE_PROMPT, ENGINE_DECODE, ENGINE_E2E, ENGINE_OUTSIDE };

/* One request's value of a series (seconds) into *v: 0 when it has none. */
static int engine_value(const struct ls_request *r, const struct ls_req_view *view, enum ls_origin origin,
			enum engine_series which, double *v)
{
	switch (which) {
	case ENGINE_QUEUE:
		*v = (double)r->engine_queue_ns / NS;
		return ls_engine_has(r, LS_ENGINE_QUEUE);
	case ENGINE_PROMPT:
		*v = (double)r->engine_prompt_ns / NS;
		return ls_engine_has(r, LS_ENGINE_PREFILL);
	case ENGINE_DECODE:
		if (!ls_engine_has(r, LS_ENGINE_DECODE) || r->engine_predicted_n <= 0)
			return 0;
		*v = (double)r->engine_predicted_ns / NS / r->engine_predicted_n;
		return 1;
	case ENGINE_E2E:
		*v = (double)r->engine_e2e_ns / NS;
		return ls_engine_has(r, LS_ENGINE_E2E);
	case ENGINE_OUTSIDE:
		if (!ls_engine_has(r, LS_ENGINE_PREFILL))
			return 0;
		*v = view->ttft_s[origin] - (double)r->engine_prompt_ns / NS -
		     (ls_engine_has(r, LS_ENGINE_QUEUE) ? (double)r->engine_queue_ns / NS : 0.0);
		return 1;
	}
	return 0;
}

/* One series of the engine's account into buf: how many values. */
static size_t engine_series(const struct ls_run *run, const struct ls_read_rules *rules, const struct scratch *s,
			    enum engine_series which, double *buf)
{
	size_t k = 0;
	for (size_t i = 0, v = 0; i < run->n_requests; i++) {
		const struct ls_request *r = &run->requests[i];
		if (r->warmup)
			continue;
		const struct ls_req_view *view = &s->views[v++];
		if (view->ok && engine_value(r, view, rules->origin, which, &buf[k]))
			k++;
	}
	return k;
}

/* The engine's own account of each request, where its response gave one. */
static void engine_account(const struct ls_run *run, const struct ls_read_rules *rules, const struct scratch *s,
			   struct ls_metrics *m)
{
	if (s->buf_n < m->n)
		return;
	m->engine_outside_has_queue = 1;
	for (size_t i = 0, v = 0; i < run->n_requests; i++) {
		const struct ls_request *r = &run->requests[i];
		if (r->warmup)
			continue;
		int ok = s->views[v++].ok;
		m->engine_bad_values += r->engine_bad;
		m->engine_bad_requests += r->engine_bad != 0;
		if (!ok || !engine_any(r))
			continue;
		m->engine_n++;
		/* Records from before engine_source existed had llama.cpp's timings only. */
		m->engine_sources |= 1u << (r->engine_source ? r->engine_source : LS_ENGINE_LLAMACPP);
		m->engine_prompt_tokens += r->engine_prompt_n > 0 ? (uint64_t)r->engine_prompt_n : 0;
		m->engine_cached_tokens += r->engine_cache_n > 0 ? (uint64_t)r->engine_cache_n : 0;
		if (ls_engine_has(r, LS_ENGINE_PREFILL) && !ls_engine_has(r, LS_ENGINE_QUEUE))
			m->engine_outside_has_queue = 0;
	}
	static const enum engine_series order[] = { ENGINE_QUEUE, ENGINE_PROMPT, ENGINE_DECODE, ENGINE_E2E,
						    ENGINE_OUTSIDE };
	struct ls_stat *out[] = { &m->engine_queue, &m->engine_prompt, &m->engine_decode_per_token, &m->engine_e2e,
				  &m->ttft_outside_prompt };
	for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++)
		ls_stat_compute(s->buf, engine_series(run, rules, s, order[k], s->buf), rules, out[k]);
}

/* Tokens per frame, throughputs and Little's-law concurrency over the duration. */
static void throughputs(const struct ls_read_rules *rules, const struct scratch *s, const struct tally *t,
			struct ls_metrics *m)
{
	uint64_t tpf_known = 0, tpf_tokens = 0;
	for (int b = 0; b <= LS_TPF_MAX; b++) {
		tpf_known += m->tpf_hist[b];
		tpf_tokens += m->tpf_hist[b] * (uint64_t)b;
	}
	m->tpf_mean = tpf_known ? (double)tpf_tokens / (double)tpf_known : 0.0;
	m->tpf_usage_mean = t->usage_frames ? (double)t->usage_tokens / (double)t->usage_frames : 0.0;
	if (!(m->duration_s > 0.0))
		return;
	m->request_throughput = (double)m->completed / m->duration_s;
	m->output_throughput = (double)m->total_output / m->duration_s;
	m->total_token_throughput = (double)(m->total_input + m->total_output) / m->duration_s;
	double sum_e2el = 0.0;
	for (size_t k = 0; k < m->n; k++)
		if (s->views[k].ok)
			sum_e2el += s->views[k].e2el_s[rules->origin];
	m->littles_concurrency = sum_e2el / m->duration_s;
}

/* Requests within every goodput bound, when any is set (vLLM's --goodput). */
static void goodput_of(const struct ls_read_rules *rules, const struct ls_goodput *goodput,
		       const struct scratch *s, struct ls_metrics *m)
{
	if (!goodput || !(goodput->has_ttft || goodput->has_tpot || goodput->has_e2el))
		return;
	m->has_goodput = 1;
	for (size_t k = 0; k < m->n; k++) {
		const struct ls_req_view *v = &s->views[k];
		if (!v->ok)
			continue;
		/* vLLM: TPOT counts as 0 when a request produced at most one token. */
		double tpot_ms = v->has_tpot ? v->tpot_s * 1e3 : 0.0;
		if (goodput->has_ttft && v->ttft_s[rules->origin] * 1e3 > goodput->ttft_ms)
			continue;
		if (goodput->has_tpot && tpot_ms > goodput->tpot_ms)
			continue;
		if (goodput->has_e2el && v->e2el_s[rules->origin] * 1e3 > goodput->e2el_ms)
			continue;
		m->good_completed++;
	}
	m->request_goodput = m->duration_s > 0.0 ? (double)m->good_completed / m->duration_s : 0.0;
}

int ls_metrics_compute(const struct ls_run *run, const struct ls_read_rules *rules,
		       const struct ls_goodput *goodput, struct ls_metrics *m)
{
	memset(m, 0, sizeof(*m));
	m->rules = *rules;
	if (goodput)
		m->goodput = *goodput;
	m->target_rate = run->target_rate;
	struct scratch s = { 0 };
	struct tally t = { 0 };

	size_t n = 0;
	for (size_t i = 0; i < run->n_requests; i++)
		n += !run->requests[i].warmup;
	m->n_measured = m->n = n;
	if (alloc_per_request(m, n) || !(s.views = calloc(n ? n : 1, sizeof(*s.views))))
		goto fail;
	uint64_t start = run_bounds(run, m);
	if (read_requests(run, rules, start, &s, m, &t))
		goto fail;
	summaries(run, rules, &s, m);
	throughputs(rules, &s, &t, m);
	goodput_of(rules, goodput, &s, m);
	connections(run, m);
	engine_account(run, rules, &s, m);
	if (peak_output(run, rules, &s, m) || peak_concurrency(run, &s, m) || in_flight_bins(run, &s, m))
		goto fail;
	scratch_free(&s);
	return 0;
fail:
	scratch_free(&s);
	ls_metrics_free(m);
	return -ENOMEM;
}

int ls_parse_percentile_metrics(const char *v, unsigned *out)
{
	unsigned bits = 0;
	for (const char *p = v; p && *p;) {
		size_t n = strcspn(p, ",");
		if (n == 4 && !strncmp(p, "ttft", 4))
			bits |= LS_PM_TTFT;
		else if (n == 4 && !strncmp(p, "tpot", 4))
			bits |= LS_PM_TPOT;
		else if (n == 3 && !strncmp(p, "itl", 3))
			bits |= LS_PM_ITL;
		else if (n == 4 && !strncmp(p, "e2el", 4))
			bits |= LS_PM_E2EL;
		else
			return -1;
		p += n + (p[n] == ',');
	}
	*out = bits;
	return bits ? 0 : -1;
}
