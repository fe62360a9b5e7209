/* Profiles end to end against `latscope sim`: the sending rules each profile fixes (range
 * semantics, arrival drift, connection policy) and the reading rules (empty-text frames),
 * checked on real sockets and the simulator's ground truth. Each run is a second or two. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "metrics/metrics.h"
#include "config/profile.h"
#include "report/record_file.h"
#include "t_helpers.h"

static char tmpdir[64];
static struct t_sim sim; /* stopped by teardown too, when a test fails half way */

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/latscope-prof-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void teardown(void)
{
	t_sim_stop(&sim);
	t_remove_tree(tmpdir);
}

TestSuite(profiles, .init = setup, .fini = teardown);

/* latscope bench against sim with common flags, then extra (NULL-terminated); records into
 * rec and loaded into run. */
static void bench(const struct t_sim *sim, const char *rec, const char *const *extra, struct ls_run *run,
		  struct ls_record_meta *meta)
{
	const char *argv[64] = { "bench", "--base-url", sim->url, "--model", "latscope-sim", "--disable-tqdm",
				 "--insecure", "--seed", "5", "--request-timeout", "20", "--record", rec };
	size_t n = 13;
	for (size_t i = 0; extra[i] && n < 63; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	char *out = NULL, *err = NULL;
	int rc = t_run(argv, &out, &err, 60);
	cr_assert_eq(rc, 0, "bench exited %d\nstdout:\n%s\nstderr:\n%s", rc, out, err);
	free(out);
	free(err);
	cr_assert_eq(ls_record_load(rec, run, meta), 0);
}

static void prompt_range(const struct ls_run *run, uint32_t *lo, uint32_t *hi)
{
	*lo = UINT32_MAX;
	*hi = 0;
	for (size_t i = 0; i < run->n_requests; i++) {
		const struct ls_request *r = &run->requests[i];
		if (r->warmup)
			continue;
		cr_assert_eq(r->fail, LS_OK, "request %llu failed: %s", (unsigned long long)r->id, r->error);
		/* the simulator's own count of the prompt, not latscope's */
		uint32_t len = (uint32_t)r->usage_prompt_tokens;
		*lo = len < *lo ? len : *lo;
		*hi = len > *hi ? len : *hi;
	}
}

Test(profiles, range_ratio_semantics, .timeout = 60)
{
	const char *sx[] = { "--step-ms", "1", "--prefill-token-us", "0", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, sx), 0);
	char rec[128];
	struct ls_run run;
	struct ls_record_meta meta;
	uint32_t lo, hi;

	/* vLLM: [L(1-r), L(1+r)] = [20, 60] for L = 40, r = 0.5 */
	snprintf(rec, sizeof(rec), "%s/vllm.jsonl", tmpdir);
	const char *v[] = { "--profile", "vllm", "--random-input-len", "40", "--random-output-len", "2",
			    "--random-range-ratio", "0.5", "--num-prompts", "80", NULL };
	bench(&sim, rec, v, &run, &meta);
	prompt_range(&run, &lo, &hi);
	cr_expect(lo >= 20 && hi <= 60, "vllm lengths in [20, 60]: saw [%u, %u]", lo, hi);
	cr_expect(lo <= 26 && hi >= 54, "vllm lengths span the range: saw [%u, %u]", lo, hi);
	ls_run_free(&run);

	/* SGLang: [max(L r, 1), L] = [20, 40]; its warmup (and 1 s pause) turned off to stay quick */
	snprintf(rec, sizeof(rec), "%s/sglang.jsonl", tmpdir);
	const char *s[] = { "--profile", "sglang", "--random-input-len", "40", "--random-output-len", "2",
			    "--random-range-ratio", "0.5", "--num-prompts", "80", "--num-warmups", "0",
			    "--request-rate", "inf", NULL };
	bench(&sim, rec, s, &run, &meta);
	prompt_range(&run, &lo, &hi);
	cr_expect(lo >= 20 && hi <= 40, "sglang lengths in [20, 40]: saw [%u, %u]", lo, hi);
	cr_expect(lo <= 24 && hi >= 37, "sglang lengths span the range: saw [%u, %u]", lo, hi);
	ls_run_free(&run);

