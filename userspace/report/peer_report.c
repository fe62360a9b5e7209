/* peer_report.c — vLLM's flag-driven result keys and SGLang's JSONL result line (see
 * peer_report.h). SGLang's statistics are its own (np.mean/np.median/np.std/np.percentile over
 * successful requests, in ms), computed here from the per-request arrays of struct ls_metrics
 * with metrics' own summary (ls_stat_compute_at: the one percentile rule, population std). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "report/peer_report.h"
#include "report/report.h"
#include "base/json_file.h"
#include "base/outfile.h"
#include "workload/ramp.h"

void ls_peer_json_header(cJSON *root, const struct ls_report_ctx *ctx)
{
	const struct ls_peer_report *p = ctx->peer;
	if (!p)
		return;
	if (p->label) {
		cJSON_DeleteItemFromObjectCaseSensitive(root, "label");
		cJSON_AddStringToObject(root, "label", p->label);
	}
	for (size_t i = 0; i < p->n_metadata; i++) { /* vLLM: result_json[k.strip()] = v.strip() */
		const char *eq = strchr(p->metadata[i], '=');
		char key[256];
		const char *k = p->metadata[i], *v = eq + 1;
		while (*k == ' ' || *k == '\t')
			k++;
		size_t klen = (size_t)(eq - k);
		while (klen && (k[klen - 1] == ' ' || k[klen - 1] == '\t'))
			klen--;
		while (*v == ' ' || *v == '\t')
			v++;
		snprintf(key, sizeof(key), "%.*s", (int)klen, k);
		cJSON_DeleteItemFromObjectCaseSensitive(root, key);
		cJSON_AddStringToObject(root, key, v);
	}
	if (p->ramp) {
		cJSON_AddStringToObject(root, "ramp_up_strategy", p->ramp);
		cJSON_AddNumberToObject(root, "ramp_up_start_rps", p->ramp_start_rps);
		cJSON_AddNumberToObject(root, "ramp_up_end_rps", p->ramp_end_rps);
	}
	const struct ls_probe_stats *ps = p->probes;
	if (ps && ps->completed) { /* vLLM: result.update(probe_stats), made when a probe succeeded */
		cJSON_AddNumberToObject(root, "probe_completed", (double)ps->completed);
		cJSON_AddNumberToObject(root, "probe_failed", (double)ps->failed);
		cJSON_AddNumberToObject(root, "probe_median_e2el_ms", ps->e2el.median_ms);
		cJSON_AddNumberToObject(root, "probe_p99_e2el_ms", ps->e2el.pct_ms[1]);
		cJSON_AddNumberToObject(root, "probe_max_e2el_ms", ps->e2el.max_ms);
	}
}

static void add_probe_stat(cJSON *o, const char *name, const struct ls_stat *st)
{
	cJSON *s = cJSON_AddObjectToObject(o, name);
	if (!s)
		return;
	cJSON_AddNumberToObject(s, "mean", st->mean_ms);
	cJSON_AddNumberToObject(s, "median", st->median_ms);
	cJSON_AddNumberToObject(s, "p99", st->pct_ms[1]);
	cJSON_AddNumberToObject(s, "max", st->max_ms);
}

/* A number, or null for NaN (a failed probe's figure). */
static void add_num_or_null(cJSON *o, const char *key, double v)
{
	if (isnan(v))
		cJSON_AddNullToObject(o, key);
	else
		cJSON_AddNumberToObject(o, key, v);
}

/* Parts in ms as {"client": ..., ...}, the zero ones left out. */
static void add_parts_ms(cJSON *o, const char *key, const double ms[LS_PART__COUNT])
{
	cJSON *s = cJSON_AddObjectToObject(o, key);
	for (int k = 0; s && k < LS_PART__COUNT; k++)
		if (ms[k] != 0)
			cJSON_AddNumberToObject(s, ls_part_name((enum ls_part)k), ms[k]);
}

