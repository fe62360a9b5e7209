/* bench_probes.c — see bench_probes.h. Wires probes.c (open, drain hook, events), gpu_steps.c
 * (--gpu-dir), attribution*.c and the report_attribution / report_trace writers into a bench
 * run. Its own figures are only summaries: the client delay per frame and the harness's cost
 * (getrusage between open and report). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include "attribution/attribution.h"
#include "base/outfile.h"
#include "base/clock.h"
#include "base/stats.h"
#include "cmd/bench_probes.h"
#include "attribution/gpu_steps.h"
#include "config/profile.h"
#include "probes/probes.h"
#include "report/report.h"

struct ls_bench_probes {
	const struct ls_config *cfg;
	struct ls_probes *probes;   /* NULL: off (why says why) */
	struct ls_loop_hook hook;
	char why[256];
	struct rusage before;       /* at open: the run's CPU and peak RSS are measured from here */
	struct rusage after;        /* at the run's end (ls_bench_probes_run_ended) */
	int ended;
	uint64_t steal_before_ms, steal_after_ms; /* /proc/stat steal, all vCPUs */
	int have_steal;
	struct ls_attribution *attr; /* after ls_bench_probes_attribute: the report and the HTML page */
	struct rusage end;          /* the harness's CPU up to the attribution */
	uint64_t from_ns, to_ns;    /* the run's span (GPU steps outside it are someone else's) */
	struct ls_gpu_steps gs;     /* --gpu-dir's steps over that span */
	int have_gs, have_events, merged;
	/* MPI rank 0 (ls_bench_probes_set_parts): the merged run's events, one store per rank. */
	struct ls_evstore **stores;
	size_t n_stores, n_part;
	uint32_t *part;
	const struct ls_run *own;
};


/* Events a request's socket gets: two a frame (arrival, read), the frames its requested length
 * makes (tokens + usage + [DONE], as the driver reserves them), and its connect and send. A
 * sizing hint only (ls_evstore_expect); the mean over run's requests, capped where the driver's
 * frame reservation is. */
static uint32_t socket_events(const struct ls_run *run)
{
	uint64_t sum = 0;
	size_t n = 0;
	for (size_t i = 0; run && i < run->n_requests; i++, n++)
		sum += run->requests[i].output_len && run->requests[i].output_len < 4096 ? run->requests[i].output_len
											  : 4096;
	return n ? (uint32_t)(2 * (sum / n + 8) + 16) : 0;
}

int ls_bench_probes_open(const struct ls_config *cfg, const struct ls_run *run, struct ls_bench_probes **out)
{
	struct ls_bench_probes *bp = calloc(1, sizeof(*bp));
	pid_t self = getpid(), srv[LS_MAX_SERVER_PIDS];

	*out = NULL;
	if (!bp) {
		fprintf(stderr, "latscope bench: out of memory opening the probes\n");
		return -1;
	}
	bp->cfg = cfg;
	snprintf(bp->why, sizeof(bp->why), "--probes off");
	if (cfg->probes != LS_PROBES_OFF) {
		for (uint32_t i = 0; i < cfg->n_server_pids; i++)
			srv[i] = (pid_t)cfg->server_pids[i];
		struct ls_probes_opts po = {
			.client_pids = &self, .n_client_pids = 1,
			.server_pids = cfg->n_server_pids ? srv : NULL, .n_server_pids = cfg->n_server_pids,
			.server_comm = cfg->server_comm,
			.engine_steps = 1, /* queue / prefill / decode from a llama.cpp server's steps */
			.socket_events = socket_events(run),
		};
		bp->probes = ls_probes_open(&po, bp->why, sizeof(bp->why));
		if (!bp->probes && cfg->probes == LS_PROBES_ON) {
			fprintf(stderr, "latscope bench: --probes on: the eBPF probes cannot run: %s "
					"(--probes auto runs without them)\n", bp->why);
			free(bp);
			return -1;
		}
		if (!bp->probes)
			fprintf(stderr, "latscope bench: probes off: %s\n", bp->why);
	}
	if (bp->probes)
		ls_probes_loop_hook(bp->probes, &bp->hook);
	getrusage(RUSAGE_SELF, &bp->before);
	bp->have_steal = ls_clock_steal_ms(&bp->steal_before_ms) == 0;
	*out = bp;
	return 0;
}

