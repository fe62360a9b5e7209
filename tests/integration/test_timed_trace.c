/* vLLM's --dataset-name timed_trace with --self-timed against `latscope sim --truth --prefix-cache`:
 * each request is scheduled at its trace time x --timed-trace-sec-multiplier (to 1 us of the
 * run's start; a time earlier than the record before it goes with that one, as vLLM's sleep
 * does), reaches the sim within a few ms of it, carries input_length tokens and asks
 * output_length; blocks named by hash ids shared with earlier records are the sim's cache hits.
 * Bugs these catch: the multiplier not applied (or applied twice), times taken from the first
 * record instead of the run's start, an unsorted trace refused or reordered, the last hash
 * block not cut at input_length, a block's tokens that differ between records naming the same
 * hash id (no cache hit), the labels ignored. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/record_file.h"
#include "t_helpers.h"
#include "t_peer_truth.h"

#define CHUNK 16
#define MAX_IDS 8

struct tt_rec {
	double   ms;              /* the trace's time (ms: --timed-trace-sec-multiplier 0.001) */
	uint32_t in, out;
	int      ids[MAX_IDS];    /* -1 ends */
};

/* Same-time pairs, a record earlier than the one before it (sent with it), shared prefixes of
 * 1..3 blocks, a last block cut short, input past the blocks. Records that share ids are 150+ ms
 * after the ones they share with, so those were prefilled (cached) by then. */
static const struct tt_rec trace[] = {
	{ 0,    40, 5, { 0, 1, 2, -1 } },
	{ 0,    32, 3, { 10, 11, -1 } },
	{ 150,  50, 4, { 0, 1, 3, 4, -1 } },
	{ 150,  20, 6, { 20, 21, -1 } },
	{ 300,  64, 2, { 0, 1, 2, 5, -1 } },
	{ 290,  17, 3, { 30, 31, -1 } },
	{ 480,  48, 4, { 0, 1, 3, -1 } },
	{ 630,  80, 2, { 10, 12, -1 } },
	{ 631,  16, 3, { 40, -1 } },
	{ 800,  33, 5, { 0, 6, 7, -1 } },
};
#define N_TRACE (sizeof(trace) / sizeof(trace[0]))

/* The file, with renamed fields (the --timed-trace-label-* flags) and a blank line. */
static void write_trace(const char *path)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	for (size_t i = 0; i < N_TRACE; i++) {
		fprintf(f, "{\"t\": %.0f, \"in\": %u, \"out\": %u, \"blocks\": [", trace[i].ms, trace[i].in, trace[i].out);
		for (int k = 0; trace[i].ids[k] >= 0; k++)
			fprintf(f, "%s%d", k ? ", " : "", trace[i].ids[k]);
		fprintf(f, "], \"session\": \"x\"}\n%s", i == 3 ? "\n" : "");
	}
	cr_assert_eq(fclose(f), 0);
}

/* Tokens of record i the sim should find in its cache: full blocks whose id chain an earlier
 * record's full blocks began with (the sim hashes chained 16-token blocks). */
static int expected_cached(size_t i)
{
	int best = 0;
	for (size_t e = 0; e < i; e++) {
		if (trace[e].ms + 100 > trace[i].ms)
			continue; /* not prefilled yet when i arrives */
		int k = 0;
		while (trace[i].ids[k] >= 0 && trace[e].ids[k] >= 0 && trace[i].ids[k] == trace[e].ids[k] &&
		       (uint32_t)(k + 1) * CHUNK <= trace[i].in && (uint32_t)(k + 1) * CHUNK <= trace[e].in)
			k++;
		best = k > best ? k : best;
	}
	int cached = best * CHUNK;
	return cached >= (int)trace[i].in ? (int)trace[i].in - 1 : cached;
}