/* Probe i's TTFT parts, when the attribution split it. */
static void add_probe_parts(cJSON *e, const struct ls_peer_report *p, size_t i)
{
	const struct ls_req_attr *a = p->probe_attr && i < p->probe_attr->n ? &p->probe_attr->req[i] : NULL;
	if (!a || (a->flags & (LS_ATTR_NOT_OK | LS_ATTR_NO_EVENTS)))
		return;
	double ms[LS_PART__COUNT];
	for (int k = 0; k < LS_PART__COUNT; k++)
		ms[k] = (double)a->ttft.ns[k] / 1e6;
	add_parts_ms(e, "ttft_parts_ms", ms);
}

/* latscope's probe_requests: the figures, then each probe's stamps (CLOCK_MONOTONIC ns). */
static void add_probe_requests(cJSON *latscope, const struct ls_peer_report *p)
{
	const struct ls_probe_stats *ps = p->probes;
	cJSON *o = cJSON_AddObjectToObject(latscope, "probe_requests");
	if (!o)
		return;
	cJSON_AddNumberToObject(o, "sent", (double)ps->n);
	cJSON_AddNumberToObject(o, "completed", (double)ps->completed);
	cJSON_AddNumberToObject(o, "failed", (double)ps->failed);
	add_probe_stat(o, "ttft_ms", &ps->ttft);
	add_probe_stat(o, "e2el_ms", &ps->e2el);
	if (p->probe_n_split) {
		cJSON_AddNumberToObject(o, "n_split", (double)p->probe_n_split);
		add_parts_ms(o, "ttft_split_mean_ms", p->probe_ttft_split_ms);
	}
	cJSON *list = cJSON_AddArrayToObject(o, "requests");
	for (size_t i = 0; list && i < ps->n; i++) {
		const struct ls_request *r = p->probe_recs[i];
		cJSON *e = cJSON_CreateObject();
		if (!e || !cJSON_AddItemToArray(list, e)) {
			cJSON_Delete(e);
			return;
		}
		cJSON_AddNumberToObject(e, "id", (double)r->id);
		cJSON_AddNumberToObject(e, "scheduled_ns", (double)r->scheduled_ns);
		cJSON_AddNumberToObject(e, "started_ns", (double)r->started_ns);
		cJSON_AddNumberToObject(e, "finished_ns", (double)r->finished_ns);
		add_num_or_null(e, "ttft_ms", ps->ttft_s[i] * 1e3);
		add_num_or_null(e, "e2el_ms", ps->e2el_s[i] * 1e3);
		cJSON_AddStringToObject(e, "fail", ls_fail_name(r->fail));
		add_probe_parts(e, p, i);
	}
}

void ls_report_probe_text(FILE *out, const struct ls_peer_report *p)
{
	const struct ls_probe_stats *ps = p ? p->probes : NULL;
	if (!ps)
		return;
	fprintf(out, "%s\n", "------------------Probe Requests------------------");
	fprintf(out, "%-40s %-10zu\n", "Probe requests completed:", ps->completed);
	fprintf(out, "%-40s %-10zu\n", "Probe requests failed:", ps->failed);
	fprintf(out, "%-40s %-10.2f\n", "Median probe E2EL (ms):", ps->e2el.median_ms);
	fprintf(out, "%-40s %-10.2f\n", "P99 probe E2EL (ms):", ps->e2el.pct_ms[1]);
	fprintf(out, "%-40s %-10.2f\n", "Max probe E2EL (ms):", ps->e2el.max_ms);
	fprintf(out, "%-40s %-10.2f\n", "Median probe TTFT (ms):", ps->ttft.median_ms);
	fprintf(out, "%-40s %-10.2f\n", "P99 probe TTFT (ms):", ps->ttft.pct_ms[1]);
	fprintf(out, "%-40s %-10.2f\n", "Max probe TTFT (ms):", ps->ttft.max_ms);
	if (!p->probe_n_split)
		return;
	fprintf(out, "Probe TTFT split (mean ms, %zu probes, kernel stamps):", p->probe_n_split);
	for (int k = 0; k < LS_PART__COUNT; k++)
		if (p->probe_ttft_split_ms[k] != 0)
			fprintf(out, " %s %.2f", ls_part_name((enum ls_part)k), p->probe_ttft_split_ms[k]);
	fputc('\n', out);
}

