/* test_engine_account.c — attribution_account.c on a hand-built run: the engine's own queue +
 * prefill against the server's read -> first-token write. Catches: the queue left out of the
 * account (or counted when the engine gave none), the interval read from the client's stamps or
 * from a frame that is not the first token, an account longer than the interval not counted,
 * warmups and failed requests counted. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include "attribution/attribution_int.h"
#include "metrics/metrics.h"

#define MS 1000000ull

struct fixture {
	struct ls_run run;
	struct ls_attribution a;
	struct ls_frame frames[4][2];
	struct ls_frame_attr fa[4][2];
};

/* Request i: server read at 10 ms, first token written at read + server_ms (frame 1; frame 0 is
 * a role frame, not a token), the engine's queue q_ms (q_ms < 0: not given) and prefill p_ms. */
static void req(struct fixture *f, int i, double server_ms, double q_ms, double p_ms)
{
	struct ls_request *r = &f->run.requests[i];
	struct ls_req_attr *ra = &f->a.req[i];
	r->id = (uint64_t)i;
	r->fail = LS_OK;
	r->frames = f->frames[i];
	r->n_frames = 2;
	f->frames[i][0] = (struct ls_frame){ .arrived_ns = 11 * MS, .tokens = -1, .text_len = 0, .flags = LS_FRAME_CHOICES | LS_FRAME_EMPTY_TEXT };
	f->frames[i][1] = (struct ls_frame){ .arrived_ns = 90 * MS, .tokens = 1, .text_len = 4, .flags = LS_FRAME_CHOICES };
	ra->server_read_ns = 10 * MS;
	ra->frames = f->fa[i];
	ra->n_frames = 2;
	f->fa[i][0].server_write_ns = 10 * MS + 1;
	f->fa[i][1].server_write_ns = 10 * MS + (uint64_t)(server_ms * 1e6);
	r->engine_known = LS_ENGINE_PREFILL | (q_ms >= 0 ? LS_ENGINE_QUEUE : 0);
	r->engine_queue_ns = q_ms >= 0 ? (uint64_t)(q_ms * 1e6) : 0;
	r->engine_prompt_ns = (uint64_t)(p_ms * 1e6);
}

static void setup(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	f->run.n_requests = 4;
	f->run.requests = calloc(4, sizeof(*f->run.requests));
	f->a.n = 4;
	f->a.req = calloc(4, sizeof(*f->a.req));
	cr_assert(f->run.requests && f->a.req);
	f->a.rules.ttft_gate = LS_GATE_TEXT; /* frame 0 (empty text) is not the first token */
}

static void teardown(struct fixture *f)
{
	free(f->run.requests);
	free(f->a.req);
}

Test(engine_account, what_the_engine_does_not_count)
{
	struct fixture f;
	setup(&f);
	req(&f, 0, 30, 10, 18);  /* 2 ms not counted */
	req(&f, 1, 40, 20, 19);  /* 1 ms */
	req(&f, 2, 50, 30, 16);  /* 4 ms */
	req(&f, 3, 60, 40, 17);  /* 3 ms */
	cr_assert_eq(ls_attr_engine_account(&f.run, &f.a), 0);
	const struct ls_attr_engine_account *o = &f.a.account;
	cr_expect_eq(o->n, 4);
	cr_expect(o->has_queue);
	cr_expect_float_eq(o->not_counted_p50_ms, 2.5, 1e-6, "%f", o->not_counted_p50_ms);
	cr_expect_float_eq(o->server_p50_ms, 45.0, 1e-6, "%f", o->server_p50_ms);
	cr_expect_float_eq(o->inside_p50_ms, 42.5, 1e-6, "%f", o->inside_p50_ms);
	cr_expect_eq(o->over, 0);
	teardown(&f);
}

/* No queue given (llama.cpp): the slot wait is server time the engine does not count; an
 * account 5 ms longer than the interval is counted and its size said; a warmup and a failed
 * request are left out. */
Test(engine_account, no_queue_over_warmup_failed)
{
	struct fixture f;
	setup(&f);
	req(&f, 0, 30, -1, 10);  /* 20 ms not counted: the slot wait is in it */
	req(&f, 1, 30, -1, 35);  /* 5 ms longer than the server's interval */
	req(&f, 2, 30, -1, 10);
	req(&f, 3, 30, -1, 10);
	f.run.requests[2].warmup = 1;
	f.run.requests[3].fail = LS_FAIL_HTTP_STATUS;
	cr_assert_eq(ls_attr_engine_account(&f.run, &f.a), 0);
	const struct ls_attr_engine_account *o = &f.a.account;
	cr_expect_eq(o->n, 2);
	cr_expect(!o->has_queue);
	cr_expect_eq(o->over, 1);
	cr_expect_float_eq(o->worst_over_ms, 5.0, 1e-6, "%f", o->worst_over_ms);
	cr_expect_float_eq(o->not_counted_p50_ms, 10.0, 1e-6, "%f", o->not_counted_p50_ms); /* 20 and 0 */
	teardown(&f);
}

/* Without the server's read (no server events) nothing is compared. */
Test(engine_account, no_server_stamps)
{
	struct fixture f;
	setup(&f);
	for (int i = 0; i < 4; i++) {
		req(&f, i, 30, 10, 18);
		f.a.req[i].server_read_ns = 0;
	}
	cr_assert_eq(ls_attr_engine_account(&f.run, &f.a), 0);
	cr_expect_eq(f.a.account.n, 0);
	teardown(&f);
}
