/* The /metrics gauges (server/metrics_poll.h): each engine's text as its source prints it, read
 * into running / waiting / KV use; the summary (metrics/server_gauges.h); the record's run_end
 * "server_metrics" written and read back exactly.
 * Bugs caught: a gauge bound to the wrong name (running read from vLLM's waiting, TGI's queue as
 * its batch), a label value holding '}' or a space cutting the value, counts of a data-parallel
 * server not summed, a fraction summed instead of averaged, vLLM's V0 name winning over V1's, a
 * histogram bucket read as a gauge, NaN or a negative value taken, garbage read as a sample, a
 * sample's stamps or a null gauge lost in the record (one taken before base_ns too), the reader
 * leaking or inventing samples. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "metrics/server_gauges.h"
#include "report/record_file.h"
#include "server/metrics_poll.h"

static void parse_ok(const char *text, enum ls_gauge_engine want, double run, double wait, double kv)
{
	double v[LS_GAUGE__COUNT];
	enum ls_gauge_engine e;
	cr_assert_eq(ls_gauge_parse(text, strlen(text), v, &e), 0, "no gauge read from:\n%s", text);
	cr_expect_eq(e, want, "engine %s, want %s", ls_gauge_engine_name(e), ls_gauge_engine_name(want));
	double want_v[LS_GAUGE__COUNT] = { run, wait, kv };
	for (int g = 0; g < LS_GAUGE__COUNT; g++) {
		if (isnan(want_v[g]))
			cr_expect(isnan(v[g]), "%s: %g, want absent", ls_gauge_name(g), v[g]);
		else
			cr_expect(fabs(v[g] - want_v[g]) < 1e-12, "%s: %g, want %g", ls_gauge_name(g), v[g], want_v[g]);
	}
}

Test(metrics_poll, each_engines_names)
{
	/* vLLM V1: one label set per engine of a data-parallel server; kv_cache_usage_perc is a fraction. */
	parse_ok("# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
		 "# TYPE vllm:num_requests_running gauge\n"
		 "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\n"
		 "vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 4.0\n"
		 "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 7.0\n"
		 "vllm:num_requests_waiting{engine=\"1\",model_name=\"m\"} 0.0\n"
		 "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.25\n"
		 "vllm:kv_cache_usage_perc{engine=\"1\",model_name=\"m\"} 0.75\n"
		 "vllm:gpu_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.99\n"
		 "vllm:time_to_first_token_seconds_bucket{le=\"0.001\",model_name=\"m\"} 12.0\n",
		 LS_GENGINE_VLLM, 7, 7, 0.5);
	/* vLLM V0: gpu_cache_usage_perc alone. */
	parse_ok("vllm:num_requests_running{model_name=\"m\"} 2\nvllm:num_requests_waiting{model_name=\"m\"} 1\n"
		 "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.125\n", LS_GENGINE_VLLM, 2, 1, 0.125);
	/* SGLang's collector: labels with spaces and a '}' inside a quoted value. */
	parse_ok("# TYPE sglang:num_running_reqs gauge\n"
		 "sglang:num_running_reqs{model_name=\"meta-llama/Llama 3 {8B}\",tp_rank=\"0\"} 5.0\n"
		 "sglang:num_queue_reqs{model_name=\"meta-llama/Llama 3 {8B}\",tp_rank=\"0\"} 2.0\n"
		 "sglang:token_usage{model_name=\"a\\\"}b\",tp_rank=\"0\"} 0.28\n"
		 "sglang:num_used_tokens{model_name=\"x\"} 9999\n", LS_GENGINE_SGLANG, 5, 2, 0.28);
	/* llama.cpp's server-task.cpp: no labels; the current server has no KV gauge. */
	parse_ok("# HELP llamacpp:requests_processing Number of requests processing\n"
		 "# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 4\n"
		 "# TYPE llamacpp:requests_deferred gauge\nllamacpp:requests_deferred 3\n"
		 "llamacpp:n_busy_slots_per_decode 3.5\n", LS_GENGINE_LLAMACPP, 4, 3, NAN);
	/* TGI's router: the batch is running, the queue waiting (a timestamp after the value). */
	parse_ok("tgi_batch_current_size 8 1700000000000\r\ntgi_queue_size 12\ntgi_batch_current_max_tokens 4096\n",
		 LS_GENGINE_TGI, 8, 12, NAN);
	/* No newline at the end, text not NUL-terminated at len. */
	const char cut[] = "tgi_queue_size 1\ntgi_batch_current_size 2XXXX";
	double v[LS_GAUGE__COUNT];
	enum ls_gauge_engine e;
	cr_assert_eq(ls_gauge_parse(cut, sizeof(cut) - 5, v, &e), 0);
	cr_expect(v[LS_GAUGE_RUNNING] == 2 && v[LS_GAUGE_WAITING] == 1);
}

