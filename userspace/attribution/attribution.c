/* attribution.c — records + probe events (+ GPU steps) -> the parts of every latency window.
 *
 * A window (TTFT, one inter-token gap, E2EL) runs from a start stamp to an end stamp. Inside
 * it, the request passes a chain of boundaries in causal order, each closing an interval that
 * belongs to one part:
 *
 *   admitted (client: slot wait) -> started (client) -> connect() (client: curl setup)
 *   -> SYN left (client: its kernel) -> ESTABLISHED (network) -> TLS start (client: curl
 *   noticing, SSL setup) -> per round trip of the handshake: client flight left (client CPU)
 *   -> server kernel had it (network) -> server's reply left (server CPU) -> client kernel had
 *   it (network); -> TLS end (client CPU)
 *   -> request send start (client) -> server read the request (network)
 *   -> server send start of the frame (server) -> client kernel had the frame (network)
 *   -> user space read it (client: waiting in the kernel) -> harness stamp (client)
 *
 * Every part is the overlap of its interval with the window, so the parts add up exactly to
 * the window's length. A boundary with no event (reused connection, server not watched, event
 * lost) merges its interval into the next one: network with server is "network+server", any
 * other mix "unattributed". A boundary earlier than the one before it marks the request
 * LS_ATTR_DISORDER (nothing is moved backwards; the empty interval just counts zero).
 * Which event is which boundary: attribution_seq.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "attribution/attribution_int.h"
#include "attribution/engine_steps.h"
#include "base/stats.h"

/* ---- GPU steps as a sorted union of intervals ---- */

struct gpu_union {
	uint64_t (*iv)[2];
	size_t n;
};

static int cmp_iv(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0];
}

static int gpu_union_build(struct gpu_union *g, const struct ls_gpu_step *steps, size_t n)
{
	g->n = 0;
	g->iv = NULL;
	if (!n)
		return 0;
	g->iv = calloc(n, sizeof(*g->iv));
	if (!g->iv)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		g->iv[i][0] = steps[i].start_ns;
		g->iv[i][1] = steps[i].end_ns > steps[i].start_ns ? steps[i].end_ns : steps[i].start_ns;
	}
	qsort(g->iv, n, sizeof(*g->iv), cmp_iv);
	for (size_t i = 0; i < n; i++) {
		if (g->n && g->iv[i][0] <= g->iv[g->n - 1][1]) {
			if (g->iv[i][1] > g->iv[g->n - 1][1])
				g->iv[g->n - 1][1] = g->iv[i][1];
		} else {
			g->iv[g->n][0] = g->iv[i][0];
			g->iv[g->n][1] = g->iv[i][1];
			g->n++;
		}
	}
	return 0;
}

static uint64_t gpu_overlap(const struct gpu_union *g, uint64_t from, uint64_t to)
{
	size_t lo = 0, hi = g->n;
	uint64_t sum = 0;

	while (lo < hi) { /* first interval ending after from */
		size_t mid = lo + (hi - lo) / 2;
		if (g->iv[mid][1] <= from)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < g->n && g->iv[i][0] < to; i++) {
		uint64_t a = g->iv[i][0] > from ? g->iv[i][0] : from;
		uint64_t b = g->iv[i][1] < to ? g->iv[i][1] : to;
		if (b > a)
			sum += b - a;
	}
	return sum;
}

/* ---- the chain of boundaries through one window ---- */

struct chain {
	uint64_t end, cursor, last_b;
	unsigned pending;       /* parts of boundaries that had no event */
	struct ls_parts *out;
	const struct gpu_union *gpu;
	const struct ls_engine_map *eng; /* the request's engine session splits its server time */
	size_t sess;
	uint64_t frontend_end;           /* its HTTP thread's hand-off (0 unknown) */
	int disorder;
};

static void chain_init(struct chain *c, uint64_t start, uint64_t end, struct ls_parts *out,
		       const struct gpu_union *gpu)
{
	memset(out, 0, sizeof(*out));
	c->end = end;
	c->cursor = start;
	c->last_b = 0;
	c->pending = 0;
	c->out = out;
	c->gpu = gpu && gpu->n ? gpu : NULL;
	c->eng = NULL;
	c->sess = SIZE_MAX;
	c->frontend_end = 0;
	c->disorder = 0;
}

