/* test_behaviour.c — `latscope bench` end to end against `latscope sim --truth`, for behaviour
 * the other suites do not pin: a second signal cancels at once; the attribution file after an
 * interrupt with probes on; `latscope report` on a record whose last >4 KiB line is cut; the
 * truth's client_closed and server_shutdown; the admitted clock; SGLang's warmup shape;
 * failures hidden from SGLang's headline; --goodput. Every timing bound comes from the run's
 * own truth (its step, its service times), never from a fixed number of milliseconds. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "base/clock.h"
#include "report/record_file.h"
#include "test_driver_common.h"
#include "test_reliability.h"
#include "test_sim_client.h"

TestSuite(behaviour, .fini = t_sim_fini, .timeout = 60);

/* ---- a bench run in a scratch directory ---- */

struct run {
	struct t_proc p;
	char dir[64], record[128], result[128];
	char *out, *err;
	int  rc;
};

/* Starts bench against sim with flags after the common ones: a record file and a result JSON
 * in a fresh /tmp/latscope-beh-* directory. */
static void run_start(struct run *r, const struct t_sim *sim, const char *const *flags)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->dir, sizeof(r->dir), "/tmp/latscope-beh-XXXXXX");
	cr_assert_not_null(mkdtemp(r->dir));
	snprintf(r->record, sizeof(r->record), "%s/rec.jsonl", r->dir);
	snprintf(r->result, sizeof(r->result), "%s/r.json", r->dir);
	const char *args[96] = { "bench", "--base-url", sim->url, "--model", "latscope-sim", "--random-vocab-size", "300",
				 "--disable-tqdm", "--record", r->record, "--save-result", "--result-dir", r->dir,
				 "--result-filename", "r.json" };
	size_t n = 0;
	while (args[n])
		n++;
	for (size_t i = 0; flags[i] && n < 95; i++)
		args[n++] = flags[i];
	args[n] = NULL;
	t_spawn(&r->p, t_bin(), args);
}

/* Waits for it (limit_s) and keeps its exit code, stdout and stderr. */
static void run_wait(struct run *r, double limit_s)
{
	r->rc = t_wait(&r->p, limit_s);
	r->out = t_stdout(&r->p);
	r->err = t_stderr(&r->p);
	t_done(&r->p);
	cr_assert_neq(r->rc, -1, "bench ran past %.0f s; stderr: %.1500s", limit_s, r->err);
}

static void run_expect(struct run *r, const struct t_sim *sim, const char *const *flags, int want_rc, double limit_s)
{
	run_start(r, sim, flags);
	run_wait(r, limit_s);
	cr_assert_eq(r->rc, want_rc, "bench exited %d, want %d; stdout: %.2000s\nstderr: %.1500s", r->rc, want_rc,
		     r->out, r->err);
}

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
	t_remove_tree(r->dir);
	memset(r, 0, sizeof(*r));
}

/* ---- the simulator's truth, per request ---- */

struct truth_req {
	uint64_t received_ns, first_token_ns, last_token_ns, end_ns;
	int      max_tokens, completion_tokens, n_tokens_frames;
	char     reason[32], fault[32];
	uint64_t gaps_ns[256]; /* between token frames */
	size_t   n_gaps;
};

static uint64_t num_u64(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) ? (uint64_t)v->valuedouble : 0;
}

static void truth_parse(const cJSON *o, struct truth_req *t)
{
	memset(t, 0, sizeof(*t));
	t->received_ns = num_u64(o, "received");
	t->end_ns = num_u64(o, "finished") ? num_u64(o, "finished") : num_u64(o, "failed");
	t->max_tokens = (int)num_u64(o, "max_tokens");
	t->completion_tokens = (int)num_u64(o, "completion_tokens");
	const cJSON *reason = cJSON_GetObjectItemCaseSensitive(o, "reason");
	const cJSON *fault = cJSON_GetObjectItemCaseSensitive(o, "fault");
	snprintf(t->reason, sizeof(t->reason), "%s", cJSON_IsString(reason) ? reason->valuestring : "");
	snprintf(t->fault, sizeof(t->fault), "%s", cJSON_IsString(fault) ? fault->valuestring : "");
	const cJSON *f;
	cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(o, "frames"))
	{
		const cJSON *kind = cJSON_GetObjectItemCaseSensitive(f, "kind");
		if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "tokens"))
			continue;
		uint64_t at = num_u64(f, "t");
		if (!t->first_token_ns)
			t->first_token_ns = at;
		else if (t->n_gaps < sizeof(t->gaps_ns) / sizeof(t->gaps_ns[0]))
			t->gaps_ns[t->n_gaps++] = at - t->last_token_ns;
		t->last_token_ns = at;
		t->n_tokens_frames++;
	}
}

