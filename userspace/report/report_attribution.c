/* report_attribution.c — the report section "Where the latency went" (text) and the parts of
 * each request as JSON for the per-request JSONL. */
#include <errno.h>
#include <math.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "attribution/attribution.h"
#include "report/report.h"

static const char *const win_names[LS_ATTR_WIN__COUNT] = { "TTFT", "ITL", "E2EL" };
static const double band_pcts[LS_ATTR_BANDS] = { 50, 90, 99 };

const char *ls_attr_win_name(enum ls_attr_win w)
{
	return w < LS_ATTR_WIN__COUNT ? win_names[w] : "?";
}

static int measured(const struct ls_req_attr *r)
{
	return !(r->flags & (LS_ATTR_WARMUP | LS_ATTR_NOT_OK));
}

/* One sample of a window: its total, and where its parts are. */
struct sample {
	double   total_ms;
	uint32_t req, gap;
};

static const struct ls_parts *sample_parts(const struct ls_attribution *a, enum ls_attr_win w,
					   const struct sample *s)
{
	const struct ls_req_attr *r = &a->req[s->req];
	return w == LS_ATTR_ITL ? &r->gaps[s->gap] : w == LS_ATTR_TTFT ? &r->ttft : &r->e2el;
}

static size_t collect_samples(const struct ls_attribution *a, enum ls_attr_win w, struct sample *out)
{
	size_t n = 0;

	for (size_t i = 0; i < a->n; i++) {
		const struct ls_req_attr *r = &a->req[i];
		if (!measured(r))
			continue;
		if (w == LS_ATTR_ITL) {
			for (uint32_t g = 0; g < r->n_gaps; g++)
				out[n++] = (struct sample){ r->gap_ns[g] / 1e6, (uint32_t)i, g };
		} else {
			uint64_t total = w == LS_ATTR_TTFT ? r->ttft_ns : r->e2el_ns;
			out[n++] = (struct sample){ total / 1e6, (uint32_t)i, 0 };
		}
	}
	return n;
}

static size_t max_samples(const struct ls_attribution *a, enum ls_attr_win w)
{
	size_t n = 0;

	for (size_t i = 0; i < a->n; i++)
		n += w == LS_ATTR_ITL ? a->req[i].n_gaps : 1;
	return n;
}

static int by_total(const void *x, const void *y)
{
	double a = ((const struct sample *)x)->total_ms, b = ((const struct sample *)y)->total_ms;
	return a < b ? -1 : a > b;
}

/* Parts averaged over the samples whose total ranks within 1% of n around percentile p (at
 * least the one sample there): their sum is the band's mean total, so a stacked bar of them is
 * as long as the latency at p, give or take the band. s is sorted by total. */
static void band(const struct ls_attribution *a, enum ls_attr_win w, const struct sample *s, size_t n,
		 const struct ls_run *run, int k, struct ls_attr_window *out)
{
	double pos = band_pcts[k] / 100.0 * (double)(n - 1), half = (double)n / 100.0;
	size_t lo = pos - half > 0 ? (size_t)(pos - half + 0.5) : 0;
	size_t hi = (size_t)(pos + half + 0.5) < n ? (size_t)(pos + half + 0.5) : n - 1, cnt = 0;
	double slot = 0;

	if (hi < lo)
		hi = lo;
	for (size_t j = lo; j <= hi; j++, cnt++) {
		const struct ls_parts *p = sample_parts(a, w, &s[j]);
		for (int part = 0; part < LS_PART__COUNT; part++)
			out->band_ms[k][part] += p->ns[part] / 1e6;
		out->band_total_ms[k] += s[j].total_ms;
		const struct ls_request *r = run && s[j].req < run->n_requests ? &run->requests[s[j].req] : NULL;
		if (w != LS_ATTR_ITL && r && r->admitted_ns > r->scheduled_ns && r->scheduled_ns)
			slot += (r->admitted_ns - r->scheduled_ns) / 1e6;
	}
	for (int part = 0; part < LS_PART__COUNT; part++)
		out->band_ms[k][part] /= (double)cnt;
	out->band_total_ms[k] /= (double)cnt;
	out->band_slot_wait_ms[k] = slot / (double)cnt;
	out->band_n[k] = cnt;
}

/* Whether the text and the page show a part's row: the total, client, every part that has
 * time, and the parts the probes could have filled. */
