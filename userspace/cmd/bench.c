/* bench.c — `latscope bench`: config -> dataset -> arrival -> request bodies -> warmups ->
 * the measured run (ls_driver_run) -> metrics -> text report, --save-result JSON, --record
 * JSONL. Each step is another stage's function; this file only wires them. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include "driver/backend.h"
#include "cmd/cmd.h"
#include "cmd/bench_dataset.h"
#include "cmd/bench_mpi.h"
#include "server/bench_server.h"
#include "base/clock.h"
#include "base/record_fields.h"
#include "commands.h"
#include "base/outfile.h"
#include "report/wrap.h"
#include "config/config.h"
#include "workload/dataset.h"
#include "driver/driver.h"
#include "driver/plan.h"
#include "metrics/metrics.h"
#include "report/record_file.h"
#include "report/report.h"
#include "server/specdecode.h"
#include "server/metrics_poll.h"
#include "cmd/bench_peer.h"
#include "cmd/bench_probe_req.h"
#include "cmd/bench_turns.h"
#include "cmd/bench_perf.h"
#include "base/auth.h"
#include "base/rng.h"

struct bench {
	struct ls_config   cfg;
	char              *base, *url;
	struct ls_server   server;
	struct ls_dataset  ds;
	struct ls_plan     plan;          /* decided before the clock (driver/plan.h) */
	struct ls_run      run;           /* what was measured: the plan's jobs fill its requests */
	size_t             completed;         /* measured requests ok under the profile's rules */
	size_t             n_not_sent; /* dropped after an interrupt */
	struct ls_record_writer *record;
	struct ls_spec_snapshot spec_before, spec_after;
	struct ls_spec_stats spec;
	struct ls_checks   checks;       /* printed last, after every other block */
	struct ls_bench_probes *probes; /* probes + attribution (bench_probes.c) */
	char               date[32], arrival_desc[96];
	int                argc;       /* the command line, for the HTML page */
	char             **argv;
	struct ls_run_report rr;       /* kept for --html until the probes' report is in */
	struct ls_report_ctx ctx;
	int                have_rr;
	char              *request_json; /* what each request carried (record file, result JSON) */
	struct ls_peer_report peer_report;
	struct ls_record_meta meta;     /* what the run was: its record header and its report's labels */
	struct ls_probe_reqs probe_reqs;   /* vLLM's --probe-request-rate: sent beside the run */
	struct ls_probe_stats probe_stats;
	struct ls_attribution *probe_attr; /* their TTFT split, with the eBPF probes */
	struct ls_bench_turns turns;       /* SGLang's multi-turn conversations (--gsp-num-turns) */
};

static int build_dataset(struct bench *b)
{
	return ls_bench_dataset(&b->cfg, &b->server, &b->ds);
}

static int build_arrival(struct bench *b)
{
	struct ls_config *c = &b->cfg;
	double *ts = NULL;
	if (c->profile.send.arrival == LS_ARRIVAL_TRACE) {
		ts = ls_dataset_timestamps(&b->ds);
		if (!ts && errno != ENOENT) {
			fprintf(stderr, "latscope bench: out of memory for the trace's timestamps\n");
			return -ENOMEM;
		}
		if (!ts) {
			fprintf(stderr, "latscope bench: --arrival trace needs a \"timestamp\" on every line of %s\n",
				c->dataset_path ? c->dataset_path : "the dataset");
			return -EINVAL;
		}
	}
	int err = ls_bench_peer_arrival(c, &b->plan.arrival, b->ds.n, b->arrival_desc, sizeof(b->arrival_desc));
	if (!err)
		err = ls_arrival_init(&b->plan.arrival, c->profile.send.arrival, c->request_rate, c->burstiness, c->seed,
				      b->ds.n / ls_bench_turns_of(c), ts); /* multi-turn: conversations arrive */
	free(ts);
	if (err < 0)
		return err;
	if (err == 1) { /* vLLM's ramp-up */
		b->plan.have_arrival = 1;
		b->plan.arrival.loop_delay_ns = c->loop_delay_ns;
		return 0;
	}
	b->plan.have_arrival = 1;
	b->plan.arrival.loop_delay_ns = c->loop_delay_ns;
	if (b->plan.arrival.kind == LS_ARRIVAL_GAMMA)
		snprintf(b->arrival_desc, sizeof(b->arrival_desc), "gamma, burstiness %g (%s), normalised to N/rate",
			 c->burstiness, c->burstiness == 1.0 ? "Poisson process" : "Gamma distribution");
	else
		snprintf(b->arrival_desc, sizeof(b->arrival_desc), "%s", ls_arrival_kind_name(b->plan.arrival.kind));
	return 0;
}

