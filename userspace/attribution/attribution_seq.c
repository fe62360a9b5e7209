/* attribution_seq.c — a request's kernel stamps: its sockets' events joined to its record.
 *
 * Frames to TCP sequence space. A frame is stamped by the harness in the write callback that
 * follows the recv() that delivered its last byte, and before the next recv(): so the read that
 * delivered it is the last READ event (sock_recv_length) at or before the stamp — exactly, with
 * no byte arithmetic. Its byte range (copied_seq - ret, copied_seq] holds the frame's end.
 * When the frame is the last one completed by that read, we take seq_end = copied_seq: the
 * end of the read, which is the end of the server write that carried the frame (the sim writes
 * one HTTP chunk per SSE message, trailer included; with TLS one record per write), so the
 * kernel arrival of seq_end is the arrival of that write. When several frames completed in one
 * read, the earlier ones are placed back from the read's end by their distance in the body
 * (stream_off) plus a per-frame wire overhead (chunk header + trailer, + TLS record header and
 * tag) measured on the same request from consecutive frames read one per read (median); the
 * estimate is clamped into the read's range. With TLS, the body-to-wire mapping is therefore
 * approximate by a few bytes per frame; it only matters when two server writes were read in
 * one recv() and the estimate falls across their boundary, and then the later write's arrival
 * is taken (an upper bound: kernel wait is under-, never over-stated).
 * The kernel had a frame at the first ARRIVED (sk_data_ready) whose rcv_nxt >= seq_end; the
 * server wrote it at the last server SEND_START (tcp_sendmsg_locked) whose write_seq < seq_end;
 * the server read the request at its first READ with copied_seq >= the client's write_seq after
 * the request (client and server share each direction's sequence space). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "attribution/attribution_int.h"

#define LS_OVERHEAD_MAX 4096u

static int seq_ge(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) >= 0;
}

/* ---- events of one socket ---- */

struct span {
	const struct ls_event *ev;
	size_t n;
};

static struct span span_of(const struct ls_sock_events *s, uint64_t t0, uint64_t t1)
{
	struct span sp = { NULL, 0 };
	size_t lo, hi;

	if (!s || t1 < t0)
		return sp;
	lo = ls_sock_events_from(s, t0);
	hi = t1 == UINT64_MAX ? s->n : ls_sock_events_from(s, t1 + 1);
	sp.ev = s->ev + lo;
	sp.n = hi - lo;
	return sp;
}

static const struct ls_event *first_of(struct span sp, uint16_t kind, uint64_t from)
{
	for (size_t i = 0; i < sp.n; i++)
		if (sp.ev[i].kind == kind && sp.ev[i].ts_ns >= from)
			return &sp.ev[i];
	return NULL;
}

static int cmp_srv(const void *a, const void *b)
{
	const struct ls_attr_srv *x = a, *y = b;
	if (x->ports != y->ports)
		return x->ports < y->ports ? -1 : 1;
	return x->first_ns < y->first_ns ? -1 : x->first_ns > y->first_ns;
}

int ls_attr_index_build(struct ls_attr_index *x, const struct ls_evstore *store)
{
	size_t n = ls_evstore_sockets(store);

	x->store = store;
	x->n_srv = 0;
	x->srv = calloc(n ? n : 1, sizeof(*x->srv));
	if (!x->srv)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct ls_sock_events *s = ls_evstore_at(x->store, i);
		for (size_t j = 0; j < s->n; j++) {
			const struct ls_event *e = &s->ev[j];
			if (e->role != LS_ROLE_SERVER || !e->lport || !e->rport || !s->cookie)
				continue;
			x->srv[x->n_srv++] = (struct ls_attr_srv){ (uint32_t)e->lport << 16 | e->rport, s->cookie,
							       s->ev[0].ts_ns, s->ev[s->n - 1].ts_ns };
			break;
		}
	}
	qsort(x->srv, x->n_srv, sizeof(*x->srv), cmp_srv);
	return 0;
}

