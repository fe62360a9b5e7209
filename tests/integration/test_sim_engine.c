/* test_sim_engine.c — the step model against the ground truth and a real client: step timing
 * (--step-ms), speculative frames (--accept-len), empty frames, chunked prefill, max batch,
 * prefix cache, EOS/min_tokens, seeded determinism. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "t_helpers.h"
#include "test_sim_client.h"

static struct t_sim sim;

static void start(const char *const *extra)
{
	cr_assert_eq(t_sim_start(&sim, 0, extra), 0, "latscope sim did not start");
}

/* Stops the simulator and returns its truth lines (file removed). */
static int stop_and_truth(cJSON ***lines)
{
	setenv("T_KEEP", "1", 1);
	t_sim_stop(&sim);
	unsetenv("T_KEEP");
	int n = t_truth_lines(sim.truth, lines);
	unlink(sim.truth);
	return n;
}

static void fini(void)
{
	t_sim_stop(&sim);
}

TestSuite(sim_engine, .fini = fini, .timeout = 60);

struct job {
	const char *path, *body;
	char headers[128];
	struct t_resp resp;
};

static void *run_job(void *arg)
{
	struct job *j = arg;
	t_request(sim.port, "POST", j->path, j->headers, j->body, &j->resp, 10000);
	return NULL;
}

static void run_parallel(struct job *jobs, int n)
{
	pthread_t th[16];
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, run_job, &jobs[i]);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
}

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(o, k);
	cr_assert(cJSON_IsNumber(v), "truth key %s missing", k);
	return v->valuedouble;
}

Test(sim_engine, step_ms_10_frame_gaps_truth_and_client)
{
	const char *extra[] = { "--step-ms", "10", "--prefill-token-us", "0", NULL };
	start(extra);
	struct job jobs[2];
	for (int i = 0; i < 2; i++) {
		jobs[i] = (struct job){ .path = "/v1/completions",
					.body = "{\"prompt\":\"hello world\",\"max_tokens\":60,\"ignore_eos\":true,\"stream\":true}" };
		snprintf(jobs[i].headers, sizeof(jobs[i].headers), "X-Request-Id: gap-%d\r\n", i);
	}
	run_parallel(jobs, 2);
	double client[256], truth[256];
	size_t nc = 0, nt = 0;
	for (int i = 0; i < 2; i++) {
		struct t_resp *r = &jobs[i].resp;
		cr_assert_eq(r->status, 200);
		cr_assert_eq(r->n_events, 61);
		for (size_t k = 1; k < 60; k++) /* token frames only ([DONE] is last) */
			client[nc++] = (double)(r->events[k].t_ns - r->events[k - 1].t_ns) / 1e6;
		t_resp_free(r);
	}
	cJSON **lines;
	int n = stop_and_truth(&lines);
	cr_assert_eq(n, 2);
	for (int i = 0; i < n; i++) {
		cJSON *fr = cJSON_GetObjectItem(lines[i], "frames");
		double prev = -1;
		cJSON *f;
		cJSON_ArrayForEach(f, fr) {
			if (num(f, "tokens") == 0)
				continue;
			if (prev >= 0)
				truth[nt++] = (num(f, "t") - prev) / 1e6;
			prev = num(f, "t");
		}
	}
	t_truth_lines_free(lines, n);
	double mc = t_median(client, nc), mt = t_median(truth, nt);
	fprintf(stderr, "sim step-ms 10: median frame gap truth %.3f ms (n=%zu), client %.3f ms (n=%zu)\n", mt, nt, mc, nc);
	cr_expect(mt >= 9.0 && mt <= 11.0, "truth median gap %.3f ms", mt);
	cr_expect(mc >= 9.0 && mc <= 11.0, "client median gap %.3f ms", mc);
}

