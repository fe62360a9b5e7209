/* The request driver against `latscope sim` over real sockets: stream shapes per backend,
 * stamps, pacing, slots, connection policy (checked against the sim's truth). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "workload/arrival.h"
#include "base/clock.h"
#include "test_driver_common.h"

TestSuite(driver, .fini = t_sim_fini);

/* Every stamp in order, frames monotonic, and the frame count the sim says it wrote. */
static void check_stream(const struct ls_request *r, const struct t_truth *t, const char *tag,
			 enum ls_backend backend, uint32_t max_tokens)
{
	cr_assert_eq(r->fail, LS_OK, "request %lu failed: %s: %s", (unsigned long)r->id,
		     ls_fail_name(r->fail), r->error);
	cr_assert_eq(r->http_status, 200);
	cr_assert(r->scheduled_ns && r->scheduled_ns <= r->admitted_ns);
	cr_assert(r->admitted_ns <= r->started_ns);
	cr_assert(r->started_ns < r->headers_ns, "headers after start");
	cr_assert(r->sent_ns >= r->started_ns && r->sent_ns <= r->headers_ns);
	cr_assert(r->headers_ns <= r->frames[0].arrived_ns);
	cr_assert(r->done_frame_ns && r->done_frame_ns <= r->finished_ns);
	cr_assert(r->fd >= 0 && r->socket_cookie != 0 && r->conn_seq > 0);
	for (uint32_t i = 1; i < r->n_frames; i++) {
		cr_assert(r->frames[i].arrived_ns >= r->frames[i - 1].arrived_ns);
		cr_assert(r->frames[i].stream_off > r->frames[i - 1].stream_off);
	}
	cr_assert_eq(r->frames[r->n_frames - 1].stream_off + 1, r->body_bytes,
		     "the last frame ends the body");
	cr_assert_eq(r->usage_completion_tokens, (int32_t)max_tokens);
	cr_assert_eq(r->usage_prompt_tokens > 0, 1);
	cr_assert(r->frames[r->n_frames - 1].flags & LS_FRAME_DONE);
	uint32_t text_frames = 0, finish = 0, usage = 0;
	int32_t tokens = 0;
	for (uint32_t i = 0; i < r->n_frames; i++) {
		const struct ls_frame *f = &r->frames[i];
		text_frames += !(f->flags & LS_FRAME_EMPTY_TEXT);
		finish += !!(f->flags & LS_FRAME_FINISH);
		usage += !!(f->flags & LS_FRAME_USAGE);
		if (f->tokens > 0)
			tokens += f->tokens;
	}
	cr_assert_eq(finish, 1);
	cr_assert_eq(text_frames, max_tokens, "one text frame per token without speculation");
	if (backend == LS_BACKEND_SGLANG) {
		cr_assert_eq(tokens, (int32_t)max_tokens, "sglang: per-frame token deltas add up");
		cr_assert_eq(usage, 0);
	} else {
		cr_assert_eq(usage, 1, "one usage frame (include_usage)");
	}
	char id[64];
	snprintf(id, sizeof(id), "%s-%lu", tag, (unsigned long)r->id);
	long k = t_truth_find(t, id);
	cr_assert_geq(k, 0, "the sim saw X-Request-Id %s", id);
	cr_assert_eq(t->n_frames[k], r->n_frames, "%s: sim wrote %u frames, driver saw %u", id,
		     t->n_frames[k], r->n_frames);
	cr_assert_eq(t->failed[k], 0);
}

static void shapes(enum ls_backend backend)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "2", "--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	struct t_batch b;
	const uint32_t max_tokens = 6;
	t_batch_init(&b, backend, 12, max_tokens);
	struct ls_driver_opts o;
	char url[256];
	t_opts(&o, &b, &sim, backend, url, sizeof(url));
	o.max_concurrency = 4;
	int rc = t_driver_run(&o, &b);
	cr_assert_eq(rc, 0);
	cr_assert_eq(b.finished, b.n);
	cr_assert_eq(b.finish_dup, 0);
	struct t_truth t;
	cr_assert_eq(t_truth_load(sim.truth, b.run.run_tag, b.n, &t), 0, "truth has every request");
	for (size_t i = 0; i < b.n; i++)
		check_stream(&b.recs[i], &t, b.run.run_tag, backend, max_tokens);
	cr_assert(b.run.start_ns && b.run.end_ns > b.run.start_ns);
	cr_assert_eq(b.run.interrupted, 0);
	t_truth_free(&t);
	t_batch_free(&b);
	t_sim_stop_checked(&sim);
}