/* The truth of request "<tag>-<id>", waiting up to 3 s for its line (the sim appends it as the
 * request ends, which can trail the client by a moment). */
static void truth_of(const char *path, const char *tag, uint64_t id, struct truth_req *t)
{
	char want[96];
	snprintf(want, sizeof(want), "%s-%llu", tag, (unsigned long long)id);
	for (int tries = 0; tries < 300; tries++) {
		cJSON **lines = NULL;
		int n = t_truth_lines(path, &lines), found = 0;
		for (int i = 0; i < n && !found; i++) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(lines[i], "id");
			if (cJSON_IsString(v) && !strcmp(v->valuestring, want)) {
				truth_parse(lines[i], t);
				found = 1;
			}
		}
		t_truth_lines_free(lines, n);
		if (found)
			return;
		usleep(10000);
	}
	cr_assert_fail("no truth line for %s in %s", want, path);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* The sim's real step in this run: the median gap between token frames over all of truth. */
static uint64_t truth_step_ns(const struct truth_req *t, size_t n)
{
	uint64_t gaps[4096];
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < t[i].n_gaps && m < sizeof(gaps) / sizeof(gaps[0]); k++)
			gaps[m++] = t[i].gaps_ns[k];
	cr_assert_gt(m, 0, "the truth has no gap between token frames");
	qsort(gaps, m, sizeof(gaps[0]), cmp_u64);
	return gaps[m / 2];
}

/* ---- small readers ---- */

static double json_path(const cJSON *o, const char *const *keys)
{
	for (size_t i = 0; keys[i]; i++) {
		o = cJSON_GetObjectItemCaseSensitive(o, keys[i]);
		cr_assert_not_null(o, "result JSON has no \"%s\"", keys[i]);
	}
	cr_assert(cJSON_IsNumber(o), "result JSON: \"%s\" is not a number", keys[0]);
	return o->valuedouble;
}

/* The first frame with choices (the vllm/honest TTFT gate), 0 when none. */
static uint64_t first_choices_ns(const struct ls_request *r)
{
	for (uint32_t f = 0; f < r->n_frames; f++)
		if (r->frames[f].flags & LS_FRAME_CHOICES)
			return r->frames[f].arrived_ns;
	return 0;
}

/* The text report's headline block: from its "Serving Benchmark Result" title to the rule of
 * '=' that closes it (malloc'd). */
static char *headline_block(const char *out)
{
	const char *start = strstr(out, "Serving Benchmark Result");
	cr_assert_not_null(start, "no headline block in: %.1000s", out);
	const char *end = strstr(start, "\n=====");
	cr_assert_not_null(end);
	return strndup(start, (size_t)(end - start));
}

/* The number after label in text, or -1 when the label is not there. */
static double number_after(const char *text, const char *label)
{
	const char *at = strstr(text, label);
	return at ? strtod(at + strlen(label), NULL) : -1;
}

/* Lines of the --record file (whole ones). */
static size_t count_lines(const char *path)
{
	size_t len = 0, nl = 0;
	char *text = t_read_file(path, &len);
	for (size_t i = 0; text && i < len; i++)
		nl += text[i] == '\n';
	free(text);
	return nl;
}

/* ---- 3. the second signal ---- */

Test(behaviour, second_signal_cancels_streams_at_once, .timeout = 30)
{
	struct t_sim sim;
	/* every stream stalls after a few frames and would never end */
	const char *extra[] = { "--step-ms", "2", "--fail-rate", "1", "--fail-kind", "stall", "--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	const char *flags[] = { "--num-prompts", "64", "--max-concurrency", "16", "--random-input-len", "16",
				"--random-output-len", "32", "--ignore-eos", "--request-timeout", "600", "--probes", "off",
				"--skip-initial-test", NULL };
	struct run r;
	run_start(&r, &sim, flags);
	usleep(800000);
	cr_assert_eq(kill(r.p.pid, SIGINT), 0);
	usleep(300000);
	cr_assert_eq(waitpid(r.p.pid, NULL, WNOHANG), 0, "bench left before the second signal: the first one's "
		     "grace period (2 s) should hold it while its streams stall");
	cr_assert_eq(kill(r.p.pid, SIGINT), 0);
	uint64_t second_ns = ls_now_ns();
	run_wait(&r, 10);
	double took_s = (double)(ls_now_ns() - second_ns) / 1e9;
	cr_assert_eq(r.rc, 1, "an interrupted run exits 1, got %d (stderr %.1000s)", r.rc, r.err);
	cr_expect_lt(took_s, 1.0, "bench exited %.2f s after the second signal", took_s);
	cr_expect(strstr(r.err, "again to cancel"), "the first signal says a second one cancels: %.500s", r.err);

	struct t_records rec;
	t_records_read(r.record, &rec);
	cr_assert(!rec.torn && rec.header && rec.run_end && rec.interrupted, "whole record file, run end interrupted");
	cr_assert_gt(rec.requests, 0, "streams were in flight");
	cr_expect_lt(rec.requests, 64, "requests never sent have no line");
	cr_expect_eq(rec.by_fail[LS_FAIL_CANCELLED], rec.requests, "every stream in flight cancelled: %zu of %zu",
		     rec.by_fail[LS_FAIL_CANCELLED], rec.requests);
	cr_log_info("second signal: exit %.3f s after it, %zu streams cancelled", took_s, rec.requests);
	t_records_free(&rec);
	run_free(&r);
	t_sim_stop_checked(&sim);
}

