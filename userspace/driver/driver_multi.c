/* driver_multi.c — the libcurl multi handle's side of the driver: its socket callback (which
 * sockets to watch and for what, as io_uring polls), its timer callback, the
 * per-socket state's life, the pool options, and connection numbers by SO_COOKIE.
 * Per-transfer callbacks are in driver_curl.c, the loop in driver.c. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include "base/auth.h"
#include "base/clock.h"
#include "driver/driver_int.h"

#ifndef SO_COOKIE
#define SO_COOKIE 57
#endif

/* ---- connection numbers: SO_COOKIE -> conn_seq ---- */

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

/* Returns the connection number of cookie, giving it the next one when new (0 on ENOMEM). */
static uint32_t conn_seq(struct drv *d, uint64_t cookie)
{
	struct conn_map *m = &d->conns;
	if (!cookie)
		return 0;
	if ((m->n + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		uint64_t *cookies = calloc(cap, sizeof(*cookies));
		uint32_t *seqs = calloc(cap, sizeof(*seqs));
		if (!cookies || !seqs) {
			free(cookies);
			free(seqs);
			return 0;
		}
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->cookies[i])
				continue;
			size_t j = mix64(m->cookies[i]) & (cap - 1);
			while (cookies[j])
				j = (j + 1) & (cap - 1);
			cookies[j] = m->cookies[i];
			seqs[j] = m->seqs[i];
		}
		free(m->cookies);
		free(m->seqs);
		m->cookies = cookies;
		m->seqs = seqs;
		m->cap = cap;
	}
	size_t j = mix64(cookie) & (m->cap - 1);
	while (m->cookies[j] && m->cookies[j] != cookie)
		j = (j + 1) & (m->cap - 1);
	if (!m->cookies[j]) {
		m->cookies[j] = cookie;
		m->seqs[j] = ++d->n_conns;
		m->n++;
	}
	return m->seqs[j];
}

void drv_note_socket(struct drv *d, struct ls_request *rec, curl_socket_t fd)
{
	uint64_t cookie = 0;
	socklen_t len = sizeof(cookie);
	rec->fd = fd;
	rec->socket_cookie = getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &len) ? 0 : cookie;
	rec->conn_seq = conn_seq(d, rec->socket_cookie);
}

static size_t open_conns;

void drv_conn_opened(void)
{
	open_conns++;
}

int drv_conn_close(void *clientp, curl_socket_t fd)
{
	(void)clientp;
	if (open_conns)
		open_conns--;
	return close(fd);
}

int drv_pool_may_have_idle(const struct drv *d)
{
	return open_conns > d->in_flight;
}

/* ---- the multi handle's callbacks ---- */

static void sock_free(struct drv *d, struct loop_sock *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		d->socks = s->next;
	if (s->next)
		s->next->prev = s->prev;
	free(s);
}

static unsigned poll_mask(int want)
{
	return (want & CURL_POLL_IN ? POLLIN : 0) | (want & CURL_POLL_OUT ? POLLOUT : 0);
}

/* libcurl expects level-triggered readiness; a multishot poll posts only on a new wakeup of the
 * socket. Reading is fine that way (every arriving segment wakes it). Writing is not: a send that
 * does not fill the socket buffer causes no write-space wakeup, so once libcurl has written a
 * chunk without EAGAIN a multishot POLLOUT never fires again (a request body over a few 64 KiB
 * chunks never finished sending). A wanted POLLOUT therefore gets a one-shot poll, and arming
 * one checks readiness first. */
static int wants_oneshot(const struct drv *d, unsigned mask)
{
	return d->poll_oneshot || (mask & POLLOUT);
}

void drv_sock_arm(struct drv *d, struct loop_sock *s)
{
	struct io_uring_sqe *sqe = drv_sqe(d);
	if (!sqe)
		return;
	s->armed_mask = poll_mask(s->want);
	s->armed_oneshot = wants_oneshot(d, s->armed_mask);
	if (s->armed_oneshot)
		io_uring_prep_poll_add(sqe, s->fd, s->armed_mask);
	else
		io_uring_prep_poll_multishot(sqe, s->fd, s->armed_mask);
	io_uring_sqe_set_data(sqe, &s->op);
	s->live = 1;
	s->poll_gone = 0;
	s->gen++;
}

