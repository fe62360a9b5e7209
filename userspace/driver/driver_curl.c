/* driver_curl.c — each transfer's side of the driver: the easy handle and its callbacks
 * (socket options, pre-request, headers, body -> SSE -> frames), stamps from libcurl's
 * timers, and what a finished transfer's outcome means (enum ls_fail). The multi handle's
 * callbacks are in driver_multi.c, the loop in driver.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "base/clock.h"
#include "driver/backend.h"
#include "driver/driver_int.h"

#define REQUEST_ID_MAX 72 /* "X-Request-Id: " + run tag + '-' + id */
#define ROUTE_KEY_MAX  96 /* "X-SMG-Routing-Key: " + key */

/* CURLOPT_SOCKOPTFUNCTION: a new connection's socket, before connect(). */
static int on_sockopt(void *clientp, curl_socket_t fd, curlsocktype purpose)
{
	struct xfer *x = clientp;
	if (purpose == CURLSOCKTYPE_IPCXN)
		drv_conn_opened();
	if (purpose == CURLSOCKTYPE_IPCXN && !x->attempts) {
		drv_note_socket(x->drv, x->rec, fd);
		x->rec->new_connection = 1;
	}
	return CURL_SOCKOPT_OK;
}

/* CURLOPT_PREREQFUNCTION: the connection is ready and the request about to go. A second call
 * means libcurl is retrying a request whose pooled connection died before any response byte
 * (it does so silently, on a new or another pooled connection). Python clients fail such a
 * request; so do we, so the server's reset is counted rather than hidden behind a resend. */
static int on_prereq(void *clientp, char *primary_ip, char *local_ip, int primary_port, int local_port)
{
	struct xfer *x = clientp;
	(void)primary_ip;
	(void)local_ip;
	(void)primary_port;
	(void)local_port;
	if (x->attempts++ == 0)
		return CURL_PREREQFUNC_OK;
	x->rec->fail = LS_FAIL_RESET_BEFORE_HEADERS;
	snprintf(x->rec->error, sizeof(x->rec->error),
		 "connection closed before a status line (reused connection %u)", x->rec->conn_seq);
	return CURL_PREREQFUNC_ABORT;
}

/* ---- per transfer callbacks ---- */

static void fail(struct ls_request *rec, enum ls_fail why, const char *msg)
{
	if (rec->fail)
		return;
	rec->fail = why;
	if (msg)
		snprintf(rec->error, sizeof(rec->error), "%s", msg);
}

/* "text/event-stream", any case, alone or before parameters ("; charset=utf-8"). */
static int is_event_stream(const char *content_type)
{
	size_t n = strlen("text/event-stream");
	return !strncasecmp(content_type, "text/event-stream", n) &&
	       (!content_type[n] || content_type[n] == ';' || content_type[n] == ' ');
}

/* CURLOPT_HEADERFUNCTION: the status line, Content-Type, and the blank line that ends the
 * headers (where an error status or a 2xx that is not an event stream fails the request). */