void ls_bench_probes_run_ended(struct ls_bench_probes *bp)
{
	if (bp && !getrusage(RUSAGE_SELF, &bp->after))
		bp->ended = 1;
	if (bp && bp->have_steal && ls_clock_steal_ms(&bp->steal_after_ms))
		bp->have_steal = 0;
}

void ls_bench_probes_hook(struct ls_bench_probes *bp, struct ls_driver_opts *o)
{
	if (!bp || !bp->probes)
		return;
	o->hooks = &bp->hook;
	o->n_hooks = 1;
}

char *ls_bench_attribution_path(const char *record_path)
{
	size_t len = strlen(record_path);
	const char *ext = ".jsonl";
	size_t ext_len = strlen(ext);
	char *path = NULL;

	if (len > ext_len && !strcmp(record_path + len - ext_len, ext))
		len -= ext_len;
	if (asprintf(&path, "%.*s.attribution.jsonl", (int)len, record_path) < 0)
		return NULL;
	return path;
}

/* --spin-us or --busy-poll: the loop spins rather than sleeps between events. */
static int loop_spins(const struct ls_config *cfg)
{
	return cfg->busy_poll || cfg->spin_us;
}

#define CLIENT_DELAY_HINT_NS 50000ull /* p50 above this: say what the delay is made of */

/* How long each frame waited between the kernel having it and the harness stamping it: the
 * harness's own delay per frame (warmups left out). */
static void print_client_delay(FILE *out, const struct ls_run *run, const struct ls_attribution *a,
			       int loop_sleeps)
{
	size_t n = 0;
	uint64_t *d;

	if (ls_attribution_client_delays(run, a, &d, &n))
		return;
	if (n) {
		double p50 = ls_percentile_u64(d, n, 50);
		fprintf(out, "client delay per frame (harness stamp - kernel arrival, n=%zu): P50 %.3f ms, "
			"P99 %.3f ms, max %.3f ms\n", n, p50 / 1e6, ls_percentile_u64(d, n, 99) / 1e6, d[n - 1] / 1e6);
		/* A sleeping loop's wake-up is part of every delay after a quiet moment. */
		if (loop_sleeps && p50 > CLIENT_DELAY_HINT_NS)
			fprintf(out, "  (the loop sleeps between events, and waking it costs 20-100 us on a VM: "
				"--busy-poll, or --spin-us longer than the quiet gaps, avoids that on a core the "
				"server does not use)\n");
	}
	free(d);
}


/* What the harness itself cost during the run (warmups included): CPU per request and per
 * frame, peak RSS growth per stream in flight, and the probes' drain per event. The kernel
 * side of the probes runs partly in other tasks (softirq): tests/perf/probes_cost.sh has both. */