/* Records and jobs: warmups first (ids after the measured ones), then one per prompt. */
static int build_jobs(struct bench *b)
{
	struct ls_config *c = &b->cfg;
	size_t n_measured = b->ds.n, n_warmup = b->ds.n ? c->profile.send.num_warmups : 0;
	if (ls_plan_alloc(&b->plan, n_warmup, n_measured, &b->run))
		return -ENOMEM;
	uint64_t lora_rng[2]; /* LoRA picks: their own draws, so the dataset's stay as they were */
	ls_rng_seed(lora_rng, c->seed ^ 0x6c6f7261ull);
	for (size_t i = 0; i < n_warmup + n_measured; i++) {
		int warm = i < n_warmup;
		size_t k = warm ? 0 : i - n_warmup; /* the prompt */
		struct ls_prompt p = b->ds.prompts[k];
		if (warm && c->profile.send.warmup_shape == LS_WARMUP_SGLANG && p.output_len > LS_WARMUP_SGLANG_OUTPUT_CAP)
			p.output_len = LS_WARMUP_SGLANG_OUTPUT_CAP;
		struct ls_request *r = &b->run.requests[i];
		ls_request_reset(r, warm ? n_measured + i : k);
		r->warmup = warm;
		r->prompt_len = p.prompt_len;
		r->output_len = p.output_len;
		size_t len = 0;
		char *body = ls_backend_body(c->profile.send.backend, b->plan.model, &p, c->profile.send.ignore_eos,
					     &len);
		if (!body) {
			fprintf(stderr, "latscope bench: cannot build the request body of prompt %zu: %s\n", k,
				strerror(errno));
			return -EINVAL;
		}
		if (ls_bench_peer_body(c, k, warm, lora_rng, &body, &len)) {
			free(body);
			return -EINVAL;
		}
		struct ls_driver_job *j = &b->plan.jobs[i];
		j->body = body;
		j->body_len = len;
		if (ls_bench_route_keys(c) && p.prefix_group &&
		    !(j->route_key = ls_bench_route_key(b->plan.run_tag, b->date, p.prefix_group - 1)))
			return -ENOMEM;
	}
	return 0;
}

static void driver_opts(const struct bench *b, struct ls_driver_opts *o, int measured)
{
	const struct ls_config *c = &b->cfg;
	memset(o, 0, sizeof(*o));
	o->url = b->url;
	o->backend = c->profile.send.backend;
	o->per_request_conn = c->profile.send.per_request_conn;
	o->http2 = c->http2;
	o->insecure = c->insecure;
	o->cacert = c->cacert;
	o->request_timeout_ns = (uint64_t)(c->request_timeout_s * 1e9);
	o->max_concurrency = c->max_concurrency;
	o->arrival = measured ? (struct ls_arrival *)&b->plan.arrival : NULL;
	o->run_tag = b->plan.run_tag;
	o->progress = !measured || c->disable_tqdm || ls_bench_mpi_rank() > 0 ? LS_PROGRESS_OFF /* rank 0 shows it */
		      : isatty(STDERR_FILENO) ? LS_PROGRESS_TERMINAL : LS_PROGRESS_PLAIN;
	o->spin_ns = c->busy_poll ? LS_SPIN_FOREVER : (uint64_t)c->spin_us * 1000;
	o->preconnect = measured ? c->preconnect : 0;
	if (b->record) {
		o->on_finish = ls_record_on_finish;
		o->on_finish_ctx = b->record;
	}
	o->grace_ns = 2000000000ull;
	o->route_keys = ls_bench_route_keys(c);
	ls_bench_peer_driver(c, o, measured);
	ls_bench_probes_hook(b->probes, o);
}

/* After an interrupt, requests that were never handed to libcurl are not failures: drop them
 * so that completed + failed = sent in every report, as in the record file. */
