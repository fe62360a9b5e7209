/* The checks that end every report, on hand-built runs: each fires on the condition it
 * names, and says ok otherwise. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include "metrics/checks.h"
#include "config/profile.h"

#define MS 1000000ull
#define T0 (5000 * MS)

/* A request started at start_ms: first token after ttft_ms, then n_frames - 1 frames every
 * 10 ms carrying tpf tokens each; usage = tokens generated; asked for `asked`. */
static void req(struct ls_request *r, uint64_t id, uint64_t start_ms, uint64_t ttft_ms, uint32_t n_frames,
		int32_t tpf, uint32_t asked)
{
	ls_request_reset(r, id);
	r->prompt_len = 100;
	r->output_len = asked;
	r->scheduled_ns = r->admitted_ns = r->started_ns = T0 + start_ms * MS;
	uint64_t t = start_ms + ttft_ms;
	int32_t total = 0;
	for (uint32_t i = 0; i < n_frames; i++, t += 10) {
		struct ls_frame *f = ls_request_add_frame(r);
		cr_assert_not_null(f);
		f->arrived_ns = T0 + t * MS;
		f->flags = LS_FRAME_CHOICES;
		f->text_len = 4;
		f->tokens = i ? tpf : 1;
		total += f->tokens;
		f->cum_tokens = total;
	}
	r->done_frame_ns = r->finished_ns = r->frames[n_frames - 1].arrived_ns; /* [DONE] rides with the last */
	r->usage_completion_tokens = total;
	r->usage_prompt_tokens = 100;
}

static struct ls_run *new_run(size_t n)
{
	struct ls_run *run = calloc(1, sizeof(*run));
	run->requests = calloc(n, sizeof(*run->requests));
	run->n_requests = n;
	run->start_ns = T0;
	return run;
}

static void free_run(struct ls_run *run)
{
	ls_run_free(run);
	free(run);
}

static void checks_of(const struct ls_run *run, const char *profile, const struct ls_checks_ctx *cx,
		      struct ls_checks *out)
{
	struct ls_profile p;
	cr_assert_eq(ls_profile_builtin(profile, &p), 0);
	struct ls_metrics m;
	cr_assert_eq(ls_metrics_compute(run, &p.read, NULL, &m), 0);
	ls_checks_compute(run, &m, cx, out);
	ls_metrics_free(&m);
}

Test(checks, a_clean_run_is_all_ok)
{
	struct ls_run *run = new_run(3);
	for (int i = 0; i < 3; i++)
		req(&run->requests[i], (uint64_t)i, (uint64_t)i * 5, 20, 8, 1, 8);
	struct ls_checks c;
	checks_of(run, "vllm", NULL, &c);
	cr_assert_eq(c.n, LS_CHECK__COUNT - 1); /* no engine account: no engine line */
	cr_expect_eq(c.n_bad, 0);
	for (size_t k = 0; k < c.n; k++)
		cr_expect(!strncmp(c.c[k].text, "ok: ", 4), "%s: %s", ls_check_name(c.c[k].kind), c.c[k].text);
	free_run(run);
}

Test(checks, failures_condition_the_percentiles)
{
	struct ls_run *run = new_run(4);
	for (int i = 0; i < 4; i++)
		req(&run->requests[i], (uint64_t)i, (uint64_t)i * 5, 20, 8, 1, 8);
	run->requests[2].fail = LS_FAIL_RESET_MID_STREAM;
	struct ls_checks c;
	checks_of(run, "sglang", NULL, &c);
	const struct ls_check *f = &c.c[LS_CHECK_FAILURES];
	cr_expect(!f->ok);
	cr_expect(strstr(f->text, "1 of 4 requests failed (reset_mid_stream 1)"), "%s", f->text);
	cr_expect(strstr(f->text, "conditioned on the 3 that survived"), "%s", f->text);
	cr_expect(strstr(f->text, "do not print the failures"), "sglang hides them: %s", f->text);
	free_run(run);
}

/* A 200 whose stream ended before any token: the profile counts it failed (no_token_ok off), and
 * the failures check says so, though no transfer failed. */
