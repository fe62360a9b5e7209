/* `latscope compare` and `latscope report` against `latscope sim`: speculative decoding read
 * per frame and per token from ONE run, the slot wait that vLLM's and SGLang's clocks hide,
 * the comparison table of docs/compare.md kept in step with the command's output. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "config/profile.h"
#include "metrics/metrics.h"
#include "report/record_file.h"
#include "t_helpers.h"
#include <cjson/cJSON.h>
#include "test_sim_client.h"

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

/* From the truth: SGLang's mean ITL per token (sum of the gaps between a stream's token frames
 * over the tokens those frames carried, the first frame excluded) and the median gap, what
 * vLLM's median ITL reads. The accept lengths this run drew, not the configured mean. */
static void truth_itl(const char *truth, double *per_token_ms, double *median_gap_ms)
{
	cJSON **lines = NULL;
	int n = t_truth_lines(truth, &lines);
	cr_assert_gt(n, 0, "no truth in %s", truth);
	double gaps = 0, tokens = 0, all[8192];
	size_t n_gaps = 0;
	for (int i = 0; i < n; i++) {
		const cJSON *frames = cJSON_GetObjectItemCaseSensitive(lines[i], "frames"), *f;
		double last = -1;
		cJSON_ArrayForEach(f, frames) {
			const cJSON *kind = cJSON_GetObjectItemCaseSensitive(f, "kind");
			if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "tokens"))
				continue;
			double t = cJSON_GetObjectItemCaseSensitive(f, "t")->valuedouble;
			if (last >= 0) {
				gaps += t - last;
				tokens += cJSON_GetObjectItemCaseSensitive(f, "tokens")->valuedouble;
				if (n_gaps < sizeof(all) / sizeof(all[0]))
					all[n_gaps++] = (t - last) / 1e6;
			}
			last = t;
		}
	}
	t_truth_lines_free(lines, n);
	cr_assert(tokens > 0 && n_gaps > 0);
	*per_token_ms = gaps / tokens / 1e6;
	ls_sort_doubles(all, n_gaps);
	*median_gap_ms = ls_percentile(all, n_gaps, 50);
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
	double want_token, want_gap;
	truth_itl(sim.truth, &want_token, &want_gap);
	t_sim_stop(&sim);
	cr_expect(strstr(out, "2 profiles, 1 run"), "pinned sending rules: one run\n%s", out);
	double v_med = cell(out, "Median ITL (ms)", 0), s_mean = cell(out, "Mean ITL (ms)", 1);
	cr_expect(fabs(want_gap / 7.5 - 1) < 0.05, "the sim's median frame gap %.3f ms is its 7.5 ms step", want_gap);
	cr_expect(fabs(v_med / want_gap - 1) < 0.05, "vllm median ITL %.3f ms, truth's median gap %.3f +-5%%", v_med,
		  want_gap);
	cr_expect(fabs(s_mean / want_token - 1) < 0.05, "sglang mean ITL %.3f ms, truth's per token %.3f +-5%%", s_mean,
		  want_token);
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
 * and compare says how long the slot wait was. The table in docs/compare.md must have the same rows. */
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

	/* docs/compare.md: section profiles, "Why two harnesses disagree", a table from compare --markdown. */
	char path[512], want[32][64], got[32][64];
	const char *root = getenv("LATSCOPE_ROOT");
	snprintf(path, sizeof(path), "%s/docs/compare.md", root ? root : ".");
	char *readme = t_read_file(path, NULL);
	cr_assert_not_null(readme, "cannot read %s", path);
	char *sec = strstr(readme, "<!-- section:profiles -->");
	cr_assert_not_null(sec, "docs/compare.md has no profiles section");
	char *end = strstr(sec, "<!-- /section:profiles -->");
	cr_assert_not_null(end);
	*end = 0;
	char *why = strstr(sec, "Why two harnesses disagree");
	cr_assert_not_null(why, "docs/compare.md lacks \"Why two harnesses disagree\"");
	size_t nw = table_labels(out, want, 32), ng = table_labels(why, got, 32);
	cr_assert_gt(nw, 10);
	cr_expect_eq(ng, nw, "docs/compare.md table has %zu rows, compare prints %zu", ng, nw);
	for (size_t i = 0; i < nw && i < ng; i++)
		cr_expect_str_eq(got[i], want[i], "docs/compare.md row %zu", i);
	static const char *const rule_rows[] = { "  clock: ", "  ITL: per-frame vs per-token: ", "  E2EL end: ",
					     "  output tokens: ", "  hidden slot wait, run 1: " };
	for (size_t i = 0; i < sizeof(rule_rows) / sizeof(rule_rows[0]); i++) {
		cr_expect(strstr(out, rule_rows[i]), "compare prints \"%s\"", rule_rows[i]);
		cr_expect(strstr(why, rule_rows[i]), "docs/compare.md shows \"%s\"", rule_rows[i]);
	}
	free(readme);
	free(out);
}