static size_t on_header(char *buf, size_t size, size_t n, void *userdata)
{
	struct xfer *x = userdata;
	struct ls_request *rec = x->rec;
	size_t len = size * n;
	if (!x->header_bytes) /* the read that brought the first byte: libcurl's STARTTRANSFER */
		x->first_header_ns = ls_now_ns();
	x->header_bytes += len;
	if (x->header_bytes > LS_DRIVER_HEADER_MAX) {
		fail(rec, LS_FAIL_OVERSIZE, "response headers over 64 KiB");
		return 0;
	}
	if (len > 9 && !memcmp(buf, "HTTP/", 5)) {
		const char *sp = memchr(buf, ' ', len);
		x->status = sp ? atoi(sp + 1) : 0;
		x->content_type[0] = 0;
		return len;
	}
	if (len > 13 && !strncasecmp(buf, "Content-Type:", 13)) {
		size_t at = 13, end = len;
		while (at < end && (buf[at] == ' ' || buf[at] == '\t'))
			at++;
		while (end > at && (buf[end - 1] == '\r' || buf[end - 1] == '\n' || buf[end - 1] == ' '))
			end--;
		snprintf(x->content_type, sizeof(x->content_type), "%.*s", (int)(end - at), buf + at);
		return len;
	}
	if (buf[0] == 'x' || buf[0] == 'X') {
		ls_backend_engine_header(rec, buf, len); /* TGI's timing headers */
		return len;
	}
	if ((len == 2 && buf[0] == '\r') || (len == 1 && buf[0] == '\n')) {
		if (x->status >= 200 || x->status == 0) {
			rec->headers_ns = ls_now_ns();
			rec->http_status = x->status;
			if (x->drv->opts->http2)
				x->drv->h2c_answered = 1;
			if (x->status >= 400 && !rec->fail) {
				rec->fail = LS_FAIL_HTTP_STATUS;
				snprintf(rec->error, sizeof(rec->error), "HTTP %d: ", x->status);
			} else if (x->status < 300 && !rec->fail && x->content_type[0] && !is_event_stream(x->content_type)) {
				rec->fail = LS_FAIL_PROTOCOL;
				snprintf(rec->error, sizeof(rec->error), "not an event stream (Content-Type: %.60s): ",
					 x->content_type);
			}
		}
	}
	return len;
}

/* The SSE splitter's callback: one complete frame, stamped with the write callback's time. */
static int on_event(void *ctx, const struct ls_sse_event *ev)
{
	struct xfer *x = ctx;
	struct ls_request *rec = x->rec;
	if (rec->n_frames >= x->max_frames) {
		snprintf(rec->error, sizeof(rec->error), "more than %u frames for max_tokens %u",
			 x->max_frames, rec->output_len);
		rec->fail = LS_FAIL_OVERSIZE;
		return 1;
	}
	struct ls_frame *fr = ls_request_add_frame(rec);
	if (!fr) {
		fail(rec, LS_FAIL_OTHER, "out of memory for frames");
		return 1;
	}
	fr->arrived_ns = x->now_ns;
	fr->stream_off = ev->end_off;
	fr->bytes = ev->bytes;
	int rc = ls_backend_decode(x->drv->opts->backend, ev->data, ev->data_len, &x->dec, fr, rec);
	if (rc == -EBADMSG) {
		rec->fail = LS_FAIL_MALFORMED_FRAME;
		return 1;
	}
	if (rc) {
		rec->fail = LS_FAIL_SERVER_ERROR_FRAME;
		return 1;
	}
	if (x->drv->opts->on_payload) /* multi-turn: the owner keeps the reply's text */
		x->drv->opts->on_payload(x->drv->opts->turns_ctx, x->job, ev->data, ev->data_len);
	/* The end of a stream: [DONE], or SGLang's final frame (its finish_reason). An OpenAI
	 * finish_reason still has the usage frame and [DONE] to come. */
	if ((fr->flags & LS_FRAME_DONE) ||
	    ((fr->flags & LS_FRAME_FINISH) && ls_backend_final_frame_ends(x->drv->opts->backend))) {
		if (!rec->done_frame_ns)
			rec->done_frame_ns = x->now_ns;
		x->saw_done = 1;
	}
	if (fr->flags & LS_FRAME_FINISH)
		x->saw_finish = 1;
	return 0;
}