void ls_attr_index_free(struct ls_attr_index *x)
{
	free(x->srv);
	x->srv = NULL;
	x->n_srv = 0;
}

/* The server socket whose ports mirror the client's and whose life covers t. */
static uint64_t srv_pair(const struct ls_attr_index *x, const struct ls_sock_events *cs, uint64_t t)
{
	uint32_t ports = 0;
	uint64_t best = 0;
	size_t lo = 0, hi = x->n_srv;

	for (size_t j = 0; cs && j < cs->n && !ports; j++)
		if (cs->ev[j].lport && cs->ev[j].rport && cs->ev[j].role == LS_ROLE_CLIENT)
			ports = (uint32_t)cs->ev[j].rport << 16 | cs->ev[j].lport;
	if (!ports)
		return 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (x->srv[mid].ports < ports)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < x->n_srv && x->srv[i].ports == ports; i++) {
		if (!best || x->srv[i].first_ns <= t)
			best = x->srv[i].cookie; /* the latest one that existed by t */
	}
	return best;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* Per-frame overhead on the wire (chunk framing, TLS records), from frames read one per read. */
static uint32_t wire_overhead(const struct ls_request *r, const long *rd, const struct ls_event *reads)
{
	uint32_t samples[64];
	size_t n = 0;

	for (uint32_t i = 1; i < r->n_frames && n < 64; i++) {
		int alone = rd[i] >= 0 && rd[i] != rd[i - 1] && (i + 1 == r->n_frames || rd[i + 1] != rd[i]);
		if (!alone || rd[i - 1] < 0)
			continue;
		uint32_t wire = reads[rd[i]].seq - reads[rd[i - 1]].seq;
		uint64_t body = r->frames[i].stream_off - r->frames[i - 1].stream_off;
		if (wire >= body && wire - body <= LS_OVERHEAD_MAX)
			samples[n++] = (uint32_t)(wire - body);
	}
	if (!n)
		return 0;
	qsort(samples, n, sizeof(samples[0]), cmp_u32);
	return samples[n / 2];
}

/* Fills fa for every frame: which read delivered it, its sequence end, kernel arrival, server
 * write. reads/arrivals: the client's events in the response window; srv: the server's. */
static int match_frames(const struct ls_request *r, struct ls_req_attr *a, struct span resp,
			struct span srv)
{
	struct ls_event *reads = NULL, *arr = NULL;
	size_t n_reads = 0, n_arr = 0;
	long *rd = NULL;
	int rc = -ENOMEM;

	reads = calloc(resp.n + 1, sizeof(*reads));
	arr = calloc(resp.n + 1, sizeof(*arr));
	rd = calloc(r->n_frames + 1, sizeof(*rd));
	if (!reads || !arr || !rd)
		goto out;
	for (size_t i = 0; i < resp.n; i++) {
		if (resp.ev[i].kind == LS_EV_READ)
			reads[n_reads++] = resp.ev[i];
		else if (resp.ev[i].kind == LS_EV_ARRIVED)
			arr[n_arr++] = resp.ev[i];
	}
	for (uint32_t i = 0, j = 0; i < r->n_frames; i++) { /* the last read at or before the stamp */
		while (j < n_reads && reads[j].ts_ns <= r->frames[i].arrived_ns)
			j++;
		rd[i] = (long)j - 1;
	}
	uint32_t overhead = wire_overhead(r, rd, reads);
	size_t ai = 0, si = 0;
	const struct ls_event *last_send = NULL;

