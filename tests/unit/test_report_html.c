/* report_html: the figures the HTML page draws (attribution windows and their bands), the
 * attribution file read back as bench wrote it, the command line, and a page written whole
 * with Chart.js inlined (or a clear error without it). The page in a browser:
 * tests/integration/html_report.sh. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "report/html.h"
#include "report/report.h"

#define N 100

/* N requests: request i's TTFT is (i + 1) ms, 3/4 server and 1/4 client; one gap of 2 ms each. */
static struct ls_attribution *synthetic(void)
{
	struct ls_attribution *a = calloc(1, sizeof(*a));
	cr_assert_not_null(a);
	a->req = calloc(N, sizeof(*a->req));
	a->n = N;
	a->have_client = a->have_server = 1;
	a->rules.n_percentiles = 3;
	a->rules.percentiles[0] = 50, a->rules.percentiles[1] = 90, a->rules.percentiles[2] = 99;
	for (size_t i = 0; i < N; i++) {
		struct ls_req_attr *r = &a->req[i];
		r->id = i;
		r->ttft_ns = r->e2el_ns = (i + 1) * 1000000ull;
		r->ttft.ns[LS_PART_SERVER] = r->e2el.ns[LS_PART_SERVER] = r->ttft_ns / 4 * 3;
		r->ttft.ns[LS_PART_CLIENT] = r->e2el.ns[LS_PART_CLIENT] = r->ttft_ns / 4;
		r->n_gaps = 1;
		r->gap_ns = calloc(1, sizeof(*r->gap_ns));
		r->gap_frame = calloc(1, sizeof(*r->gap_frame));
		r->gaps = calloc(1, sizeof(*r->gaps));
		r->gap_ns[0] = 2000000;
		r->gaps[0].ns[LS_PART_NETWORK] = 2000000;
		r->gap_frame[0] = 1;
	}
	return a;
}

Test(report_html, window_bands_add_up_to_their_bar)
{
	struct ls_attribution *a = synthetic();
	struct ls_attr_window w;
	cr_assert_eq(ls_attribution_window(a, LS_ATTR_TTFT, NULL, &w), 0);
	cr_expect_eq(w.n, N);
	cr_expect_float_eq(w.pct_ms[LS_PART__COUNT][0], 50.5, 1e-9, "P50 of 1..100 ms, numpy's rule");
	cr_expect_float_eq(w.share[LS_PART_SERVER], 75.0, 1e-9);
	for (int k = 0; k < LS_ATTR_BANDS; k++) {
		double sum = 0;
		for (int p = 0; p < LS_PART__COUNT; p++)
			sum += w.band_ms[k][p];
		cr_expect_float_eq(sum, w.band_total_ms[k], 1e-9, "band %d: parts %f, bar %f", k, sum, w.band_total_ms[k]);
		cr_expect(w.band_n[k] >= 1 && w.band_n[k] <= 3, "1%% of 100 on each side: %zu", w.band_n[k]);
	}
	cr_expect(w.band_total_ms[2] > 98 && w.band_total_ms[2] < 101, "P99 band %f", w.band_total_ms[2]);
	cr_expect(w.shown[LS_PART_SERVER] && w.shown[LS_PART_CLIENT] && !w.shown[LS_PART_GPU]);
	cr_assert_eq(ls_attribution_window(a, LS_ATTR_ITL, NULL, &w), 0);
	cr_expect_float_eq(w.band_ms[0][LS_PART_NETWORK], 2.0, 1e-9);
	ls_attribution_free(a);
}

Test(report_html, attribution_file_reads_back)
{
	struct ls_attribution *a = synthetic();
	char path[] = "/tmp/latscope-attr-XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fprintf(f, "{\"latscope_attribution\":1,\"why\":\"no server-side events\",\"lost_events\":3}\n");
	for (size_t i = 0; i < N; i++) {
		cJSON *j = ls_attribution_request_json(a, i);
		char *t = cJSON_PrintUnformatted(j);
		fprintf(f, "%s\n", t);
		free(t);
		cJSON_Delete(j);
	}
	fclose(f);
	struct ls_request reqs[N + 1];
	memset(reqs, 0, sizeof(reqs));
	for (size_t i = 0; i < N; i++)
		reqs[i].id = N - 1 - i; /* the file's requests in another order */
	reqs[N].id = 4242;          /* and one the file has no line for */
	struct ls_run run = { .requests = reqs, .n_requests = N + 1 };
	struct ls_attribution *b = ls_attribution_load(path, &run, &a->rules);
	unlink(path);
	cr_assert_not_null(b);
	cr_expect_str_eq(b->why, "no server-side events");
	cr_expect_eq(b->lost_events, 3);
	cr_expect(b->have_client);
	for (size_t i = 0; i < N; i++) {
		const struct ls_req_attr *r = &b->req[i], *o = &a->req[reqs[i].id];
		cr_expect_eq(r->id, reqs[i].id);
		cr_expect_eq(r->ttft_ns, o->ttft_ns);
		cr_expect_eq(r->ttft.ns[LS_PART_SERVER], o->ttft.ns[LS_PART_SERVER]);
		cr_expect_eq(r->n_gaps, 1);
		cr_expect_eq(r->gaps[0].ns[LS_PART_NETWORK], 2000000);
	}
	cr_expect(b->req[N].flags & LS_ATTR_NOT_OK, "a request without a line is not measured");
	ls_attribution_free(a);
	ls_attribution_free(b);
	errno = 0;
	cr_expect_null(ls_attribution_load("/nonexistent/x.attribution.jsonl", &run, &a->rules));
	cr_expect_eq(errno, ENOENT);
}

Test(report_html, command_line_quotes_what_the_shell_would_split)
{
	char *argv[] = { "bench", "--base-url", "http://127.0.0.1:8000", "--goodput", "ttft:900", "--model", "a b",
			 "--x", "it's" };
	char *s = ls_html_command_line("latscope", 9, argv);
	cr_assert_not_null(s);
	cr_expect_str_eq(s, "latscope bench --base-url http://127.0.0.1:8000 --goodput ttft:900 --model 'a b' --x 'it'\\''s'");
	free(s);
}

Test(report_html, missing_chartjs_is_one_clear_error, .init = cr_redirect_stderr)
{
	setenv("LATSCOPE_CHARTJS", "/nonexistent/chart.min.js", 1);
	cr_expect_neq(ls_html_check("--html", "/tmp/latscope-never.html"), 0);
	unsetenv("LATSCOPE_CHARTJS");
	fflush(stderr);
	char buf[512] = "";
	size_t n = fread(buf, 1, sizeof(buf) - 1, cr_get_redirected_stderr());
	buf[n] = 0;
	cr_expect(strstr(buf, "libjs-chart.js") && strstr(buf, "/nonexistent/chart.min.js"), "message: %s", buf);
}
