/* The peers' backends and prefix-caching datasets against `latscope sim --truth`: every backend
 * name vLLM and SGLang accept streams its own format (TGI, Triton, OpenAI, Responses, SGLang) and latscope's
 * TTFT and gaps match what the sim wrote; prefix_repetition and generated-shared-prefix show
 * the sim's --prefix-cache as lower TTFT when their prompts share prefixes. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "report/record_file.h"
#include "t_helpers.h"
#include "t_peer_truth.h"
#include "test_sim_client.h"

#define MAX_FRAMES 64

struct figures {
	double ttft_client_ms, ttft_truth_ms;  /* medians, from the request's start */
	double itl_client_ms, itl_truth_ms;    /* medians over every gap */
	double ttft_server_ms;                 /* median truth TTFT from the sim's receipt */
	double cached_share;                   /* cached / prompt tokens over the run (truth) */
	size_t n;
};

/* Runs bench (common flags + extra) against sim with a record file; 0 on exit 0. */
static int run_bench(const struct t_sim *sim, const char *record, const char *const *extra, char **err)
{
	const char *argv[64] = { "bench", "--base-url", sim->url, "--model", "latscope-sim", "--seed", "1",
				 "--disable-tqdm", "--probes", "off", "--num-warmups", "0", "--skip-initial-test",
				 "--record", record };
	size_t n = 15;
	for (size_t i = 0; extra[i] && n < 63; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	char *out = NULL;
	int rc = t_run(argv, &out, err, 100);
	if (rc)
		fprintf(stderr, "bench exited %d\n%s\n%s\n", rc, out ? out : "", err && *err ? *err : "");
	free(out);
	return rc;
}

/* One request's client and truth figures into the arrays (k: its index). */
static void join_one(const struct ls_request *r, const struct t_peer_truth *t, const char *endpoint, double *tc,
		     double *tt, double *ts, double *ic, double *it, size_t *n_itl)
{
	uint64_t at[MAX_FRAMES];
	size_t n = t_text_frames(r, at, MAX_FRAMES);
	cr_assert_eq(r->fail, LS_OK, "request %llu failed: %s", (unsigned long long)r->id, r->error);
	cr_expect_str_eq(t->endpoint, endpoint);
	cr_assert_eq(n, t->n_token, "request %llu: %zu text frames, the sim wrote %zu", (unsigned long long)r->id, n,
		     t->n_token);
	cr_assert_gt(n, 0);
	*tc = (double)(at[0] - r->started_ns) / 1e6;
	*tt = (double)(t->token_ns[0] - r->started_ns) / 1e6;
	*ts = (double)(t->token_ns[0] - t->received_ns) / 1e6;
	for (size_t k = 1; k < n; k++) {
		ic[*n_itl] = (double)(at[k] - at[k - 1]) / 1e6;
		it[(*n_itl)++] = (double)(t->token_ns[k] - t->token_ns[k - 1]) / 1e6;
	}
}

/* The record joined to the truth: medians of both sides. */
static struct figures join(const char *record, const char *truth_path, const char *endpoint)
{
	struct ls_run run;
	struct ls_record_meta meta;
	cr_assert_eq(ls_record_load(record, &run, &meta), 0, "record %s", record);
	size_t n_truth = 0, n = run.n_requests, n_itl = 0;
	struct t_peer_truth *truth = t_peer_truth_load(truth_path, n, &n_truth);
	double *tc = calloc(n, sizeof(double)), *tt = calloc(n, sizeof(double)), *ts = calloc(n, sizeof(double));
	double *ic = calloc(n * MAX_FRAMES, sizeof(double)), *it = calloc(n * MAX_FRAMES, sizeof(double));
	uint64_t cached = 0, prompt = 0;
	for (size_t i = 0; i < n; i++) {
		const struct ls_request *r = &run.requests[i];
		const struct t_peer_truth *t = t_peer_truth_find(truth, n_truth, meta.run_tag, r->id);
		cr_assert_not_null(t, "no truth for %s-%llu", meta.run_tag, (unsigned long long)r->id);
		join_one(r, t, endpoint, &tc[i], &tt[i], &ts[i], ic, it, &n_itl);
		cached += (uint64_t)(t->cached_tokens > 0 ? t->cached_tokens : 0);
		prompt += (uint64_t)(t->prompt_tokens > 0 ? t->prompt_tokens : 0);
	}
	struct figures f = { .n = n, .ttft_client_ms = t_median(tc, n), .ttft_truth_ms = t_median(tt, n),
			     .ttft_server_ms = t_median(ts, n), .itl_client_ms = t_median(ic, n_itl),
			     .itl_truth_ms = t_median(it, n_itl), .cached_share = prompt ? (double)cached / prompt : 0 };
	free(tc), free(tt), free(ts), free(ic), free(it);
	t_peer_truth_free(truth, n_truth);
	ls_run_free(&run);
	return f;
}

/* The client can see a frame only after the sim wrote it, and (on a busy 2-core host) a few
 * ms later at most: medians, not single requests. */
static void expect_matches_truth(const struct figures *f, const char *what)
{
	fprintf(stderr, "peer_truth %s: TTFT client %.3f ms truth %.3f ms; ITL client %.3f ms truth %.3f ms\n", what,
		f->ttft_client_ms, f->ttft_truth_ms, f->itl_client_ms, f->itl_truth_ms);
	cr_expect(f->ttft_client_ms >= f->ttft_truth_ms - 0.05 && f->ttft_client_ms - f->ttft_truth_ms < 3.0,
		  "%s: median TTFT %.3f ms vs truth %.3f ms", what, f->ttft_client_ms, f->ttft_truth_ms);
	cr_expect(fabs(f->itl_client_ms - f->itl_truth_ms) < fmax(0.1 * f->itl_truth_ms, 0.5),
		  "%s: median ITL %.3f ms vs truth %.3f ms", what, f->itl_client_ms, f->itl_truth_ms);
}

Test(peer_truth, every_backend_name_streams_its_format_and_matches_truth, .timeout = 240)
{
	static const struct { const char *name, *endpoint; } backends[] = {
		{ "tgi", "tgi" }, { "tensorrt-llm", "trt" }, { "trt", "trt" }, { "lmdeploy", "completions" },
		{ "scalellm", "completions" }, { "vllm", "completions" }, { "vllm-chat", "chat" },
		{ "sglang", "generate" }, { "sglang-native", "generate" }, { "sglang-oai", "completions" },
		{ "sglang-oai-chat", "chat" }, { "lmdeploy-chat", "chat" }, { "openai-responses", "responses" },
	};
	struct t_sim sim;
	const char *sim_extra[] = { "--step-ms", "4", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, sim_extra), 0, "simulator did not start");
	char dir[] = "/tmp/latscope-pt-XXXXXX", record[300];
	cr_assert_not_null(mkdtemp(dir));
	for (size_t b = 0; b < sizeof(backends) / sizeof(backends[0]); b++) {
		snprintf(record, sizeof(record), "%s/%s.jsonl", dir, backends[b].name);
		const char *extra[] = { "--backend", backends[b].name, "--dataset-name", "random", "--random-input-len",
					"24", "--random-output-len", "12", "--ignore-eos", "--num-prompts", "30",
					"--request-rate", "120", NULL };
		char *err = NULL;
		cr_assert_eq(run_bench(&sim, record, extra, &err), 0, "--backend %s", backends[b].name);
		free(err);
		struct figures f = join(record, sim.truth, backends[b].endpoint);
		cr_expect_eq(f.n, 30);
		expect_matches_truth(&f, backends[b].name);
	}
	t_sim_stop(&sim);
	t_remove_tree(dir);
}

