/* Metrics on hand-built records: each profile rule moves exactly the number it should. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "metrics/metrics.h"
#include "config/profile.h"

#define MS 1000000ull
#define T0 (1000000 * MS) /* an arbitrary monotonic origin */

static void frame(struct ls_request *r, uint64_t at_ms, uint32_t flags, uint32_t text_len, int32_t tokens)
{
	struct ls_frame *f = ls_request_add_frame(r);
	cr_assert_not_null(f);
	f->arrived_ns = T0 + at_ms * MS;
	f->flags = flags | (text_len ? 0 : (flags & LS_FRAME_CHOICES ? LS_FRAME_EMPTY_TEXT : 0));
	f->text_len = text_len;
	f->tokens = tokens;
}

/* scheduled 0, admitted 10, started 12; frames at 100 (text), 110 (empty), 120 (text, 2
 * tokens); usage at 125; [DONE] at 126; finished 127. usage says 4 completion tokens. */
static void request_a(struct ls_request *r, uint64_t id, uint64_t shift_ms)
{
	ls_request_reset(r, id);
	r->prompt_len = 64;
	r->output_len = 4;
	r->scheduled_ns = T0 + shift_ms * MS;
	r->admitted_ns = T0 + (shift_ms + 10) * MS;
	r->started_ns = T0 + (shift_ms + 12) * MS;
	frame(r, shift_ms + 100, LS_FRAME_CHOICES, 5, -1);
	frame(r, shift_ms + 110, LS_FRAME_CHOICES, 0, -1);
	frame(r, shift_ms + 120, LS_FRAME_CHOICES | LS_FRAME_FINISH, 3, 2);
	frame(r, shift_ms + 125, LS_FRAME_USAGE, 0, -1);
	frame(r, shift_ms + 126, LS_FRAME_DONE, 0, -1);
	r->done_frame_ns = T0 + (shift_ms + 126) * MS;
	r->finished_ns = T0 + (shift_ms + 127) * MS;
	r->usage_prompt_tokens = 60;
	r->usage_completion_tokens = 4;
}

static struct ls_read_rules rules_of(const char *profile)
{
	struct ls_profile p;
	cr_assert_eq(ls_profile_builtin(profile, &p), 0);
	return p.read;
}

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)

Test(metrics, vllm_rules_on_one_request)
{
	struct ls_request r = { 0 };
	request_a(&r, 0, 0);
	struct ls_read_rules rules = rules_of("vllm");
	struct ls_req_view v;
	cr_assert(ls_request_view(&r, &rules, &v));
	cr_expect(NEAR(v.ttft_s[LS_ORIGIN_STARTED], 0.088), "TTFT from started %g", v.ttft_s[LS_ORIGIN_STARTED]);
	cr_expect(NEAR(v.ttft_s[LS_ORIGIN_ADMITTED], 0.090));
	cr_expect(NEAR(v.ttft_s[LS_ORIGIN_SCHEDULED], 0.100));
	cr_expect(NEAR(v.e2el_s[LS_ORIGIN_STARTED], 0.108), "E2EL ends at the last content frame");
	cr_expect_eq(v.output_tokens, 4, "output tokens from usage");
	cr_expect_eq(v.input_tokens, 60, "input tokens from usage");
	cr_expect(NEAR(v.tpot_s, 0.020 / 3), "TPOT = (e2el - ttft) / (out - 1): %g", v.tpot_s);
	cr_expect(NEAR(v.slot_wait_s, 0.010));
	cr_expect(NEAR(v.queue_s, 0.012));
	double itl[8];
	size_t n = ls_request_itls(&r, &rules, LS_ITL_FRAME, itl, 8);
	cr_assert_eq(n, 2, "a sample per frame with choices, the empty one included");
	cr_expect(NEAR(itl[0], 0.010) && NEAR(itl[1], 0.010));
	ls_request_free(&r);
}