/* The cells of markdown row label in text (after the label), trimmed, into cells; how many. */
static size_t md_cells(const char *text, const char *label, char cells[][32], size_t cap)
{
	char want[96];
	snprintf(want, sizeof(want), "| %s |", label);
	const char *p = strstr(text, want);
	cr_assert_not_null(p, "docs/compare.md table has no row \"%s\"", label);
	p += strlen(want) - 1;
	size_t n = 0;
	while (*p == '|' && p[1] != '\n' && p[1] && n < cap) {
		const char *a = p + 1, *b = strchr(a, '|');
		if (!b || memchr(a, '\n', (size_t)(b - a)))
			break;
		while (*a == ' ')
			a++;
		const char *e = b;
		while (e > a && e[-1] == ' ')
			e--;
		snprintf(cells[n++], 32, "%.*s", (int)(e - a), a);
		p = b;
	}
	return n;
}

static double md_num(const char *text, const char *label, size_t col)
{
	char cells[8][32];
	size_t n = md_cells(text, label, cells, 8);
	cr_assert_lt(col, n, "row \"%s\" has %zu cells", label, n);
	char *end;
	double v = strtod(cells[col], &end);
	cr_assert(end != cells[col], "docs/compare.md \"%s\" column %zu is \"%s\", not a number", label, col, cells[col]);
	return v;
}

/* A number after key in text (the rules block of docs/compare.md). */
static double after(const char *text, const char *key)
{
	const char *p = strstr(text, key);
	cr_assert_not_null(p, "docs/compare.md lacks \"%s\"", key);
	return strtod(p + strlen(key), NULL);
}

/* The comparison table of docs/compare.md (from the command it quotes: 100 prompts, --step-ms 10,
 * --accept-len 3.5; vllm and honest on one run) holds together: what its command fixes, what
 * each profile's rules make of it, the arithmetic between rows, and the rules block under it.
 * A table pasted from another run, or edited by hand, fails. */
