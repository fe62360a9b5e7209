/* report_json.c — the --save-result file: vLLM's keys for the metrics both tools share
 * (vllm/benchmarks/serve.py: result dict + process_one_metric keys), latscope's under
 * "latscope". Built with cJSON. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/json_file.h"
#include "report/report.h"
#include "report/peer_report.h"
#include "base/outfile.h"

void ls_report_pct_key(char *buf, size_t cap, const char *prefix, double p, const char *suffix)
{
	if (p == floor(p))
		snprintf(buf, cap, "%s%.0f%s", prefix, p, suffix);
	else
		snprintf(buf, cap, "%s%g%s", prefix, p, suffix);
}

/* mean_X_ms, median_X_ms, std_X_ms, pNN_X_ms at the top level, as vLLM writes them. */
static void add_vllm_metric(cJSON *root, const char *name, const struct ls_stat *s, const struct ls_read_rules *r)
{
	char key[96];
	snprintf(key, sizeof(key), "mean_%s_ms", name);
	cJSON_AddNumberToObject(root, key, s->mean_ms);
	snprintf(key, sizeof(key), "median_%s_ms", name);
	cJSON_AddNumberToObject(root, key, s->median_ms);
	snprintf(key, sizeof(key), "std_%s_ms", name);
	cJSON_AddNumberToObject(root, key, s->std_ms);
	for (size_t k = 0; k < s->n_pcts; k++) {
		char suffix[64];
		snprintf(suffix, sizeof(suffix), "_%s_ms", name);
		ls_report_pct_key(key, sizeof(key), "p", s->pcts[k], suffix);
		cJSON_AddNumberToObject(root, key, s->pct_ms[k]);
	}
	if (r->itl_max && !strcmp(name, "itl"))
		cJSON_AddNumberToObject(root, "max_itl_ms", s->max_ms); /* SGLang's key */
}

static cJSON *stat_obj(const struct ls_stat *s, const struct ls_read_rules *r)
{
	(void)r; /* the stat carries the percentiles it was computed at */
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	char key[64];
	cJSON_AddNumberToObject(o, "n", (double)s->n);
	cJSON_AddNumberToObject(o, "mean_ms", s->mean_ms);
	cJSON_AddNumberToObject(o, "median_ms", s->median_ms);
	cJSON_AddNumberToObject(o, "std_ms", s->std_ms);
	cJSON_AddNumberToObject(o, "min_ms", s->min_ms);
	cJSON_AddNumberToObject(o, "max_ms", s->max_ms);
	for (size_t k = 0; k < s->n_pcts; k++) {
		ls_report_pct_key(key, sizeof(key), "p", s->pcts[k], "_ms");
		cJSON_AddNumberToObject(o, key, s->pct_ms[k]);
	}
	return o;
}

/* --preconnect: {"connections": N, "ms": X} opened before the clock; null when not asked. */
static void add_preconnect(cJSON *o, const struct ls_report_ctx *ctx)
{
	if (!ctx->preconnected) {
		cJSON_AddNullToObject(o, "preconnect");
		return;
	}
	cJSON *pc = cJSON_AddObjectToObject(o, "preconnect");
	cJSON_AddNumberToObject(pc, "connections", ctx->n_preconnected);
	cJSON_AddNumberToObject(pc, "ms", ctx->preconnect_ms);
}

/* A part of the engine's account: its stat, or null when no request gave it. */
static void add_engine_part(cJSON *e, const char *key, const struct ls_stat *s, const struct ls_read_rules *r)
{
	if (s->n)
		cJSON_AddItemToObject(e, key, stat_obj(s, r));
	else
		cJSON_AddNullToObject(e, key);
}

/* "engine": the engine's own account of its requests (docs/engine.md), when they had one or
 * sent malformed values: which engines' fields, each part's stat (null: not given). */