/* ---- 4. probes and an interrupt ---- */

/* Ids of the attribution file's request lines; checks its header names the record file. */
static size_t attribution_ids(const char *path, const char *record, uint64_t *ids, size_t cap)
{
	char *text = t_read_file(path, NULL), *save = NULL;
	cr_assert_not_null(text, "no attribution file %s after the interrupt", path);
	size_t n = 0, lineno = 0;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save), lineno++) {
		cJSON *o = cJSON_Parse(line);
		cr_assert_not_null(o, "%s:%zu is not JSON", path, lineno + 1);
		if (!lineno) {
			const cJSON *rec = cJSON_GetObjectItemCaseSensitive(o, "record");
			cr_expect(cJSON_GetObjectItemCaseSensitive(o, "latscope_attribution"), "line 1 is the header");
			cr_expect(cJSON_IsString(rec) && !strcmp(rec->valuestring, record), "header names %s", record);
		} else {
			cr_assert_lt(n, cap);
			cr_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, "id")), "line %zu has an id", lineno + 1);
			ids[n++] = num_u64(o, "id");
		}
		cJSON_Delete(o);
	}
	free(text);
	return n;
}

Test(behaviour, sigint_with_probes_leaves_the_attribution_file, .timeout = 60)
{
	if (!t_is_root() || access("/sys/kernel/btf/vmlinux", R_OK))
		cr_skip_test("the probes need root and kernel BTF (/sys/kernel/btf/vmlinux)");
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "5", "--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)sim.pid);
	const char *flags[] = { "--num-prompts", "400", "--request-rate", "100", "--max-concurrency", "16",
				"--random-input-len", "16", "--random-output-len", "16", "--ignore-eos",
				"--request-timeout", "30", "--probes", "on", "--server-pid", pid, NULL };
	struct run r;
	run_start(&r, &sim, flags);
	uint64_t t0 = ls_now_ns();
	while (count_lines(r.record) < 21 && ls_now_ns() - t0 < 30000000000ull)
		usleep(20000);
	cr_assert_geq(count_lines(r.record), 21, "the run wrote 20 requests in 30 s");
	cr_assert_eq(kill(r.p.pid, SIGINT), 0);
	run_wait(&r, 20);
	cr_assert_eq(r.rc, 1, "an interrupted run exits 1, got %d (stderr %.1500s)", r.rc, r.err);

	struct t_records rec;
	t_records_read(r.record, &rec);
	cr_assert(!rec.torn && rec.header && rec.run_end && rec.interrupted);
	cr_assert_lt(rec.requests, 400, "the run was cut short");
	char path[160];
	snprintf(path, sizeof(path), "%s/rec.attribution.jsonl", r.dir);
	uint64_t *ids = calloc(400, sizeof(*ids));
	size_t n = attribution_ids(path, r.record, ids, 400);
	cr_expect_eq(n, rec.requests, "a line per finished request: %zu lines, %zu requests", n, rec.requests);
	qsort(ids, n, sizeof(*ids), cmp_u64);
	for (size_t i = 0; i < rec.requests; i++)
		cr_expect(bsearch(&rec.ids[i], ids, n, sizeof(*ids), cmp_u64), "request %llu has no attribution line",
			  (unsigned long long)rec.ids[i]);
	cr_log_info("probes + SIGINT: %zu requests finished, %zu attribution lines", rec.requests, n);
	free(ids);
	t_records_free(&rec);
	run_free(&r);
	t_sim_stop_checked(&sim);
}

/* ---- 5. a cut last line ---- */

