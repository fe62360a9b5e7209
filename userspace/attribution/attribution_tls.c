/* attribution_tls.c — a fresh connection's handshake from both sockets' kernel stamps: when the
 * SYN left, and the TLS handshake's round trips.
 *
 * Between SSL_connect's first entry (TLS_START) and its return (TLS_END) the client writes a
 * flight, waits for the server's reply, reads it, computes, writes the next flight, ... Seen on
 * the client socket these are runs of SEND_START with READs between them. A round is one client
 * flight (the writes with no read between them: it left at the send start of its last write and
 * ends at that write's write_seq + len) and the reply the client read before its next write (it
 * ends at the last read's copied_seq). A flight the client does not wait for (TLS 1.3's
 * Finished, after which SSL_connect returns) makes no round: from it to the return is client
 * CPU. Server bytes the client did not read before the return (TLS 1.3's session tickets) are
 * no reply. Both ends share each direction's sequence space, so:
 *   the client kernel had the reply:  first client ARRIVED after the flight left, rcv_nxt >= reply end
 *   the server kernel had the flight: first server ARRIVED after it left, rcv_nxt >= flight end
 *   the server's reply left:          last server SEND_START before the reply arrived whose
 *                                     write_seq < reply end (the write that carried its end)
 * Without server events the server stamps stay 0 and the round trip is network+server. */
#include "attribution/attribution_int.h"

static int seq_ge(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) >= 0;
}

struct flight {
	uint64_t sent_ns;
	uint32_t end_seq;   /* client write_seq after the flight */
	uint32_t reply_end; /* client copied_seq after the reply */
};

/* The client's flights that got a reply inside [from, to]: their number, or -1 past max. */
static int client_flights(const struct ls_sock_events *cs, uint64_t from, uint64_t to, struct flight *fl, int max)
{
	struct flight cur = { 0 };
	int n = 0, open = 0, replied = 0;

	for (size_t i = ls_sock_events_from(cs, from); i < cs->n && cs->ev[i].ts_ns <= to; i++) {
		const struct ls_event *e = &cs->ev[i];
		if (e->kind == LS_EV_SEND_START) {
			if (open && replied) {
				if (n == max)
					return -1;
				fl[n++] = cur;
			}
			cur.sent_ns = e->ts_ns; /* a later write of the same flight moves its departure */
			cur.end_seq = e->seq + e->len;
			open = 1;
			replied = 0;
		} else if (e->kind == LS_EV_READ && open) {
			cur.reply_end = e->seq;
			replied = 1;
		}
	}
	if (open && replied) {
		if (n == max)
			return -1;
		fl[n++] = cur;
	}
	return n;
}

/* First ARRIVED of s in [from, to] whose rcv_nxt reaches seq; 0 when none. */
static uint64_t arrival(const struct ls_sock_events *s, uint64_t from, uint64_t to, uint32_t seq)
{
	for (size_t i = s ? ls_sock_events_from(s, from) : 0; s && i < s->n && s->ev[i].ts_ns <= to; i++)
		if (s->ev[i].kind == LS_EV_ARRIVED && seq_ge(s->ev[i].seq, seq))
			return s->ev[i].ts_ns;
	return 0;
}

/* Last SEND_START of s in [from, to] that starts before seq (carries the byte before it). */
static uint64_t departure(const struct ls_sock_events *s, uint64_t from, uint64_t to, uint32_t seq)
{
	uint64_t last = 0;

	for (size_t i = s ? ls_sock_events_from(s, from) : 0; s && i < s->n && s->ev[i].ts_ns <= to; i++)
		if (s->ev[i].kind == LS_EV_SEND_START && !seq_ge(s->ev[i].seq, seq))
			last = s->ev[i].ts_ns;
	return last;
}

static void tls_rounds(const struct ls_sock_events *cs, const struct ls_sock_events *ss, struct ls_req_attr *a)
{
	struct flight fl[LS_TLS_ROUNDS_MAX];
	int n = client_flights(cs, a->tls_start_ns, a->tls_end_ns, fl, LS_TLS_ROUNDS_MAX);

	if (n <= 0)
		return; /* none seen, or more than a handshake has: the span stays network */
	for (int i = 0; i < n; i++) {
		struct ls_tls_round *t = &a->tls_rounds[i];
		t->client_sent_ns = fl[i].sent_ns;
		t->client_arrived_ns = arrival(cs, fl[i].sent_ns, a->tls_end_ns, fl[i].reply_end);
		uint64_t by = t->client_arrived_ns ? t->client_arrived_ns : a->tls_end_ns;
		t->server_arrived_ns = arrival(ss, fl[i].sent_ns, by, fl[i].end_seq);
		t->server_sent_ns = departure(ss, t->server_arrived_ns ? t->server_arrived_ns : fl[i].sent_ns, by,
					      fl[i].reply_end);
	}
	a->n_tls_rounds = (uint32_t)n;
}

void ls_attr_handshake(const struct ls_attr_index *x, const struct ls_sock_events *cs, struct ls_req_attr *a)
{
	const struct ls_sock_events *ss;

	if (!cs || (a->flags & LS_ATTR_REUSED))
		return;
	ss = a->server_cookie ? ls_evstore_find(x->store, a->server_cookie) : NULL;
	/* CONNECT carries connect() -> SYN_SENT in len when the connect() was seen. */
	for (size_t i = ls_sock_events_from(cs, a->connect_call_ns); a->connect_call_ns && i < cs->n; i++)
		if (cs->ev[i].kind == LS_EV_CONNECT && cs->ev[i].ts_ns == a->connect_call_ns) {
			if (cs->ev[i].len && cs->ev[i].aux != (uint32_t)-1)
				a->syn_sent_ns = a->connect_call_ns + cs->ev[i].len;
			break;
		}
	if (a->syn_sent_ns && a->established_ns && a->syn_sent_ns > a->established_ns)
		a->syn_sent_ns = 0; /* not causal: leave connect() -> ESTABLISHED whole */
	if (a->tls_start_ns && a->tls_end_ns > a->tls_start_ns)
		tls_rounds(cs, ss, a);
}
