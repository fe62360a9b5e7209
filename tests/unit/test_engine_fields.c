/* The engine's own per-request account as each engine writes it (field names and units from
 * its own source: docs/engine.md) read into ls_request.engine_*, and malformed values counted,
 * never kept. Frames go through ls_backend_decode, the path the driver takes (fast reader first).
 * Catches: a unit slip (ms as s), SGLang's launch delay left out of its queue, vLLM's null
 * fields counted as bad, a negative or a string kept, TGI's headers matched case-sensitively,
 * a /perf_metrics entry joined to the wrong request or kept when its times run backwards. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "driver/backend.h"
#include "driver/backend_int.h"
#include "base/record.h"

static void decode(enum ls_backend be, const char *frame, struct ls_request *r)
{
	struct ls_decode_state st;
	ls_decode_state_init(&st);
	struct ls_frame *fr = ls_request_add_frame(r);
	cr_assert_not_null(fr);
	cr_assert_eq(ls_backend_decode(be, frame, strlen(frame), &st, fr, r), 0, "%s: %s", frame, r->error);
}

Test(engine_fields, sglang_finishing_meta_info)
{
	struct ls_request r = { 0 };
	ls_request_reset(&r, 1);
	/* An earlier frame's timings (no e2e_latency yet) are not the account. */
	decode(LS_BACKEND_SGLANG, "{\"text\":\"a\",\"meta_info\":{\"id\":\"x\",\"finish_reason\":null,\"prompt_tokens\":40,"
				  "\"completion_tokens\":1,\"cached_tokens\":8,\"queue_time\":0.5}}", &r);
	cr_expect_eq(r.engine_source, LS_ENGINE_NONE);
	decode(LS_BACKEND_SGLANG, "{\"text\":\"ab\",\"meta_info\":{\"id\":\"x\",\"finish_reason\":{\"type\":\"length\","
				  "\"length\":5},\"prompt_tokens\":40,\"completion_tokens\":5,\"cached_tokens\":8,"
				  "\"queue_time\":0.010,\"prefill_launch_delay\":0.002,\"prefill_launch_latency\":0.0305,"
				  "\"e2e_latency\":0.25,\"prefill_finished_ts\":1700000000.5,"
				  "\"decode_finished_ts\":1700000000.7}}", &r);
	cr_expect_eq(r.engine_source, LS_ENGINE_SGLANG);
	cr_expect_eq(r.engine_known, LS_ENGINE_QUEUE | LS_ENGINE_PREFILL | LS_ENGINE_DECODE | LS_ENGINE_E2E |
					     LS_ENGINE_CACHED);
	cr_expect_eq(r.engine_queue_ns, 12000000u); /* queue_time + prefill_launch_delay */
	cr_expect_eq(r.engine_prompt_ns, 30500000u);
	cr_expect_eq(r.engine_e2e_ns, 250000000u);
	cr_expect(r.engine_predicted_ns > 199999000u && r.engine_predicted_ns < 200001000u, "%lu",
		  (unsigned long)r.engine_predicted_ns);
	cr_expect_eq(r.engine_predicted_n, 4); /* the gaps after the first token */
	cr_expect_eq(r.engine_cache_n, 8);
	cr_expect_eq(r.engine_prompt_n, 32);
	cr_expect_eq(r.engine_bad, 0);
	ls_request_free(&r);
}

Test(engine_fields, vllm_metrics_on_the_usage_frame)
{
	struct ls_request r = { 0 };
	ls_request_reset(&r, 1);
	decode(LS_BACKEND_OPENAI, "{\"id\":\"c\",\"object\":\"text_completion\",\"choices\":[],\"usage\":{\"prompt_tokens\":42,"
				  "\"completion_tokens\":11,\"total_tokens\":53,\"prompt_tokens_details\":{\"cached_tokens\":16}},"
				  "\"metrics\":{\"time_to_first_token_ms\":85.2,\"generation_time_ms\":100.5,\"queue_time_ms\":12.3,"
				  "\"mean_itl_ms\":null,\"tokens_per_second\":null}}", &r);
	cr_expect_eq(r.engine_source, LS_ENGINE_VLLM);
	cr_expect_eq(r.engine_known, LS_ENGINE_QUEUE | LS_ENGINE_PREFILL | LS_ENGINE_DECODE | LS_ENGINE_CACHED);
	cr_expect_eq(r.engine_queue_ns, 12300000u);
	cr_expect_eq(r.engine_prompt_ns, 85200000u);
	cr_expect_eq(r.engine_predicted_ns, 100500000u);
	cr_expect_eq(r.engine_predicted_n, 10);
	cr_expect_eq(r.engine_cache_n, 16);
	cr_expect_eq(r.engine_prompt_n, 26);
	cr_expect_eq(r.engine_bad, 0, "nulls are not given, not bad");
	ls_request_free(&r);
}