static void drop_unsent(struct bench *b)
{
	struct ls_request *measured = b->run.requests + b->plan.n_warmup;
	size_t kept = 0;
	for (size_t i = 0; i < b->plan.n_measured; i++) {
		if (!measured[i].started_ns) {
			ls_request_free(&measured[i]);
			continue;
		}
		if (kept != i)
			measured[kept] = measured[i];
		kept++;
	}
	b->n_not_sent = b->plan.n_measured - kept; /* the plan stays: its jobs are freed with it */
	b->run.n_requests = b->plan.n_warmup + kept;
}

/* Warmups, then the measured run. Returns 0, 1 when interrupted, or -errno. */
#define INITIAL_TEST_FAILED 2 /* drive()'s result when the test request failed (message printed) */

/* A hint for a failed test request whose cause is common and has a plain fix. */
static const char *test_hint(const struct bench *b, const struct ls_request *r)
{
	if (r->http_status == 404 && strstr(b->url, "/v1/v1/"))
		return "; --base-url is the server's root, without /v1";
	if (r->http_status == 404)
		return "; check --endpoint and --backend";
	if (r->http_status == 401 || r->http_status == 403)
		return "; the server wants an API key: set OPENAI_API_KEY";
	if (r->fail == LS_FAIL_CONNECT)
		return "; is the server running at --base-url?";
	return "";
}

/* A failure of the test request that says the setup is wrong (URL, endpoint, backend, key,
 * TLS), not that the server had a bad moment (a 5xx, a reset, a stall: faults a storm draws). */
static int setup_failure(const struct ls_request *r)
{
	int status = r->http_status;
	return r->fail == LS_FAIL_CONNECT || r->fail == LS_FAIL_TLS ||
	       (r->fail == LS_FAIL_HTTP_STATUS && status >= 400 && status < 500 && status != 408 && status != 429);
}

#define INITIAL_TEST_TRIES 3

/* One try of the test request, with its own X-Request-Id ("test-<run tag>-<try>": not the
 * run's prefix, so what reads the run's requests by its tag never meets it). 0 with
 * *rec filled, 1 when interrupted, or -errno. */
static int test_once(struct bench *b, int attempt, struct ls_request *rec)
{
	*rec = b->run.requests[b->plan.n_warmup];
	rec->frames = NULL;
	rec->n_frames = rec->cap_frames = 0;
	rec->id = (uint64_t)attempt;
	struct ls_driver_job job = b->plan.jobs[b->plan.n_warmup];
	job.rec = rec;
	struct ls_run test = { .requests = rec, .n_requests = 1 };
	struct ls_driver_opts o;
	char tag[sizeof(b->plan.run_tag) + 8];
	snprintf(tag, sizeof(tag), "test-%s", b->plan.run_tag);
	driver_opts(b, &o, 0);
	o.run_tag = tag;
	o.on_finish = NULL; /* not a request of the run: not in the record file */
	int rc = ls_driver_run(&o, &job, 1, &test);
	return rc == 0 && test.interrupted ? 1 : rc;
}

/* vLLM's "initial test run": the first prompt, before the warmups and the clock, so a wrong
 * URL, endpoint, backend or key stops the run at once. A failure the server's side explains
 * is tried again and then only reported (a fault storm is a setup too). 0, 1 when
 * interrupted, INITIAL_TEST_FAILED after a message, or -errno. */
static int initial_test(struct bench *b)
{
	if (b->cfg.skip_initial_test || !b->plan.n_measured || ls_bench_mpi_rank() > 0) /* rank 0 tests for all */
		return 0;
	printf("Starting initial single prompt test run...\n");
	fflush(stdout);
	for (int attempt = 0; attempt < INITIAL_TEST_TRIES; attempt++) {
		struct ls_request rec;
		int rc = test_once(b, attempt, &rec);
		int fail = rec.fail, setup = setup_failure(&rec);
		if (rc == 0 && fail != LS_OK && (setup || attempt + 1 == INITIAL_TEST_TRIES))
			fprintf(stderr, "latscope bench: the initial test request to %s failed%s: %s: %s%s\n", b->url,
				setup ? "" : " every time (going on: the server answered)", ls_fail_name(rec.fail),
				rec.error, test_hint(b, &rec));
		ls_request_free(&rec);
		if (rc == 1)
			b->run.interrupted = 1;
		if (rc)
			return rc;
		if (fail == LS_OK) {
			printf("Initial test run completed.\n");
			return 0;
		}
		if (setup)
			return INITIAL_TEST_FAILED;
	}
	return 0;
}

