/* The record file round trip, the spec-decode counter parsers, and the report layouts. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/clock.h"
#include "config/config.h"
#include "metrics/metrics.h"
#include "config/profile.h"
#include "report/record_file.h"
#include "report/report.h"
#include "server/specdecode.h"

static void fill(struct ls_request *r, uint64_t id, uint64_t base, int warmup)
{
	ls_request_reset(r, id);
	r->warmup = warmup;
	r->prompt_len = 32;
	r->output_len = 3;
	r->scheduled_ns = base + 1000;
	r->admitted_ns = base + 2000;
	r->started_ns = base + 3000;
	r->connect_ns = base + 3500;
	r->sent_ns = base + 4000;
	r->headers_ns = base + 5000;
	for (int i = 0; i < 3; i++) {
		struct ls_frame *f = ls_request_add_frame(r);
		f->arrived_ns = base + 10000 + (uint64_t)i * 777;
		f->stream_off = 100 + (uint64_t)i * 50;
		f->bytes = 50;
		f->text_len = (uint32_t)i;
		f->tokens = i == 2 ? 2 : -1;
		f->flags = LS_FRAME_CHOICES | (i == 0 ? LS_FRAME_EMPTY_TEXT : 0);
	}
	r->done_frame_ns = base + 20000;
	r->finished_ns = base + 20001;
	r->new_connection = 1;
	r->fd = 7;
	r->socket_cookie = 0xfedcba9876543210ull;
	r->conn_seq = 3;
	r->http_status = 200;
	r->usage_prompt_tokens = 31;
	r->usage_completion_tokens = 3;
	r->body_bytes = 999;
	r->text_bytes = 3;
}

Test(metrics_record, round_trip_is_exact)
{
	char path[] = "/tmp/latscope-rec-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	uint64_t base = ls_now_ns();
	struct ls_record_meta meta = { .target_rate = 20, .max_concurrency = 4 };
	snprintf(meta.run_tag, sizeof(meta.run_tag), "lsT");
	snprintf(meta.profile, sizeof(meta.profile), "vllm");
	struct ls_record_writer *w = ls_record_open(path, &meta);
	cr_assert_not_null(w);
	struct ls_request reqs[3] = { 0 };
	fill(&reqs[0], 9, base, 1);
	fill(&reqs[1], 1, base + 50000, 0); /* finishes first, written first */
	fill(&reqs[2], 0, base + 90000, 0);
	reqs[2].fail = LS_FAIL_RESET_MID_STREAM;
	snprintf(reqs[2].error, sizeof(reqs[2].error), "quote \" backslash \\ newline \n byte \x01 end");
	for (int i = 0; i < 3; i++)
		cr_assert_eq(ls_record_write(w, &reqs[i]), 0);
	struct ls_run run = { .requests = reqs, .n_requests = 3, .n_warmup = 1, .start_ns = base + 500,
			      .end_ns = base + 200000 };
	cr_assert_eq(ls_record_close(w, &run), 0);

	struct ls_run back;
	struct ls_record_meta m;
	cr_assert_eq(ls_record_load(path, &back, &m), 0);
	cr_expect(m.complete);
	cr_expect_str_eq(m.run_tag, "lsT");
	cr_expect_str_eq(m.profile, "vllm");
	cr_expect_eq(back.n_requests, 3);
	cr_expect_eq(back.n_warmup, 1);
	cr_expect_eq(back.start_ns, base + 500);
	cr_expect_eq(back.end_ns, base + 200000);
	cr_expect(back.target_rate == 20);
	cr_expect_eq(back.max_concurrency, 4);
	/* run order: warmup first, then by id */
	cr_expect_eq(back.requests[0].id, 9);
	cr_expect_eq(back.requests[1].id, 0);
	cr_expect_eq(back.requests[2].id, 1);
	const struct ls_request *a = &back.requests[2], *b = &reqs[1];
	cr_expect_eq(a->scheduled_ns, b->scheduled_ns);
	cr_expect_eq(a->started_ns, b->started_ns);
	cr_expect_eq(a->connect_ns, b->connect_ns);
	cr_expect_eq(a->tls_ns, 0, "0 stays 'did not happen'");
	cr_expect_eq(a->finished_ns, b->finished_ns);
	cr_expect_eq(a->socket_cookie, b->socket_cookie, "64-bit cookies survive JSON");
	cr_expect_eq(a->n_frames, 3);
	for (int i = 0; i < 3; i++) {
		cr_expect_eq(a->frames[i].arrived_ns, b->frames[i].arrived_ns);
		cr_expect_eq(a->frames[i].tokens, b->frames[i].tokens);
		cr_expect_eq(a->frames[i].flags, b->frames[i].flags);
		cr_expect_eq(a->frames[i].stream_off, b->frames[i].stream_off);
	}
	cr_expect_eq(a->usage_completion_tokens, 3);
	cr_expect_eq(back.requests[1].fail, LS_FAIL_RESET_MID_STREAM);
	cr_expect_str_eq(back.requests[1].error, reqs[2].error);

	/* Metrics from the file equal metrics from memory. */
	struct ls_profile p;
	ls_profile_builtin("vllm", &p);
	struct ls_metrics m1, m2;
	cr_assert_eq(ls_metrics_compute(&run, &p.read, NULL, &m1), 0);
	cr_assert_eq(ls_metrics_compute(&back, &p.read, NULL, &m2), 0);
	cr_expect(m1.ttft.mean_ms == m2.ttft.mean_ms && m1.itl.mean_ms == m2.itl.mean_ms);
	cr_expect(m1.duration_s == m2.duration_s);
	ls_metrics_free(&m1);
	ls_metrics_free(&m2);
	ls_run_free(&back);
	for (int i = 0; i < 3; i++)
		ls_request_free(&reqs[i]);
	unlink(path);
}