/* CURLOPT_WRITEFUNCTION: response body bytes. Returning less than given aborts the transfer. */
static size_t on_body(char *ptr, size_t size, size_t n, void *userdata)
{
	struct xfer *x = userdata;
	struct ls_request *rec = x->rec;
	size_t len = size * n;
	if (x->drv->preconnect_url && !x->drv->pc_released) {
		/* Held (its connection busy) until every preconnect GET has one: else a GET answered
		 * at once hands its connection to the next and the pool holds one, not N. */
		x->pc_held = 1;
		x->drv->pc_held++;
		return CURL_WRITEFUNC_PAUSE;
	}
	rec->body_bytes += len;
	if (rec->fail == LS_FAIL_HTTP_STATUS || rec->fail == LS_FAIL_PROTOCOL) {
		/* Keep the first bytes of an error body (or of a page that is no stream) in the error text. */
		size_t have = strlen(rec->error);
		for (size_t i = 0; i < len && have + 1 < sizeof(rec->error); i++)
			rec->error[have++] = (ptr[i] >= 32 && ptr[i] < 127) ? ptr[i] : ' ';
		rec->error[have] = 0;
		return rec->body_bytes > LS_DRIVER_ERRBODY_MAX ? 0 : len;
	}
	if (rec->fail)
		return 0;
	if (rec->body_bytes > LS_DRIVER_BODY_MAX) {
		fail(rec, LS_FAIL_OVERSIZE, "response body over 256 MiB");
		return 0;
	}
	x->now_ns = ls_now_ns();
	int rc = ls_sse_feed(&x->sse, ptr, len, on_event, x);
	if (rc == -EMSGSIZE)
		fail(rec, LS_FAIL_OVERSIZE, "SSE frame over 1 MiB");
	else if (rc < 0)
		fail(rec, LS_FAIL_OTHER, "out of memory in the SSE splitter");
	return rc ? 0 : len;
}

/* ---- transfers ---- */

static void xfer_destroy(struct xfer *x)
{
	if (x->easy)
		curl_easy_cleanup(x->easy);
	curl_slist_free_all(x->headers);
	ls_sse_free(&x->sse);
	free(x);
}

/* The run's headers, then X-Request-Id as a placeholder of the longest id (rewritten in
 * place per request: id_header). 0, or -1 when out of memory or the easy handle is missing. */
static int xfer_headers(struct drv *d, struct xfer *x)
{
	char placeholder[REQUEST_ID_MAX + 1];
	memset(placeholder, 'x', REQUEST_ID_MAX);
	placeholder[REQUEST_ID_MAX] = 0;
	for (const struct curl_slist *h = d->base_headers; h && x->easy; h = h->next) {
		struct curl_slist *grown = curl_slist_append(x->headers, h->data);
		if (!grown)
			return -1;
		x->headers = grown;
	}
	struct curl_slist *grown = x->easy ? curl_slist_append(x->headers, placeholder) : NULL;
	if (!grown)
		return -1;
	x->headers = grown;
	for (x->id_header = grown; x->id_header->next;)
		x->id_header = x->id_header->next;
	x->route_header = NULL;
	if (d->opts->route_keys) {
		char route[ROUTE_KEY_MAX + 1];
		memset(route, 'x', ROUTE_KEY_MAX);
		route[ROUTE_KEY_MAX] = 0;
		if (!(grown = curl_slist_append(x->headers, route)))
			return -1;
		x->route_header = x->id_header->next;
	}
	return 0;
}