/* The warmups (their records first in the run, never measured). 0, 1 when interrupted, -errno. */
static int warm_up(struct bench *b)
{
	struct ls_driver_opts o;
	printf("Warming up with %zu requests...\n", b->plan.n_warmup);
	fflush(stdout);
	struct ls_run warm = { .requests = b->run.requests, .n_requests = b->plan.n_warmup, .n_warmup = b->plan.n_warmup };
	driver_opts(b, &o, 0);
	int rc = ls_driver_run(&o, b->plan.jobs, b->plan.n_warmup, &warm);
	if (rc == 1 || warm.interrupted) {
		b->run.interrupted = 1; /* nothing measured: the report says so */
		return 1;
	}
	if (rc)
		return rc;
	size_t bad = 0;
	const struct ls_request *first_bad = NULL;
	for (size_t i = 0; i < b->plan.n_warmup; i++) {
		if (b->run.requests[i].fail == LS_OK)
			continue;
		if (!bad++)
			first_bad = &b->run.requests[i];
	}
	if (first_bad)
		fprintf(stderr, "latscope bench: %zu of %zu warmup requests failed (first: %s)\n", bad,
			b->plan.n_warmup, first_bad->error);
	if (b->cfg.profile.send.warmup_shape == LS_WARMUP_SGLANG) {
		struct timespec pause = { 1, 0 }; /* SGLang sleeps 1 s after its warmup */
		while (nanosleep(&pause, &pause) && errno == EINTR)
			;
	}
	printf("Warmup run completed.\n");
	return 0;
}

/* vLLM's lines before the measured run. */
static void run_lines(const struct bench *b)
{
	printf("Starting main benchmark run...\n");
	ls_bench_peer_traffic_lines(stdout, &b->cfg);
	printf("Arrivals: %s\n", b->arrival_desc);
	if (b->cfg.max_concurrency)
		printf("Maximum request concurrency: %u\n", b->cfg.max_concurrency);
	else
		printf("Maximum request concurrency: None\n");
	fflush(stdout);
}

/* After the measured run: MPI's gather (rank 0 gets every rank's requests, in its clock), then
 * the server's spec-decode counters. Returns rc, or -errno. */
static int gather(struct bench *b, int rc)
{
	struct ls_bench_mpi_run g = { .run = &b->run, .n_not_sent = b->n_not_sent, .probes = b->probes };
	rc = ls_bench_mpi_after_run(rc, &g);
	b->n_not_sent = g.n_not_sent;
	if (g.merged_record)
		b->record = g.merged_record;
	if (rc >= 0)
		ls_spec_snapshot(b->base, &b->server.http, &b->spec_after);
	/* --perf-metrics: every request has ended (trtllm-serve appends an entry before its stream's
	 * last chunk), so the list holds the run's; the accounts go into the records and the file */
	if (rc >= 0 && b->cfg.perf_metrics && ls_bench_mpi_rank() <= 0)
		ls_bench_perf_metrics(b->base, &b->server.http, &b->run, b->record);
	ls_spec_delta(&b->spec_before, &b->spec_after, &b->spec);
	return rc;
}