Test(driver, openai_stream_shape, .timeout = 60) { shapes(LS_BACKEND_OPENAI); }
Test(driver, chat_stream_shape, .timeout = 60) { shapes(LS_BACKEND_OPENAI_CHAT); }
Test(driver, sglang_stream_shape, .timeout = 60) { shapes(LS_BACKEND_SGLANG); }

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Constant arrivals at 100/s, the loop sleeping between events, spinning before it sleeps
 * (--spin-us) or never sleeping (--busy-poll): streams are whole, every request is scheduled
 * by the arrival process and leaves on schedule (a spin ends at the next arrival), and no
 * frame is stamped before the sim wrote it. */
static void constant_run(uint64_t spin_ns)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "2", "--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	struct t_batch b;
	const uint32_t max_tokens = 4;
	t_batch_init(&b, LS_BACKEND_OPENAI, 20, max_tokens);
	struct ls_arrival a;
	cr_assert_eq(ls_arrival_init(&a, LS_ARRIVAL_CONSTANT, 100.0, 1.0, 1, b.n, NULL), 0);
	struct ls_driver_opts o;
	char url[256];
	t_opts(&o, &b, &sim, LS_BACKEND_OPENAI, url, sizeof(url));
	o.arrival = &a;
	o.spin_ns = spin_ns;
	cr_assert_eq(t_driver_run(&o, &b), 0);
	struct t_truth t;
	cr_assert_eq(t_truth_load(sim.truth, b.run.run_tag, b.n, &t), 0, "truth has every request");
	uint64_t lag[64];
	for (size_t i = 0; i < b.n; i++) {
		const struct ls_request *r = &b.recs[i];
		check_stream(r, &t, b.run.run_tag, LS_BACKEND_OPENAI, max_tokens);
		cr_assert_eq(r->scheduled_ns, b.run.start_ns + a.offsets_ns[i]);
		cr_assert_geq(r->admitted_ns, r->scheduled_ns, "no request leaves early");
		lag[i] = r->started_ns - r->scheduled_ns;
		char id[64];
		snprintf(id, sizeof(id), "%s-%zu", b.run.run_tag, i);
		long k = t_truth_find(&t, id);
		for (uint32_t f = 0; f < r->n_frames && f < t.n_frames[k]; f++)
			cr_assert_geq(r->frames[f].arrived_ns, t.frame_t[k][f], "frame %u stamped before the sim wrote it", f);
	}
	qsort(lag, b.n, sizeof(lag[0]), cmp_u64);
	cr_log_info("spin %llu ns, constant 100/s: start lag p50 %.1f us, max %.1f us", (unsigned long long)spin_ns,
		    (double)lag[b.n / 2] / 1e3,
		    (double)lag[b.n - 1] / 1e3);
	cr_assert_lt(lag[b.n / 2], 2000000ull, "median lag behind the schedule %.1f us", (double)lag[b.n / 2] / 1e3);
	t_truth_free(&t);
	ls_arrival_free(&a);
	t_batch_free(&b);
	t_sim_stop_checked(&sim);
}

Test(driver, constant_arrivals_follow_the_schedule, .timeout = 60) { constant_run(0); }
Test(driver, busy_poll_streams_and_keeps_the_schedule, .timeout = 60) { constant_run(LS_SPIN_FOREVER); }
Test(driver, spin_then_sleep_streams_and_keeps_the_schedule, .timeout = 60) { constant_run(200000); }

/* A thread spinning like the driver's loop, counting its own gaps over LS_SPIN_STALL_NS: what
 * the host took from a spinner in the same window. */
struct host_stalls {
	volatile int stop;
	uint64_t     n;
};

static void *spin_probe(void *arg)
{
	struct host_stalls *h = arg;
	uint64_t prev = ls_now_ns();
	while (!h->stop) {
		uint64_t now = ls_now_ns();
		h->n += now - prev > LS_SPIN_STALL_NS;
		prev = now;
	}
	return NULL;
}

