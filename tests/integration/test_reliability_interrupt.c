/* test_reliability_interrupt.c — interrupted runs: SIGINT at a random point under load stops
 * sending, lets the streams in flight finish, reports what finished and leaves a whole record
 * file whose count is the report's completed + failed (ASan build: the interrupt path leaks
 * nothing); SIGTERM with streams that never end cancels them after the grace period; kill -9
 * leaves every line it wrote whole, and `latscope report` reads the file back. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "base/clock.h"
#include "t_helpers.h"
#include "test_reliability.h"

#define GRACE_S 2.0 /* bench.c: grace_ns */

struct run {
	struct t_proc p;
	char record[128], result[64], result_path[192];
};

/* Starts a rate-paced bench against sim that would run for several seconds. */
static void start(struct run *r, const char *bin, const struct t_sim *sim, const char *tag, const char *n,
		  const char *rate, const char *conc, const char *timeout)
{
	t_tmp(r->record, sizeof(r->record), tag);
	snprintf(r->result, sizeof(r->result), "latscope-rel-%d-%s.json", (int)getpid(), tag);
	snprintf(r->result_path, sizeof(r->result_path), "/tmp/%s", r->result);
	unlink(r->record);
	unlink(r->result_path);
	const char *args[] = { "bench", "--base-url", sim->url, "--model", "latscope-sim", "--num-prompts", n,
			       "--request-rate", rate, "--max-concurrency", conc, "--random-input-len", "16",
			       "--random-output-len", "32", "--random-vocab-size", "300", "--ignore-eos",
			       "--request-timeout", timeout, "--probes", "off", "--ready-check-timeout-sec", "10",
			       "--disable-tqdm", "--record", r->record, "--save-result", "--result-dir", "/tmp",
			       "--result-filename", r->result,
			       /* the sims here stall every stream: the test request would be one more */
			       "--skip-initial-test", NULL };
	t_spawn(&r->p, bin, args);
}

/* Waits until the record file has at least lines request lines (the run is under way). */
static void wait_lines(const struct run *r, size_t lines, double limit_s)
{
	uint64_t t0 = ls_now_ns();
	while ((double)(ls_now_ns() - t0) / 1e9 < limit_s) {
		size_t len = 0, nl = 0;
		char *text = t_read_file(r->record, &len);
		for (size_t i = 0; text && i < len; i++)
			nl += text[i] == '\n';
		free(text);
		if (nl > lines)
			return;
		usleep(10000);
	}
	cr_assert_fail("the bench wrote fewer than %zu records in %.0f s", lines, limit_s);
}

static void finish(struct run *r)
{
	t_done(&r->p);
	if (!getenv("T_KEEP")) {
		unlink(r->record);
		unlink(r->result_path);
	}
}

Test(reliability_interrupt, sigint_at_random_point_under_load, .timeout = 60)
{
	const char *bin = t_san_bin();
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "5", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, extra), 0, "sim did not start");
	struct run r;
	/* 4,000 requests at 800/s: 5 s of sending; 32 tokens x 5 ms per stream, well inside the grace. */
	start(&r, bin, &sim, "sigint.jsonl", "4000", "800", "128", "30");
	wait_lines(&r, 20, 20);
	srand((unsigned)ls_now_ns());
	usleep((useconds_t)(rand() % 1500) * 1000); /* a random point in the first 1.5 s of load */
	kill(r.p.pid, SIGINT);
	uint64_t sent_ns = ls_now_ns();
	int rc = t_wait(&r.p, 15);
	double took = (double)(ls_now_ns() - sent_ns) / 1e9;
	char *err = t_stderr(&r.p);
	t_assert_clean(err, "interrupted bench");
	cr_assert_eq(rc, 1, "an interrupted run exits 1, got %d (stderr %.1500s)", rc, err);
	cr_expect(strstr(err, "interrupted"), "stderr says it was interrupted: %.500s", err);
	cr_expect_lt(took, GRACE_S + 2, "stopped %.2f s after SIGINT", took);

	struct t_records rec;
	t_records_read(r.record, &rec);
	cr_assert(!rec.torn, "every line of the record file is whole");
	cr_assert(rec.header && rec.run_end && rec.interrupted, "header, and a run_end line marked interrupted");
	cr_assert_eq(rec.dup_ids, 0);
	cr_assert_gt(rec.requests, 0);
	cr_assert_lt(rec.requests, 4000, "the run was really cut short");
	cr_expect_eq(rec.by_fail[LS_FAIL_CANCELLED], 0, "streams in flight finished within the grace period");
	cJSON *res = t_json_file(r.result_path);
	cr_assert_not_null(res, "the report of what finished was written (%s)", r.result_path);
	long completed = t_json_count(res, "completed"), failed = t_json_count(res, "failed");
	cr_expect_eq(rec.by_fail[LS_OK], (size_t)completed, "record ok %zu, report completed %ld",
		     rec.by_fail[LS_OK], completed);
	cr_expect_eq(rec.requests, (size_t)(completed + failed),
		     "record file has %zu requests, the report completed %ld + failed %ld (requests never sent "
		     "must not count as failed)", rec.requests, completed, failed);
	cJSON_Delete(res);
	t_records_free(&rec);
	free(err);
	finish(&r);
	t_sim_stop(&sim);
}

