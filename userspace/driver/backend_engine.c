/* backend_engine.c — the engine's own account of one request, joined to its record: llama.cpp's
 * "timings", SGLang's meta_info, vLLM's "metrics", TGI's x-*-time headers and TensorRT-LLM's
 * /perf_metrics (docs/engine.md, "The engine's own fields": each engine's names, where they were
 * checked, what each can and cannot tell). A value that is not a usable number (a string, a
 * negative, a non-finite number, over a day) is ignored and counted in ls_request.engine_bad:
 * the request stays as it was, ok or not. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <cjson/cJSON.h>
#include "base/numconv.h"
#include "driver/backend.h"
#include "driver/backend_int.h"

#define ENGINE_MAX_S 86400.0 /* one request's time beyond a day is no time */

/* One engine's account as read, before it lands in the record. */
struct account {
	uint32_t known;
	uint64_t queue_ns, prefill_ns, decode_ns, e2e_ns;
	int32_t  prompt_n, decode_n, cache_n;
	uint32_t bad;
};

static struct account account_init(uint32_t bad)
{
	return (struct account){ .prompt_n = -1, .decode_n = -1, .cache_n = -1, .bad = bad };
}

/* A duration in obj[name] (unit: ns per unit). 1 when it was one; absent and null are "not
 * given" (vLLM nulls a field it has no data for); anything else is counted bad. */
static int duration(const cJSON *obj, const char *name, double ns_per_unit, uint64_t *out, uint32_t *bad)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
	if (!v || cJSON_IsNull(v))
		return 0;
	double s = cJSON_IsNumber(v) ? v->valuedouble * ns_per_unit / 1e9 : -1.0;
	if (!(s >= 0.0 && s <= ENGINE_MAX_S)) { /* NaN fails both */
		(*bad)++;
		return 0;
	}
	*out = ls_d2u64(s * 1e9);
	return 1;
}

/* A wall-clock stamp in seconds (SGLang's *_ts): a positive finite number. */
static int stamp_s(const cJSON *obj, const char *name, double *out, uint32_t *bad)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsNumber(v) || !(v->valuedouble > 0.0 && v->valuedouble < 1e12)) {
		(*bad)++;
		return 0;
	}
	*out = v->valuedouble;
	return 1;
}

/* A token count: an integer within [0, INT32_MAX]. */
static int count(const cJSON *obj, const char *name, int32_t *out, uint32_t *bad)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0.0 && v->valuedouble <= 2147483647.0) ||
	    v->valuedouble != floor(v->valuedouble)) {
		(*bad)++;
		return 0;
	}
	*out = (int32_t)v->valuedouble;
	return 1;
}

/* The account into the record: the last frame (or head) that carried one wins whole. */
static void commit(struct ls_request *req, enum ls_engine_source source, const struct account *a)
{
	if (!a->known && !a->bad)
		return;
	req->engine_source = source;
	req->engine_known = a->known;
	req->engine_queue_ns = a->queue_ns;
	req->engine_prompt_ns = a->prefill_ns;
	req->engine_predicted_ns = a->decode_ns;
	req->engine_e2e_ns = a->e2e_ns;
	req->engine_prompt_n = a->prompt_n;
	req->engine_predicted_n = a->decode_n;
	req->engine_cache_n = a->cache_n;
	req->engine_bad = a->bad;
}

/* llama.cpp's "timings" {prompt_n, prompt_ms, predicted_n, predicted_ms, cache_n}
 * (tools/server: server_slot_stats' to_json), on the last frame of its native and OpenAI
 * streams. predicted_ms runs from the prompt's end to the last token; predicted_n counts every
 * generated token. */
static void llamacpp(const cJSON *t, struct ls_request *req, uint32_t bad)
{
	struct account a = account_init(bad);
	if (duration(t, "prompt_ms", 1e6, &a.prefill_ns, &a.bad))
		a.known |= LS_ENGINE_PREFILL;
	if (duration(t, "predicted_ms", 1e6, &a.decode_ns, &a.bad))
		a.known |= LS_ENGINE_DECODE;
	count(t, "prompt_n", &a.prompt_n, &a.bad);
	count(t, "predicted_n", &a.decode_n, &a.bad);
	if (count(t, "cache_n", &a.cache_n, &a.bad))
		a.known |= LS_ENGINE_CACHED;
	commit(req, LS_ENGINE_LLAMACPP, &a);
}