static int part_shown(const struct ls_attribution *a, int part, double sum)
{
	return part == LS_PART__COUNT || part == LS_PART_CLIENT || sum > 0 ||
	       (part == LS_PART_NETWORK && a->have_client) ||
	       (part == LS_PART_SERVER && a->have_server && !a->have_gpu) || part == LS_PART_UNATTRIBUTED;
}

/* Percentiles of one part's values (total when part == LS_PART__COUNT), and their sum. */
static double part_stats(const struct ls_attribution *a, enum ls_attr_win w, const struct sample *s, size_t n,
			 int part, double *buf, struct ls_attr_window *out)
{
	double sum = 0, lo = INFINITY, hi = -INFINITY;

	for (size_t i = 0; i < n; i++) {
		buf[i] = part == LS_PART__COUNT ? s[i].total_ms : sample_parts(a, w, &s[i])->ns[part] / 1e6;
		sum += buf[i];
		lo = buf[i] < lo ? buf[i] : lo;
		hi = buf[i] > hi ? buf[i] : hi;
	}
	if (n && lo < hi) /* one value throughout (a part no source filled): every percentile is it */
		ls_sort_doubles(buf, n);
	for (size_t k = 0; k < out->n_pcts; k++)
		out->pct_ms[part][k] = ls_percentile(buf, n, out->pcts[k]);
	return sum;
}

int ls_attribution_window(const struct ls_attribution *a, enum ls_attr_win w, const struct ls_run *run,
			  struct ls_attr_window *out)
{
	size_t cap = max_samples(a, w) + 1;
	struct sample *s = malloc(cap * sizeof(*s));
	double *buf = malloc(cap * sizeof(*buf)), total = 0;

	memset(out, 0, sizeof(*out));
	if (!s || !buf) {
		free(s);
		free(buf);
		return -ENOMEM;
	}
	out->n_pcts = a->rules.n_percentiles;
	memcpy(out->pcts, a->rules.percentiles, sizeof(out->pcts));
	out->n = collect_samples(a, w, s);
	if (out->n) {
		total = part_stats(a, w, s, out->n, LS_PART__COUNT, buf, out);
		out->shown[LS_PART__COUNT] = 1;
		out->share[LS_PART__COUNT] = 100.0;
		for (int part = 0; part < LS_PART__COUNT; part++) {
			double sum = part_stats(a, w, s, out->n, part, buf, out);
			out->shown[part] = part_shown(a, part, sum);
			out->share[part] = total > 0 ? 100.0 * sum / total : 0.0;
		}
		qsort(s, out->n, sizeof(*s), by_total);
		for (int k = 0; k < LS_ATTR_BANDS; k++) {
			out->band_pct[k] = band_pcts[k];
			band(a, w, s, out->n, run, k, out);
		}
	}
	free(s);
	free(buf);
	return 0;
}

/* A part's row label: the server's split says which steps measured it. */
static const char *part_label(const struct ls_attribution *a, int part)
{
	if (part == LS_PART__COUNT)
		return "total";
	if (part == LS_PART_FRONTEND)
		return "frontend (uprobe)";
	if (a->have_engine && part == LS_PART_QUEUE)
		return a->have_gpu ? "queue (uprobe/CUPTI)" : "queue (uprobe)";
	if (part == LS_PART_PREFILL)
		return "prefill (uprobe)";
	if (part == LS_PART_DECODE)
		return "decode (uprobe)";
	if (a->have_gpu && (part == LS_PART_QUEUE || part == LS_PART_GPU))
		return part == LS_PART_GPU ? "gpu (CUPTI)" : "queue (CUPTI)";
	return ls_part_name((enum ls_part)part);
}

