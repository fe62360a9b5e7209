/* engine_steps.c — see engine_steps.h: one step record for CUPTI's and the uprobes' steps,
 * sessions of a sequence, their join to requests, and the split of a request's server time. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "attribution/engine_steps.h"

static int grow(struct ls_engine_steps *s, size_t more)
{
	if (s->n + more <= s->cap)
		return 0;
	size_t cap = s->cap ? s->cap : 256;
	while (cap < s->n + more)
		cap *= 2;
	struct ls_engine_step *g = realloc(s->steps, cap * sizeof(*g));
	if (!g)
		return -ENOMEM;
	s->steps = g;
	s->cap = cap;
	return 0;
}

/* The kernel's runs of one sequence into one entry per sequence: its tokens summed, the first
 * run's position kept (positions unknown for every sequence when any could not be read). */
static void merge_runs(struct ls_engine_step *st, const struct ls_step_event *e)
{
	uint32_t runs = e->n_seqs < LS_STEP_SEQS ? e->n_seqs : LS_STEP_SEQS;

	for (uint32_t r = 0; r < runs; r++) {
		uint32_t k = 0;
		while (k < st->n_seqs && st->seq_id[k] != e->seq_id[r])
			k++;
		if (k == st->n_seqs) {
			st->seq_id[k] = e->seq_id[r];
			st->seq_pos[k] = (e->flags & LS_STEP_POS_UNREAD) ? -1 : e->seq_pos[r];
			st->n_seqs++;
		}
		st->seq_tokens[k] += e->seq_tokens[r];
	}
}

/* A frontend mark into s->calls. 0 or -ENOMEM. */
static int add_call(struct ls_engine_steps *s, const struct ls_step_event *e)
{
	if (s->n_calls == s->cap_calls) {
		size_t cap = s->cap_calls ? 2 * s->cap_calls : 256;
		struct ls_fe_call *g = realloc(s->calls, cap * sizeof(*g));
		if (!g)
			return -ENOMEM;
		s->calls = g;
		s->cap_calls = cap;
	}
	struct ls_fe_call *c = &s->calls[s->n_calls++];
	c->start_ns = e->start_ns;
	c->end_ns = e->end_ns > e->start_ns ? e->end_ns : e->start_ns;
	c->pid = e->tgid;
	c->tid = e->tid;
	c->what = e->flags & (LS_STEP_TOKENIZE | LS_STEP_POSTED);
	c->ret = e->ret;
	return 0;
}

int ls_engine_steps_add_uprobe(struct ls_engine_steps *s, const struct ls_step_event *ev, size_t n)
{
	if (grow(s, n))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct ls_step_event *e = &ev[i];
		if (e->flags & (LS_STEP_TOKENIZE | LS_STEP_POSTED)) {
			if (add_call(s, e))
				return -ENOMEM;
			continue;
		}
		struct ls_engine_step *st = &s->steps[s->n++];
		memset(st, 0, sizeof(*st));
		st->start_ns = e->start_ns;
		st->end_ns = e->end_ns > e->start_ns ? e->end_ns : e->start_ns;
		st->busy_ns = st->end_ns - st->start_ns;
		st->pid = e->tgid;
		st->tid = e->tid;
		st->source = LS_STEP_SRC_UPROBE;
		st->n_tokens = e->n_tokens;
		st->flags = e->flags;
		st->ret = e->ret;
		merge_runs(st, e);
		if (!st->n_seqs && st->n_tokens && (st->flags & LS_STEP_SEQ_UNREAD) &&
		    !(st->flags & LS_STEP_NO_ENTRY)) { /* llama_batch_get_one: every token is seq 0 */
			st->n_seqs = 1;
			st->seq_tokens[0] = st->n_tokens;
			st->seq_pos[0] = -1;
		}
	}
	return 0;
}