Test(behaviour, report_reads_a_record_whose_last_long_line_is_cut, .timeout = 60)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "1", "--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	/* 128 frames a request: each record line is over 4 KiB */
	const char *flags[] = { "--num-prompts", "6", "--max-concurrency", "1", "--random-input-len", "16",
				"--random-output-len", "128", "--ignore-eos", "--probes", "off", NULL };
	struct run r;
	run_expect(&r, &sim, flags, 0, 40);
	t_sim_stop_checked(&sim);

	size_t len = 0;
	char *text = t_read_file(r.record, &len);
	cr_assert(text && len > 2 && text[len - 1] == '\n');
	/* the last request line is the one before the run_end line */
	char *run_end = text + len - 1;
	while (run_end > text && run_end[-1] != '\n')
		run_end--;
	char *last = run_end - 1;
	while (last > text && last[-1] != '\n')
		last--;
	size_t start = (size_t)(last - text), end = (size_t)(run_end - text), lineno = 1;
	for (size_t i = 0; i < start; i++)
		lineno += text[i] == '\n';
	cr_assert_gt(end - start, 4096, "the last request line is %zu bytes, want over 4 KiB", end - start);
	/* kill -9 can cut a line over 4 KiB at a page boundary of the file */
	size_t cut = (start / 4096 + 1) * 4096;
	cr_assert_lt(cut, end - 1);
	char cut_path[160], json_path_[160];
	snprintf(cut_path, sizeof(cut_path), "%s/cut.jsonl", r.dir);
	snprintf(json_path_, sizeof(json_path_), "%s/cut.json", r.dir);
	FILE *f = fopen(cut_path, "w");
	cr_assert(f && fwrite(text, 1, cut, f) == cut && !fclose(f));
	free(text);

	const char *argv[] = { "report", cut_path, "--save-result", json_path_, NULL };
	char *out = NULL, *err = NULL;
	int rc = t_run(argv, &out, &err, 30);
	cr_assert_eq(rc, 0, "report on a cut file: exit %d (%.500s)", rc, err);
	char warn[256];
	snprintf(warn, sizeof(warn), "%s:%zu: last line is cut short", cut_path, lineno);
	cr_expect(strstr(err, warn), "report warns '%s': %.500s", warn, err);
	char *head = headline_block(out);
	cr_expect_eq(number_after(head, "Successful requests:"), 5, "the 5 whole requests: %s", head);
	cr_expect_eq(number_after(head, "Failed requests:"), 0);
	free(head);
	cr_expect(strstr(out, "Interrupted:                             yes"),
		  "no run end line: the report says the run did not finish");
	cJSON *res = t_json_file(json_path_);
	cr_assert_not_null(res);
	cr_expect_eq(t_json_count(res, "completed"), 5);
	cr_expect_eq(t_json_count(res, "failed"), 0);
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(res, "latscope"), "interrupted")),
		  "the JSON marks the run interrupted (no run end line)");
	cJSON_Delete(res);
	free(out);
	free(err);
	run_free(&r);
}

/* ---- 6. the truth's reasons when a side leaves ---- */

Test(behaviour, truth_reason_client_closed, .timeout = 30)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "10", "--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	/* 100 tokens at 10 ms a step: a second of stream, the client leaves after 0.3 s */
	const char *flags[] = { "--num-prompts", "4", "--random-input-len", "16", "--random-output-len", "100",
				"--ignore-eos", "--request-timeout", "0.3", "--probes", "off", "--skip-initial-test", NULL };
	struct run r;
	run_expect(&r, &sim, flags, 3, 20);
	struct t_records rec;
	t_records_read(r.record, &rec);
	cr_assert_eq(rec.requests, 4);
	cr_expect_eq(rec.by_fail[LS_FAIL_TIMEOUT], 4, "every request timed out at the client");
	for (uint64_t i = 0; i < 4; i++) {
		struct truth_req t;
		truth_of(sim.truth, rec.run_tag, i, &t);
		cr_expect_str_eq(t.reason, "client_closed", "request %llu: truth reason %s", (unsigned long long)i,
				 t.reason);
		cr_expect_str_eq(t.fault, "none");
		cr_expect(t.completion_tokens > 0 && t.completion_tokens < t.max_tokens,
			  "it left mid-stream: %d of %d tokens", t.completion_tokens, t.max_tokens);
	}
	t_records_free(&rec);
	run_free(&r);
	t_sim_stop_checked(&sim);
}

/* A metric of the sim's /metrics (vllm name), -1 when it did not answer. */
static long sim_metric(int port, const char *name)
{
	struct t_resp resp;
	memset(&resp, 0, sizeof(resp));
	t_request(port, "GET", "/metrics", NULL, NULL, &resp, 2000);
	long v = -1;
	char line[96];
	snprintf(line, sizeof(line), "\n%s{", name);
	const char *at = resp.body ? strstr(resp.body, line) : NULL;
	if (at && (at = strchr(at, '}')))
		v = strtol(at + 1, NULL, 10);
	t_resp_free(&resp);
	return v;
}