Test(sim_engine, accept_len_3_5_tokens_per_frame)
{
	const char *extra[] = { "--step-ms", "1", "--accept-len", "3.5", "--prefill-token-us", "0", NULL };
	start(extra);
	/* i.i.d. geometric frames have sd 1.95 tokens: 8,000 frames put 0.1 at ~4.5 standard errors */
	enum { N_REQ = 8, N_TOK = 3500 };
	struct job jobs[N_REQ];
	for (int i = 0; i < N_REQ; i++) {
		jobs[i] = (struct job){ .path = "/generate",
					.body = "{\"input_ids\":[258,259,260],\"sampling_params\":{\"max_new_tokens\":3500,"
						"\"ignore_eos\":true},\"stream\":true}" };
		snprintf(jobs[i].headers, sizeof(jobs[i].headers), "X-Request-Id: spec-%d\r\n", i);
	}
	run_parallel(jobs, N_REQ);
	/* client side: tokens per frame from SGLang's cumulative completion_tokens */
	long client_tokens = 0, client_frames = 0;
	for (int i = 0; i < N_REQ; i++) {
		struct t_resp *r = &jobs[i].resp;
		cr_assert_eq(r->status, 200);
		int prev = 0;
		for (size_t k = 0; k + 1 < r->n_events; k++) {
			cJSON *o = cJSON_Parse(r->events[k].data);
			cr_assert(o);
			int cum = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "meta_info"), "completion_tokens")->valueint;
			cr_assert_gt(cum, prev, "cumulative count grows");
			if (k > 0) { /* the first frame is the prefill's single token */
				client_tokens += cum - prev;
				client_frames++;
			}
			prev = cum;
			cJSON_Delete(o);
		}
		cr_expect_eq(prev, N_TOK);
		t_resp_free(r);
	}
	struct t_resp m;
	t_request(sim.port, "GET", "/metrics", NULL, NULL, &m, 5000);
	double drafts = 0, draft_tokens = 0, accepted = 0, gen = 0;
	sscanf(strstr(m.body, "\nvllm:spec_decode_num_drafts_total{") + 1, "%*[^}]} %lf", &drafts);
	sscanf(strstr(m.body, "\nvllm:spec_decode_num_draft_tokens_total{") + 1, "%*[^}]} %lf", &draft_tokens);
	sscanf(strstr(m.body, "\nvllm:spec_decode_num_accepted_tokens_total{") + 1, "%*[^}]} %lf", &accepted);
	sscanf(strstr(m.body, "\nvllm:generation_tokens_total{") + 1, "%*[^}]} %lf", &gen);
	t_resp_free(&m);
	t_request(sim.port, "GET", "/server_info", NULL, NULL, &m, 5000);
	cJSON *si = cJSON_Parse(m.body);
	double avg = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(si, "internal_states"), 0),
					 "avg_spec_accept_length")->valuedouble;
	cJSON_Delete(si);
	t_resp_free(&m);

	cJSON **lines;
	int n = stop_and_truth(&lines);
	cr_assert_eq(n, N_REQ);
	long truth_tokens = 0, truth_frames = 0;
	for (int i = 0; i < n; i++) {
		cJSON *f;
		int k = 0;
		cJSON_ArrayForEach(f, cJSON_GetObjectItem(lines[i], "frames")) {
			if (num(f, "tokens") > 0 && k++ > 0) {
				truth_tokens += (long)num(f, "tokens");
				truth_frames++;
			}
		}
	}
	t_truth_lines_free(lines, n);
	double mean_truth = (double)truth_tokens / (double)truth_frames;
	double mean_client = (double)client_tokens / (double)client_frames;
	fprintf(stderr, "sim accept-len 3.5: mean tokens/frame truth %.4f over %ld frames, client (sglang "
		"cumulative) %.4f over %ld frames; server_info avg %.4f; drafts %.0f draft_tokens %.0f accepted %.0f\n",
		mean_truth, truth_frames, mean_client, client_frames, avg, drafts, draft_tokens, accepted);
	cr_expect_geq(truth_frames, 7500);
	cr_expect_eq(truth_frames, client_frames);
	cr_expect(fabs(mean_truth - 3.5) <= 0.1, "truth mean %.4f", mean_truth);
	cr_expect(fabs(mean_client - 3.5) <= 0.1, "client mean %.4f", mean_client);
	cr_expect(fabs(avg - 3.5) <= 0.1, "server_info avg_spec_accept_length %.4f", avg);
	/* counters agree with the frames: every decode frame is 1 + accepted drafts */
	cr_expect_eq(gen, N_REQ * N_TOK);
	cr_expect_eq(gen, N_REQ + drafts + accepted, "generation = first tokens + drafts + accepted");
	cr_expect_eq(draft_tokens, drafts * 5, "K = ceil(3.5) + 1 = 5 drafts per step");
}

Test(sim_engine, empty_frames_carry_a_token_with_no_text)
{
	const char *extra[] = { "--step-ms", "1", "--empty-frame-every", "3", NULL };
	start(extra);
	struct t_resp r;
	t_request(sim.port, "POST", "/v1/completions", NULL,
		    "{\"prompt\":\"a\",\"max_tokens\":9,\"ignore_eos\":true,\"stream\":true}", &r, 5000);
	cr_assert_eq(r.n_events, 10);
	for (int i = 0; i < 9; i++) {
		cJSON *o = cJSON_Parse(r.events[i].data);
		const char *text = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0), "text")->valuestring;
		if ((i + 1) % 3 == 0)
			cr_expect_str_eq(text, "", "frame %d is empty", i + 1);
		else
			cr_expect_str_neq(text, "", "frame %d has text", i + 1);
		cJSON_Delete(o);
	}
	t_resp_free(&r);
	cJSON **lines;
	int n = stop_and_truth(&lines);
	cr_assert_eq(n, 1);
	cJSON *f = cJSON_GetArrayItem(cJSON_GetObjectItem(lines[0], "frames"), 2);
	cr_expect_eq(num(f, "tokens"), 1);
	cr_expect_eq(num(f, "text_len"), 0);
	t_truth_lines_free(lines, n);
}