int ls_engine_steps_add_gpu(struct ls_engine_steps *s, const struct ls_gpu_step *g, size_t n)
{
	if (grow(s, n))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct ls_engine_step *st = &s->steps[s->n++];
		memset(st, 0, sizeof(*st));
		st->start_ns = g[i].start_ns;
		st->end_ns = g[i].end_ns > g[i].start_ns ? g[i].end_ns : g[i].start_ns;
		st->busy_ns = g[i].busy_ns;
		st->pid = g[i].pid;
		st->tid = g[i].device;
		st->source = LS_STEP_SRC_CUPTI;
		for (int k = 0; k < LS_STEP_SEQS; k++)
			st->seq_pos[k] = -1;
	}
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const struct ls_engine_step *x = a, *y = b;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int call_by_thread(const void *a, const void *b)
{
	const struct ls_fe_call *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

void ls_engine_steps_sort(struct ls_engine_steps *s)
{
	if (s->n > 1)
		qsort(s->steps, s->n, sizeof(*s->steps), by_start);
	if (s->n_calls > 1)
		qsort(s->calls, s->n_calls, sizeof(*s->calls), call_by_thread);
}

void ls_engine_steps_free(struct ls_engine_steps *s)
{
	free(s->calls);
	free(s->steps);
	memset(s, 0, sizeof(*s));
}

const char *ls_step_source_name(uint32_t source)
{
	return source == LS_STEP_SRC_CUPTI ? "CUPTI" : source == LS_STEP_SRC_UPROBE ? "uprobe" : "unknown";
}

/* ---- sessions ---- */

/* A sequence's open session, and where its process's step count stood at its last step. */
struct open_seq {
	uint32_t pid;
	int32_t  seq;
	size_t   sess;
	uint64_t last_ord;
	int64_t  next_pos; /* the position its next decode step would have; -1 unknown */
};

struct proc_ord {
	uint32_t pid;
	uint64_t ord; /* steps of this process so far */
};

struct builder {
	struct ls_engine_map *m;
	struct open_seq *open;
	size_t n_open;
	struct proc_ord *procs;
	size_t n_procs;
	/* Each session's steps as a linked list of slots (one per (step, sequence)), laid out in
	 * step_idx at the end. */
	size_t *slot_step, *slot_next, *sess_head, *sess_tail;
	size_t n_slots;
};

static uint64_t proc_next_ord(struct builder *b, uint32_t pid)
{
	for (size_t i = 0; i < b->n_procs; i++)
		if (b->procs[i].pid == pid)
			return ++b->procs[i].ord;
	b->procs[b->n_procs].pid = pid;
	b->procs[b->n_procs].ord = 1;
	return b->procs[b->n_procs++].ord;
}

static struct open_seq *open_of(struct builder *b, uint32_t pid, int32_t seq)
{
	for (size_t i = 0; i < b->n_open; i++)
		if (b->open[i].pid == pid && b->open[i].seq == seq)
			return &b->open[i];
	return NULL;
}

/* Adds step i to session s (as its prefill or decode step). */
static void sess_add(struct builder *b, size_t s, size_t i, int prefill, uint32_t tokens)
{
	struct ls_engine_session *ss = &b->m->sess[s];
	const struct ls_engine_step *st = &b->m->steps[i];
	size_t slot = b->n_slots++;

	b->slot_step[slot] = i;
	b->slot_next[slot] = SIZE_MAX;
	if (b->sess_tail[s] == SIZE_MAX)
		b->sess_head[s] = slot;
	else
		b->slot_next[b->sess_tail[s]] = slot;
	b->sess_tail[s] = slot;
	ss->n++;
	ss->last_end_ns = st->end_ns;
	if (st->flags & (LS_STEP_MORE_SEQS | LS_STEP_TRUNCATED))
		ss->flags |= LS_SESS_SEQS_MISSED;
	if (prefill) {
		ss->n_prefill_steps++;
		ss->prompt_tokens += tokens;
		ss->prefill_end_ns = st->end_ns;
		ss->prefill_steps_ns += st->end_ns - st->start_ns;
	} else {
		ss->n_decode_steps++;
		ss->decode_steps_ns += st->end_ns - st->start_ns;
	}
}

static size_t sess_new(struct builder *b, uint32_t pid, int32_t seq, const struct ls_engine_step *st)
{
	size_t s = b->m->n_sess++;
	struct ls_engine_session *ss = &b->m->sess[s];

	memset(ss, 0, sizeof(*ss));
	ss->pid = pid;
	ss->seq = seq;
	ss->first_start_ns = st->start_ns;
	ss->request = SIZE_MAX;
	b->sess_head[s] = b->sess_tail[s] = SIZE_MAX;
	return s;
}

/* One sequence's tokens in step i (the process's ord-th step), the first at position pos. */
static void seq_step(struct builder *b, size_t i, uint64_t ord, int32_t seq, uint32_t tokens, int32_t pos)
{
	const struct ls_engine_step *st = &b->m->steps[i];
	struct open_seq *o = open_of(b, st->pid, seq);
	int fresh = !o || o->last_ord + 1 != ord ||               /* new, or the slot idled */
		    (tokens > 1 && b->m->sess[o->sess].n_decode_steps) || /* a new prompt */
		    (pos >= 0 && o->next_pos >= 0 && pos != o->next_pos);   /* positions restart */

	if (!o) {
		o = &b->open[b->n_open++];
		o->pid = st->pid;
		o->seq = seq;
	}
	if (fresh)
		o->sess = sess_new(b, st->pid, seq, st);
	o->last_ord = ord;
	o->next_pos = pos >= 0 ? (int64_t)pos + tokens : -1;
	struct ls_engine_session *ss = &b->m->sess[o->sess];
	sess_add(b, o->sess, i, fresh || (tokens > 1 && !ss->n_decode_steps), tokens);
}

static int builder_init(struct builder *b, struct ls_engine_map *m)
{
	size_t slots = 0;

	memset(b, 0, sizeof(*b));
	b->m = m;
	for (size_t i = 0; i < m->n_steps; i++)
		slots += m->steps[i].n_seqs;
	b->open = calloc(slots + 1, sizeof(*b->open));
	b->procs = calloc(m->n_steps + 1, sizeof(*b->procs));
	b->slot_step = calloc(slots + 1, sizeof(size_t));
	b->slot_next = calloc(slots + 1, sizeof(size_t));
	b->sess_head = calloc(slots + 1, sizeof(size_t));
	b->sess_tail = calloc(slots + 1, sizeof(size_t));
	m->sess = calloc(slots + 1, sizeof(*m->sess));
	m->cap_sess = slots; /* a session holds at least one (step, sequence): cuts never pass this */
	m->step_idx = calloc(slots + 1, sizeof(*m->step_idx));
	return b->open && b->procs && b->slot_step && b->slot_next && b->sess_head && b->sess_tail && m->sess &&
	       m->step_idx ? 0 : -ENOMEM;
}

static void builder_free(struct builder *b)
{
	free(b->open);
	free(b->procs);
	free(b->slot_step);
	free(b->slot_next);
	free(b->sess_head);
	free(b->sess_tail);
}

/* Sessions from the steps; each session's steps laid out in step_idx (prefill ones first:
 * they come first in time). */
static int build_sessions(struct ls_engine_map *m)
{
	struct builder b;
	int err = builder_init(&b, m);

	for (size_t i = 0; !err && i < m->n_steps; i++) {
		const struct ls_engine_step *st = &m->steps[i];
		if (!st->n_seqs || st->ret != 0)
			continue; /* no sequence ids, or a failed decode (llama.cpp retries it) */
		m->n_seq_steps++;
		uint64_t ord = proc_next_ord(&b, st->pid);
		for (uint32_t k = 0; k < st->n_seqs && k < LS_STEP_SEQS; k++)
			seq_step(&b, i, ord, st->seq_id[k], st->seq_tokens[k], st->seq_pos[k]);
	}
	size_t at = 0;
	for (size_t s = 0; !err && s < m->n_sess; s++) {
		m->sess[s].first = at;
		for (size_t slot = b.sess_head[s]; slot != SIZE_MAX; slot = b.slot_next[slot])
			m->step_idx[at++] = b.slot_step[slot];
	}
	builder_free(&b);
	return err;
}

/* ---- the join ---- */

enum { FIT_NONE, FIT_SPLIT, FIT_EXACT };

/* How request r's engine counts fit session s: exactly; or its prompt fits and it produced fewer
 * tokens than s decoded (FIT_SPLIT: the steps after its last token are the next request's on
 * that slot, see split_session); or not at all. */
static int counts_fit(const struct ls_engine_session *s, const struct ls_map_req *r)
{
	if (r->prompt_n > 0 && (uint32_t)r->prompt_n != s->prompt_tokens)
		return FIT_NONE;
	/* The prompt step yields the first token; each decode step one more, and llama.cpp does not
	 * decode the last token it samples (+ 1), unless the slot stopped on it (+ 0). */
	if (r->predicted_n <= 0 || (uint32_t)r->predicted_n == s->n_decode_steps + 1 ||
	    (uint32_t)r->predicted_n == s->n_decode_steps)
		return FIT_EXACT;
	return (uint32_t)r->predicted_n < s->n_decode_steps ? FIT_SPLIT : FIT_NONE;
}

/* Session s's sums and ends from its steps, the first n_prefill of them its prompt's. */
static void sess_tally(struct ls_engine_map *m, struct ls_engine_session *s, uint32_t n_prefill)
{
	s->prompt_tokens = s->n_prefill_steps = s->n_decode_steps = 0;
	s->prefill_steps_ns = s->decode_steps_ns = 0;
	s->first_start_ns = m->steps[m->step_idx[s->first]].start_ns;
	for (size_t k = s->first; k < s->first + s->n; k++) {
		const struct ls_engine_step *st = &m->steps[m->step_idx[k]];
		uint32_t tokens = 0;
		for (uint32_t j = 0; j < st->n_seqs && j < LS_STEP_SEQS; j++)
			tokens += st->seq_id[j] == s->seq ? st->seq_tokens[j] : 0;
		s->last_end_ns = st->end_ns;
		if (k < s->first + n_prefill) {
			s->n_prefill_steps++;
			s->prompt_tokens += tokens;
			s->prefill_end_ns = st->end_ns;
			s->prefill_steps_ns += st->end_ns - st->start_ns;
		} else {
			s->n_decode_steps++;
			s->decode_steps_ns += st->end_ns - st->start_ns;
		}
	}
}

/* Session s decoded more than its request produced: its slot took the next request in the very
 * next step, whose prompt after a cached prefix was one token at the position where s's decode
 * would have gone on (the engine reused s's generated tokens too), so nothing in the steps cut
 * them. Cut s after its request's last decode step; the rest is a new session (1-token prompt
 * step, then decode), joined in its turn. Both are marked: the cut came from the counts. */
static void split_session(struct ls_engine_map *m, size_t s, uint32_t keep_decode)
{
	struct ls_engine_session *a = &m->sess[s], *b = &m->sess[m->n_sess];
	size_t cut = a->first + a->n_prefill_steps + keep_decode;

	if (m->n_sess >= m->cap_sess || cut >= a->first + a->n)
		return;
	*b = *a;
	b->first = cut;
	b->n = a->first + a->n - cut;
	b->request = SIZE_MAX;
	b->flags = LS_SESS_SPLIT;
	a->n = cut - a->first;
	a->flags |= LS_SESS_SPLIT;
	sess_tally(m, a, a->n_prefill_steps);
	sess_tally(m, b, 1);
	m->n_sess++;
}

/* End of the first step of s's process that starts at or after s's prompt ended: its first
 * token is written before then (UINT64_MAX: no such step). */
static uint64_t next_step_end(const struct ls_engine_map *m, const struct ls_engine_session *s)
{
	size_t lo = 0, hi = m->n_steps;

	while (lo < hi) { /* steps sorted by start: the first that starts at or after the prompt's end */
		size_t mid = lo + (hi - lo) / 2;
		if (m->steps[mid].start_ns < s->prefill_end_ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < m->n_steps; i++)
		if (m->steps[i].pid == s->pid && m->steps[i].n_seqs)
			return m->steps[i].end_ns;
	return UINT64_MAX;
}

static int sess_by_prefill_end(const void *a, const void *b, void *arg)
{
	const struct ls_engine_session *s = arg;
	const struct ls_engine_session *x = &s[*(const size_t *)a], *y = &s[*(const size_t *)b];
	if (x->prefill_end_ns != y->prefill_end_ns)
		return x->prefill_end_ns < y->prefill_end_ns ? -1 : 1;
	return x->first_start_ns < y->first_start_ns ? -1 : x->first_start_ns > y->first_start_ns;
}

/* Joins session s to the best request not yet joined (see engine_steps.h). */
static void join_one(struct ls_engine_map *m, const struct ls_map_req *req, size_t s, uint64_t horizon,
		     unsigned char *rival)
{
	struct ls_engine_session *ss = &m->sess[s];
	size_t best = SIZE_MAX;
	int best_fit = 0;

	for (size_t r = 0; r < m->n_req; r++) {
		const struct ls_map_req *q = &req[r];
		if (m->req_sess[r] != SIZE_MAX || !q->first_token_ns || q->first_token_ns < ss->prefill_end_ns ||
		    (q->arrived_ns && q->arrived_ns > ss->first_start_ns))
			continue;
		int fit = counts_fit(ss, q);
		if (best == SIZE_MAX || fit > best_fit ||
		    (fit == best_fit && q->first_token_ns < req[best].first_token_ns))
			best = r, best_fit = fit;
	}
	if (best == SIZE_MAX)
		return;
	for (size_t r = 0; r < m->n_req; r++) { /* a rival: fits as well, first token as early */
		const struct ls_map_req *q = &req[r];
		if (r != best && m->req_sess[r] == SIZE_MAX && q->first_token_ns >= ss->prefill_end_ns &&
		    q->first_token_ns <= horizon && (!q->arrived_ns || q->arrived_ns <= ss->first_start_ns) &&
		    counts_fit(ss, q) == best_fit) {
			ss->flags |= LS_SESS_UNCERTAIN;
			rival[r] = 1; /* the session it is joined to later is uncertain too */
		}
	}
	if (req[best].first_token_ns > horizon)
		ss->flags |= LS_SESS_UNCERTAIN; /* its first token left later than the step after its prompt */
	if (best_fit == FIT_NONE)
		ss->flags |= LS_SESS_COUNTS_DIFFER | LS_SESS_UNCERTAIN;
	if (best_fit == FIT_SPLIT)
		split_session(m, s, (uint32_t)req[best].predicted_n - 1);
	ss->request = best;
	m->req_sess[best] = s;
}

/* Joined sessions that ran the same steps (two prompts of one length in one step, ending
 * together) cannot be told apart by the steps: which request had which is uncertain whatever the
 * first tokens' times said (the server's HTTP threads write them late, and out of order), and
 * the choice changes no part. Sessions sorted by prefill end would make this linear; joined
 * sessions that start in the same step are few, so pairs are compared directly. */
static void mark_twins(struct ls_engine_map *m)
{
	for (size_t s = 0; s < m->n_sess; s++) {
		struct ls_engine_session *a = &m->sess[s];
		for (size_t t = 0; a->request != SIZE_MAX && t < m->n_sess; t++) {
			const struct ls_engine_session *b = &m->sess[t];
			if (t != s && b->request != SIZE_MAX && b->pid == a->pid &&
			    b->first_start_ns == a->first_start_ns && b->prefill_end_ns == a->prefill_end_ns &&
			    b->last_end_ns == a->last_end_ns && b->n == a->n)
				a->flags |= LS_SESS_TWIN | LS_SESS_UNCERTAIN;
		}
	}
}

/* Joins every session in order of its prompt's end; a session cut off another (split_session)
 * ends its prompt later, and takes its place in that order. 0 or -ENOMEM. */
static int join_all(struct ls_engine_map *m, const struct ls_map_req *req, unsigned char *rival)
{
	size_t *order = malloc((m->cap_sess + 1) * sizeof(*order));

	if (!order)
		return -ENOMEM;
	for (size_t s = 0; s < m->n_sess; s++)
		order[s] = s;
	qsort_r(order, m->n_sess, sizeof(*order), sess_by_prefill_end, m->sess);
	for (size_t k = 0; k < m->n_sess; k++) {
		size_t before = m->n_sess;
		join_one(m, req, order[k], next_step_end(m, &m->sess[order[k]]), rival);
		if (m->n_sess == before)
			continue;
		size_t at = before; /* the new session, into the order after k */
		while (at > k + 1 && sess_by_prefill_end(&before, &order[at - 1], m->sess) < 0) {
			order[at] = order[at - 1];
			at--;
		}
		order[at] = before;
	}
	free(order);
	return 0;
}

int ls_engine_map_build(const struct ls_engine_step *steps, size_t n_steps, const struct ls_map_req *req,
			size_t n_req, struct ls_engine_map *m)
{
	memset(m, 0, sizeof(*m));
	m->steps = steps;
	m->n_steps = n_steps;
	m->n_req = n_req;
	m->req_sess = malloc((n_req + 1) * sizeof(*m->req_sess));
	if (!m->req_sess || build_sessions(m))
		goto fail;
	for (size_t r = 0; r < n_req; r++)
		m->req_sess[r] = SIZE_MAX;
	unsigned char *rival = calloc(n_req + 1, 1);
	if (!rival || join_all(m, req, rival)) {
		free(rival);
		goto fail;
	}
	for (size_t s = 0; s < m->n_sess; s++)
		if (m->sess[s].request != SIZE_MAX && rival[m->sess[s].request])
			m->sess[s].flags |= LS_SESS_UNCERTAIN;
	free(rival);
	mark_twins(m);
	for (size_t s = 0; s < m->n_sess; s++) {
		const struct ls_engine_session *ss = &m->sess[s];
		m->n_mapped += ss->request != SIZE_MAX;
		m->n_uncertain += ss->request != SIZE_MAX && (ss->flags & LS_SESS_UNCERTAIN);
		m->n_twins += ss->request != SIZE_MAX && (ss->flags & LS_SESS_TWIN);
		m->n_split += ss->request != SIZE_MAX && (ss->flags & LS_SESS_SPLIT);
		m->n_counts_differ += ss->request != SIZE_MAX && (ss->flags & LS_SESS_COUNTS_DIFFER);
		m->n_sess_unjoined += ss->request == SIZE_MAX;
	}
	return 0;
fail:
	ls_engine_map_free(m);
	return -ENOMEM;
}

void ls_engine_map_free(struct ls_engine_map *m)
{
	free(m->sess);
	free(m->step_idx);
	free(m->req_sess);
	memset(m, 0, sizeof(*m));
}

/* Overlap of [from, to] with steps k0 .. k1-1 of a session (in time order, not overlapping). */
static uint64_t overlap(const struct ls_engine_map *m, size_t k0, size_t k1, uint64_t from, uint64_t to)
{
	size_t lo = k0, hi = k1;
	uint64_t sum = 0;

	while (lo < hi) { /* first step ending after from */
		size_t mid = lo + (hi - lo) / 2;
		if (m->steps[m->step_idx[mid]].end_ns <= from)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = lo; k < k1 && m->steps[m->step_idx[k]].start_ns < to; k++) {
		const struct ls_engine_step *st = &m->steps[m->step_idx[k]];
		uint64_t a = st->start_ns > from ? st->start_ns : from, b = st->end_ns < to ? st->end_ns : to;
		if (b > a)
			sum += b - a;
	}
	return sum;
}

void ls_engine_split(const struct ls_engine_map *m, size_t s, uint64_t frontend_end, uint64_t from, uint64_t to,
		     uint64_t *frontend, uint64_t *queue, uint64_t *prefill, uint64_t *decode)
{
	const struct ls_engine_session *ss = &m->sess[s];
	size_t pre_end = ss->first + ss->n_prefill_steps;

	*frontend = *queue = *prefill = *decode = 0;
	if (to <= from)
		return;
	if (from < ss->first_start_ns) {
		uint64_t before = to < ss->first_start_ns ? to : ss->first_start_ns;
		if (frontend_end > from)
			*frontend = (frontend_end < before ? frontend_end : before) - from;
		*queue = before - from - *frontend;
	}
	*prefill = overlap(m, ss->first, pre_end, from, to);
	*decode = overlap(m, pre_end, ss->first + ss->n, from, to);
}

/* ---- the frontend ---- */

static int req_by_thread(const void *a, const void *b, void *arg)
{
	const struct ls_fe_req *r = arg, *x = &r[*(const size_t *)a], *y = &r[*(const size_t *)b];
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->read_ns < y->read_ns ? -1 : x->read_ns > y->read_ns;
}

/* The first call of (pid, tid) that started at or after t (n_calls: none). */
static size_t first_call(const struct ls_fe_call *c, size_t n, uint32_t pid, uint32_t tid, uint64_t t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct ls_fe_call *m = &c[mid];
		int before = m->pid != pid ? m->pid < pid : m->tid != tid ? m->tid < tid : m->start_ns < t;
		if (before)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Request r's marks: on its thread, started at or after its read and before hi; the last
 * return, at most hi. */
static void frontend_one(const struct ls_fe_call *calls, size_t n_calls, const struct ls_fe_req *r, uint64_t hi,
			 struct ls_fe_join *out, size_t *joined)
{
	for (size_t k = first_call(calls, n_calls, r->pid, r->tid, r->read_ns);
	     k < n_calls && calls[k].pid == r->pid && calls[k].tid == r->tid && calls[k].start_ns < hi; k++) {
		uint64_t end = calls[k].end_ns < hi ? calls[k].end_ns : hi;
		out->tokenize += calls[k].what == LS_STEP_TOKENIZE;
		out->posted += calls[k].what == LS_STEP_POSTED;
		(*joined)++;
		if (end > out->end_ns)
			out->end_ns = end;
	}
}

int ls_engine_frontend(const struct ls_fe_call *calls, size_t n_calls, const struct ls_fe_req *req, size_t n_req,
		       struct ls_fe_join *out, size_t *joined)
{
	size_t *order = malloc((n_req + 1) * sizeof(*order)), n = 0;

	*joined = 0;
	if (!order)
		return -ENOMEM;
	memset(out, 0, n_req * sizeof(*out));
	for (size_t i = 0; i < n_req; i++)
		if (req[i].tid && req[i].read_ns)
			order[n++] = i;
	qsort_r(order, n, sizeof(*order), req_by_thread, (void *)req);
	for (size_t k = 0; k < n; k++) {
		const struct ls_fe_req *r = &req[order[k]];
		uint64_t hi = r->limit_ns;
		if (k + 1 < n && req[order[k + 1]].pid == r->pid && req[order[k + 1]].tid == r->tid &&
		    req[order[k + 1]].read_ns < hi)
			hi = req[order[k + 1]].read_ns; /* the thread's next request: its calls are that one's */
		if (hi > r->read_ns)
			frontend_one(calls, n_calls, r, hi, &out[order[k]], joined);
	}
	free(order);
	return 0;
}
