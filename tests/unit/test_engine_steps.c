/* test_engine_steps.c — engine steps as one record (CUPTI's and the uprobes'), a slot's sessions
 * cut from synthetic llama_decode steps, their join to requests (by time and the engine's token
 * counts), the uncertain cases, the split of an interval into frontend / queue / prefill /
 * decode, and the join of llama_tokenize calls to requests (the frontend's end).
 * Each case's expected sessions and joins are worked out by hand from the step lists. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include "attribution/engine_steps.h"

#define MS 1000000ull

/* One step of pid 1 at [start, end] ms carrying (seq, tokens) pairs; positions unknown (the
 * cases that cut sessions by them set them). */
static struct ls_step_event step(uint64_t start_ms, uint64_t end_ms, int n, const int32_t *seq,
				 const uint32_t *tokens)
{
	struct ls_step_event e = { .start_ns = start_ms * MS, .end_ns = end_ms * MS, .tgid = 1, .tid = 1,
				   .flags = LS_STEP_POS_UNREAD };
	for (int k = 0; k < n; k++) {
		e.seq_id[k] = seq[k];
		e.seq_tokens[k] = tokens[k];
		e.n_tokens += tokens[k];
	}
	e.n_seqs = (uint32_t)n;
	return e;
}

#define S1(a, b, s, t) step(a, b, 1, (int32_t[]){ s }, (uint32_t[]){ t })
#define S2(a, b, s0, t0, s1, t1) step(a, b, 2, (int32_t[]){ s0, s1 }, (uint32_t[]){ t0, t1 })

static void load(struct ls_engine_steps *s, const struct ls_step_event *ev, size_t n)
{
	memset(s, 0, sizeof(*s));
	cr_assert_eq(ls_engine_steps_add_uprobe(s, ev, n), 0);
	ls_engine_steps_sort(s);
}

/* Two slots. Slot 0: prompt 32 (0-10), decode 3 steps, idle at 30-40 (steps without it), then
 * a new prompt of 8 tokens (40-44) and 4 decodes. Slot 1: prompt 16 in two chunks (10-20 as 8,
 * 20-22 as 8, beside slot 0's decode), decode until 50, idle at 52-54, then a 1-token step at
 * 56 (a prompt whose prefix the engine had cached): a new session, cut by the idle step alone.
 * Catches: a session not cut when the slot idles or a new prompt comes, prompt chunks counted
 * as decode, steps of another slot counted in a session. */
Test(engine_steps, sessions_of_each_slot)
{
	struct ls_step_event ev[] = {
		S1(0, 10, 0, 32),
		S2(10, 20, 0, 1, 1, 8),
		S2(20, 22, 0, 1, 1, 8),
		S2(22, 24, 0, 1, 1, 1),
		S1(30, 32, 1, 1),          /* slot 0 idle */
		S2(40, 44, 0, 8, 1, 1),    /* slot 0: a new prompt */
		S2(44, 46, 0, 1, 1, 1),
		S2(48, 50, 0, 1, 1, 1),
		S1(52, 54, 0, 1),          /* slot 1 idle */
		S2(56, 58, 0, 1, 1, 1),    /* slot 1: a new request, 1 token to compute */
	};
	struct ls_engine_steps s;
	struct ls_engine_map m;
	load(&s, ev, sizeof(ev) / sizeof(ev[0]));
	cr_assert_eq(ls_engine_map_build(s.steps, s.n, NULL, 0, &m), 0);
	cr_assert_eq(m.n_sess, 4);
	cr_assert_eq(m.n_seq_steps, 10);
	const struct ls_engine_session *a = &m.sess[0], *b = &m.sess[1], *c = &m.sess[2];
	cr_assert_eq(a->seq, 0);
	cr_assert_eq(a->prompt_tokens, 32);
	cr_assert_eq(a->n_prefill_steps, 1);
	cr_assert_eq(a->n_decode_steps, 3);
	cr_assert_eq(a->prefill_end_ns, 10 * MS);
	cr_assert_eq(a->last_end_ns, 24 * MS);
	cr_assert_eq(b->seq, 1);
	cr_assert_eq(b->prompt_tokens, 16);
	cr_assert_eq(b->n_prefill_steps, 2);
	cr_assert_eq(b->prefill_end_ns, 22 * MS);
	cr_assert_eq(b->n_decode_steps, 5);
	cr_assert_eq(b->last_end_ns, 50 * MS);
	cr_assert_eq(c->seq, 0);
	cr_assert_eq(c->first_start_ns, 40 * MS);
	cr_assert_eq(c->prompt_tokens, 8);
	cr_assert_eq(c->n_decode_steps, 4);
	cr_assert_eq(c->request, SIZE_MAX);
	cr_assert_eq(m.sess[3].seq, 1);
	cr_assert_eq(m.sess[3].first_start_ns, 56 * MS);
	cr_assert_eq(m.sess[3].prompt_tokens, 1);
	cr_assert_eq(m.sess[3].n_decode_steps, 0);
	cr_assert_eq(m.n_sess_unjoined, 4);
	ls_engine_map_free(&m);
	ls_engine_steps_free(&s);
}