static void print_harness_cost(FILE *out, const struct ls_bench_probes *bp, const struct ls_run *run,
			       const struct rusage *now, const char *whose)
{
	uint64_t frames = 0;

	for (size_t i = 0; i < run->n_requests; i++)
		frames += run->requests[i].n_frames;
	/* User time is latscope's own code and libraries (libcurl, SSE, JSON, stamping); kernel time
	 * is mostly TCP receive, and the ACK each small frame's read sends on loopback. */
	double user = ls_tv_us(&now->ru_utime) - ls_tv_us(&bp->before.ru_utime);
	double kern = ls_tv_us(&now->ru_stime) - ls_tv_us(&bp->before.ru_stime);
	double cpu = user + kern;
	size_t n = run->n_requests, peak = ls_run_peak_streams(run);
	long rss_kib = now->ru_maxrss - bp->before.ru_maxrss;
	fprintf(out, "harness cost (getrusage, %s): CPU %.1f ms = %.1f us per request, %.2f us per frame "
		"(user %.2f + kernel %.2f) (%zu requests, %llu frames)", whose,
		cpu / 1e3, n ? cpu / n : 0.0, frames ? cpu / frames : 0.0, frames ? user / frames : 0.0,
		frames ? kern / frames : 0.0, n, (unsigned long long)frames);
	/* ru_maxrss is a high-water mark: a run that stayed below the set-up's peak shows no growth. */
	if (rss_kib > 0 && peak)
		fprintf(out, "; peak RSS +%.1f MiB = %.1f KiB per stream held (peak %zu streams)", rss_kib / 1024.0,
			(double)rss_kib / peak, peak);
	if (loop_spins(bp->cfg))
		fprintf(out, "; %s: the loop's spinning is in the CPU", bp->cfg->busy_poll ? "--busy-poll" : "--spin-us");
	if (bp->ended && bp->have_steal && bp->steal_after_ms > bp->steal_before_ms)
		fprintf(out, "; the hypervisor took %llu ms of CPU from this VM's vCPUs during the run (/proc/stat "
			"steal): stamps taken around it can be late", (unsigned long long)(bp->steal_after_ms -
										bp->steal_before_ms));
	if (run->spin_stalls.n)
		fprintf(out, "; the spinning loop did not run %llu times for over %.1f ms (longest %.2f ms, %.2f ms "
			"in all): another task or the hypervisor had its CPU, and frames that came then were "
			"stamped late", (unsigned long long)run->spin_stalls.n, LS_SPIN_STALL_NS / 1e6,
			run->spin_stalls.max_ns / 1e6, run->spin_stalls.sum_ns / 1e6);
	if (bp->probes) {
		uint64_t drain_ns = 0, events = 0;
		ls_probes_cost(bp->probes, NULL, 0, &drain_ns, &events);
		fprintf(out, "; probes: %llu events, drain %.2f us per event", (unsigned long long)events,
			events ? drain_ns / 1e3 / events : 0.0);
	}
	fprintf(out, "\n");
}

/* cJSON prints every number with "%1.15g" and reads it back with sscanf (~3,000 instructions
 * each: most of the JSONL's cost). The parts and stamps are integers: turn them into raw
 * decimal text first, which cJSON copies as is. */
static void ints_to_raw(cJSON *item)
{
	for (; item; item = item->next) {
		if (item->child)
			ints_to_raw(item->child);
		double v = item->valuedouble;
		if (!cJSON_IsNumber(item) || v < 0 || v > 9007199254740992.0 || v != (double)(uint64_t)v)
			continue;
		char buf[24], *p = buf + sizeof(buf);
		uint64_t u = (uint64_t)v;
		*--p = 0;
		do
			*--p = (char)('0' + u % 10);
		while (u /= 10);
		char *text = strdup(p);
		if (!text)
			continue; /* stays a number */
		item->type = cJSON_Raw;
		item->valuestring = text;
	}
}

/* The attribution header's engine objects: the uprobe steps behind the split, and the engine's
 * own account against the server's kernel stamps. */
