/* `latscope compare` and `latscope report` against `latscope sim`: speculative decoding read
 * per frame and per token from ONE run, the slot wait that vLLM's and SGLang's clocks hide,
 * the README's comparison table kept in step with the command's output. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "metrics/metrics.h"
#include "report/record_file.h"
#include "t_helpers.h"

static char tmpdir[64];
static struct t_sim sim; /* stopped by teardown too, when a test fails half way */

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/latscope-cmp-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void teardown(void)
{
	t_sim_stop(&sim);
	t_remove_tree(tmpdir);
}

TestSuite(compare, .init = setup, .fini = teardown);

/* The line of a text table that starts with label (then padding). */
static const char *row(const char *out, const char *label)
{
	size_t len = strlen(label);
	for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, label, len) && (p[len] == ' ' || p[len] == '|'))
			return p + len;
	return NULL;
}

/* Column col (0-based) of a numeric row, text or markdown table. */
static double cell(const char *out, const char *label, int col)
{
	const char *p = row(out, label);
	cr_assert_not_null(p, "no row \"%s\" in:\n%s", label, out);
	double v = NAN;
	for (int c = 0; c <= col; c++) {
		while (*p == ' ' || *p == '|')
			p++;
		char *end;
		v = strtod(p, &end);
		cr_assert(end != p, "row \"%s\" column %d is not a number", label, c);
		p = end;
	}
	return v;
}

static char *compare(const char *const *argv)
{
	char *out = NULL, *err = NULL;
	int rc = t_run(argv, &out, &err, 80);
	cr_assert_eq(rc, 0, "compare exited %d\nstdout:\n%s\nstderr:\n%s", rc, out, err);
	free(err);
	return out;
}

/* --step-ms 7.5 --accept-len 3.5: a frame every 7.5 ms carrying 3.5 tokens on average. With
 * the sending rules pinned, vllm and sglang share one run; vLLM's median ITL is the step,
 * SGLang's mean ITL the step over the accept length, and TPOT is the same for both. */
Test(compare, speculative_decoding_one_run_two_readings, .timeout = 60)
{
	const char *sx[] = { "--step-ms", "7.5", "--accept-len", "3.5", "--prefill-token-us", "0", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, sx), 0);
	const char *argv[] = { "compare", "--profiles", "vllm,sglang", "--records-dir", tmpdir, "--base-url", sim.url,
			       "--model", "latscope-sim", "--backend", "sglang", "--arrival", "gamma", "--connection",
			       "reuse", "--num-warmups", "0", "--ignore-eos", "--random-range-semantics", "vllm",
			       "--num-prompts", "16", "--random-input-len", "16", "--random-output-len", "200",
			       "--request-rate", "40", "--seed", "2", NULL };
	char *out = compare(argv);
	t_sim_stop(&sim);
	cr_expect(strstr(out, "2 profiles, 1 run"), "pinned sending rules: one run\n%s", out);
	double v_med = cell(out, "Median ITL (ms)", 0), s_mean = cell(out, "Mean ITL (ms)", 1);
	cr_expect(fabs(v_med / 7.5 - 1) < 0.05, "vllm median ITL %.3f ms, want 7.5 +-5%%", v_med);
	cr_expect(fabs(s_mean / (7.5 / 3.5) - 1) < 0.05, "sglang mean ITL %.3f ms, want 2.14 +-5%%", s_mean);
	double v_tpot = cell(out, "Mean TPOT (ms)", 0), s_tpot = cell(out, "Mean TPOT (ms)", 1);
	cr_expect(fabs(v_tpot / s_tpot - 1) < 0.02, "TPOT %.3f vs %.3f ms: the same in both", v_tpot, s_tpot);
	cr_expect(strstr(out, "  ITL: per-frame vs per-token: "), "the rule row:\n%s", out);

	/* The records re-read later, without a server: the same numbers. */
	char rec[128];
	snprintf(rec, sizeof(rec), "%s/run-1.jsonl", tmpdir);
	const char *rep[] = { "report", rec, "--profile", "sglang", NULL };
	char *again = compare(rep);
	cr_expect(strstr(again, "Backend:"), "sglang's own result block:\n%s", again);
	cr_expect(fabs(cell(again, "Mean ITL (ms):", 0) - s_mean) < 0.011, "report and compare agree:\n%s", again);
	cr_expect(strstr(again, "Checks before you believe a number"), "every report ends with the checks");
	cr_expect(row(again, "Max ITL (ms):") != NULL, "sglang prints max ITL");
	free(again);
	const char *rep2[] = { "report", rec, "--profiles", "vllm,sglang", NULL };
	again = compare(rep2);
	cr_expect(fabs(cell(again, "Median ITL (ms)", 0) - v_med) < 0.011, "%s", again);
	free(again);
	free(out);
}

/* Markdown table rows (labels) between a "| Metric |" header and the next blank line. */
static size_t table_labels(const char *text, char labels[][64], size_t cap)
{
	const char *p = strstr(text, "| Metric |");
	size_t n = 0;
	if (!p)
		return 0;
	p = strchr(p, '\n');
	while (p && (p = strchr(p + 1, '\n')) && p[1] == '|' && n < cap) {
		const char *s = p + 3, *e = strstr(s, " |");
		if (!e)
			break;
		snprintf(labels[n++], 64, "%.*s", (int)(e - s), s);
	}
	return n;
}

/* A rate the server cannot keep up with, at most 2 requests in flight: vLLM's and SGLang's
 * TTFT stay flat (their clocks start after the slot), latscope's grows with the backlog,
 * and compare says how long the slot wait was. The README's table must have the same rows. */