/* Three requests, two slots: A (32 prompt, 4 predicted) and B (16, 3) arrive at 0; C (32, 2)
 * at 1 waits for slot 0. Sessions: slot 0 A 0-10 + 3 decode to 16; slot 1 B 10-14 + 2 decode
 * to 18; slot 0 C 20-30 + 1 decode. First tokens written just after each prompt's step.
 * Catches: joins by arrival order alone (B's session taken by C), counts compared the wrong
 * way, a waiting request joined to the session it waited behind. */
Test(engine_steps, join_by_time_and_counts)
{
	struct ls_step_event ev[] = {
		S1(0, 10, 0, 32),
		S2(10, 14, 0, 1, 1, 16),
		S2(14, 16, 0, 1, 1, 1),
		S2(16, 18, 0, 1, 1, 1),
		S1(20, 30, 0, 32),
		S1(30, 32, 0, 1),
	};
	struct ls_map_req req[3] = {
		{ .arrived_ns = 0, .first_token_ns = 10 * MS + 100000, .prompt_n = 32, .predicted_n = 4 },
		{ .arrived_ns = 0, .first_token_ns = 14 * MS + 100000, .prompt_n = 16, .predicted_n = 3 },
		{ .arrived_ns = 1 * MS, .first_token_ns = 30 * MS + 100000, .prompt_n = 32, .predicted_n = 2 },
	};
	struct ls_engine_steps s;
	struct ls_engine_map m;
	load(&s, ev, sizeof(ev) / sizeof(ev[0]));
	cr_assert_eq(ls_engine_map_build(s.steps, s.n, req, 3, &m), 0);
	cr_assert_eq(m.n_sess, 3);
	cr_assert_eq(m.n_mapped, 3);
	cr_assert_eq(m.n_uncertain, 0);
	cr_assert_eq(m.sess[m.req_sess[0]].seq, 0);
	cr_assert_eq(m.sess[m.req_sess[0]].first_start_ns, 0);
	cr_assert_eq(m.sess[m.req_sess[1]].seq, 1);
	cr_assert_eq(m.sess[m.req_sess[2]].first_start_ns, 20 * MS);
	/* C's server time from its arrival to its first token: queue 1..20, prefill 20..30, and
	 * 0.1 ms of its next (decode) step, which runs while the first token is written. */
	uint64_t f, q, p, d;
	ls_engine_split(&m, m.req_sess[2], 0, 1 * MS, 30 * MS + 100000, &f, &q, &p, &d);
	cr_assert_eq(f, 0); /* no frontend known: all of it is queue */
	cr_assert_eq(q, 19 * MS);
	cr_assert_eq(p, 10 * MS);
	cr_assert_eq(d, 100000);
	/* A's E2EL server time 0..17: prefill 10, decode 10-14, 14-16 and 16-17 = 7. */
	ls_engine_split(&m, m.req_sess[0], 0, 0, 17 * MS, &f, &q, &p, &d);
	cr_assert_eq(q, 0);
	cr_assert_eq(p, 10 * MS);
	cr_assert_eq(d, 7 * MS);
	ls_engine_map_free(&m);
	ls_engine_steps_free(&s);
}

/* Two prompts of the same length in one step, both first tokens written after it: either join
 * fits, so both are marked uncertain (the parts are the same either way: twin sessions). A third
 * request whose counts fit no session is joined by time alone and said so.
 * Catches: an uncertain join reported as certain; a join that needs the counts dropping the
 * request instead of saying it was joined by time. */