/* The stops a child made: [stopped, continued] of each, CLOCK_MONOTONIC. */
struct stops {
	uint64_t at_ns[3][2];
};

/* Forks a child that stops this process three times for 5 ms (as a busy host would take the
 * CPU) and writes when to fd; returns its pid. */
static pid_t start_stopper(int fd)
{
	pid_t self = getpid(), child = fork();
	cr_assert_geq(child, 0);
	if (child)
		return child;
	struct stops s;
	for (int i = 0; i < 3; i++) {
		usleep(40000);
		s.at_ns[i][0] = ls_now_ns();
		kill(self, SIGSTOP);
		usleep(5000);
		kill(self, SIGCONT);
		s.at_ns[i][1] = ls_now_ns();
	}
	_exit(write(fd, &s, sizeof(s)) == (ssize_t)sizeof(s) ? 0 : 1);
}

/* One request against a sim that prefills for ~0.5 s (no frame comes, the loop only spins),
 * spinning forever; stop: with the child stopping the process meanwhile. */
static void busy_poll_run(const struct t_sim *sim, int stop, struct t_batch *b, struct stops *s,
			  uint64_t *host_stalls)
{
	t_batch_init(b, LS_BACKEND_OPENAI, 1, 1);
	struct ls_driver_opts o;
	char url[256];
	t_opts(&o, b, sim, LS_BACKEND_OPENAI, url, sizeof(url));
	o.spin_ns = LS_SPIN_FOREVER;
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	struct host_stalls h = { 0 };
	pthread_t probe;
	pid_t child = -1;
	if (stop)
		child = start_stopper(fds[1]);
	else
		cr_assert_eq(pthread_create(&probe, NULL, spin_probe, &h), 0);
	cr_assert_eq(t_driver_run(&o, b), 0);
	if (stop) {
		int status = 0;
		waitpid(child, &status, 0);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the stopper ran");
		cr_assert_eq(read(fds[0], s, sizeof(*s)), (ssize_t)sizeof(*s));
	} else {
		h.stop = 1;
		pthread_join(probe, NULL);
	}
	*host_stalls = h.n;
	close(fds[0]);
	close(fds[1]);
	cr_assert_eq(t_count_fail(b, LS_OK), b->n, "%s", b->recs[0].error);
	cr_assert_eq(b->recs[0].n_frames > 0, 1);
	cr_log_info("%s: %llu stalls, longest %.2f ms (a spinning thread beside it: %llu)",
		    stop ? "stopped 3 times" : "left alone", (unsigned long long)b->run.spin_stalls.n,
		    b->run.spin_stalls.max_ns / 1e6, stop ? 0ull : (unsigned long long)h.n);
}

/* --busy-poll counts the times its spinning loop did not run. Every stop the child made while
 * the loop was only spinning (after the request went out, before its first frame) is counted,
 * each at least ~5 ms long. Left alone, the loop counts no more than the host took from a
 * thread spinning beside it (x2 + 2 for chance): what the code adds, not how busy the host is. */
Test(driver, busy_poll_counts_the_loop_not_running, .timeout = 60)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "10", "--prefill-token-us", "50000", "--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	struct t_batch b;
	struct stops s;
	uint64_t host = 0;
	busy_poll_run(&sim, 1, &b, &s, &host);
	const struct ls_request *r = &b.recs[0];
	uint64_t in_window = 0;
	for (int i = 0; i < 3; i++)
		in_window += s.at_ns[i][0] > r->sent_ns && s.at_ns[i][1] < r->frames[0].arrived_ns;
	cr_assert_geq(in_window, 1, "no stop landed between the request and its first frame (%.0f ms)",
		      (double)(r->frames[0].arrived_ns - r->sent_ns) / 1e6);
	cr_assert_geq(b.run.spin_stalls.n, in_window, "%llu stalls counted for %llu stops",
		      (unsigned long long)b.run.spin_stalls.n, (unsigned long long)in_window);
	cr_assert_geq(b.run.spin_stalls.max_ns, 4000000ull, "longest %.2f ms", b.run.spin_stalls.max_ns / 1e6);
	cr_assert_geq(b.run.spin_stalls.sum_ns, in_window * 4000000ull, "all stalls %.2f ms for %llu stops",
		      b.run.spin_stalls.sum_ns / 1e6, (unsigned long long)in_window);
	t_batch_free(&b);

	busy_poll_run(&sim, 0, &b, &s, &host);
	cr_assert_leq(b.run.spin_stalls.n, 2 * host + 2, "%llu stalls in a run left alone, the host took %llu",
		      (unsigned long long)b.run.spin_stalls.n, (unsigned long long)host);
	t_batch_free(&b);
	t_sim_stop_checked(&sim);
}