Test(sim_engine, chunked_prefill_and_max_batch)
{
	const char *extra[] = { "--step-ms", "1", "--max-batch-tokens", "64", "--max-batch", "1", NULL };
	start(extra);
	/* 200 prompt tokens, 64 per step -> 64, 64, 64, 8; the second request waits for the first */
	char body[4096] = "{\"prompt\":[";
	for (int i = 0; i < 200; i++)
		snprintf(body + strlen(body), sizeof(body) - strlen(body), "%s%d", i ? "," : "", 258 + i % 100);
	strcat(body, "],\"max_tokens\":5,\"ignore_eos\":true,\"stream\":true}");
	struct job jobs[2] = { { .path = "/v1/completions", .body = body, .headers = "X-Request-Id: a\r\n" },
			       { .path = "/v1/completions", .body = body, .headers = "X-Request-Id: b\r\n" } };
	run_parallel(jobs, 2);
	for (int i = 0; i < 2; i++) {
		cr_expect_eq(jobs[i].resp.status, 200);
		t_resp_free(&jobs[i].resp);
	}
	cJSON **lines;
	int n = stop_and_truth(&lines);
	cr_assert_eq(n, 2);
	cJSON *steps = cJSON_GetObjectItem(lines[0], "steps");
	int want[] = { 64, 64, 64, 8, 0 };
	for (int i = 0; i < 5; i++)
		cr_expect_eq(num(cJSON_GetArrayItem(steps, i), "prefill_tokens"), want[i], "step %d", i);
	cr_expect_eq(num(cJSON_GetArrayItem(steps, 3), "tokens"), 1, "first token when the prefill ends");
	double first_end = num(lines[0], "finished");
	double second_admitted = num(lines[1], "admitted");
	cr_expect_geq(second_admitted, num(cJSON_GetArrayItem(steps, cJSON_GetArraySize(steps) - 1), "end"),
		      "--max-batch 1: admitted after the first left (%.0f vs %.0f)", second_admitted, first_end);
	t_truth_lines_free(lines, n);
}

Test(sim_engine, prefix_cache_skips_prefill_until_flushed)
{
	const char *extra[] = { "--step-ms", "1", "--prefix-cache", "--prefill-token-us", "200", NULL };
	start(extra);
	char body[8192] = "{\"prompt\":[";
	for (int i = 0; i < 320; i++)
		snprintf(body + strlen(body), sizeof(body) - strlen(body), "%s%d", i ? "," : "", 258 + (i * 7) % 120);
	strcat(body, "],\"max_tokens\":2,\"ignore_eos\":true,\"stream\":true}");
	/* The same prompt's first 200 tokens, then others: its first 12 blocks of 16 are cached. */
	char part[8192] = "{\"prompt\":[";
	for (int i = 0; i < 320; i++)
		snprintf(part + strlen(part), sizeof(part) - strlen(part), "%s%d", i ? "," : "",
			 i < 200 ? 258 + (i * 7) % 120 : 259 + (i * 11) % 97);
	strcat(part, "],\"max_tokens\":2,\"ignore_eos\":true,\"stream\":true}");
	struct t_resp r;
	for (int i = 0; i < 4; i++) {
		if (i == 2) {
			t_request(sim.port, "POST", "/flush_cache", NULL, "", &r, 5000);
			t_resp_free(&r);
		}
		t_request(sim.port, "POST", "/v1/completions", NULL, i == 3 ? part : body, &r, 5000);
		cr_assert_eq(r.status, 200);
		t_resp_free(&r);
	}
	cJSON **lines;
	int n = stop_and_truth(&lines);
	cr_assert_eq(n, 4);
	cr_expect_eq(num(lines[3], "cached_tokens"), 192, "a shared prefix is cached by whole blocks");
	cr_expect_eq(num(lines[0], "cached_tokens"), 0);
	cr_expect_eq(num(lines[1], "cached_tokens"), 319, "all but the last prompt token is cached");
	cr_expect_eq(num(cJSON_GetArrayItem(cJSON_GetObjectItem(lines[1], "steps"), 0), "prefill_tokens"), 1);
	cr_expect_eq(num(lines[2], "cached_tokens"), 0, "flushed");
	double s0 = num(cJSON_GetArrayItem(cJSON_GetObjectItem(lines[0], "steps"), 0), "end") -
		    num(cJSON_GetArrayItem(cJSON_GetObjectItem(lines[0], "steps"), 0), "start");
	double s1 = num(cJSON_GetArrayItem(cJSON_GetObjectItem(lines[1], "steps"), 0), "end") -
		    num(cJSON_GetArrayItem(cJSON_GetObjectItem(lines[1], "steps"), 0), "start");
	/* A step lasts at least its planned time (1 ms + 200 us per prefilled token: 65 ms for the
	 * whole prompt); the cached one plans 1.2 ms, so even a badly delayed timer leaves it under
	 * half the uncached one. */
	cr_expect_geq(s0, 1e6 + 320 * 200e3, "the uncached prefill step lasts its 320 tokens (%.2f ms)", s0 / 1e6);
	cr_expect_lt(s1, s0 / 2, "the cached prefill step is shorter (%.2f vs %.2f ms)", s1 / 1e6, s0 / 1e6);
	t_truth_lines_free(lines, n);
}

