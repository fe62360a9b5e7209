/* watch_split.c — inside one exchange: its arrivals grouped in bursts (LS_WATCH_BURST_NS),
 * the response head told apart, the first frame, the arrival-to-arrival gaps; and the watched
 * server's side of each exchange. The head rule (timing and sizes: the probes never read payload):
 * servers that stream (vLLM, SGLang, the simulator) write the response head as soon as they
 * take the request, and the first token a step or more later. The first burst is the head when
 * a second one follows and the first came in under a quarter of the time to the second; or when
 * the gap after it stands out from the stream's own (over 4 times the median of the later
 * gaps) and is longer than the wait for it: llama.cpp's llama-server writes its head once it has
 * tokenized the prompt (~3 ms on one thread) and the first token after the prompt step (~8 ms),
 * which the quarter rule took for a first frame, so the prompt step was counted as an
 * inter-token gap and left out of TTFT. Across a server's responses, the size of the heads
 * these found tells the rest (ls_watch_heads_by_server). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "watch/watch_int.h"

#define grow ls_watch_grow

static int seq_after(uint32_t a, uint32_t b) /* a > b in TCP sequence space */
{
	return (int32_t)(a - b) > 0;
}

/* The first burst of exchange ix is its head: the first frame is the second burst, and the
 * head's gap is not an inter-token gap. */
static void head_apart(struct ls_watch *w, uint32_t ix)
{
	struct ls_watch_exchange *x = &w->ex[ix];
	size_t g = x->first_gap;

	if (x->head_apart || x->n_bursts < 2 || !x->n_gaps)
		return;
	x->head_apart = 1;
	x->first_data_ns = x->burst2_ns;
	x->data_seq = x->burst2_seq;
	memmove(&w->gaps[g], &w->gaps[g + 1], (w->n_gaps - g - 1) * sizeof(*w->gaps));
	w->n_gaps--;
	x->n_gaps--;
	for (size_t i = ix + 1; i < w->n_ex; i++)
		if (w->ex[i].first_gap > g) /* during the build: only this socket's, not yet split */
			w->ex[i].first_gap--;
}

static void first_data_read(struct ls_watch *w, uint32_t ix, size_t first_read)
{
	struct ls_watch_exchange *x = &w->ex[ix];

	x->first_data_read_ns = 0;
	if (x->n_reads && x->first_read > first_read)
		first_read = x->first_read;
	for (size_t i = first_read; i < w->n_reads; i++)
		if (w->reads[i].ex == ix && seq_after(w->reads[i].end_seq, x->data_seq)) {
			x->first_data_read_ns = w->reads[i].read_ns;
			break;
		}
}

/* The size of the heads the timing rule found on a server port: a server's head is the same
 * bytes for every response, so the size most of them share, when two or more share it; 0 else.
 * Most, not all: a first frame that followed its head within the preamble joins it in one first
 * burst, which the timing rule can still take for a head (llama-server, 1 of 6 seen). */
static uint32_t head_size(const struct ls_watch *w, uint16_t port)
{
	uint32_t size = 0, votes = 0, n = 0, same = 0;
	for (size_t j = 0; j < w->n_ex; j++) { /* Boyer-Moore majority vote */
		const struct ls_watch_exchange *x = &w->ex[j];
		if (w->conns[x->conn].rport != port || x->head_apart != 1)
			continue;
		n++;
		if (!votes)
			size = x->burst1_bytes;
		votes += x->burst1_bytes == size ? 1 : (uint32_t)-1;
	}
	for (size_t j = 0; j < w->n_ex; j++) {
		const struct ls_watch_exchange *x = &w->ex[j];
		same += w->conns[x->conn].rport == port && x->head_apart == 1 && x->burst1_bytes == size;
	}
	return same >= 2 && 2 * same > n ? size : 0;
}

/* What the server-wide rule makes of exchange x, whose head the timing rule did not find,
 * when heads are `size` bytes (0: not known) and most of its server's responses had one
 * (majority): 2, the head is its first burst (the frame is the next burst); 3, the head is the
 * first `size` bytes of its first burst, which a frame arriving within the preamble joined;
 * 0, no head apart. */
static int head_by_server(const struct ls_watch_exchange *x, uint32_t size, int majority)
{
	if (x->head_apart)
		return x->head_apart;
	if (size && x->arr2_off == size && (x->n_bursts < 2 || x->burst1_bytes != size))
		return 3;
	if (x->n_bursts >= 2 && x->n_gaps && (majority || (size && x->burst1_bytes == size)))
		return 2;
	return 0;
}

