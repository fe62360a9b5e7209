/* report_trace.c — --trace FILE.json: Chrome trace-event JSON (ui.perfetto.dev opens it).
 * Process 1 "requests": one track per request with its phases (slot wait, dispatch, connect,
 * TLS with its round trips nested, request in flight, server, first frame) and an instant per
 * frame. Process 2 "server
 * connections": one track per server socket with its reads and writes. Process 3 "GPU steps".
 * Timestamps are CLOCK_MONOTONIC microseconds (the trace format's unit). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "base/outfile.h"
#include "attribution/attribution.h"

enum { PID_REQUESTS = 1, PID_SERVER = 2, PID_GPU = 3 };

static cJSON *ev_base(cJSON *arr, const char *name, const char *ph, int pid, uint64_t tid, uint64_t ts_ns)
{
	cJSON *e = cJSON_CreateObject();

	if (!e)
		return NULL;
	cJSON_AddStringToObject(e, "name", name);
	cJSON_AddStringToObject(e, "ph", ph);
	cJSON_AddNumberToObject(e, "pid", pid);
	cJSON_AddNumberToObject(e, "tid", (double)tid);
	cJSON_AddNumberToObject(e, "ts", (double)ts_ns / 1e3);
	cJSON_AddItemToArray(arr, e);
	return e;
}

static void name_track(cJSON *arr, int pid, uint64_t tid, const char *what, const char *name)
{
	cJSON *e = ev_base(arr, what, "M", pid, tid, 0), *args;

	if (!e)
		return;
	args = cJSON_AddObjectToObject(e, "args");
	if (args)
		cJSON_AddStringToObject(args, "name", name);
}

/* A complete event, only when it has a duration; returns it for args. */
static cJSON *span(cJSON *arr, const char *name, int pid, uint64_t tid, uint64_t from, uint64_t to)
{
	cJSON *e;

	if (!from || !to || to <= from)
		return NULL;
	e = ev_base(arr, name, "X", pid, tid, from);
	if (e)
		cJSON_AddNumberToObject(e, "dur", (double)(to - from) / 1e3);
	return e;
}

/* Phases in causal order on one track: each starts where the previous ended (never overlap). */
struct seq {
	cJSON *arr;
	uint64_t tid, at;
};

static void phase(struct seq *s, const char *name, uint64_t from, uint64_t to)
{
	if (!from || !to)
		return;
	if (from < s->at)
		from = s->at;
	if (span(s->arr, name, PID_REQUESTS, s->tid, from, to))
		s->at = to;
}

/* Inside "TLS handshake", nested on its track: each round trip the client waited for, split as
 * the attribution splits it (attribution_tls.c). */
static void tls_round_spans(cJSON *arr, const struct ls_req_attr *a, uint64_t tid)
{
	for (uint32_t k = 0; k < a->n_tls_rounds; k++) {
		const struct ls_tls_round *t = &a->tls_rounds[k];
		if (!t->server_arrived_ns || !t->server_sent_ns) {
			span(arr, "TLS round trip (network+server)", PID_REQUESTS, tid, t->client_sent_ns,
			     t->client_arrived_ns);
			continue;
		}
		span(arr, "TLS flight to server", PID_REQUESTS, tid, t->client_sent_ns, t->server_arrived_ns);
		span(arr, "server TLS CPU", PID_REQUESTS, tid, t->server_arrived_ns, t->server_sent_ns);
		span(arr, "TLS flight to client", PID_REQUESTS, tid, t->server_sent_ns, t->client_arrived_ns);
	}
}