	/* SGLang's ratio 1.0 is vLLM's 0.0: every prompt exactly L. */
	const char *s1[] = { "--profile", "sglang", "--random-input-len", "40", "--random-output-len", "2",
			     "--random-range-ratio", "1.0", "--num-prompts", "20", "--num-warmups", "0",
			     "--request-rate", "inf", NULL };
	bench(&sim, rec, s1, &run, &meta);
	prompt_range(&run, &lo, &hi);
	cr_expect(lo == 40 && hi == 40, "sglang ratio 1.0: saw [%u, %u]", lo, hi);
	ls_run_free(&run);
	const char *v0[] = { "--profile", "vllm", "--random-input-len", "40", "--random-output-len", "2",
			     "--num-prompts", "20", NULL };
	bench(&sim, rec, v0, &run, &meta);
	prompt_range(&run, &lo, &hi);
	cr_expect(lo == 40 && hi == 40, "vllm ratio 0.0: saw [%u, %u]", lo, hi);
	ls_run_free(&run);
	t_sim_stop(&sim);
}

/* When the last request started, seconds after the run's start. */
static double last_start_s(const struct ls_run *run)
{
	uint64_t last = 0;
	for (size_t i = 0; i < run->n_requests; i++)
		if (!run->requests[i].warmup && run->requests[i].started_ns > last)
			last = run->requests[i].started_ns;
	return (double)(last - run->start_ns) / 1e9;
}

/* The last arrival, seconds after the run's start, less the time the loop itself took to
 * notice each arrival before it (admitted - scheduled, where poisson-yield draws the next
 * gap from): what the schedule alone made of the run, however late a busy host woke it. */
static double schedule_s(const struct ls_run *run)
{
	uint64_t last = 0, late = 0;
	for (size_t i = 0; i < run->n_requests; i++) {
		const struct ls_request *r = &run->requests[i];
		if (r->warmup)
			continue;
		if (r->scheduled_ns > last)
			last = r->scheduled_ns;
		late += r->admitted_ns - r->scheduled_ns;
	}
	for (size_t i = 0; i < run->n_requests; i++) /* the last one's own lateness came after */
		if (!run->requests[i].warmup && run->requests[i].scheduled_ns == last) {
			late -= run->requests[i].admitted_ns - last;
			break;
		}
	return (double)(last - run->start_ns - late) / 1e9;
}

/* SGLang's loop sleeps a fresh exponential after each yield, so every iteration's own time
 * adds up; vLLM's absolute gamma deadlines absorb it. 20 requests at 20 req/s, 8 ms added
 * per loop iteration (--test-loop-delay-us). The stretch is measured on the schedule less the
 * loop's own lateness (the same in both runs only on a quiet host): exactly N x delay. */