Test(checks, a_stream_without_a_token_is_a_failure)
{
	struct ls_run *run = new_run(3);
	for (int i = 0; i < 2; i++)
		req(&run->requests[i], (uint64_t)i, (uint64_t)i * 5, 20, 8, 1, 8);
	struct ls_request *r = &run->requests[2];
	ls_request_reset(r, 2);
	r->prompt_len = 100;
	r->output_len = 8;
	r->scheduled_ns = r->admitted_ns = r->started_ns = T0 + 10 * MS;
	r->http_status = 200;
	r->done_frame_ns = r->finished_ns = T0 + 30 * MS; /* [DONE] and nothing before it */
	struct ls_checks c;
	checks_of(run, "vllm", NULL, &c);
	const struct ls_check *f = &c.c[LS_CHECK_FAILURES];
	cr_expect(!f->ok, "a tokenless stream passed the failures check: %s", f->text);
	cr_expect(strncmp(f->text, "ok: ", 4), "%s", f->text);
	free_run(run);
}

Test(checks, token_counts_that_disagree)
{
	struct ls_run *run = new_run(2);
	req(&run->requests[0], 0, 0, 20, 8, 1, 16); /* stopped at 8 of 16 */
	req(&run->requests[1], 1, 5, 20, 8, 1, 16);
	struct ls_checks c;
	checks_of(run, "vllm", NULL, &c);
	const struct ls_check *t = &c.c[LS_CHECK_TOKENS];
	cr_expect(!t->ok);
	cr_expect(strstr(t->text, "usage says 16 tokens, the requests asked for 32 (ratio 0.500)"), "%s", t->text);
	cr_expect(strstr(t->text, "2 of 2 requests stopped before max_tokens"), "%s", t->text);
	checks_of(run, "sglang-oai", NULL, &c); /* takes the requested length: TPOT moves */
	cr_expect(strstr(c.c[LS_CHECK_TOKENS].text, "these rules take requested (32 tokens, ratio 2.000"), "%s",
		  c.c[LS_CHECK_TOKENS].text);
	run->requests[1].usage_completion_tokens = 9; /* usage and the stream's count disagree */
	run->requests[0].output_len = run->requests[1].output_len = 8;
	checks_of(run, "vllm", NULL, &c);
	cr_expect(strstr(c.c[LS_CHECK_TOKENS].text, "cumulative counts say 16, the usage frame 17"), "%s",
		  c.c[LS_CHECK_TOKENS].text);
	free_run(run);
}

Test(checks, itl_over_tpot_explained_by_tokens_per_frame)
{
	struct ls_run *run = new_run(2);
	req(&run->requests[0], 0, 0, 20, 10, 3, 28); /* 1 + 9 x 3 tokens, a frame every 10 ms */
	req(&run->requests[1], 1, 5, 20, 10, 3, 28);
	struct ls_checks c;
	checks_of(run, "vllm", NULL, &c);
	const struct ls_check *k = &c.c[LS_CHECK_ITL_TPOT];
	cr_expect(!k->ok);
	cr_expect(strstr(k->text, "mean ITL 10.00 ms / mean TPOT 3.33 ms = 3.00"), "%s", k->text);
	cr_expect(strstr(k->text, "a frame carries 3.00 tokens"), "%s", k->text);
	cr_expect(strstr(k->text, "10/10/10 token frames, 28/28/28 tokens"), "%s", k->text);
	checks_of(run, "sglang", NULL, &c); /* per-token ITL: the ratio is 1 */
	cr_expect(c.c[LS_CHECK_ITL_TPOT].ok, "%s", c.c[LS_CHECK_ITL_TPOT].text);
	free_run(run);
}