/* SGLang's meta_info on the frame that finishes the request (tokenizer_manager.py: e2e_latency
 * always; queue_time, prefill_launch_delay, prefill_launch_latency, prefill_finished_ts and
 * decode_finished_ts with --enable-metrics; seconds). Its queue is the wait for the scheduler
 * plus the launch delay before the prefill ran; its decode runs from the first token to the last. */
static void sglang(const cJSON *m, struct ls_request *req, uint32_t bad)
{
	struct account a = account_init(bad);
	uint64_t wait_ns = 0, delay_ns = 0;
	if (duration(m, "queue_time", 1e9, &wait_ns, &a.bad)) {
		a.known |= LS_ENGINE_QUEUE;
		if (duration(m, "prefill_launch_delay", 1e9, &delay_ns, &a.bad))
			wait_ns += delay_ns;
		a.queue_ns = wait_ns;
	}
	if (duration(m, "prefill_launch_latency", 1e9, &a.prefill_ns, &a.bad))
		a.known |= LS_ENGINE_PREFILL;
	if (duration(m, "e2e_latency", 1e9, &a.e2e_ns, &a.bad))
		a.known |= LS_ENGINE_E2E;
	double first = 0, last = 0;
	int32_t completion = -1, prompt = -1;
	int stamps = stamp_s(m, "prefill_finished_ts", &first, &a.bad) + stamp_s(m, "decode_finished_ts", &last, &a.bad);
	count(m, "completion_tokens", &completion, &a.bad);
	if (stamps == 2 && last >= first && last - first <= ENGINE_MAX_S && completion >= 1) {
		a.decode_ns = ls_d2u64((last - first) * 1e9);
		a.decode_n = completion - 1;
		a.known |= LS_ENGINE_DECODE;
	} else if (stamps == 2 && last < first) {
		a.bad++;
	}
	if (count(m, "cached_tokens", &a.cache_n, &a.bad))
		a.known |= LS_ENGINE_CACHED;
	if (count(m, "prompt_tokens", &prompt, &a.bad))
		a.prompt_n = a.cache_n > 0 && prompt >= a.cache_n ? prompt - a.cache_n : prompt;
	commit(req, LS_ENGINE_SGLANG, &a);
}

/* vLLM's "metrics" on the usage frame (docs/features/per_request_metrics.md; the server's
 * --enable-per-request-metrics, streams with stream_options.include_usage): queue_time_ms,
 * time_to_first_token_ms (scheduled -> first token: its prefill), generation_time_ms (first ->
 * last token); the counts from the same frame's usage. */
static void vllm(const cJSON *root, const cJSON *m, struct ls_request *req, uint32_t bad)
{
	struct account a = account_init(bad);
	if (duration(m, "queue_time_ms", 1e6, &a.queue_ns, &a.bad))
		a.known |= LS_ENGINE_QUEUE;
	if (duration(m, "time_to_first_token_ms", 1e6, &a.prefill_ns, &a.bad))
		a.known |= LS_ENGINE_PREFILL;
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(root, "usage");
	int32_t completion = -1, prompt = -1;
	uint32_t ignored = 0; /* usage's own counts are the usage reader's to judge */
	count(usage, "completion_tokens", &completion, &ignored);
	count(usage, "prompt_tokens", &prompt, &ignored);
	if (duration(m, "generation_time_ms", 1e6, &a.decode_ns, &a.bad) && completion >= 1) {
		a.decode_n = completion - 1;
		a.known |= LS_ENGINE_DECODE;
	}
	const cJSON *details = cJSON_GetObjectItemCaseSensitive(usage, "prompt_tokens_details");
	if (count(details, "cached_tokens", &a.cache_n, &ignored))
		a.known |= LS_ENGINE_CACHED;
	a.prompt_n = a.cache_n > 0 && prompt >= a.cache_n ? prompt - a.cache_n : prompt;
	commit(req, LS_ENGINE_VLLM, &a);
}

void ls_backend_engine_fields(const cJSON *root, uint32_t non_finite, struct ls_request *req)
{
	if (!cJSON_IsObject(root))
		return;
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "timings");
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "metrics");
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "meta_info");
	if (cJSON_IsObject(t)) {
		llamacpp(t, req, non_finite);
	} else if (cJSON_IsObject(m)) {
		vllm(root, m, req, non_finite);
	} else if (cJSON_IsObject(meta) && cJSON_GetObjectItemCaseSensitive(meta, "e2e_latency")) {
		const cJSON *finish = cJSON_GetObjectItemCaseSensitive(meta, "finish_reason");
		if (finish && !cJSON_IsNull(finish)) /* the finishing frame: the whole account */
			sglang(meta, req, non_finite);
	}
}

