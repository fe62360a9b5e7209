/* test_reliability_faults.c — hostile servers through the whole bench: every fault kind of the
 * simulator ends its request as failed with its named reason (joined request by request with
 * the simulator's truth), the report and the JSON count the same, the run goes on; then the
 * fault storm: 2,000 requests, 20% faults of every kind, 256 in flight, under ASan + LSan. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/clock.h"
#include "t_helpers.h"
#include "test_reliability.h"

/* What the driver must call each simulator fault (record.h names). */
static const struct {
	const char *fault, *fail;
} expect_map[] = {
	{ "none", "ok" },
	{ "http500", "http_status" },
	{ "http429", "http_status" },
	{ "http400-empty", "http_status" },
	{ "http503-empty", "http_status" },
	{ "reset-before-headers", "reset_before_headers" },
	{ "reset-mid-stream", "reset_mid_stream" },
	{ "stall", "timeout" },
	{ "malformed-frame", "malformed_frame" },
	{ "truncated-chunk", "truncated" },
	{ "oversize-frame", "oversize" },
	{ "bad-utf8", "malformed_frame" },
	{ "no-blank-line", "truncated" },
	{ "endless-stream", "oversize" },
	{ "no-headers", "timeout" },
};
#define N_KINDS (sizeof(expect_map) / sizeof(expect_map[0]))

static const char *expected_fail(const char *fault)
{
	for (size_t k = 0; k < N_KINDS; k++)
		if (!strcmp(expect_map[k].fault, fault))
			return expect_map[k].fail;
	cr_assert_fail("the simulator drew an unknown fault \"%s\"", fault);
	return NULL;
}

/* Truth fault of each request id 0..n-1 (NULL: no line, the connection closed after accept). */
static char **truth_faults(const char *truth, const char *run_tag, size_t n)
{
	char **by_id = calloc(n, sizeof(*by_id));
	cr_assert_not_null(by_id);
	char *text = t_read_file(truth, NULL), *save = NULL;
	cr_assert_not_null(text, "no truth file %s", truth);
	size_t tag_len = strlen(run_tag);
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		cJSON *o = cJSON_Parse(line);
		cr_assert_not_null(o, "truth line is not JSON: %.200s", line);
		const char *id = cJSON_GetObjectItem(o, "id")->valuestring;
		cr_assert(!strncmp(id, run_tag, tag_len) && id[tag_len] == '-', "truth id %s is not from this run", id);
		size_t i = strtoul(id + tag_len + 1, NULL, 10);
		cr_assert_lt(i, n);
		cr_assert_null(by_id[i], "request %zu reached the simulator twice", i);
		by_id[i] = strdup(cJSON_GetObjectItem(o, "fault")->valuestring);
		cJSON_Delete(o);
	}
	free(text);
	return by_id;
}

/* Every request's reason against its fault; returns how many of each kind were seen. */
static void check_against_truth(const struct t_records *rec, const char *truth, size_t n, size_t seen[N_KINDS + 1])
{
	char **faults = truth_faults(truth, rec->run_tag, n);
	memset(seen, 0, sizeof(size_t) * (N_KINDS + 1));
	for (size_t i = 0; i < rec->requests; i++) {
		uint64_t id = rec->ids[i];
		cr_assert_lt(id, n);
		const char *fault = faults[id];
		const char *want = fault ? expected_fail(fault) : "reset_before_headers";
		cr_expect_str_eq(rec->fails[i], want, "request %llu: simulator fault %s, latscope says %s (want %s)",
				 (unsigned long long)id, fault ? fault : "close-after-accept (no truth line)",
				 rec->fails[i], want);
		size_t k = N_KINDS; /* close-after-accept */
		for (size_t j = 0; fault && j < N_KINDS; j++)
			if (!strcmp(expect_map[j].fault, fault))
				k = j;
		seen[k]++;
	}
	for (size_t i = 0; i < n; i++)
		free(faults[i]);
	free(faults);
}

/* The report's counts are the record file's: completed, failed, and each reason. */
static void check_report_matches(const cJSON *res, const struct t_records *rec, size_t n)
{
	long completed = t_json_count(res, "completed"), failed = t_json_count(res, "failed");
	cr_expect_eq((size_t)(completed + failed), n, "completed %ld + failed %ld != sent %zu", completed, failed, n);
	cr_expect_eq((size_t)completed, rec->by_fail[LS_OK], "JSON completed %ld, record file ok %zu", completed,
		     rec->by_fail[LS_OK]);
	for (int f = 1; f < LS_FAIL__COUNT; f++)
		cr_expect_eq((size_t)t_json_failures(res, ls_fail_name((enum ls_fail)f)), rec->by_fail[f],
			     "failures.%s: JSON %ld, record file %zu", ls_fail_name((enum ls_fail)f),
			     t_json_failures(res, ls_fail_name((enum ls_fail)f)), rec->by_fail[f]);
}

static void run_bench(const char *bin, struct t_sim *sim, size_t n, const char *conc, const char *conn,
		      const char *timeout, const char *record, const char *result_dir, const char *result,
		      double limit_s, int want_rc, char **out, char **err)
{
	char num[32];
	snprintf(num, sizeof(num), "%zu", n);
	const char *args[] = { "bench", "--base-url", sim->url, "--model", "latscope-sim", "--num-prompts", num,
			       "--max-concurrency", conc, "--connection", conn, "--random-input-len", "16",
			       "--random-output-len", "16", "--random-vocab-size", "300", "--request-timeout", timeout, "--probes", "off",
			       "--ready-check-timeout-sec", "10", "--disable-tqdm", "--record", record, "--save-result",
			       "--result-dir", result_dir, "--result-filename", result,
			       /* every request is faulted here by design: no setup test before the run */
			       "--skip-initial-test", NULL };
	struct t_proc p;
	uint64_t t0 = ls_now_ns();
	t_spawn(&p, bin, args);
	int rc = t_wait(&p, limit_s);
	cr_log_info("bench of %zu requests (%s) took %.2f s", n, bin, (double)(ls_now_ns() - t0) / 1e9);
	*out = t_stdout(&p);
	*err = t_stderr(&p);
	t_done(&p);
	t_assert_clean(*err, "bench");
	cr_assert_eq(rc, want_rc, "bench exited %d (stderr: %.2000s)", rc, *err);
}