Test(engine_fields, malformed_values_are_counted_not_kept)
{
	struct ls_request r = { 0 };
	ls_request_reset(&r, 1);
	/* Python's json.dumps writes NaN and -Infinity: the frame still reads, the values do not. */
	decode(LS_BACKEND_OPENAI, "{\"choices\":[{\"text\":\"x\",\"finish_reason\":\"stop\"}],\"timings\":{\"prompt_n\":"
				  "\"12\",\"prompt_ms\":NaN,\"predicted_n\":3,\"predicted_ms\":-Infinity,\"cache_n\":-1}}", &r);
	cr_expect_eq(r.fail, LS_OK);
	cr_expect_eq(r.engine_source, LS_ENGINE_LLAMACPP);
	cr_expect_eq(r.engine_known, 0);
	cr_expect_eq(r.engine_prompt_ns, 0);
	cr_expect_eq(r.engine_bad, 4, "NaN, -Infinity, a string count and a negative count: %u", r.engine_bad);
	ls_request_reset(&r, 2);
	decode(LS_BACKEND_OPENAI, "{\"choices\":[],\"usage\":{\"completion_tokens\":3},\"metrics\":{\"queue_time_ms\":-4,"
				  "\"time_to_first_token_ms\":\"5\",\"generation_time_ms\":1e300}}", &r);
	cr_expect_eq(r.engine_known, 0);
	cr_expect_eq(r.engine_bad, 3);
	cr_expect_eq(r.engine_queue_ns, 0);
	/* A NaN inside a string is text, not a number. */
	size_t n;
	uint32_t k;
	char *fixed = ls_backend_non_finite_to_null("{\"t\":\"NaN \\\" Infinity\",\"v\":NaN}", 31, &n, &k);
	cr_assert_not_null(fixed);
	cr_expect_eq(k, 1);
	cr_expect(!strncmp(fixed, "{\"t\":\"NaN \\\" Infinity\",\"v\":null}", n), "%.*s", (int)n, fixed);
	free(fixed);
	ls_request_free(&r);
}

Test(engine_fields, tgi_headers)
{
	struct ls_request r = { 0 };
	ls_request_reset(&r, 1);
	const char *lines[] = { "X-Queue-Time: 12\r\n", "x-inference-time: 300\r\n", "x-total-time: 315\r\n",
				"x-validation-time: 3\r\n", "x-prompt-tokens: 20\r\n", "x-generated-tokens: 8\r\n",
				"x-time-per-token: nope\r\n", "x-request-id: abc\r\n" };
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		ls_backend_engine_header(&r, lines[i], strlen(lines[i]));
	cr_expect_eq(r.engine_source, LS_ENGINE_TGI);
	cr_expect_eq(r.engine_known, LS_ENGINE_QUEUE | LS_ENGINE_E2E);
	cr_expect_eq(r.engine_queue_ns, 12000000u);
	cr_expect_eq(r.engine_e2e_ns, 315000000u);
	cr_expect_eq(r.engine_prompt_n, 20);
	cr_expect_eq(r.engine_predicted_n, 8);
	cr_expect_eq(r.engine_bad, 1, "x-time-per-token: nope");
	ls_request_free(&r);
}