/* The engine steps behind queue / prefill / decode, and how sure their join to requests is. */
static void print_engine(FILE *out, const struct ls_attribution *a)
{
	const struct ls_attr_engine *e = &a->engine;

	if (!e->uprobe_steps)
		return;
	fprintf(out, "engine steps (uprobe on llama_decode): %zu steps (%zu listing their sequences), %zu "
		"sessions (a slot's prompt steps, then its 1-token decode steps); step P50 prefill %.3f ms, "
		"decode %.3f ms\n", e->uprobe_steps, e->seq_steps, e->sessions, e->prefill_step_p50_ns / 1e6,
		e->decode_step_p50_ns / 1e6);
	fprintf(out, "  joined to requests by time and token counts: %zu requests (%zu uncertain: another request "
		"fitted as well, %zu of them between twin sessions whose parts are the same either way; %zu by time "
		"alone: the engine's counts did not fit; %zu cut from a longer run of steps by the counts: a cached "
		"1-token prompt right after the slot's last request); %zu sessions joined to no request", e->mapped,
		e->uncertain, e->twins, e->counts_differ, e->split, e->unjoined);
	if (e->lost)
		fprintf(out, "; %llu steps lost (ring full)", (unsigned long long)e->lost);
	fprintf(out, "\n");
	if (e->mapped)
		fprintf(out, "  frontend (uprobes on the request's HTTP thread: its read -> its hand-off, post_tasks, "
			"else its last llama_tokenize): %zu requests; %zu unknown (no call in its window: that time "
			"stays in queue); %zu post_tasks and %zu llama_tokenize calls seen, %zu in a request's "
			"window\n", e->frontend, e->no_frontend, e->post_calls, e->tokenize_calls, e->marks_joined);
}

/* The engine's own account against the server's kernel stamps (attribution_account.c). */
static void print_account(FILE *out, const struct ls_attribution *a)
{
	const struct ls_attr_engine_account *o = &a->account;

	if (!o->n)
		return;
	fprintf(out, "engine's own account vs the server's kernel stamps (%zu requests): its %s P50 %.3f ms of the "
		"server's read -> first-token write P50 %.3f ms; server time it does not count P50 %.3f ms, P99 %.3f ms "
		"(its frontend, writing%s)", o->n, o->has_queue ? "queue+prefill" : "prefill", o->inside_p50_ms,
		o->server_p50_ms, o->not_counted_p50_ms, o->not_counted_p99_ms,
		o->has_queue ? "" : ", the wait for a slot: it gives no queue");
	if (o->n_steps)
		fprintf(out, "; its prefill - the uprobe steps' P50 %+.3f ms (%zu requests)", o->prefill_minus_steps_p50_ms,
			o->n_steps);
	if (o->over)
		fprintf(out, "; %zu accounts longer than the server's interval (by up to %.3f ms): its clock, or what "
			"its fields measure, is not the kernel's", o->over, o->worst_over_ms);
	fprintf(out, "\n");
}

static void print_window(FILE *out, const struct ls_attribution *a, enum ls_attr_win w)
{
	struct ls_attr_window s;

	if (ls_attribution_window(a, w, NULL, &s)) {
		fprintf(out, "%s: (out of memory)\n", win_names[w]);
		return;
	}
	if (!s.n) {
		fprintf(out, "%s: no samples\n", win_names[w]);
		return;
	}
	fprintf(out, "%-5s (ms, n=%zu)     ", win_names[w], s.n);
	for (size_t k = 0; k < s.n_pcts; k++)
		fprintf(out, "     P%-4g", s.pcts[k]);
	fprintf(out, "    share\n");
	for (int part = 0; part <= LS_PART__COUNT; part++) {
		if (!s.shown[part])
			continue;
		fprintf(out, "  %-20s", part_label(a, part));
		for (size_t k = 0; k < s.n_pcts; k++)
			fprintf(out, " %9.3f", s.pct_ms[part][k]);
		fprintf(out, " %7.1f%%\n", s.share[part]);
	}
}

int ls_attribution_client_delays(const struct ls_run *run, const struct ls_attribution *a, uint64_t **out,
				 size_t *n_out)
{
	size_t n = 0, cap = 0;
	uint64_t *d;

	*out = NULL;
	*n_out = 0;
	for (size_t i = 0; i < a->n && i < run->n_requests; i++)
		cap += a->req[i].n_frames;
	if (!cap)
		return 0;
	if (!(d = malloc(cap * sizeof(*d))))
		return -ENOMEM;
	for (size_t i = 0; i < a->n && i < run->n_requests; i++) {
		const struct ls_request *r = &run->requests[i];
		const struct ls_req_attr *ra = &a->req[i];
		if (r->warmup)
			continue;
		for (uint32_t f = 0; f < ra->n_frames && f < r->n_frames; f++) {
			uint64_t k = ra->frames[f].kernel_ns, s = r->frames[f].arrived_ns;
			if (k && s >= k)
				d[n++] = s - k;
		}
	}
	ls_sort_u64(d, n);
	*out = d;
	*n_out = n;
	return 0;
}