/* ---- Python's json writes NaN, Infinity and -Infinity, which JSON (and cJSON) refuse ---- */

static size_t non_finite_at(const char *p, const char *end)
{
	static const char *const words[] = { "-Infinity", "Infinity", "NaN" };
	for (size_t k = 0; k < 3; k++) {
		size_t n = strlen(words[k]);
		if ((size_t)(end - p) >= n && !memcmp(p, words[k], n))
			return n;
	}
	return 0;
}

char *ls_backend_non_finite_to_null(const char *data, size_t len, size_t *out_len, uint32_t *n_replaced)
{
	const char *end = data + len;
	char *out = malloc(len + len / 3 + 8); /* "NaN" -> "null" grows 3 bytes to 4 */
	if (!out)
		return NULL;
	size_t o = 0;
	int in_str = 0;
	*n_replaced = 0;
	for (const char *p = data; p < end;) {
		size_t n = in_str ? 0 : non_finite_at(p, end);
		if (n) {
			memcpy(out + o, "null", 4);
			o += 4;
			p += n;
			(*n_replaced)++;
			continue;
		}
		if (*p == '"')
			in_str = !in_str;
		else if (in_str && *p == '\\' && p + 1 < end)
			out[o++] = *p++;
		out[o++] = *p++;
	}
	*out_len = o;
	return out;
}

/* ---- TGI's response headers (router/src/server.rs: generate, the non-streaming route; its
 * /generate_stream sends none of them): x-queue-time, x-inference-time, x-validation-time,
 * x-total-time, x-time-per-token in ms, x-prompt-tokens, x-generated-tokens ---- */

static const struct {
	const char *name;
	int part;
} tgi_headers[] = {
	{ "x-queue-time", 0 }, { "x-inference-time", 1 }, { "x-validation-time", 2 }, { "x-total-time", 3 },
	{ "x-time-per-token", 4 }, { "x-prompt-tokens", 5 }, { "x-generated-tokens", 6 },
};

/* A header value as a number: -1 for anything that is not a finite number >= 0. */
static double header_number(const char *v, size_t n)
{
	char buf[48];
	while (n && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	while (n && (*v == ' ' || *v == '\t')) {
		v++;
		n--;
	}
	if (!n || n >= sizeof(buf))
		return -1;
	memcpy(buf, v, n);
	buf[n] = 0;
	char *endp;
	double d = strtod(buf, &endp);
	return *endp || !isfinite(d) || d < 0 ? -1 : d;
}

/* One header line into the request's TGI account (kept in the record as it grows). */
void ls_backend_engine_header(struct ls_request *req, const char *line, size_t len)
{
	if (len < 3 || (line[0] != 'x' && line[0] != 'X'))
		return;
	const char *colon = memchr(line, ':', len);
	if (!colon)
		return;
	size_t name_len = (size_t)(colon - line);
	for (size_t k = 0; k < sizeof(tgi_headers) / sizeof(tgi_headers[0]); k++) {
		if (strlen(tgi_headers[k].name) != name_len || strncasecmp(line, tgi_headers[k].name, name_len))
			continue;
		double v = header_number(colon + 1, len - name_len - 1);
		int part = tgi_headers[k].part;
		if (req->engine_source != LS_ENGINE_TGI) { /* the first of them in this head */
			req->engine_source = LS_ENGINE_TGI;
			req->engine_known = req->engine_bad = 0;
		}
		int is_ms = part <= 4;
		if (v < 0 || (is_ms && v / 1e3 > ENGINE_MAX_S) || (!is_ms && v > 2147483647.0)) {
			req->engine_bad++;
			return;
		}
		uint64_t ns = ls_d2u64(v * 1e6);
		if (part == 0) {
			req->engine_queue_ns = ns;
			req->engine_known |= LS_ENGINE_QUEUE;
		} else if (part == 3) {
			req->engine_e2e_ns = ns;
			req->engine_known |= LS_ENGINE_E2E;
		} else if (part == 5) {
			req->engine_prompt_n = (int32_t)v;
		} else if (part == 6) {
			req->engine_predicted_n = (int32_t)v;
		}
		/* x-inference-time is prefill and decode together, x-validation-time the router's own
		 * work before the queue, x-time-per-token their mean: none is one of the parts. */
		return;
	}
}

/* ---- TensorRT-LLM's /perf_metrics (tensorrt_llm/serve/openai_server.py: get_perf_metrics,
 * with return_perf_metrics): a list of {"request_id", "perf_metrics": {"timing_metrics":
 * {"server_arrival_time", "arrival_time", "first_scheduled_time", "first_token_time",
 * "server_first_token_time", "last_token_time"}, "kv_cache_metrics": {...}}}, times in seconds
 * of the server's steady clock (CLOCK_MONOTONIC on Linux: latscope's clock on the same host).
 * Its request_id is the executor's own number, not the X-Request-Id latscope sent, so entries
 * join requests by time: taken in arrival order, each joins, of the requests not yet joined
 * that were open when it arrived (sent - 1 ms <= arrival <= its response head) and had not
 * ended before the engine's last token, the one whose window closes first. That is the most
 * entries joined (points in intervals, matched greedily), and it holds when the server reads a
 * burst out of its send order: "the earliest sent" gave the first read the first sent, and
 * when the first sent was read after the other's window had closed, left it unjoined (CI, under
 * load); "nearest send" fails the other way (a later send lies nearer a late arrival). ---- */

#define PERF_SLACK_S 1e-3 /* latscope's send stamp may follow the server's arrival stamp */

struct perf_entry {
	double arrival;
	double t[3];   /* first_scheduled_time, first_token_time, last_token_time */
	uint32_t have; /* bit k: t[k] read */
	uint32_t bad;  /* malformed values in the entry */
};

/* One of the engine's stamps, which TensorRT-LLM always writes as a number: absent is "not
 * given"; null (a NaN or Infinity made null), a string, a stamp <= 0 or >= 1e12 are malformed. */
static int perf_stamp(const cJSON *t, const char *name, double *out, uint32_t *bad)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(t, name);
	if (!v)
		return 0;
	if (!cJSON_IsNumber(v) || !(v->valuedouble > 0.0 && v->valuedouble < 1e12)) {
		(*bad)++;
		return 0;
	}
	*out = v->valuedouble;
	return 1;
}