/* One prefix-caching workload on a fresh --prefix-cache sim, one request at a time (so TTFT is
 * prefill, not queueing): the figures of the run. */
static struct figures cached_run(const char *const *extra, const char *what)
{
	struct t_sim sim;
	const char *sim_extra[] = { "--step-ms", "2", "--prefill-token-us", "40", "--prefix-cache", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, sim_extra), 0, "simulator did not start");
	char dir[] = "/tmp/latscope-pc-XXXXXX", record[300];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(record, sizeof(record), "%s/rec.jsonl", dir);
	char *err = NULL;
	cr_assert_eq(run_bench(&sim, record, extra, &err), 0, "%s", what);
	free(err);
	struct figures f = join(record, sim.truth, "completions");
	t_sim_stop(&sim);
	t_remove_tree(dir);
	expect_matches_truth(&f, what);
	fprintf(stderr, "peer_truth %s: server TTFT %.3f ms, cached %.0f%% of prompt tokens\n", what, f.ttft_server_ms,
		100 * f.cached_share);
	return f;
}

/* 512 shared tokens at 40 us each are ~20 ms of prefill the cache saves per request. */
static void expect_sharing_pays(const struct figures *shared, const struct figures *apart, double saved_ms)
{
	cr_expect_gt(shared->cached_share, 0.5, "shared prefixes are found in the cache (%.2f)", shared->cached_share);
	cr_expect_lt(apart->cached_share, 0.05, "distinct prefixes are not (%.2f)", apart->cached_share);
	cr_expect_lt(shared->ttft_server_ms + 0.5 * saved_ms, apart->ttft_server_ms,
		     "truth: TTFT %.3f ms shared vs %.3f ms apart", shared->ttft_server_ms, apart->ttft_server_ms);
	cr_expect_lt(shared->ttft_client_ms + 0.5 * saved_ms, apart->ttft_client_ms,
		     "client: TTFT %.3f ms shared vs %.3f ms apart", shared->ttft_client_ms, apart->ttft_client_ms);
}