Test(compare, semaphore_hides_the_slot_wait, .timeout = 60)
{
	const char *sx[] = { "--step-ms", "10", "--prefill-token-us", "0", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, sx), 0);
	const char *argv[] = { "compare", "--profiles", "vllm,sglang,honest", "--records-dir", tmpdir, "--markdown",
			       "--base-url", sim.url, "--model", "latscope-sim", "--max-concurrency", "2",
			       "--request-rate", "40", "--num-prompts", "24", "--random-input-len", "16",
			       "--random-output-len", "12", "--ignore-eos", "--num-warmups", "0", NULL };
	char *out = compare(argv);
	t_sim_stop(&sim);
	cr_expect(strstr(out, "3 profiles, 2 runs"), "sglang sends differently: a second run\n%s", out);
	double v = cell(out, "| Mean TTFT (ms)", 0), s = cell(out, "| Mean TTFT (ms)", 1), h = cell(out, "| Mean TTFT (ms)", 2);
	cr_expect(v < 40 && s < 40, "vllm %.1f and sglang %.1f ms: flat, the slot wait is outside their clock", v, s);
	cr_expect(h > 150, "honest %.1f ms: the backlog is inside", h);
	const char *hidden = strstr(out, "hidden slot wait, run 1: admitted - scheduled mean ");
	cr_assert_not_null(hidden, "%s", out);
	double wait = strtod(hidden + strlen("hidden slot wait, run 1: admitted - scheduled mean "), NULL);
	cr_expect(wait > 100, "hidden slot wait %.1f ms", wait);

	/* TTFT from the schedule grows along the run; from the start of the request it does not. */
	char rec[128];
	snprintf(rec, sizeof(rec), "%s/run-1.jsonl", tmpdir);
	struct ls_run run;
	struct ls_record_meta meta;
	cr_assert_eq(ls_record_load(rec, &run, &meta), 0);
	struct ls_read_rules rules = { .origin = LS_ORIGIN_SCHEDULED, .n_percentiles = 1, .percentiles = { 99 } };
	double early[2] = { 0 }, late[2] = { 0 };
	for (size_t i = 0; i < run.n_requests; i++) {
		struct ls_req_view rv;
		cr_assert(ls_request_view(&run.requests[i], &rules, &rv));
		if (run.requests[i].id < 6) {
			early[0] += rv.ttft_s[LS_ORIGIN_SCHEDULED] / 6;
			early[1] += rv.ttft_s[LS_ORIGIN_STARTED] / 6;
		} else if (run.requests[i].id >= 18) {
			late[0] += rv.ttft_s[LS_ORIGIN_SCHEDULED] / 6;
			late[1] += rv.ttft_s[LS_ORIGIN_STARTED] / 6;
		}
	}
	cr_expect(late[0] > 3 * early[0], "honest TTFT grows with the backlog: %.3f -> %.3f s", early[0], late[0]);
	cr_expect(late[1] < 2 * early[1] + 0.01, "vLLM's TTFT does not: %.3f -> %.3f s", early[1], late[1]);
	ls_run_free(&run);

	/* README: section profiles, "Why two harnesses disagree", a table from compare --markdown. */
	char path[512], want[32][64], got[32][64];
	const char *root = getenv("LATSCOPE_ROOT");
	snprintf(path, sizeof(path), "%s/README.md", root ? root : ".");
	char *readme = t_read_file(path, NULL);
	cr_assert_not_null(readme, "cannot read %s", path);
	char *sec = strstr(readme, "<!-- section:profiles -->");
	cr_assert_not_null(sec, "README has no profiles section");
	char *end = strstr(sec, "<!-- /section:profiles -->");
	cr_assert_not_null(end);
	*end = 0;
	char *why = strstr(sec, "Why two harnesses disagree");
	cr_assert_not_null(why, "README lacks \"Why two harnesses disagree\"");
	size_t nw = table_labels(out, want, 32), ng = table_labels(why, got, 32);
	cr_assert_gt(nw, 10);
	cr_expect_eq(ng, nw, "README table has %zu rows, compare prints %zu", ng, nw);
	for (size_t i = 0; i < nw && i < ng; i++)
		cr_expect_str_eq(got[i], want[i], "README row %zu", i);
	static const char *const rule_rows[] = { "  clock: ", "  ITL: per-frame vs per-token: ", "  E2EL end: ",
					     "  output tokens: ", "  hidden slot wait, run 1: " };
	for (size_t i = 0; i < sizeof(rule_rows) / sizeof(rule_rows[0]); i++) {
		cr_expect(strstr(out, rule_rows[i]), "compare prints \"%s\"", rule_rows[i]);
		cr_expect(strstr(why, rule_rows[i]), "README shows \"%s\"", rule_rows[i]);
	}
	free(readme);
	free(out);
}

Test(compare, usage_errors)
{
	const char *bad[][6] = {
		{ "compare", "--profiles", "vllm,nosuch", NULL },
		{ "compare", "--profile", "vllm", NULL },
		{ "compare", "--record", "x.jsonl", NULL },
		{ "compare", "--no-such-flag", NULL },
		{ "report", NULL },
		{ "report", "/nonexistent.jsonl", "--profile", "vllm", NULL },
	};
	const int want[] = { 2, 2, 2, 2, 2, 1 };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *out = NULL, *err = NULL;
		int rc = t_run(bad[i], &out, &err, 10);
		cr_expect_eq(rc, want[i], "%s %s: exit %d, stderr: %s", bad[i][0], bad[i][1] ? bad[i][1] : "", rc, err);
		cr_expect(err && strlen(err) > 10 && !strchr(strchr(err, '\n') ? strchr(err, '\n') + 1 : "", '\n'),
			  "one clear line: %s", err);
		free(out);
		free(err);
	}
}