/* Kernel connect time against curl's CONNECT_TIME: curl starts its clock before connect() and
 * notices ESTABLISHED later, so the difference is client delay, not network. */
static void print_connect(FILE *out, const struct ls_attribution *a, double *buf)
{
	size_t n = 0;
	double *curl = buf + a->n, *diff = buf + 2 * a->n;

	for (size_t i = 0; i < a->n; i++) {
		const struct ls_req_attr *r = &a->req[i];
		uint64_t kernel;
		if ((r->flags & LS_ATTR_REUSED) || !r->connect_call_ns || !r->curl_connect_time_ns ||
		    r->established_ns <= r->connect_call_ns)
			continue;
		kernel = r->established_ns - r->connect_call_ns;
		buf[n] = kernel / 1e6;
		curl[n] = r->curl_connect_time_ns / 1e6;
		diff[n] = curl[n] - buf[n];
		n++;
	}
	if (!n)
		return;
	ls_sort_doubles(buf, n);
	ls_sort_doubles(curl, n);
	ls_sort_doubles(diff, n);
	fprintf(out, "connect (n=%zu, P50): kernel connect()->ESTABLISHED %.3f ms, curl CONNECT_TIME %.3f ms: "
		"%.3f ms of it is client delay, not network\n",
		n, ls_percentile(buf, n, 50), ls_percentile(curl, n, 50), ls_percentile(diff, n, 50));
}

void ls_attribution_print(FILE *out, const struct ls_attribution *a)
{
	size_t cap = 3 * a->n + 1, counts[8] = { 0 };
	double *buf;

	fprintf(out, "%s\n", "=============== Where the latency went ===============");
	buf = malloc(cap * sizeof(*buf));
	if (!buf) {
		fprintf(out, "(out of memory)\n");
		return;
	}
	for (size_t i = 0; i < a->n; i++)
		for (int b = 0; b < 8; b++)
			counts[b] += (a->req[i].flags >> b) & 1;
	if (a->why[0])
		fprintf(out, "note: %s\n", a->why);
	for (int w = 0; w < LS_ATTR_WIN__COUNT; w++)
		print_window(out, a, (enum ls_attr_win)w);
	print_engine(out, a);
	print_account(out, a);
	print_connect(out, a, buf);
	ls_handshake_print(out, a);
	fprintf(out, "requests: %zu; reused connection %zu; no server events %zu; lost events %zu; "
		"out of order %zu\n", a->n, counts[4], counts[1], counts[2], counts[3]);
	fprintf(out, "(percentiles are per part: they do not add up; shares do)\n");
	free(buf);
}

/* ---- the per-request JSON ----
 * Every value is an integer (ns, counts, cookies). cJSON prints numbers with "%1.15g" and
 * reads each back with sscanf (~3,000 instructions apiece), and a double loses uint64 bits, so
 * integers go in as raw decimal text, exact. Their valuedouble is set too: code that reads the
 * tree in memory sees the number. Per-frame values are built as text: each inter-token gap is
 * one raw object, the kernel's frame stamps one raw array. */

#define U64_CHARS 20

/* Decimal text of v ending at end (not NUL-terminated); returns its first byte. */
static char *u64_text(char *end, uint64_t v)
{
	do
		*--end = (char)('0' + v % 10);
	while (v /= 10);
	return end;
}

static cJSON *int_item(uint64_t v)
{
	char buf[U64_CHARS + 1];
	buf[U64_CHARS] = 0;
	cJSON *item = cJSON_CreateRaw(u64_text(buf + U64_CHARS, v));
	if (item) {
		item->valuedouble = (double)v;
		item->valueint = v > INT_MAX ? INT_MAX : (int)v;
	}
	return item;
}

/* key must be a string constant: it is not copied. */
static void add_int(cJSON *o, const char *key, uint64_t v)
{
	cJSON *item = int_item(v);
	if (item && !cJSON_AddItemToObjectCS(o, key, item))
		cJSON_Delete(item);
}

/* "<part>_ns" for every part, made once (the keys are shared, not copied per item). */
static char part_keys[LS_PART__COUNT][40];
static pthread_once_t part_keys_once = PTHREAD_ONCE_INIT;

static void make_part_keys(void)
{
	for (int part = 0; part < LS_PART__COUNT; part++)
		snprintf(part_keys[part], sizeof(part_keys[part]), "%s_ns", ls_part_name((enum ls_part)part));
}

