/* watch.c — connections and exchanges from one client socket's events (see watch.h). How an
 * exchange is cut: a send burst (the request), then every arrival until the next send or the
 * close. TLS bytes are left out by the libssl stamps: sends inside the handshake (TLS_START ..
 * TLS_END), and, on a socket where the harness's SSL_write calls are seen, sends no SSL_write
 * asked for (the client's Finished after an asyncio handshake, alerts). A read's delay is taken
 * from the oldest byte it delivered: the time the harness left bytes the kernel had. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "watch/watch.h"
#include "watch/watch_int.h"

#define LS_TCP_FIN_WAIT1 4
#define LS_TCP_FIN_WAIT2 5
#define LS_TCP_TIME_WAIT 6
#define LS_TCP_CLOSE_WAIT 8

int ls_watch_grow(void **p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 64;
	while (c < need)
		c *= 2;
	void *n = realloc(*p, c * size);
	if (!n)
		return -ENOMEM;
	*p = n;
	*cap = c;
	return 0;
}
#define grow ls_watch_grow

/* A client socket of a watched process (and to --port)? */
static int wanted(const struct ls_sock_events *s, const struct ls_watch_opts *o)
{
	const struct ls_event *e = NULL;

	for (size_t i = 0; i < s->n && !e; i++)
		if (s->ev[i].role == LS_ROLE_CLIENT && s->ev[i].tgid)
			e = &s->ev[i];
	if (!e || !s->cookie)
		return 0;
	if (o->tgids) {
		size_t i = 0;
		while (i < o->n_tgids && o->tgids[i] != e->tgid)
			i++;
		if (i == o->n_tgids)
			return 0;
	}
	if (o->port) {
		for (size_t i = 0; i < s->n; i++)
			if (s->ev[i].rport)
				return s->ev[i].rport == o->port;
		return 0;
	}
	return 1;
}

/* The socket's state while its events are walked. */
struct walk {
	struct ls_watch_conn c;
	uint32_t cur;           /* open exchange (index in w->ex), UINT32_MAX none */
	int has_tls_write;      /* the harness's SSL_write calls are seen on this socket */
	int write_pending;      /* an SSL_write since the last exchange began */
	int in_handshake;
	int send_open;          /* a SEND_START not yet followed by its SEND_END */
	int send_taken;         /* ... and it is a request's */
	size_t first_read;      /* this socket's first entry in w->reads */
	uint32_t rcv_seen;      /* highest rcv_nxt so far */
	uint64_t closing_ns;    /* first FIN_WAIT1 / CLOSE_WAIT / CLOSE */
	int hs_last_send;       /* in the handshake, the harness spoke last (so far) */
	int tls13;              /* the handshake ended with the client's flight: TLS 1.3, tickets follow */

	int rcv_known;
};

static int new_exchange(struct build *b, struct walk *k, uint64_t first_ns)
{
	struct ls_watch *w = b->w;

	if (grow((void **)&w->ex, &b->cap_ex, w->n_ex + 1, sizeof(*w->ex)))
		return -ENOMEM;
	struct ls_watch_exchange *x = &w->ex[w->n_ex];
	memset(x, 0, sizeof(*x));
	x->conn = (uint32_t)w->n_conns;
	x->nth = k->c.n_ex++;
	x->send_first_ns = first_ns;
	k->cur = (uint32_t)w->n_ex++;
	k->write_pending = 0;
	return 0;
}

#define TICKETS_AFTER_NS 5000000ull /* TLS 1.3 tickets: this soon after the handshake, */
#define TICKETS_SPAN_NS 2000000ull  /* all within this, */
#define TICKETS_MAX_BYTES 4096      /* this many bytes at most */

/* Takes the arrivals of exchange ix out of it (and their reads): they were not its response. */
static void unassign(struct build *b, uint32_t ix, size_t first_read)
{
	struct ls_watch *w = b->w;
	struct ls_watch_exchange *x = &w->ex[ix];
	size_t kept = first_read;

	for (size_t i = 0; i < b->n_arr; i++)
		if (b->arr[i].ex == ix)
			b->arr[i].ex = UINT32_MAX;
	for (size_t i = first_read; i < w->n_reads; i++)
		if (w->reads[i].ex != ix)
			w->reads[kept++] = w->reads[i];
	w->n_reads = kept;
	x->first_byte_ns = x->first_byte_read_ns = x->last_byte_ns = x->last_read_ns = 0;
	x->resp_bytes = x->n_reads = 0;
}