Test(reliability_faults, every_kind_fails_with_its_named_reason, .timeout = 60)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "2", "--fail-rate", "1", "--fail-kind", "mixed", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, extra), 0, "sim did not start");
	char record[128], result[64], *out, *err;
	t_tmp(record, sizeof(record), "kinds.jsonl");
	snprintf(result, sizeof(result), "latscope-rel-%d-kinds.json", (int)getpid());
	enum { N = 240 };
	/* Fresh connections: close-after-accept is drawn per connection. */
	/* every request faulted: none succeeded, exit 3 */
	run_bench(t_bin(), &sim, N, "32", "per-request", "0.5", record, "/tmp", result, 40, 3, &out, &err);
	setenv("T_KEEP", "1", 1);
	t_sim_stop(&sim);
	unsetenv("T_KEEP");

	struct t_records rec;
	t_records_read(record, &rec);
	cr_assert(!rec.torn && rec.header && rec.run_end, "record file whole, with header and run end");
	cr_assert_eq(rec.requests, N);
	cr_assert_eq(rec.dup_ids, 0);
	size_t seen[N_KINDS + 1];
	check_against_truth(&rec, sim.truth, N, seen);
	for (size_t k = 1; k < N_KINDS; k++) /* rate 1: every request drew a fault */
		cr_expect_gt(seen[k], 0, "fault %s never drawn in %d requests", expect_map[k].fault, N);
	cr_expect_gt(seen[N_KINDS], 0, "close-after-accept never drawn over %d connections", N);
	cr_expect_eq(seen[0], 0, "fail rate 1, yet %zu requests had no fault", seen[0]);

	char path[256];
	snprintf(path, sizeof(path), "/tmp/%s", result);
	cJSON *res = t_json_file(path);
	cr_assert_not_null(res, "no result JSON %s", path);
	check_report_matches(res, &rec, N);
	cr_expect(strstr(out, "Failed requests by reason:"), "the text report names the reasons");
	char line[1024];
	int len = snprintf(line, sizeof(line), "%zu sent, %zu ok, failed:", rec.requests, rec.by_fail[LS_OK]);
	for (int f = 1; f < LS_FAIL__COUNT && len < (int)sizeof(line) - 64; f++)
		if (rec.by_fail[f])
			len += snprintf(line + len, sizeof(line) - (size_t)len, " %s %zu", ls_fail_name((enum ls_fail)f),
					rec.by_fail[f]);
	cr_log_info("%s", line);
	cJSON_Delete(res);
	t_records_free(&rec);
	free(out);
	free(err);
	unlink(path);
	unlink(record);
	unlink(sim.truth);
	unlink(sim.log);
}

/* 2,000 requests, 20% faults of every kind, 256 in flight, the ASan build: no crash, no leak,
 * each request exactly once in the record file, the report's counts are the file's, and each
 * failure is the one its fault calls for. */
Test(reliability_faults, storm_2000_requests_asan, .timeout = 120)
{
	const char *bin = t_san_bin();
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "2", "--fail-rate", "0.2", "--fail-kind", "mixed", "--max-batch", "512",
				"--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, extra), 0, "sim did not start");
	char record[128], result[64], *out, *err;
	t_tmp(record, sizeof(record), "storm.jsonl");
	snprintf(result, sizeof(result), "latscope-rel-%d-storm.json", (int)getpid());
	enum { N = 2000 };
	run_bench(bin, &sim, N, "256", "reuse", "2", record, "/tmp", result, 100, 0, &out, &err);
	setenv("T_KEEP", "1", 1);
	t_sim_stop(&sim);
	unsetenv("T_KEEP");

	struct t_records rec;
	t_records_read(record, &rec);
	cr_assert(!rec.torn && rec.header && rec.run_end, "record file whole, with header and run end");
	cr_assert_eq(rec.requests, N, "every request once in the record file: %zu lines", rec.requests);
	cr_assert_eq(rec.dup_ids, 0);
	size_t seen[N_KINDS + 1];
	check_against_truth(&rec, sim.truth, N, seen);
	for (size_t k = 1; k < N_KINDS; k++)
		cr_expect_gt(seen[k], 0, "fault %s never drawn", expect_map[k].fault);
	cr_expect_gt(seen[0], N / 2, "most requests had no fault");

	char path[256];
	snprintf(path, sizeof(path), "/tmp/%s", result);
	cJSON *res = t_json_file(path);
	cr_assert_not_null(res, "no result JSON %s", path);
	check_report_matches(res, &rec, N);
	char line[1024];
	int len = snprintf(line, sizeof(line), "%zu sent, %zu ok, failed:", rec.requests, rec.by_fail[LS_OK]);
	for (int f = 1; f < LS_FAIL__COUNT && len < (int)sizeof(line) - 64; f++)
		if (rec.by_fail[f])
			len += snprintf(line + len, sizeof(line) - (size_t)len, " %s %zu", ls_fail_name((enum ls_fail)f),
					rec.by_fail[f]);
	cr_log_info("%s", line);
	cJSON_Delete(res);
	t_records_free(&rec);
	free(out);
	free(err);
	unlink(path);
	unlink(record);
	unlink(sim.truth);
	unlink(sim.log);
}