Test(profiles, arrival_drift_poisson_yield_not_gamma, .timeout = 60)
{
	const char *sx[] = { "--step-ms", "1", "--prefill-token-us", "0", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, sx), 0);
	char rec[128];
	snprintf(rec, sizeof(rec), "%s/drift.jsonl", tmpdir);
	struct ls_run run;
	struct ls_record_meta meta;
	const int n = 20;
	const double delay_s = 0.008;

	const char *base[] = { "--arrival", "poisson-yield", "--request-rate", "20", "--num-prompts", "20",
			       "--random-input-len", "8", "--random-output-len", "2", NULL };
	bench(&sim, rec, base, &run, &meta);
	double plain = last_start_s(&run), plain_sched = schedule_s(&run);
	ls_run_free(&run);
	const char *delayed[] = { "--arrival", "poisson-yield", "--request-rate", "20", "--num-prompts", "20",
				  "--random-input-len", "8", "--random-output-len", "2", "--test-loop-delay-us", "8000",
				  NULL };
	bench(&sim, rec, delayed, &run, &meta);
	double stretched = last_start_s(&run), stretched_sched = schedule_s(&run);
	ls_run_free(&run);
	double grew = stretched - plain, grew_sched = stretched_sched - plain_sched;
	cr_log_info("poisson-yield stretched by %.4f s (last start), %.4f s (schedule less lateness)", grew,
		    grew_sched);
	/* Each added delay is a sleep, which a loaded VM's timer can overshoot (2.5 ms over the 20
	 * seen in CI): never less than N x delay, at most 0.5 ms a sleep more. */
	cr_expect(grew_sched > n * delay_s - 0.001 && grew_sched < n * (delay_s + 0.0005),
		  "poisson-yield's schedule stretched by %.4f s, expected N x delay = %.3f s (+ <= %.1f ms of "
		  "oversleep)", grew_sched, n * delay_s, n * 0.5);

	const char *gamma[] = { "--arrival", "gamma", "--request-rate", "20", "--num-prompts", "20",
				"--random-input-len", "8", "--random-output-len", "2", "--test-loop-delay-us", "8000",
				NULL };
	bench(&sim, rec, gamma, &run, &meta);
	/* The last deadline is N/rate unless the 8 ms after the arrival before it (and that
	 * arrival's own lateness) passed it; the start follows it by the driver's lag. */
	const struct ls_request *last = NULL, *before = NULL;
	for (size_t i = 0; i < run.n_requests; i++) {
		const struct ls_request *r = &run.requests[i];
		if (r->warmup)
			continue;
		if (!last || r->scheduled_ns > last->scheduled_ns) {
			before = last;
			last = r;
		} else if (!before || r->scheduled_ns > before->scheduled_ns) {
			before = r;
		}
	}
	cr_assert(last && before);
	uint64_t want = run.start_ns + 1000000000ull, floor_ns = before->admitted_ns + 8000000ull;
	if (want < floor_ns)
		want = floor_ns;
	cr_expect_eq(last->scheduled_ns, want, "gamma's last arrival stays at N/rate = 1.000 s: %.4f s",
		     (double)(last->scheduled_ns - run.start_ns) / 1e9);
	double g = last_start_s(&run);
	cr_expect(g >= 1.0 && g < (double)(last->admitted_ns - run.start_ns) / 1e9 + 0.001,
		  "gamma's last start %.4f s follows its arrival", g);
	ls_run_free(&run);
	t_sim_stop(&sim);
}

/* Distinct server-side connections the measured requests of run_tag used (truth "conn"). */
static size_t truth_conns(const char *truth, const char *run_tag, size_t n_measured)
{
	size_t len = 0, n = 0;
	unsigned long long seen[512];
	char *text = NULL;
	/* The simulator appends a line as each request ends; allow it a moment. */
	for (int tries = 0; tries < 50; tries++) {
		free(text);
		text = t_read_file(truth, &len);
		size_t lines = 0;
		for (size_t i = 0; text && i < len; i++)
			lines += text[i] == '\n';
		if (lines >= n_measured)
			break;
		usleep(20000);
	}
	cr_assert_not_null(text);
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		cJSON *o = cJSON_Parse(line);
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
		const cJSON *conn = cJSON_GetObjectItemCaseSensitive(o, "conn");
		size_t tag = strlen(run_tag);
		if (cJSON_IsString(id) && cJSON_IsNumber(conn) && !strncmp(id->valuestring, run_tag, tag) &&
		    id->valuestring[tag] == '-' && strtoull(id->valuestring + tag + 1, NULL, 10) < n_measured) {
			unsigned long long c = (unsigned long long)conn->valuedouble;
			size_t k = 0;
			while (k < n && seen[k] != c)
				k++;
			if (k == n && n < 512)
				seen[n++] = c;
		}
		cJSON_Delete(o);
	}
	free(text);
	return n;
}

/* SGLang opens a connection (and a TLS session) inside every request's clock; vLLM keeps a
 * pool, so after the first max-concurrency requests nobody pays for it. Over TLS. */