/* The first exchange after a TLS 1.3 handshake got a few KiB at once soon after the handshake,
 * and then the harness writes again: those were the server's session tickets (sent when it read
 * the client's Finished), come while the harness was still writing its request (head, then
 * body). An HTTP server answers only a whole request. */
static int session_tickets(struct build *b, struct walk *k)
{
	struct ls_watch_exchange *x = &b->w->ex[k->cur];

	if (!k->tls13 || x->nth || !k->c.tls_end_ns || x->resp_bytes > TICKETS_MAX_BYTES ||
	    x->first_byte_ns < k->c.tls_end_ns || x->first_byte_ns - k->c.tls_end_ns > TICKETS_AFTER_NS ||
	    x->last_byte_ns - x->first_byte_ns > TICKETS_SPAN_NS)
		return 0;
	unassign(b, k->cur, k->first_read);
	return 1;
}

/* A send starts: the request's first byte is queued now, before any reply can come (on
 * loopback the reply can arrive before sock_send_length fires). */
static int on_send_start(struct build *b, struct walk *k, const struct ls_event *e)
{
	if (k->send_open)
		return 0; /* more skbs of the same sendmsg */
	k->send_open = 1;
	k->send_taken = 0;
	if (k->in_handshake)
		k->hs_last_send = 1;
	if (k->in_handshake || (k->has_tls_write && !k->write_pending &&
				(k->cur == UINT32_MAX || b->w->ex[k->cur].first_byte_ns))) {
		if (!k->in_handshake && k->c.tls_end_ns && k->cur == UINT32_MAX)
			k->tls13 = 1; /* the client's Finished after the call (memory BIO): 1-RTT, TLS 1.3 */
		return 0; /* TLS protocol bytes, not a request */
	}
	k->send_taken = 1;
	k->write_pending = 0; /* one SSL_write, one request: a later unasked send is TLS's own */
	if (k->cur != UINT32_MAX && b->w->ex[k->cur].first_byte_ns && session_tickets(b, k))
		return 0; /* the request goes on */
	if (k->cur == UINT32_MAX || b->w->ex[k->cur].first_byte_ns)
		return new_exchange(b, k, e->ts_ns);
	return 0;
}

static void on_send_end(struct build *b, struct walk *k, const struct ls_event *e)
{
	int taken = k->send_taken;

	k->send_open = k->send_taken = 0;
	if (!taken || k->cur == UINT32_MAX)
		return;
	struct ls_watch_exchange *x = &b->w->ex[k->cur];
	x->sent_ns = e->ts_ns;
	x->req_bytes += e->len;
	x->req_end_seq = e->seq;
}

static int on_arrived(struct build *b, struct walk *k, const struct ls_event *e)
{
	uint32_t from = k->rcv_known ? k->rcv_seen : e->aux;

	if (k->rcv_known && (int32_t)(e->seq - k->rcv_seen) <= 0)
		return 0; /* nothing new (a FIN, a duplicate wake-up) */
	if (!k->rcv_known && e->seq == from)
		return 0;
	k->rcv_seen = e->seq;
	k->rcv_known = 1;
	if (k->in_handshake)
		k->hs_last_send = 0;
	if (grow((void **)&b->arr, &b->cap_arr, b->n_arr + 1, sizeof(*b->arr)))
		return -ENOMEM;
	b->arr[b->n_arr++] = (struct arrival){ e->ts_ns, from, e->seq, k->cur };

	if (k->cur == UINT32_MAX)
		return 0;
	struct ls_watch_exchange *x = &b->w->ex[k->cur];
	if (!x->first_byte_ns)
		x->first_byte_ns = e->ts_ns;
	x->last_byte_ns = e->ts_ns;
	x->resp_bytes += e->seq - from;
	return 0;
}