/* Brings the kernel's poll in line with what curl wants: removed, or a new mask. One control
 * operation at a time; the kernel answers -EALREADY while the poll is busy posting an event
 * (the control CQE then retries), -ENOENT when the poll already ended (its last CQE re-arms).
 * An update changes only the poll's events, never one-shot vs multishot (the kernel keeps
 * those flags): a change of mode is a remove, whose last CQE re-arms in the new mode. */
static void sock_sync(struct drv *d, struct loop_sock *s)
{
	if (!s->live || s->ctl_pending || s->poll_gone)
		return;
	unsigned mask = poll_mask(s->want);
	int mode_change = !s->removed && wants_oneshot(d, mask) != s->armed_oneshot;
	if (!s->removed && !mode_change && mask == s->armed_mask)
		return;
	struct io_uring_sqe *sqe = drv_sqe(d);
	if (!sqe)
		return;
	if (s->removed || mode_change)
		io_uring_prep_poll_remove(sqe, (uint64_t)(uintptr_t)&s->op);
	else
		io_uring_prep_poll_update(sqe, (uint64_t)(uintptr_t)&s->op, 0, mask,
					  IORING_POLL_UPDATE_EVENTS | (s->armed_oneshot ? 0 : IORING_POLL_ADD_MULTI));
	io_uring_sqe_set_data(sqe, &s->ctl_op);
	s->ctl_mask = mask;
	s->ctl_gen = s->gen;
	s->ctl_pending = 1;
	s->ctl_switch = mode_change;
}

static void sock_maybe_free(struct drv *d, struct loop_sock *s)
{
	if (s->removed && !s->live && !s->ctl_pending && !s->fresh)
		sock_free(d, s);
}

/* A socket opened while start_jobs carries a transfer (d->starting) is not polled yet: libcurl
 * is asked at once whether its connect is done (it checks with a poll of its own), which on
 * loopback it is, so the request is written in the same breath; only then is the kernel poll
 * armed, for whatever libcurl wants by then (reading, as a rule). No ring round trip per new
 * connection, and no other socket's completion is taken in between. */
void drv_socks_fresh_run(struct drv *d)
{
	while (d->fresh_socks) {
		struct loop_sock *s = d->fresh_socks;
		d->fresh_socks = s->fresh_next;
		s->fresh_next = NULL;
		if (!s->removed) {
			int running;
			d->stats.socket_actions++;
			curl_multi_socket_action(d->multi, s->fd, CURL_CSELECT_OUT, &running);
		}
		s->fresh = 0;
		if (!s->removed)
			drv_sock_arm(d, s);
		sock_maybe_free(d, s);
	}
}

/* CURLMOPT_SOCKETFUNCTION: what to watch on fd. It comes for reused connections too, which
 * is where a pooled connection's fd (and so its cookie) becomes known. */
static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
	struct drv *d = userp;
	struct loop_sock *s = socketp;
	struct xfer *x = NULL;
	if (what == CURL_POLL_REMOVE) {
		if (s) {
			curl_multi_assign(d->multi, fd, NULL);
			s->removed = 1;
			sock_sync(d, s);
			sock_maybe_free(d, s);
		}
		return 0;
	}
	if (easy && curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x) == CURLE_OK && x &&
	    x->rec && x->rec->fd < 0)
		drv_note_socket(d, x->rec, fd); /* a pooled connection: no SOCKOPTFUNCTION for it */
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s) {
			d->fatal = -ENOMEM;
			return -1;
		}
		s->op.kind = DRV_OP_SOCK;
		s->ctl_op.kind = DRV_OP_SOCK_CTL;
		s->drv = d;
		s->fd = fd;
		s->want = what;
		s->next = d->socks;
		if (d->socks)
			d->socks->prev = s;
		d->socks = s;
		curl_multi_assign(d->multi, fd, s);
		if (d->starting && (what & CURL_POLL_OUT)) {
			s->fresh = 1; /* drv_socks_fresh_run asks libcurl first, then arms */
			s->fresh_next = d->fresh_socks;
			d->fresh_socks = s;
		} else {
			drv_sock_arm(d, s);
		}
		return 0;
	}
	s->want = what;
	sock_sync(d, s);
	return 0;
}

