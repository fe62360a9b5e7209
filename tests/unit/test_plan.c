/* test_plan.c — a plan split into MPI shares (driver/plan.h): share k of N carries every warmup
 * and exactly the measured jobs i % N == k, each with its own body, route key, lengths and
 * schedule offset; the model, run tag, schedule kind and rate travel; rank 0 keeps its share in
 * place. A job given to the wrong rank, an offset shifted by one, or a field left behind (the
 * route key was, before the plan) fails here. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "driver/plan.h"

enum { NW = 2, NM = 7 };

static void make_plan(struct ls_plan *p, struct ls_run *run)
{
	memset(p, 0, sizeof(*p));
	memset(run, 0, sizeof(*run));
	cr_assert_eq(ls_plan_alloc(p, NW, NM, run), 0);
	for (size_t i = 0; i < NW + NM; i++) {
		char body[64], key[32];
		snprintf(body, sizeof(body), "{\"job\":%zu}", i);
		p->jobs[i].body = strdup(body);
		p->jobs[i].body_len = strlen(body);
		snprintf(key, sizeof(key), "group-%zu", i % 3);
		p->jobs[i].route_key = i % 2 ? strdup(key) : NULL;
		struct ls_request *r = p->jobs[i].rec;
		r->id = i < NW ? NM + i : i - NW;
		r->prompt_len = 100 + (uint32_t)i;
		r->output_len = 10 + (uint32_t)i;
	}
	p->arrival.kind = LS_ARRIVAL_GAMMA;
	p->arrival.rate = 12.5;
	p->arrival.n = NM;
	p->arrival.offsets_ns = calloc(NM, sizeof(uint64_t));
	cr_assert_not_null(p->arrival.offsets_ns);
	for (size_t i = 0; i < NM; i++)
		p->arrival.offsets_ns[i] = 1000000 * (i + 1) + i;
	p->have_arrival = 1;
	p->model = strdup("m/odel");
	snprintf(p->run_tag, sizeof(p->run_tag), "ls1-abc");
}

/* job j of share k of 3 is the original's job `orig` */
static void expect_job(const struct ls_plan *s, size_t j, size_t orig)
{
	char body[64];
	snprintf(body, sizeof(body), "{\"job\":%zu}", orig);
	cr_expect_str_eq(s->jobs[j].body, body, "job %zu: the body of job %zu", j, orig);
	cr_expect_eq(s->jobs[j].body_len, strlen(body));
	if (orig % 2) {
		char key[32];
		snprintf(key, sizeof(key), "group-%zu", orig % 3);
		cr_expect(s->jobs[j].route_key && !strcmp(s->jobs[j].route_key, key), "job %zu: route key", j);
	} else {
		cr_expect_null(s->jobs[j].route_key, "job %zu: no route key", j);
	}
	const struct ls_request *r = s->jobs[j].rec;
	cr_expect_eq(r->id, orig < NW ? NM + orig : orig - NW);
	cr_expect_eq(r->warmup, orig < NW);
	cr_expect_eq(r->prompt_len, 100 + orig);
	cr_expect_eq(r->output_len, 10 + orig);
	if (orig >= NW)
		cr_expect_eq(s->arrival.offsets_ns[j - NW], 1000000 * (orig - NW + 1) + (orig - NW),
			     "job %zu: its own schedule offset", j);
}

Test(plan, a_share_travels_whole)
{
	struct ls_plan p, s;
	struct ls_run run, srun;
	make_plan(&p, &run);
	struct ls_strbuf b = { 0 };
	cr_assert_eq(ls_plan_pack_share(&p, 1, 3, &b), 0);
	memset(&s, 0, sizeof(s));
	memset(&srun, 0, sizeof(srun));
	cr_assert_eq(ls_plan_unpack_share(b.data, b.len, &s, &srun), 0);
	cr_assert_eq(s.n_warmup, NW);
	cr_assert_eq(s.n_measured, 2, "measured 1 and 4 of 0..6 are rank 1's of 3");
	cr_assert_eq(srun.n_requests, NW + 2);
	expect_job(&s, 0, 0);
	expect_job(&s, 1, 1);
	expect_job(&s, 2, NW + 1);
	expect_job(&s, 3, NW + 4);
	cr_expect_str_eq(s.model, "m/odel");
	cr_expect_str_eq(s.run_tag, "ls1-abc");
	cr_expect_eq(s.arrival.kind, LS_ARRIVAL_GAMMA);
	cr_expect_eq(s.arrival.rate, 12.5);
	cr_expect_eq(s.arrival.n, 2);
	/* A cut message is refused, not read past its end. */
	struct ls_plan c;
	struct ls_run crun;
	memset(&c, 0, sizeof(c));
	memset(&crun, 0, sizeof(crun));
	cr_expect_eq(ls_plan_unpack_share(b.data, b.len - 3, &c, &crun), -EPROTO);
	ls_plan_free(&c);
	ls_run_free(&crun);
	ls_strbuf_free(&b);
	ls_plan_free(&s);
	ls_run_free(&srun);
	ls_plan_free(&p);
	ls_run_free(&run);
}

Test(plan, rank_0_keeps_its_share_in_place)
{
	struct ls_plan p;
	struct ls_run run;
	make_plan(&p, &run);
	cr_assert_eq(ls_plan_keep_share(&p, &run, 0, 3), 0);
	cr_assert_eq(p.n_measured, 3, "measured 0, 3 and 6 are rank 0's of 3");
	cr_assert_eq(run.n_requests, NW + 3);
	size_t want[] = { 0, 1, NW + 0, NW + 3, NW + 6 };
	for (size_t j = 0; j < sizeof(want) / sizeof(want[0]); j++) {
		expect_job(&p, j, want[j]);
		cr_expect_eq(p.jobs[j].rec, &run.requests[j], "job %zu fills record %zu", j, j);
	}
	cr_expect_eq(p.arrival.n, 3);
	ls_plan_free(&p);
	ls_run_free(&run);
}