Test(profiles, connection_policy_inside_ttft, .timeout = 60)
{
	const char *sx[] = { "--step-ms", "2", "--tls", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 1, sx), 0, "TLS simulator");
	char rec[128];
	struct ls_run run;
	struct ls_record_meta meta;
	const size_t n = 12;

	snprintf(rec, sizeof(rec), "%s/sglang-conn.jsonl", tmpdir);
	const char *s[] = { "--profile", "sglang", "--num-prompts", "12", "--max-concurrency", "2", "--request-rate",
			    "inf", "--num-warmups", "0", "--random-input-len", "16", "--random-output-len", "4", NULL };
	bench(&sim, rec, s, &run, &meta);
	cr_expect_eq(truth_conns(sim.truth, meta.run_tag, n), n, "sglang: one connection per request");
	size_t measured = 0;
	for (size_t i = 0; i < run.n_requests; i++) {
		const struct ls_request *r = &run.requests[i];
		if (r->warmup)
			continue;
		measured++;
		cr_expect(r->new_connection, "request %llu reused a connection", (unsigned long long)r->id);
		cr_expect(r->connect_ns > r->started_ns && r->tls_ns > r->connect_ns,
			  "connect and TLS happen after the clock started");
		cr_expect(r->n_frames && r->frames[0].arrived_ns > r->tls_ns, "so TTFT includes them");
	}
	cr_expect_eq(measured, n);
	ls_run_free(&run);

	snprintf(rec, sizeof(rec), "%s/vllm-conn.jsonl", tmpdir);
	const char *v[] = { "--profile", "vllm", "--num-prompts", "12", "--max-concurrency", "2", "--request-rate",
			    "inf", "--random-input-len", "16", "--random-output-len", "4", NULL };
	bench(&sim, rec, v, &run, &meta);
	size_t conns = truth_conns(sim.truth, meta.run_tag, n);
	cr_expect(conns >= 1 && conns <= 2, "vllm: a pool of at most max-concurrency connections (saw %zu)", conns);
	size_t opened = 0;
	for (size_t i = 0; i < run.n_requests; i++) {
		const struct ls_request *r = &run.requests[i];
		opened += r->new_connection;
		if (!r->new_connection)
			cr_expect(r->connect_ns == 0 && r->tls_ns == 0, "a warm connection costs the TTFT nothing");
	}
	cr_expect(opened <= 2 && run.n_requests - opened >= n - 2, "%zu of %zu requests opened a connection", opened,
		  run.n_requests);
	ls_run_free(&run);
	t_sim_stop(&sim);
}

/* --empty-frame-every 5: every 5th frame carries a special token and no text. vLLM counts it
 * in ITL (a sample per frame with choices); SGLang's OpenAI client skips it, so its gap
 * lands in the next sample. The same records, read both ways. */
