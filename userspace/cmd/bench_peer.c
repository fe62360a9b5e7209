/* bench_peer.c — the peers' flags around a bench run (see bench_peer.h). Each piece cites
 * where the peer does it: vllm/benchmarks/serve.py (benchmark, compute_result_filename) and
 * python/sglang/benchmark/serving.py (benchmark, async_request_profile). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include "cmd/bench_peer.h"
#include "base/json_file.h"
#include "driver/backend.h"
#include "server/server_ctl.h"
#include "workload/ramp.h"

int ls_bench_peer_body(const struct ls_config *c, size_t i, int warmup, uint64_t rng[2], char **body, size_t *len)
{
	const struct ls_request_extra *x = &c->peer.req;
	if (!ls_request_extra_touches_body(x))
		return 0;
	const char *lora = ls_request_extra_lora(x, i, warmup, rng);
	char *out = NULL;
	int rc = ls_request_extra_apply(x, c->profile.send.backend, *body, lora, &out, len);
	if (rc) {
		fprintf(stderr, "latscope bench: cannot add the request flags to the body of prompt %zu: %s\n", i,
			rc == -EINVAL ? "--extra-body is not a JSON object" : strerror(-rc));
		return rc;
	}
	free(*body);
	*body = out;
	return 0;
}

void ls_bench_peer_driver(const struct ls_config *c, struct ls_driver_opts *o, int measured)
{
	o->headers = c->peer.req.headers;
	o->n_headers = c->peer.req.n_headers;
	o->request_id_prefix = measured ? c->peer.req.request_id_prefix : NULL; /* vLLM: test and warmups have none */
}

int ls_bench_peer_arrival(const struct ls_config *c, struct ls_arrival *a, size_t n, char *desc, size_t cap)
{
	const struct ls_peer_opts *p = &c->peer;
	if (p->ramp == LS_RAMP_NONE)
		return 0;
	int rc = ls_arrival_init_ramp(a, p->ramp, p->ramp_start_rps, p->ramp_end_rps, c->burstiness, c->seed, n);
	if (rc)
		return rc;
	snprintf(desc, cap, "ramp-up %s %g -> %g req/s (vLLM's rate per request), burstiness %g",
		 ls_ramp_name(p->ramp), p->ramp_start_rps, p->ramp_end_rps, c->burstiness);
	return 1;
}

void ls_bench_peer_traffic_lines(FILE *out, const struct ls_config *c)
{
	const struct ls_peer_opts *p = &c->peer;
	if (c->profile.send.arrival == LS_ARRIVAL_TRACE && c->datasets.use_trace_timestamps) { /* vLLM's self_timed */
		fprintf(out, "Self timing is set, using the timestamps from the trace file.\n");
		return;
	}
	if (p->ramp == LS_RAMP_NONE) { /* vLLM: print(f"Traffic request rate: {request_rate}"), a float */
		char num[40];
		ls_py_float(c->request_rate, num, sizeof(num));
		fprintf(out, "Traffic request rate: %s\n", num);
		return;
	}
	fprintf(out, "Traffic ramp-up strategy: %s.\nWill increase RPS from %g to %g RPS over the duration of the "
		     "benchmark.\n", ls_ramp_name(p->ramp), p->ramp_start_rps, p->ramp_end_rps);
}

/* Adds a comma list as a JSON array (NULL: null). */
static void add_list(cJSON *o, const char *key, const char *list)
{
	if (!list) {
		cJSON_AddNullToObject(o, key);
		return;
	}
	cJSON *a = cJSON_AddArrayToObject(o, key);
	for (const char *s = list; a && *s;) {
		size_t n = strcspn(s, ",");
		char one[128];
		snprintf(one, sizeof(one), "%.*s", (int)n, s);
		cJSON_AddItemToArray(a, cJSON_CreateString(one));
		s += n + (s[n] == ',');
	}
}