Test(engine_fields, trtllm_perf_metrics_join_by_arrival)
{
	struct ls_request r[2] = { 0 };
	for (int i = 0; i < 2; i++) {
		ls_request_reset(&r[i], (uint64_t)i);
		r[i].sent_ns = 100000000000ull + (uint64_t)i * 50000000ull; /* 100.00 s and 100.05 s */
		r[i].headers_ns = r[i].sent_ns + 1000000;
		r[i].finished_ns = r[i].sent_ns + 400000000;
		r[i].usage_completion_tokens = 9;
	}
	const char *body =
		"[{\"request_id\":7,\"perf_metrics\":{\"first_iter\":1,\"last_iter\":9,\"timing_metrics\":{"
		"\"server_arrival_time\":100.0502,\"arrival_time\":100.0503,\"first_scheduled_time\":100.060,"
		"\"first_token_time\":100.080,\"server_first_token_time\":100.081,\"last_token_time\":100.180},"
		"\"kv_cache_metrics\":{\"num_total_allocated_blocks\":1,\"num_new_allocated_blocks\":1,"
		"\"num_reused_blocks\":0,\"num_missed_blocks\":1}}},"
		"{\"request_id\":6,\"perf_metrics\":{\"timing_metrics\":{\"server_arrival_time\":100.0002,"
		"\"first_scheduled_time\":100.001,\"first_token_time\":100.021,\"last_token_time\":100.101}}},"
		"{\"request_id\":8,\"perf_metrics\":{\"timing_metrics\":{\"server_arrival_time\":100.0003,"
		"\"first_scheduled_time\":100.002,\"first_token_time\":100.001,\"last_token_time\":100.2}}}]";
	struct ls_perf_join st;
	cr_assert_eq(ls_engine_perf_metrics_join(body, strlen(body), r, 2, &st), 0);
	cr_expect_eq(st.entries, 3);
	cr_expect_eq(st.joined, 2);
	cr_expect_eq(st.unjoined, 1, "request 8 arrived while request 0, its only window, was taken");
	cr_expect_eq(st.bad_values, 1, "request 8's first token before its scheduling");
	cr_expect_eq(r[0].engine_source, LS_ENGINE_TRTLLM);
	cr_expect(r[0].engine_queue_ns > 799000 && r[0].engine_queue_ns < 801000, "%lu", (unsigned long)r[0].engine_queue_ns);
	cr_expect(r[0].engine_prompt_ns > 19999000 && r[0].engine_prompt_ns < 20001000);
	cr_expect(r[1].engine_queue_ns > 9799000 && r[1].engine_queue_ns < 9801000, "%lu", (unsigned long)r[1].engine_queue_ns);
	cr_expect(r[1].engine_predicted_ns > 99999000 && r[1].engine_predicted_ns < 100001000);
	cr_expect_eq(r[1].engine_predicted_n, 8);
	cr_expect_eq(ls_engine_perf_metrics_join("{}", 2, r, 2, &st), -EBADMSG);
	for (int i = 0; i < 2; i++)
		ls_request_free(&r[i]);
}

/* Four requests sent 10 us apart, read by the server after the last send (arrivals 50-80 us):
 * "nearest send" would give the first arrival to the last request; each must get its own. */
Test(engine_fields, trtllm_perf_metrics_burst_keeps_send_order)
{
	struct ls_request r[4] = { 0 };
	for (int i = 0; i < 4; i++) {
		ls_request_reset(&r[i], (uint64_t)i);
		r[i].sent_ns = 200000000000ull + (uint64_t)i * 10000ull;
		r[i].headers_ns = 200000000000ull + 1000000ull;
		r[i].finished_ns = 200000000000ull + 900000000ull;
		r[i].usage_completion_tokens = 4;
	}
	char body[2048];
	size_t o = 0;
	o += (size_t)snprintf(body + o, sizeof(body) - o, "[");
	for (int i = 3; i >= 0; i--) /* finish order: the last sent ends first */
		o += (size_t)snprintf(body + o, sizeof(body) - o,
				      "%s{\"request_id\":%d,\"perf_metrics\":{\"timing_metrics\":{\"server_arrival_time\":%.9f,"
				      "\"arrival_time\":%.9f,\"first_scheduled_time\":%.9f,\"first_token_time\":%.9f,"
				      "\"server_first_token_time\":null,\"last_token_time\":%.9f}}}",
				      i == 3 ? "" : ",", i, 200.000050 + i * 10e-6, 200.000051 + i * 10e-6,
				      200.001 + i * 1e-3, 200.010 + i * 1e-3, 200.100 + i * 1e-3);
	snprintf(body + o, sizeof(body) - o, "]");
	struct ls_perf_join st;
	cr_assert_eq(ls_engine_perf_metrics_join(body, strlen(body), r, 4, &st), 0);
	cr_expect_eq(st.joined, 4);
	for (int i = 0; i < 4; i++) {
		double q = (double)r[i].engine_queue_ns / 1e3; /* scheduled - arrival, us */
		double want = (1000.0 + i * 1000.0) - (50.0 + i * 10.0);
		cr_expect(q > want - 1 && q < want + 1, "request %d: queue %.1f us, want %.1f", i, q, want);
		cr_expect_eq(r[i].engine_known, LS_ENGINE_QUEUE | LS_ENGINE_PREFILL | LS_ENGINE_DECODE | LS_ENGINE_E2E);
		cr_expect_eq(r[i].engine_predicted_n, 3);
		ls_request_free(&r[i]);
	}
}