Test(engine_steps, twins_and_counts_that_do_not_fit_are_uncertain)
{
	struct ls_step_event ev[] = {
		S2(0, 10, 0, 32, 1, 32),
		S2(10, 12, 0, 1, 1, 1),
		S1(20, 30, 0, 32),
		S1(30, 32, 0, 1),
	};
	struct ls_map_req req[3] = {
		{ .arrived_ns = 0, .first_token_ns = 10 * MS + 100000, .prompt_n = 32, .predicted_n = 2 },
		{ .arrived_ns = 0, .first_token_ns = 10 * MS + 150000, .prompt_n = 32, .predicted_n = 2 },
		{ .arrived_ns = 15 * MS, .first_token_ns = 30 * MS + 100000, .prompt_n = 7, .predicted_n = 9 },
	};
	struct ls_engine_steps s;
	struct ls_engine_map m;
	load(&s, ev, sizeof(ev) / sizeof(ev[0]));
	cr_assert_eq(ls_engine_map_build(s.steps, s.n, req, 3, &m), 0);
	cr_assert_eq(m.n_mapped, 3);
	cr_assert_eq(m.n_uncertain, 3);
	cr_assert_eq(m.n_counts_differ, 1);
	cr_assert_eq(m.n_twins, 2); /* the third is uncertain for its counts, not a twin */
	cr_assert(m.sess[m.req_sess[0]].flags & LS_SESS_UNCERTAIN);
	cr_assert(m.sess[m.req_sess[1]].flags & LS_SESS_UNCERTAIN);
	cr_assert_neq(m.req_sess[0], m.req_sess[1]);
	cr_assert_eq(m.sess[m.req_sess[2]].flags & LS_SESS_COUNTS_DIFFER, LS_SESS_COUNTS_DIFFER);
	cr_assert_eq(m.sess[m.req_sess[2]].first_start_ns, 20 * MS);
	ls_engine_map_free(&m);
	ls_engine_steps_free(&s);
}

/* A request that arrived after a session began, or whose first token came before its prompt
 * ended, is never joined to it; a session no request fits stays unjoined.
 * Catches: the arrival or first-token bound dropped (a request joined to a session that ran
 * before it existed). */
Test(engine_steps, a_session_before_the_request_is_not_its)
{
	struct ls_step_event ev[] = { S1(0, 10, 0, 32), S1(10, 12, 0, 1) };
	struct ls_map_req req[1] = {
		{ .arrived_ns = 5 * MS, .first_token_ns = 11 * MS, .prompt_n = 32, .predicted_n = 2 },
	};
	struct ls_engine_steps s;
	struct ls_engine_map m;
	load(&s, ev, 2);
	cr_assert_eq(ls_engine_map_build(s.steps, s.n, req, 1, &m), 0);
	cr_assert_eq(m.n_mapped, 0);
	cr_assert_eq(m.n_sess_unjoined, 1);
	cr_assert_eq(m.req_sess[0], SIZE_MAX);
	ls_engine_map_free(&m);
	ls_engine_steps_free(&s);
}

/* Positions: slot 0 decodes at 32, 33, then its next request, whose 64-token prompt the engine
 * had cached but its last token, comes in the very next step as one token at position 63: the
 * positions restart, so a new session begins (without them it would be a third decode step).
 * Catches: a cached prompt taken for a decode step, a decode step whose position is read from
 * the wrong token taken for a new session. */
Test(engine_steps, positions_that_restart_cut_a_session)
{
	struct ls_step_event ev[4] = { S1(0, 10, 0, 32), S1(10, 12, 0, 1), S1(12, 14, 0, 1), S1(14, 16, 0, 1) };
	const int32_t pos[4] = { 0, 32, 33, 63 };
	for (int i = 0; i < 4; i++) {
		ev[i].flags = 0;
		ev[i].seq_pos[0] = pos[i];
	}
	struct ls_map_req req[2] = {
		{ .arrived_ns = 0, .first_token_ns = 10 * MS + 100000, .prompt_n = 32, .predicted_n = 3 },
		{ .arrived_ns = 11 * MS, .first_token_ns = 16 * MS + 100000, .prompt_n = 1, .predicted_n = 1 },
	};
	struct ls_engine_steps s;
	struct ls_engine_map m;
	load(&s, ev, 4);
	cr_assert_eq(ls_engine_map_build(s.steps, s.n, req, 2, &m), 0);
	cr_assert_eq(m.n_sess, 2);
	cr_assert_eq(m.sess[0].n_decode_steps, 2);
	cr_assert_eq(m.sess[1].prompt_tokens, 1);
	cr_assert_eq(m.sess[1].first_start_ns, 14 * MS);
	cr_assert_eq(m.n_mapped, 2);
	cr_assert_eq(m.n_uncertain, 0);
	ls_engine_map_free(&m);
	ls_engine_steps_free(&s);
}