static void add_engine_header(cJSON *h, const struct ls_attribution *a)
{
	const struct ls_attr_engine *e = &a->engine;
	cJSON *eng = e->uprobe_steps ? cJSON_AddObjectToObject(h, "engine_steps") : NULL;
	if (eng) { /* what the requests' "engine" sessions came from, and how sure their joins are */
		cJSON_AddStringToObject(eng, "source", "uprobe");
		cJSON_AddStringToObject(eng, "hook", "llama_decode");
		cJSON_AddStringToObject(eng, "frontend_hooks", "server_response_reader::post_tasks, llama_tokenize");
		cJSON_AddStringToObject(eng, "join", "by time and the engine's token counts (docs/engine.md)");
		const struct { const char *key; double v; } n[] = {
			{ "steps", (double)e->uprobe_steps }, { "steps_with_seqs", (double)e->seq_steps },
			{ "sessions", (double)e->sessions }, { "joined", (double)e->mapped },
			{ "uncertain", (double)e->uncertain }, { "uncertain_twins", (double)e->twins },
			{ "by_time_alone", (double)e->counts_differ }, { "split_by_counts", (double)e->split },
			{ "sessions_unjoined", (double)e->unjoined }, { "lost", (double)e->lost },
			{ "prefill_step_p50_ns", (double)e->prefill_step_p50_ns },
			{ "decode_step_p50_ns", (double)e->decode_step_p50_ns },
			{ "tokenize_calls", (double)e->tokenize_calls }, { "post_calls", (double)e->post_calls },
			{ "frontend_calls_joined", (double)e->marks_joined },
			{ "frontend_found", (double)e->frontend }, { "frontend_unknown", (double)e->no_frontend },
		};
		for (size_t k = 0; k < sizeof(n) / sizeof(n[0]); k++)
			cJSON_AddNumberToObject(eng, n[k].key, n[k].v);
	}
	const struct ls_attr_engine_account *o = &a->account;
	cJSON *acc = o->n ? cJSON_AddObjectToObject(h, "engine_vs_kernel") : NULL;
	if (acc) { /* the engine's own fields against the server's read -> first-token write */
		const struct { const char *key; double v; } n[] = {
			{ "requests", (double)o->n }, { "has_queue", o->has_queue },
			{ "inside_p50_ms", o->inside_p50_ms }, { "server_p50_ms", o->server_p50_ms },
			{ "not_counted_p50_ms", o->not_counted_p50_ms }, { "not_counted_p99_ms", o->not_counted_p99_ms },
			{ "over", (double)o->over }, { "worst_over_ms", o->worst_over_ms },
			{ "steps_requests", (double)o->n_steps },
			{ "prefill_minus_steps_p50_ms", o->prefill_minus_steps_p50_ms },
		};
		for (size_t k = 0; k < sizeof(n) / sizeof(n[0]); k++)
			cJSON_AddNumberToObject(acc, n[k].key, n[k].v);
	}
}

/* One header line, then one line per request (ls_attribution_request_json): the parts of its
 * TTFT, each inter-token gap and E2EL in ns, its flags and the kernel's stamps. */
static int write_jsonl(const char *path, const char *record_path, const struct ls_run *run,
		       const struct ls_attribution *a, const struct ls_evstore *const *stores, size_t n_stores)
{
	struct ls_outfile out;
	int err = ls_outfile_open(&out, "attribution file", path);
	if (err)
		return err;
	FILE *f = out.f;
	cJSON *h = cJSON_CreateObject();
	if (h) {
		cJSON_AddNumberToObject(h, "latscope_attribution", 1);
		cJSON_AddStringToObject(h, "record", record_path);
		cJSON_AddStringToObject(h, "run_tag", run->run_tag);
		cJSON_AddStringToObject(h, "clock", ls_origin_name(a->rules.origin));
		cJSON_AddStringToObject(h, "ttft_gate", ls_gate_name(a->rules.ttft_gate));
		cJSON_AddStringToObject(h, "e2el_end", ls_e2el_end_name(a->rules.e2el_end));
		cJSON_AddStringToObject(h, "units", "parts and totals in ns; kernel stamps CLOCK_MONOTONIC ns");
		cJSON_AddStringToObject(h, "why", a->why);
		cJSON_AddNumberToObject(h, "lost_events", (double)a->lost_events);
		add_engine_header(h, a);
		cJSON *by_kind = cJSON_AddObjectToObject(h, "lost_by_kind");
		for (unsigned kind = 0; by_kind && kind < LS_EV__COUNT; kind++) {
			uint64_t lost = 0;
			for (size_t k = 0; k < n_stores; k++)
				lost += ls_evstore_lost(stores[k], kind);
			if (lost)
				cJSON_AddNumberToObject(by_kind, ls_event_kind_name(kind), (double)lost);
		}
	}
	char *text = h ? cJSON_PrintUnformatted(h) : NULL;
	cJSON_Delete(h);
	if (!text || fprintf(f, "%s\n", text) < 0)
		err = text ? -EIO : -ENOMEM;
	free(text);
	for (size_t i = 0; !err && i < a->n; i++) {
		cJSON *j = ls_attribution_request_json(a, i);
		if (j)
			ints_to_raw(j->child);
		text = j ? cJSON_PrintUnformatted(j) : NULL;
		cJSON_Delete(j);
		if (!text || fprintf(f, "%s\n", text) < 0)
			err = text ? -EIO : -ENOMEM;
		free(text);
	}
	if (err) {
		fprintf(stderr, "latscope bench: writing %s failed: %s\n", path, strerror(-err));
		ls_outfile_abort(&out);
		return err;
	}
	return ls_outfile_commit(&out);
}