/* A CLOCK_MONOTONIC stamp as Python's datetime.now().isoformat() would have printed it then. */
static void iso_time(uint64_t mono_ns, char *buf, size_t cap)
{
	struct timespec rt, mt;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mt);
	int64_t now_mono = (int64_t)mt.tv_sec * 1000000000 + mt.tv_nsec;
	int64_t real_ns = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec - (now_mono - (int64_t)mono_ns);
	time_t sec = (time_t)(real_ns / 1000000000);
	struct tm tm;
	char day[32];
	strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", localtime_r(&sec, &tm));
	snprintf(buf, cap, "%s.%06ld", day, (long)(real_ns % 1000000000 / 1000));
}

static void add_rps_event(cJSON *events, long rps, uint64_t at_ns)
{
	char when[64];
	cJSON *e = cJSON_CreateObject();
	iso_time(at_ns, when, sizeof(when));
	cJSON_AddNumberToObject(e, "rps", (double)rps);
	cJSON_AddStringToObject(e, "timestamp", when);
	cJSON_AddItemToArray(events, e);
}

void ls_peer_json_ramp_events(cJSON *root, const struct ls_run *run, const struct ls_report_ctx *ctx)
{
	const struct ls_peer_report *p = ctx->peer;
	if (!p || !p->ramp || !run)
		return;
	size_t n = run->n_requests - run->n_warmup;
	const struct ls_request *measured = run->requests + run->n_warmup;
	cJSON *events = cJSON_AddArrayToObject(root, "rps_change_events");
	long last = (long)p->ramp_start_rps;
	add_rps_event(events, last, run->start_ns);
	for (size_t id = 0; events && id < n; id++) { /* in dispatch order: request ids go out in order */
		const struct ls_request *r = NULL;
		for (size_t k = 0; k < n && !r; k++)
			r = measured[(id + k) % n].id == id ? &measured[(id + k) % n] : NULL;
		long now = (long)ls_ramp_rate((enum ls_ramp)p->ramp_kind, p->ramp_start_rps, p->ramp_end_rps, id, n);
		for (long rps = last + 1; r && rps <= now; rps++)
			add_rps_event(events, rps, r->started_ns ? r->started_ns : r->scheduled_ns);
		if (now > last)
			last = now;
	}
}

void ls_peer_json_request(cJSON *latscope, const struct ls_report_ctx *ctx)
{
	cJSON *req = ctx->peer && ctx->peer->request_json ? cJSON_Parse(ctx->peer->request_json) : NULL;
	if (req)
		cJSON_AddItemToObject(latscope, "request", req);
	if (ctx->peer && ctx->peer->probes)
		add_probe_requests(latscope, ctx->peer);
}

int ls_report_append_line(const char *what, const char *path, const char *text)
{
	struct stat st;
	char *old = NULL;
	size_t old_len = 0;
	if (!stat(path, &st) && S_ISREG(st.st_mode) && !(old = ls_read_file(path, "latscope", what, &old_len)))
		return -EIO; /* said why */
	struct ls_outfile f;
	int err = ls_outfile_open(&f, what, path);
	if (!err) {
		if (old_len) { /* the file again, then the new line: whole or not at all */
			fwrite(old, 1, old_len, f.f);
			if (old[old_len - 1] != '\n')
				fputc('\n', f.f);
		}
		fputs(text, f.f);
		fputc('\n', f.f);
		err = ls_outfile_commit(&f);
	}
	free(old);
	return err;
}

/* mean/median/std/p90/p95/p99 (and max) of v[0..n) seconds, in ms, as SGLang's keys for name:
 * metrics' summary (ls_stat_compute_at), so the line and latscope's own report agree. */