/* The engine reused a request's generated tokens as the next one's cached prefix: the next
 * request's 1-token prompt comes right after A's last decode step, at the position A's decode
 * would have had. Steps alone make one session of 32-token prompt + 5 decodes; A produced 3
 * tokens (2 decode steps), B 3 (its prompt step + 2). The counts cut the session after A's
 * second decode step; B joins the rest.
 * Catches: B left unjoined and A given B's decode time (the session not cut), a cut one step
 * off (A's decode per token wrong). */
Test(engine_steps, counts_cut_a_reused_prefix)
{
	struct ls_step_event ev[6] = { S1(0, 10, 0, 32), S1(10, 12, 0, 1), S1(12, 14, 0, 1),
				       S1(14, 16, 0, 1), S1(16, 18, 0, 1), S1(18, 20, 0, 1) };
	struct ls_map_req req[2] = {
		{ .arrived_ns = 0, .first_token_ns = 10 * MS + 100000, .prompt_n = 32, .predicted_n = 3 },
		{ .arrived_ns = 5 * MS, .first_token_ns = 16 * MS + 100000, .prompt_n = 1, .predicted_n = 3 },
	};
	struct ls_engine_steps s;
	struct ls_engine_map m;
	load(&s, ev, 6);
	cr_assert_eq(ls_engine_map_build(s.steps, s.n, req, 2, &m), 0);
	cr_assert_eq(m.n_sess, 2);
	cr_assert_eq(m.n_mapped, 2);
	cr_assert_eq(m.n_split, 2);
	cr_assert_eq(m.n_counts_differ, 0);
	const struct ls_engine_session *a = &m.sess[m.req_sess[0]], *b = &m.sess[m.req_sess[1]];
	cr_assert_eq(a->n_decode_steps, 2);
	cr_assert_eq(a->last_end_ns, 14 * MS);
	cr_assert_eq(b->first_start_ns, 14 * MS);
	cr_assert_eq(b->prompt_tokens, 1);
	cr_assert_eq(b->prefill_end_ns, 16 * MS);
	cr_assert_eq(b->n_decode_steps, 2);
	cr_assert_eq(b->decode_steps_ns, 4 * MS);
	uint64_t f, q, p, d;
	ls_engine_split(&m, m.req_sess[1], 0, 5 * MS, 16 * MS, &f, &q, &p, &d);
	cr_assert_eq(q, 9 * MS);
	cr_assert_eq(p, 2 * MS);
	cr_assert_eq(d, 0);
	ls_engine_map_free(&m);
	ls_engine_steps_free(&s);
}

/* CUPTI's steps and the uprobes' in one record type, sorted by start; failed decodes and steps
 * without sequence ids make no session; llama_batch_get_one's batch (no seq ids) is seq 0; the
 * kernel's runs of one sequence merged into one entry.
 * Catches: a source's steps lost or mislabelled in the shared record; a sequence whose tokens
 * came in two runs counted as two sequences (or its second run dropped). */
