/* bench_perf.c — see bench_perf.h. */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/bench_perf.h"
#include "driver/backend.h"

#define PERF_TIMEOUT_S 5.0            /* one try: a hung server costs the run's end 5 s */
#define PERF_BYTES_PER_REQUEST 4096u  /* an entry is ~600 bytes (its kv_cache_metrics included) */
#define PERF_MIN_CAP (1u << 20)
#define PERF_MAX_CAP (64u << 20)

static size_t body_cap(size_t n_requests)
{
	size_t cap = n_requests < PERF_MAX_CAP / PERF_BYTES_PER_REQUEST ? n_requests * PERF_BYTES_PER_REQUEST : PERF_MAX_CAP;
	return cap < PERF_MIN_CAP ? PERF_MIN_CAP : cap;
}

/* What went wrong with the GET, in words; NULL when it gave a 200. */
static const char *why_not(const struct ls_http_resp *resp, int call_rc, char *buf, size_t cap)
{
	if (resp->too_big)
		snprintf(buf, cap, "the answer passed %zu bytes (%zu per request of the run), not read", resp->max_body,
			 (size_t)PERF_BYTES_PER_REQUEST);
	else if (call_rc && resp->curl_code == CURLE_OPERATION_TIMEDOUT)
		snprintf(buf, cap, "no whole answer in %.0f s", PERF_TIMEOUT_S);
	else if (call_rc)
		snprintf(buf, cap, "%s", resp->error);
	else if (resp->status != 200)
		snprintf(buf, cap, "HTTP %ld (trtllm-serve serves it; other servers do not)", resp->status);
	else
		return NULL;
	return buf;
}

/* Measured requests that ended ok, and those of them the list had no entry for. */
static void count_missing(const struct ls_run *run, size_t *ok, size_t *missing)
{
	*ok = *missing = 0;
	for (size_t i = 0; i < run->n_requests; i++) {
		const struct ls_request *r = &run->requests[i];
		if (r->warmup || r->fail != LS_OK)
			continue;
		(*ok)++;
		*missing += r->engine_source != LS_ENGINE_TRTLLM;
	}
}

/* The one note on a list that was read: nothing in it, requests without an entry. */
static void note_list(const char *url, const struct ls_run *run, const struct ls_perf_join *st)
{
	size_t ok, missing;
	count_missing(run, &ok, &missing);
	if (!st->entries)
		fprintf(stderr, "latscope bench: --perf-metrics: GET %s: an empty list (start trtllm-serve with "
				"return_perf_metrics: true and perf_metrics_max_requests: %zu or more)\n", url, ok);
	else if (missing)
		fprintf(stderr, "latscope bench: --perf-metrics: GET %s: %zu of %zu requests have no entry (%zu entries, "
				"%zu of no request of this run, %zu unreadable; the server keeps its last "
				"perf_metrics_max_requests: set it to %zu or more)\n", url, missing, ok, st->entries,
			st->unjoined, st->unreadable, ok);
}

int ls_bench_perf_metrics(const char *base, const struct ls_http_opts *http, struct ls_run *run,
			  struct ls_record_writer *record)
{
	char url[1024], why[320];
	snprintf(url, sizeof(url), "%s/perf_metrics", base);
	struct ls_http_opts o = *http;
	o.timeout_s = PERF_TIMEOUT_S;
	o.max_body = body_cap(run->n_requests);
	struct ls_http_resp resp;
	int call_rc = ls_http_call(url, NULL, &o, &resp);
	struct ls_perf_join st;
	int err = why_not(&resp, call_rc, why, sizeof(why)) ? -EIO
		: ls_engine_perf_metrics_join(resp.body ? resp.body : "", resp.len, run->requests, run->n_requests, &st);
	if (err == -EBADMSG)
		snprintf(why, sizeof(why), "%zu bytes that are no JSON list (Content-Type %s)", resp.len,
			 resp.content_type[0] ? resp.content_type : "none");
	else if (err == -ENOMEM)
		snprintf(why, sizeof(why), "out of memory reading its %zu bytes", resp.len);
	ls_http_resp_free(&resp);
	if (err) {
		fprintf(stderr, "latscope bench: --perf-metrics: GET %s: %s; the results stand without the "
				"engine's account\n", url, why);
		return -1;
	}
	note_list(url, run, &st);
	for (size_t i = 0; record && i < run->n_requests; i++)
		if (run->requests[i].engine_source == LS_ENGINE_TRTLLM)
			ls_record_write_late(record, &run->requests[i]);
	return (int)st.joined;
}