Test(behaviour, truth_reason_server_shutdown, .timeout = 30)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "10", "--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	const char *flags[] = { "--num-prompts", "4", "--random-input-len", "16", "--random-output-len", "100",
				"--ignore-eos", "--probes", "off", "--skip-initial-test", NULL };
	struct run r;
	run_start(&r, &sim, flags);
	uint64_t t0 = ls_now_ns();
	/* mid-stream: all 4 in the batch, and a couple of steps of tokens out */
	while ((sim_metric(sim.port, "vllm:num_requests_running") < 4 ||
		sim_metric(sim.port, "vllm:generation_tokens_total") < 8) && ls_now_ns() - t0 < 10000000000ull)
		usleep(10000);
	cr_assert_eq(sim_metric(sim.port, "vllm:num_requests_running"), 4, "the 4 streams are running in the sim");
	cr_assert_geq(sim_metric(sim.port, "vllm:generation_tokens_total"), 8, "and streaming");
	setenv("T_KEEP", "1", 1); /* SIGTERM, and keep the truth to read */
	t_sim_stop_checked(&sim);
	unsetenv("T_KEEP");
	run_wait(&r, 15);
	cr_assert_eq(r.rc, 3, "no request finished: exit %d (%.1000s)", r.rc, r.err);
	struct t_records rec;
	t_records_read(r.record, &rec);
	cr_assert_eq(rec.requests, 4);
	cr_expect_eq(rec.by_fail[LS_FAIL_RESET_MID_STREAM], 4, "the server closed every stream mid-way");
	for (uint64_t i = 0; i < 4; i++) {
		struct truth_req t;
		truth_of(sim.truth, rec.run_tag, i, &t);
		cr_expect_str_eq(t.reason, "server_shutdown", "request %llu: truth reason %s", (unsigned long long)i,
				 t.reason);
		cr_expect(t.completion_tokens > 0 && t.completion_tokens < t.max_tokens,
			  "shut down mid-stream: %d of %d tokens", t.completion_tokens, t.max_tokens);
	}
	t_records_free(&rec);
	run_free(&r);
	unlink(sim.truth);
	unlink(sim.log);
}

/* ---- 7. the admitted clock ---- */

/* Per request of a 2-slot run: TTFT from admitted against the truth's service time, the slot
 * wait against the truth's request durations; returns the means (ms) the JSON must show. */
static void check_admitted_ttft(const struct ls_run *run, const char *tag, const char *truth, double *ttft_ms,
				double *slot_ms)
{
	struct truth_req t[6];
	cr_assert_eq(run->n_requests, 6);
	uint64_t min_duration_ns = UINT64_MAX;
	for (size_t i = 0; i < 6; i++) {
		truth_of(truth, tag, run->requests[i].id, &t[i]);
		if (t[i].end_ns - t[i].received_ns < min_duration_ns)
			min_duration_ns = t[i].end_ns - t[i].received_ns;
	}
	uint64_t step_ns = truth_step_ns(t, 6);
	size_t waited = 0;
	*ttft_ms = *slot_ms = 0;
	for (size_t i = 0; i < 6; i++) {
		const struct ls_request *r = &run->requests[i];
		cr_assert_eq(r->fail, LS_OK, "request %zu: %s", i, r->error);
		uint64_t first = first_choices_ns(r), service = t[i].first_token_ns - t[i].received_ns;
		cr_assert(first && r->admitted_ns && r->admitted_ns <= t[i].received_ns);
		uint64_t ttft = first - r->admitted_ns;
		/* admitted -> sent -> the sim read it (network), its service, the frame's delivery */
		cr_expect(ttft >= service && ttft - service < step_ns,
			  "request %zu: TTFT from admitted %.3f ms, the sim's service %.3f ms (a step is %.3f ms)", i,
			  (double)ttft / 1e6, (double)service / 1e6, (double)step_ns / 1e6);
		/* 2 slots: the other 4 waited for one to free, at least a whole request of the truth */
		waited += r->admitted_ns - r->scheduled_ns >= min_duration_ns;
		*ttft_ms += (double)ttft / 1e6 / 6;
		*slot_ms += (double)(r->admitted_ns - r->scheduled_ns) / 1e6 / 6;
	}
	cr_expect_eq(waited, 4, "%zu requests waited a whole request (%.2f ms) for a slot, want 4", waited,
		     (double)min_duration_ns / 1e6);
}