/* CURLMOPT_TIMERFUNCTION: libcurl's one timer, kept as an absolute deadline for the loop. */
static int on_timer(CURLM *multi, long timeout_ms, void *userp)
{
	struct drv *d = userp;
	(void)multi;
	d->curl_deadline_ns = timeout_ms < 0 ? 0 : ls_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	if (timeout_ms == 0)
		d->curl_deadline_ns = 1; /* due now */
	return 0;
}

void drv_sock_cqe(struct drv *d, struct loop_sock *s, int res, int more)
{
	if (!s->removed && res != -ECANCELED) {
		int ev = 0;
		if (res < 0)
			ev = CURL_CSELECT_ERR;
		else {
			if (res & (POLLIN | POLLHUP | POLLRDHUP))
				ev |= CURL_CSELECT_IN;
			if (res & POLLOUT)
				ev |= CURL_CSELECT_OUT;
			if (res & POLLERR)
				ev |= CURL_CSELECT_ERR;
		}
		int running;
		d->stats.socket_actions++;
		/* s->live stays set through the call: a REMOVE inside it must not free s. The poll's
		 * last CQE means no poll is left to update: the re-arm below takes curl's new wish. */
		if (!more)
			s->poll_gone = 1;
		curl_multi_socket_action(d->multi, s->fd, ev, &running);
	}
	if (more)
		return;
	s->live = 0;
	if (!s->removed)
		drv_sock_arm(d, s); /* the poll ended (one-shot, removed to switch mode, or multishot ended) */
	sock_maybe_free(d, s);
}

void drv_sock_ctl_cqe(struct drv *d, struct loop_sock *s, int res)
{
	s->ctl_pending = 0;
	/* A result about an earlier poll (ended and re-armed since) says nothing of this one. */
	int current = s->ctl_gen == s->gen;
	if (res == 0 && !s->removed && current && s->ctl_switch)
		s->poll_gone = 1; /* removed to switch mode: its last CQE re-arms */
	else if (res == 0 && !s->removed && current)
		s->armed_mask = s->ctl_mask;
	else if (res == -ENOENT && current)
		s->poll_gone = 1; /* it ended; its last CQE is due and re-arms or frees */
	else if (res == -EALREADY)
		d->stats.ctl_retries++;
	else if (res < 0 && !d->ring_errors++)
		d->ring_error_first = res;
	sock_sync(d, s);
	sock_maybe_free(d, s);
}

void drv_socks_free(struct drv *d)
{
	while (d->socks)
		sock_free(d, d->socks);
}

/* The keep-alive pool outlives a run: the measured run reuses the connections its warmups
 * opened, as vLLM's one aiohttp session does. Kept only between runs with the same target and
 * connection settings (the key), and only in reuse mode. */
static struct {
	CURLM *multi;
	char   key[1024];
} pool;

static void pool_key(const struct ls_driver_opts *o, char *key, size_t cap)
{
	snprintf(key, cap, "%s|%d|%d|%s|%llu", o->url, o->http2, o->insecure, o->cacert ? o->cacert : "",
		 (unsigned long long)o->request_timeout_ns);
}

void ls_driver_pool_close(void)
{
	if (pool.multi)
		curl_multi_cleanup(pool.multi);
	pool.multi = NULL;
	pool.key[0] = 0;
}

/* Whether a --header line has the name of constant header line `line` ("Name: ..."). */
static int header_replaced(const struct ls_driver_opts *o, const char *line)
{
	size_t n = strcspn(line, ":");
	for (size_t i = 0; i < o->n_headers; i++)
		if (!strncasecmp(o->headers[i], line, n) && o->headers[i][n] == ':')
			return 1;
	return 0;
}