Test(reliability_interrupt, sigterm_cancels_streams_after_grace, .timeout = 60)
{
	struct t_sim sim;
	/* Every stream stalls after a few frames and would never end. */
	const char *extra[] = { "--step-ms", "2", "--fail-rate", "1", "--fail-kind", "stall", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, extra), 0, "sim did not start");
	struct run r;
	start(&r, t_bin(), &sim, "sigterm.jsonl", "64", "inf", "16", "600");
	usleep(800000);
	kill(r.p.pid, SIGTERM);
	uint64_t sent_ns = ls_now_ns();
	int rc = t_wait(&r.p, 15);
	double took = (double)(ls_now_ns() - sent_ns) / 1e9;
	char *err = t_stderr(&r.p);
	cr_assert_eq(rc, 1, "exit %d (stderr %.1000s)", rc, err);
	cr_expect(took > GRACE_S - 0.1 && took < GRACE_S + 2, "waited %.2f s: the grace period, then cancelled", took);
	struct t_records rec;
	t_records_read(r.record, &rec);
	cr_assert(!rec.torn && rec.header && rec.run_end && rec.interrupted);
	cr_expect_eq(rec.requests, 16, "the 16 streams in flight are recorded, nothing else was sent");
	cr_expect_eq(rec.by_fail[LS_FAIL_CANCELLED], rec.requests, "each ended as cancelled");
	t_records_free(&rec);
	free(err);
	finish(&r);
	t_sim_stop(&sim);
}

Test(reliability_interrupt, kill9_leaves_every_line_whole, .timeout = 60)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "3", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, extra), 0, "sim did not start");
	struct run r;
	start(&r, t_bin(), &sim, "kill9.jsonl", "4000", "1000", "128", "30");
	wait_lines(&r, 50, 20);
	srand((unsigned)ls_now_ns() ^ 9u);
	usleep((useconds_t)(rand() % 700) * 1000);
	kill(r.p.pid, SIGKILL);
	cr_assert_eq(t_wait(&r.p, 10), 128 + SIGKILL);
	struct t_records rec;
	t_records_read(r.record, &rec);
	cr_assert(!rec.torn, "kill -9 left a line cut short");
	cr_assert(rec.header && !rec.run_end, "header, and no run_end: the run never ended");
	cr_assert_eq(rec.dup_ids, 0);
	cr_assert_gt(rec.requests, 50);

	/* The file reads back: the report counts exactly the requests in it. */
	char out_json[192];
	t_tmp(out_json, sizeof(out_json), "kill9-report.json");
	const char *args[] = { "report", r.record, "--save-result", out_json, NULL };
	struct t_proc rp;
	t_spawn(&rp, t_bin(), args);
	int rc = t_wait(&rp, 20);
	char *err = t_stderr(&rp);
	cr_assert_eq(rc, 0, "latscope report on a killed run's file: exit %d (%.500s)", rc, err);
	cJSON *res = t_json_file(out_json);
	cr_assert_not_null(res);
	cr_expect_eq((size_t)(t_json_count(res, "completed") + t_json_count(res, "failed")), rec.requests);
	cJSON_Delete(res);
	free(err);
	t_done(&rp);
	unlink(out_json);
	t_records_free(&rec);
	finish(&r);
	t_sim_stop(&sim);
}