Test(compare, readme_table_values_hold_together, .timeout = 10)
{
	char path[512];
	const char *root = getenv("LATSCOPE_ROOT");
	snprintf(path, sizeof(path), "%s/docs/compare.md", root ? root : ".");
	char *readme = t_read_file(path, NULL);
	cr_assert_not_null(readme, "cannot read %s", path);
	char *why = strstr(readme, "Why two harnesses disagree");
	cr_assert_not_null(why);
	char *end = strstr(why, "<!-- /section:profiles -->");
	cr_assert_not_null(end);
	*end = 0;
	cr_assert(strstr(why, "--num-prompts 100") && strstr(why, "--step-ms 10") && strstr(why, "--accept-len 3.5"),
		  "the command in docs/compare.md changed: update this test's figures");
	char names[8][32], runs[8][32], failed[8][32], slot[8][32];
	size_t n = md_cells(why, "Metric", names, 8);
	cr_assert_eq(n, 4);
	cr_assert_eq(md_cells(why, "Run", runs, 8), n);
	cr_assert_eq(md_cells(why, "Failed requests", failed, 8), n);
	cr_assert_eq(md_cells(why, "Slot wait inside TTFT, mean (ms)", slot, 8), n);
	size_t run_of_honest = n, vllm = n;
	for (size_t c = 0; c < n; c++) {
		struct ls_profile p;
		cr_assert_eq(ls_profile_builtin(names[c], &p), 0, "column %s", names[c]);
		cr_expect_eq(md_num(why, "Successful requests", c), 100, "%s: every one of the 100", names[c]);
		cr_expect_str_eq(failed[c], p.read.failures_in_headline ? "0" : "0 hidden", "%s failed", names[c]);
		if (p.read.origin == LS_ORIGIN_SCHEDULED)
			cr_expect_neq(strcmp(slot[c], "hidden"), 0, "%s counts the slot wait", names[c]);
		else
			cr_expect_str_eq(slot[c], "hidden", "%s's clock starts after the slot", names[c]);
		/* throughput = successful / duration; output = tokens / duration (2-decimal rounding) */
		double dur = md_num(why, "Benchmark duration (s)", c);
		double thr = md_num(why, "Request throughput (req/s)", c);
		double tok = md_num(why, "Total generated tokens", c);
		double out_thr = md_num(why, "Output token throughput (tok/s)", c);
		cr_expect_leq(fabs(thr - 100 / dur), 100 / dur * 0.005 / dur + 0.006, "%s: %.2f req/s over %.2f s", names[c],
			      thr, dur);
		cr_expect_leq(fabs(out_thr - tok / dur), tok / dur * 0.005 / dur + 0.006, "%s: %.2f tok/s", names[c],
			      out_thr);
		/* per-frame ITL is the 10 ms step; per-token is a step over ~3.5 tokens */
		double itl = md_num(why, "Mean ITL (ms)", c);
		if (p.read.itl_mode == LS_ITL_FRAME && !p.itl_token_when_spec)
			cr_expect(fabs(itl - 10.0) < 0.5, "%s: mean ITL %.2f ms per frame at 10 ms steps", names[c], itl);
		else
			cr_expect(itl > 10.0 / 4.5 && itl < 10.0 / 2.5, "%s: mean ITL %.2f ms per token", names[c], itl);
		if (!strcmp(names[c], "vllm"))
			vllm = c;
		if (!strcmp(names[c], "honest"))
			run_of_honest = c;
	}
	cr_assert(vllm < n && run_of_honest < n);
	cr_expect_str_eq(runs[vllm], runs[run_of_honest], "vllm and honest read one run");
	for (size_t c = 0; c < n; c++)
		for (size_t k = c + 1; k < n; k++)
			if (c != vllm || k != run_of_honest)
				cr_expect_str_neq(runs[c], runs[k], "%s and %s send differently", names[c], names[k]);
	/* One run: what the clock and the E2EL end do not touch is the same number. */
	static const char *const same_rows[] = { "Benchmark duration (s)", "Total generated tokens",
		"Request throughput (req/s)", "Output token throughput (tok/s)", "Mean ITL (ms)", "Median ITL (ms)",
		"P99 ITL (ms)" };
	for (size_t i = 0; i < sizeof(same_rows) / sizeof(same_rows[0]); i++)
		cr_expect_eq(md_num(why, same_rows[i], vllm), md_num(why, same_rows[i], run_of_honest),
			     "%s: vllm and honest read one run", same_rows[i]);
	/* From the schedule, TTFT is vLLM's plus the slot wait (and the dispatch, microseconds). */
	double v_ttft = md_num(why, "Mean TTFT (ms)", vllm), h_ttft = md_num(why, "Mean TTFT (ms)", run_of_honest);
	double wait = md_num(why, "Slot wait inside TTFT, mean (ms)", run_of_honest);
	cr_expect_leq(fabs(h_ttft - v_ttft - wait), 0.1, "honest TTFT %.2f = vllm %.2f + slot wait %.2f", h_ttft, v_ttft,
		      wait);
	/* The rules block under the table is the same run. */
	cr_expect_eq(after(why, "clock: started vs scheduled: "), v_ttft, "the clock line's TTFT is the table's");
	cr_expect_eq(after(why, "ITL: per-frame vs per-token: "), md_num(why, "Mean ITL (ms)", vllm));
	cr_expect_eq(after(why, "hidden slot wait, run 1: admitted - scheduled mean "), wait);
	free(readme);
}

Test(compare, usage_errors, .timeout = 10)
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