/* The run's span, warmups included (GPU steps outside it are someone else's). */
static void run_span(const struct ls_run *run, uint64_t *from, uint64_t *to)
{
	*from = *to = 0;
	for (size_t i = 0; i < run->n_requests; i++) {
		const struct ls_request *r = &run->requests[i];
		uint64_t s = r->scheduled_ns ? r->scheduled_ns : r->started_ns;
		uint64_t e = r->finished_ns;
		for (uint32_t f = 0; f < r->n_frames; f++)
			if (r->frames[f].arrived_ns > e)
				e = r->frames[f].arrived_ns;
		if (s && (!*from || s < *from))
			*from = s;
		if (e > *to)
			*to = e;
	}
}

/* The probes' notes, but the one the attribution's why says already. */
static void print_notes(FILE *out, const struct ls_bench_probes *bp, const struct ls_attribution *a)
{
	const char *notes = bp->probes ? ls_probes_notes(bp->probes) : NULL;
	for (const char *p = notes; p && *p;) {
		size_t len = strcspn(p, "\n");
		int said = memmem(p, len, "no server watched", 17) && strstr(a->why, "no server-side events");
		if (len && !said)
			fprintf(out, "probes: %.*s\n", (int)len, p);
		p += len + (p[len] == '\n');
	}
}

/* The attribution JSONL beside --record (when there were events) and --trace. 0 or the first
 * -errno (each file says on stderr). */
static int write_files(const struct ls_config *cfg, const struct ls_run *run, const struct ls_attribution *a,
		       const struct ls_evstore *const *stores, size_t n_stores, int have_events,
		       const struct ls_gpu_steps *gs)
{
	int err = 0;
	if (cfg->record_path && have_events) { /* probes off: nothing the record does not hold already */
		char *path = ls_bench_attribution_path(cfg->record_path);
		int e = path ? write_jsonl(path, cfg->record_path, run, a, stores, n_stores) : -ENOMEM;
		if (!e)
			fprintf(stderr, "latscope bench: attribution per request written to %s\n", path);
		else
			err = e;
		free(path);
	}
	if (cfg->trace_path) {
		int e = ls_trace_write_stores(cfg->trace_path, run, a, stores, n_stores, gs ? gs->steps : NULL,
					      gs ? gs->n : 0);
		if (!e)
			fprintf(stderr, "latscope bench: trace written to %s (open it in ui.perfetto.dev)\n",
				cfg->trace_path);
		else if (!err)
			err = e;
	}
	return err;
}

/* The P99 of run's client delays per frame in a (have_client_delay 0 when none). */
static void rank_client_delay(const struct ls_run *run, const struct ls_attribution *a,
			      struct ls_bench_rank_probes *out)
{
	uint64_t *d;
	size_t n = 0;
	if (ls_attribution_client_delays(run, a, &d, &n))
		n = 0;
	if (n) {
		out->client_delay_p99_ns = (uint64_t)ls_percentile_u64(d, n, 99);
		out->n_client_frames = n;
		out->have_client_delay = 1;
	}
	free(d);
}

/* The event stores that attribute run: the probes' own (in *own, the caller's), or at MPI rank 0
 * one per rank. */