Test(checks, repeated_prompt_served_from_a_prefix_cache)
{
	struct ls_run *run = new_run(5);
	req(&run->requests[0], 4, 0, 100, 4, 1, 4); /* the warmup: prompt 0 */
	run->requests[0].warmup = 1;
	run->n_warmup = 1;
	req(&run->requests[1], 0, 500, 5, 4, 1, 4); /* prompt 0 again: no prefill */
	for (int i = 2; i < 5; i++)
		req(&run->requests[i], (uint64_t)i - 1, 500 + (uint64_t)i * 5, 100, 4, 1, 4);
	struct ls_checks c;
	checks_of(run, "vllm", NULL, &c);
	const struct ls_check *p = &c.c[LS_CHECK_PREFIX_CACHE];
	cr_expect(!p->ok);
	cr_expect(strstr(p->text, "TTFT 5.00 ms vs median 100.00 ms"), "%s", p->text);
	cr_expect(strstr(p->text, "likely served from the server's prefix cache"), "%s", p->text);
	run->requests[1].frames[0].arrived_ns += 95 * MS; /* now as slow as the rest */
	checks_of(run, "vllm", NULL, &c);
	cr_expect(c.c[LS_CHECK_PREFIX_CACHE].ok, "%s", c.c[LS_CHECK_PREFIX_CACHE].text);
	struct ls_checks_ctx cx = { .repeated_run = 1, .cache_flushed = 0 };
	checks_of(run, "vllm", &cx, &c);
	cr_expect(!c.c[LS_CHECK_PREFIX_CACHE].ok, "a second run without a flushed cache");
	cr_expect(strstr(c.c[LS_CHECK_PREFIX_CACHE].text, "could not be flushed"), "%s",
		  c.c[LS_CHECK_PREFIX_CACHE].text);
	free_run(run);
}

Test(checks, realised_rate_off_target)
{
	struct ls_run *run = new_run(10);
	for (int i = 0; i < 10; i++) /* target 20 req/s = 50 ms apart, but scheduled 100 ms apart */
		req(&run->requests[i], (uint64_t)i, 100 + (uint64_t)i * 100, 20, 4, 1, 4);
	run->target_rate = 20;
	struct ls_checks_ctx cx = { .arrival = "poisson-yield" };
	struct ls_checks c;
	checks_of(run, "sglang", &cx, &c);
	const struct ls_check *r = &c.c[LS_CHECK_RATE];
	cr_expect(!r->ok);
	cr_expect(strstr(r->text, "realised 10.00 req/s vs target 20.00 (-50.0%)"), "%s", r->text);
	cr_expect(strstr(r->text, "the schedule itself ends at 1.00 s for 10 requests instead of N/rate = 0.50 s"),
		  "%s", r->text);
	cr_expect(strstr(r->text, "poisson-yield is not normalised"), "%s", r->text);
	/* On schedule but held by the slot limit: saturation. */
	for (int i = 0; i < 10; i++) {
		struct ls_request *q = &run->requests[i];
		q->scheduled_ns = T0 + (uint64_t)(i + 1) * 50 * MS;
		q->admitted_ns = q->started_ns = q->scheduled_ns + (uint64_t)i * 50 * MS;
	}
	run->max_concurrency = 2;
	checks_of(run, "vllm", NULL, &c);
	cr_expect(strstr(c.c[LS_CHECK_RATE].text, "the concurrency limit of 2 held them"), "%s", c.c[LS_CHECK_RATE].text);
	cJSON *j = ls_checks_json(&c);
	cr_assert_not_null(j);
	cr_expect_eq(cJSON_GetArraySize(j), LS_CHECK__COUNT - 1);
	cJSON_Delete(j);
	free_run(run);
}

/* --request-rate inf: every request starts at once and request 0, first in line, is fastest
 * whether or not the server caches its prompt: no verdict, and no false warning. */
Test(checks, request_0_leading_a_burst_is_no_sign_of_a_prefix_cache)
{
	struct ls_run *run = new_run(5);
	req(&run->requests[0], 4, 0, 100, 4, 1, 4); /* the warmup: prompt 0 */
	run->requests[0].warmup = 1;
	run->n_warmup = 1;
	for (int i = 1; i < 5; i++) /* all start at 500 ms; each waits for the one before */
		req(&run->requests[i], (uint64_t)i - 1, 500, 10 + (uint64_t)i * 40, 4, 1, 4);
	struct ls_checks c;
	checks_of(run, "vllm", NULL, &c);
	const struct ls_check *p = &c.c[LS_CHECK_PREFIX_CACHE];
	cr_expect(p->ok, "%s", p->text);
	cr_expect(strstr(p->text, "led a burst (3 similar requests started before its first token)"), "%s", p->text);
	free_run(run);
}