static void add_engine(cJSON *o, const struct ls_metrics *m)
{
	if (!m->engine_n && !m->engine_bad_values)
		return;
	cJSON *e = cJSON_AddObjectToObject(o, "engine");
	cJSON_AddNumberToObject(e, "n", (double)m->engine_n);
	cJSON *src = cJSON_AddArrayToObject(e, "sources");
	for (int k = 1; src && k < LS_ENGINE__COUNT; k++)
		if (m->engine_sources & (1u << k)) {
			cJSON *one = cJSON_CreateObject();
			cJSON_AddStringToObject(one, "engine", ls_engine_source_name(k));
			cJSON_AddStringToObject(one, "fields", ls_engine_fields_name(k));
			cJSON_AddItemToArray(src, one);
		}
	cJSON_AddNumberToObject(e, "prompt_tokens", (double)m->engine_prompt_tokens);
	cJSON_AddNumberToObject(e, "cached_tokens", (double)m->engine_cached_tokens);
	add_engine_part(e, "queue", &m->engine_queue, &m->rules);
	add_engine_part(e, "prompt", &m->engine_prompt, &m->rules);
	add_engine_part(e, "ttft_outside_prompt", &m->ttft_outside_prompt, &m->rules);
	cJSON_AddBoolToObject(e, "ttft_outside_excludes_queue", m->engine_n && m->engine_outside_has_queue);
	add_engine_part(e, "decode_per_token", &m->engine_decode_per_token, &m->rules);
	add_engine_part(e, "e2e", &m->engine_e2e, &m->rules);
	cJSON_AddNumberToObject(e, "bad_values", (double)m->engine_bad_values);
	cJSON_AddNumberToObject(e, "bad_requests", (double)m->engine_bad_requests);
}