Test(profiles, empty_text_frames, .timeout = 60)
{
	const char *sx[] = { "--step-ms", "4", "--prefill-token-us", "0", "--empty-frame-every", "5", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, sx), 0);
	char rec[128];
	snprintf(rec, sizeof(rec), "%s/empty.jsonl", tmpdir);
	struct ls_run run;
	struct ls_record_meta meta;
	const char *v[] = { "--profile", "vllm", "--num-prompts", "8", "--ignore-eos", "--random-input-len", "16",
			    "--random-output-len", "20", NULL };
	bench(&sim, rec, v, &run, &meta);
	t_sim_stop(&sim);

	struct ls_profile pv, ps;
	cr_assert_eq(ls_profile_builtin("vllm", &pv), 0);
	cr_assert_eq(ls_profile_builtin("sglang-oai", &ps), 0);
	struct ls_metrics mv, ms;
	cr_assert_eq(ls_metrics_compute(&run, &pv.read, NULL, &mv), 0);
	cr_assert_eq(ls_metrics_compute(&run, &ps.read, NULL, &ms), 0);
	cr_expect_eq(mv.completed, 8);
	cr_expect_eq(ms.completed, 8);
	/* 20 frames per request, frames 5, 10, 15, 20 empty: vLLM 19 gaps, SGLang 15 (the last
	 * empty frame is after the last text, so it ends nothing). */
	cr_expect_eq(mv.itl.n, 8 * 19, "vLLM: a sample per frame, empty ones included (%zu)", mv.itl.n);
	cr_expect_eq(ms.itl.n, 8 * 15, "sglang-oai: empty frames are skipped (%zu)", ms.itl.n);
	cr_expect(ms.itl.mean_ms > 1.15 * mv.itl.mean_ms, "skipped gaps fold into the next: %.2f vs %.2f ms",
		  ms.itl.mean_ms, mv.itl.mean_ms);
	cr_expect(fabs(ms.ttft.mean_ms - mv.ttft.mean_ms) < 0.01, "the first frame has text: same TTFT");
	ls_metrics_free(&mv);
	ls_metrics_free(&ms);
	ls_run_free(&run);

	/* Every frame empty (the simulator cannot empty only the first): vLLM's TTFT is the first
	 * frame; SGLang's OpenAI client never sees text, keeps ttft = 0.0 and calls it a success. */
	const char *sx1[] = { "--step-ms", "4", "--prefill-token-us", "0", "--empty-frame-every", "1", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, sx1), 0);
	const char *v1[] = { "--profile", "vllm", "--num-prompts", "4", "--ignore-eos", "--random-input-len", "16",
			     "--random-output-len", "5", NULL };
	bench(&sim, rec, v1, &run, &meta);
	t_sim_stop(&sim);
	cr_assert_eq(ls_metrics_compute(&run, &pv.read, NULL, &mv), 0);
	cr_assert_eq(ls_metrics_compute(&run, &ps.read, NULL, &ms), 0);
	cr_expect(mv.completed == 4 && mv.ttft.mean_ms > 3.0, "vLLM: TTFT at the first (empty) frame, %.2f ms",
		  mv.ttft.mean_ms);
	cr_expect(ms.completed == 4 && ms.ttft.mean_ms == 0.0 && ms.itl.n == 0,
		  "sglang-oai: 4 successes with TTFT 0 (%zu, %.2f ms)", ms.completed, ms.ttft.mean_ms);
	ls_metrics_free(&mv);
	ls_metrics_free(&ms);
	ls_run_free(&run);

	/* Only the first frame empty: vLLM's clock stops at it, SGLang's OpenAI client waits for
	 * the first text, one decode step (4 ms) later. */
	const char *sx2[] = { "--step-ms", "4", "--prefill-token-us", "0", "--empty-first-frame", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, sx2), 0);
	const char *v2[] = { "--profile", "vllm", "--num-prompts", "8", "--ignore-eos", "--random-input-len", "16",
			     "--random-output-len", "10", NULL };
	bench(&sim, rec, v2, &run, &meta);
	t_sim_stop(&sim);
	cr_assert_eq(ls_metrics_compute(&run, &pv.read, NULL, &mv), 0);
	cr_assert_eq(ls_metrics_compute(&run, &ps.read, NULL, &ms), 0);
	double ttft_shift_ms = ms.ttft.mean_ms - mv.ttft.mean_ms;
	cr_expect(mv.completed == 8 && ms.completed == 8, "%zu/%zu completed", mv.completed, ms.completed);
	cr_expect(ttft_shift_ms > 3.0 && ttft_shift_ms < 6.0,
		  "an empty first frame moves sglang-oai's TTFT one step (4 ms) past vLLM's: %.2f ms", ttft_shift_ms);
	cr_expect_eq(mv.itl.n, 8 * 9, "vLLM: the empty first frame starts the ITL samples (%zu)", mv.itl.n);
	cr_expect_eq(ms.itl.n, 8 * 8, "sglang-oai: samples start at the first text (%zu)", ms.itl.n);
	ls_metrics_free(&mv);
	ls_metrics_free(&ms);
	ls_run_free(&run);
}