/* The client check: a client near a whole core (not spinning by design) or requests leaving
 * their slot late against the median ITL is not "ok"; the same figures under a spinning loop,
 * or a quiet client, are. */
Test(checks, the_client_check_sees_a_saturated_client)
{
	struct ls_run *run = new_run(3);
	for (int i = 0; i < 3; i++)
		req(&run->requests[i], (uint64_t)i, (uint64_t)i * 5, 20, 8, 1, 8);
	run->end_ns = T0 + 200 * MS;
	run->n_client_procs = 1;
	run->client_cpu_ns = 190 * MS; /* 95 % of 200 ms */
	struct ls_checks c;
	checks_of(run, "vllm", NULL, &c);
	cr_expect(!c.c[LS_CHECK_CLIENT].ok, "%s", c.c[LS_CHECK_CLIENT].text);
	cr_expect(strstr(c.c[LS_CHECK_CLIENT].text, "client CPU 95% of a core"), "%s", c.c[LS_CHECK_CLIENT].text);
	run->loop_spins = 1; /* --busy-poll: a busy core is the design, not saturation */
	checks_of(run, "vllm", NULL, &c);
	cr_expect(c.c[LS_CHECK_CLIENT].ok, "%s", c.c[LS_CHECK_CLIENT].text);
	run->loop_spins = 0;
	run->n_client_procs = 2; /* two ranks: 47.5 % of their cores */
	checks_of(run, "vllm", NULL, &c);
	cr_expect(c.c[LS_CHECK_CLIENT].ok, "%s", c.c[LS_CHECK_CLIENT].text);
	/* Requests that leave their slot 8 ms late, against 10 ms between frames: after the first
	 * finished (an opening burst's spread is its design, not a late loop). */
	run->client_cpu_ns = 20 * MS;
	run->n_client_procs = 1;
	for (int i = 0; i < 3; i++)
		run->requests[i].started_ns = run->requests[i].admitted_ns + 8 * MS;
	checks_of(run, "vllm", NULL, &c);
	cr_expect(c.c[LS_CHECK_CLIENT].ok, "all three admitted before any finished: %s", c.c[LS_CHECK_CLIENT].text);
	for (int i = 0; i < 3; i++)
		run->requests[i].admitted_ns = run->requests[i].scheduled_ns = run->requests[0].finished_ns + (uint64_t)i * MS;
	for (int i = 0; i < 3; i++)
		run->requests[i].started_ns = run->requests[i].admitted_ns + 8 * MS;
	checks_of(run, "vllm", NULL, &c);
	cr_expect(!c.c[LS_CHECK_CLIENT].ok, "%s", c.c[LS_CHECK_CLIENT].text);
	cr_expect(strstr(c.c[LS_CHECK_CLIENT].text, "8.00 ms late at P99 = 80% of the median ITL (10.00 ms)"), "%s",
		  c.c[LS_CHECK_CLIENT].text);
	/* The probes' account: frames the kernel held 6 ms before the client read them, against 10 ms
	 * between frames; on time otherwise. */
	for (int i = 0; i < 3; i++)
		run->requests[i].started_ns = run->requests[i].admitted_ns;
	run->client_delay_p99_ns = 6 * MS;
	checks_of(run, "vllm", NULL, &c);
	cr_expect(!c.c[LS_CHECK_CLIENT].ok, "%s", c.c[LS_CHECK_CLIENT].text);
	cr_expect(!strncmp(c.c[LS_CHECK_CLIENT].text, "client delay P99 6.00 ms = 60% of the median ITL (10.00 ms)", 59),
		  "%s", c.c[LS_CHECK_CLIENT].text);
	run->client_delay_p99_ns = 2 * MS;
	checks_of(run, "vllm", NULL, &c);
	cr_expect(c.c[LS_CHECK_CLIENT].ok, "%s", c.c[LS_CHECK_CLIENT].text);
	/* Without the probes, the loop's own lag: turns 6 ms late against 10 ms between frames fire
	 * the check; 0.8 ms is said and ok; with the probes' account, theirs decides. */
	run->client_delay_p99_ns = 0;
	run->loop_lag_ticks = 100;
	run->loop_lag_p99_ns = 6 * MS;
	checks_of(run, "vllm", NULL, &c);
	cr_expect(!c.c[LS_CHECK_CLIENT].ok, "%s", c.c[LS_CHECK_CLIENT].text);
	cr_expect(!strncmp(c.c[LS_CHECK_CLIENT].text, "client loop lag P99 6.00 ms = 60% of the median ITL (10.00 ms)", 62),
		  "%s", c.c[LS_CHECK_CLIENT].text);
	run->loop_lag_p99_ns = 800000; /* 0.8 ms */
	checks_of(run, "vllm", NULL, &c);
	cr_expect(c.c[LS_CHECK_CLIENT].ok, "%s", c.c[LS_CHECK_CLIENT].text);
	cr_expect(strstr(c.c[LS_CHECK_CLIENT].text, "its loop's turns started within 0.800 ms of their ticks (P99)"), "%s",
		  c.c[LS_CHECK_CLIENT].text);
	run->loop_lag_p99_ns = 6 * MS;
	run->client_delay_p99_ns = 2 * MS;
	checks_of(run, "vllm", NULL, &c);
	cr_expect(c.c[LS_CHECK_CLIENT].ok, "the probes' account decides: %s", c.c[LS_CHECK_CLIENT].text);
	free_run(run);
}