/* Every option of the transfer's easy handle: the first libcurl rejects, or CURLE_OK. */
static CURLcode xfer_setopts(struct xfer *x, const struct ls_driver_opts *o)
{
	CURL *e = x->easy;
	CURLcode rc = CURLE_OK;
#define SET(opt, val) do { if (rc == CURLE_OK) rc = curl_easy_setopt(e, opt, val); } while (0)
	SET(CURLOPT_URL, o->url);
	SET(CURLOPT_PRIVATE, x);
	SET(CURLOPT_ERRORBUFFER, x->errbuf);
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_HTTPHEADER, x->headers);
	SET(CURLOPT_WRITEFUNCTION, on_body);
	SET(CURLOPT_WRITEDATA, x);
	SET(CURLOPT_HEADERFUNCTION, on_header);
	SET(CURLOPT_HEADERDATA, x);
	SET(CURLOPT_SOCKOPTFUNCTION, on_sockopt);
	SET(CURLOPT_SOCKOPTDATA, x);
	SET(CURLOPT_CLOSESOCKETFUNCTION, drv_conn_close);
	SET(CURLOPT_PREREQFUNCTION, on_prereq);
	SET(CURLOPT_PREREQDATA, x);
	SET(CURLOPT_TCP_NODELAY, 1L);
	/* A 4 KiB receive buffer instead of libcurl's 16 KiB: a frame is a few hundred bytes and a
	 * stream's backlog a few frames, while 1,400 streams' buffers were 12 MiB of the peak RSS
	 * (docs/performance.md). SGLang's native frames carry the whole text so far: they keep 16. */
	if (o->backend != LS_BACKEND_SGLANG)
		SET(CURLOPT_BUFFERSIZE, 4096L);
	/* Python clients never resume TLS sessions: every new connection is a full handshake.
	 * The CA store is parsed once and cached in the multi handle (CA_CACHE_TIMEOUT), as one
	 * Python SSLContext is shared across a run. */
	SET(CURLOPT_SSL_SESSIONID_CACHE, 0L);
	SET(CURLOPT_CA_CACHE_TIMEOUT, 86400L);
	if (o->insecure) {
		SET(CURLOPT_SSL_VERIFYPEER, 0L);
		SET(CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (o->cacert)
		SET(CURLOPT_CAINFO, o->cacert);
	if (o->http2) {
		SET(CURLOPT_HTTP_VERSION, strncmp(o->url, "https:", 6) ? (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE
								      : (long)CURL_HTTP_VERSION_2TLS);
		if (!o->per_request_conn)
			SET(CURLOPT_PIPEWAIT, 1L);
	} else {
		SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	}
	if (o->per_request_conn) {
		SET(CURLOPT_FRESH_CONNECT, 1L);
		SET(CURLOPT_FORBID_REUSE, 1L);
	}
	if (o->request_timeout_ns) {
		uint64_t ms = (o->request_timeout_ns + 999999) / 1000000;
		SET(CURLOPT_TIMEOUT_MS, (long)ms);
	}
#undef SET
	return rc;
}

static struct xfer *xfer_new(struct drv *d)
{
	struct xfer *x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->drv = d;
	ls_sse_init(&x->sse);
	x->easy = curl_easy_init();
	if (xfer_headers(d, x))
		goto fail;
	if (d->n_xfers == d->cap_xfers) {
		size_t cap = d->cap_xfers ? d->cap_xfers * 2 : 64;
		struct xfer **all = realloc(d->xfers, cap * sizeof(*all));
		if (!all)
			goto fail;
		d->xfers = all;
		d->cap_xfers = cap;
	}
	CURLcode rc = xfer_setopts(x, d->opts);
	if (rc != CURLE_OK) {
		fprintf(stderr, "latscope: libcurl rejected an option: %s\n", curl_easy_strerror(rc));
		goto fail;
	}
	d->xfers[d->n_xfers++] = x;
	return x;
fail:
	xfer_destroy(x);
	return NULL;
}

/* Reserve the frames a well-behaved stream needs, so the hot path does not realloc. */
static void reserve_frames(struct ls_request *rec, uint32_t want)
{
	if (rec->cap_frames >= want)
		return;
	struct ls_frame *f = realloc(rec->frames, (size_t)want * sizeof(*f));
	if (f) {
		rec->frames = f;
		rec->cap_frames = want;
	}
}

/* Token frames + usage + [DONE], up to a page-sized bound: longer streams grow. */
static uint32_t frames_wanted(const struct ls_request *rec)
{
	return rec->output_len && rec->output_len < 4096 ? rec->output_len + 8 : 4096;
}

static void xfer_release(struct drv *d, struct xfer *x)
{
	x->job = NULL;
	x->rec = NULL;
	x->next_free = d->free_xfers;
	d->free_xfers = x;
}

/* libcurl's message, cut to fit the record. */
static void copy_error(struct ls_request *rec, const char *msg)
{
	size_t n = strnlen(msg, sizeof(rec->error) - 1);
	memcpy(rec->error, msg, n);
	rec->error[n] = 0;
}

/* --http2 against http:// sends the HTTP/2 preface at once (h2c prior knowledge). A server that
 * does not speak it closes or answers in HTTP/1.1, which libcurl reports as a send, receive or
 * framing error before any header: 1 for such an end, unless this server has answered h2c. */
static int h2c_refused(const struct xfer *x, CURLcode code)
{
	const struct drv *d = x->drv;
	if (!d->opts->http2 || d->h2c_answered || x->rec->headers_ns || strncasecmp(d->opts->url, "http:", 5))
		return 0;
	if (x->attempts > 1)
		return 1; /* libcurl retried it: the first attempt died before a header */
	return code == CURLE_SEND_ERROR || code == CURLE_RECV_ERROR || code == CURLE_HTTP2 ||
	       code == CURLE_HTTP2_STREAM || code == CURLE_GOT_NOTHING || code == CURLE_WEIRD_SERVER_REPLY;
}

/* A transfer libcurl ended cleanly. A clean end after the last token counts, [DONE] or not
 * (Python clients read to EOF and do not ask for it either). */
static void classify_clean_end(struct xfer *x)
{
	struct ls_request *rec = x->rec;
	if (x->saw_done || x->saw_finish)
		return;
	if (ls_backend_eof_ends(x->drv->opts->backend) && rec->n_frames && !ls_sse_pending(&x->sse)) {
		rec->done_frame_ns = rec->frames[rec->n_frames - 1].arrived_ns; /* no end marker: EOF is it */
		return;
	}
	if (!x->content_type[0] && !rec->n_frames && rec->body_bytes) {
		/* No Content-Type to go by, and not one data: frame in the whole body. */
		rec->fail = LS_FAIL_PROTOCOL;
		snprintf(rec->error, sizeof(rec->error), "not an event stream (no Content-Type, no data: "
			 "frame in %llu bytes)", (unsigned long long)rec->body_bytes);
		return;
	}
	rec->fail = ls_sse_pending(&x->sse) ? LS_FAIL_TRUNCATED : LS_FAIL_NO_DONE;
	snprintf(rec->error, sizeof(rec->error), "%s",
		 rec->fail == LS_FAIL_TRUNCATED ? "stream ended inside a frame"
						: "stream ended without [DONE] or a finish_reason");
}

/* Classifies a finished transfer (code: libcurl's result) when no callback already did. */
static void classify(struct xfer *x, CURLcode code)
{
	struct ls_request *rec = x->rec;
	int headers = rec->headers_ns != 0;
	if ((!rec->fail || rec->fail == LS_FAIL_RESET_BEFORE_HEADERS) && h2c_refused(x, code)) {
		rec->fail = LS_FAIL_PROTOCOL;
		snprintf(rec->error, sizeof(rec->error), LS_DRIVER_H2C_REFUSED " [%.40s]",
			 x->errbuf[0] ? x->errbuf : "closed before a status line");
		return;
	}
	if (rec->fail) {
		/* A callback decided (HTTP status, malformed, oversize, error frame, reused reset,
		 * cancel): its reason stands, whatever libcurl made of the abort. */
		if (!rec->error[0])
			copy_error(rec, x->errbuf[0] ? x->errbuf : curl_easy_strerror(code));
		return;
	}
	enum ls_fail why = LS_FAIL_OTHER;
	switch (code) {
	case CURLE_OK:
		classify_clean_end(x);
		return;
	case CURLE_OPERATION_TIMEDOUT: why = LS_FAIL_TIMEOUT; break;
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST: why = LS_FAIL_CONNECT; break;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_ENGINE_INITFAILED:
	case CURLE_USE_SSL_FAILED: why = LS_FAIL_TLS; break;
	case CURLE_GOT_NOTHING: why = LS_FAIL_RESET_BEFORE_HEADERS; break;
	case CURLE_OUT_OF_MEMORY:
		/* libcurl's answer to one header line past CURL_MAX_HTTP_HEADER (100 KiB), before
		 * our 64 KiB cap sees the line whole: a hostile server, not our memory. */
		if (!headers) {
			rec->fail = LS_FAIL_OVERSIZE;
			snprintf(rec->error, sizeof(rec->error), "response header line over libcurl's %d KiB limit (%.100s)",
				 CURL_MAX_HTTP_HEADER / 1024, x->errbuf[0] ? x->errbuf : curl_easy_strerror(code));
			return;
		}
		break;
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		if (strstr(x->errbuf, "chunk"))
			why = LS_FAIL_TRUNCATED; /* libcurl's chunked decoder refused the encoding */
		else if (!headers)
			why = LS_FAIL_RESET_BEFORE_HEADERS;
		else if (x->saw_done)
			return; /* everything arrived; the connection broke after the end */
		else if (code == CURLE_PARTIAL_FILE && ls_sse_pending(&x->sse))
			why = LS_FAIL_TRUNCATED; /* closed inside a chunk: a frame was cut */
		else
			why = LS_FAIL_RESET_MID_STREAM;
		break;
	default: break;
	}
	rec->fail = why;
	const char *msg = x->errbuf[0] ? x->errbuf : curl_easy_strerror(code);
	/* A peer that resets the handshake leaves libcurl's socket error alone ("Recv failure:
	 * Connection reset by peer"), which does not say it was TLS that failed. */
	if (why == LS_FAIL_TLS && !strcasestr(msg, "ssl") && !strcasestr(msg, "tls"))
		snprintf(rec->error, sizeof(rec->error), "TLS handshake failed: %.137s", msg);
	else
		copy_error(rec, msg);
}

/* A server that dies mid-run leaves every later request failing to connect, which reads as
 * a run of fast failures and exit 0. Say so once, when LS_DRIVER_GONE_AFTER of them in a row
 * follow an answer, and keep count for the report (ls_run.server_gone_ns). */
static void watch_server(struct drv *d, const struct ls_request *rec)
{
	struct ls_run *run = d->run;
	if (rec->headers_ns || rec->fail == LS_FAIL_RESET_MID_STREAM || rec->fail == LS_FAIL_RESET_BEFORE_HEADERS) {
		d->server_answered = 1; /* there was a server (a reset needs a connection) */
		if (rec->headers_ns)
			d->connect_fail_streak = 0;
		return;
	}
	if (rec->fail != LS_FAIL_CONNECT || !d->server_answered)
		return;
	if (d->connect_fail_streak++ == 0)
		d->streak_start_ns = rec->started_ns;
	if (run->server_gone_ns) {
		run->n_connect_failed_gone++;
	} else if (d->connect_fail_streak == LS_DRIVER_GONE_AFTER) {
		run->server_gone_ns = d->streak_start_ns;
		run->n_connect_failed_gone = d->connect_fail_streak;
		fprintf(stderr, "%slatscope: the server at %s stopped accepting connections at t=%.1f s; %zu "
			"requests failed to connect since\n", d->progress_tty ? "\n" : "", d->opts->url,
			(double)(run->server_gone_ns - d->run_start_ns) / 1e9, run->n_connect_failed_gone);
	}
}

static void xfer_finish(struct drv *d, struct xfer *x, CURLcode code, uint64_t now)
{
	struct ls_request *rec = x->rec;
	CURL *e = x->easy;
	long v = 0;
	curl_off_t t = 0;
	rec->finished_ns = now;
	if (!rec->http_status && curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &v) == CURLE_OK)
		rec->http_status = (int)v;
	if (curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &v) == CURLE_OK && v > 0)
		rec->new_connection = 1;
	/* libcurl's phase times count from its own start of the transfer, which comes after
	 * started_ns (the next socket action). Anchor them at the nearest event we stamped
	 * ourselves in the same read as libcurl: the response's first header line (curl's first
	 * byte), else the finish. Not the head's end: a head that came in two reads (llama-server
	 * under load, 9.4 ms apart) moved every phase that late, sent_ns past the server's read. */
	uint64_t curl_t0_ns = rec->started_ns, anchor_ns = now;
	CURLINFO anchor_info = CURLINFO_TOTAL_TIME_T;
	if (x->first_header_ns) {
		anchor_ns = x->first_header_ns;
		anchor_info = CURLINFO_STARTTRANSFER_TIME_T;
	}
	if (curl_easy_getinfo(e, anchor_info, &t) == CURLE_OK && t > 0 &&
	    anchor_ns > (uint64_t)t * 1000u && anchor_ns - (uint64_t)t * 1000u > rec->started_ns)
		curl_t0_ns = anchor_ns - (uint64_t)t * 1000u;
	if (rec->new_connection && curl_easy_getinfo(e, CURLINFO_CONNECT_TIME_T, &t) == CURLE_OK && t > 0)
		rec->connect_ns = curl_t0_ns + (uint64_t)t * 1000u;
	if (curl_easy_getinfo(e, CURLINFO_APPCONNECT_TIME_T, &t) == CURLE_OK && t > 0)
		rec->tls_ns = curl_t0_ns + (uint64_t)t * 1000u;
	if (curl_easy_getinfo(e, CURLINFO_PRETRANSFER_TIME_T, &t) == CURLE_OK && t > 0)
		rec->sent_ns = curl_t0_ns + (uint64_t)t * 1000u;
	classify(x, code);
	curl_multi_remove_handle(d->multi, e);
	d->in_flight--;
	d->n_done++;
	if (rec->fail)
		d->n_failed++;
	if (d->preconnect_url) { /* not a request of the run: no record, no server watch */
		xfer_release(d, x);
		return;
	}
	watch_server(d, rec);
	if (drv_probe_finished(d, x->job, now)) { /* beside the run: not its end, not its record file */
		xfer_release(d, x);
		return;
	}
	if (!rec->warmup && (!d->run->end_ns || now > d->run->end_ns))
		d->run->end_ns = now;
	if (d->opts->on_finish)
		d->opts->on_finish(d->opts->on_finish_ctx, rec);
	const struct ls_driver_job *done = x->job;
	xfer_release(d, x);
	drv_follow_up(d, done, now); /* multi-turn: the next turn takes this slot */
}