	for (uint32_t i = 0; i < r->n_frames; i++) {
		struct ls_frame_attr *fa = &a->frames[i];
		if (rd[i] < 0)
			continue;
		const struct ls_event *R = &reads[rd[i]];
		uint32_t last = i;
		while (last + 1 < r->n_frames && rd[last + 1] == rd[i])
			last++;
		uint32_t seq = R->seq;
		if (last != i) {
			uint64_t back = (r->frames[last].stream_off - r->frames[i].stream_off) +
					(uint64_t)overhead * (last - i);
			seq = back >= R->len ? R->seq - R->len + 1 : R->seq - (uint32_t)back;
		}
		fa->seq_end = seq;
		fa->exact = last == i;
		fa->read_ns = R->ts_ns;
		while (ai < n_arr && !seq_ge(arr[ai].seq, seq))
			ai++;
		if (ai < n_arr)
			fa->kernel_ns = arr[ai].ts_ns;
		for (; si < srv.n; si++) {
			const struct ls_event *e = &srv.ev[si];
			if (e->kind != LS_EV_SEND_START)
				continue;
			if (seq_ge(e->seq, seq))
				break;
			last_send = e;
		}
		if (last_send)
			fa->server_write_ns = last_send->ts_ns;
	}
	rc = 0;
out:
	free(reads);
	free(arr);
	free(rd);
	return rc;
}

/* A new connection's stamps: connect(), ESTABLISHED, the TLS handshake. */
static void match_connect(struct span win, const struct ls_request *r, struct ls_req_attr *a)
{
	const struct ls_event *e;

	if ((e = first_of(win, LS_EV_CONNECT, 0)))
		a->connect_call_ns = e->ts_ns;
	if ((e = first_of(win, LS_EV_ESTABLISHED, 0)))
		a->established_ns = e->ts_ns;
	if ((e = first_of(win, LS_EV_TLS_START, 0)))
		a->tls_start_ns = e->ts_ns;
	if ((e = first_of(win, LS_EV_TLS_END, 0)))
		a->tls_end_ns = e->ts_ns;
	if (r->tls_ns && !a->tls_end_ns)
		a->flags |= LS_ATTR_NO_TLS_EVENTS;
}

/* The request on the client socket: its first send after the handshake (without TLS events,
 * after curl's TLS stamp), its last send end before the response, and the socket's RTT and
 * retransmits. Returns where the response's events start. */
static uint64_t match_request(struct span win, const struct ls_request *r, struct ls_req_attr *a, uint64_t t0)
{
	const struct ls_event *e;
	uint64_t send_from = t0;

	if (a->tls_end_ns > send_from)
		send_from = a->tls_end_ns;
	else if ((a->flags & LS_ATTR_NO_TLS_EVENTS) && r->tls_ns > send_from)
		send_from = r->tls_ns;
	if ((e = first_of(win, LS_EV_SEND_START, send_from)))
		a->request_send_ns = e->ts_ns;
	uint64_t resp_from = a->request_send_ns ? a->request_send_ns : send_from;
	const struct ls_event *first_read = first_of(win, LS_EV_READ, resp_from);
	for (size_t i = 0; i < win.n; i++) { /* the request's last send end before the response */
		e = &win.ev[i];
		if (first_read && e->ts_ns >= first_read->ts_ns)
			break;
		if (e->kind == LS_EV_SEND_END && e->ts_ns >= resp_from) {
			a->request_sent_ns = e->ts_ns;
			a->request_end_seq = e->seq;
		}
	}
	for (size_t i = 0; i < win.n; i++) {
		if (win.ev[i].kind == LS_EV_RTT)
			a->srtt_us = win.ev[i].aux;
		else if (win.ev[i].kind == LS_EV_RETRANSMIT)
			a->retransmits++;
	}
	return resp_from;
}

/* Server side, paired by ports; its events from the request's send on, starting at its read
 * of the request (none when it never read it: frames are not matched to such a server). */
static struct span match_server(const struct ls_attr_index *x, const struct ls_sock_events *cs,
				struct ls_req_attr *a, uint64_t resp_from, uint64_t t1)
{
	const struct ls_sock_events *ss;