Test(engine_steps, one_record_for_both_sources)
{
	struct ls_gpu_step g[1] = { { .pid = 9, .device = 2, .start_ns = 5 * MS, .end_ns = 6 * MS, .busy_ns = MS / 2 } };
	struct ls_step_event ev[3] = { S1(0, 2, 0, 4), S1(3, 4, 0, 1), S1(7, 8, 0, 1) };
	ev[1].ret = 1; /* no KV slot: llama.cpp retries */
	ev[2].n_seqs = 0;
	ev[2].flags = LS_STEP_SEQ_UNREAD; /* llama_batch_get_one */
	struct ls_engine_steps s = { 0 };
	cr_assert_eq(ls_engine_steps_add_uprobe(&s, ev, 3), 0);
	cr_assert_eq(ls_engine_steps_add_gpu(&s, g, 1), 0);
	ls_engine_steps_sort(&s);
	cr_assert_eq(s.n, 4);
	cr_assert_eq(s.steps[2].source, LS_STEP_SRC_CUPTI);
	cr_assert_eq(s.steps[2].busy_ns, MS / 2);
	cr_assert_str_eq(ls_step_source_name(s.steps[0].source), "uprobe");
	cr_assert_eq(s.steps[3].n_seqs, 1);
	cr_assert_eq(s.steps[3].seq_tokens[0], 1);
	/* The kernel sends runs of one sequence: a sequence's runs become one entry. */
	struct ls_step_event runs = step(9, 10, 3, (int32_t[]){ 0, 1, 0 }, (uint32_t[]){ 5, 3, 2 });
	runs.flags = 0;
	runs.seq_pos[0] = 40;
	runs.seq_pos[1] = 7;
	runs.seq_pos[2] = 45;
	cr_assert_eq(ls_engine_steps_add_uprobe(&s, &runs, 1), 0);
	const struct ls_engine_step *merged = &s.steps[s.n - 1];
	cr_assert_eq(merged->n_seqs, 2);
	cr_assert_eq(merged->seq_tokens[0], 7);
	cr_assert_eq(merged->seq_pos[0], 40);
	cr_assert_eq(merged->seq_tokens[1], 3);
	cr_assert_eq(merged->n_tokens, 10);
	s.n--; /* the map below is over the first four */
	struct ls_engine_map m;
	cr_assert_eq(ls_engine_map_build(s.steps, s.n, NULL, 0, &m), 0);
	cr_assert_eq(m.n_seq_steps, 2);  /* the failed one and CUPTI's are not */
	cr_assert_eq(m.n_sess, 1);       /* 4-token prompt 0-2, then the seq-0 step at 7 (no idle step between) */
	cr_assert_eq(m.sess[0].n_decode_steps, 1);
	ls_engine_map_free(&m);
	ls_engine_steps_free(&s);
}

/* A rival that is not a twin: X's prompt ends at 10 and Y's at 12; B's first token (12.0) came
 * as early as X's next step ends, so B could be X's as well as A: X is joined to A (the earlier
 * first token) and both joins are uncertain, B's too (it is Y's only because A took X).
 * Catches: the request a rival fitted reported as certain when it is joined later. */
Test(engine_steps, a_rival_makes_both_joins_uncertain)
{
	struct ls_step_event ev[] = {
		S1(0, 10, 0, 32),
		S2(10, 12, 0, 1, 1, 32),
		S2(12, 14, 0, 1, 1, 1),
		S1(14, 16, 1, 1),
	};
	struct ls_map_req req[2] = {
		{ .arrived_ns = 0, .first_token_ns = 10 * MS + 100000, .prompt_n = 32, .predicted_n = 3 },
		{ .arrived_ns = 0, .first_token_ns = 12 * MS, .prompt_n = 32, .predicted_n = 3 },
	};
	struct ls_engine_steps s;
	struct ls_engine_map m;
	load(&s, ev, sizeof(ev) / sizeof(ev[0]));
	cr_assert_eq(ls_engine_map_build(s.steps, s.n, req, 2, &m), 0);
	cr_assert_eq(m.n_mapped, 2);
	cr_assert_eq(m.sess[m.req_sess[0]].seq, 0);
	cr_assert_eq(m.sess[m.req_sess[1]].seq, 1);
	cr_assert_eq(m.n_uncertain, 2);
	cr_assert_eq(m.n_twins, 0);
	ls_engine_map_free(&m);
	ls_engine_steps_free(&s);
}

/* Twins whose second first token came late (the server's HTTP thread wrote it after the next
 * step): the steps cannot tell which request had which slot, whatever the first tokens' times
 * say, so both joins are uncertain twins (seen on llama-server: one of them reported certain, and
 * on the wrong slot by the server's log).
 * Catches: twin sessions told apart by first-token times. */