static int stores_of(const struct ls_bench_probes *bp, const struct ls_run *run, const struct ls_evstore **own,
		     const struct ls_evstore *const **stores, size_t *n_stores, const uint32_t **part)
{
	*own = ls_probes_events(bp->probes);
	*stores = own;
	*n_stores = 1;
	*part = NULL;
	int merged = bp->stores && bp->n_part == run->n_requests;
	if (merged) { /* MPI: each rank's requests with that rank's events */
		*stores = (const struct ls_evstore *const *)bp->stores;
		*n_stores = bp->n_stores;
		*part = bp->part;
	}
	return merged;
}

int ls_bench_probes_attribute(struct ls_bench_probes *bp, const struct ls_run *run)
{
	if (!bp)
		return 0;
	int err = 0;
	if (bp->ended)
		bp->end = bp->after;
	else
		getrusage(RUSAGE_SELF, &bp->end); /* the run ends here: attribution is not its cost */
	ls_probes_drain(bp->probes); /* what arrived after the loop's last drain */
	run_span(run, &bp->from_ns, &bp->to_ns);
	if (bp->cfg->gpu_dir) {
		if (ls_gpu_steps_load(bp->cfg->gpu_dir, bp->from_ns, bp->to_ns, &bp->gs) == 0)
			bp->have_gs = 1;
		else
			err = -EIO; /* the message named the directory; the report goes on without GPU */
	}
	const struct ls_evstore *const *stores;
	const uint32_t *part;
	size_t n_stores;
	const struct ls_evstore *own;
	bp->merged = stores_of(bp, run, &own, &stores, &n_stores, &part);
	bp->have_events = 0;
	for (size_t k = 0; k < n_stores; k++)
		bp->have_events |= stores[k] != NULL;
	struct ls_profile honest;
	struct ls_attribution *a = NULL;
	/* Attribution reads every request the honest way, whatever profile the run was sent by. */
	/* Engine steps: CUPTI's (--gpu-dir) and llama_decode's uprobes on a --server-pid server. */
	struct ls_probes_engine_info eng;
	struct ls_attr_steps steps = { .gpu = bp->have_gs ? bp->gs.steps : NULL, .n_gpu = bp->have_gs ? bp->gs.n : 0 };
	steps.n_uprobe = ls_probes_engine_steps(bp->probes, &steps.uprobe, &eng);
	steps.uprobe_lost = eng.lost;
	if (!ls_profile_builtin("honest", &honest))
		a = ls_attribute_steps(run, stores, n_stores, part, &steps, &honest.read,
				       bp->have_events ? NULL : bp->why);
	if (!a) {
		fprintf(stderr, "latscope bench: out of memory attributing the run\n");
		return -ENOMEM;
	}
	ls_attribution_free(bp->attr);
	bp->attr = a; /* the report prints it; kept for the HTML page (ls_bench_probes_attribution) */
	return err;
}

uint64_t ls_bench_probes_client_delay_p99(const struct ls_bench_probes *bp, const struct ls_run *run)
{
	struct ls_bench_rank_probes rp;
	memset(&rp, 0, sizeof(rp));
	if (bp && bp->attr && bp->have_events)
		rank_client_delay(run, bp->attr, &rp);
	return rp.have_client_delay ? rp.client_delay_p99_ns : 0;
}

int ls_bench_probes_report(struct ls_bench_probes *bp, const struct ls_run *run, FILE *out)
{
	if (!bp || !bp->attr)
		return 0;
	const struct ls_attribution *a = bp->attr;
	fprintf(out, "\n");
	ls_attribution_print(out, a);
	if (bp->have_events)
		print_client_delay(out, run, a, !loop_spins(bp->cfg));
	print_notes(out, bp, a);
	fprintf(out, "(attribution reads every request the honest way: TTFT and E2EL from `scheduled`, "
		     "E2EL to the last byte)\n");
	print_harness_cost(out, bp, bp->merged && bp->own ? bp->own : run, &bp->end,
			   bp->merged ? "rank 0's own requests; each rank's CPU per frame is below" : "the run");
	if (bp->have_gs) {
		fprintf(out, "\n");
		ls_gpu_report_print(out, &bp->gs, bp->from_ns, bp->to_ns);
	}
	fflush(out);
	const struct ls_evstore *const *stores;
	const uint32_t *part;
	size_t n_stores;
	const struct ls_evstore *own;
	stores_of(bp, run, &own, &stores, &n_stores, &part);
	int err = write_files(bp->cfg, run, a, stores, n_stores, bp->have_events, bp->have_gs ? &bp->gs : NULL);
	if (bp->have_gs)
		ls_gpu_steps_free(&bp->gs);
	bp->have_gs = 0;
	return err;
}