/* Server time of this window is split by the request's engine session (SIZE_MAX: none) and its
 * frontend's end. */
static void chain_engine(struct chain *c, const struct ls_engine_map *eng, size_t sess, uint64_t frontend_end)
{
	c->eng = sess != SIZE_MAX ? eng : NULL;
	c->sess = sess;
	c->frontend_end = frontend_end;
}

/* [cursor, t] of server time: before the request's first engine step, frontend up to its HTTP
 * thread's hand-off and queue after it; prefill and decode inside its steps; the rest server
 * (sampling, other requests' steps after its start, writing): the five add up to the interval. */
static void server_split(struct chain *c, uint64_t t)
{
	uint64_t frontend, queue, prefill, decode;

	ls_engine_split(c->eng, c->sess, c->frontend_end, c->cursor, t, &frontend, &queue, &prefill, &decode);
	c->out->ns[LS_PART_FRONTEND] += frontend;
	c->out->ns[LS_PART_QUEUE] += queue;
	c->out->ns[LS_PART_PREFILL] += prefill;
	c->out->ns[LS_PART_DECODE] += decode;
	c->out->ns[LS_PART_SERVER] += t - c->cursor - frontend - queue - prefill - decode;
}

static enum ls_part merged(unsigned mask)
{
	const unsigned net_srv = 1u << LS_PART_NETWORK | 1u << LS_PART_SERVER | 1u << LS_PART_NETWORK_SERVER;

	if ((mask & (mask - 1)) == 0)
		return (enum ls_part)__builtin_ctz(mask);
	if ((mask & ~net_srv) == 0)
		return LS_PART_NETWORK_SERVER;
	return LS_PART_UNATTRIBUTED;
}

/* The interval from the previous boundary to t belongs to part (t = 0: no event). */
static void chain_to(struct chain *c, uint64_t t, enum ls_part part)
{
	unsigned mask = c->pending | 1u << part;
	enum ls_part p;

	if (!t) {
		c->pending = mask;
		return;
	}
	c->pending = 0;
	if (t < c->last_b)
		c->disorder = 1;
	else
		c->last_b = t;
	if (t > c->end)
		t = c->end;
	if (t <= c->cursor)
		return;
	p = merged(mask);
	if (p == LS_PART_SERVER && c->eng) {
		server_split(c, t);
	} else if (p == LS_PART_SERVER && c->gpu) {
		uint64_t gpu = gpu_overlap(c->gpu, c->cursor, t);
		c->out->ns[LS_PART_GPU] += gpu;
		c->out->ns[LS_PART_QUEUE] += t - c->cursor - gpu;
	} else {
		c->out->ns[p] += t - c->cursor;
	}
	c->cursor = t;
}

/* A new causal sequence starts (the next frame): order is checked within each sequence. */
static void chain_sequence(struct chain *c)
{
	c->last_b = 0;
}

static void chain_finish(struct chain *c)
{
	chain_to(c, c->end, LS_PART_CLIENT);
}

struct ctx {
	const struct ls_attr_index *index; /* the store of the request's own process */
	struct gpu_union gpu;
	const struct ls_read_rules *rules;
	struct ls_engine_steps steps;      /* every source's steps, one record type */
	struct ls_engine_map map;          /* sessions of the uprobe steps, joined to requests */
	size_t sess;                       /* the current request's session, SIZE_MAX none */
};

/* The TLS handshake's round trips (attribution_tls.c), each: client flight -> server kernel
 * (network) -> server's reply leaves (server CPU) -> client kernel (network); between rounds
 * and after the last, client CPU. Without a server stamp a round trip is network+server; with
 * no round seen the handshake is network as a whole. The server's handshake CPU stays server
 * with GPU steps given: it is the TLS terminator's work, not a queue, and GPU steps of other
 * requests that overlap it are not its. */