Test(metrics_poll, garbage_and_bad_values)
{
	double v[LS_GAUGE__COUNT];
	enum ls_gauge_engine e;
	static const char *const bad[] = {
		"", "<html><body>Not Found</body></html>", "\x01\x02\xff\n\n",
		"vllm:num_requests_running{model_name=\"m\" 3\n",            /* labels never closed */
		"vllm:num_requests_running{model_name=\"m\"} NaN\n",
		"vllm:num_requests_running +Inf\nvllm:num_requests_waiting -1\n",
		"vllm:num_requests_running_x 3\nxvllm:num_requests_running 3\n", /* other names */
		"vllm:num_requests_running 3abc\n", "# vllm:num_requests_running 3\n",
		"vllm:num_requests_running\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_neq(ls_gauge_parse(bad[i], strlen(bad[i]), v, &e), 0, "read a gauge from case %zu", i);
	/* Two engines' names: the one that gave more gauges. */
	const char *mixed = "tgi_queue_size 9\nsglang:num_running_reqs 1\nsglang:num_queue_reqs 2\n";
	cr_assert_eq(ls_gauge_parse(mixed, strlen(mixed), v, &e), 0);
	cr_expect_eq(e, LS_GENGINE_SGLANG);
	cr_expect(v[LS_GAUGE_WAITING] == 2);
}

static struct ls_gauge_series series_of(size_t n)
{
	struct ls_gauge_series s = { .on = 1, .engine = LS_GENGINE_LLAMACPP, .period_ms = 250, .timeout_ms = 1000,
				     .n_polls = n + 3, .cpu_ns = 123456 };
	s.n_missed[LS_GMISS_TIMEOUT] = 2;
	s.n_missed[LS_GMISS_TOO_BIG] = 1;
	snprintf(s.first_miss, sizeof(s.first_miss), "no whole answer within 1000 ms \"quoted\"");
	for (size_t i = 0; i < n; i++) {
		struct ls_gauge_sample x = { .start_ns = 5000000000000ull + i * 250000000ull + 7,
					     .arrived_ns = 5000000000000ull + i * 250000000ull + 1234567 + i };
		x.v[LS_GAUGE_RUNNING] = (double)(i % 5);
		x.v[LS_GAUGE_WAITING] = i % 3 ? (double)i : NAN;
		x.v[LS_GAUGE_KV_USE] = i == 2 ? NAN : 0.1 + 1.0 / 3.0 * (double)(i % 2);
		cr_assert_eq(ls_gauge_series_add(&s, &x), 0);
	}
	return s;
}

Test(metrics_poll, record_round_trip)
{
	char path[] = "/tmp/latscope-gauges-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	/* base_ns after the first samples: a merged MPI file counts from the run's start, and the
	 * poll starts before it (the stamps are written signed) */
	struct ls_record_meta meta = { .base_ns = 5000000500000ull };
	struct ls_record_writer *w = ls_record_open(path, &meta);
	cr_assert_not_null(w);
	struct ls_gauge_series s = series_of(40);
	ls_record_set_gauges(w, &s);
	struct ls_run run = { .start_ns = 5000000000000ull, .end_ns = 5010000000000ull };
	cr_assert_eq(ls_record_close(w, &run), 0);
	struct ls_run back;
	struct ls_record_meta m;
	cr_assert_eq(ls_record_load(path, &back, &m), 0);
	unlink(path);
	const struct ls_gauge_series *g = &m.gauges;
	cr_assert(g->on);
	cr_expect_eq(g->engine, s.engine);
	cr_expect(g->period_ms == 250 && g->timeout_ms == 1000 && g->n_polls == 43 && g->cpu_ns == 123456);
	cr_expect(g->n_missed[LS_GMISS_TIMEOUT] == 2 && g->n_missed[LS_GMISS_TOO_BIG] == 1 &&
		  g->n_missed[LS_GMISS_NO_GAUGES] == 0);
	cr_expect_str_eq(g->first_miss, s.first_miss);
	cr_assert_eq(g->n, s.n);
	for (size_t i = 0; i < s.n; i++) {
		cr_expect_eq(g->samples[i].start_ns, s.samples[i].start_ns, "sample %zu start", i);
		cr_expect_eq(g->samples[i].arrived_ns, s.samples[i].arrived_ns, "sample %zu arrived", i);
		for (int k = 0; k < LS_GAUGE__COUNT; k++)
			cr_expect(isnan(s.samples[i].v[k]) ? isnan(g->samples[i].v[k]) : g->samples[i].v[k] == s.samples[i].v[k],
				  "sample %zu %s: %g, wrote %g", i, ls_gauge_name(k), g->samples[i].v[k], s.samples[i].v[k]);
	}
	/* The summary of the series read back equals the summary of the series written. */
	struct ls_gauge_summary a, b;
	ls_gauge_summarize(&s, run.start_ns, &a);
	ls_gauge_summarize(g, run.start_ns, &b);
	cr_expect(memcmp(&a, &b, sizeof(a)) == 0);
	ls_gauge_series_free(&s);
	ls_record_meta_free(&m);
	ls_run_free(&back);
}

Test(metrics_poll, summary_against_hand_count)
{
	struct ls_gauge_series s = series_of(10);
	struct ls_gauge_summary sum;
	ls_gauge_summarize(&s, 5000000000000ull, &sum);
	/* running: i % 5 for i = 0..9 -> peak 4 (first at i = 4), mean 2 */
	cr_expect_eq(sum.g[LS_GAUGE_RUNNING].n, 10);
	cr_expect_eq(sum.g[LS_GAUGE_RUNNING].peak, 4);
	cr_expect(fabs(sum.g[LS_GAUGE_RUNNING].mean - 2.0) < 1e-12);
	cr_expect(fabs(sum.g[LS_GAUGE_RUNNING].peak_at_s - (4 * 0.25 + 0.001234571)) < 1e-9);
	/* waiting: i for i % 3 != 0 -> 1 2 4 5 7 8: peak 8, mean 27 / 6 */
	cr_expect_eq(sum.g[LS_GAUGE_WAITING].n, 6);
	cr_expect_eq(sum.g[LS_GAUGE_WAITING].peak, 8);
	cr_expect(fabs(sum.g[LS_GAUGE_WAITING].mean - 4.5) < 1e-12);
	cr_expect_eq(sum.g[LS_GAUGE_KV_USE].n, 9, "a null KV sample is not a zero");
	cr_expect_eq(sum.n_missed, 3);
	ls_gauge_series_free(&s);

	/* in flight from records: started <= t < finished */
	struct ls_request r[3];
	memset(r, 0, sizeof(r));
	r[0].started_ns = 100, r[0].finished_ns = 200;
	r[1].started_ns = 150, r[1].finished_ns = 0; /* still going */
	r[2].started_ns = 120, r[2].finished_ns = 300, r[2].warmup = 1;
	struct ls_run run = { .requests = r, .n_requests = 3 };
	cr_expect_eq(ls_gauge_in_flight_at(&run, 99), 0);
	cr_expect_eq(ls_gauge_in_flight_at(&run, 100), 1);
	cr_expect_eq(ls_gauge_in_flight_at(&run, 199), 2);
	cr_expect_eq(ls_gauge_in_flight_at(&run, 200), 1);
}