/* The engine's own account against latscope's clocks: inside the send -> first token window it
 * is ok and says how much of TTFT the engine does not count; a queue+prefill longer than that
 * window, an e2e longer than send -> last byte, or malformed values are said with the figures.
 * Catches: the check reading the TTFT from another clock (started vs sent), the queue left out
 * of the engine's part, a malformed value passing silently. */
Test(checks, engine_account_against_latscope)
{
	struct ls_run *run = new_run(4);
	for (int i = 0; i < 4; i++) {
		struct ls_request *r = &run->requests[i];
		req(r, (uint64_t)i, (uint64_t)i * 5, 40, 5, 1, 5); /* TTFT 40 ms, last byte at +80 ms */
		r->sent_ns = r->started_ns + 2 * MS;
		r->engine_source = LS_ENGINE_SGLANG;
		r->engine_known = LS_ENGINE_QUEUE | LS_ENGINE_PREFILL | LS_ENGINE_E2E;
		r->engine_queue_ns = 10 * MS;
		r->engine_prompt_ns = 20 * MS; /* 30 of the 38 ms from the send */
		r->engine_e2e_ns = 70 * MS;
	}
	struct ls_checks c;
	checks_of(run, "vllm", NULL, &c);
	cr_assert_eq(c.n, LS_CHECK__COUNT);
	const char *t = c.c[LS_CHECK_ENGINE].text;
	cr_expect(c.c[LS_CHECK_ENGINE].ok, "%s", t);
	cr_expect(strstr(t, "for 4 requests: its queue+prefill P50 30.00 ms of a TTFT P50 40.00 ms; TTFT it does not "
			    "count P50 10.00 ms"), "%s", t);
	run->requests[1].engine_queue_ns = 20 * MS; /* 40 ms > 38 ms from the send */
	run->requests[2].engine_e2e_ns = 81 * MS;   /* > 78 ms send -> last byte */
	run->requests[3].engine_bad = 2;
	checks_of(run, "vllm", NULL, &c);
	t = c.c[LS_CHECK_ENGINE].text;
	cr_expect(!c.c[LS_CHECK_ENGINE].ok, "%s", t);
	cr_expect(strstr(t, "1 of 4 requests: the engine's queue+prefill is longer than latscope's send -> first token "
			    "(by up to 2.00 ms)"), "%s", t);
	cr_expect(strstr(t, "1 requests: the engine's end-to-end is longer than send -> last byte (by up to 3.00 ms)"),
		  "%s", t);
	cr_expect(strstr(t, "2 malformed engine values ignored in 1 requests"), "%s", t);
	free_run(run);
}