Test(metrics, each_rule_moves_its_number)
{
	struct ls_request r = { 0 };
	request_a(&r, 0, 0);
	struct ls_read_rules rules = rules_of("vllm");
	struct ls_req_view v;
	double itl[8];

	rules.ttft_gate = LS_GATE_TEXT; /* empty frames neither start TTFT nor add ITL */
	cr_assert(ls_request_view(&r, &rules, &v));
	cr_expect_eq(v.token_frames, 2);
	size_t n = ls_request_itls(&r, &rules, LS_ITL_FRAME, itl, 8);
	cr_assert_eq(n, 1);
	cr_expect(NEAR(itl[0], 0.020));

	rules = rules_of("vllm");
	n = ls_request_itls(&r, &rules, LS_ITL_TOKEN, itl, 8);
	cr_assert_eq(n, 3, "token ITL: 1 for the uncounted frame, 2 for the frame of 2 tokens");
	cr_expect(NEAR(itl[0], 0.010) && NEAR(itl[1], 0.005) && NEAR(itl[2], 0.005));

	rules.e2el_end = LS_END_DONE;
	ls_request_view(&r, &rules, &v);
	cr_expect(NEAR(v.e2el_s[LS_ORIGIN_STARTED], 0.114));
	rules.e2el_end = LS_END_LAST_BYTE;
	ls_request_view(&r, &rules, &v);
	cr_expect(NEAR(v.e2el_s[LS_ORIGIN_STARTED], 0.115));

	/* Without usage, output tokens are counted: 1 + 1 + 2 over the gated frames. */
	rules = rules_of("vllm");
	r.usage_completion_tokens = -1;
	r.usage_prompt_tokens = -1;
	ls_request_view(&r, &rules, &v);
	cr_expect_eq(v.output_tokens, 4);
	cr_expect_eq(v.input_tokens, 64);
	ls_request_free(&r);
}

Test(metrics, token_itl_skips_frames_without_new_tokens)
{
	struct ls_request r = { 0 };
	ls_request_reset(&r, 0);
	r.started_ns = T0;
	frame(&r, 10, LS_FRAME_CHOICES, 4, 1);
	frame(&r, 20, LS_FRAME_CHOICES, 4, 0);  /* SGLang: no new tokens, no sample */
	frame(&r, 30, LS_FRAME_CHOICES, 8, 4);  /* 20 ms over 4 tokens */
	struct ls_read_rules rules = rules_of("sglang");
	double itl[8];
	size_t n = ls_request_itls(&r, &rules, LS_ITL_TOKEN, itl, 8);
	cr_assert_eq(n, 4);
	for (size_t i = 0; i < n; i++)
		cr_expect(NEAR(itl[i], 0.005), "sample %zu = %g", i, itl[i]);
	ls_request_free(&r);
}

Test(metrics, percentiles_are_numpy_linear)
{
	double v[] = { 1, 2, 3, 4 };
	cr_expect(NEAR(ls_percentile(v, 4, 50), 2.5));
	cr_expect(NEAR(ls_percentile(v, 4, 99), 3.97));
	cr_expect(NEAR(ls_percentile(v, 4, 100), 4));
	cr_expect(NEAR(ls_percentile(v, 1, 99), 1));
	cr_expect(NEAR(ls_percentile(v, 0, 99), 0));
	double w[] = { 0.004, 0.001, 0.003, 0.002 };
	struct ls_read_rules rules = { .n_percentiles = 2, .percentiles = { 25, 90 } };
	struct ls_stat s;
	ls_stat_compute(w, 4, &rules, &s);
	cr_expect(NEAR(s.mean_ms, 2.5));
	cr_expect(NEAR(s.median_ms, 2.5));
	cr_expect(NEAR(s.std_ms, sqrt(1.25)), "population std, as np.std: %g", s.std_ms);
	cr_expect(NEAR(s.pct_ms[0], 1.75));
	cr_expect(NEAR(s.pct_ms[1], 3.7));
	cr_expect(NEAR(s.max_ms, 4));
	ls_stat_compute(w, 0, &rules, &s);
	cr_expect(s.mean_ms == 0 && s.pct_ms[1] == 0, "empty: zeros, as np.mean(x or 0)");
}