static void chain_tls(struct chain *c, const struct ls_req_attr *a)
{
	const struct gpu_union *gpu = c->gpu;

	c->gpu = NULL;
	for (uint32_t i = 0; i < a->n_tls_rounds; i++) {
		const struct ls_tls_round *t = &a->tls_rounds[i];
		chain_to(c, t->client_sent_ns, LS_PART_CLIENT);
		chain_to(c, t->server_arrived_ns, LS_PART_NETWORK);
		chain_to(c, t->server_sent_ns, LS_PART_SERVER);
		chain_to(c, t->client_arrived_ns, LS_PART_NETWORK);
	}
	chain_to(c, a->tls_end_ns, a->n_tls_rounds ? LS_PART_CLIENT : LS_PART_NETWORK);
	c->gpu = gpu;
}

/* The request up to its first byte of response: slot wait, connect, TLS, request in flight. */
static void chain_request(struct chain *c, const struct ls_request *r, const struct ls_req_attr *a)
{
	chain_to(c, r->admitted_ns, LS_PART_CLIENT);
	chain_to(c, r->started_ns, LS_PART_CLIENT);
	if (!(a->flags & LS_ATTR_REUSED)) {
		chain_to(c, a->connect_call_ns, LS_PART_CLIENT);
		if (a->syn_sent_ns)
			chain_to(c, a->syn_sent_ns, LS_PART_CLIENT);
		chain_to(c, a->established_ns, LS_PART_NETWORK);
		if (a->tls_start_ns || (a->flags & LS_ATTR_NO_TLS_EVENTS)) {
			chain_to(c, a->tls_start_ns, LS_PART_CLIENT);
			chain_tls(c, a);
		}
	}
	chain_to(c, a->request_send_ns, LS_PART_CLIENT);
	chain_to(c, a->server_read_ns, LS_PART_NETWORK);
}

static void chain_frame(struct chain *c, const struct ls_frame_attr *fa, uint64_t stamp)
{
	chain_to(c, fa->server_write_ns, LS_PART_SERVER);
	chain_to(c, fa->kernel_ns, LS_PART_NETWORK);
	chain_to(c, fa->read_ns, LS_PART_CLIENT);
	chain_to(c, stamp, LS_PART_CLIENT);
}

/* A fresh connection's connect() -> ESTABLISHED and ESTABLISHED -> TLS done, split by the same
 * boundaries as TTFT (so the same intervals), each summing exactly to its span. */
static void handshake_parts(const struct ls_request *r, struct ls_req_attr *a)
{
	struct chain c;

	if (a->flags & LS_ATTR_REUSED)
		return;
	if (a->connect_call_ns && a->established_ns > a->connect_call_ns) {
		a->connect_span_ns = a->established_ns - a->connect_call_ns;
		chain_init(&c, a->connect_call_ns, a->established_ns, &a->connect, NULL);
		chain_request(&c, r, a);
		chain_finish(&c);
	}
	if (a->established_ns && a->tls_start_ns && a->tls_end_ns > a->established_ns) {
		a->tls_span_ns = a->tls_end_ns - a->established_ns;
		chain_init(&c, a->established_ns, a->tls_end_ns, &a->tls, NULL);
		chain_request(&c, r, a);
		chain_finish(&c);
	}
}

/* The request's kernel stamps (and tail: its last bytes read after its last frame). */
static int match_one(struct ctx *x, const struct ls_request *r, struct ls_req_attr *a, struct ls_frame_attr *tail)
{
	a->id = r->id;
	if (r->warmup)
		a->flags |= LS_ATTR_WARMUP;
	if (ls_attr_match(x->index, r, a, tail))
		return -ENOMEM;
	handshake_parts(r, a);
	return 0;
}