static int on_read(struct build *b, struct walk *k, const struct ls_event *e)
{
	struct ls_watch *w = b->w;
	uint32_t start = e->seq - e->len;
	const struct arrival *a = NULL;

	k->send_open = 0; /* a sendmsg that sent nothing (EAGAIN) has no SEND_END: it ended before this */
	for (size_t i = b->n_arr; i-- > 0;) { /* the arrival that brought byte `start` */
		if ((int32_t)(b->arr[i].to - start) > 0 && (int32_t)(start - b->arr[i].from) >= 0) {
			a = &b->arr[i];
			break;
		}
	}
	if (!a || a->ex == UINT32_MAX || e->ts_ns < a->ts)
		return 0; /* handshake bytes, or a read of bytes from before the watch */
	if (grow((void **)&w->reads, &b->cap_reads, w->n_reads + 1, sizeof(*w->reads)))
		return -ENOMEM;
	w->reads[w->n_reads++] = (struct ls_watch_read){ e->ts_ns, a->ts, a->ex, e->len, e->seq };
	struct ls_watch_exchange *x = &w->ex[a->ex];
	if (!x->n_reads++)
		x->first_read = (uint32_t)(w->n_reads - 1);
	if (!x->first_byte_read_ns)
		x->first_byte_read_ns = e->ts_ns;
	x->last_read_ns = e->ts_ns;
	return 0;
}

static void on_state(struct walk *k, const struct ls_event *e)
{
	unsigned old = e->aux >> 8 & 0xff, new = e->aux & 0xff;

	if (new == LS_TCP_FIN_WAIT1 && !k->c.closed_by)
		k->c.closed_by = 1;
	if (new == LS_TCP_CLOSE_WAIT && !k->c.closed_by)
		k->c.closed_by = 2;
	if (new == LS_TCP_TIME_WAIT || new == LS_TCP_FIN_WAIT2 || old == LS_TCP_FIN_WAIT2)
		k->c.time_wait = 1;
	if (!k->closing_ns && (new == LS_TCP_FIN_WAIT1 || new == LS_TCP_CLOSE_WAIT || new == 7))
		k->closing_ns = e->ts_ns;
}

static int on_event(struct build *b, struct walk *k, const struct ls_event *e)
{
	switch (e->kind) {
	case LS_EV_CONNECT: k->c.connect_ns = e->ts_ns; break;
	case LS_EV_ESTABLISHED: k->c.established_ns = e->ts_ns; break;
	case LS_EV_TLS_START:
		if (!k->c.tls_start_ns)
			k->c.tls_start_ns = e->ts_ns;
		k->c.n_handshakes++;
		k->in_handshake = 1;
		break;
	case LS_EV_TLS_END:
		if (!k->c.tls_end_ns)
			k->c.tls_end_ns = e->ts_ns;
		if (k->in_handshake && k->hs_last_send)
			k->tls13 = 1; /* the client's Finished inside the call (socket BIO, curl) */
		k->in_handshake = 0;
		break;
	case LS_EV_TLS_WRITE: k->write_pending = 1; break;
	case LS_EV_SEND_START: return on_send_start(b, k, e);
	case LS_EV_SEND_END: on_send_end(b, k, e); break;
	case LS_EV_ARRIVED: return on_arrived(b, k, e);
	case LS_EV_READ: return on_read(b, k, e);
	case LS_EV_STATE: on_state(k, e); break;
	case LS_EV_CLOSE:
		k->c.close_ns = e->ts_ns;
		on_state(k, e);
		break;
	default: break;
	}
	return 0;
}

#define CLOSE_NOTIFY_MAX_BYTES 64    /* a TLS alert record: 24 bytes in TLS 1.3, 31 in 1.2 (GCM) */
#define CLOSE_NOTIFY_NEAR_NS 1000000ull

/* On a TLS socket, a last small arrival next to the close is the peer's close_notify alert,
 * not response bytes: it leaves its exchange (and its reads). */