static int count_call(void *ctx, uint64_t now)
{
	(void)now;
	(*(size_t *)ctx)++;
	return 0;
}

/* A hook with each_turn is called on the loop's turns (frames coming), not only every period;
 * one without it only at its period (here: never within the run). */
Test(driver, each_turn_hook_runs_with_the_loop, .timeout = 60)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "2", "--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	size_t turns = 0, periodic = 0;
	struct ls_loop_hook hooks[] = {
		{ .fd = -1, .period_ns = 60000000000ull, .on_ready = count_call, .ctx = &turns, .each_turn = 1 },
		{ .fd = -1, .period_ns = 60000000000ull, .on_ready = count_call, .ctx = &periodic },
	};
	struct t_batch b;
	t_batch_init(&b, LS_BACKEND_OPENAI, 8, 10);
	struct ls_driver_opts o;
	char url[256];
	t_opts(&o, &b, &sim, LS_BACKEND_OPENAI, url, sizeof(url));
	o.max_concurrency = 4;
	o.hooks = hooks;
	o.n_hooks = 2;
	cr_assert_eq(t_driver_run(&o, &b), 0);
	cr_assert_eq(t_count_fail(&b, LS_OK), b.n);
	cr_expect_geq(turns, b.n * 10 / 4, "each-turn hook called %zu times for %zu frames", turns, b.n * 12);
	cr_expect_eq(periodic, 0, "a 60 s period is not due in the run (%zu calls)", periodic);
	t_batch_free(&b);
	t_sim_stop_checked(&sim);
}

Test(driver, slots_cap_concurrency_and_show_the_wait, .timeout = 60)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "2", "--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	struct t_batch b;
	t_batch_init(&b, LS_BACKEND_SGLANG, 16, 4);
	struct ls_driver_opts o;
	char url[256];
	t_opts(&o, &b, &sim, LS_BACKEND_SGLANG, url, sizeof(url));
	o.max_concurrency = 2; /* no arrival: all scheduled at once, the slots pace them */
	cr_assert_eq(t_driver_run(&o, &b), 0);
	cr_assert_eq(t_count_fail(&b, LS_OK), b.n);
	for (size_t i = 0; i < b.n; i++) {
		const struct ls_request *r = &b.recs[i];
		cr_assert_eq(r->scheduled_ns, b.run.start_ns);
		if (i)
			cr_assert_geq(r->admitted_ns, b.recs[i - 1].admitted_ns, "admitted in order");
		/* While r ran, at most one other request did. */
		int overlap = 0;
		for (size_t j = 0; j < b.n; j++)
			overlap += j != i && b.recs[j].started_ns < r->finished_ns && b.recs[j].finished_ns > r->started_ns &&
				   b.recs[j].started_ns >= r->started_ns;
		cr_assert_leq(overlap, 1, "request %zu overlapped %d later requests", i, overlap);
	}
	cr_assert_gt(b.recs[b.n - 1].admitted_ns - b.recs[b.n - 1].scheduled_ns, 10000000ull,
		     "the last request waited for a slot (admitted - scheduled)");
	t_batch_free(&b);
	t_sim_stop_checked(&sim);
}