/* The server reads a burst out of its send order: A sent first, B 10 us later; B read at 50 us
 * and its head at the client at 100 us, A read at 300 us and its head at 400 us. B's entry must
 * join B (the window that closes first), not A (the first sent), or A's entry finds no open
 * window left and is lost (seen in CI under load). */
Test(engine_fields, trtllm_perf_metrics_read_out_of_send_order)
{
	struct ls_request r[2] = { 0 };
	const uint64_t t0 = 300000000000ull;
	for (int i = 0; i < 2; i++) {
		ls_request_reset(&r[i], (uint64_t)i);
		r[i].sent_ns = t0 + (uint64_t)i * 10000ull;
		r[i].headers_ns = t0 + (i ? 100000ull : 400000ull);
		r[i].finished_ns = t0 + 900000000ull;
		r[i].usage_completion_tokens = 4;
	}
	const char *body =
		"[{\"request_id\":1,\"perf_metrics\":{\"timing_metrics\":{\"server_arrival_time\":300.000050,"
		"\"first_scheduled_time\":300.002050,\"first_token_time\":300.010,\"last_token_time\":300.100}}},"
		"{\"request_id\":2,\"perf_metrics\":{\"timing_metrics\":{\"server_arrival_time\":300.000300,"
		"\"first_scheduled_time\":300.005300,\"first_token_time\":300.020,\"last_token_time\":300.200}}}]";
	struct ls_perf_join st;
	cr_assert_eq(ls_engine_perf_metrics_join(body, strlen(body), r, 2, &st), 0);
	cr_expect_eq(st.joined, 2, "joined %zu, unjoined %zu", (size_t)st.joined, (size_t)st.unjoined);
	cr_expect(r[1].engine_queue_ns > 1999000 && r[1].engine_queue_ns < 2001000, "B's queue %lu ns (its entry: 2 ms)",
		  (unsigned long)r[1].engine_queue_ns);
	cr_expect(r[0].engine_queue_ns > 4999000 && r[0].engine_queue_ns < 5001000, "A's queue %lu ns (its entry: 5 ms)",
		  (unsigned long)r[0].engine_queue_ns);
	for (int i = 0; i < 2; i++)
		ls_request_free(&r[i]);
}

/* Python's NaN in a stamp (null once read), a string, an arrival that cannot be read: counted,
 * the request keeps its place, its readable parts and none of the malformed ones. */
Test(engine_fields, trtllm_perf_metrics_malformed_values)
{
	struct ls_request r[2] = { 0 };
	for (int i = 0; i < 2; i++) {
		ls_request_reset(&r[i], (uint64_t)i);
		r[i].sent_ns = 300000000000ull + (uint64_t)i * 100000000ull;
		r[i].headers_ns = r[i].sent_ns + 2000000;
		r[i].finished_ns = r[i].sent_ns + 50000000;
		r[i].usage_completion_tokens = 3;
	}
	const char *body =
		"[{\"perf_metrics\":{\"timing_metrics\":{\"server_arrival_time\":300.0001,\"first_scheduled_time\":NaN,"
		"\"first_token_time\":\"300.01\",\"last_token_time\":300.02}}},"
		"{\"perf_metrics\":{\"timing_metrics\":{\"server_arrival_time\":-1,\"arrival_time\":Infinity,"
		"\"first_scheduled_time\":300.1002,\"first_token_time\":300.11,\"last_token_time\":300.12}}},"
		"{\"perf_metrics\":{\"timing_metrics\":{\"server_arrival_time\":300.1001,\"first_scheduled_time\":300.1002,"
		"\"first_token_time\":300.11,\"last_token_time\":300.13}}}]";
	struct ls_perf_join st;
	cr_assert_eq(ls_engine_perf_metrics_join(body, strlen(body), r, 2, &st), 0);
	cr_expect_eq(st.entries, 3);
	cr_expect_eq(st.unreadable, 1, "the second entry has no arrival");
	cr_expect_eq(st.joined, 2);
	cr_expect_eq(st.bad_values, 4, "NaN, a string, -1, Infinity");
	cr_expect_eq(r[0].engine_source, LS_ENGINE_TRTLLM);
	cr_expect_eq(r[0].engine_bad, 2);
	cr_expect_eq(r[0].engine_known, LS_ENGINE_E2E, "only arrival -> last token is whole");
	cr_expect_eq(r[1].engine_bad, 0);
	cr_expect(r[1].engine_e2e_ns > 29899000 && r[1].engine_e2e_ns < 29901000);
	for (int i = 0; i < 2; i++)
		ls_request_free(&r[i]);
}