Test(metrics_record, killed_run_keeps_whole_lines, .init = cr_redirect_stderr)
{
	char path[] = "/tmp/latscope-rec-XXXXXX";
	int fd = mkstemp(path);
	close(fd);
	struct ls_record_writer *w = ls_record_open(path, NULL);
	struct ls_request r = { 0 };
	uint64_t base = ls_now_ns();
	fill(&r, 0, base, 0);
	ls_record_write(w, &r);
	r.id = 1;
	ls_record_write(w, &r);
	ls_record_close(w, NULL); /* no run_end: as if killed */
	FILE *f = fopen(path, "a");
	fputs("{\"id\": 2, \"warmup\": 0, \"frames\": [[1,2", f); /* cut mid-line */
	fclose(f);
	struct ls_run back;
	struct ls_record_meta m;
	cr_assert_eq(ls_record_load(path, &back, &m), 0);
	cr_expect(!m.complete);
	cr_expect(back.interrupted);
	cr_expect_eq(back.n_requests, 2);
	cr_expect_eq(back.start_ns, r.scheduled_ns, "start falls back to the first schedule");
	ls_run_free(&back);

	f = fopen(path, "w");
	fputs("{\"something\": \"else\"}\n", f);
	fclose(f);
	cr_expect_neq(ls_record_load(path, &back, &m), 0);
	cr_expect_neq(ls_record_load("/nonexistent/rec.jsonl", &back, &m), 0);
	ls_request_free(&r);
	unlink(path);
}

Test(metrics_spec, prometheus_and_server_info)
{
	const char *before =
		"# HELP vllm:spec_decode_num_drafts_total drafts\n"
		"vllm:spec_decode_num_drafts_total{engine=\"0\",model_name=\"m\"} 100.0\n"
		"vllm:spec_decode_num_draft_tokens_total{engine=\"0\",model_name=\"m\"} 300.0\n"
		"vllm:spec_decode_num_accepted_tokens_total{engine=\"0\",model_name=\"m\"} 150.0\n"
		"vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",position=\"0\"} 80.0\n"
		"vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",position=\"1\"} 50.0\n"
		"vllm:spec_decode_num_accepted_tokens_created{engine=\"0\"} 1.7e9\n"
		"vllm:num_requests_running 3\n";
	const char *after =
		"vllm:spec_decode_num_drafts_total{engine=\"0\"} 300\n"
		"vllm:spec_decode_num_draft_tokens_total{engine=\"0\"} 900\n"
		"vllm:spec_decode_num_accepted_tokens_total{engine=\"0\"} 650\n"
		"vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",position=\"0\"} 280\n"
		"vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",position=\"1\"} 150\n";
	struct ls_spec_snapshot b = { 0 }, a = { 0 };
	cr_assert_eq(ls_spec_parse_prometheus(before, &b), 0);
	cr_assert_eq(ls_spec_parse_prometheus(after, &a), 0);
	cr_expect_eq(b.drafts, 100);
	cr_expect_eq(b.accepted, 150, "_created and per-position lines do not add to the total");
	cr_expect_eq(b.n_pos, 2);
	struct ls_spec_stats s;
	ls_spec_delta(&b, &a, &s);
	cr_assert(s.has);
	cr_expect_eq(s.drafts, 200);
	cr_expect_eq(s.draft_tokens, 600);
	cr_expect_eq(s.accepted, 500);
	cr_expect(fabs(s.acceptance_rate_pct - 500.0 / 6.0) < 1e-9);
	cr_expect(fabs(s.acceptance_length - 3.5) < 1e-9, "1 + accepted / drafts");
	cr_expect(fabs(s.per_pos_rate[0] - 1.0) < 1e-9 && fabs(s.per_pos_rate[1] - 0.5) < 1e-9);

	struct ls_spec_snapshot none = { 0 };
	cr_expect_neq(ls_spec_parse_prometheus("vllm:num_requests_running 1\n", &none), 0);
	ls_spec_delta(&none, &none, &s);
	cr_expect(!s.has);

	struct ls_spec_snapshot sg = { 0 };
	cr_assert_eq(ls_spec_parse_server_info("{\"internal_states\": [{\"avg_spec_accept_length\": 2.75}]}", &sg), 0);
	cr_expect(sg.has_avg && sg.avg_accept_len == 2.75);
	sg = (struct ls_spec_snapshot){ 0 }; /* a server argument Python writes as Infinity */
	cr_assert_eq(ls_spec_parse_server_info("{\"max_queued_requests\": Infinity, \"internal_states\": "
					       "[{\"avg_spec_accept_length\": 1.5}]}", &sg), 0);
	cr_expect(sg.has_avg && sg.avg_accept_len == 1.5);
	cr_expect_neq(ls_spec_parse_server_info("{\"version\": 1}", &none), 0);
	cr_expect_neq(ls_spec_parse_server_info("not json", &none), 0);
}