const struct ls_attribution *ls_bench_probes_attribution(const struct ls_bench_probes *bp)
{
	return bp ? bp->attr : NULL;
}

void ls_bench_probes_watched(const struct ls_bench_probes *bp, char *buf, size_t cap)
{
	const struct ls_config *cfg = bp ? bp->cfg : NULL;
	size_t len;

	if (!bp || !bp->probes) {
		snprintf(buf, cap, "probes off: %s", bp ? bp->why : "not opened");
		return;
	}
	len = (size_t)snprintf(buf, cap, "eBPF probes on: the harness");
	for (uint32_t i = 0; i < cfg->n_server_pids && len < cap; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s%d", i ? ", " : ", server pid ", cfg->server_pids[i]);
	if (cfg->server_comm && len < cap)
		len += (size_t)snprintf(buf + len, cap - len, ", servers named %s", cfg->server_comm);
	if (!cfg->n_server_pids && !cfg->server_comm && len < cap)
		snprintf(buf + len, cap - len, " only (no server watched)");
}


int ls_bench_probes_rank_view(struct ls_bench_probes *bp, const struct ls_run *run,
			      struct ls_bench_rank_probes *out)
{
	struct ls_profile honest;
	memset(out, 0, sizeof(*out));
	if (!bp || !bp->probes || ls_profile_builtin("honest", &honest))
		return -1;
	ls_probes_drain(bp->probes);
	/* The pairing is the attribution's own (ports and time), so rank 0 pairs the same way. */
	struct ls_attribution *a = ls_attribute(run, ls_probes_events(bp->probes), NULL, 0, &honest.read, NULL);
	uint64_t *c = a ? malloc((2 * a->n + 1) * sizeof(*c)) : NULL;
	if (!c) {
		ls_attribution_free(a);
		return -1;
	}
	size_t k = 0;
	for (size_t i = 0; i < a->n; i++) {
		if (a->req[i].client_cookie)
			c[k++] = a->req[i].client_cookie;
		if (a->req[i].server_cookie)
			c[k++] = a->req[i].server_cookie;
	}
	rank_client_delay(run, a, out);
	ls_attribution_free(a);
	out->cookies = c;
	out->n_cookies = k;
	return 0;
}

const struct ls_evstore *ls_bench_probes_events(const struct ls_bench_probes *bp)
{
	return bp ? ls_probes_events(bp->probes) : NULL;
}

static void parts_free(struct ls_evstore **stores, size_t n, uint32_t *part)
{
	for (size_t k = 0; stores && k < n; k++)
		ls_evstore_free(stores[k]);
	free(stores);
	free(part);
}

void ls_bench_probes_set_parts(struct ls_bench_probes *bp, struct ls_evstore **stores, size_t n_stores,
			       uint32_t *part, size_t n_part, const struct ls_run *own)
{
	if (!bp) {
		parts_free(stores, n_stores, part);
		return;
	}
	parts_free(bp->stores, bp->n_stores, bp->part);
	bp->stores = stores;
	bp->n_stores = n_stores;
	bp->part = part;
	bp->n_part = n_part;
	bp->own = own;
}

const char *ls_bench_probes_why(const struct ls_bench_probes *bp)
{
	if (!bp)
		return "no probes";
	return bp->probes ? NULL : bp->why;
}

void ls_bench_probes_close(struct ls_bench_probes *bp)
{
	if (!bp)
		return;
	ls_probes_close(bp->probes);
	ls_attribution_free(bp->attr);
	parts_free(bp->stores, bp->n_stores, bp->part);
	free(bp);
}