static cJSON *latscope_obj(const struct ls_metrics *m, const struct ls_report_ctx *ctx)
{
	const struct ls_read_rules *r = &m->rules;
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "profile", ctx->profile ? ctx->profile : "");
	cJSON_AddStringToObject(o, "profile_source", ctx->profile_source ? ctx->profile_source : "");
	cJSON *rules = cJSON_AddObjectToObject(o, "rules");
	if (rules) {
		cJSON_AddStringToObject(rules, "clock", ls_origin_name(r->origin));
		cJSON_AddStringToObject(rules, "ttft_gate", ls_gate_name(r->ttft_gate));
		cJSON_AddStringToObject(rules, "itl", ls_itl_mode_name(r->itl_mode));
		cJSON_AddStringToObject(rules, "e2el_end", ls_e2el_end_name(r->e2el_end));
		cJSON_AddStringToObject(rules, "out_tokens", ls_out_tokens_name(r->out_tokens));
		cJSON_AddBoolToObject(rules, "failures_in_headline", r->failures_in_headline);
		cJSON_AddBoolToObject(rules, "no_token_ok", r->no_token_ok);
		cJSON_AddBoolToObject(rules, "no_done_ok", r->no_done_ok);
		cJSON_AddItemToObject(rules, "percentiles", ls_json_doubles(r->percentiles, r->n_percentiles));
		if (r->n_itl_percentiles)
			cJSON_AddItemToObject(rules, "itl_percentiles",
					      ls_json_doubles(r->itl_percentiles, r->n_itl_percentiles));
	}
	cJSON_AddStringToObject(o, "arrival", ctx->arrival ? ctx->arrival : "");
	cJSON_AddStringToObject(o, "run_tag", ctx->run_tag ? ctx->run_tag : "");
	cJSON_AddNumberToObject(o, "realised_request_rate", m->realised_rate);
	cJSON_AddNumberToObject(o, "littles_law_concurrency", m->littles_concurrency);
	cJSON_AddNumberToObject(o, "peak_concurrency", m->peak_concurrency);
	cJSON_AddBoolToObject(o, "interrupted", ctx->interrupted);
	if (ctx->server_gone) {
		cJSON *gone = cJSON_AddObjectToObject(o, "server_gone");
		cJSON_AddNumberToObject(gone, "at_s", ctx->server_gone_at_s);
		cJSON_AddNumberToObject(gone, "connect_failures_since", (double)ctx->n_connect_failed_gone);
	}
	add_preconnect(o, ctx);
	cJSON_AddItemToObject(o, "slot_wait", stat_obj(&m->slot_wait, r));
	cJSON_AddItemToObject(o, "dispatch", stat_obj(&m->dispatch, r));
	cJSON_AddItemToObject(o, "client_queue", stat_obj(&m->queue, r));
	cJSON *ttft = cJSON_AddObjectToObject(o, "ttft_by_clock");
	cJSON *e2el = cJSON_AddObjectToObject(o, "e2el_by_clock");
	for (int c = 0; c < LS_ORIGIN__COUNT; c++) {
		cJSON_AddItemToObject(ttft, ls_origin_name((enum ls_origin)c), stat_obj(&m->ttft_by_clock[c], r));
		cJSON_AddItemToObject(e2el, ls_origin_name((enum ls_origin)c), stat_obj(&m->e2el_by_clock[c], r));
	}
	cJSON_AddItemToObject(o, "itl_frame", stat_obj(&m->itl_frame, r));
	cJSON_AddItemToObject(o, "itl_token", stat_obj(&m->itl_token, r));
	add_engine(o, m);
	cJSON *tpf = cJSON_AddObjectToObject(o, "tokens_per_frame");
	if (tpf) {
		double hist[LS_TPF_MAX + 1];
		for (int b = 0; b <= LS_TPF_MAX; b++)
			hist[b] = (double)m->tpf_hist[b];
		cJSON_AddItemToObject(tpf, "histogram", ls_json_doubles(hist, LS_TPF_MAX + 1));
		cJSON_AddNumberToObject(tpf, "unknown", (double)m->tpf_unknown);
		cJSON_AddNumberToObject(tpf, "mean", m->tpf_mean);
		cJSON_AddNumberToObject(tpf, "mean_from_usage", m->tpf_usage_mean);
	}
	cJSON *fails = cJSON_AddObjectToObject(o, "failures");
	for (int f = 1; fails && f < LS_FAIL__COUNT; f++)
		if (m->fail_counts[f])
			cJSON_AddNumberToObject(fails, ls_fail_name((enum ls_fail)f), (double)m->fail_counts[f]);
	if (fails && m->no_first_token)
		cJSON_AddNumberToObject(fails, "no_first_token", (double)m->no_first_token);
	cJSON_AddItemToObject(o, "slot_waits", ls_json_doubles(m->slot_waits_s, m->n));
	if (ctx->spec && ctx->spec->has_avg)
		cJSON_AddNumberToObject(o, "server_avg_spec_accept_length", ctx->spec->avg_accept_len);
	if (ctx->record_path)
		cJSON_AddStringToObject(o, "record_file", ctx->record_path);
	if (ctx->checks)
		cJSON_AddItemToObject(o, "checks", ls_checks_json(ctx->checks));
	ls_peer_json_request(o, ctx); /* sampling parameters and headers sent */
	if (ctx->gauges && ctx->gauges->on)
		cJSON_AddItemToObject(o, "server_metrics", ls_gauges_json(ctx->gauges, ctx->run_start_ns));
	return o;
}