static struct ls_run one_request_run(void)
{
	struct ls_run run = { 0 };
	run.requests = calloc(1, sizeof(*run.requests));
	run.n_requests = 1;
	uint64_t base = 1000000000000ull;
	fill(&run.requests[0], 0, base, 0);
	run.start_ns = base;
	run.end_ns = base + 1000000000ull;
	return run;
}

Test(metrics_report, text_has_vllm_layout_and_latscope_lines, .init = cr_redirect_stdout)
{
	struct ls_run run = one_request_run();
	struct ls_profile p;
	ls_profile_builtin("vllm", &p);
	struct ls_metrics m;
	cr_assert_eq(ls_metrics_compute(&run, &p.read, NULL, &m), 0);
	struct ls_spec_stats spec = { .has = 1, .drafts = 10, .draft_tokens = 30, .accepted = 15,
				      .acceptance_rate_pct = 50, .acceptance_length = 2.5 };
	struct ls_report_ctx ctx = { .profile = "vllm", .request_rate = 20, .max_concurrency = 4,
				     .percentile_metrics = LS_PM_TTFT | LS_PM_TPOT | LS_PM_ITL | LS_PM_E2EL,
				     .show_client_queue = 1, .arrival = "gamma", .spec = &spec };
	ls_report_text(stdout, &m, &ctx);
	fflush(stdout);
	static char out[16384];
	size_t n = fread(out, 1, sizeof(out) - 1, cr_get_redirected_stdout());
	out[n] = 0;
	const char *want[] = {
		"============ Serving Benchmark Result ============\n",
		"Successful requests:                     1         \n",
		"Failed requests:                         0", "Benchmark duration (s):                  1.00",
		"Total input tokens:                      31", "Total generated tokens:                  3",
		"Request throughput (req/s):", "Output token throughput (tok/s):",
		"Peak output token throughput (tok/s):", "Peak concurrent requests:",
		"Total Token throughput (tok/s):",
		"---------------Time to First Token----------------\n", "Mean TTFT (ms):", "Median TTFT (ms):",
		"P99 TTFT (ms):", "-----Time per Output Token (excl. 1st token)------\n", "Mean TPOT (ms):",
		"---------------Inter-token Latency----------------\n", "P99 ITL (ms):",
		"----------------End-to-end Latency----------------\n", "Mean E2EL (ms):",
		"Client Queue Time", "Acceptance rate (%):", "Acceptance length:", "Drafts:", "Draft tokens:",
		"Accepted tokens:", "started (handed to libcurl", "Slot wait, admitted - scheduled (ms):",
		"TTFT from scheduled (ms):", "Tokens per frame:", "Failed requests by reason:",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_expect(strstr(out, want[i]), "missing \"%s\" in:\n%s", want[i], out);
	ls_metrics_free(&m);
	ls_run_free(&run);
}

/* The result JSON's figures are the requests': three requests whose TTFTs are 1, 2 and 6 ms
 * (first frame 1, 2, 6 ms after started) give mean 3, median 2 and P99 5.92 (numpy's rule). */
Test(metrics_report, json_figures_are_the_requests)
{
	struct ls_run run = { 0 };
	uint64_t base = 1000000000000ull, ttft_us[3] = { 1000, 2000, 6000 };
	run.requests = calloc(3, sizeof(*run.requests));
	run.n_requests = 3;
	for (int i = 0; i < 3; i++) {
		fill(&run.requests[i], (uint64_t)i, base + (uint64_t)i * 100000000ull, 0);
		struct ls_request *r = &run.requests[i];
		for (uint32_t f = 0; f < r->n_frames; f++) /* frames 1 ms apart from the TTFT on */
			r->frames[f].arrived_ns = r->started_ns + (ttft_us[i] + f * 1000) * 1000;
		r->done_frame_ns = r->finished_ns = r->frames[r->n_frames - 1].arrived_ns;
	}
	run.start_ns = base;
	run.end_ns = base + 1000000000ull;
	struct ls_profile p;
	ls_profile_builtin("vllm", &p);
	struct ls_read_rules rules = p.read;
	ls_percentiles_parse("50,99", &rules);
	struct ls_metrics m;
	cr_assert_eq(ls_metrics_compute(&run, &rules, NULL, &m), 0);
	struct ls_report_ctx ctx = { .profile = "vllm", .request_rate = INFINITY, .backend = "openai", .model = "m",
				     .percentile_metrics = LS_PM_TTFT | LS_PM_TPOT | LS_PM_ITL | LS_PM_E2EL };
	char *text = ls_report_json(&m, &run, &ctx);
	cJSON *root = cJSON_Parse(text);
	cr_assert_not_null(root);
	const struct { const char *key; double want; } v[] = {
		{ "mean_ttft_ms", 3.0 }, { "median_ttft_ms", 2.0 }, { "p50_ttft_ms", 2.0 }, { "p99_ttft_ms", 5.92 },
		{ "mean_itl_ms", 1.0 }, { "median_itl_ms", 1.0 }, { "completed", 3 },
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, v[i].key);
		cr_expect(cJSON_IsNumber(n) && fabs(n->valuedouble - v[i].want) < 1e-9, "%s: %g, want %g", v[i].key,
			  cJSON_IsNumber(n) ? n->valuedouble : -1.0, v[i].want);
	}
	cJSON_Delete(root);
	free(text);
	ls_metrics_free(&m);
	ls_run_free(&run);
}