/* Its windows (TTFT, the gaps, E2EL) and their parts. */
static int attribute_one(struct ctx *x, const struct ls_request *r, struct ls_req_attr *a,
			 const struct ls_frame_attr *tail_in)
{
	struct ls_frame_attr tail = *tail_in;
	struct ls_req_view v;
	int first = -1;

	/* Windows, under the rules, for requests that produced a first token. */
	if (!ls_request_view(r, x->rules, &v)) {
		a->flags |= LS_ATTR_NOT_OK;
		return 0;
	}
	uint64_t origin = ls_origin_ns(r, x->rules->origin);
	struct chain c;
	int disorder = 0;

	for (uint32_t i = 0; i < r->n_frames && first < 0; i++)
		if (ls_frame_is_token(&r->frames[i], x->rules->ttft_gate))
			first = (int)i;
	if (first < 0 || origin > v.first_ns || origin > v.end_ns) {
		a->flags |= LS_ATTR_NOT_OK;
		return 0;
	}
	a->ttft_ns = v.first_ns - origin;
	chain_init(&c, origin, v.first_ns, &a->ttft, &x->gpu);
	chain_engine(&c, &x->map, x->sess, a->engine.frontend_end_ns);
	chain_request(&c, r, a);
	chain_frame(&c, &a->frames[first], r->frames[first].arrived_ns);
	chain_finish(&c);
	disorder |= c.disorder;

	a->gap_ns = calloc(r->n_frames + 1, sizeof(*a->gap_ns));
	a->gap_frame = calloc(r->n_frames + 1, sizeof(*a->gap_frame));
	a->gaps = calloc(r->n_frames + 1, sizeof(*a->gaps));
	if (!a->gap_ns || !a->gap_frame || !a->gaps)
		return -ENOMEM;
	for (uint32_t i = (uint32_t)first + 1, prev = (uint32_t)first; i < r->n_frames; i++) {
		uint64_t from = r->frames[prev].arrived_ns, to = r->frames[i].arrived_ns;
		if (!ls_frame_is_token(&r->frames[i], x->rules->ttft_gate))
			continue;
		prev = i;
		if (to < from)
			continue;
		a->gap_ns[a->n_gaps] = to - from;
		a->gap_frame[a->n_gaps] = i;
		chain_init(&c, from, to, &a->gaps[a->n_gaps], &x->gpu);
		chain_engine(&c, &x->map, x->sess, a->engine.frontend_end_ns);
		chain_frame(&c, &a->frames[i], to);
		chain_finish(&c);
		disorder |= c.disorder;
		a->n_gaps++;
	}

	a->e2el_ns = v.end_ns - origin;
	chain_init(&c, origin, v.end_ns, &a->e2el, &x->gpu);
	chain_engine(&c, &x->map, x->sess, a->engine.frontend_end_ns);
	chain_request(&c, r, a);
	for (uint32_t i = (uint32_t)first; i < r->n_frames && r->frames[i].arrived_ns <= v.end_ns; i++) {
		chain_sequence(&c);
		chain_frame(&c, &a->frames[i], r->frames[i].arrived_ns);
	}
	if (x->rules->e2el_end == LS_END_LAST_BYTE && r->finished_ns && tail.read_ns) {
		chain_sequence(&c); /* the response's last bytes, read after the last frame */
		chain_frame(&c, &tail, v.end_ns);
	}
	chain_finish(&c);
	disorder |= c.disorder;
	if (disorder)
		a->flags |= LS_ATTR_DISORDER;
	return 0;
}

static void req_attr_free(struct ls_req_attr *a)
{
	free(a->frames);
	free(a->gap_ns);
	free(a->gap_frame);
	free(a->gaps);
}

void ls_attribution_free(struct ls_attribution *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++)
		req_attr_free(&a->req[i]);
	free(a->req);
	free(a);
}

/* Lost events of every store, of one kind (LS_EV__COUNT: all kinds). */
static uint64_t lost_of(const struct ls_evstore *const *stores, size_t n_stores, unsigned kind)
{
	uint64_t n = 0;

	for (size_t i = 0; i < n_stores; i++)
		n += kind < LS_EV__COUNT ? ls_evstore_lost(stores[i], kind) : ls_evstore_lost_total(stores[i]);
	return n;
}

