/* latscope bench as a command: usage errors, failures by reason, jsonl trace replay, SIGINT. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "report/record_file.h"
#include "t_helpers.h"

Test(bench_cli, help_and_usage_errors, .timeout = 10)
{
	char *out = NULL, *err = NULL;
	const char *help[] = { "bench", "--help", NULL };
	cr_assert_eq(t_run(help, &out, NULL, 10), 0);
	cr_expect(strstr(out, "--max-concurrency") && strstr(out, "--goodput") && strstr(out, "--profile"));
	free(out);
	const char *bad[][4] = { { "bench", "--no-such-flag", NULL }, { "bench", "--request-rate", "x", NULL },
				 { "bench", "--arrival", "closed", NULL } };
	for (size_t i = 0; i < 3; i++) {
		cr_expect_eq(t_run(bad[i], NULL, &err, 10), 2, "%s %s", bad[i][1], bad[i][2] ? bad[i][2] : "");
		size_t lines = 0;
		for (char *p = err; *p; p++)
			lines += *p == '\n';
		cr_expect_eq(lines, 1, "one line: %s", err);
		free(err);
	}
}

Test(bench_cli, no_server_is_a_clear_error, .timeout = 30)
{
	char url[64], *out = NULL, *err = NULL;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", t_free_port());
	const char *argv[] = { "bench", "--base-url", url, "--model", "m", "--num-prompts", "3",
			       "--ready-check-timeout-sec", "1", NULL };
	cr_assert_eq(t_run(argv, &out, &err, 20), 1);
	cr_expect(strstr(err, url), "names the server: %s", err);
	free(out);
	free(err);
	/* Without the ready check the initial test request meets it: a setup error, exit 1. */
	const char *noready[] = { "bench", "--base-url", url, "--model", "m", "--num-prompts", "3",
				  "--ready-check-timeout-sec", "0", "--random-vocab-size", "100", NULL };
	cr_assert_eq(t_run(noready, &out, &err, 20), 1);
	cr_expect(strstr(err, "initial test request") && strstr(err, "connect"), "%s", err);
	free(out);
	free(err);
	/* Without that either, every request fails and says why; no success is exit 3. */
	const char *notest[] = { "bench", "--base-url", url, "--model", "m", "--num-prompts", "3",
				 "--ready-check-timeout-sec", "0", "--random-vocab-size", "100", "--skip-initial-test", NULL };
	cr_assert_eq(t_run(notest, &out, &err, 20), 3);
	cr_expect(strstr(out, "Successful requests:                     0"), "%s", out);
	cr_expect(strstr(out, "connect 3"), "failures by reason: %s", out);
	free(out);
	free(err);
}

Test(bench_cli, faults_are_counted_by_reason, .timeout = 60)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "2", "--fail-rate", "0.5", "--fail-kind", "http500", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, extra), 0);
	char dir[] = "/tmp/latscope-bc-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	const char *argv[] = { "bench", "--base-url", sim.url, "--num-prompts", "40", "--random-input-len", "8",
			       "--random-output-len", "4", "--request-rate", "200", "--save-result", "--result-dir", dir,
			       "--result-filename", "r.json", "--disable-tqdm", NULL };
	char *out = NULL, *err = NULL;
	int rc = t_run(argv, &out, &err, 45);
	t_sim_stop(&sim);
	cr_assert_eq(rc, 0, "%s\n%s", out, err);
	char path[128];
	snprintf(path, sizeof(path), "%s/r.json", dir);
	char *json = t_read_file(path, NULL);
	cr_assert_not_null(json);
	cJSON *res = cJSON_Parse(json);
	int completed = cJSON_GetObjectItemCaseSensitive(res, "completed")->valueint;
	int failed = cJSON_GetObjectItemCaseSensitive(res, "failed")->valueint;
	cr_expect_eq(completed + failed, 40);
	cr_expect_gt(failed, 5, "about half should fail: %d", failed);
	cr_expect_gt(completed, 5);
	const cJSON *fails = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res, "latscope"), "failures");
	const cJSON *http = cJSON_GetObjectItemCaseSensitive(fails, "http_status");
	cr_expect(cJSON_IsNumber(http) && http->valueint == failed, "every failure is http_status");
	const cJSON *errors = cJSON_GetObjectItemCaseSensitive(res, "errors");
	int with_text = 0;
	for (const cJSON *e = errors->child; e; e = e->next)
		with_text += e->valuestring[0] != 0;
	cr_expect_eq(with_text, failed, "an error string per failed request");
	char want[64];
	snprintf(want, sizeof(want), "http_status %d", failed);
	cr_expect(strstr(out, want), "%s", out);
	cJSON_Delete(res);
	free(json);
	unlink(path);
	rmdir(dir);
	free(out);
	free(err);
}