Test(engine_steps, twins_stay_uncertain_when_a_first_token_is_late)
{
	struct ls_step_event ev[] = {
		S2(0, 10, 0, 32, 1, 32),
		S2(10, 12, 0, 1, 1, 1),
		S2(12, 14, 0, 1, 1, 1),
	};
	struct ls_map_req req[2] = {
		{ .arrived_ns = 0, .first_token_ns = 10 * MS + 100000, .prompt_n = 32, .predicted_n = 3 },
		{ .arrived_ns = 0, .first_token_ns = 12 * MS + 500000, .prompt_n = 32, .predicted_n = 3 },
	};
	struct ls_engine_steps s;
	struct ls_engine_map m;
	load(&s, ev, sizeof(ev) / sizeof(ev[0]));
	cr_assert_eq(ls_engine_map_build(s.steps, s.n, req, 2, &m), 0);
	cr_assert_eq(m.n_mapped, 2);
	cr_assert_eq(m.n_uncertain, 2);
	cr_assert_eq(m.n_twins, 2);
	ls_engine_map_free(&m);
	ls_engine_steps_free(&s);
}

/* ---- the frontend: marks (llama_tokenize, post_tasks) joined by the thread that read the request ---- */

#define US 1000ull

/* A frontend mark (what: LS_STEP_TOKENIZE or LS_STEP_POSTED) of pid 1 on thread tid at [start, end] us. */
static struct ls_step_event mark(uint32_t what, uint32_t tid, uint64_t start_us, uint64_t end_us, int32_t ret)
{
	struct ls_step_event e = { .start_ns = start_us * US, .end_ns = end_us * US, .tgid = 1, .tid = tid,
				   .flags = what, .ret = ret };
	return e;
}

#define TOK(tid, a, b, ret) mark(LS_STEP_TOKENIZE, tid, a, b, ret)
#define POST(tid, a, b) mark(LS_STEP_POSTED, tid, a, b, 0)

/* Requests: r0 read on thread 5 at 1000 us (first step 3000), r1 on thread 6 at 1200 (first step
 * 2000), r2 on thread 7 at 1300 (no mark: unknown), r3 with no thread known, r4 on thread 5 at
 * 5000 (the thread's next request, its first step 9000). Marks: thread 5 tokenizes r0 twice (the
 * first buffer too small: -40, then 36 tokens) and posts it at 1550-1560; thread 6 tokenizes r1
 * once and posts it at 1900-2100, returning after r1's first step began (the engine took it
 * meanwhile); the engine's thread 9 tokenizes a stop word in between; thread 5 had tokenized a
 * /tokenize request before r0's read; thread 6 tokenizes at 2100-2200, after r1's first step
 * (not r1's); thread 5 tokenizes r4 (no post seen). By hand: r0 ends at 1560 (2 + 1 marks), r1
 * at 2000 (its first step: 1 + 1), r2 and r3 none, r4 at 5200. Catches: marks of another thread
 * taken, a mark from before the read taken, the first of several taken for the last, a mark
 * past the first step taken, a frontend that ends after its first step. */
Test(engine_steps, frontend_joins_the_reading_threads_last_mark)
{
	struct ls_step_event ev[] = {
		TOK(5, 1100, 1300, -40), TOK(5, 1350, 1500, 36), POST(5, 1550, 1560), TOK(6, 1250, 1400, 36),
		TOK(9, 1450, 1460, 1), TOK(5, 500, 900, 12), POST(6, 1900, 2100), TOK(6, 2100, 2200, 36),
		TOK(5, 5100, 5200, 20),
	};
	struct ls_fe_req req[5] = {
		{ .read_ns = 1000 * US, .pid = 1, .tid = 5, .limit_ns = 3000 * US },
		{ .read_ns = 1200 * US, .pid = 1, .tid = 6, .limit_ns = 2000 * US },
		{ .read_ns = 1300 * US, .pid = 1, .tid = 7, .limit_ns = 4000 * US },
		{ .read_ns = 1300 * US, .pid = 1, .tid = 0, .limit_ns = 4000 * US },
		{ .read_ns = 5000 * US, .pid = 1, .tid = 5, .limit_ns = 9000 * US },
	};
	struct ls_fe_join out[5];
	struct ls_engine_steps s;
	size_t joined;
	load(&s, ev, sizeof(ev) / sizeof(ev[0]));
	cr_assert_eq(s.n, 0, "frontend marks are no steps");
	cr_assert_eq(s.n_calls, 9);
	cr_assert_eq(ls_engine_frontend(s.calls, s.n_calls, req, 5, out, &joined), 0);
	cr_assert_eq(out[0].end_ns, 1560 * US);
	cr_assert_eq(out[0].tokenize, 2);
	cr_assert_eq(out[0].posted, 1);
	cr_assert_eq(out[1].end_ns, 2000 * US);
	cr_assert_eq(out[1].tokenize, 1);
	cr_assert_eq(out[1].posted, 1);
	cr_assert_eq(out[2].end_ns, 0);
	cr_assert_eq(out[3].end_ns, 0);
	cr_assert_eq(out[4].end_ns, 5200 * US);
	cr_assert_eq(out[4].posted, 0);
	cr_assert_eq(joined, 6);
	ls_engine_steps_free(&s);
}