/* SGLang's /start_profile body (async_request_profile); NULL for vLLM's empty POST. */
static char *sglang_profile_body(const struct ls_peer_opts *p)
{
	int sglang = p->harness == LS_HARNESS_SGLANG || p->profile_activities || p->profile_stages ||
		     p->profile_output_dir || p->profile_prefix || p->profile_by_stage || p->profile_num_steps >= 0 ||
		     p->profile_steps >= 0 || p->profile_start_step >= 0;
	cJSON *o = sglang ? cJSON_CreateObject() : NULL;
	if (!o)
		return NULL;
	add_list(o, "activities", p->profile_activities ? p->profile_activities : "CPU,GPU");
	long steps = p->profile_num_steps >= 0 ? p->profile_num_steps : p->profile_by_stage ? 5 : -1;
	if (steps >= 0)
		cJSON_AddNumberToObject(o, "num_steps", (double)steps);
	else
		cJSON_AddNullToObject(o, "num_steps");
	cJSON_AddBoolToObject(o, "profile_by_stage", p->profile_by_stage);
	add_list(o, "profile_stages", p->profile_stages);
	const char *dir = p->profile_output_dir ? p->profile_output_dir : getenv("SGLANG_TORCH_PROFILER_DIR");
	char cwd[4096] = "", path[8192];
	struct timeval tv;
	gettimeofday(&tv, NULL);
	if (!dir)
		dir = "/tmp";
	if (dir[0] != '/' && !getcwd(cwd, sizeof(cwd)))
		cwd[0] = 0;
	snprintf(path, sizeof(path), "%s%s%s/%.6f", cwd, cwd[0] ? "/" : "", dir, (double)tv.tv_sec + tv.tv_usec / 1e6);
	cJSON_AddStringToObject(o, "output_dir", path);
	if (p->profile_prefix)
		cJSON_AddStringToObject(o, "profile_prefix", p->profile_prefix);
	else
		cJSON_AddNullToObject(o, "profile_prefix");
	char num[32];
	if (p->profile_start_step >= 0 && snprintf(num, sizeof(num), "%ld", p->profile_start_step) > 0)
		cJSON_AddStringToObject(o, "start_step", num); /* SGLang sends these two as strings */
	if (p->profile_steps >= 0 && snprintf(num, sizeof(num), "%ld", p->profile_steps) > 0) {
		cJSON_DeleteItemFromObject(o, "num_steps");
		cJSON_AddStringToObject(o, "num_steps", num);
	}
	char *text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return text;
}

/* One control POST and vLLM's lines about it. */
static void control(const struct ls_server *s, const char *path, const char *body, const char *before,
		    const char *after)
{
	char why[320] = "";
	if (before) {
		printf("%s\n", before);
		fflush(stdout);
	}
	long status = ls_server_post(s, path, body, why, sizeof(why));
	if (status == 200 && after)
		printf("%s\n", after);
	else if (status != 200)
		fprintf(stderr, "latscope bench: POST %s: %s (going on, as vLLM and SGLang do)\n", path, why);
	fflush(stdout);
}

/* SGLang's _call_profile_pd: the same POST to each prefill worker, then each decode worker. */
static void control_workers(const struct ls_config *c, const struct ls_server *s, int start, const char *body)
{
	const struct ls_peer_opts *p = &c->peer;
	printf("%s profiler...\n", start ? "Starting" : "Stopping");
	for (int kind = 0; kind < 2; kind++)
		for (size_t i = 0; i < (kind ? p->n_decode_urls : p->n_prefill_urls); i++) {
			struct ls_server w = *s; /* the run's HTTP options, the worker's root */
			char why[320] = "";
			w.base = kind ? p->decode_urls[i] : p->prefill_urls[i];
			long status = ls_server_post(&w, start ? "/start_profile" : "/stop_profile", body, why, sizeof(why));
			if (status == 200)
				printf("Profiler %s for %s-%zu worker at %s\n", start ? "started" : "stopped",
				       kind ? "Decode" : "Prefill", i, w.base);
			else
				printf("Failed to %s profiler for %s-%zu worker at %s: %s\n", start ? "start" : "stop",
				       kind ? "Decode" : "Prefill", i, w.base, why);
		}
	fflush(stdout);
}

void ls_bench_peer_before_run(const struct ls_config *c, const struct ls_server *s)
{
	if (c->peer.flush_cache) /* SGLang: after the warmups, before the profiler */
		control(s, "/flush_cache", NULL, NULL, NULL);
	if (c->peer.server_profile) {
		char *body = sglang_profile_body(&c->peer);
		if (c->peer.pd_separated)
			control_workers(c, s, 1, body);
		else
			control(s, "/start_profile", body, "Starting profiler...", "Profiler started");
		free(body);
	}
}

void ls_bench_peer_after_run(const struct ls_config *c, const struct ls_server *s)
{
	if (c->peer.server_profile && c->peer.pd_separated)
		control_workers(c, s, 0, c->peer.harness == LS_HARNESS_SGLANG ? "{}" : NULL);
	else if (c->peer.server_profile)
		control(s, "/stop_profile", c->peer.harness == LS_HARNESS_SGLANG ? "{}" : NULL, "Stopping profiler...",
			"Profiler stopped");
}