/* The integer form (GPU steps, the lab) reads the same positions as the double one. */
Test(metrics, percentiles_of_integers_match_doubles)
{
	uint64_t u[] = { 3, 10, 10, 250, 1000000007 };
	double d[] = { 3, 10, 10, 250, 1000000007 };
	const double ps[] = { 0, 1, 25, 50, 62.5, 90, 99, 99.9, 100 };
	for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++)
		for (size_t n = 0; n <= 5; n++)
			cr_expect(ls_percentile_u64(u, n, ps[i]) == ls_percentile(d, n, ps[i]), "n %zu, P%g", n, ps[i]);
	uint64_t v[] = { 40, 10, 30, 20 };
	ls_sort_u64(v, 4);
	cr_expect(v[0] == 10 && v[3] == 40);
	cr_expect(NEAR(ls_percentile_u64(v, 4, 50), 25));
}

/* Four measured requests and a warmup: A at 0 ms, A at 50 ms, one HTTP failure, one that
 * finished without any token frame. */
static void build_run(struct ls_run *run)
{
	memset(run, 0, sizeof(*run));
	run->n_requests = 5;
	run->requests = calloc(5, sizeof(*run->requests));
	request_a(&run->requests[0], 4, 0);
	run->requests[0].warmup = 1;
	run->n_warmup = 1;
	request_a(&run->requests[1], 0, 0);
	request_a(&run->requests[2], 1, 50);
	struct ls_request *f = &run->requests[3];
	ls_request_reset(f, 2);
	f->scheduled_ns = f->admitted_ns = f->started_ns = T0 + 60 * MS;
	f->finished_ns = T0 + 61 * MS;
	f->fail = LS_FAIL_HTTP_STATUS;
	f->http_status = 500;
	struct ls_request *e = &run->requests[4];
	ls_request_reset(e, 3);
	e->scheduled_ns = e->admitted_ns = e->started_ns = T0 + 70 * MS;
	frame(e, 80, LS_FRAME_USAGE, 0, -1);
	e->finished_ns = T0 + 81 * MS;
	run->start_ns = T0;
	run->end_ns = T0 + 200 * MS;
}

Test(metrics, run_aggregates)
{
	struct ls_run run;
	build_run(&run);
	struct ls_read_rules rules = rules_of("vllm");
	struct ls_goodput g = { .has_ttft = 1, .ttft_ms = 95.0 };
	struct ls_metrics m;
	cr_assert_eq(ls_metrics_compute(&run, &rules, &g, &m), 0);
	cr_expect_eq(m.n_measured, 4, "the warmup is never measured");
	cr_expect_eq(m.completed, 2);
	cr_expect_eq(m.failed, 2);
	cr_expect_eq(m.fail_counts[LS_FAIL_HTTP_STATUS], 1);
	cr_expect_eq(m.no_first_token, 1);
	cr_expect(NEAR(m.duration_s, 0.2));
	cr_expect_eq(m.total_output, 8);
	cr_expect_eq(m.total_input, 120);
	cr_expect(NEAR(m.request_throughput, 10.0));
	cr_expect(NEAR(m.output_throughput, 40.0));
	cr_expect(NEAR(m.total_token_throughput, 640.0));
	cr_expect(NEAR(m.ttft.mean_ms, 88.0));
	cr_expect(NEAR(m.ttft_by_clock[LS_ORIGIN_SCHEDULED].mean_ms, 100.0));
	cr_expect(NEAR(m.e2el.median_ms, 108.0));
	cr_expect_eq(m.itl.n, 4, "ITL pooled over requests");
	cr_expect(NEAR(m.itl.mean_ms, 10.0));
	cr_expect_eq(m.itl_token.n, 6);
	cr_expect(NEAR(m.slot_wait.mean_ms, 10.0));
	/* Little's law: (0.108 + 0.108) / 0.2 */
	cr_expect(NEAR(m.littles_concurrency, 1.08), "Little %g", m.littles_concurrency);
	/* [12, 120) and [62, 170) overlap */
	cr_expect_eq(m.peak_concurrency, 2);
	/* every token frame lands in the first second: 2 x 3 frames counted as one token each */
	cr_expect(NEAR(m.peak_output_tps, 6.0), "peak %g", m.peak_output_tps);
	cr_expect(m.has_goodput);
	cr_expect_eq(m.good_completed, 2, "TTFT 88 ms <= 95 ms for both");
	cr_expect_eq(m.n, 4);
	cr_expect(NEAR(m.ttfts_s[0], 0.088) && m.ttfts_s[2] == 0.0, "per request arrays in run order");
	cr_expect_eq(m.output_lens[2], 0);
	cr_expect_eq(m.itl_off[1] - m.itl_off[0], 2);
	cr_expect_eq(m.tpf_hist[2], 2, "one 2-token frame per request");
	cr_expect_eq(m.tpf_unknown, 4);
	ls_metrics_free(&m);

	g = (struct ls_goodput){ .has_e2el = 1, .e2el_ms = 100.0 };
	rules = rules_of("honest"); /* scheduled clock: TTFT 100 ms, E2EL to last byte */
	cr_assert_eq(ls_metrics_compute(&run, &rules, &g, &m), 0);
	cr_expect(NEAR(m.ttft.mean_ms, 100.0));
	cr_expect(NEAR(m.e2el.mean_ms, 127.0));
	cr_expect_eq(m.good_completed, 0);
	ls_metrics_free(&m);
	ls_run_free(&run);
}