static void add_stats(cJSON *root, const char *name, double *v, size_t n, int with_max)
{
	static const double pcts[] = { 90, 95, 99 };
	struct ls_stat st;
	char key[64];
	ls_stat_compute_at(v, n, pcts, sizeof(pcts) / sizeof(pcts[0]), &st);
	snprintf(key, sizeof(key), "mean_%s_ms", name);
	cJSON_AddNumberToObject(root, key, st.mean_ms);
	snprintf(key, sizeof(key), "median_%s_ms", name);
	cJSON_AddNumberToObject(root, key, st.median_ms);
	snprintf(key, sizeof(key), "std_%s_ms", name);
	cJSON_AddNumberToObject(root, key, st.std_ms); /* np.std: population */
	for (size_t k = 0; k < st.n_pcts; k++) {
		snprintf(key, sizeof(key), "p%.0f_%s_ms", pcts[k], name);
		cJSON_AddNumberToObject(root, key, st.pct_ms[k]);
	}
	if (with_max) {
		snprintf(key, sizeof(key), "max_%s_ms", name);
		cJSON_AddNumberToObject(root, key, st.max_ms);
	}
}

/* SGLang's latency blocks over successful requests: e2e, ttft, tpot (requests with more than
 * one output token), itl (every gap). 0 or -ENOMEM. */
static int add_latencies(cJSON *root, const struct ls_metrics *m)
{
	size_t n_itl = m->n ? m->itl_off[m->n] : 0;
	double *e2e = malloc((m->n + 1) * sizeof(double)), *ttft = malloc((m->n + 1) * sizeof(double));
	double *tpot = malloc((m->n + 1) * sizeof(double)), *itl = malloc((n_itl + 1) * sizeof(double));
	size_t k = 0, kt = 0, ki = 0;
	int rc = e2e && ttft && tpot && itl ? 0 : -ENOMEM;
	for (size_t i = 0; !rc && i < m->n; i++) {
		if (!m->ok[i])
			continue;
		e2e[k] = m->e2els_s[i];
		ttft[k++] = m->ttfts_s[i];
		if (m->output_lens[i] > 1)
			tpot[kt++] = (m->e2els_s[i] - m->ttfts_s[i]) / (m->output_lens[i] - 1);
		for (size_t j = m->itl_off[i]; j < m->itl_off[i + 1]; j++)
			itl[ki++] = m->itl_pool[j];
	}
	if (!rc) {
		add_stats(root, "e2e_latency", e2e, k, 0);
		add_stats(root, "ttft", ttft, k, 0);
		add_stats(root, "tpot", tpot, kt, 0);
		add_stats(root, "itl", itl, ki, 1);
	}
	free(e2e);
	free(ttft);
	free(tpot);
	free(itl);
	return rc;
}

/* result_details: per measured request, in run order. */
static void add_details(cJSON *root, const struct ls_metrics *m, const struct ls_run *run)
{
	ls_report_json_lens_ttfts_itls(root, m);
	ls_report_json_texts_errors(root, m, run, "ok: no token");
}

/* The arguments SGLang copies into its line. */
static void add_args(cJSON *root, const struct ls_report_ctx *ctx)
{
	const struct ls_peer_report *p = ctx->peer;
	if (p && p->tag)
		cJSON_AddStringToObject(root, "tag", p->tag);
	else
		cJSON_AddNullToObject(root, "tag");
	cJSON_AddStringToObject(root, "backend", ctx->backend ? ctx->backend : "");
	cJSON_AddStringToObject(root, "dataset_name", p && p->dataset_name ? p->dataset_name : "");
	/* json.dumps writes float("inf") as Infinity, which Python's json.loads reads back */
	char rate[40];
	ls_py_float(ctx->request_rate, rate, sizeof(rate)); /* a Python float: 100.0 */
	if (isfinite(ctx->request_rate))
		cJSON_AddRawToObject(root, "request_rate", rate);
	else
		cJSON_AddRawToObject(root, "request_rate", "Infinity");
	if (ctx->max_concurrency)
		cJSON_AddNumberToObject(root, "max_concurrency", ctx->max_concurrency);
	else
		cJSON_AddNullToObject(root, "max_concurrency");
	if (p && p->sharegpt_output_len)
		cJSON_AddNumberToObject(root, "sharegpt_output_len", p->sharegpt_output_len);
	else
		cJSON_AddNullToObject(root, "sharegpt_output_len");
	cJSON_AddNumberToObject(root, "random_input_len", p ? p->random_input_len : 0);
	cJSON_AddNumberToObject(root, "random_output_len", p ? p->random_output_len : 0);
	cJSON_AddNumberToObject(root, "random_range_ratio", p ? p->random_range_ratio : 0);
	cJSON_AddNullToObject(root, "server_info");
}