/* A server writes its head apart from the first frame for every response or for none: when
 * most responses from one server port had it apart, so do the others that came in two or more
 * bursts (a busy server's head can come late enough to miss the timing rule). And a server's
 * head is the same bytes each time: when the timing rule found heads of one size, a first burst
 * of that size is a head too (a frame with it would make it longer), and so are the first that
 * many bytes of a longer first burst when they came in their own arrival. (llama-server batching
 * requests writes the first token one batch step after its head, or within the preamble: the
 * timing rule found 3 of 16 heads.) */
void ls_watch_heads_by_server(struct ls_watch *w)
{
	for (size_t i = 0; i < w->n_conns; i++) {
		uint16_t port = w->conns[i].rport;
		size_t apart = 0, multi = 0, j;
		for (j = 0; j < i && w->conns[j].rport != port; j++)
			;
		if (j < i)
			continue; /* this port was done */
		for (j = 0; j < w->n_ex; j++)
			if (w->conns[w->ex[j].conn].rport == port && w->ex[j].n_bursts >= 2) {
				multi++;
				apart += w->ex[j].head_apart;
			}
		uint32_t size = head_size(w, port);
		int majority = 2 * apart > multi;
		if (!majority && !size)
			continue;
		for (j = 0; j < w->n_ex; j++)
			if (w->conns[w->ex[j].conn].rport == port)
				w->ex[j].head_apart = head_by_server(&w->ex[j], size, majority); /* done below */
	}
	size_t out = 0;
	for (size_t j = 0; j < w->n_ex; j++) {
		struct ls_watch_exchange *x = &w->ex[j];
		size_t from = x->first_gap, n = x->n_gaps;
		if (x->head_apart == 2) {
			x->head_apart = 1;
			x->first_data_ns = x->burst2_ns;
			x->data_seq = x->burst2_seq;
			from++;
			n--;
			first_data_read(w, (uint32_t)j, 0);
		} else if (x->head_apart == 3) { /* inside the first burst: no gap was the head's */
			x->head_apart = 1;
			x->first_data_ns = x->arr2_ns;
			x->data_seq += x->arr2_off;
			first_data_read(w, (uint32_t)j, 0);
		}
		if (n)
			memmove(&w->gaps[out], &w->gaps[from], n * sizeof(*w->gaps));
		x->first_gap = (uint32_t)out;
		x->n_gaps = (uint32_t)n;
		out += n;
	}
	w->n_gaps = out;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* 1 when exchange x's first gap is over 4 times the median of the gaps after it (the first 63
 * of them: enough for a median) and longer than to_first, the wait for the first burst. */
static int first_gap_stands_out(const struct ls_watch *w, const struct ls_watch_exchange *x, uint64_t to_first)
{
	uint64_t later[63];
	size_t n = x->n_gaps - 1;
	if (x->n_gaps < 3)
		return 0;
	if (n > 63)
		n = 63;
	memcpy(later, &w->gaps[x->first_gap + 1], n * sizeof(*later));
	qsort(later, n, sizeof(*later), cmp_u64);
	uint64_t first = w->gaps[x->first_gap];
	return first > 4 * later[n / 2] && first > to_first;
}

