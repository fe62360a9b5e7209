/* latscope bench against latscope sim, checked against the simulator's ground truth:
 * client TTFT and ITL vs the server's frame write times, the gamma schedule end to end, and
 * the slot wait that vLLM's clock hides. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "metrics/metrics.h"
#include "report/record_file.h"
#include "t_helpers.h"
#include "t_peer_truth.h"

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_d);
	return ls_percentile(v, n, 50);
}

static double json_num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	cr_assert(cJSON_IsNumber(v), "result JSON has no number %s", key);
	return v->valuedouble;
}

/* 500 requests at 50 req/s, 10 ms steps (~8 in flight), no speculation (about 11 s). */
Test(bench_truth, ttft_itl_and_gamma_against_ground_truth, .timeout = 120)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "10", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, extra), 0, "simulator did not start");
	char record[256], result_dir[] = "/tmp/latscope-bt-XXXXXX";
	cr_assert_not_null(mkdtemp(result_dir));
	snprintf(record, sizeof(record), "%s/rec.jsonl", result_dir);
	const char *argv[] = { "bench", "--base-url", sim.url, "--model", "latscope-sim", "--dataset-name", "random",
			       "--random-input-len", "32", "--random-output-len", "16", "--ignore-eos",
			       "--num-prompts", "500", "--request-rate", "50", "--seed", "3", "--disable-tqdm", "--probes", "off",
			       "--record", record, "--save-result", "--result-dir", result_dir,
			       "--result-filename", "r.json", "--metric-percentiles", "50,99", NULL };
	char *out = NULL, *err = NULL;
	int rc = t_run(argv, &out, &err, 90);
	cr_assert_eq(rc, 0, "bench exited %d\nstdout:\n%s\nstderr:\n%s", rc, out, err);
	cr_expect(strstr(out, "Successful requests:                     500"), "%s", out);

	struct ls_run run;
	struct ls_record_meta meta;
	cr_assert_eq(ls_record_load(record, &run, &meta), 0);
	cr_assert_eq(run.n_requests, 500);
	/* The simulator appends a request's truth as it ends: the load gives the last line a moment. */
	size_t n_truth = 0;
	struct t_peer_truth *truth = t_peer_truth_load(sim.truth, 500, &n_truth);
	t_sim_stop(&sim);
	cr_assert_geq(n_truth, 500);

	double *ttft_client = calloc(500, sizeof(double)), *ttft_truth = calloc(500, sizeof(double));
	double *itl_client = calloc(500 * 32, sizeof(double)), *itl_truth = calloc(500 * 32, sizeof(double));
	size_t n_itl_c = 0, n_itl_t = 0;
	uint64_t last_sched = 0, last_started = 0, truth_end = 0, client_end = 0;
	for (size_t i = 0; i < run.n_requests; i++) {
		const struct ls_request *r = &run.requests[i];
		cr_assert_eq(r->fail, LS_OK, "request %llu failed: %s", (unsigned long long)r->id, r->error);
		const struct t_peer_truth *t = t_peer_truth_find(truth, n_truth, meta.run_tag, r->id);
		cr_assert_not_null(t, "no truth for %s-%llu", meta.run_tag, (unsigned long long)r->id);
		cr_assert_eq(t->n_token, 16);
		uint64_t first = 0, prev = 0;
		for (uint32_t f = 0; f < r->n_frames; f++) {
			if (!(r->frames[f].flags & LS_FRAME_CHOICES))
				continue;
			if (!first)
				first = r->frames[f].arrived_ns;
			else
				itl_client[n_itl_c++] = (double)(r->frames[f].arrived_ns - prev) / 1e6;
			prev = r->frames[f].arrived_ns;
		}
		ttft_client[i] = (double)(first - r->started_ns) / 1e6;
		ttft_truth[i] = (double)(t->first_token_ns - r->started_ns) / 1e6;
		for (size_t k = 1; k < t->n_token; k++)
			itl_truth[n_itl_t++] = (double)(t->token_ns[k] - t->token_ns[k - 1]) / 1e6;
		if (r->scheduled_ns > last_sched)
			last_sched = r->scheduled_ns;
		if (r->started_ns > last_started)
			last_started = r->started_ns;
		if (t->last_write_ns > truth_end)
			truth_end = t->last_write_ns;
		if (r->finished_ns > client_end)
			client_end = r->finished_ns;
	}
	double m_ttft_c = median(ttft_client, 500), m_ttft_t = median(ttft_truth, 500);
	double m_itl_c = median(itl_client, n_itl_c), m_itl_t = median(itl_truth, n_itl_t);
	fprintf(stderr, "bench_truth: median TTFT client %.4f ms, truth %.4f ms (diff %.4f); median ITL client "
			"%.4f ms, truth %.4f ms\n", m_ttft_c, m_ttft_t, m_ttft_c - m_ttft_t, m_itl_c, m_itl_t);
	cr_expect(fabs(m_ttft_c - m_ttft_t) < 0.3, "median TTFT from started %.3f ms vs truth %.3f ms", m_ttft_c,
		  m_ttft_t);
	cr_expect(fabs(m_itl_c - m_itl_t) / m_itl_t < 0.02, "median ITL %.3f ms vs truth %.3f ms", m_itl_c, m_itl_t);

	/* The gamma schedule end to end: the last arrival sits at exactly N / rate. */
	cr_expect_eq(last_sched - run.start_ns, 10000000000ull, "last arrival at %llu ns after start",
		     (unsigned long long)(last_sched - run.start_ns));

	/* The report's own numbers agree with the records, and realised throughput is on target. */
	char path[300];
	snprintf(path, sizeof(path), "%s/r.json", result_dir);
	char *json = t_read_file(path, NULL);
	cr_assert_not_null(json, "no result file %s", path);
	cJSON *res = cJSON_Parse(json);
	cr_assert_not_null(res);
	cr_expect(fabs(json_num(res, "median_ttft_ms") - m_ttft_c) < 1e-6);
	cr_expect(fabs(json_num(res, "median_itl_ms") - m_itl_c) < 1e-6);
	/* Throughput is what this run realised: 500 over the time from the start to the sim's last
	 * write (its truth stamps a frame just before writing it: the client cannot have it
	 * sooner), which the client saw at most a few steps (10 ms) later (a busy host delays the
	 * client, not the schedule); that end is the last arrival (10 s) plus one request. */
	double thr = json_num(res, "request_throughput");
	cr_assert_geq(client_end, truth_end, "the client's last byte is after the sim wrote it (%.3f ms before)",
		      (double)(truth_end - client_end) / 1e6);
	cr_expect_lt(client_end - truth_end, 5 * 10000000ull, "the client saw the end %.2f ms after the sim",
		     (double)(client_end - truth_end) / 1e6);
	double thr_truth = 500.0 / ((double)(truth_end - run.start_ns) / 1e9);
	double thr_low = 500.0 / ((double)(truth_end + 5 * 10000000ull - run.start_ns) / 1e9);
	cr_expect(thr <= thr_truth && thr >= thr_low, "throughput %.4f req/s, the sim's end gives %.4f (down to %.4f)",
		  thr, thr_truth, thr_low);
	cr_expect(fabs(thr - 500.0 / ((double)(client_end - run.start_ns) / 1e9)) < 1e-9 * thr,
		  "throughput is completed over the run's own duration");
	cr_expect_lt(thr, 50.0, "throughput %.4f req/s below the target: the last request takes time", thr);
	/* The dispatch rate counts the starts: 500 over the last start, which follows the last
	 * arrival (exactly 10 s, above) by the driver's start lag. */
	const cJSON *ls = cJSON_GetObjectItemCaseSensitive(res, "latscope");
	double realised = json_num(ls, "realised_request_rate");
	cr_expect(fabs(realised - 500.0 / ((double)(last_started - run.start_ns) / 1e9)) < 1e-9 * realised,
		  "realised dispatch rate %.4f req/s is the starts over the last start", realised);
	cr_expect_lt(last_started - last_sched, 250000000ull, "the last start lagged %.2f ms",
		     (double)(last_started - last_sched) / 1e6);
	fprintf(stderr, "bench_truth: request throughput %.3f req/s, dispatch rate %.3f req/s\n", thr, realised);

	cJSON_Delete(res);
	free(json);
	t_peer_truth_free(truth, n_truth);
	free(ttft_client);
	free(ttft_truth);
	free(itl_client);
	free(itl_truth);
	ls_run_free(&run);
	free(out);
	free(err);
	unlink(record);
	unlink(path);
	rmdir(result_dir);
}