Test(metrics, parse_helpers)
{
	struct ls_read_rules r = { 0 };
	cr_assert_eq(ls_percentiles_parse("50,90,99.9", &r), 0);
	cr_expect_eq(r.n_percentiles, 3);
	cr_expect(r.percentiles[2] == 99.9);
	cr_expect_neq(ls_percentiles_parse("50,x", &r), 0);
	cr_expect_neq(ls_percentiles_parse("0", &r), 0);
	cr_expect_neq(ls_percentiles_parse("101", &r), 0);
	cr_expect_eq(r.n_percentiles, 3, "a bad list leaves the rules as they were");
	struct ls_goodput g = { 0 };
	cr_assert_eq(ls_goodput_parse("ttft:900", &g), 0);
	cr_assert_eq(ls_goodput_parse("e2el:14100", &g), 0);
	cr_expect(g.has_ttft && g.ttft_ms == 900 && g.has_e2el && g.e2el_ms == 14100 && !g.has_tpot);
	cr_expect_neq(ls_goodput_parse("ttfb:9", &g), 0);
	cr_expect_neq(ls_goodput_parse("ttft:-1", &g), 0);
	cr_expect_neq(ls_goodput_parse("ttft", &g), 0);
	enum ls_origin c;
	cr_expect_eq(ls_origin_parse("admitted", &c), 0);
	cr_expect_eq(c, LS_ORIGIN_ADMITTED);
	cr_expect_str_eq(ls_e2el_end_name(LS_END_LAST_BYTE), "last_byte");
}

/* SGLang's native client: the first frame carries a special token with empty text, then
 * cumulative text; counts from meta_info. */
static void request_native(struct ls_request *r)
{
	ls_request_reset(r, 0);
	r->output_len = 16;
	r->scheduled_ns = r->admitted_ns = r->started_ns = T0;
	frame(r, 100, LS_FRAME_CHOICES, 0, 1);  /* special token, text "" */
	frame(r, 110, LS_FRAME_CHOICES, 4, 1);  /* first text */
	frame(r, 120, LS_FRAME_CHOICES, 12, 3); /* 3 tokens (speculative) */
	frame(r, 130, LS_FRAME_CHOICES, 0, 0);  /* no new tokens: SGLang `continue`s */
	frame(r, 140, LS_FRAME_CHOICES | LS_FRAME_FINISH, 8, 2);
	frame(r, 141, LS_FRAME_DONE, 0, 0);
	for (uint32_t i = 0, cum = 0; i < 5; i++)
		r->frames[i].cum_tokens = (int32_t)(cum += (uint32_t)r->frames[i].tokens);
	r->done_frame_ns = T0 + 141 * MS;
	r->finished_ns = T0 + 142 * MS;
	r->usage_completion_tokens = 7;
}