/* The plan's jobs driven into the run: the test request, warmups, the measured run. */
static int drive(struct bench *b)
{
	struct ls_driver_opts o;
	int rc = ls_bench_mpi_agree(initial_test(b)); /* MPI: rank 0 tests, every rank hears */
	if (rc || (b->plan.n_warmup && (rc = warm_up(b))))
		return rc;
	ls_bench_peer_before_run(&b->cfg, &b->server);
	ls_spec_snapshot(b->base, &b->server.http, &b->spec_before);
	run_lines(b);
	struct ls_run main_run = { .requests = b->run.requests + b->plan.n_warmup, .n_requests = b->plan.n_measured };
	driver_opts(b, &o, 1);
	ls_probe_reqs_driver(&b->probe_reqs, &b->cfg, &o);
	struct ls_driver_job *jobs = b->plan.jobs + b->plan.n_warmup;
	size_t n_jobs = b->plan.n_measured;
	ls_bench_turns_driver(&b->turns, &o, &jobs, &n_jobs); /* multi-turn: the first turns */
	if (ls_bench_mpi_before_run(&o)) /* MPI: clocks, one start instant, this rank's slots */
		return -EIO;
	struct rusage before, after;
	/* --server-metrics-ms: /metrics on its own thread for the run's length (rank 0 of MPI only) */
	struct ls_metrics_poll *poll = b->cfg.server_metrics_ms && ls_bench_mpi_rank() <= 0
		? ls_metrics_poll_start(b->base, &b->server.http, b->cfg.server_metrics_ms) : NULL;
	getrusage(RUSAGE_SELF, &before);
	rc = ls_driver_run(&o, jobs, n_jobs, &main_run);
	getrusage(RUSAGE_SELF, &after);
	/* No run follows the measured one: its idle connections (1,400 of them: 3 MiB) go before the
	 * attribution and report take their memory. */
	ls_driver_pool_close();
	ls_metrics_poll_stop(poll, &b->meta.gauges);
	ls_bench_probes_run_ended(b->probes);
	ls_bench_peer_after_run(&b->cfg, &b->server);
	ls_run_copy_fields(&b->run, &main_run); /* every run field (base/record_fields.h) */
	b->run.interrupted |= rc == 1;
	b->run.client_cpu_ns = (uint64_t)(1e3 * (ls_tv_us(&after.ru_utime) - ls_tv_us(&before.ru_utime) +
						 ls_tv_us(&after.ru_stime) - ls_tv_us(&before.ru_stime)));
	b->run.n_client_procs = 1;
	b->run.loop_spins = b->cfg.busy_poll || b->cfg.spin_us;
	if (b->cfg.preconnect)
		printf("Preconnect: %u connections opened before the run, in %.1f ms\n", main_run.n_preconnected,
		       (double)main_run.preconnect_ns / 1e6);
	if (b->run.interrupted)
		drop_unsent(b);
	return gather(b, rc);
}

/* The backend as the user named it (vLLM's result file says "vllm" for --backend vllm). */
static const char *backend_label(const struct ls_config *c)
{
	return c->backend_name ? c->backend_name : ls_backend_name(c->profile.send.backend);
}

static char *result_path(const struct bench *b)
{
	const struct ls_config *c = &b->cfg;
	char name[512];
	if (c->result_filename)
		snprintf(name, sizeof(name), "%s", c->result_filename);
	else /* vLLM's compute_result_filename */
		ls_bench_peer_result_name(c, b->plan.model, b->date, name, sizeof(name));
	char *path = NULL;
	if (c->result_dir) {
		if (asprintf(&path, "%s/%s", c->result_dir, name) < 0)
			path = NULL;
	} else {
		path = strdup(name);
	}
	return path;
}

/* As vLLM does, name a few failures so a misconfiguration is obvious. */
static void print_failures(const struct bench *b)
{
	size_t shown = 0;

	for (size_t i = b->plan.n_warmup; i < b->run.n_requests && shown < 3; i++) {
		const struct ls_request *r = &b->run.requests[i];
		if (r->fail == LS_OK)
			continue;
		fprintf(stderr, "latscope bench: request %llu failed: %s: %s\n", (unsigned long long)r->id,
			ls_fail_name(r->fail), r->error);
		shown++;
	}
}