	a->server_cookie = cs ? srv_pair(x, cs, resp_from) : 0;
	ss = a->server_cookie ? ls_evstore_find(x->store, a->server_cookie) : NULL;
	struct span srv = span_of(ss, resp_from, t1);
	if (!srv.n)
		a->flags |= LS_ATTR_NO_SERVER;
	if (ss && ss->lost)
		a->flags |= LS_ATTR_LOST_EVENTS;
	if (a->request_sent_ns) {
		for (size_t i = 0; i < srv.n; i++) {
			const struct ls_event *e = &srv.ev[i];
			if (!a->server_arrived_ns && e->kind == LS_EV_ARRIVED && seq_ge(e->seq, a->request_end_seq))
				a->server_arrived_ns = e->ts_ns;
			if (e->kind == LS_EV_READ && seq_ge(e->seq, a->request_end_seq)) {
				a->server_read_ns = e->ts_ns;
				a->server_tgid = e->tgid;
				a->server_read_tid = e->aux; /* the handler thread (bpf/events.h) */
				srv.ev += i;
				srv.n -= i;
				break;
			}
		}
	}
	if (!a->server_read_ns)
		srv.n = 0;
	return srv;
}

/* The tail: the response's last bytes (chunked terminator) read after the last frame. */
static void match_tail(struct span resp, struct span srv, const struct ls_request *r, struct ls_frame_attr *tail)
{
	const struct ls_event *last_read = NULL;

	for (size_t i = 0; i < resp.n; i++)
		if (resp.ev[i].kind == LS_EV_READ)
			last_read = &resp.ev[i];
	if (!last_read || (r->n_frames && last_read->ts_ns <= r->frames[r->n_frames - 1].arrived_ns))
		return;
	tail->read_ns = last_read->ts_ns;
	for (size_t i = 0; i < resp.n; i++)
		if (resp.ev[i].kind == LS_EV_ARRIVED && seq_ge(resp.ev[i].seq, last_read->seq)) {
			tail->kernel_ns = resp.ev[i].ts_ns;
			break;
		}
	for (size_t i = 0; i < srv.n; i++)
		if (srv.ev[i].kind == LS_EV_SEND_START && !seq_ge(srv.ev[i].seq, last_read->seq))
			tail->server_write_ns = srv.ev[i].ts_ns;
}

int ls_attr_match(const struct ls_attr_index *x, const struct ls_request *r, struct ls_req_attr *a,
		  struct ls_frame_attr *tail)
{
	const struct ls_sock_events *cs = r->socket_cookie ? ls_evstore_find(x->store, r->socket_cookie) : NULL;
	uint64_t t0 = r->started_ns ? r->started_ns : r->scheduled_ns;
	uint64_t t1 = r->finished_ns ? r->finished_ns : UINT64_MAX;
	struct span win = span_of(cs, t0, t1);

	memset(tail, 0, sizeof(*tail));
	if (r->new_connection && r->connect_ns > r->started_ns && r->started_ns)
		a->curl_connect_time_ns = r->connect_ns - r->started_ns;
	a->client_cookie = r->socket_cookie;
	a->n_frames = r->n_frames;
	a->frames = calloc(r->n_frames + 1, sizeof(*a->frames));
	if (!a->frames)
		return -ENOMEM;
	if (!r->new_connection)
		a->flags |= LS_ATTR_REUSED;
	if (!win.n)
		a->flags |= LS_ATTR_NO_EVENTS;
	if (cs && cs->lost)
		a->flags |= LS_ATTR_LOST_EVENTS;
	if (r->new_connection)
		match_connect(win, r, a);
	uint64_t resp_from = match_request(win, r, a, t0);
	struct span srv = match_server(x, cs, a, resp_from, t1);
	ls_attr_handshake(x, cs, a);
	struct span resp = span_of(cs, resp_from, t1);
	if (match_frames(r, a, resp, srv))
		return -ENOMEM;
	match_tail(resp, srv, r, tail);
	return 0;
}