Test(peer_truth, prefix_repetition_is_faster_with_a_prefix_cache, .timeout = 120)
{
	const char *shared[] = { "--dataset-name", "prefix_repetition", "--prefix-repetition-prefix-len", "512",
				 "--prefix-repetition-suffix-len", "16", "--prefix-repetition-num-prefixes", "1",
				 "--prefix-repetition-output-len", "4", "--num-prompts", "24", "--max-concurrency", "1",
				 "--ignore-eos", NULL };
	const char *apart[] = { "--dataset-name", "prefix_repetition", "--prefix-repetition-prefix-len", "512",
				"--prefix-repetition-suffix-len", "16", "--prefix-repetition-num-prefixes", "24",
				"--prefix-repetition-output-len", "4", "--num-prompts", "24", "--max-concurrency", "1",
				"--ignore-eos", NULL };
	struct figures s = cached_run(shared, "prefix_repetition, 1 prefix");
	struct figures a = cached_run(apart, "prefix_repetition, 24 prefixes");
	expect_sharing_pays(&s, &a, 512 * 0.040);
}

Test(peer_truth, generated_shared_prefix_is_faster_with_a_prefix_cache, .timeout = 120)
{
	const char *shared[] = { "--dataset-name", "generated-shared-prefix", "--gsp-num-groups", "2",
				 "--gsp-prompts-per-group", "12", "--gsp-system-prompt-len", "512", "--gsp-question-len",
				 "16", "--gsp-output-len", "4", "--max-concurrency", "1", "--ignore-eos", NULL };
	const char *apart[] = { "--dataset-name", "generated-shared-prefix", "--gsp-num-groups", "24",
				"--gsp-prompts-per-group", "1", "--gsp-system-prompt-len", "512", "--gsp-question-len",
				"16", "--gsp-output-len", "4", "--max-concurrency", "1", "--ignore-eos", NULL };
	struct figures s = cached_run(shared, "generated-shared-prefix, 2 groups");
	struct figures a = cached_run(apart, "generated-shared-prefix, 24 groups");
	expect_sharing_pays(&s, &a, 512 * 0.040);
}

static const char *fixture(const char *name)
{
	static char path[8][512];
	static int k;
	const char *root = getenv("LATSCOPE_ROOT");
	k = (k + 1) % 8;
	snprintf(path[k], sizeof(path[k]), "%s/tests/fixtures/peer/%s", root ? root : ".", name);
	return path[k];
}

/* Every dataset's prompt lengths are the server's count of what was sent: each record's
 * prompt_len equals the tokens the sim's truth says it received. */
