/* test_sim_fault.c — every --fail-kind is produced, a client sees it, and the truth says so;
 * then a `mixed` storm that the server survives. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "t_helpers.h"
#include "test_sim_client.h"

static struct t_sim sim;

static void fini(void)
{
	t_sim_stop(&sim);
}

TestSuite(sim_fault, .fini = fini, .timeout = 60);

static const char *BODY = "{\"prompt\":\"a\",\"max_tokens\":10,\"ignore_eos\":true,\"stream\":true}";

/* Starts a sim that fails every request with kind, sends one streaming request. */
static void one(const char *kind, struct t_resp *r, int timeout_ms)
{
	const char *extra[] = { "--step-ms", "1", "--fail-rate", "1", "--fail-kind", kind, NULL };
	cr_assert_eq(t_sim_start(&sim, 0, extra), 0);
	t_request(sim.port, "POST", "/v1/completions", "X-Request-Id: f\r\n", BODY, r, timeout_ms);
}

/* The truth's reason for the one request, after the simulator stopped. */
static void expect_truth_reason(const char *kind)
{
	setenv("T_KEEP", "1", 1);
	t_sim_stop(&sim);
	unsetenv("T_KEEP");
	cJSON **lines;
	int n = t_truth_lines(sim.truth, &lines);
	unlink(sim.truth);
	cr_assert_eq(n, 1, "one truth line, got %d", n);
	cr_expect_str_eq(cJSON_GetObjectItem(lines[0], "reason")->valuestring, kind);
	cr_expect_str_eq(cJSON_GetObjectItem(lines[0], "fault")->valuestring, kind);
	cr_expect(cJSON_IsNumber(cJSON_GetObjectItem(lines[0], "failed")));
	t_truth_lines_free(lines, n);
}

static int has_done(const struct t_resp *r)
{
	return r->n_events && !strcmp(r->events[r->n_events - 1].data, "[DONE]");
}

Test(sim_fault, http500)
{
	struct t_resp r;
	one("http500", &r, 5000);
	cr_expect_eq(r.status, 500);
	cr_expect(r.body && strstr(r.body, "\"message\""), "JSON error body");
	t_resp_free(&r);
	expect_truth_reason("http500");
}

Test(sim_fault, http429)
{
	struct t_resp r;
	one("http429", &r, 5000);
	cr_expect_eq(r.status, 429);
	cr_expect(r.head && strstr(r.head, "Retry-After"));
	t_resp_free(&r);
	expect_truth_reason("http429");
}

Test(sim_fault, reset_before_headers)
{
	struct t_resp r;
	one("reset-before-headers", &r, 5000);
	cr_expect_eq(r.end, T_RESET, "connection reset (end %d)", r.end);
	cr_expect_eq(r.status, 0, "no status line");
	t_resp_free(&r);
	expect_truth_reason("reset-before-headers");
}

Test(sim_fault, reset_mid_stream)
{
	struct t_resp r;
	one("reset-mid-stream", &r, 5000);
	cr_expect_eq(r.status, 200);
	cr_expect_geq(r.n_events, 1, "frames before the reset");
	cr_expect(!has_done(&r));
	cr_expect_eq(r.end, T_RESET, "connection reset (end %d)", r.end);
	t_resp_free(&r);
	expect_truth_reason("reset-mid-stream");
}

Test(sim_fault, stall)
{
	struct t_resp r;
	one("stall", &r, 300);
	cr_expect_eq(r.status, 200);
	cr_expect_geq(r.n_events, 1, "frames before the stall");
	cr_expect(!has_done(&r));
	cr_expect_eq(r.end, T_TIMEOUT, "silence until the client gives up (end %d)", r.end);
	t_resp_free(&r);
	usleep(20000); /* the client closed: the truth line is written then */
	expect_truth_reason("stall");
}

Test(sim_fault, malformed_frame)
{
	struct t_resp r;
	one("malformed-frame", &r, 5000);
	cr_expect_eq(r.status, 200);
	int bad = 0;
	for (size_t i = 0; i + 1 < r.n_events; i++) {
		cJSON *o = cJSON_Parse(r.events[i].data);
		bad += !o;
		cJSON_Delete(o);
	}
	cr_expect_eq(bad, 1, "exactly one frame is not JSON");
	cr_expect(has_done(&r), "the stream goes on to [DONE]");
	t_resp_free(&r);
	expect_truth_reason("malformed-frame");
}

Test(sim_fault, truncated_chunk)
{
	struct t_resp r;
	one("truncated-chunk", &r, 5000);
	cr_expect_eq(r.status, 200);
	cr_expect(r.chunk_incomplete, "the connection ended inside a chunk");
	cr_expect_eq(r.end, T_EOF);
	cr_expect(!has_done(&r));
	t_resp_free(&r);
	expect_truth_reason("truncated-chunk");
}

Test(sim_fault, non_streaming_truncated_body)
{
	const char *extra[] = { "--step-ms", "1", "--fail-rate", "1", "--fail-kind", "truncated-chunk", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, extra), 0);
	struct t_resp r;
	t_request(sim.port, "POST", "/v1/completions", NULL, "{\"prompt\":\"a\",\"max_tokens\":5}", &r, 5000);
	cr_expect_eq(r.status, 200);
	cr_expect_eq(r.end, T_EOF, "closed before Content-Length bytes");
	cr_expect(!cJSON_Parse(r.body ? r.body : ""), "the body is cut");
	t_resp_free(&r);
}

Test(sim_fault, mixed_storm_every_kind_and_survives)
{
	/* The seven kinds this test checks (the other kinds: test_reliability_faults.c). */
	const char *extra[] = { "--step-ms", "1", "--fail-rate", "0.6", "--fail-kind",
				"http500,http429,reset-before-headers,reset-mid-stream,stall,malformed-frame,truncated-chunk",
				"--seed", "3", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, extra), 0);
	enum { N = 120 };
	for (int i = 0; i < N; i++) {
		struct t_resp r;
		char hdr[64];
		snprintf(hdr, sizeof(hdr), "X-Request-Id: storm-%d\r\n", i);
		t_request(sim.port, "POST", i % 2 ? "/generate" : "/v1/chat/completions", hdr,
			    i % 2 ? "{\"text\":\"a\",\"sampling_params\":{\"max_new_tokens\":6},\"stream\":true}"
				  : "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"max_tokens\":6,\"stream\":true}",
			    &r, 150);
		t_resp_free(&r);
	}
	struct t_resp r;
	t_request(sim.port, "GET", "/health", NULL, NULL, &r, 5000);
	cr_expect_eq(r.status, 200, "alive after the storm");
	t_resp_free(&r);
	usleep(20000);
	setenv("T_KEEP", "1", 1);
	t_sim_stop(&sim);
	unsetenv("T_KEEP");
	cJSON **lines;
	int n = t_truth_lines(sim.truth, &lines);
	unlink(sim.truth);
	cr_expect_eq(n, N, "a truth line per request, got %d", n);
	const char *kinds[] = { "http500", "http429", "reset-before-headers", "reset-mid-stream", "stall",
				"malformed-frame", "truncated-chunk" };
	for (size_t k = 0; k < 7; k++) {
		int seen = 0;
		for (int i = 0; i < n; i++)
			seen += !strcmp(cJSON_GetObjectItem(lines[i], "fault")->valuestring, kinds[k]);
		cr_expect_gt(seen, 0, "kind %s produced", kinds[k]);
	}
	t_truth_lines_free(lines, n);
}