/* a->why: what is missing from the parts, and why. */
static void explain(struct ls_attribution *a, const struct ls_evstore *const *stores, size_t n_stores,
		    int have_events, const char *why)
{
	size_t len;

	if (why && *why)
		snprintf(a->why, sizeof(a->why), "probes off: %s", why);
	else if (!have_events)
		snprintf(a->why, sizeof(a->why), "probes off");
	else if (!a->have_client)
		snprintf(a->why, sizeof(a->why), "no probe events matched a request's socket");
	len = strlen(a->why);
	if (have_events && a->have_client && !a->have_server)
		snprintf(a->why + len, sizeof(a->why) - len, "%sno server-side events (watch the server "
			 "with --server-pid or --server-comm): server and network reported together",
			 len ? "; " : "");
	len = strlen(a->why);
	if (a->lost_events) {
		len += (size_t)snprintf(a->why + len, sizeof(a->why) - len, "%s%llu probe events lost (ring "
					"buffer full:", len ? "; " : "", (unsigned long long)a->lost_events);
		for (unsigned kind = 0; kind < LS_EV__COUNT && len < sizeof(a->why); kind++)
			if (lost_of(stores, n_stores, kind))
				len += (size_t)snprintf(a->why + len, sizeof(a->why) - len, " %s %llu",
							ls_event_kind_name(kind),
							(unsigned long long)lost_of(stores, n_stores, kind));
		if (len < sizeof(a->why))
			snprintf(a->why + len, sizeof(a->why) - len, "): %zu requests marked", a->n_lost_requests);
	}
}

static void indexes_free(struct ls_attr_index *ix, size_t n)
{
	for (size_t i = 0; ix && i < n; i++)
		ls_attr_index_free(&ix[i]);
	free(ix);
}

/* Every source's steps as one record type: CUPTI's make the queue/gpu union, the uprobe ones
 * the sessions (ls_attr_engine_map, after the requests' kernel stamps are known). */
static int steps_in(struct ctx *x, const struct ls_attr_steps *in)
{
	if (!in)
		return gpu_union_build(&x->gpu, NULL, 0);
	if (ls_engine_steps_add_gpu(&x->steps, in->gpu, in->n_gpu) ||
	    ls_engine_steps_add_uprobe(&x->steps, in->uprobe, in->n_uprobe))
		return -ENOMEM;
	ls_engine_steps_sort(&x->steps);
	return gpu_union_build(&x->gpu, in->gpu, in->n_gpu);
}

static void ctx_free(struct ctx *x, struct ls_attr_index *ix, size_t n_stores)
{
	indexes_free(ix, n_stores);
	free(x->gpu.iv);
	ls_engine_map_free(&x->map);
	ls_engine_steps_free(&x->steps);
}

/* Each request's kernel stamps from its own process's store. 0, -ENOMEM or -EINVAL. */
static int match_all(struct ctx *x, const struct ls_run *run, struct ls_attribution *a, struct ls_attr_index *ix,
		     size_t n_stores, const uint32_t *part, struct ls_frame_attr *tails)
{
	for (size_t i = 0; i < run->n_requests; i++) {
		uint32_t k = part ? part[i] : 0;
		if (k >= n_stores)
			return -EINVAL;
		x->index = &ix[k];
		if (match_one(x, &run->requests[i], &a->req[i], &tails[i]))
			return -ENOMEM;
	}
	return 0;
}