void drv_check_done(struct drv *d)
{
	CURLMsg *msg;
	int left;
	uint64_t now = 0;
	while ((msg = curl_multi_info_read(d->multi, &left))) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		struct xfer *x = NULL;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
		if (!x || !x->rec)
			continue;
		if (!now)
			now = ls_now_ns();
		xfer_finish(d, x, msg->data.result, now);
	}
}

void drv_cancel_all(struct drv *d, const char *why)
{
	uint64_t now = ls_now_ns();
	for (size_t i = 0; i < d->n_xfers; i++) {
		struct xfer *x = d->xfers[i];
		if (!x->rec)
			continue;
		fail(x->rec, LS_FAIL_CANCELLED, why);
		xfer_finish(d, x, CURLE_ABORTED_BY_CALLBACK, now);
	}
}

/* A request that never got onto the multi handle: it ends here, failed. */
static void fail_unsent(struct drv *d, struct ls_request *rec, const char *msg)
{
	rec->finished_ns = ls_now_ns();
	fail(rec, LS_FAIL_OTHER, msg);
	d->n_done++;
	d->n_failed++;
	if (d->opts->on_finish && !d->preconnect_url)
		d->opts->on_finish(d->opts->on_finish_ctx, rec);
}

int drv_xfer_start(struct drv *d, struct ls_driver_job *job, uint64_t admitted_ns)
{
	struct ls_request *rec = job->rec;
	struct xfer *x = d->free_xfers;
	if (x)
		d->free_xfers = x->next_free;
	else
		x = xfer_new(d);
	rec->admitted_ns = admitted_ns;
	if (!x) {
		rec->started_ns = ls_now_ns();
		fail_unsent(d, rec, "could not set up a transfer (out of memory?)");
		return -ENOMEM;
	}
	x->job = job;
	x->rec = rec;
	x->header_bytes = 0;
	x->first_header_ns = 0;
	x->status = 0;
	x->saw_done = 0;
	x->saw_finish = 0;
	x->attempts = 0;
	x->pc_held = 0;
	x->content_type[0] = 0;
	x->errbuf[0] = 0;
	ls_sse_reset(&x->sse);
	ls_decode_state_init(&x->dec);
	uint64_t max_frames = rec->output_len ? (uint64_t)rec->output_len * 4 + LS_DRIVER_FRAMES_MIN
					      : LS_DRIVER_FRAMES_UNKNOWN;
	x->max_frames = (uint32_t)(max_frames < LS_DRIVER_FRAMES_CAP ? max_frames : LS_DRIVER_FRAMES_CAP);
	reserve_frames(rec, frames_wanted(rec));

	if (d->opts->request_id_prefix) /* vLLM: f"{request_id_prefix}{index}" */
		snprintf(x->id_header->data, REQUEST_ID_MAX + 1, "X-Request-Id: %s%llu", d->opts->request_id_prefix,
			 (unsigned long long)rec->id);
	else
		snprintf(x->id_header->data, REQUEST_ID_MAX + 1, "X-Request-Id: %s-%llu", d->run->run_tag,
			 (unsigned long long)rec->id);
	if (x->route_header) /* "Name;" is libcurl's way to send a header with an empty value */
		snprintf(x->route_header->data, ROUTE_KEY_MAX + 1, job->route_key ? "X-SMG-Routing-Key: %.*s"
			 : "X-SMG-Routing-Key;", ROUTE_KEY_MAX - 20, job->route_key ? job->route_key : "");
	if (d->preconnect_url) { /* driver_preconnect.c: a GET that leaves its connection in the pool */
		curl_easy_setopt(x->easy, CURLOPT_URL, d->preconnect_url);
		curl_easy_setopt(x->easy, CURLOPT_HTTPGET, 1L);
	} else {
		curl_easy_setopt(x->easy, CURLOPT_POSTFIELDS, job->body);
		curl_easy_setopt(x->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)job->body_len);
	}

	/* With no idle connection in the pool, a new one is what libcurl would open anyway; saying
	 * so spares its walk over every busy connection to the host (7.88: ~30k instructions a start
	 * at 1,400 connections, O(n^2) over a burst). HTTP/2 shares connections: it always looks. */
	if (!d->opts->per_request_conn && !d->opts->http2)
		curl_easy_setopt(x->easy, CURLOPT_FRESH_CONNECT, drv_pool_may_have_idle(d) ? 0L : 1L);
	rec->started_ns = ls_now_ns();
	CURLMcode mc = curl_multi_add_handle(d->multi, x->easy);
	d->n_started++;
	if (mc != CURLM_OK) {
		fail_unsent(d, rec, curl_multi_strerror(mc));
		xfer_release(d, x);
		return -EIO;
	}
	d->in_flight++;
	return 0;
}