Test(driver, poisson_yield_draws_from_each_dispatch, .timeout = 60)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "1", "--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	struct t_batch b;
	t_batch_init(&b, LS_BACKEND_OPENAI, 20, 2);
	struct ls_arrival a;
	cr_assert_eq(ls_arrival_init(&a, LS_ARRIVAL_POISSON_YIELD, 500.0, 1.0, 7, b.n, NULL), 0);
	struct ls_driver_opts o;
	char url[256];
	t_opts(&o, &b, &sim, LS_BACKEND_OPENAI, url, sizeof(url));
	o.arrival = &a;
	cr_assert_eq(t_driver_run(&o, &b), 0);
	cr_assert_eq(t_count_fail(&b, LS_OK), b.n);
	cr_assert_eq(b.recs[0].scheduled_ns, b.run.start_ns);
	for (size_t i = 1; i < b.n; i++)
		cr_assert_geq(b.recs[i].scheduled_ns, b.recs[i - 1].scheduled_ns,
			      "each sleep starts after the previous request was let go");
	/* Mean gap of 19 exponential draws at 500/s: 2 ms, sd of the mean ~0.5 ms, plus loop time. */
	double mean_gap = (double)(b.recs[b.n - 1].scheduled_ns - b.recs[0].scheduled_ns) / (double)(b.n - 1) / 1e6;
	cr_assert(mean_gap > 0.5 && mean_gap < 5.0, "mean gap %.2f ms for 500 req/s", mean_gap);
	ls_arrival_free(&a);
	t_batch_free(&b);
	t_sim_stop_checked(&sim);
}

Test(driver, progress_line_and_warmups, .timeout = 60)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "1", "--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	struct t_batch b;
	t_batch_init(&b, LS_BACKEND_OPENAI, 5, 2);
	for (size_t i = 0; i < b.n; i++)
		b.recs[i].warmup = 1;
	struct ls_driver_opts o;
	char url[256];
	t_opts(&o, &b, &sim, LS_BACKEND_OPENAI, url, sizeof(url));
	o.progress = 1;
	char path[] = "/tmp/latscope-progress.XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	fflush(stderr);
	int saved = dup(2);
	dup2(fd, 2);
	int rc = t_driver_run(&o, &b);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(fd);
	cr_assert_eq(rc, 0);
	char *text = t_read_file(path, NULL);
	unlink(path);
	cr_assert_not_null(text);
	cr_assert(strstr(text, "\r  sent 5/5  done 5  failed 0"), "progress line: %s", text);
	cr_assert_eq(text[strlen(text) - 1], '\n', "the line ends when the run does");
	free(text);
	cr_assert_eq(t_count_fail(&b, LS_OK), b.n);
	for (size_t i = 0; i < b.n; i++)
		cr_assert_eq(b.recs[i].warmup, 1, "the driver keeps the warmup mark");
	cr_assert_eq(b.run.start_ns, 0, "a warmup-only run leaves the measured window alone");
	cr_assert_eq(b.run.end_ns, 0);
	t_batch_free(&b);
	t_sim_stop_checked(&sim);
}

Test(driver, big_token_id_prompt, .timeout = 60)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "1", "--prefill-token-us", "0", "--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	struct t_batch b;
	t_batch_init(&b, LS_BACKEND_OPENAI, 3, 2);
	uint32_t *ids = calloc(3000, sizeof(*ids));
	cr_assert_not_null(ids);
	for (uint32_t i = 0; i < 3000; i++)
		ids[i] = 97 + i % 26; /* ids under 256 are in the sim's vocabulary */
	for (size_t i = 0; i < b.n; i++) {
		struct ls_prompt p = { .token_ids = ids, .n_token_ids = 3000, .prompt_len = 3000, .output_len = 2 };
		size_t len = 0;
		free((char *)b.jobs[i].body);
		b.jobs[i].body = ls_backend_body(LS_BACKEND_OPENAI, "latscope-sim", &p, 1, &len);
		b.jobs[i].body_len = len;
		cr_assert_gt(len, 10000);
	}
	free(ids);
	struct ls_driver_opts o;
	char url[256];
	t_opts(&o, &b, &sim, LS_BACKEND_OPENAI, url, sizeof(url));
	cr_assert_eq(t_driver_run(&o, &b), 0);
	for (size_t i = 0; i < b.n; i++) {
		cr_assert_eq(b.recs[i].fail, LS_OK, "%s", b.recs[i].error);
		cr_assert_eq(b.recs[i].usage_prompt_tokens, 3000, "the sim counted the whole prompt");
		cr_assert_lt(b.recs[i].headers_ns - b.recs[i].started_ns, 500000000ull,
			     "no stall on a big body (%.3f s)", (double)(b.recs[i].headers_ns - b.recs[i].started_ns) / 1e9);
	}
	t_batch_free(&b);
	t_sim_stop_checked(&sim);
}