static cJSON *parts_json(const struct ls_parts *p, uint64_t total)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	pthread_once(&part_keys_once, make_part_keys);
	add_int(o, "total_ns", total);
	for (int part = 0; part < LS_PART__COUNT; part++)
		if (p->ns[part])
			add_int(o, part_keys[part], p->ns[part]);
	return o;
}

/* Appends "key":v at p; returns the end. */
static char *put_int(char *p, const char *key, uint64_t v)
{
	char buf[U64_CHARS], *d = u64_text(buf + U64_CHARS, v);
	size_t k = strlen(key), n = (size_t)(buf + U64_CHARS - d);
	*p++ = '"';
	memcpy(p, key, k);
	p += k;
	*p++ = '"';
	*p++ = ':';
	memcpy(p, d, n);
	return p + n;
}

/* One inter-token gap, {"total_ns":..,"<part>_ns":..,"frame":..}, as a raw item: the same
 * text parts_json and add_int give, without a node (and a strdup) per value. */
static cJSON *gap_json(const struct ls_parts *p, uint64_t total, uint32_t frame)
{
	char text[(LS_PART__COUNT + 2) * (sizeof(part_keys[0]) + U64_CHARS + 4) + 3], *t = text;
	*t++ = '{';
	t = put_int(t, "total_ns", total);
	for (int part = 0; part < LS_PART__COUNT; part++)
		if (p->ns[part]) {
			*t++ = ',';
			t = put_int(t, part_keys[part], p->ns[part]);
		}
	*t++ = ',';
	t = put_int(t, "frame", frame);
	*t++ = '}';
	*t = 0;
	return cJSON_CreateRaw(text);
}

static void add_stamp(cJSON *o, const char *key, uint64_t ns)
{
	if (ns)
		add_int(o, key, ns);
}

/* [[server_write_ns, kernel_ns, read_ns], ...] per frame (0 = unknown), as one raw item. */
static cJSON *frames_json(const struct ls_req_attr *r)
{
	char *text = cJSON_malloc((size_t)r->n_frames * (3 * U64_CHARS + 5) + 3);
	char *p = text;

	if (!text)
		return NULL;
	*p++ = '[';
	for (uint32_t f = 0; f < r->n_frames; f++) {
		const struct ls_frame_attr *fa = &r->frames[f];
		const uint64_t v[3] = { fa->server_write_ns, fa->kernel_ns, fa->read_ns };
		if (f)
			*p++ = ',';
		*p++ = '[';
		for (int k = 0; k < 3; k++) {
			char buf[U64_CHARS], *d = u64_text(buf + U64_CHARS, v[k]);
			size_t n = (size_t)(buf + U64_CHARS - d);
			if (k)
				*p++ = ',';
			memcpy(p, d, n);
			p += n;
		}
		*p++ = ']';
	}
	*p++ = ']';
	*p = 0;
	cJSON *item = cJSON_CreateRaw("");
	if (!item) {
		cJSON_free(text);
		return NULL;
	}
	cJSON_free(item->valuestring);
	item->valuestring = text;
	return item;
}

/* "connect" and "tls": a fresh connection's handshake parts (each sums to its total_ns), and
 * "tls_rounds" [[client_sent, server_arrived, server_sent, client_arrived], ...] (0 unknown). */
static void handshake_json(cJSON *o, const struct ls_req_attr *r)
{
	cJSON *item, *rounds;

	if (r->connect_span_ns && (item = parts_json(&r->connect, r->connect_span_ns)) &&
	    !cJSON_AddItemToObjectCS(o, "connect", item))
		cJSON_Delete(item);
	if (!r->tls_span_ns || !(item = parts_json(&r->tls, r->tls_span_ns)))
		return;
	if (!cJSON_AddItemToObjectCS(o, "tls", item)) {
		cJSON_Delete(item);
		return;
	}
	rounds = cJSON_AddArrayToObject(item, "rounds");
	for (uint32_t i = 0; rounds && i < r->n_tls_rounds; i++) {
		const struct ls_tls_round *t = &r->tls_rounds[i];
		const uint64_t v[4] = { t->client_sent_ns, t->server_arrived_ns, t->server_sent_ns,
					t->client_arrived_ns };
		cJSON *row = cJSON_CreateArray();
		for (int j = 0; row && j < 4; j++) {
			cJSON *n = int_item(v[j]);
			if (n && !cJSON_AddItemToArray(row, n))
				cJSON_Delete(n);
		}
		if (row && !cJSON_AddItemToArray(rounds, row))
			cJSON_Delete(row);
	}
}