struct ls_attribution *ls_attribute_steps(const struct ls_run *run, const struct ls_evstore *const *stores,
					  size_t n_stores, const uint32_t *part, const struct ls_attr_steps *steps,
					  const struct ls_read_rules *rules, const char *why)
{
	struct ls_attribution *a;
	struct ls_attr_index *ix = NULL;
	struct ls_frame_attr *tails = NULL;
	struct ctx x = { 0 };
	int have_events = 0, err = -ENOMEM;

	if (!rules || !n_stores) {
		errno = EINVAL;
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->rules = *rules;
	x.rules = &a->rules;
	a->n = run->n_requests;
	a->req = calloc(a->n + 1, sizeof(*a->req));
	tails = calloc(a->n + 1, sizeof(*tails));
	ix = calloc(n_stores, sizeof(*ix));
	if (!a->req || !tails || !ix || steps_in(&x, steps))
		goto fail;
	a->have_gpu = x.gpu.n > 0;
	for (size_t k = 0; k < n_stores; k++) {
		have_events |= stores[k] != NULL;
		if (ls_attr_index_build(&ix[k], stores[k]))
			goto fail;
	}
	if ((err = match_all(&x, run, a, ix, n_stores, part, tails)) ||
	    (err = ls_attr_engine_map(run, a, &x.steps, steps ? steps->uprobe_lost : 0, &x.map)))
		goto fail;
	err = -ENOMEM;
	for (size_t i = 0; i < run->n_requests; i++) {
		struct ls_req_attr *ra = &a->req[i];
		x.sess = x.map.req_sess ? x.map.req_sess[i] : SIZE_MAX;
		if (attribute_one(&x, &run->requests[i], ra, &tails[i]))
			goto fail;
		if (!(ra->flags & LS_ATTR_NO_EVENTS))
			a->have_client = 1;
		if (!(ra->flags & LS_ATTR_NO_SERVER))
			a->have_server = 1;
		if (ra->flags & LS_ATTR_LOST_EVENTS)
			a->n_lost_requests++;
	}
	if ((err = ls_attr_engine_account(run, a)))
		goto fail;
	err = -ENOMEM;
	a->lost_events = lost_of(stores, n_stores, LS_EV__COUNT);
	explain(a, stores, n_stores, have_events, why);
	ctx_free(&x, ix, n_stores);
	free(tails);
	return a;
fail:
	ctx_free(&x, ix, n_stores);
	free(tails);
	ls_attribution_free(a);
	errno = -err;
	return NULL;
}

struct ls_attribution *ls_attribute_parts(const struct ls_run *run, const struct ls_evstore *const *stores,
					  size_t n_stores, const uint32_t *part, const struct ls_gpu_step *steps,
					  size_t n_steps, const struct ls_read_rules *rules, const char *why)
{
	struct ls_attr_steps in = { .gpu = steps, .n_gpu = n_steps };

	return ls_attribute_steps(run, stores, n_stores, part, &in, rules, why);
}

struct ls_attribution *ls_attribute(const struct ls_run *run, const struct ls_evstore *events,
				    const struct ls_gpu_step *steps, size_t n_steps,
				    const struct ls_read_rules *rules, const char *why)
{
	return ls_attribute_parts(run, &events, 1, NULL, steps, n_steps, rules, why);
}

static const char *const part_names[LS_PART__COUNT] = {
	[LS_PART_CLIENT] = "client",
	[LS_PART_NETWORK] = "network",
	[LS_PART_SERVER] = "server",
	[LS_PART_FRONTEND] = "frontend",
	[LS_PART_QUEUE] = "queue",
	[LS_PART_GPU] = "gpu",
	[LS_PART_PREFILL] = "prefill",
	[LS_PART_DECODE] = "decode",
	[LS_PART_NETWORK_SERVER] = "network+server",
	[LS_PART_UNATTRIBUTED] = "unattributed",
};

const char *ls_part_name(enum ls_part part)
{
	return (unsigned)part < LS_PART__COUNT ? part_names[part] : "unknown";
}

uint64_t ls_parts_sum(const struct ls_parts *p)
{
	uint64_t sum = 0;

	for (int i = 0; i < LS_PART__COUNT; i++)
		sum += p->ns[i];
	return sum;
}

/* The names of the LS_ATTR_* and LS_ENG_* bits, in bit order, as the attribution file writes
 * and reads them. */
static const char *const attr_flag_names[] = {
	"no_events", "no_server", "lost_events", "disorder", "reused", "no_tls_events", "warmup", "not_ok",
};
static const char *const eng_flag_names[] = {
	"mapped", "uncertain", "counts_differ", "seqs_missed", "twin", "split", "no_frontend",
};

const char *ls_attr_flag_name(unsigned bit)
{
	return bit < sizeof(attr_flag_names) / sizeof(attr_flag_names[0]) ? attr_flag_names[bit] : NULL;
}

const char *ls_eng_flag_name(unsigned bit)
{
	return bit < sizeof(eng_flag_names) / sizeof(eng_flag_names[0]) ? eng_flag_names[bit] : NULL;
}