Test(sim_engine, eos_within_min_and_max_and_seeded)
{
	const char *extra[] = { "--step-ms", "0.2", "--seed", "7", NULL };
	start(extra);
	int stops = 0;
	char first_text[20][512];
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 20; i++) {
			struct t_resp r;
			char hdr[64];
			snprintf(hdr, sizeof(hdr), "X-Request-Id: eos-%d\r\n", i);
			t_request(sim.port, "POST", "/v1/completions", hdr,
				    "{\"prompt\":\"a\",\"max_tokens\":20,\"min_tokens\":5}", &r, 5000);
			cr_assert_eq(r.status, 200);
			cJSON *o = cJSON_Parse(r.body);
			int ct = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "usage"), "completion_tokens")->valueint;
			const char *fr = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0),
							     "finish_reason")->valuestring;
			cr_expect(ct >= 5 && ct <= 20, "completion_tokens %d within [5, 20]", ct);
			stops += !strcmp(fr, "stop");
			const char *text = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0),
							       "text")->valuestring;
			if (round == 0)
				snprintf(first_text[i], sizeof(first_text[i]), "%s", text);
			else
				cr_expect_str_eq(text, first_text[i], "same seed and id -> same output");
			cJSON_Delete(o);
			t_resp_free(&r);
		}
	}
	cr_expect_gt(stops, 0, "some requests end at EOS");
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* --api-frame-us 2000: the server spends 2 ms of CPU before each frame, so the 4 frames of one
 * step leave at least 2 ms apart (truth stamps), and a step's last frame leaves >= 6 ms after
 * its first. */
Test(sim_engine, api_frame_us_spaces_one_steps_frames)
{
	const char *extra[] = { "--step-ms", "20", "--prefill-token-us", "0", "--api-frame-us", "2000", NULL };
	start(extra);
	enum { N_REQ = 4, N_TOK = 6 };
	struct job jobs[N_REQ];
	for (int i = 0; i < N_REQ; i++) {
		jobs[i] = (struct job){ .path = "/v1/completions",
					.body = "{\"prompt\":\"a\",\"max_tokens\":6,\"ignore_eos\":true,\"stream\":true}" };
		snprintf(jobs[i].headers, sizeof(jobs[i].headers), "X-Request-Id: api-%d\r\n", i);
	}
	run_parallel(jobs, N_REQ);
	for (int i = 0; i < N_REQ; i++) {
		cr_expect_eq(jobs[i].resp.status, 200);
		t_resp_free(&jobs[i].resp);
	}
	cJSON **lines;
	int n = stop_and_truth(&lines);
	cr_assert_eq(n, N_REQ);
	double t[N_REQ * (N_TOK + 2)];
	size_t nt = 0;
	for (int i = 0; i < n; i++) {
		cJSON *f;
		cJSON_ArrayForEach(f, cJSON_GetObjectItem(lines[i], "frames"))
			if (num(f, "tokens") > 0 && nt < sizeof(t) / sizeof(t[0]))
				t[nt++] = num(f, "t");
	}
	t_truth_lines_free(lines, n);
	cr_assert_eq(nt, (size_t)N_REQ * N_TOK);
	qsort(t, nt, sizeof(t[0]), cmp_dbl);
	double min_gap = 1e18;
	for (size_t i = 1; i < nt; i++)
		if (t[i] - t[i - 1] < min_gap)
			min_gap = t[i] - t[i - 1];
	fprintf(stderr, "sim api-frame-us 2000: smallest gap between any two frames %.3f ms\n", min_gap / 1e6);
	cr_expect_geq(min_gap, 2.0e6, "frames leave at least 2 ms apart: %.0f ns", min_gap);
}
