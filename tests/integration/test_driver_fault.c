/* Every fault the sim injects ends as the right LS_FAIL_* reason, nothing stalls or crashes;
 * a refused connection is LS_FAIL_CONNECT; SIGINT mid-run returns 1 with finished records. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "base/clock.h"
#include "test_driver_common.h"

TestSuite(driver_fault, .fini = t_sim_fini);

static void fault(const char *kind, enum ls_fail want, int per_request, enum ls_backend backend)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "1", "--fail-rate", "1", "--fail-kind", kind, "--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	struct t_batch b;
	t_batch_init(&b, backend, 6, 8);
	struct ls_driver_opts o;
	char url[256];
	t_opts(&o, &b, &sim, backend, url, sizeof(url));
	o.max_concurrency = 2;
	o.per_request_conn = per_request;
	o.request_timeout_ns = 300000000ull; /* the stall fault ends here */
	uint64_t t0 = ls_now_ns();
	cr_assert_eq(t_driver_run(&o, &b), 0);
	uint64_t took = ls_now_ns() - t0;
	cr_assert_eq(b.finished, b.n, "on_finish once per request");
	cr_assert_eq(b.finish_dup, 0);
	for (size_t i = 0; i < b.n; i++) {
		const struct ls_request *r = &b.recs[i];
		cr_assert_eq(r->fail, want, "%s: request %zu ended %s (%s), want %s", kind, i, ls_fail_name(r->fail),
			     r->error, ls_fail_name(want));
		cr_assert(r->error[0], "%s: an error text", kind);
		cr_assert(r->finished_ns >= r->started_ns);
	}
	cr_assert_lt(took, 5000000000ull, "%s: the run took %.1f s", kind, (double)took / 1e9);
	struct t_truth t;
	cr_assert_eq(t_truth_load(sim.truth, b.run.run_tag, b.n, &t), 0);
	for (size_t i = 0; i < t.n; i++)
		cr_assert_str_eq(t.faults[i], kind, "the sim injected %s", t.faults[i]);
	if (want == LS_FAIL_HTTP_STATUS) {
		cr_assert_eq(b.recs[0].http_status, !strcmp(kind, "http500") ? 500 : 429);
		cr_assert(strstr(b.recs[0].error, "injected fault"), "body kept in the error: %s", b.recs[0].error);
	}
	cr_assert_eq(t.dups, 0, "no request was silently retried by libcurl");
	t_truth_free(&t);
	t_batch_free(&b);
	t_sim_stop_checked(&sim);
}

Test(driver_fault, http500, .timeout = 60) { fault("http500", LS_FAIL_HTTP_STATUS, 0, LS_BACKEND_OPENAI); }
Test(driver_fault, http429, .timeout = 60) { fault("http429", LS_FAIL_HTTP_STATUS, 0, LS_BACKEND_OPENAI_CHAT); }
Test(driver_fault, reset_before_headers_reuse, .timeout = 60)
{
	fault("reset-before-headers", LS_FAIL_RESET_BEFORE_HEADERS, 0, LS_BACKEND_OPENAI);
}
Test(driver_fault, reset_before_headers_per_request, .timeout = 60)
{
	fault("reset-before-headers", LS_FAIL_RESET_BEFORE_HEADERS, 1, LS_BACKEND_SGLANG);
}
Test(driver_fault, reset_mid_stream, .timeout = 60)
{
	fault("reset-mid-stream", LS_FAIL_RESET_MID_STREAM, 0, LS_BACKEND_OPENAI);
}
Test(driver_fault, stall_times_out, .timeout = 60) { fault("stall", LS_FAIL_TIMEOUT, 0, LS_BACKEND_OPENAI); }
Test(driver_fault, malformed_frame, .timeout = 60)
{
	fault("malformed-frame", LS_FAIL_MALFORMED_FRAME, 0, LS_BACKEND_SGLANG);
}
Test(driver_fault, truncated_chunk, .timeout = 60)
{
	fault("truncated-chunk", LS_FAIL_TRUNCATED, 0, LS_BACKEND_OPENAI_CHAT);
}