static void drop_close_notify(struct build *b, struct walk *k, size_t first_read)
{
	struct ls_watch *w = b->w;
	struct ls_watch_arrival *a = b->n_arr ? &b->arr[b->n_arr - 1] : NULL;

	if (!a || a->ex == UINT32_MAX || !k->closing_ns || a->to - a->from > CLOSE_NOTIFY_MAX_BYTES ||
	    (a->ts > k->closing_ns ? a->ts - k->closing_ns : k->closing_ns - a->ts) > CLOSE_NOTIFY_NEAR_NS)
		return;
	struct ls_watch_exchange *x = &w->ex[a->ex];
	x->resp_bytes -= a->to - a->from;
	x->last_byte_ns = 0;
	for (size_t i = 0; i + 1 < b->n_arr; i++)
		if (b->arr[i].ex == a->ex)
			x->last_byte_ns = b->arr[i].ts;
	size_t kept = first_read;
	for (size_t i = first_read; i < w->n_reads; i++) {
		if (w->reads[i].ex == a->ex && w->reads[i].arrived_ns == a->ts) {
			x->n_reads--;
			continue;
		}
		w->reads[kept++] = w->reads[i];
	}
	w->n_reads = kept;
	x->last_read_ns = 0;
	for (size_t i = first_read; i < w->n_reads; i++)
		if (w->reads[i].ex == a->ex)
			x->last_read_ns = w->reads[i].read_ns;
	if (!x->last_byte_ns) /* the exchange was only that alert */
		x->first_byte_ns = x->first_byte_read_ns = 0;
	a->ex = UINT32_MAX;
}

/* TLS_START is emitted with TLS_END, stamped at the handshake's first entry: the store has
 * it in time order, before the handshake's own sends. */
static int walk_socket(struct build *b, const struct ls_sock_events *s)
{
	struct walk k = { .cur = UINT32_MAX };
	struct ls_watch *w = b->w;
	int err = 0;

	k.c.cookie = s->cookie;
	k.c.first_ex = (uint32_t)w->n_ex;
	for (size_t i = 0; i < s->n; i++) {
		const struct ls_event *e = &s->ev[i];
		if (e->kind == LS_EV_TLS_WRITE)
			k.has_tls_write = 1;
		if (!k.c.tgid && e->tgid)
			k.c.tgid = e->tgid;
		if (!k.c.lport && e->lport)
			k.c.lport = e->lport;
		if (!k.c.rport && e->rport)
			k.c.rport = e->rport;
	}
	b->n_arr = 0;
	size_t first_read = w->n_reads;
	k.first_read = first_read;
	for (size_t i = 0; i < s->n && !err; i++)
		err = on_event(b, &k, &s->ev[i]);
	if (!err && k.has_tls_write)
		drop_close_notify(b, &k, first_read);
	for (uint32_t i = 0; i < k.c.n_ex && !err; i++)
		err = ls_watch_split(b, k.c.first_ex + i, first_read);
	if (err)
		return err;
	if (!k.c.n_ex) {
		w->n_conns_no_ex++;
		return 0;
	}
	if (grow((void **)&w->conns, &b->cap_conns, w->n_conns + 1, sizeof(*w->conns)))
		return -ENOMEM;
	w->conns[w->n_conns++] = k.c;
	return 0;
}

int ls_watch_build(const struct ls_evstore *ev, const struct ls_watch_opts *o, struct ls_watch *w)
{
	struct build b = { .w = w };
	int err = 0;

	memset(w, 0, sizeof(*w));
	for (size_t i = 0; ev && i < ls_evstore_sockets(ev) && !err; i++) {
		const struct ls_sock_events *s = ls_evstore_at(ev, i);
		if (!s->cookie) {
			for (size_t j = 0; j < s->n; j++)
				if (s->ev[j].kind == LS_EV_TLS_END)
					w->tls_unlinked++;
			continue;
		}
		for (size_t j = 0; j < s->n && !w->have_server; j++)
			if (s->ev[j].role == LS_ROLE_SERVER)
				w->have_server = 1;
		if (wanted(s, o))
			err = walk_socket(&b, s);
	}
	free(b.arr);
	if (!err) {
		ls_watch_heads_by_server(w);
		ls_watch_join_server(w, ev);
	}
	if (err)
		ls_watch_free(w);
	return err;
}

void ls_watch_free(struct ls_watch *w)
{
	free(w->conns);
	free(w->ex);
	free(w->reads);
	free(w->gaps);
	memset(w, 0, sizeof(*w));
}