/* "engine": the request's session of uprobe steps (only when one was joined to it). */
static void engine_json(cJSON *o, const struct ls_req_attr *r)
{
	const struct ls_req_engine *e = &r->engine;
	cJSON *j, *flags;

	if (!(e->flags & LS_ENG_MAPPED) || !(j = cJSON_AddObjectToObject(o, "engine")))
		return;
	cJSON_AddStringToObject(j, "source", "uprobe");
	flags = cJSON_AddArrayToObject(j, "flags");
	for (unsigned b = 0; flags && ls_eng_flag_name(b); b++)
		if (e->flags & (1u << b))
			cJSON_AddItemToArray(flags, cJSON_CreateStringReference(ls_eng_flag_name(b)));
	cJSON_AddNumberToObject(j, "seq", e->seq);
	add_int(j, "prompt_tokens", e->prompt_tokens);
	add_int(j, "prefill_steps", e->prefill_steps);
	add_int(j, "decode_steps", e->decode_steps);
	add_int(j, "first_step_ns", e->first_step_ns);
	add_int(j, "frontend_ns", e->frontend_ns);
	add_int(j, "tokenize_calls", e->tokenize_calls);
	add_int(j, "posted", e->posted);
	add_int(j, "queue_ns", e->queue_ns);
	add_int(j, "prefill_ns", e->prefill_ns);
	add_int(j, "decode_ns", e->decode_ns);
	add_int(j, "prefill_steps_ns", e->prefill_steps_ns);
	add_int(j, "decode_steps_ns", e->decode_steps_ns);
}

cJSON *ls_attribution_request_json(const struct ls_attribution *a, size_t i)
{
	const struct ls_req_attr *r;
	cJSON *o, *flags, *k, *itl, *fr;

	if (!a || i >= a->n)
		return NULL;
	r = &a->req[i];
	o = cJSON_CreateObject();
	if (!o)
		return NULL;
	add_int(o, "id", r->id);
	flags = cJSON_AddArrayToObject(o, "flags");
	for (unsigned b = 0; flags && ls_attr_flag_name(b); b++)
		if (r->flags & (1u << b))
			cJSON_AddItemToArray(flags, cJSON_CreateStringReference(ls_attr_flag_name(b)));
	if (!(r->flags & LS_ATTR_NOT_OK)) {
		cJSON_AddItemToObjectCS(o, "ttft", parts_json(&r->ttft, r->ttft_ns));
		cJSON_AddItemToObjectCS(o, "e2el", parts_json(&r->e2el, r->e2el_ns));
		itl = cJSON_AddArrayToObject(o, "itl");
		pthread_once(&part_keys_once, make_part_keys);
		for (uint32_t g = 0; itl && g < r->n_gaps; g++) {
			cJSON *gj = gap_json(&r->gaps[g], r->gap_ns[g], r->gap_frame[g]);
			if (gj && !cJSON_AddItemToArray(itl, gj))
				cJSON_Delete(gj);
		}
	}
	handshake_json(o, r);
	engine_json(o, r);
	k = cJSON_AddObjectToObject(o, "kernel");
	if (k) {
		add_stamp(k, "client_cookie", r->client_cookie);
		add_stamp(k, "server_cookie", r->server_cookie);
		add_stamp(k, "connect_call_ns", r->connect_call_ns);
		add_stamp(k, "syn_sent_ns", r->syn_sent_ns);
		add_stamp(k, "established_ns", r->established_ns);
		add_stamp(k, "tls_start_ns", r->tls_start_ns);
		add_stamp(k, "tls_end_ns", r->tls_end_ns);
		add_stamp(k, "request_send_ns", r->request_send_ns);
		add_stamp(k, "request_sent_ns", r->request_sent_ns);
		add_stamp(k, "server_arrived_ns", r->server_arrived_ns);
		add_stamp(k, "server_read_ns", r->server_read_ns);
		add_stamp(k, "srtt_us", r->srtt_us);
		add_stamp(k, "retransmits", r->retransmits);
		fr = frames_json(r);
		if (fr && !cJSON_AddItemToObjectCS(k, "frames", fr))
			cJSON_Delete(fr);
	}
	return o;
}