Test(driver_fault, mixed_faults_and_successes, .timeout = 60)
{
	struct t_sim sim;
	/* The seven kinds mapped below (every kind: test_reliability_faults.c). */
	const char *extra[] = { "--step-ms", "1", "--fail-rate", "0.5", "--fail-kind",
				"http500,http429,reset-before-headers,reset-mid-stream,stall,malformed-frame,truncated-chunk",
				"--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	struct t_batch b;
	t_batch_init(&b, LS_BACKEND_OPENAI, 60, 6);
	struct ls_driver_opts o;
	char url[256];
	t_opts(&o, &b, &sim, LS_BACKEND_OPENAI, url, sizeof(url));
	o.max_concurrency = 8;
	o.request_timeout_ns = 300000000ull;
	cr_assert_eq(t_driver_run(&o, &b), 0);
	cr_assert_eq(b.finished, b.n);
	struct t_truth t;
	cr_assert_eq(t_truth_load(sim.truth, b.run.run_tag, b.n, &t), 0);
	cr_assert_eq(t.dups, 0, "no request was silently retried by libcurl");
	static const struct {
		const char *sim;
		enum ls_fail want;
	} map[] = {
		{ "http500", LS_FAIL_HTTP_STATUS },
		{ "http429", LS_FAIL_HTTP_STATUS },
		{ "reset-before-headers", LS_FAIL_RESET_BEFORE_HEADERS },
		{ "reset-mid-stream", LS_FAIL_RESET_MID_STREAM },
		{ "stall", LS_FAIL_TIMEOUT },
		{ "malformed-frame", LS_FAIL_MALFORMED_FRAME },
		{ "truncated-chunk", LS_FAIL_TRUNCATED },
		{ "none", LS_OK },
	};
	for (size_t i = 0; i < b.n; i++) {
		char id[64];
		snprintf(id, sizeof(id), "%s-%zu", b.run.run_tag, i);
		long k = t_truth_find(&t, id);
		cr_assert_geq(k, 0, "%s in the truth", id);
		enum ls_fail want = LS_FAIL__COUNT;
		for (size_t m = 0; m < sizeof(map) / sizeof(map[0]); m++)
			if (!strcmp(map[m].sim, t.faults[k]))
				want = map[m].want;
		cr_assert_neq(want, LS_FAIL__COUNT, "unknown sim fault %s", t.faults[k]);
		cr_assert_eq(b.recs[i].fail, want, "%s: sim %s, driver %s (%s)", id, t.faults[k],
			     ls_fail_name(b.recs[i].fail), b.recs[i].error);
	}
	t_truth_free(&t);
	t_batch_free(&b);
	t_sim_stop_checked(&sim);
}

Test(driver_fault, connection_refused, .timeout = 20)
{
	struct t_batch b;
	t_batch_init(&b, LS_BACKEND_OPENAI, 3, 4);
	struct t_sim nobody = { .port = t_free_port() };
	snprintf(nobody.url, sizeof(nobody.url), "http://127.0.0.1:%d", nobody.port);
	struct ls_driver_opts o;
	char url[256];
	t_opts(&o, &b, &nobody, LS_BACKEND_OPENAI, url, sizeof(url));
	cr_assert_eq(t_driver_run(&o, &b), 0);
	cr_assert_eq(t_count_fail(&b, LS_FAIL_CONNECT), b.n, "%s", b.recs[0].error);
	cr_assert_eq(b.finished, b.n);
	/* One slot: each refusal ends at once and must hand its slot to the next job. */
	o.max_concurrency = 1;
	cr_assert_eq(t_driver_run(&o, &b), 0);
	cr_assert_eq(t_count_fail(&b, LS_FAIL_CONNECT), b.n, "%s", b.recs[0].error);
	cr_assert_eq(b.finished, b.n);
	t_batch_free(&b);
}

/* ---- SIGINT mid-run, sent from a periodic hook; an fd hook sees an eventfd on the ring. */

struct sig_ctx {
	int      calls;
	int      efd;
	int      fd_ready;
	uint64_t sent_at;
};

static int send_sigint(void *ctx, uint64_t now)
{
	struct sig_ctx *c = ctx;
	if (++c->calls == 1) {
		uint64_t one = 1;
		cr_assert_eq(write(c->efd, &one, sizeof(one)), (ssize_t)sizeof(one));
	}
	if (c->calls == 3) {
		c->sent_at = now;
		kill(getpid(), SIGINT);
	}
	return 0;
}

static int on_efd(void *ctx, uint64_t now)
{
	struct sig_ctx *c = ctx;
	uint64_t v;
	(void)now;
	if (read(c->efd, &v, sizeof(v)) == (ssize_t)sizeof(v))
		c->fd_ready++;
	return 0;
}

static void sigint_run(uint64_t grace_ns)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "5", "--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	struct t_batch b;
	t_batch_init(&b, LS_BACKEND_OPENAI, 200, 10); /* ~60 ms each, 4 at a time: ~3 s in all */
	struct ls_driver_opts o;
	char url[256];
	t_opts(&o, &b, &sim, LS_BACKEND_OPENAI, url, sizeof(url));
	o.max_concurrency = 4;
	o.grace_ns = grace_ns;
	struct sig_ctx c = { .efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) };
	cr_assert_geq(c.efd, 0);
	struct ls_loop_hook hooks[] = {
		{ .fd = -1, .period_ns = 100000000ull, .on_ready = send_sigint, .ctx = &c },
		{ .fd = c.efd, .on_ready = on_efd, .ctx = &c },
	};
	o.hooks = hooks;
	o.n_hooks = 2;
	uint64_t t0 = ls_now_ns();
	int rc = t_driver_run(&o, &b);
	uint64_t took = ls_now_ns() - t0;
	cr_assert_eq(rc, 1, "interrupted run returns 1");
	cr_assert_eq(b.run.interrupted, 1);
	cr_assert_eq(c.fd_ready, 1, "the fd hook ran once for one eventfd write");
	cr_assert_lt(took, 2000000000ull, "stopped soon after the signal (%.2f s)", (double)took / 1e9);
	size_t ok = 0, cancelled = 0, unsent = 0, other = 0;
	for (size_t i = 0; i < b.n; i++) {
		const struct ls_request *r = &b.recs[i];
		if (!r->started_ns) {
			unsent++;
			cr_assert(!b.seen[i], "no on_finish for a request never sent");
			continue;
		}
		cr_assert(b.seen[i], "on_finish for every request sent");
		if (r->fail == LS_OK) {
			ok++;
			cr_assert(r->done_frame_ns && r->n_frames > 0, "a finished record is intact");
			cr_assert_eq(r->usage_completion_tokens, 10);
		} else if (r->fail == LS_FAIL_CANCELLED) {
			cancelled++;
			cr_assert_geq(r->finished_ns, c.sent_at + grace_ns);
		} else {
			other++;
		}
	}
	cr_assert_gt(ok, 0);
	cr_assert_gt(unsent, 0, "sending stopped");
	cr_assert_eq(other, 0);
	cr_assert_eq(b.finished, ok + cancelled);
	if (grace_ns >= 1000000000ull)
		cr_assert_eq(cancelled, 0, "a long grace lets streams in flight finish");
	else
		cr_assert_gt(cancelled, 0, "no grace cancels streams in flight");
	/* The mask is back: SIGINT is not blocked after the run. */
	sigset_t now;
	sigprocmask(SIG_BLOCK, NULL, &now);
	cr_assert_eq(sigismember(&now, SIGINT), 0);
	close(c.efd);
	t_batch_free(&b);
	t_sim_stop_checked(&sim);
}

Test(driver_fault, sigint_cancels_after_grace, .timeout = 60) { sigint_run(0); }
Test(driver_fault, sigint_grace_lets_streams_finish, .timeout = 60) { sigint_run(1500000000ull); }