static void add_totals(cJSON *root, const struct ls_metrics *m)
{
	double dur = m->duration_s > 0 ? m->duration_s : 0;
	cJSON_AddNumberToObject(root, "duration", m->duration_s);
	cJSON_AddNumberToObject(root, "completed", (double)m->completed);
	cJSON_AddNumberToObject(root, "total_input_tokens", (double)m->total_input);
	cJSON_AddNumberToObject(root, "total_input_text_tokens", (double)m->total_input);
	cJSON_AddNumberToObject(root, "total_input_vision_tokens", 0); /* text generation only */
	cJSON_AddNumberToObject(root, "total_output_tokens", (double)m->total_output);
	/* no tokenizer here: the server's own counts stand for the retokenized ones */
	cJSON_AddNumberToObject(root, "total_output_tokens_retokenized", (double)m->total_output);
	cJSON_AddNumberToObject(root, "request_throughput", m->request_throughput);
	cJSON_AddNumberToObject(root, "input_throughput", dur ? (double)m->total_input / dur : 0);
	cJSON_AddNumberToObject(root, "output_throughput", m->output_throughput);
	cJSON_AddNumberToObject(root, "total_throughput", m->total_token_throughput);
}

int ls_report_sglang_write(const char *path, const struct ls_metrics *m, const struct ls_run *run,
			   const struct ls_report_ctx *ctx)
{
	cJSON *root = cJSON_CreateObject();
	int rc = root ? 0 : -ENOMEM;
	if (!rc) {
		add_args(root, ctx);
		add_totals(root, m);
		rc = add_latencies(root, m);
	}
	if (!rc) {
		cJSON_AddNumberToObject(root, "concurrency", m->littles_concurrency);
		if (ctx->spec && ctx->spec->has_avg)
			cJSON_AddNumberToObject(root, "accept_length", ctx->spec->avg_accept_len);
		else
			cJSON_AddNullToObject(root, "accept_length");
		cJSON_AddNumberToObject(root, "max_output_tokens_per_s", m->peak_output_tps);
		cJSON_AddNumberToObject(root, "max_concurrent_requests", m->peak_concurrency);
		if (ctx->peer && ctx->peer->output_details)
			add_details(root, m, run);
	}
	char *text = rc ? NULL : cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	if (!text) {
		fprintf(stderr, "latscope: out of memory building SGLang's result line\n");
		return -ENOMEM;
	}
	rc = ls_report_append_line("--output-file", path, text);
	free(text);
	return rc;
}

void ls_report_print_requests(FILE *out, const struct ls_metrics *m, const struct ls_run *run)
{
	for (size_t i = 0, k = 0; run && i < run->n_requests && k < m->n; i++) {
		const struct ls_request *r = &run->requests[i];
		if (r->warmup)
			continue;
		fprintf(out, "rid=%llu ttft_ms=%.2f latency_ms=%.2f input_len=%u output_len=%u %s%s%s\n",
			(unsigned long long)r->id, m->ttfts_s[k] * 1e3, m->e2els_s[k] * 1e3, m->input_lens[k],
			m->output_lens[k], m->ok[k] ? "ok" : "failed", m->ok[k] ? "" : ": ",
			m->ok[k] ? "" : ls_fail_name(r->fail));
		k++;
	}
}