/* A request that waited long for its first step (12000) on thread 5, and the thread's next
 * request read at 4000 (the HTTP thread went on to another connection): the later calls are the
 * next request's, not the first's. A process apart (pid 2) with the same thread id is another
 * thread. Catches: a window not closed at the thread's next read; threads of two processes
 * taken as one. */
Test(engine_steps, frontend_window_ends_at_the_threads_next_read)
{
	struct ls_step_event ev[] = { TOK(5, 1100, 1200, 30), TOK(5, 4100, 4300, 30), TOK(5, 1300, 1350, 30) };
	ev[2].tgid = 2;
	struct ls_fe_req req[2] = {
		{ .read_ns = 1000 * US, .pid = 1, .tid = 5, .limit_ns = 12000 * US },
		{ .read_ns = 4000 * US, .pid = 1, .tid = 5, .limit_ns = 13000 * US },
	};
	struct ls_fe_join out[2];
	struct ls_engine_steps s;
	size_t joined;
	load(&s, ev, 3);
	cr_assert_eq(ls_engine_frontend(s.calls, s.n_calls, req, 2, out, &joined), 0);
	cr_assert_eq(out[0].end_ns, 1200 * US);
	cr_assert_eq(out[0].tokenize, 1);
	cr_assert_eq(out[1].end_ns, 4300 * US);
	cr_assert_eq(joined, 2);
	ls_engine_steps_free(&s);
}

/* The split with a frontend: a session whose first step starts at 20 ms (prompt 20-30, one
 * decode 30-32), its frontend ending at 4 ms. Server time 1 -> 30.1: frontend 3, queue 16,
 * prefill 10, decode 0.1. A window from 5 ms (after the frontend's end) to 31 has no frontend:
 * queue 15, prefill 10, decode 1; one that ends before it (1 -> 3) is frontend alone. Catches: frontend taken out of prefill or server
 * rather than queue; frontend counted past the window's end. */
Test(engine_steps, split_frontend_out_of_queue)
{
	struct ls_step_event ev[] = { S1(20, 30, 0, 32), S1(30, 32, 0, 1) };
	struct ls_map_req req[1] = { { .arrived_ns = 0, .first_token_ns = 30 * MS + 100000, .prompt_n = 32,
				       .predicted_n = 2 } };
	struct ls_engine_steps s;
	struct ls_engine_map m;
	uint64_t f, q, p, d;
	load(&s, ev, 2);
	cr_assert_eq(ls_engine_map_build(s.steps, s.n, req, 1, &m), 0);
	cr_assert_eq(m.n_mapped, 1);
	ls_engine_split(&m, m.req_sess[0], 4 * MS, 1 * MS, 30 * MS + 100000, &f, &q, &p, &d);
	cr_assert_eq(f, 3 * MS);
	cr_assert_eq(q, 16 * MS);
	cr_assert_eq(p, 10 * MS);
	cr_assert_eq(d, 100000);
	ls_engine_split(&m, m.req_sess[0], 4 * MS, 5 * MS, 31 * MS, &f, &q, &p, &d);
	cr_assert_eq(f, 0);
	cr_assert_eq(q, 15 * MS);
	cr_assert_eq(f + q + p + d, 26 * MS);
	ls_engine_split(&m, m.req_sess[0], 4 * MS, 1 * MS, 3 * MS, &f, &q, &p, &d);
	cr_assert_eq(f, 2 * MS);
	cr_assert_eq(q + p + d, 0);
	ls_engine_map_free(&m);
	ls_engine_steps_free(&s);
}