static void admitted_clock_under(const char *profile, const char *headline_clock)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "10", "--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	const char *flags[] = { "--profile", profile, "--num-prompts", "6", "--max-concurrency", "2",
				"--request-rate", "inf", "--random-input-len", "16", "--random-output-len", "8",
				"--ignore-eos", "--probes", "off", "--skip-initial-test", NULL };
	struct run r;
	run_expect(&r, &sim, flags, 0, 30);
	struct ls_run run;
	struct ls_record_meta meta;
	cr_assert_eq(ls_record_load(r.record, &run, &meta), 0);
	double ttft_ms, slot_ms;
	check_admitted_ttft(&run, meta.run_tag, sim.truth, &ttft_ms, &slot_ms);
	t_sim_stop_checked(&sim);

	cJSON *res = t_json_file(r.result);
	cr_assert_not_null(res);
	const char *adm[] = { "latscope", "ttft_by_clock", "admitted", "mean_ms", NULL };
	const char *sched[] = { "latscope", "ttft_by_clock", "scheduled", "mean_ms", NULL };
	const char *slot[] = { "latscope", "slot_wait", "mean_ms", NULL };
	const char *head[] = { "mean_ttft_ms", NULL };
	cr_expect_float_eq(json_path(res, adm), ttft_ms, 1e-3, "%s: TTFT from admitted %.6f ms, records %.6f", profile,
			   json_path(res, adm), ttft_ms);
	cr_expect_float_eq(json_path(res, slot), slot_ms, 1e-3, "%s: slot wait %.6f ms, records %.6f", profile,
			   json_path(res, slot), slot_ms);
	cr_expect_float_eq(json_path(res, sched), slot_ms + ttft_ms, 1e-3, "from scheduled = slot wait + from admitted");
	const char *want = !strcmp(headline_clock, "admitted") ? "admitted" : "scheduled";
	const char *const *clock = !strcmp(want, "admitted") ? adm : sched;
	cr_expect_float_eq(json_path(res, head), json_path(res, clock), 1e-9, "%s: the headline TTFT is from %s", profile,
			   want);
	char line[128];
	snprintf(line, sizeof(line), "Clock of TTFT and E2EL above:            %s", want);
	cr_expect(strstr(r.out, line), "%s: the report names its clock (%s)", profile, line);
	cr_expect(strstr(r.out, "Slot wait, admitted - scheduled (ms):") && strstr(r.out, "(n=6)"),
		  "%s: the slot wait is in the report", profile);
	cr_log_info("%s: TTFT from admitted %.2f ms, slot wait %.2f ms (mean)", profile, ttft_ms, slot_ms);
	cJSON_Delete(res);
	ls_run_free(&run);
	run_free(&r);
}

Test(behaviour, admitted_clock_end_to_end, .timeout = 60)
{
	admitted_clock_under("honest", "scheduled");
	char path[] = "/tmp/latscope-beh-prof-XXXXXX.json";
	int fd = mkstemps(path, 5);
	cr_assert_geq(fd, 0);
	static const char prof[] = "{\"base\":\"vllm\",\"clock\":\"admitted\"}\n";
	cr_assert_eq(write(fd, prof, sizeof(prof) - 1), (ssize_t)(sizeof(prof) - 1));
	close(fd);
	admitted_clock_under(path, "admitted");
	unlink(path);
}

/* ---- 8. SGLang's warmup ---- */

Test(behaviour, sglang_warmup_shape, .timeout = 30)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "5", "--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	const char *flags[] = { "--num-prompts", "3", "--num-warmups", "1", "--warmup-shape", "sglang",
				"--random-input-len", "16", "--random-output-len", "64", "--ignore-eos", "--probes", "off",
				"--skip-initial-test", NULL };
	struct run r;
	run_expect(&r, &sim, flags, 0, 20);
	struct ls_run run;
	struct ls_record_meta meta;
	cr_assert_eq(ls_record_load(r.record, &run, &meta), 0);
	cr_assert_eq(run.n_requests, 4, "a warmup and 3 measured requests");
	struct truth_req warm = { 0 };
	uint64_t first_measured_ns = UINT64_MAX;
	size_t n_warm = 0;
	for (size_t i = 0; i < run.n_requests; i++) {
		struct truth_req t;
		truth_of(sim.truth, meta.run_tag, run.requests[i].id, &t);
		if (run.requests[i].warmup) {
			warm = t;
			n_warm++;
			continue;
		}
		cr_expect_eq(t.max_tokens, 64, "a measured request asks its own length");
		if (t.received_ns < first_measured_ns)
			first_measured_ns = t.received_ns;
	}
	t_sim_stop_checked(&sim);
	cr_assert_eq(n_warm, 1);
	cr_expect_eq(warm.max_tokens, 32, "the warmup's output is capped at 32: max_tokens %d", warm.max_tokens);
	cr_expect_eq(warm.completion_tokens, 32);
	cr_assert(warm.end_ns && first_measured_ns != UINT64_MAX);
	cr_expect_geq(first_measured_ns, warm.end_ns + 1000000000ull,
		      "1 s between the warmup's end and the first measured request: %.3f s",
		      ((double)first_measured_ns - (double)warm.end_ns) / 1e9);
	cr_log_info("sglang warmup: 32 tokens, then %.3f s before the first measured request",
		    ((double)first_measured_ns - (double)warm.end_ns) / 1e9);
	ls_run_free(&run);
	run_free(&r);
}

