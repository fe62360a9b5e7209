/* vLLM's --probe-request-rate against `latscope sim --truth`: probes are sent beside the run,
 * one at a time, outside --max-concurrency, each 1/R s after the last returned, until the run
 * ends; their TTFT is the sim's (apart from the run's metrics); with the eBPF probes, their
 * kernel-stamp split adds up to it and its server side holds the sim's own time.
 * Bugs these catch: a probe that takes a concurrency slot or waits for the pool's connection
 * (it reaches the sim only when a main request ends), probes paced by a fixed clock instead of
 * after the last one returned, or sent after the run ended (count over rate x duration), a
 * probe counted in the run's metrics, a probe TTFT read from the wrong stamp, a split whose
 * parts do not sum to the TTFT, a probe that holds one of the run's slots (a request waits for
 * the probe to return instead of taking the slot its predecessor freed). */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/record_file.h"
#include "t_helpers.h"
#include "t_peer_truth.h"
#include "test_sim_client.h"

#define N_MAIN      16
#define CONCURRENCY 2
#define PROBE_RATE  50.0 /* probes per second: the interval is 20 ms, a probe in flight a third of the time */

struct probe {
	uint64_t id, started_ns, finished_ns;
	double   ttft_ms, split_sum_ms, nps_ms; /* split_sum_ms < 0: no split */
};

struct probe_run {
	struct probe *p;
	size_t n;
	double duration_s;
	long completed, probe_completed, probe_failed;
	char run_tag[64];
	uint64_t run_start_ns, run_end_ns;
	double   worst_admit_ms; /* longest a run's request waited for a slot after one was freed */
};

/* Each request admitted after the first CONCURRENCY took the slot of one that had just finished:
 * the longest wait from the latest finish before its admission (a probe holding a slot shows as
 * a wait of a probe's length). */
static double worst_slot_handover_ms(const struct ls_run *run)
{
	double worst = 0;
	for (size_t i = 0; i < run->n_requests; i++) {
		const struct ls_request *r = &run->requests[i];
		uint64_t freed = 0;
		size_t earlier = 0;
		for (size_t j = 0; j < run->n_requests; j++) {
			const struct ls_request *o = &run->requests[j];
			earlier += o->admitted_ns < r->admitted_ns;
			if (j != i && o->finished_ns <= r->admitted_ns && o->finished_ns > freed)
				freed = o->finished_ns;
		}
		if (earlier >= CONCURRENCY && freed)
			worst = fmax(worst, (double)(r->admitted_ns - freed) / 1e6);
	}
	return worst;
}

static double num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	cr_assert(cJSON_IsNumber(v), "no number %s in the result JSON", key);
	return v->valuedouble;
}

/* The split of one probe's TTFT: the sum of its parts, and its network+server (or server) part. */
static void read_split(const cJSON *e, struct probe *p)
{
	const cJSON *parts = cJSON_GetObjectItemCaseSensitive(e, "ttft_parts_ms"), *v;
	p->split_sum_ms = parts ? 0 : -1;
	p->nps_ms = 0;
	cJSON_ArrayForEach(v, parts) {
		p->split_sum_ms += v->valuedouble;
		if (!strcmp(v->string, "network+server") || !strcmp(v->string, "server"))
			p->nps_ms += v->valuedouble;
	}
}

static void read_result(const char *path, const char *record, struct probe_run *pr)
{
	size_t len = 0;
	char *text = t_read_file(path, &len);
	cr_assert_not_null(text, "no result JSON %s", path);
	cJSON *root = cJSON_Parse(text);
	free(text);
	cr_assert_not_null(root);
	pr->duration_s = num(root, "duration");
	pr->completed = (long)num(root, "completed");
	pr->probe_completed = (long)num(root, "probe_completed");
	pr->probe_failed = (long)num(root, "probe_failed");
	const cJSON *lat = cJSON_GetObjectItemCaseSensitive(root, "latscope");
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(lat, "probe_requests");
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, "requests"), *e;
	cr_assert(cJSON_IsArray(list), "no latscope.probe_requests.requests");
	pr->n = (size_t)cJSON_GetArraySize(list);
	pr->p = calloc(pr->n + 1, sizeof(*pr->p));
	size_t i = 0;
	cJSON_ArrayForEach(e, list) {
		struct probe *p = &pr->p[i++];
		p->id = (uint64_t)num(e, "id");
		p->started_ns = (uint64_t)num(e, "started_ns");
		p->finished_ns = (uint64_t)num(e, "finished_ns");
		p->ttft_ms = num(e, "ttft_ms");
		read_split(e, p);
	}
	cJSON_Delete(root);
	struct ls_run run;
	struct ls_record_meta meta;
	cr_assert_eq(ls_record_load(record, &run, &meta), 0, "record %s", record);
	snprintf(pr->run_tag, sizeof(pr->run_tag), "%s", meta.run_tag);
	pr->run_start_ns = run.start_ns;
	pr->run_end_ns = run.end_ns;
	cr_expect_eq(run.n_requests, N_MAIN, "the record holds the run's requests only, not the probes");
	pr->worst_admit_ms = worst_slot_handover_ms(&run);
	ls_run_free(&run);
}