Test(metrics, sglang_native_rules)
{
	struct ls_request r = { 0 };
	request_native(&r);
	struct ls_read_rules rules = rules_of("sglang");
	struct ls_req_view v;
	cr_assert(ls_request_view(&r, &rules, &v));
	cr_expect_eq(v.first_frame, 1, "cumulative text gate: the empty first frame is not the first token");
	cr_expect(NEAR(v.ttft_s[LS_ORIGIN_STARTED], 0.110));
	cr_expect(NEAR(v.e2el_s[LS_ORIGIN_STARTED], 0.141), "E2EL at [DONE]");
	cr_expect_eq(v.output_tokens, 7, "the last cumulative count");
	cr_expect(!ls_frame_gated(&r, 0, &rules) && ls_frame_gated(&r, 3, &rules));
	double itl[16];
	size_t n = ls_request_itls(&r, &rules, LS_ITL_TOKEN, itl, 16);
	cr_assert_eq(n, 5, "3 + 2 tokens; the frame without new tokens gives none");
	cr_expect(NEAR(itl[0], 0.010 / 3) && NEAR(itl[2], 0.010 / 3));
	cr_expect(NEAR(itl[3], 0.010) && NEAR(itl[4], 0.010), "its 10 ms carry into the next gap: 20 ms / 2");

	rules = rules_of("vllm"); /* the same stream read by vLLM: every frame with choices */
	cr_assert(ls_request_view(&r, &rules, &v));
	cr_expect_eq(v.first_frame, 0);
	cr_expect(NEAR(v.e2el_s[LS_ORIGIN_STARTED], 0.140), "E2EL at the last content frame");
	cr_expect_eq(ls_request_itls(&r, &rules, LS_ITL_FRAME, itl, 16), 4);
	ls_request_free(&r);
}

Test(metrics, output_token_sources)
{
	struct ls_request r = { 0 };
	request_a(&r, 0, 0); /* asked for 4, usage says 4 */
	r.output_len = 10;
	struct ls_read_rules rules = rules_of("sglang-oai");
	struct ls_req_view v;
	cr_assert(ls_request_view(&r, &rules, &v));
	cr_expect_eq(v.output_tokens, 10, "usage in a frame without text is not read: the requested length");
	cr_expect(NEAR(v.tpot_s, (0.114 - 0.088) / 9), "TPOT %g", v.tpot_s);
	r.frames[2].flags |= LS_FRAME_USAGE; /* usage rides in the last text frame */
	r.frames[2].cum_tokens = 4;
	ls_request_view(&r, &rules, &v);
	cr_expect_eq(v.output_tokens, 4);
	rules.out_tokens = LS_OUT_CUMULATIVE;
	r.frames[2].cum_tokens = -1;
	ls_request_view(&r, &rules, &v);
	cr_expect_eq(v.output_tokens, 10, "no cumulative count: the requested length, as SGLang starts from");
	ls_request_free(&r);
}

Test(metrics, success_rules_differ)
{
	struct ls_request r = { 0 };
	ls_request_reset(&r, 0);
	r.output_len = 8;
	r.scheduled_ns = r.admitted_ns = r.started_ns = T0;
	frame(&r, 50, LS_FRAME_CHOICES, 0, -1); /* only empty text */
	frame(&r, 60, LS_FRAME_DONE, 0, 0);
	r.done_frame_ns = T0 + 60 * MS;
	r.finished_ns = T0 + 61 * MS;
	struct ls_read_rules rules = rules_of("sglang-oai");
	struct ls_req_view v;
	cr_expect(ls_request_view(&r, &rules, &v), "SGLang: HTTP 200 without text is a success");
	cr_expect(v.ttft_s[LS_ORIGIN_STARTED] == 0.0, "with TTFT 0.0");
	cr_expect(NEAR(v.e2el_s[LS_ORIGIN_STARTED], 0.060));
	rules = rules_of("vllm");
	cr_expect(ls_request_view(&r, &rules, &v), "vLLM: a frame with choices, empty or not, is a first token");
	rules.ttft_gate = LS_GATE_TEXT;
	cr_expect(!ls_request_view(&r, &rules, &v) && v.no_first_token);

	request_a(&r, 0, 0);
	r.fail = LS_FAIL_NO_DONE;
	rules = rules_of("vllm");
	cr_expect(ls_request_view(&r, &rules, &v), "vLLM and SGLang do not need [DONE]");
	rules = rules_of("honest");
	cr_expect(!ls_request_view(&r, &rules, &v), "latscope counts a missing [DONE] as a failure");
	ls_request_free(&r);
}