static int results(struct bench *b, FILE *out)
{
	struct ls_config *c = &b->cfg;
	struct ls_run_report rr;
	struct ls_read_rules rules;
	ls_profile_read_rules(&c->profile, b->spec.has_avg ? b->spec.avg_accept_len : 0, &rules);
	int err = ls_run_report_compute(&rr, "bench", &b->run, &rules, &c->goodput,
					ls_arrival_kind_name(b->plan.arrival.kind));
	if (err)
		return err;
	b->checks = rr.checks;
	b->completed = rr.metrics.completed;
	if (b->probe_reqs.body) { /* read by the run's rules, apart from its metrics */
		if (ls_probe_stats_compute(b->probe_reqs.recs, b->probe_reqs.n, &rules, &b->probe_stats)) {
			ls_run_report_free(&rr);
			return -ENOMEM;
		}
		b->peer_report.probes = &b->probe_stats;
		b->peer_report.probe_recs = b->probe_reqs.recs;
		struct ls_peer_report *pr = &b->peer_report;
		if (ls_probe_reqs_split(&b->probe_reqs, ls_bench_probes_events(b->probes), &rules, &b->probe_attr,
					pr->probe_ttft_split_ms, &pr->probe_n_split)) {
			ls_run_report_free(&rr);
			return -ENOMEM;
		}
		pr->probe_attr = b->probe_attr;
	}
	if (rr.metrics.failed)
		print_failures(b);
	struct ls_report_ctx ctx;
	b->meta.spec = b->spec;
	ls_run_report_ctx(&b->meta, &ctx); /* as `latscope report` labels the record file */
	ctx.record_path = c->record_path;
	ctx.show_client_queue = c->profile.show_client_queue;
	ctx.interrupted = b->run.interrupted;
	ctx.layout = c->profile.layout;
	ctx.profile_description = c->profile.description;
	ctx.peer = &b->peer_report;
	char *path = NULL;
	if (c->save_result && !(path = result_path(b)))
		err = -ENOMEM;
	int written = ls_run_report_print(out, &rr, &b->run, &ctx, path);
	ls_report_probe_text(out, &b->peer_report);
	if (!err && !written && path)
		fprintf(stderr, "latscope bench: result written to %s\n", path);
	if (ls_bench_peer_outputs(c, &rr.metrics, &b->run, &ctx)) /* SGLang's JSONL, --print-requests */
		written = written ? written : 1;
	free(path);
	if (c->html_path) { /* the page needs the attribution, made after this */
		b->rr = rr;
		b->ctx = ctx;
		b->have_rr = 1;
	} else {
		ls_run_report_free(&rr);
	}
	return err ? err : written ? 1 : 0; /* 1: the report is printed, a file was not written */
}

/* Every file the run will write, checked before it starts: it must be possible to create it
 * (the result's directory is created first, as vLLM does; the record file is opened before the
 * run and says so itself). 0 or -errno. */
static int check_outputs(const struct bench *b)
{
	const struct ls_config *c = &b->cfg;
	int rc = 0;
	if (c->save_result) {
		char *path = result_path(b);
		rc = path ? ls_outfile_check("--save-result", path, 1) : -ENOMEM;
		free(path);
	}
	if (!rc && c->trace_path)
		rc = ls_outfile_check("--trace", c->trace_path, 0);
	if (!rc && c->html_path)
		rc = ls_html_check("--html", c->html_path);
	return rc;
}

static void bench_free(struct bench *b)
{
	ls_plan_free(&b->plan);
	ls_run_free(&b->run);
	ls_dataset_free(&b->ds);
	free(b->base);
	free(b->url);
	free(b->request_json);
	ls_gauge_series_free(&b->meta.gauges);
	ls_bench_probes_close(b->probes);
	ls_probe_reqs_free(&b->probe_reqs);
	ls_probe_stats_free(&b->probe_stats);
	ls_attribution_free(b->probe_attr);
	ls_bench_turns_free(&b->turns);
	ls_driver_pool_close(); /* the keep-alive pool outlives each run, so warmups warm it */
	ls_config_free(&b->cfg);
}

/* What the run is, for its record header and its report (one description for both). */
static void run_meta(struct bench *b)
{
	const struct ls_config *c = &b->cfg;
	struct ls_record_meta *m = &b->meta;
	memset(m, 0, sizeof(*m));
	m->target_rate = isfinite(c->request_rate) ? c->request_rate : 0;
	m->request_rate = m->target_rate;
	m->max_concurrency = c->max_concurrency;
	m->burstiness = c->burstiness;
	m->percentile_metrics = c->percentile_metrics;
	m->goodput = c->goodput;
	snprintf(m->run_tag, sizeof(m->run_tag), "%s", b->plan.run_tag);
	snprintf(m->arrival, sizeof(m->arrival), "%s", ls_arrival_kind_name(b->plan.arrival.kind));
	snprintf(m->arrival_desc, sizeof(m->arrival_desc), "%s", b->arrival_desc);
	snprintf(m->profile, sizeof(m->profile), "%s", c->profile.name);
	snprintf(m->profile_source, sizeof(m->profile_source), "%s", c->profile.source);
	snprintf(m->backend, sizeof(m->backend), "%s", backend_label(c));
	snprintf(m->model, sizeof(m->model), "%s", b->plan.model ? b->plan.model : "");
	snprintf(m->base_url, sizeof(m->base_url), "%s", b->base);
	snprintf(m->endpoint, sizeof(m->endpoint), "%s",
		 c->endpoint ? c->endpoint : ls_backend_default_endpoint(c->profile.send.backend));
	snprintf(m->dataset, sizeof(m->dataset), "%s", ls_dataset_kind_name(c->dataset));
	snprintf(m->date, sizeof(m->date), "%s", b->date);
	snprintf(m->connection, sizeof(m->connection), "%s", c->profile.send.per_request_conn
		 ? "a new connection per request (SGLang's aiohttp session per request)"
		 : "keep-alive pool, connections reused (vLLM)");
	const struct ls_read_rules *r = &c->profile.read;
	for (size_t i = 0, len = 0; !r->n_itl_percentiles && i < r->n_percentiles && len < sizeof(m->percentiles); i++)
		len += (size_t)snprintf(m->percentiles + len, sizeof(m->percentiles) - len, "%s%g", i ? "," : "",
					r->percentiles[i]);
	m->request_json = b->request_json;
}