static void expect_lengths_are_the_servers(const char *record, const char *truth_path, size_t want)
{
	struct ls_run run;
	struct ls_record_meta meta;
	cr_assert_eq(ls_record_load(record, &run, &meta), 0);
	cr_expect_eq(run.n_requests, want);
	size_t n_truth = 0;
	struct t_peer_truth *truth = t_peer_truth_load(truth_path, run.n_requests, &n_truth);
	for (size_t i = 0; i < run.n_requests; i++) {
		const struct ls_request *r = &run.requests[i];
		const struct t_peer_truth *t = t_peer_truth_find(truth, n_truth, meta.run_tag, r->id);
		cr_assert_not_null(t);
		cr_expect_eq(r->fail, LS_OK, "%s", r->error);
		cr_expect_eq((int)r->prompt_len, t->prompt_tokens, "request %llu: latscope %u tokens, the sim got %d",
			     (unsigned long long)r->id, r->prompt_len, t->prompt_tokens);
	}
	t_peer_truth_free(truth, n_truth);
	ls_run_free(&run);
}

Test(peer_truth, every_dataset_counts_what_the_server_receives, .timeout = 180)
{
	const struct { const char *const args[16]; size_t n; } cases[] = {
		{ { "--dataset-name", "sonnet", "--dataset-path", fixture("sonnet.txt"), "--sonnet-input-len", "120",
		    "--sonnet-prefix-len", "50", "--sonnet-output-len", "4", "--num-prompts", "6", NULL }, 6 },
		{ { "--dataset-name", "burstgpt", "--dataset-path", fixture("burstgpt.csv"), "--num-prompts", "6", NULL }, 6 },
		{ { "--dataset-name", "custom", "--dataset-path", fixture("custom.jsonl"), "--custom-output-len", "5",
		    "--num-prompts", "3", NULL }, 3 },
		/* vLLM's spec_bench: turns[0] of the category's 4 of 12 questions; -1 takes all of them */
		{ { "--dataset-name", "spec_bench", "--dataset-path", fixture("spec_bench.jsonl"), "--spec-bench-category",
		    "coding", "--spec-bench-output-len", "5", "--num-prompts", "-1", NULL }, 4 },
		/* -1: every line of a custom file (3), not the default 1000 with oversampling */
		{ { "--dataset-name", "custom", "--dataset-path", fixture("custom.jsonl"), "--custom-output-len", "5",
		    "--num-prompts", "-1", NULL }, 3 },
		{ { "--dataset-name", "mooncake", "--dataset-path", fixture("mooncake.jsonl"), "--mooncake-num-rounds",
		    "2", "--num-prompts", "4", NULL }, 8 },
		{ { "--profile", "sglang", "--dataset-name", "sharegpt", "--dataset-path", fixture("sharegpt.json"),
		    "--num-prompts", "5", NULL }, 3 },
		{ { "--profile", "sglang", "--dataset-name", "random", "--dataset-path", fixture("sharegpt.json"),
		    "--random-input-len", "20", "--random-output-len", "4", "--num-prompts", "3", NULL }, 3 },
		{ { "--dataset-name", "prefix_repetition", "--prefix-repetition-prefix-len", "32",
		    "--prefix-repetition-suffix-len", "8", "--prefix-repetition-num-prefixes", "2",
		    "--prefix-repetition-output-len", "3", "--num-prompts", "6", NULL }, 6 },
		{ { "--dataset-name", "generated-shared-prefix", "--gsp-num-groups", "2", "--gsp-prompts-per-group", "3",
		    "--gsp-system-prompt-len", "30", "--gsp-question-len", "6", "--gsp-output-len", "3", NULL }, 6 },
		{ { "--dataset-name", "random", "--random-input-len", "24", "--random-prefix-len", "8",
		    "--random-output-len", "3", "--random-range-ratio", "1.0", "--num-prompts", "4", NULL }, 4 },
	};
	struct t_sim sim;
	const char *sim_extra[] = { "--step-ms", "1", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, sim_extra), 0, "simulator did not start");
	char dir[] = "/tmp/latscope-pd-XXXXXX", record[300];
	cr_assert_not_null(mkdtemp(dir));
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		snprintf(record, sizeof(record), "%s/%zu.jsonl", dir, k);
		char *err = NULL;
		cr_assert_eq(run_bench(&sim, record, cases[k].args, &err), 0, "case %zu (%s %s)", k, cases[k].args[0],
			     cases[k].args[1]);
		free(err);
		expect_lengths_are_the_servers(record, sim.truth, cases[k].n);
	}
	t_sim_stop(&sim);
	t_remove_tree(dir);
}