/* The header vLLM's main() adds from its arguments. */
static void add_run_header(cJSON *root, const struct ls_report_ctx *ctx)
{
	cJSON_AddStringToObject(root, "date", ctx->date ? ctx->date : "");
	cJSON_AddStringToObject(root, "endpoint_type", ctx->backend ? ctx->backend : "");
	cJSON_AddStringToObject(root, "backend", ctx->backend ? ctx->backend : "");
	cJSON_AddStringToObject(root, "label", ctx->backend ? ctx->backend : "");
	cJSON_AddStringToObject(root, "model_id", ctx->model ? ctx->model : "");
	cJSON_AddStringToObject(root, "tokenizer_id", ctx->model ? ctx->model : "");
	cJSON_AddNumberToObject(root, "num_prompts", (double)ctx->num_prompts);
	char num[40];
	/* vLLM's rate and burstiness are Python floats: json.dump writes 20.0 and 1.0, not 20 and 1 */
	ls_py_float(ctx->request_rate, num, sizeof(num));
	if (isfinite(ctx->request_rate))
		cJSON_AddRawToObject(root, "request_rate", num);
	else
		cJSON_AddStringToObject(root, "request_rate", "inf");
	ls_py_float(ctx->burstiness, num, sizeof(num));
	cJSON_AddRawToObject(root, "burstiness", num);
	if (ctx->max_concurrency)
		cJSON_AddNumberToObject(root, "max_concurrency", ctx->max_concurrency);
	else
		cJSON_AddNullToObject(root, "max_concurrency");
	ls_peer_json_header(root, ctx); /* --label, --metadata, ramp-up */
}

/* vLLM's run totals and throughputs. */
static void add_totals(cJSON *root, const struct ls_metrics *m)
{
	cJSON_AddNumberToObject(root, "duration", m->duration_s);
	cJSON_AddNumberToObject(root, "completed", (double)m->completed);
	cJSON_AddNumberToObject(root, "failed", (double)m->failed);
	cJSON_AddNumberToObject(root, "total_input_tokens", (double)m->total_input);
	cJSON_AddNumberToObject(root, "total_output_tokens", (double)m->total_output);
	cJSON_AddNumberToObject(root, "request_throughput", m->request_throughput);
	if (m->has_goodput)
		cJSON_AddNumberToObject(root, "request_goodput", m->request_goodput);
	else
		cJSON_AddNullToObject(root, "request_goodput");
	cJSON_AddNumberToObject(root, "output_throughput", m->output_throughput);
	cJSON_AddNumberToObject(root, "total_token_throughput", m->total_token_throughput);
}

void ls_report_json_lens_ttfts_itls(cJSON *root, const struct ls_metrics *m)
{
	cJSON_AddItemToObject(root, "input_lens", ls_json_u32s(m->input_lens, m->n));
	cJSON_AddItemToObject(root, "output_lens", ls_json_u32s(m->output_lens, m->n));
	cJSON_AddItemToObject(root, "ttfts", ls_json_doubles(m->ttfts_s, m->n));
	cJSON *itls = cJSON_AddArrayToObject(root, "itls");
	for (size_t i = 0; itls && i < m->n; i++)
		cJSON_AddItemToArray(itls, ls_json_doubles(m->itl_pool + m->itl_off[i], m->itl_off[i + 1] - m->itl_off[i]));
}

void ls_report_json_texts_errors(cJSON *root, const struct ls_metrics *m, const struct ls_run *run,
				 const char *no_token)
{
	cJSON *texts = cJSON_AddArrayToObject(root, "generated_texts");
	cJSON *errors = cJSON_AddArrayToObject(root, "errors");
	for (size_t i = 0, k = 0; run && i < run->n_requests && k < m->n; i++) {
		const struct ls_request *req = &run->requests[i];
		if (req->warmup)
			continue;
		char err[LS_ERROR_MAX + 48] = "";
		if (!m->ok[k]) {
			if (req->fail != LS_OK)
				snprintf(err, sizeof(err), "%s: %s", ls_fail_name(req->fail), req->error);
			else
				snprintf(err, sizeof(err), "%s", no_token);
		}
		cJSON_AddItemToArray(texts, cJSON_CreateString(""));
		cJSON_AddItemToArray(errors, cJSON_CreateString(err));
		k++;
	}
}