void ls_bench_peer_result_name(const struct ls_config *c, const char *model, const char *date, char *name, size_t cap)
{
	const struct ls_peer_opts *p = &c->peer;
	const char *label = p->label ? p->label : c->backend_name ? c->backend_name : ls_backend_name(c->profile.send.backend);
	const char *base = strrchr(model ? model : "model", '/');
	base = base ? base + 1 : (model ? model : "model");
	char conc[32] = "", rate[96];
	if (c->max_concurrency)
		snprintf(conc, sizeof(conc), "-concurrency%u", c->max_concurrency);
	if (p->ramp != LS_RAMP_NONE) /* vLLM's ramp-up rates are ints */
		snprintf(rate, sizeof(rate), "ramp-up-%s-%.0fqps-%.0fqps", ls_ramp_name(p->ramp), p->ramp_start_rps,
			 p->ramp_end_rps);
	else { /* f"{args.request_rate}qps": a Python float, so --request-rate 20 names -20.0qps- */
		char num[40];
		ls_py_float(c->request_rate, num, sizeof(num));
		snprintf(rate, sizeof(rate), "%sqps", num);
	}
	snprintf(name, cap, "%s-%s%s-%s-%s.json", label, rate, conc, base, date);
}

void ls_bench_peer_report(const struct ls_config *c, const char *request_json, struct ls_peer_report *pr)
{
	const struct ls_peer_opts *p = &c->peer;
	*pr = (struct ls_peer_report){
		.label = p->label, .metadata = p->metadata, .n_metadata = p->n_metadata,
		.append_result = p->append_result, .request_json = request_json, .tag = p->tag,
		.dataset_name = c->dataset_name ? c->dataset_name : ls_dataset_kind_name(c->dataset), .sharegpt_output_len = c->sharegpt_output_len,
		.random_input_len = c->random_input_len, .random_output_len = c->random_output_len,
		.random_range_ratio = c->random_range_ratio, .output_details = p->output_details,
	};
	if (p->ramp != LS_RAMP_NONE) {
		pr->ramp = ls_ramp_name(p->ramp);
		pr->ramp_kind = p->ramp;
		pr->ramp_start_rps = p->ramp_start_rps;
		pr->ramp_end_rps = p->ramp_end_rps;
	}
}

void ls_bench_peer_rules_line(FILE *out, const struct ls_config *c)
{
	if (c->profile.send.backend != LS_BACKEND_SGLANG || c->profile.layout == LS_LAYOUT_SGLANG)
		return;
	fprintf(out, "Note: SGLang's /generate backend under vLLM's rules (profile %s): vllm bench serve has no such "
		     "backend, so these numbers follow %s's read rules, not sglang.bench_serving's (--harness sglang "
		     "gives those)\n", c->profile.name, c->profile.name);
}

/* SGLang's default file name (benchmark(): output_file_name). */
static void sglang_default_name(const struct ls_config *c, char *name, size_t cap)
{
	char mmdd[8];
	time_t now = time(NULL);
	struct tm tm;
	strftime(mmdd, sizeof(mmdd), "%m%d", localtime_r(&now, &tm));
	const char *backend = c->backend_name ? c->backend_name : "sglang";
	const char *dataset = c->dataset_name ? c->dataset_name : ls_dataset_kind_name(c->dataset);
	if (!strncmp(dataset, "random", 6)) /* SGLang: args.dataset_name.startswith("random") */
		snprintf(name, cap, "%s_%s_%zu_%u_%u.jsonl", backend, mmdd, c->num_prompts, c->random_input_len,
			 c->random_output_len);
	else
		snprintf(name, cap, "%s_%s_%zu_%s.jsonl", backend, mmdd, c->num_prompts, dataset);
}

int ls_bench_peer_outputs(const struct ls_config *c, const struct ls_metrics *m, const struct ls_run *run,
			  const struct ls_report_ctx *ctx)
{
	const struct ls_peer_opts *p = &c->peer;
	if (p->print_requests)
		ls_report_print_requests(stdout, m, run);
	char name[1024];
	if (p->output_file)
		snprintf(name, sizeof(name), "%s", p->output_file);
	else if (p->harness == LS_HARNESS_SGLANG)
		sglang_default_name(c, name, sizeof(name));
	else
		return 0;
	if (ls_report_sglang_write(name, m, run, ctx))
		return 1;
	fprintf(stderr, "latscope bench: SGLang's result line appended to %s\n", name);
	return 0;
}