int drv_multi_setup(struct drv *d)
{
	const struct ls_driver_opts *o = d->opts;
	if (o->http2 && !(curl_version_info(CURLVERSION_NOW)->features & CURL_VERSION_HTTP2)) {
		fprintf(stderr, "latscope: --http2: this libcurl was built without HTTP/2; drop the flag\n");
		return -ENOTSUP;
	}
	char key[sizeof(pool.key)];
	pool_key(o, key, sizeof(key));
	if (pool.multi && !o->per_request_conn && !strcmp(pool.key, key)) {
		d->multi = pool.multi; /* its callbacks' data is set again below, before any use */
		pool.multi = NULL;
	} else {
		ls_driver_pool_close();
		d->multi = curl_multi_init();
	}
	if (!d->multi) {
		fprintf(stderr, "latscope: curl_multi_init failed (out of memory?)\n");
		return -ENOMEM;
	}
	/* reuse: one pool of up to max_concurrency keep-alive connections (vLLM's aiohttp
	 * connector). per-request: every transfer opens and closes its own connection. */
	long pool = o->max_concurrency ? (long)o->max_concurrency : (long)(d->n_jobs ? d->n_jobs : 1);
	/* A probe request has a connection of its own beside the slots' (vLLM's probe shares the
	 * aiohttp connector limited to max_concurrency, so it waits for a connection while every
	 * slot streams: its latency then includes the client's own wait). */
	if (o->probe_interval_ns)
		pool++;
	CURLMcode mc = CURLM_OK;
#define MSET(opt, val) do { if (mc == CURLM_OK) mc = curl_multi_setopt(d->multi, opt, val); } while (0)
	MSET(CURLMOPT_SOCKETFUNCTION, on_socket);
	MSET(CURLMOPT_SOCKETDATA, d);
	MSET(CURLMOPT_TIMERFUNCTION, on_timer);
	MSET(CURLMOPT_TIMERDATA, d);
	MSET(CURLMOPT_MAXCONNECTS, pool);
	if (!o->per_request_conn && o->max_concurrency && !o->http2)
		MSET(CURLMOPT_MAX_TOTAL_CONNECTIONS, pool);
	MSET(CURLMOPT_PIPELINING, o->http2 ? (long)CURLPIPE_MULTIPLEX : (long)CURLPIPE_NOTHING);
#undef MSET
	if (mc != CURLM_OK) {
		fprintf(stderr, "latscope: libcurl multi option: %s\n", curl_multi_strerror(mc));
		return -EINVAL;
	}
	/* The headers aiohttp sends (libcurl adds Host and "Accept: * / *" itself). "Expect:" stops
	 * libcurl's 100-continue wait on bodies over 1 KiB (an extra round trip, or a 1 s stall
	 * against servers that never answer 100). */
	const char *base[] = { "Content-Type: application/json", "Expect:" };
	for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++) {
		if (header_replaced(d->opts, base[i]))
			continue;
		struct curl_slist *grown = curl_slist_append(d->base_headers, base[i]);
		if (!grown)
			return -ENOMEM;
		d->base_headers = grown;
	}
	char auth[1024];
	int has_auth = ls_auth_header(auth, sizeof(auth));
	if (has_auth < 0) {
		fprintf(stderr, "latscope: OPENAI_API_KEY is longer than %zu bytes\n", sizeof(auth) - 23);
		return has_auth;
	}
	if (has_auth && !header_replaced(d->opts, auth)) {
		struct curl_slist *grown = curl_slist_append(d->base_headers, auth);
		if (!grown)
			return -ENOMEM;
		d->base_headers = grown;
	}
	for (size_t i = 0; i < d->opts->n_headers; i++) {
		if (!strncasecmp(d->opts->headers[i], "X-Request-Id:", 13))
			continue; /* vLLM: the request id overrides --header */
		struct curl_slist *grown = curl_slist_append(d->base_headers, d->opts->headers[i]);
		if (!grown)
			return -ENOMEM;
		d->base_headers = grown;
	}
	return 0;
}

void drv_multi_teardown(struct drv *d)
{
	if (d->multi && !d->opts->per_request_conn && !d->fatal) {
		ls_driver_pool_close();
		pool.multi = d->multi; /* idle keep-alive connections wait for the next run */
		pool_key(d->opts, pool.key, sizeof(pool.key));
	} else if (d->multi) {
		curl_multi_cleanup(d->multi);
	}
	d->multi = NULL;
	curl_slist_free_all(d->base_headers);
	d->base_headers = NULL;
	free(d->conns.cookies);
	free(d->conns.seqs);
	memset(&d->conns, 0, sizeof(d->conns));
}