static void request_track(cJSON *arr, const struct ls_request *r, const struct ls_req_attr *a, size_t i)
{
	char name[64];
	struct seq s = { arr, i + 1, 0 };
	uint64_t end = r->finished_ns ? r->finished_ns : r->n_frames ? r->frames[r->n_frames - 1].arrived_ns : 0;
	uint64_t begin = r->scheduled_ns ? r->scheduled_ns : r->started_ns;
	cJSON *outer;

	snprintf(name, sizeof(name), "request %llu%s", (unsigned long long)r->id, r->warmup ? " (warmup)" : "");
	name_track(arr, PID_REQUESTS, i + 1, "thread_name", name);
	outer = span(arr, "request", PID_REQUESTS, i + 1, begin, end);
	if (outer) {
		cJSON *args = cJSON_AddObjectToObject(outer, "args");
		if (args) {
			cJSON_AddNumberToObject(args, "ttft_ms", a->ttft_ns / 1e6);
			cJSON_AddNumberToObject(args, "e2el_ms", a->e2el_ns / 1e6);
			for (int p = 0; p < LS_PART__COUNT; p++) {
				char key[48];
				if (!a->ttft.ns[p])
					continue;
				snprintf(key, sizeof(key), "ttft_%s_ms", ls_part_name((enum ls_part)p));
				cJSON_AddNumberToObject(args, key, a->ttft.ns[p] / 1e6);
			}
		}
	}
	phase(&s, "slot wait", r->scheduled_ns, r->admitted_ns);
	phase(&s, "dispatch", r->admitted_ns, r->started_ns);
	if (!(a->flags & LS_ATTR_REUSED)) {
		phase(&s, "curl setup", r->started_ns, a->connect_call_ns);
		phase(&s, "TCP connect", a->connect_call_ns, a->established_ns);
		phase(&s, "curl notices connect", a->established_ns, a->tls_start_ns);
		phase(&s, "TLS handshake", a->tls_start_ns, a->tls_end_ns);
		tls_round_spans(arr, a, i + 1);
	}
	phase(&s, "client before send", s.at ? s.at : r->started_ns, a->request_send_ns);
	if (a->server_read_ns) {
		phase(&s, "request in flight", a->request_send_ns, a->server_read_ns);
		if (r->n_frames)
			phase(&s, "server", a->server_read_ns, a->frames[0].server_write_ns);
		if (r->n_frames)
			phase(&s, "frame in flight", a->frames[0].server_write_ns, a->frames[0].kernel_ns);
	} else if (r->n_frames) {
		phase(&s, "network+server", a->request_send_ns, a->frames[0].kernel_ns);
	}
	if (r->n_frames) {
		phase(&s, "in client kernel", a->frames[0].kernel_ns, a->frames[0].read_ns);
		phase(&s, "client parse", a->frames[0].read_ns, r->frames[0].arrived_ns);
		phase(&s, "streaming", r->frames[0].arrived_ns, end);
	}
	for (uint32_t f = 0; f < r->n_frames && f < a->n_frames; f++) {
		const struct ls_frame_attr *fa = &a->frames[f];
		cJSON *e = ev_base(arr, "frame", "i", PID_REQUESTS, i + 1, r->frames[f].arrived_ns), *args;

		if (!e)
			continue;
		cJSON_AddStringToObject(e, "s", "t");
		args = cJSON_AddObjectToObject(e, "args");
		if (!args)
			continue;
		cJSON_AddNumberToObject(args, "index", f);
		cJSON_AddNumberToObject(args, "bytes", r->frames[f].bytes);
		if (fa->kernel_ns && fa->kernel_ns <= r->frames[f].arrived_ns)
			cJSON_AddNumberToObject(args, "kernel_to_harness_us",
						(r->frames[f].arrived_ns - fa->kernel_ns) / 1e3);
		if (fa->server_write_ns && fa->kernel_ns >= fa->server_write_ns)
			cJSON_AddNumberToObject(args, "server_to_kernel_us",
						(fa->kernel_ns - fa->server_write_ns) / 1e3);
	}
}