Test(bench_cli, jsonl_trace_replay_follows_timestamps, .timeout = 30)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "2", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, extra), 0);
	char ds[] = "/tmp/latscope-bc-ds-XXXXXX", rec[] = "/tmp/latscope-bc-rec-XXXXXX";
	int fd = mkstemp(ds);
	const char *lines = "{\"prompt\": \"The quick brown fox\", \"output_len\": 3, \"timestamp\": 0.0}\n"
			    "{\"prompt_token_ids\": [300, 301, 302], \"output_len\": 2, \"timestamp\": 0.3}\n"
			    "{\"prompt\": \"jumps over the lazy dog\", \"output_len\": 4, \"timestamp\": 0.35}\n"
			    "{\"prompt\": \"river\", \"output_len\": 1, \"timestamp\": 0.9}\n";
	cr_assert_eq(write(fd, lines, strlen(lines)), (ssize_t)strlen(lines));
	close(fd);
	close(mkstemp(rec));
	const char *argv[] = { "bench", "--base-url", sim.url, "--dataset-name", "jsonl", "--dataset-path", ds,
			       "--arrival", "trace", "--record", rec, "--disable-tqdm", NULL };
	char *out = NULL, *err = NULL;
	int rc = t_run(argv, &out, &err, 20);
	t_sim_stop(&sim);
	cr_assert_eq(rc, 0, "%s\n%s", out, err);
	cr_expect(strstr(out, "Successful requests:                     4"), "%s", out);
	struct ls_run run;
	cr_assert_eq(ls_record_load(rec, &run, NULL), 0);
	cr_assert_eq(run.n_requests, 4);
	const uint64_t want_ms[] = { 0, 300, 350, 900 };
	for (size_t i = 0; i < 4; i++) {
		cr_expect_eq(run.requests[i].scheduled_ns - run.start_ns, want_ms[i] * 1000000ull);
		cr_expect_lt(run.requests[i].started_ns - run.requests[i].scheduled_ns, 5000000ull,
			     "request %zu went out on time", i);
	}
	cr_expect_eq(run.requests[1].prompt_len, 3);
	cr_expect_eq(run.requests[3].output_len, 1);
	ls_run_free(&run);
	unlink(ds);
	t_unlink_record(rec);
	free(out);
	free(err);
}

/* Lines in a file so far (0 when missing). */
static size_t record_lines(const char *path)
{
	size_t len = 0, n = 0;
	char *text = t_read_file(path, &len);
	for (size_t i = 0; text && i < len; i++)
		n += text[i] == '\n';
	free(text);
	return n;
}

/* SIGINT mid-run: a report of the finished requests, and every one of them in the record file. */
Test(bench_cli, sigint_reports_what_finished, .timeout = 40)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "5", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, extra), 0);
	char rec[] = "/tmp/latscope-bc-int-XXXXXX", outp[] = "/tmp/latscope-bc-out-XXXXXX";
	close(mkstemp(rec));
	int out_fd = mkstemp(outp);
	const char *argv[] = { t_bin(), "bench", "--base-url", sim.url, "--num-prompts", "400",
			       "--random-input-len", "16", "--random-output-len", "8", "--request-rate", "40",
			       "--record", rec, "--disable-tqdm", NULL };
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(out_fd, 1);
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	/* Interrupt once 41 requests have finished (the record has their lines), not after a
	 * fixed time a busy host may spend starting up. */
	for (int i = 0; i < 2000 && record_lines(rec) < 1 + 41; i++)
		usleep(10000);
	kill(pid, SIGINT);
	int status = 0;
	for (int i = 0; i < 1000 && waitpid(pid, &status, WNOHANG) != pid; i++)
		usleep(10000);
	t_sim_stop(&sim);
	cr_assert(WIFEXITED(status), "bench did not exit after SIGINT");
	cr_expect_eq(WEXITSTATUS(status), 1);
	char *out = t_read_file(outp, NULL);
	cr_assert_not_null(out);
	cr_expect(strstr(out, "Serving Benchmark Result"), "%s", out);
	cr_expect(strstr(out, "Interrupted:"), "%s", out);
	struct ls_run run;
	struct ls_record_meta meta;
	cr_assert_eq(ls_record_load(rec, &run, &meta), 0);
	cr_expect(meta.complete && run.interrupted, "the run_end line says it was interrupted");
	size_t ok = 0;
	for (size_t i = 0; i < run.n_requests; i++)
		ok += run.requests[i].fail == LS_OK;
	cr_expect_gt(ok, 40, "the 41 requests finished before the interrupt are there: %zu", ok);
	cr_expect_lt(run.n_requests, 400);
	char want[64];
	snprintf(want, sizeof(want), "Successful requests:                     %zu ", ok);
	cr_expect(strstr(out, want), "the report counts exactly the finished requests (%zu):\n%s", ok, out);
	ls_run_free(&run);
	free(out);
	close(out_fd);
	unlink(outp);
	t_unlink_record(rec);
}