/* Everything before the run: the URLs, the server ready and named, the outputs checked, the
 * dataset, schedule, jobs, probes and record file. 0, or -1 after a message. */
static int prepare(struct bench *b)
{
	struct ls_config *c = &b->cfg;
	time_t now = time(NULL);
	struct tm tm;
	strftime(b->date, sizeof(b->date), "%Y%m%d-%H%M%S", localtime_r(&now, &tm));
	snprintf(b->plan.run_tag, sizeof(b->plan.run_tag), "ls%d-%llx", (int)getpid(), (unsigned long long)(ls_now_ns() & 0xffffff));
	b->base = ls_config_base(c);
	b->url = ls_config_url(c);
	if (!b->base || !b->url)
		return -1;
	b->server = (struct ls_server){ .base = b->base,
					.http = { .insecure = c->insecure, .cacert = c->cacert, .timeout_s = 30,
						  .headers = c->peer.req.headers, .n_headers = c->peer.req.n_headers } };
	int mpi_worker = ls_bench_mpi_rank() > 0; /* rank 0 asks the server and builds the jobs */
	if (!mpi_worker && c->ready_check_timeout_s > 0 && ls_server_wait_ready(&b->server, c->ready_check_timeout_s))
		return -1;
	if (c->model) {
		b->plan.model = strdup(c->model);
	} else if (!mpi_worker) {
		b->plan.model = ls_server_first_model(&b->server);
		if (!b->plan.model && ls_backend_sends_model(c->profile.send.backend)) {
			fprintf(stderr, "latscope bench: no --model given and %s gave no model name (%s); pass --model\n",
				b->base, b->server.why);
			return -1;
		}
	}
	b->server.model = b->plan.model;
	char auth[1024];
	if (!(b->request_json = ls_request_extra_summary(&c->peer.req, c->profile.send.backend,
							  ls_auth_header(auth, sizeof(auth)) == 1)))
		return -1;
	ls_bench_peer_report(c, b->request_json, &b->peer_report);
	if (!mpi_worker && (check_outputs(b) || build_dataset(b) || build_arrival(b) || build_jobs(b)))
		return -1;
	if (!mpi_worker && c->peer.probe_request_rate > 0 && /* ids after the warmups' */
	    ls_probe_reqs_init(&b->probe_reqs, c, b->plan.model, b->plan.n_warmup + b->plan.n_measured))
		return -1;
	if (ls_bench_turns_init(&b->turns, c, b->plan.jobs + b->plan.n_warmup, b->plan.n_measured, &b->ds))
		return -1;
	if (ls_bench_mpi_share(c, &b->plan, &b->run)) /* MPI: this rank's share of the plan */
		return -1;
	b->server.model = b->plan.model;
	if (ls_bench_probes_open(c, &b->run, &b->probes))
		return -1;
	run_meta(b);
	if (ls_bench_mpi_on()) /* FILE.rank<K> from the run's start, FILE merged at its end */
		ls_bench_mpi_record_meta(c->record_path ? &b->meta : NULL);
	else if (c->record_path && !(b->record = ls_record_open(c->record_path, &b->meta)))
		return -1;
	b->run.target_rate = isfinite(c->request_rate) && b->plan.arrival.kind != LS_ARRIVAL_CLOSED ? c->request_rate : 0;
	b->run.max_concurrency = c->max_concurrency;
	snprintf(b->run.run_tag, sizeof(b->run.run_tag), "%s", b->plan.run_tag);
	return 0;
}