/* SGLang's random with a ShareGPT file cuts each prompt to exactly its drawn tokens (token ids
 * [:N], then decoded): with --random-range-ratio 1 every prompt the sim receives is N tokens,
 * not N words (~2.4 of the sim's tokens each). */
Test(peer_truth, sglang_random_prompts_are_cut_to_their_tokens, .timeout = 60)
{
	struct t_sim sim;
	const char *sim_extra[] = { "--step-ms", "1", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, sim_extra), 0, "simulator did not start");
	char dir[] = "/tmp/latscope-sr-XXXXXX", record[300], out[300];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(record, sizeof(record), "%s/rec.jsonl", dir);
	snprintf(out, sizeof(out), "%s/sglang.jsonl", dir); /* not SGLang's default name in the cwd */
	const char *args[] = { "--harness", "sglang", "--backend", "sglang", "--dataset-name", "random", "--dataset-path",
			       fixture("sharegpt.json"), "--random-input-len", "128", "--random-output-len", "4",
			       "--random-range-ratio", "1", "--num-prompts", "3", "--output-file", out, NULL };
	char *err = NULL;
	cr_assert_eq(run_bench(&sim, record, args, &err), 0, "%s", err ? err : "");
	free(err);
	struct ls_run run;
	struct ls_record_meta meta;
	cr_assert_eq(ls_record_load(record, &run, &meta), 0);
	size_t n_truth = 0, total = 0;
	struct t_peer_truth *truth = t_peer_truth_load(sim.truth, run.n_requests, &n_truth);
	for (size_t i = run.n_warmup; i < run.n_requests; i++) {
		const struct t_peer_truth *t = t_peer_truth_find(truth, n_truth, meta.run_tag, run.requests[i].id);
		cr_assert_not_null(t);
		cr_expect_eq(t->prompt_tokens, 128, "request %zu: the sim got %d prompt tokens, SGLang sends 128", i,
			     t->prompt_tokens);
		cr_expect_eq(run.requests[i].prompt_len, 128);
		total += (size_t)t->prompt_tokens;
	}
	cr_expect_eq(total, 128 * (run.n_requests - run.n_warmup));
	cr_log_info("sglang random: %zu prompt tokens over %zu prompts", total, run.n_requests - run.n_warmup);
	t_peer_truth_free(truth, n_truth);
	ls_run_free(&run);
	t_sim_stop(&sim);
	t_remove_tree(dir);
}

/* --use-trace-timestamps replays the mooncake trace's times, stretched by the slowdown. */
Test(peer_truth, mooncake_replays_the_trace_times, .timeout = 60)
{
	struct t_sim sim;
	const char *sim_extra[] = { "--step-ms", "1", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, sim_extra), 0, "simulator did not start");
	char dir[] = "/tmp/latscope-mc-XXXXXX", record[300];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(record, sizeof(record), "%s/rec.jsonl", dir);
	const char *args[] = { "--dataset-name", "mooncake", "--dataset-path", fixture("mooncake.jsonl"),
			       "--use-trace-timestamps", "true", "--mooncake-slowdown-factor", "0.5", NULL };
	char *err = NULL;
	cr_assert_eq(run_bench(&sim, record, args, &err), 0);
	free(err);
	struct ls_run run;
	struct ls_record_meta meta;
	cr_assert_eq(ls_record_load(record, &run, &meta), 0);
	cr_assert_eq(run.n_requests, 4);
	const double want_s[4] = { 0.0, 0.125, 0.25, 0.6 }; /* (0, 250, 500, 1200 ms) x 0.5 */
	for (size_t i = 0; i < 4; i++) {
		double at = (double)(run.requests[i].scheduled_ns - run.start_ns) / 1e9;
		cr_expect(fabs(at - want_s[i]) < 1e-6, "request %zu scheduled at %.6f s, the trace says %.3f s", i, at,
			  want_s[i]);
	}
	ls_run_free(&run);
	t_sim_stop(&sim);
	t_remove_tree(dir);
}