/* An entry's stamps. 1 when it has an arrival to join by (server_arrival_time, the HTTP
 * server's; else the executor's arrival_time: server_arrival_time alone may be null, when the
 * route had no request object), 0 when it cannot join. Stamps that run backwards are counted
 * and none is kept. */
static int perf_entry_read(const cJSON *item, struct perf_entry *e)
{
	static const char *const names[3] = { "first_scheduled_time", "first_token_time", "last_token_time" };
	memset(e, 0, sizeof(*e));
	const cJSON *pm = cJSON_GetObjectItemCaseSensitive(item, "perf_metrics");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(pm, "timing_metrics");
	if (!cJSON_IsObject(t))
		return 0;
	int arrived = stamp_s(t, "server_arrival_time", &e->arrival, &e->bad) ||
		      perf_stamp(t, "arrival_time", &e->arrival, &e->bad);
	double prev = arrived ? e->arrival : 0;
	for (int k = 0; k < 3; k++) {
		if (!perf_stamp(t, names[k], &e->t[k], &e->bad))
			continue;
		e->have |= 1u << k;
		if (e->t[k] < prev || (arrived && e->t[k] - e->arrival > ENGINE_MAX_S))
			e->have = UINT32_MAX; /* marks the order broken */
		prev = e->t[k];
	}
	if (e->have == UINT32_MAX) {
		e->bad++;
		e->have = 0;
	}
	return arrived;
}

static void perf_commit(const struct perf_entry *e, struct ls_request *r)
{
	struct account a = account_init(e->bad);
	const double *t = e->t;
	if (e->have & 1u) {
		a.queue_ns = ls_d2u64((t[0] - e->arrival) * 1e9);
		a.known |= LS_ENGINE_QUEUE;
	}
	if ((e->have & 3u) == 3u) {
		a.prefill_ns = ls_d2u64((t[1] - t[0]) * 1e9);
		a.known |= LS_ENGINE_PREFILL;
	}
	if ((e->have & 6u) == 6u && r->usage_completion_tokens >= 1) { /* from the first token on */
		a.decode_ns = ls_d2u64((t[2] - t[1]) * 1e9);
		a.decode_n = r->usage_completion_tokens - 1;
		a.known |= LS_ENGINE_DECODE;
	}
	if (e->have & 4u) {
		a.e2e_ns = ls_d2u64((t[2] - e->arrival) * 1e9);
		a.known |= LS_ENGINE_E2E;
	}
	commit(r, LS_ENGINE_TRTLLM, &a);
}

/* A request as the join sees it: its send, the end of its window (response head, else its
 * last byte), its last byte; all seconds. */
struct perf_req {
	double sent, until, finished;
	struct ls_request *r;
	int taken;
};