/* The server connections of st as tracks tid + 1, ...: returns the last tid given. */
static uint64_t server_tracks(cJSON *arr, const struct ls_evstore *st, uint64_t tid)
{
	size_t n = ls_evstore_sockets(st);

	for (size_t i = 0; i < n; i++) {
		const struct ls_sock_events *s = ls_evstore_at(st, i);
		char name[96];

		if (!s->n || s->ev[0].role != LS_ROLE_SERVER)
			continue;
		tid++;
		snprintf(name, sizeof(name), "server conn %u<-%u (cookie %llu)", s->ev[0].lport, s->ev[0].rport,
			 (unsigned long long)s->cookie);
		name_track(arr, PID_SERVER, tid, "thread_name", name);
		span(arr, "connection", PID_SERVER, tid, s->ev[0].ts_ns, s->ev[s->n - 1].ts_ns);
		for (size_t j = 0; j < s->n; j++) {
			const struct ls_event *e = &s->ev[j];
			const char *what = e->kind == LS_EV_READ ? "read" : e->kind == LS_EV_SEND_START ? "write"
					 : e->kind == LS_EV_ESTABLISHED ? "established" : NULL;
			cJSON *ev, *args;

			if (!what)
				continue;
			ev = ev_base(arr, what, "i", PID_SERVER, tid, e->ts_ns);
			if (!ev)
				continue;
			cJSON_AddStringToObject(ev, "s", "t");
			args = cJSON_AddObjectToObject(ev, "args");
			if (args)
				cJSON_AddNumberToObject(args, "bytes", e->len);
		}
	}
	return tid;
}

int ls_trace_write(const char *path, const struct ls_run *run, const struct ls_attribution *a,
		   const struct ls_evstore *events, const struct ls_gpu_step *steps, size_t n_steps)
{
	return ls_trace_write_stores(path, run, a, &events, 1, steps, n_steps);
}

int ls_trace_write_stores(const char *path, const struct ls_run *run, const struct ls_attribution *a,
			  const struct ls_evstore *const *stores, size_t n_stores, const struct ls_gpu_step *steps,
			  size_t n_steps)
{
	cJSON *root = cJSON_CreateObject(), *arr;
	char *text = NULL;
	int rc = -ENOMEM;

	if (!root || !(arr = cJSON_AddArrayToObject(root, "traceEvents")))
		goto out;
	cJSON_AddStringToObject(root, "displayTimeUnit", "ms");
	name_track(arr, PID_REQUESTS, 0, "process_name", "requests");
	for (size_t i = 0; i < run->n_requests && a && i < a->n; i++)
		request_track(arr, &run->requests[i], &a->req[i], i);
	int named = 0;
	for (size_t k = 0; k < n_stores; k++)
		if (stores[k] && !named++)
			name_track(arr, PID_SERVER, 0, "process_name", "server connections");
	uint64_t tid = 0; /* one numbering over every store */
	for (size_t k = 0; k < n_stores; k++)
		tid = server_tracks(arr, stores[k], tid);
	if (n_steps) {
		name_track(arr, PID_GPU, 0, "process_name", "GPU steps");
		for (size_t i = 0; i < n_steps; i++) {
			cJSON *e = span(arr, "step", PID_GPU, steps[i].device + 1, steps[i].start_ns, steps[i].end_ns);
			cJSON *args = e ? cJSON_AddObjectToObject(e, "args") : NULL;
			if (args) {
				cJSON_AddNumberToObject(args, "busy_us", steps[i].busy_ns / 1e3);
				cJSON_AddNumberToObject(args, "launches", steps[i].n_launches);
			}
		}
	}
	text = cJSON_PrintUnformatted(root);
	if (!text)
		goto out;
	struct ls_outfile f;
	if ((rc = ls_outfile_open(&f, "--trace", path)))
		goto out;
	fputs(text, f.f); /* an error sticks to the stream: commit reports it */
	rc = ls_outfile_commit(&f);
out:
	free(text);
	cJSON_Delete(root);
	return rc;
}