/* ---- 9. failures and SGLang's headline ---- */

Test(behaviour, sglang_headline_hides_failures_honest_counts_them, .timeout = 30)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "2", "--fail-rate", "0.3", "--fail-kind", "http500", "--seed", "5",
				"--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	enum { N = 20 };
	const char *flags[] = { "--profile", "sglang", "--num-warmups", "0", "--num-prompts", "20",
				"--random-input-len", "16", "--random-output-len", "8", "--random-range-ratio", "1",
				"--probes", "off", "--skip-initial-test", NULL };
	struct run r;
	run_expect(&r, &sim, flags, 0, 20);
	struct t_records rec;
	t_records_read(r.record, &rec);
	cr_assert_eq(rec.requests, N);
	size_t faulted = 0;
	for (uint64_t i = 0; i < N; i++) {
		struct truth_req t;
		truth_of(sim.truth, rec.run_tag, i, &t);
		faulted += !strcmp(t.fault, "http500");
	}
	t_sim_stop_checked(&sim);
	cr_assert(faulted > 0 && faulted < N, "the sim faulted %zu of %d", faulted, N);
	cr_expect_eq(rec.by_fail[LS_FAIL_HTTP_STATUS], faulted);

	char *head = headline_block(r.out);
	cr_expect_eq(number_after(head, "Successful requests:"), (double)(N - faulted), "%s", head);
	cr_expect_null(strstr(head, "Failed"), "sglang's headline does not print failures: %s", head);
	free(head);
	char reason[96];
	snprintf(reason, sizeof(reason), "Failed requests by reason:               http_status %zu", faulted);
	cr_expect(strstr(r.out, reason), "latscope's own section counts them (%s)", reason);

	const char *argv[] = { "report", r.record, "--profile", "honest", NULL };
	char *out = NULL, *err = NULL;
	int rc = t_run(argv, &out, &err, 20);
	cr_assert_eq(rc, 0, "report --profile honest: exit %d (%.500s)", rc, err);
	head = headline_block(out);
	cr_expect_eq(number_after(head, "Successful requests:"), (double)(N - faulted), "%s", head);
	cr_expect_eq(number_after(head, "Failed requests:"), (double)faulted, "honest's headline counts %zu failed: %s",
		     faulted, head);
	cr_log_info("http500 on %zu of %d: sglang headline silent, honest counts them", faulted, N);
	free(head);
	free(out);
	free(err);
	t_records_free(&rec);
	run_free(&r);
}

/* ---- 10. goodput ---- */

/* Requests alone on the server (1 slot): short or long prompt (TTFT: one step, or one step plus
 * 800 tokens of prefill), short or long output (E2EL). */
static const struct {
	unsigned prompt_len, output_len;
} goodput_reqs[] = { { 8, 4 }, { 8, 20 }, { 800, 4 }, { 8, 4 }, { 8, 20 }, { 800, 4 } };
#define N_GOODPUT (sizeof(goodput_reqs) / sizeof(goodput_reqs[0]))

static void write_goodput_dataset(const char *path)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	for (size_t i = 0; i < N_GOODPUT; i++) {
		fprintf(f, "{\"prompt_token_ids\":[");
		for (unsigned k = 0; k < goodput_reqs[i].prompt_len; k++)
			fprintf(f, "%s%u", k ? "," : "", 20 + (k + 7 * (unsigned)i) % 200);
		fprintf(f, "],\"output_len\":%u}\n", goodput_reqs[i].output_len);
	}
	cr_assert_eq(fclose(f), 0);
}

/* The truth's TTFT and E2EL (to the last token frame, vllm's end) of each request, ns. */
static void goodput_truth(const struct run *r, const struct t_sim *sim, uint64_t *ttft, uint64_t *e2el,
			  uint64_t *step_ns)
{
	struct t_records rec;
	t_records_read(r->record, &rec);
	cr_assert_eq(rec.requests, N_GOODPUT);
	struct truth_req t[N_GOODPUT];
	for (size_t i = 0; i < N_GOODPUT; i++) {
		truth_of(sim->truth, rec.run_tag, i, &t[i]);
		ttft[i] = t[i].first_token_ns - t[i].received_ns;
		e2el[i] = t[i].last_token_ns - t[i].received_ns;
	}
	*step_ns = truth_step_ns(t, N_GOODPUT);
	t_records_free(&rec);
}