/* bench against sim: N_MAIN long streams, CONCURRENCY at a time, probes at PROBE_RATE. */
static void run_probes(const struct t_sim *sim, const char *dir, const char *eprobes, struct probe_run *pr)
{
	char result[300], record[300];
	snprintf(result, sizeof(result), "%s/r.json", dir);
	snprintf(record, sizeof(record), "%s/r.jsonl", dir);
	const char *argv[] = { "bench", "--base-url", sim->url, "--model", "latscope-sim", "--seed", "1",
			       "--disable-tqdm", "--probes", eprobes, "--num-warmups", "0", "--skip-initial-test",
			       "--record", record, "--dataset-name", "random", "--random-input-len", "32",
			       "--random-output-len", "60", "--ignore-eos", "--num-prompts", "16",
			       "--max-concurrency", "2", "--probe-request-rate", "50", "--save-result",
			       "--result-filename", result, NULL };
	char *out = NULL, *err = NULL;
	int rc = t_run(argv, &out, &err, 100);
	cr_assert_eq(rc, 0, "bench exited %d\n%s\n%s", rc, out ? out : "", err ? err : "");
	cr_expect(strstr(out, "Probe Requests"), "the text report has vLLM's probe block:\n%s", out);
	free(out);
	free(err);
	read_result(result, record, pr);
}

/* Main requests streaming in the sim when it received the probe (truth windows). */
static size_t busy_at(const struct t_peer_truth *t, size_t n, const char *tag, uint64_t at_ns)
{
	size_t busy = 0;
	for (uint64_t id = 0; id < N_MAIN; id++) {
		const struct t_peer_truth *m = t_peer_truth_find(t, n, tag, id);
		cr_assert_not_null(m, "no truth for main request %llu", (unsigned long long)id);
		busy += m->received_ns <= at_ns && at_ns < m->last_write_ns;
	}
	return busy;
}

/* Each probe's TTFT against the sim's first token write, and where the sim received it. */
static void expect_probes_match_truth(const struct probe_run *pr, const char *truth_path, int want_split)
{
	size_t n_truth = 0, all_busy = 0;
	struct t_peer_truth *t = t_peer_truth_load(truth_path, N_MAIN + pr->n, &n_truth);
	cr_assert_eq(n_truth, N_MAIN + pr->n, "the sim saw %zu requests: %d + %zu probes", n_truth, N_MAIN, pr->n);
	double *client = calloc(pr->n + 1, sizeof(double)), *truth = calloc(pr->n + 1, sizeof(double));
	for (size_t i = 0; i < pr->n; i++) {
		const struct probe *p = &pr->p[i];
		const struct t_peer_truth *s = t_peer_truth_find(t, n_truth, pr->run_tag, p->id);
		cr_assert_not_null(s, "no truth for probe %llu", (unsigned long long)p->id);
		cr_assert_eq(s->n_token, 1, "a probe asks one token, the sim wrote %zu", s->n_token);
		client[i] = p->ttft_ms;
		truth[i] = (double)(s->token_ns[0] - p->started_ns) / 1e6;
		cr_expect(client[i] >= truth[i] - 0.05 && client[i] - truth[i] < 20,
			  "probe %zu: TTFT %.3f ms, the sim wrote its token %.3f ms after it started", i, client[i], truth[i]);
		/* Outside the cap: the sim has it at once, even while CONCURRENCY main streams run. */
		/* A slot or a pooled connection would hold it for a main request's rest (~100 ms). */
		cr_expect_lt(s->received_ns - p->started_ns, 20000000ull, "probe %zu reached the sim %.3f ms after it "
			     "started", i, (double)(s->received_ns - p->started_ns) / 1e6);
		all_busy += busy_at(t, n_truth, pr->run_tag, s->received_ns) == CONCURRENCY;
		if (want_split) {
			double server = (double)(s->token_ns[0] - s->received_ns) / 1e6;
			cr_expect(p->split_sum_ms >= 0 && fabs(p->split_sum_ms - p->ttft_ms) < 0.001,
				  "probe %zu: parts sum to %.4f ms, TTFT %.4f ms", i, p->split_sum_ms, p->ttft_ms);
			cr_expect(p->nps_ms >= server - 0.05 && p->nps_ms - server < 10, "probe %zu: network+server "
				  "%.3f ms, the sim's receipt to its write %.3f ms", i, p->nps_ms, server);
		}
	}
	double mc = t_median(client, pr->n), mt = t_median(truth, pr->n);
	fprintf(stderr, "probe_requests: %zu probes, median TTFT %.3f ms (truth %.3f ms), %zu sent while %d main "
		"streams ran; slots handed over within %.3f ms\n", pr->n, mc, mt, all_busy, CONCURRENCY,
		pr->worst_admit_ms);
	cr_expect(mc - mt < 3.0, "median probe TTFT %.3f ms vs truth %.3f ms", mc, mt);
	cr_expect_gt(all_busy, pr->n / 2, "only %zu of %zu probes found every slot busy", all_busy, pr->n);
	free(client);
	free(truth);
	t_peer_truth_free(t, n_truth);
}