/* vLLM's per-request arrays, in run order. */
static void add_per_request(cJSON *root, const struct ls_metrics *m, const struct ls_run *run)
{
	ls_report_json_lens_ttfts_itls(root, m);
	cJSON_AddItemToObject(root, "latencies", ls_json_doubles(m->e2els_s, m->n));
	cJSON_AddItemToObject(root, "start_times", ls_json_doubles(m->start_times_s, m->n));
	cJSON_AddItemToObject(root, "queue_times", ls_json_doubles(m->queue_times_s, m->n));
	ls_report_json_texts_errors(root, m, run, "no_first_token: never received a frame that starts TTFT");
}

/* vLLM's spec_decode_* keys, from the server's counters. */
static void add_spec_decode(cJSON *root, const struct ls_spec_stats *s)
{
	if (!s || !s->has)
		return;
	cJSON_AddNumberToObject(root, "spec_decode_acceptance_rate", s->acceptance_rate_pct);
	cJSON_AddNumberToObject(root, "spec_decode_acceptance_length", s->acceptance_length);
	cJSON_AddNumberToObject(root, "spec_decode_num_drafts", (double)s->drafts);
	cJSON_AddNumberToObject(root, "spec_decode_draft_tokens", (double)s->draft_tokens);
	cJSON_AddNumberToObject(root, "spec_decode_accepted_tokens", (double)s->accepted);
	cJSON_AddItemToObject(root, "spec_decode_per_position_acceptance_rates",
			      ls_json_doubles(s->per_pos_rate, (size_t)s->n_pos));
}

cJSON *ls_report_json_tree(const struct ls_metrics *m, const struct ls_run *run, const struct ls_report_ctx *ctx)
{
	const struct ls_read_rules *r = &m->rules;
	cJSON *root = cJSON_CreateObject();
	if (!root)
		return NULL;
	add_run_header(root, ctx);
	add_totals(root, m);
	add_per_request(root, m, run);
	cJSON_AddNumberToObject(root, "max_output_tokens_per_s", m->peak_output_tps);
	cJSON_AddNumberToObject(root, "max_concurrent_requests", m->peak_concurrency);
	if (ctx->percentile_metrics & LS_PM_TTFT)
		add_vllm_metric(root, "ttft", &m->ttft, r);
	if (ctx->percentile_metrics & LS_PM_TPOT)
		add_vllm_metric(root, "tpot", &m->tpot, r);
	if (ctx->percentile_metrics & LS_PM_ITL)
		add_vllm_metric(root, "itl", &m->itl, r);
	if (ctx->percentile_metrics & LS_PM_E2EL)
		add_vllm_metric(root, "e2el", &m->e2el, r);
	add_spec_decode(root, ctx->spec);
	ls_peer_json_ramp_events(root, run, ctx); /* vLLM's, under --ramp-up-strategy */
	cJSON_AddItemToObject(root, "latscope", latscope_obj(m, ctx));
	return root;
}

char *ls_report_json(const struct ls_metrics *m, const struct ls_run *run, const struct ls_report_ctx *ctx)
{
	cJSON *root = ls_report_json_tree(m, run, ctx);
	if (!root)
		return NULL;
	/* --append-result: one line per run, as vLLM's json.dump writes it */
	char *text = ctx->peer && ctx->peer->append_result ? cJSON_PrintUnformatted(root) : cJSON_Print(root);
	cJSON_Delete(root);
	return text;
}

int ls_report_json_write(const char *path, const struct ls_metrics *m, const struct ls_run *run,
			 const struct ls_report_ctx *ctx)
{
	char *text = ls_report_json(m, run, ctx);
	if (!text) {
		fprintf(stderr, "latscope: out of memory building the result JSON\n");
		return -ENOMEM;
	}
	if (ctx->peer && ctx->peer->append_result) {
		int rc = ls_report_append_line("--append-result", path, text);
		free(text);
		return rc;
	}
	struct ls_outfile f;
	int err = ls_outfile_open(&f, "result", path);
	if (!err) {
		fputs(text, f.f); /* an error sticks to the stream: commit reports it */
		fputc('\n', f.f);
		err = ls_outfile_commit(&f);
	}
	free(text);
	return err;
}
