/* metrics_poll.c — see metrics_poll.h. One thread, one libcurl multi handle with one easy
 * handle on it (its connection kept alive from poll to poll); curl_multi_poll is the thread's
 * only wait, and curl_multi_wakeup ends it at once when the run is over. */
#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base/clock.h"
#include "base/strbuf.h"
#include "server/metrics_poll.h"

/* ---- names ---- */

static const struct gauge_name {
	enum ls_gauge_engine engine;
	enum ls_gauge gauge;
	const char *name;
} names[] = {
	/* vLLM V1 (vllm/v1/metrics/loggers.py); gpu_cache_usage_perc is V0's, read when the other is absent */
	{ LS_GENGINE_VLLM, LS_GAUGE_RUNNING, "vllm:num_requests_running" },
	{ LS_GENGINE_VLLM, LS_GAUGE_WAITING, "vllm:num_requests_waiting" },
	{ LS_GENGINE_VLLM, LS_GAUGE_KV_USE, "vllm:kv_cache_usage_perc" },
	{ LS_GENGINE_VLLM, LS_GAUGE_KV_USE, "vllm:gpu_cache_usage_perc" },
	/* SGLang (python/sglang/srt/metrics/collector.py) */
	{ LS_GENGINE_SGLANG, LS_GAUGE_RUNNING, "sglang:num_running_reqs" },
	{ LS_GENGINE_SGLANG, LS_GAUGE_WAITING, "sglang:num_queue_reqs" },
	{ LS_GENGINE_SGLANG, LS_GAUGE_KV_USE, "sglang:token_usage" },
	/* llama.cpp (tools/server/server-task.cpp: requests_processing = slots processing) */
	{ LS_GENGINE_LLAMACPP, LS_GAUGE_RUNNING, "llamacpp:requests_processing" },
	{ LS_GENGINE_LLAMACPP, LS_GAUGE_WAITING, "llamacpp:requests_deferred" },
	{ LS_GENGINE_LLAMACPP, LS_GAUGE_KV_USE, "llamacpp:kv_cache_usage_ratio" },
	/* TGI's router (metrics::gauge! in its batching task and queue) */
	{ LS_GENGINE_TGI, LS_GAUGE_RUNNING, "tgi_batch_current_size" },
	{ LS_GENGINE_TGI, LS_GAUGE_WAITING, "tgi_queue_size" },
};
#define N_NAMES (sizeof(names) / sizeof(names[0]))

const char *ls_gauge_name(enum ls_gauge g)
{
	static const char *const n[LS_GAUGE__COUNT] = { "running", "waiting", "kv_use" };
	return g < LS_GAUGE__COUNT ? n[g] : "?";
}

static const char *const engine_names[LS_GENGINE__COUNT] = { "", "vllm", "sglang", "llama.cpp", "tgi" };

const char *ls_gauge_engine_name(enum ls_gauge_engine e)
{
	return e < LS_GENGINE__COUNT ? engine_names[e] : "";
}

enum ls_gauge_engine ls_gauge_engine_parse(const char *name)
{
	for (int e = 1; name && e < LS_GENGINE__COUNT; e++)
		if (!strcmp(name, engine_names[e]))
			return (enum ls_gauge_engine)e;
	return LS_GENGINE_NONE;
}

const char *ls_gauge_miss_name(enum ls_gauge_miss m)
{
	static const char *const n[LS_GMISS__COUNT] = { "timeout", "too_big", "http_status", "connect", "no_gauges" };
	return m < LS_GMISS__COUNT ? n[m] : "?";
}

/* ---- the Prometheus text format: NAME[{labels}] VALUE [TIMESTAMP] ---- */

static int name_char(char c, int first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || (!first && c >= '0' && c <= '9');
}