Test(metrics, token_counts_estimated_from_text_bytes)
{
	struct ls_request r = { 0 };
	ls_request_reset(&r, 0);
	r.started_ns = T0;
	frame(&r, 10, LS_FRAME_CHOICES, 4, -1);
	frame(&r, 20, LS_FRAME_CHOICES, 8, -1);
	frame(&r, 30, LS_FRAME_CHOICES, 8, -1);
	r.usage_completion_tokens = 10; /* 0.5 tokens per byte: 2, 4, 4 */
	struct ls_read_rules rules = rules_of("vllm");
	cr_expect(NEAR(ls_frame_tokens(&r, 1, &rules), 4.0));
	double itl[16];
	size_t n = ls_request_itls(&r, &rules, LS_ITL_TOKEN, itl, 16);
	cr_assert_eq(n, 8);
	cr_expect(NEAR(itl[0], 0.0025) && NEAR(itl[7], 0.0025));
	ls_request_free(&r);
}

Test(metrics, itl_has_its_own_percentiles)
{
	struct ls_run run;
	build_run(&run);
	struct ls_read_rules rules = rules_of("sglang");
	rules.ttft_gate = LS_GATE_CHOICES;
	struct ls_metrics m;
	cr_assert_eq(ls_metrics_compute(&run, &rules, NULL, &m), 0);
	cr_expect_eq(m.itl.n_pcts, 2);
	cr_expect(m.itl.pcts[0] == 95 && m.itl.pcts[1] == 99);
	cr_expect_eq(m.ttft.n_pcts, 1);
	cr_expect(m.ttft.pcts[0] == 99);
	ls_metrics_free(&m);
	cr_assert_eq(ls_percentiles_parse("50,90", &rules), 0);
	cr_expect_eq(rules.n_itl_percentiles, 0, "a flag sets one list for every metric");
	ls_run_free(&run);
}

/* The first frame carries only a special token (empty text): vLLM's TTFT stops there,
 * SGLang's OpenAI client waits for text; an empty frame mid-stream is an ITL sample for
 * vLLM and a longer gap for SGLang. */
Test(metrics, empty_first_frame_moves_ttft)
{
	struct ls_request r = { 0 };
	ls_request_reset(&r, 0);
	r.output_len = 4;
	r.scheduled_ns = r.admitted_ns = r.started_ns = T0;
	frame(&r, 100, LS_FRAME_CHOICES, 0, -1);
	frame(&r, 110, LS_FRAME_CHOICES, 5, -1);
	frame(&r, 120, LS_FRAME_CHOICES, 0, -1);
	frame(&r, 130, LS_FRAME_CHOICES, 5, -1);
	frame(&r, 131, LS_FRAME_DONE, 0, 0);
	r.done_frame_ns = T0 + 131 * MS;
	r.usage_completion_tokens = 4;
	struct ls_read_rules vllm = rules_of("vllm"), oai = rules_of("sglang-oai");
	struct ls_req_view v;
	cr_assert(ls_request_view(&r, &vllm, &v));
	cr_expect(NEAR(v.ttft_s[LS_ORIGIN_STARTED], 0.100));
	cr_assert(ls_request_view(&r, &oai, &v));
	cr_expect(NEAR(v.ttft_s[LS_ORIGIN_STARTED], 0.110));
	double itl[8];
	cr_expect_eq(ls_request_itls(&r, &vllm, LS_ITL_FRAME, itl, 8), 3);
	cr_assert_eq(ls_request_itls(&r, &oai, LS_ITL_FRAME, itl, 8), 1);
	cr_expect(NEAR(itl[0], 0.020));
	ls_request_free(&r);
}