Test(timed_trace, sent_at_the_traces_times_with_its_lengths_and_shared_blocks, .timeout = 120)
{
	struct t_sim sim;
	const char *sim_extra[] = { "--step-ms", "2", "--prefix-cache", "--prefix-block", "16", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, sim_extra), 0, "simulator did not start");
	char dir[] = "/tmp/latscope-tt-XXXXXX", path[300], record[300];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/trace.jsonl", dir);
	snprintf(record, sizeof(record), "%s/rec.jsonl", dir);
	write_trace(path);
	const char *argv[] = { "bench", "--base-url", sim.url, "--model", "latscope-sim", "--disable-tqdm", "--probes",
			       "off", "--num-warmups", "0", "--skip-initial-test", "--record", record, "--dataset-name",
			       "timed_trace", "--dataset-path", path, "--self-timed", "--timed-trace-sec-multiplier",
			       "0.001", "--timed-trace-chunk-hash-size", "16", "--timed-trace-label-timestamp", "t",
			       "--timed-trace-label-input-length", "in", "--timed-trace-label-output-length", "out",
			       "--timed-trace-label-hash-ids", "blocks", "--num-prompts", "100", NULL };
	char *out = NULL, *err = NULL;
	int rc = t_run(argv, &out, &err, 60);
	cr_assert_eq(rc, 0, "bench exited %d\n%s\n%s", rc, out ? out : "", err ? err : "");
	cr_expect(strstr(out, "Self timing is set"), "vLLM's line for a self-timed run:\n%s", out);
	cr_expect(strstr(err, "--ignore-eos on"), "%s", err);
	free(out);
	free(err);
	struct ls_run run;
	struct ls_record_meta meta;
	cr_assert_eq(ls_record_load(record, &run, &meta), 0);
	cr_assert_eq(run.n_requests, N_TRACE, "every record of the file (the blank line skipped)");
	size_t n_truth = 0;
	struct t_peer_truth *truth = t_peer_truth_load(sim.truth, N_TRACE, &n_truth);
	double worst_us = 0;
	for (size_t i = 0; i < run.n_requests; i++) {
		const struct ls_request *r = &run.requests[i];
		size_t k = (size_t)r->id;
		cr_assert_lt(k, N_TRACE);
		const struct t_peer_truth *t = t_peer_truth_find(truth, n_truth, meta.run_tag, r->id);
		cr_assert_not_null(t, "no truth for request %zu", k);
		double late_us = (double)(t->received_ns - r->scheduled_ns) / 1e3;
		worst_us = fmax(worst_us, late_us);
		cr_expect_lt(late_us, 20000, "request %zu reached the sim %.0f us after its time", k, late_us);
		cr_expect_eq(t->prompt_tokens, (int)trace[k].in, "request %zu: the sim got %d tokens, the trace says %u",
			     k, t->prompt_tokens, trace[k].in);
		cr_expect_eq(t->n_token, trace[k].out, "request %zu: %zu tokens written, output_length %u", k, t->n_token,
			     trace[k].out);
		cr_expect_eq(t->cached_tokens, expected_cached(k), "request %zu: %d cached tokens, %d expected", k,
			     t->cached_tokens, expected_cached(k));
	}
	/* The schedule: request k at max(t_k, t_{k-1} as sent) x 0.001 s, to 1 us of the run's start. */
	double sent_ms = 0;
	for (size_t k = 0; k < N_TRACE; k++) {
		sent_ms = fmax(trace[k].ms, sent_ms);
		const struct ls_request *r = NULL;
		for (size_t i = 0; i < run.n_requests; i++)
			r = run.requests[i].id == k ? &run.requests[i] : r;
		cr_assert_not_null(r);
		double at_ms = (double)(r->scheduled_ns - run.start_ns) / 1e6;
		cr_expect(fabs(at_ms - sent_ms) < 0.001, "request %zu scheduled at %.6f ms, the trace says %.3f ms", k,
			  at_ms, sent_ms);
	}
	fprintf(stderr, "timed_trace: %zu requests on the trace's times; the latest reached the sim %.0f us after "
		"its time\n", run.n_requests, worst_us);
	t_peer_truth_free(truth, n_truth);
	ls_run_free(&run);
	t_sim_stop(&sim);
	t_remove_tree(dir);
}