/* Past a {label="value",...} block (quoted values may hold '}' and escapes). NULL: malformed. */
static const char *skip_labels(const char *p, const char *end)
{
	int quoted = 0;
	for (p++; p < end; p++) {
		if (quoted && *p == '\\')
			p++;
		else if (*p == '"')
			quoted = !quoted;
		else if (!quoted && *p == '}')
			return p + 1;
	}
	return NULL;
}

/* One sample line: which of names[] it is (-1 none) and its value. */
static int parse_line(const char *p, const char *end, double *value)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (p == end || *p == '#' || !name_char(*p, 1))
		return -1;
	const char *name = p;
	while (p < end && name_char(*p, 0))
		p++;
	size_t name_len = (size_t)(p - name);
	int which = -1;
	for (size_t i = 0; i < N_NAMES && which < 0; i++)
		if (strlen(names[i].name) == name_len && !memcmp(names[i].name, name, name_len))
			which = (int)i;
	if (which < 0)
		return -1;
	if (p < end && *p == '{' && !(p = skip_labels(p, end)))
		return -1;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	char num[64];
	size_t n = 0;
	while (p < end && *p != ' ' && *p != '\t' && *p != '\r' && n + 1 < sizeof(num))
		num[n++] = *p++;
	num[n] = 0;
	char *num_end;
	double v = strtod(num, &num_end);
	if (!n || *num_end || !isfinite(v) || v < 0)
		return -1; /* NaN, Inf, a negative count or no number: not a gauge we can use */
	*value = v;
	return which;
}

int ls_gauge_parse(const char *text, size_t len, double v[LS_GAUGE__COUNT], enum ls_gauge_engine *engine)
{
	double sum[N_NAMES] = { 0 };
	unsigned seen[N_NAMES] = { 0 };
	for (const char *p = text, *end = text + len; p && p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = nl ? nl : end;
		double x;
		int which = parse_line(p, line_end, &x);
		if (which >= 0) {
			sum[which] += x;
			seen[which]++;
		}
		p = nl ? nl + 1 : NULL;
	}
	/* The engine whose names gave the most gauges (a server speaks one; the first wins a tie). */
	int best = LS_GENGINE_NONE, best_found = 0;
	double best_v[LS_GAUGE__COUNT];
	for (int e = 1; e < LS_GENGINE__COUNT; e++) {
		double ev[LS_GAUGE__COUNT];
		int found = 0;
		for (int g = 0; g < LS_GAUGE__COUNT; g++)
			ev[g] = NAN;
		for (size_t i = 0; i < N_NAMES; i++) {
			if ((int)names[i].engine != e || !seen[i] || !isnan(ev[names[i].gauge]))
				continue; /* the first name of a gauge in the table wins (vLLM's V1 name) */
			ev[names[i].gauge] = names[i].gauge == LS_GAUGE_KV_USE ? sum[i] / seen[i] : sum[i];
			found++;
		}
		if (found > best_found) {
			best = e;
			best_found = found;
			memcpy(best_v, ev, sizeof(ev));
		}
	}
	for (int g = 0; g < LS_GAUGE__COUNT; g++)
		v[g] = best_found ? best_v[g] : NAN;
	*engine = (enum ls_gauge_engine)best;
	return best_found ? 0 : -1;
}

/* ---- the series ---- */

void ls_gauge_series_free(struct ls_gauge_series *s)
{
	free(s->samples);
	s->samples = NULL;
	s->n = s->cap = 0;
}

int ls_gauge_series_add(struct ls_gauge_series *s, const struct ls_gauge_sample *smp)
{
	if (s->n >= LS_GAUGE_MAX_SAMPLES) {
		s->n_dropped++;
		return 0;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		struct ls_gauge_sample *grown = realloc(s->samples, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		s->samples = grown;
		s->cap = cap;
	}
	s->samples[s->n++] = *smp;
	return 0;
}

/* ---- the thread ---- */

struct ls_metrics_poll {
	pthread_t  thread;
	CURLM     *multi;
	CURL      *easy;
	struct curl_slist *hdrs;
	atomic_int stop;
	uint64_t   period_ns;
	struct ls_strbuf body;   /* one answer, reused: at most LS_GAUGE_BODY_CAP */
	int        too_big;
	char       error[CURL_ERROR_SIZE];
	struct ls_gauge_series s;
};

static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
	struct ls_metrics_poll *p = ctx;
	size_t len = size * n;
	if (p->body.len + len > LS_GAUGE_BODY_CAP) {
		p->too_big = 1;
		return 0; /* libcurl ends the transfer with a write error */
	}
	return ls_strbuf_append(&p->body, data, len) ? 0 : len;
}