/* Midway between the largest of the values that meet it and the smallest of those that do not. */
static double split_ms(const uint64_t *v, const int *meets)
{
	uint64_t in_max = 0, out_min = UINT64_MAX;
	for (size_t i = 0; i < N_GOODPUT; i++) {
		if (meets[i] && v[i] > in_max)
			in_max = v[i];
		if (!meets[i] && v[i] < out_min)
			out_min = v[i];
	}
	cr_assert_lt(in_max, out_min, "the truth does not separate the requests (%llu vs %llu ns)",
		     (unsigned long long)in_max, (unsigned long long)out_min);
	return ((double)in_max + (double)out_min) / 2e6;
}

Test(behaviour, goodput_counts_the_requests_within_both_slos, .timeout = 60)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "10", "--prefill-token-us", "100", "--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	char dataset[] = "/tmp/latscope-beh-ds-XXXXXX.jsonl";
	int fd = mkstemps(dataset, 6);
	cr_assert_geq(fd, 0);
	close(fd);
	write_goodput_dataset(dataset);
	const char *base[] = { "--dataset-name", "jsonl", "--dataset-path", dataset, "--num-prompts", "6",
			       "--max-concurrency", "1", "--ignore-eos", "--probes", "off", "--skip-initial-test", NULL };
	/* A first run gives the thresholds: TTFT between the short and long prompts, E2EL
	 * between the short and the long outputs, so only the short-short requests meet both. */
	struct run cal;
	run_expect(&cal, &sim, base, 0, 30);
	uint64_t ttft[N_GOODPUT], e2el[N_GOODPUT], step_ns;
	goodput_truth(&cal, &sim, ttft, e2el, &step_ns);
	int short_prompt[N_GOODPUT], short_output[N_GOODPUT];
	for (size_t i = 0; i < N_GOODPUT; i++) {
		short_prompt[i] = goodput_reqs[i].prompt_len < 100;
		short_output[i] = goodput_reqs[i].output_len < 10;
	}
	double ttft_slo = split_ms(ttft, short_prompt), e2el_slo = split_ms(e2el, short_output);
	run_free(&cal);

	char slo_ttft[64], slo_e2el[64];
	snprintf(slo_ttft, sizeof(slo_ttft), "ttft:%.3f", ttft_slo);
	snprintf(slo_e2el, sizeof(slo_e2el), "e2el:%.3f", e2el_slo);
	const char *flags[] = { base[0], base[1], base[2], base[3], base[4], base[5], base[6], base[7], base[8],
				base[9], base[10], base[11], "--goodput", slo_ttft, slo_e2el, NULL };
	struct run r;
	run_expect(&r, &sim, flags, 0, 30);
	goodput_truth(&r, &sim, ttft, e2el, &step_ns);
	t_sim_stop_checked(&sim);
	/* This run's own truth says which meet both, each a step clear of its threshold (the
	 * client adds the network and the delivery, well under a step). */
	size_t good = 0;
	for (size_t i = 0; i < N_GOODPUT; i++) {
		double t_ms = (double)ttft[i] / 1e6, e_ms = (double)e2el[i] / 1e6, step_ms = (double)step_ns / 1e6;
		cr_assert(t_ms < ttft_slo - step_ms || t_ms > ttft_slo, "request %zu: TTFT %.3f ms within a step of %.3f",
			  i, t_ms, ttft_slo);
		cr_assert(e_ms < e2el_slo - step_ms || e_ms > e2el_slo, "request %zu: E2EL %.3f ms within a step of %.3f",
			  i, e_ms, e2el_slo);
		good += t_ms < ttft_slo && e_ms < e2el_slo;
	}
	cr_expect_eq(good, 2, "the two short-prompt, short-output requests meet both SLOs (truth: %zu)", good);
	cJSON *res = t_json_file(r.result);
	cr_assert_not_null(res);
	const char *gp[] = { "request_goodput", NULL }, *dur[] = { "duration", NULL };
	double want = (double)good / json_path(res, dur);
	cr_expect_float_eq(json_path(res, gp), want, 1e-9 * want, "goodput %.6f req/s, want %zu / %.6f s = %.6f",
			   json_path(res, gp), good, json_path(res, dur), want);
	cr_expect_float_eq(number_after(r.out, "Request goodput (req/s):"), want, 0.006, "the text shows it: %.1500s",
			   r.out);
	cr_log_info("goodput %s %s: %zu of %zu, %.4f req/s", slo_ttft, slo_e2el, good, N_GOODPUT, want);
	cJSON_Delete(res);
	run_free(&r);
	unlink(dataset);
}