/* --html: the page of the run, with the attribution the probes' report made. 0 or -errno. */
static int write_html(struct bench *b)
{
	const struct ls_config *c = &b->cfg;
	char watched[512];
	ls_bench_probes_watched(b->probes, watched, sizeof(watched));
	char *cmdline = ls_html_command_line("latscope", b->argc, b->argv);
	struct ls_html_run page = {
		.attr = ls_bench_probes_attribution(b->probes), .attr_why = watched, .command_line = cmdline,
		.connection = b->meta.connection,
		.watched = watched,
	};
	int err = ls_run_report_html(c->html_path, &b->rr, &b->run, &b->ctx, &page);
	if (!err)
		fprintf(stderr, "latscope bench: HTML report written to %s\n", c->html_path);
	free(cmdline);
	return err;
}

/* The report of a run that ended, whole even when a file could not be written, and the exit
 * code: 0, 1 (a file not written, an interrupt), or LS_EXIT_NONE_OK. */
static int report(struct bench *b)
{
	int mpi_exit;
	if (ls_bench_mpi_no_report(&mpi_exit)) /* MPI: rank 0 reports the whole run (or spilled it) */
		return mpi_exit;
	struct ls_wrap wrap;
	FILE *out = ls_wrap_open(&wrap, stdout);
	ls_bench_peer_rules_line(out, &b->cfg);
	/* Attribute first (MPI: every rank's requests): the client delay is a figure of the run, in
	 * its checks, its result JSON and its record file's last line. */
	int attr_rc = ls_bench_probes_attribute(b->probes, &b->run); /* -EIO: --gpu-dir unread, said */
	b->run.client_delay_p99_ns = ls_bench_probes_client_delay_p99(b->probes, &b->run);
	int results_rc = attr_rc == -ENOMEM ? -ENOMEM : results(b, out), probes_rc = attr_rc;
	if (results_rc >= 0) {
		int files_rc = ls_bench_probes_report(b->probes, &b->run, out);
		probes_rc = probes_rc ? probes_rc : files_rc;
		ls_bench_mpi_report(out);
		ls_checks_print(out, &b->checks);
	}
	ls_wrap_close(&wrap);
	if (b->have_rr) {
		if (write_html(b))
			results_rc = results_rc ? results_rc : 1;
		ls_run_report_free(&b->rr);
		b->have_rr = 0;
	}
	if (results_rc < 0)
		return 1;
	if (results_rc || probes_rc)
		return 1;
	if (b->run.interrupted) {
		fprintf(stderr, "latscope bench: interrupted; the report covers the %zu requests that were sent "
			"(%zu never sent)\n", b->run.n_requests - b->run.n_warmup, b->n_not_sent);
		return 1;
	}
	size_t sent = b->run.n_requests - b->run.n_warmup; /* every rank's, at rank 0 of an MPI run */
	if (sent && !b->completed) {
		fprintf(stderr, "latscope bench: no request succeeded (%zu failed); exit %d\n", sent,
			LS_EXIT_NONE_OK);
		return LS_EXIT_NONE_OK;
	}
	return 0;
}

int cmd_bench(int argc, char **argv)
{
	struct bench b;
	memset(&b, 0, sizeof(b));
	b.argc = argc;
	b.argv = argv;
	int rc = ls_config_parse(&b.cfg, argc, argv);
	if (rc) {
		ls_config_free(&b.cfg);
		return rc == 1 ? 0 : 2;
	}
	int exit_code = 1;
	if (ls_bench_mpi_start()) {
		ls_config_free(&b.cfg);
		return 2;
	}
	if (prepare(&b))
		goto out;
	rc = drive(&b);
	ls_bench_mpi_close_rank_file(&b.spec);
	if (rc < 0)
		fprintf(stderr, "latscope bench: the run could not start (%s)\n", strerror(-rc));
	if (rc >= 0 && rc != INITIAL_TEST_FAILED)
		exit_code = report(&b);
	if (b.record) { /* after the report: its last line has the figures the report made (client delay) */
		ls_record_set_spec(b.record, &b.spec);
		ls_record_set_gauges(b.record, &b.meta.gauges);
		ls_record_close(b.record, &b.run);
		b.record = NULL;
	}
out:
	if (b.record)
		ls_record_close(b.record, NULL);
	bench_free(&b);
	ls_bench_mpi_end(exit_code);
	return exit_code;
}