/* vLLM's loop: the next probe 1/R after the last returned; none after the run's end. */
static void expect_pacing(const struct probe_run *pr)
{
	double interval_ms = 1e3 / PROBE_RATE;
	cr_assert_gt(pr->n, 2);
	cr_expect_lt(pr->p[0].started_ns - pr->run_start_ns, 5000000ull, "the first probe goes at the clock's start");
	/* Never early (a clock paced from each probe's start sends the next before 1/R after the last
	 * returned); late only by the loop's wake-up (the median: a loaded host wakes some late). */
	double *gaps = calloc(pr->n, sizeof(double));
	for (size_t i = 1; i < pr->n; i++) {
		double gap = gaps[i - 1] = (double)(pr->p[i].started_ns - pr->p[i - 1].finished_ns) / 1e6;
		cr_expect_geq(gap, interval_ms - 0.1, "probe %zu started %.3f ms after probe %zu returned (interval "
			      "%.0f ms)", i, gap, i - 1, interval_ms);
		cr_expect_lt(pr->p[i].started_ns, pr->run_end_ns, "probe %zu started after the run's last request", i);
	}
	double median_gap = t_median(gaps, pr->n - 1);
	free(gaps);
	cr_expect_lt(median_gap, interval_ms + 3, "the median probe started %.3f ms after the last returned",
		     median_gap);
	double run_s = (double)(pr->run_end_ns - pr->run_start_ns) / 1e9, cycle_max = 0;
	for (size_t i = 0; i < pr->n; i++)
		cycle_max = fmax(cycle_max, (double)(pr->p[i].finished_ns - pr->p[i].started_ns) / 1e9 + 1 / PROBE_RATE);
	cr_expect_leq((double)pr->n, PROBE_RATE * run_s + 1, "%zu probes in %.3f s at %.0f/s", pr->n, run_s, PROBE_RATE);
	cr_expect_geq((double)pr->n, run_s / cycle_max - 1, "%zu probes in %.3f s (a cycle at most %.3f s)", pr->n,
		      run_s, cycle_max);
	cr_expect_eq(pr->completed, N_MAIN, "the run's completed counts its own requests only");
	cr_expect_lt(pr->worst_admit_ms, 3.0, "a request waited %.3f ms for a slot another had freed: a probe "
		     "holds none", pr->worst_admit_ms);
	cr_expect_eq(pr->probe_completed, (long)pr->n);
	cr_expect_eq(pr->probe_failed, 0);
}

static void probe_test(const char *eprobes, int want_split)
{
	struct t_sim sim;
	const char *sim_extra[] = { "--step-ms", "5", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, sim_extra), 0, "simulator did not start");
	char dir[] = "/tmp/latscope-prq-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	struct probe_run pr = { 0 };
	run_probes(&sim, dir, eprobes, &pr);
	expect_pacing(&pr);
	expect_probes_match_truth(&pr, sim.truth, want_split);
	free(pr.p);
	t_sim_stop(&sim);
	t_remove_tree(dir);
}

Test(probe_requests, outside_the_cap_paced_after_each_return_and_the_sims_ttft, .timeout = 120)
{
	probe_test("off", 0);
}

Test(probe_requests, kernel_split_adds_up_and_holds_the_sims_time, .timeout = 120)
{
	t_need_root_and_btf();
	probe_test("on", 1);
}