static void miss(struct ls_metrics_poll *p, enum ls_gauge_miss why, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void miss(struct ls_metrics_poll *p, enum ls_gauge_miss why, const char *fmt, ...)
{
	p->s.n_missed[why]++;
	if (p->s.first_miss[0])
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->s.first_miss, sizeof(p->s.first_miss), fmt, ap);
	va_end(ap);
}

/* What one finished GET gave: a sample, or a miss with its reason. */
static void take_answer(struct ls_metrics_poll *p, CURLcode result, struct ls_gauge_sample *smp)
{
	long status = 0;
	enum ls_gauge_engine e;
	curl_easy_getinfo(p->easy, CURLINFO_RESPONSE_CODE, &status);
	if (result == CURLE_OPERATION_TIMEDOUT)
		miss(p, LS_GMISS_TIMEOUT, "no whole answer within %u ms", p->s.timeout_ms);
	else if (p->too_big || result == CURLE_FILESIZE_EXCEEDED)
		miss(p, LS_GMISS_TOO_BIG, "an answer over %u MiB: dropped", LS_GAUGE_BODY_CAP >> 20);
	else if (result != CURLE_OK)
		miss(p, LS_GMISS_CONNECT, "GET failed: %s", p->error[0] ? p->error : curl_easy_strerror(result));
	else if (status != 200)
		miss(p, LS_GMISS_HTTP, "HTTP status %ld%s", status, status == 404 || status == 501
		     ? ": the server exports no metrics (llama-server needs --metrics, SGLang --enable-metrics)" : "");
	else if (ls_gauge_parse(p->body.data ? p->body.data : "", p->body.len, smp->v, &e))
		miss(p, LS_GMISS_NO_GAUGES, "no gauge of vLLM, SGLang, llama.cpp or TGI in a %zu-byte answer",
		     p->body.len);
	else if (ls_gauge_series_add(&p->s, smp))
		miss(p, LS_GMISS_NO_GAUGES, "out of memory for sample %zu", p->s.n);
	else if (!p->s.engine)
		p->s.engine = e;
}

/* One GET, bounded by the handle's timeout and ended at once by a stop. */
static void poll_once(struct ls_metrics_poll *p)
{
	struct ls_gauge_sample smp = { .start_ns = ls_now_ns() };
	p->body.len = 0;
	p->too_big = 0;
	p->error[0] = 0;
	if (curl_multi_add_handle(p->multi, p->easy) != CURLM_OK)
		return;
	int running = 1, done = 0;
	CURLcode result = CURLE_OK;
	while (!atomic_load(&p->stop) && running) {
		if (curl_multi_perform(p->multi, &running) != CURLM_OK)
			break;
		if (running)
			curl_multi_poll(p->multi, NULL, 0, 100, NULL);
	}
	CURLMsg *msg;
	int left;
	while ((msg = curl_multi_info_read(p->multi, &left)))
		if (msg->msg == CURLMSG_DONE) {
			result = msg->data.result;
			done = 1;
		}
	smp.arrived_ns = ls_now_ns();
	if (done) {
		p->s.n_polls++;
		take_answer(p, result, &smp);
	}
	curl_multi_remove_handle(p->multi, p->easy);
}