Test(metrics_report, json_has_vllm_keys)
{
	struct ls_run run = one_request_run();
	struct ls_profile p;
	ls_profile_builtin("vllm", &p);
	struct ls_read_rules rules = p.read;
	ls_percentiles_parse("50,99.9", &rules);
	struct ls_metrics m;
	cr_assert_eq(ls_metrics_compute(&run, &rules, NULL, &m), 0);
	struct ls_report_ctx ctx = { .profile = "vllm", .request_rate = INFINITY, .backend = "openai", .model = "m",
				     .percentile_metrics = LS_PM_TTFT | LS_PM_TPOT | LS_PM_ITL | LS_PM_E2EL };
	char *text = ls_report_json(&m, &run, &ctx);
	cr_assert_not_null(text);
	cJSON *root = cJSON_Parse(text);
	cr_assert_not_null(root);
	const char *keys[] = { "completed", "failed", "duration", "total_input_tokens", "total_output_tokens",
			       "request_throughput", "output_throughput", "total_token_throughput", "mean_ttft_ms",
			       "median_ttft_ms", "std_ttft_ms", "p50_ttft_ms", "p99.9_ttft_ms", "mean_tpot_ms",
			       "p99.9_itl_ms", "mean_e2el_ms", "ttfts", "itls", "input_lens", "output_lens",
			       "generated_texts", "errors", "max_output_tokens_per_s", "max_concurrent_requests",
			       "request_rate", "latscope" };
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		cr_expect_not_null(cJSON_GetObjectItemCaseSensitive(root, keys[i]), "no key %s", keys[i]);
	cr_expect_str_eq(cJSON_GetObjectItemCaseSensitive(root, "request_rate")->valuestring, "inf");
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root, "itls")), 1);
	const cJSON *ls = cJSON_GetObjectItemCaseSensitive(root, "latscope");
	cr_expect_not_null(cJSON_GetObjectItemCaseSensitive(ls, "slot_wait"));
	cr_expect_not_null(cJSON_GetObjectItemCaseSensitive(ls, "ttft_by_clock"));
	cJSON_Delete(root);
	free(text);
	ls_metrics_free(&m);
	ls_run_free(&run);
}