int ls_watch_split(struct build *b, uint32_t ix, size_t first_read)
{
	struct ls_watch *w = b->w;
	struct ls_watch_exchange *x = &w->ex[ix];
	uint64_t burst_ts[2] = { 0, 0 }, prev_ts = 0, burst_start = 0;
	uint32_t burst_from[2] = { 0, 0 };
	size_t first_gap = w->n_gaps;

	x->first_gap = (uint32_t)first_gap;
	for (size_t i = 0; i < b->n_arr; i++) {
		const struct ls_watch_arrival *a = &b->arr[i];
		if (a->ex != ix)
			continue;
		/* the first burst spans LS_WATCH_PREAMBLE_NS from its start: TLS 1.3 tickets and the head */
		uint64_t apart = x->n_bursts == 1 ? (a->ts - burst_ts[0] > LS_WATCH_PREAMBLE_NS) :
						    (a->ts - prev_ts > LS_WATCH_BURST_NS);
		if (x->n_bursts == 1 && !apart && !x->arr2_off && a->from != burst_from[0]) {
			x->arr2_ns = a->ts; /* where the head ends, if it does here (heads_by_server) */
			x->arr2_off = a->from - burst_from[0];
		}
		if (!x->n_bursts || apart) {
			if (x->n_bursts < 2) {
				burst_ts[x->n_bursts] = a->ts;
				burst_from[x->n_bursts] = a->from;
			}
			if (x->n_bursts) {
				if (grow((void **)&w->gaps, &b->cap_gaps, w->n_gaps + 1, sizeof(*w->gaps)))
					return -ENOMEM;
				w->gaps[w->n_gaps++] = a->ts - burst_start;
			}
			burst_start = a->ts;
			x->n_bursts++;
		}
		prev_ts = a->ts;
	}
	x->n_gaps = (uint32_t)(w->n_gaps - first_gap);
	if (!x->n_bursts)
		return 0;
	x->first_data_ns = burst_ts[0];
	x->data_seq = burst_from[0];
	x->burst2_ns = burst_ts[1];
	x->burst2_seq = burst_from[1];
	x->burst1_bytes = x->n_bursts >= 2 ? burst_from[1] - burst_from[0] : 0;
	uint64_t to_first = burst_ts[0] > x->sent_ns ? burst_ts[0] - x->sent_ns : 0;
	if (x->n_bursts >= 2 && x->sent_ns &&
	    (4 * to_first < burst_ts[1] - burst_ts[0] || first_gap_stands_out(w, x, to_first)))
		head_apart(w, ix);
	first_data_read(w, ix, first_read);
	return 0;
}

/* A server socket's ports (from its first event that has them). */
struct srv_end {
	uint16_t lport, rport;
	const struct ls_sock_events *s;
};

static size_t server_ends(const struct ls_evstore *ev, struct srv_end *out)
{
	size_t n = 0;

	for (size_t i = 0; i < ls_evstore_sockets(ev); i++) {
		const struct ls_sock_events *s = ls_evstore_at(ev, i);
		for (size_t j = 0; j < s->n && j < 4; j++) /* the role is the same on every event */
			if (s->ev[j].role == LS_ROLE_SERVER && s->ev[j].lport) {
				out[n++] = (struct srv_end){ s->ev[j].lport, s->ev[j].rport, s };
				break;
			}
	}
	return n;
}

/* Both ends share the sequence space: the server has read the request when its copied_seq
 * reaches the harness's write_seq after it, and it writes the first frame when its write_seq
 * reaches the frame's first byte. */
static void server_side(struct ls_watch_exchange *x, const struct ls_sock_events *s)
{
	for (size_t j = 0; j < s->n; j++) {
		const struct ls_event *e = &s->ev[j];
		if (!x->srv_read_ns && e->kind == LS_EV_READ && e->ts_ns >= x->send_first_ns &&
		    !seq_after(x->req_end_seq, e->seq))
			x->srv_read_ns = e->ts_ns;
		if (!x->srv_write_ns && x->first_data_ns && e->kind == LS_EV_SEND_START && e->seq == x->data_seq &&
		    e->ts_ns <= x->first_data_ns)
			x->srv_write_ns = e->ts_ns; /* the send that queued the frame's first byte */
	}
}

void ls_watch_join_server(struct ls_watch *w, const struct ls_evstore *ev)
{
	struct srv_end *ends;
	size_t n;

	if (!w->have_server || !ev || !(ends = malloc((ls_evstore_sockets(ev) + 1) * sizeof(*ends))))
		return;
	n = server_ends(ev, ends);
	for (size_t i = 0; i < w->n_conns; i++) {
		struct ls_watch_conn *c = &w->conns[i];
		const struct ls_sock_events *s = NULL;
		uint64_t ref = c->established_ns ? c->established_ns : w->ex[c->first_ex].send_first_ns, best = UINT64_MAX;
		for (size_t k = 0; k < n; k++) { /* ports are reused: the one that began nearest this one */
			if (ends[k].lport != c->rport || ends[k].rport != c->lport)
				continue;
			uint64_t t = ends[k].s->ev[0].ts_ns, d = t > ref ? t - ref : ref - t;
			if (d < best) {
				best = d;
				s = ends[k].s;
			}
		}
		if (!s)
			continue;
		c->srv_cookie = s->cookie;
		for (uint32_t k = 0; k < c->n_ex; k++)
			server_side(&w->ex[c->first_ex + k], s);
	}
	free(ends);
}