/* 4 slots, 60 requests at 50 req/s, ~210 ms each: the server side keeps up with 4 at a time,
 * so requests queue in the harness. TTFT from started stays at the service time; from
 * scheduled it grows with the backlog; the slot wait is in the report. (~4 s) */
Test(bench_truth, slot_wait_is_shown_not_hidden, .timeout = 60)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "10", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, extra), 0);
	char record[] = "/tmp/latscope-bt-slot-XXXXXX";
	int fd = mkstemp(record);
	close(fd);
	const char *argv[] = { "bench", "--base-url", sim.url, "--dataset-name", "random", "--random-input-len", "32",
			       "--random-output-len", "20", "--ignore-eos", "--num-prompts", "60",
			       "--request-rate", "50", "--max-concurrency", "4", "--disable-tqdm", "--probes", "off", "--record", record,
			       "--metric-percentiles", "50,99", NULL };
	char *out = NULL, *err = NULL;
	int rc = t_run(argv, &out, &err, 45);
	cr_assert_eq(rc, 0, "bench exited %d\n%s\n%s", rc, out, err);
	cr_expect(strstr(out, "Slot wait, admitted - scheduled (ms):"), "%s", out);
	cr_expect(strstr(out, "Client-side Queueing"), "vLLM's own client-queue block is printed too");

	struct ls_run run;
	struct ls_record_meta meta;
	cr_assert_eq(ls_record_load(record, &run, &meta), 0);
	size_t n_truth = 0;
	struct t_peer_truth *truth = t_peer_truth_load(sim.truth, 60, &n_truth); /* the last line may trail the exit */
	t_sim_stop(&sim);
	struct ls_read_rules rules = { .origin = LS_ORIGIN_STARTED, .n_percentiles = 1, .percentiles = { 99 } };
	struct ls_metrics m;
	cr_assert_eq(ls_metrics_compute(&run, &rules, NULL, &m), 0);
	cr_assert_eq(m.completed, 60);
	double started_med = m.ttft_by_clock[LS_ORIGIN_STARTED].median_ms;
	double sched_max = m.ttft_by_clock[LS_ORIGIN_SCHEDULED].max_ms;
	fprintf(stderr, "bench_truth: 4 slots: median TTFT from started %.2f ms, max from scheduled %.2f ms, "
			"mean slot wait %.2f ms\n", started_med, sched_max, m.slot_wait.mean_ms);
	/* From started, TTFT is the service time: the sim's own received -> first token of that
	 * request (however long a busy host made its steps), plus at most a step on the wire. */
	double service_max = 0, service[60];
	size_t n_service = 0;
	for (size_t i = 0; i < run.n_requests; i++) {
		const struct t_peer_truth *t = t_peer_truth_find(truth, n_truth, meta.run_tag, run.requests[i].id);
		cr_assert(t && t->received_ns && t->first_token_ns, "truth of request %zu", i);
		double ms = (double)(t->first_token_ns - t->received_ns) / 1e6;
		service[n_service++] = ms;
		if (ms > service_max)
			service_max = ms;
	}
	double service_med = median(service, n_service);
	cr_expect_lt(started_med, service_med + 10.0, "median TTFT from started %.2f ms, the sim's service %.2f ms",
		     started_med, service_med);
	cr_expect_lt(m.ttft_by_clock[LS_ORIGIN_STARTED].max_ms, service_max + 10.0, "max %.2f ms, the sim's %.2f ms",
		     m.ttft_by_clock[LS_ORIGIN_STARTED].max_ms, service_max);
	cr_expect_gt(sched_max, 1000.0, "TTFT from scheduled grows with the backlog: %.2f ms", sched_max);
	cr_expect_gt(m.slot_wait.mean_ms, 400.0);
	cr_expect_leq(m.peak_concurrency, 4);
	/* grows: the last requests waited longer than the first */
	double early = 0, late = 0;
	for (size_t i = 0; i < 10; i++) {
		early += m.slot_waits_s[i];
		late += m.slot_waits_s[50 + i];
	}
	cr_expect_gt(late, early + 5.0, "slot wait of the last 10 %.2f s vs first 10 %.2f s", late, early);
	ls_metrics_free(&m);
	ls_run_free(&run);
	t_peer_truth_free(truth, n_truth);
	free(out);
	free(err);
	unlink(record);
}