static void *poll_main(void *arg)
{
	struct ls_metrics_poll *p = arg;
	uint64_t next = ls_now_ns();
	while (!atomic_load(&p->stop)) {
		poll_once(p);
		next += p->period_ns;
		uint64_t now = ls_now_ns();
		if (next < now)
			next = now; /* a slow answer: the next GET goes now, polls never pile up */
		while (!atomic_load(&p->stop) && (now = ls_now_ns()) < next) {
			int ms = (int)((next - now + 999999) / 1000000);
			curl_multi_poll(p->multi, NULL, 0, ms, NULL); /* woken by ls_metrics_poll_stop */
		}
	}
	struct timespec cpu;
	if (!clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu))
		p->s.cpu_ns = (uint64_t)cpu.tv_sec * 1000000000ull + (uint64_t)cpu.tv_nsec;
	return NULL;
}

static void poll_free(struct ls_metrics_poll *p)
{
	if (p->multi)
		curl_multi_cleanup(p->multi);
	if (p->easy)
		curl_easy_cleanup(p->easy);
	curl_slist_free_all(p->hdrs);
	ls_strbuf_free(&p->body);
	ls_gauge_series_free(&p->s);
	free(p);
	curl_global_cleanup();
}

/* The handles, set up on the caller's thread (curl_global_init is not thread-safe). */
static int poll_handles(struct ls_metrics_poll *p, const char *base, const struct ls_http_opts *o)
{
	char url[1100];
	snprintf(url, sizeof(url), "%s/metrics", base);
	struct ls_http_opts ho = o ? *o : (struct ls_http_opts){ 0 };
	ho.timeout_s = p->s.timeout_ms / 1000.0;
	if (!(p->multi = curl_multi_init()) || !(p->easy = curl_easy_init())) {
		fprintf(stderr, "latscope bench: --server-metrics-ms: libcurl could not start\n");
		return -1;
	}
	if (ls_http_easy_prepare(p->easy, url, 0, &ho, &p->hdrs, p->error, sizeof(p->error))) {
		fprintf(stderr, "latscope bench: --server-metrics-ms: %s\n", p->error);
		return -1;
	}
	curl_easy_setopt(p->easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(p->easy, CURLOPT_WRITEDATA, p);
	curl_easy_setopt(p->easy, CURLOPT_ERRORBUFFER, p->error);
	curl_easy_setopt(p->easy, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)LS_GAUGE_BODY_CAP);
	return 0;
}

struct ls_metrics_poll *ls_metrics_poll_start(const char *base, const struct ls_http_opts *o, uint32_t period_ms)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, "latscope bench: --server-metrics-ms: curl_global_init failed; not polling\n");
		return NULL;
	}
	struct ls_metrics_poll *p = calloc(1, sizeof(*p));
	if (!p) {
		fprintf(stderr, "latscope bench: --server-metrics-ms: out of memory; not polling\n");
		curl_global_cleanup();
		return NULL;
	}
	p->period_ns = (uint64_t)period_ms * 1000000ull;
	p->s.on = 1;
	p->s.period_ms = period_ms;
	/* One GET's bound: twice the period, 1 s at least (a loaded server answers late), 10 s at most. */
	uint32_t t = period_ms > 5000 ? 10000 : 2 * period_ms;
	p->s.timeout_ms = t < 1000 ? 1000 : t;
	if (poll_handles(p, base, o)) {
		poll_free(p);
		return NULL;
	}
	/* No signal for this thread: SIGINT/SIGTERM go to the driver's signalfd, never here. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int err = pthread_create(&p->thread, NULL, poll_main, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		fprintf(stderr, "latscope bench: --server-metrics-ms: cannot start its thread: %s; not polling\n",
			strerror(err));
		poll_free(p);
		return NULL;
	}
	return p;
}

void ls_metrics_poll_stop(struct ls_metrics_poll *p, struct ls_gauge_series *out)
{
	if (!p)
		return;
	atomic_store(&p->stop, 1);
	curl_multi_wakeup(p->multi);
	pthread_join(p->thread, NULL);
	*out = p->s;
	p->s.samples = NULL; /* moved */
	poll_free(p);
}