/* Easy handles (options, headers, buffers) for the transfers that can be in flight at once,
 * made before the clock starts: libcurl's handle setup is the harness's own, not part of any
 * request's latency. Connections still open inside the requests (the profile decides). 0, or
 * -ENOMEM (the run then makes the rest as it goes). */
int drv_xfers_prepare(struct drv *d, size_t n)
{
	/* The first jobs' frame arrays too, touched so that their pages are not first faulted in
	 * by the burst. */
	for (size_t i = 0; i < n && i < d->n_jobs; i++) {
		struct ls_request *rec = d->jobs[i].rec;
		reserve_frames(rec, frames_wanted(rec));
		if (rec->frames)
			memset(rec->frames, 0, (size_t)rec->cap_frames * sizeof(*rec->frames));
	}
	for (size_t i = 0; i < n; i++) {
		struct xfer *x = xfer_new(d);
		if (!x)
			return -ENOMEM;
		x->next_free = d->free_xfers;
		d->free_xfers = x;
	}
	return 0;
}

void drv_xfers_free(struct drv *d)
{
	/* Detach every handle first: one still attached keeps libcurl's state alive. */
	for (size_t i = 0; i < d->n_xfers; i++)
		if (d->xfers[i]->rec && d->multi)
			curl_multi_remove_handle(d->multi, d->xfers[i]->easy);
	for (size_t i = 0; i < d->n_xfers; i++)
		xfer_destroy(d->xfers[i]);
	free(d->xfers);
	d->xfers = NULL;
	d->n_xfers = 0;
}