static int cmp_entry(const void *a, const void *b)
{
	double x = ((const struct perf_entry *)a)->arrival, y = ((const struct perf_entry *)b)->arrival;
	return (x > y) - (x < y);
}

static int cmp_req(const void *a, const void *b)
{
	double x = ((const struct perf_req *)a)->sent, y = ((const struct perf_req *)b)->sent;
	return (x > y) - (x < y);
}

/* reqs with a send and an answer, in send order; *widest: the longest window. */
static struct perf_req *perf_reqs(struct ls_request *reqs, size_t n, size_t *m, double *widest)
{
	struct perf_req *pr = malloc((n ? n : 1) * sizeof(*pr));
	*m = 0;
	*widest = 0;
	for (size_t i = 0; pr && i < n; i++) {
		struct ls_request *r = &reqs[i];
		uint64_t until = r->headers_ns ? r->headers_ns : r->finished_ns;
		if (!r->sent_ns || !until || !r->finished_ns)
			continue; /* never answered: nothing the server could time */
		pr[*m] = (struct perf_req){ .sent = (double)r->sent_ns / 1e9, .until = (double)until / 1e9,
					    .finished = (double)r->finished_ns / 1e9, .r = r };
		if (pr[*m].until - pr[*m].sent > *widest)
			*widest = pr[*m].until - pr[*m].sent;
		(*m)++;
	}
	if (pr)
		qsort(pr, *m, sizeof(*pr), cmp_req);
	return pr;
}

/* The request e joins (see above), or NULL. */
static struct perf_req *perf_match(const struct perf_entry *e, struct perf_req *pr, size_t m, double widest)
{
	size_t lo = 0, hi = m;
	while (lo < hi) { /* the first sent at or after arrival - widest - slack */
		size_t mid = lo + (hi - lo) / 2;
		if (pr[mid].sent < e->arrival - widest - PERF_SLACK_S)
			lo = mid + 1;
		else
			hi = mid;
	}
	struct perf_req *best = NULL;
	for (size_t j = lo; j < m && pr[j].sent - PERF_SLACK_S <= e->arrival; j++) {
		struct perf_req *c = &pr[j];
		if (c->taken || e->arrival > c->until)
			continue;
		if ((e->have & 4u) && e->t[2] > c->finished + PERF_SLACK_S)
			continue; /* it ended before the engine's last token */
		if (!best || c->until < best->until)
			best = c;
	}
	return best;
}

/* The list's entries that carry an arrival, in arrival order (the others counted in st). */
static struct perf_entry *perf_entries(const cJSON *root, size_t *n, struct ls_perf_join *st)
{
	size_t cap = (size_t)cJSON_GetArraySize(root);
	struct perf_entry *es = malloc((cap ? cap : 1) * sizeof(*es));
	*n = 0;
	const cJSON *item;
	cJSON_ArrayForEach(item, root) {
		if (!es)
			break;
		st->entries++;
		if (perf_entry_read(item, &es[*n])) {
			(*n)++;
		} else {
			st->bad_values += es[*n].bad;
			st->unreadable++;
		}
	}
	if (es)
		qsort(es, *n, sizeof(*es), cmp_entry);
	return es;
}

int ls_engine_perf_metrics_join(const char *body, size_t len, struct ls_request *reqs, size_t n,
				struct ls_perf_join *st)
{
	memset(st, 0, sizeof(*st));
	size_t fixed_len;
	uint32_t non_finite; /* each becomes null: a malformed stamp where the engine always writes one */
	char *fixed = ls_backend_non_finite_to_null(body, len, &fixed_len, &non_finite);
	if (!fixed)
		return -ENOMEM;
	cJSON *root = cJSON_ParseWithLength(fixed, fixed_len);
	free(fixed);
	if (!cJSON_IsArray(root)) {
		cJSON_Delete(root);
		return -EBADMSG;
	}
	size_t n_entries, m;
	double widest;
	struct perf_entry *es = perf_entries(root, &n_entries, st);
	cJSON_Delete(root);
	struct perf_req *pr = es ? perf_reqs(reqs, n, &m, &widest) : NULL;
	if (!pr) {
		free(es);
		return -ENOMEM;
	}
	for (size_t k = 0; k < n_entries; k++) {
		struct perf_req *c = perf_match(&es[k], pr, m, widest);
		st->bad_values += es[k].bad;
		if (!c) {
			st->unjoined++;
			continue;
		}
		c->taken = 1;
		perf_commit(&es[k], c->r);
		st->joined++;
	}
	free(pr);
	free(es);
	return 0;
}
