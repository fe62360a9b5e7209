/* report_text.c — the text block (see report.h). The first part copies `vllm bench serve`'s
 * layout ("{:<40} {:<10.2f}"); latscope's own lines follow under their own rule. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "report/report.h"
#include "base/json_file.h"

#define W 50

static void rule(FILE *out, const char *title, char fill)
{
	size_t len = title ? strlen(title) : 0;
	size_t left = len < W ? (W - len) / 2 : 0, right = len < W ? W - len - left : 0;
	for (size_t i = 0; i < left; i++)
		fputc(fill, out);
	if (title)
		fputs(title, out);
	for (size_t i = 0; i < right; i++)
		fputc(fill, out);
	fputc('\n', out);
}

static void line_f(FILE *out, const char *label, double v)
{
	fprintf(out, "%-40s %-10.2f\n", label, v);
}

static void line_u(FILE *out, const char *label, unsigned long long v)
{
	fprintf(out, "%-40s %-10llu\n", label, v);
}

static void line_s(FILE *out, const char *label, const char *v)
{
	fprintf(out, "%-40s %s\n", label, v);
}

/* "99" for 99.0, "99.9" otherwise (Python's str of the percentile). */
static void pct_word(char *buf, size_t cap, double p)
{
	if (p == floor(p))
		snprintf(buf, cap, "%.0f", p);
	else
		snprintf(buf, cap, "%g", p);
}

/* vLLM's process_one_metric block (SGLang prints the same shape), at the percentiles the
 * stat was computed at; show_max adds SGLang's "Max ITL" line. */
static void metric_block(FILE *out, const char *header, const char *name, const struct ls_stat *s, int show_max)
{
	char label[96], pw[32];
	rule(out, header, '-');
	snprintf(label, sizeof(label), "Mean %s (ms):", name);
	line_f(out, label, s->mean_ms);
	snprintf(label, sizeof(label), "Median %s (ms):", name);
	line_f(out, label, s->median_ms);
	for (size_t k = 0; k < s->n_pcts; k++) {
		if (s->pcts[k] == 50.0)
			continue; /* the median line says it */
		pct_word(pw, sizeof(pw), s->pcts[k]);
		snprintf(label, sizeof(label), "P%s %s (ms):", pw, name);
		line_f(out, label, s->pct_ms[k]);
	}
	if (show_max) {
		snprintf(label, sizeof(label), "Max %s (ms):", name);
		line_f(out, label, s->max_ms);
	}
}

/* One compact latscope line: mean, median and the profile's percentiles. */
static void stat_line(FILE *out, const char *label, const struct ls_stat *s)
{
	char pw[32];
	fprintf(out, "%-40s mean %.2f  median %.2f", label, s->mean_ms, s->median_ms);
	for (size_t k = 0; k < s->n_pcts; k++) {
		if (s->pcts[k] == 50.0)
			continue;
		pct_word(pw, sizeof(pw), s->pcts[k]);
		fprintf(out, "  P%s %.2f", pw, s->pct_ms[k]);
	}
	fprintf(out, "  max %.2f  (n=%zu)\n", s->max_ms, s->n);
}


/* sglang.bench_serving's result block (python/sglang/bench_serving.py, benchmark()). */
static void sglang_block(FILE *out, const struct ls_metrics *m, const struct ls_report_ctx *ctx)
{
	char buf[64];
	rule(out, " Serving Benchmark Result ", '=');
	line_s(out, "Backend:", ctx->backend ? ctx->backend : "?");
	ls_py_float(ctx->request_rate, buf, sizeof(buf)); /* Python's str() of a float: 20.0, 0.1, inf */
	line_s(out, "Traffic request rate:", buf);
	if (ctx->max_concurrency)
		line_u(out, "Max request concurrency:", ctx->max_concurrency);
	else
		line_s(out, "Max request concurrency:", "not set");
	line_u(out, "Successful requests:", m->completed);
	line_f(out, "Benchmark duration (s):", m->duration_s);
	line_u(out, "Total input tokens:", m->total_input);
	line_u(out, "Total generated tokens:", m->total_output);
	line_f(out, "Request throughput (req/s):", m->request_throughput);
	line_f(out, "Input token throughput (tok/s):", m->duration_s > 0 ? (double)m->total_input / m->duration_s : 0);
	line_f(out, "Output token throughput (tok/s):", m->output_throughput);
	line_f(out, "Peak output token throughput (tok/s):", m->peak_output_tps);
	line_u(out, "Peak concurrent requests:", m->peak_concurrency);
	line_f(out, "Total token throughput (tok/s):", m->total_token_throughput);
	line_f(out, "Concurrency:", m->littles_concurrency);
	if (ctx->spec && ctx->spec->has_avg && ctx->spec->avg_accept_len > 0)
		line_f(out, "Accept length:", ctx->spec->avg_accept_len);
	if (ctx->percentile_metrics & LS_PM_E2EL)
		metric_block(out, "End-to-End Latency", "E2E Latency", &m->e2el, 0);
	if (ctx->percentile_metrics & LS_PM_TTFT)
		metric_block(out, "Time to First Token", "TTFT", &m->ttft, 0);
	if (ctx->percentile_metrics & LS_PM_TPOT)
		metric_block(out, "Time per Output Token (excl. 1st token)", "TPOT", &m->tpot, 0);
	if (ctx->percentile_metrics & LS_PM_ITL)
		metric_block(out, "Inter-Token Latency", "ITL", &m->itl, m->rules.itl_max);
	rule(out, NULL, '=');
}

static const char *clock_story(enum ls_origin c)
{
	switch (c) {
	case LS_ORIGIN_SCHEDULED: return "scheduled (the arrival process said go; includes slot wait)";
	case LS_ORIGIN_ADMITTED: return "admitted (got a concurrency slot)";
	case LS_ORIGIN_STARTED: return "started (handed to libcurl, after the slot: where vLLM's and SGLang's clients take st)";
	default: return "?";
	}
}

static void tokens_per_frame(FILE *out, const struct ls_metrics *m)
{
	uint64_t known = 0;
	for (int b = 0; b <= LS_TPF_MAX; b++)
		known += m->tpf_hist[b];
	fprintf(out, "%-40s ", "Tokens per frame:");
	if (!known) {
		if (m->tpf_usage_mean > 0)
			fprintf(out, "mean %.2f from usage (frames carry no counts; %llu frames)\n", m->tpf_usage_mean,
				(unsigned long long)m->tpf_unknown);
		else
			fprintf(out, "unknown (frames carry no counts; %llu frames)\n", (unsigned long long)m->tpf_unknown);
		return;
	}
	int shown = 0;
	for (int b = 0; b <= LS_TPF_MAX; b++) {
		if (!m->tpf_hist[b])
			continue;
		if (shown++ == 8) {
			fprintf(out, " ...");
			break;
		}
		fprintf(out, "%s%d%s: %.1f%%", shown > 1 ? "  " : "", b, b == LS_TPF_MAX ? "+" : "",
			100.0 * (double)m->tpf_hist[b] / (double)known);
	}
	fprintf(out, "  (mean %.2f", m->tpf_mean);
	if (m->tpf_unknown)
		fprintf(out, "; %llu frames without a count", (unsigned long long)m->tpf_unknown);
	fprintf(out, ")\n");
}

static void failures(FILE *out, const struct ls_metrics *m)
{
	fprintf(out, "%-40s ", "Failed requests by reason:");
	if (!m->failed) {
		fprintf(out, "none\n");
		return;
	}
	char reasons[1024];
	ls_metrics_fail_list(m, reasons, sizeof(reasons));
	fprintf(out, "%s (of %zu; latencies above are of the %zu that succeeded)\n", reasons, m->n_measured, m->completed);
}

static void spec_block(FILE *out, const struct ls_spec_stats *s)
{
	char label[64];
	if (s->has) {
		rule(out, "Speculative Decoding", '-');
		line_f(out, "Acceptance rate (%):", s->acceptance_rate_pct);
		line_f(out, "Acceptance length:", s->acceptance_length);
		line_u(out, "Drafts:", s->drafts);
		line_u(out, "Draft tokens:", s->draft_tokens);
		line_u(out, "Accepted tokens:", s->accepted);
		if (s->n_pos) {
			fprintf(out, "Per-position acceptance (%%):\n");
			for (int p = 0; p < s->n_pos; p++) {
				snprintf(label, sizeof(label), "  Position %d:", p);
				line_f(out, label, s->per_pos_rate[p] * 100.0);
			}
		}
	} else if (s->has_avg && s->avg_accept_len > 1.0 + 1e-9) { /* 1.0 = no speculation */
		rule(out, "Speculative Decoding", '-');
		line_f(out, "Acceptance length (server avg):", s->avg_accept_len);
	}
}

/* A server that stopped accepting connections mid-run (ls_run.server_gone_ns). */
static void server_gone(FILE *out, const struct ls_report_ctx *ctx)
{
	if (!ctx->server_gone)
		return;
	char gone[96];
	snprintf(gone, sizeof(gone), "at t=%.1f s; %zu requests failed to connect since", ctx->server_gone_at_s,
		 ctx->n_connect_failed_gone);
	line_s(out, "Server stopped accepting connections:", gone);
}

/* "a+b" of the engines (or their fields) in the bit set. */
static void engine_names(char *buf, size_t cap, unsigned sources, const char *(*name)(int))
{
	size_t len = 0;
	buf[0] = 0;
	for (int e = 1; e < LS_ENGINE__COUNT; e++)
		if (sources & (1u << e))
			len += (size_t)snprintf(buf + len, len < cap ? cap - len : 0, "%s%s", len ? "+" : "", name(e));
}

/* A part of the engine's account, when some request gave it. */
static void engine_part(FILE *out, const char *label, const struct ls_stat *s)
{
	if (s->n)
		stat_line(out, label, s);
}

/* The engine's own account of its requests, each part labelled with the fields it came from,
 * beside latscope's clocks. */
static void engine_account(FILE *out, const struct ls_metrics *m)
{
	char label[96], fields[64], engines[64], n[192];
	if (m->engine_n) {
		engine_names(fields, sizeof(fields), m->engine_sources, ls_engine_fields_name);
		engine_names(engines, sizeof(engines), m->engine_sources, ls_engine_source_name);
		snprintf(label, sizeof(label), "Engine's own account (%s):", fields);
		int len = snprintf(n, sizeof(n), "%zu requests, %s", m->engine_n, engines);
		if (m->engine_prompt_tokens || m->engine_cached_tokens) /* TensorRT-LLM gives no count */
			snprintf(n + len, sizeof(n) - (size_t)len, ", %llu prompt tokens (%llu from its cache)",
				 (unsigned long long)m->engine_prompt_tokens, (unsigned long long)m->engine_cached_tokens);
		line_s(out, label, n);
		engine_part(out, "Engine queue (ms):", &m->engine_queue);
		engine_part(out, "Engine prompt compute (ms):", &m->engine_prompt);
		engine_part(out, m->engine_outside_has_queue ? "TTFT outside its queue+prefill (ms):" : "TTFT outside it (ms):",
			    &m->ttft_outside_prompt);
		engine_part(out, "Engine decode per token (ms):", &m->engine_decode_per_token);
		engine_part(out, "Engine end-to-end (ms):", &m->engine_e2e);
	}
	if (m->engine_bad_values) {
		snprintf(n, sizeof(n), "%zu malformed values ignored, in %zu requests (strings, negatives, NaN, over a day)",
			 m->engine_bad_values, m->engine_bad_requests);
		line_s(out, "Engine's fields:", n);
	}
}

/* --preconnect: the connections opened before the clock (ls_run.n_preconnected). */
static void preconnected(FILE *out, const struct ls_report_ctx *ctx)
{
	if (!ctx->preconnected)
		return;
	char pc[96];
	snprintf(pc, sizeof(pc), "%u connections before the clock, in %.1f ms", ctx->n_preconnected,
		 ctx->preconnect_ms);
	line_s(out, "Preconnected:", pc);
}

/* `vllm bench serve`'s result block. */
static void vllm_block(FILE *out, const struct ls_metrics *m, const struct ls_report_ctx *ctx)
{
	const struct ls_read_rules *rules = &m->rules;
	rule(out, " Serving Benchmark Result ", '=');
	line_u(out, "Successful requests:", m->completed);
	if (rules->failures_in_headline)
		line_u(out, "Failed requests:", m->failed);
	if (ctx->max_concurrency)
		line_u(out, "Maximum request concurrency:", ctx->max_concurrency);
	if (isfinite(ctx->request_rate) && ctx->request_rate > 0)
		line_f(out, "Request rate configured (RPS):", ctx->request_rate);
	line_f(out, "Benchmark duration (s):", m->duration_s);
	line_u(out, "Total input tokens:", m->total_input);
	line_u(out, "Total generated tokens:", m->total_output);
	line_f(out, "Request throughput (req/s):", m->request_throughput);
	if (m->has_goodput)
		line_f(out, "Request goodput (req/s):", m->request_goodput);
	line_f(out, "Output token throughput (tok/s):", m->output_throughput);
	line_f(out, "Peak output token throughput (tok/s):", m->peak_output_tps);
	line_f(out, "Peak concurrent requests:", m->peak_concurrency);
	line_f(out, "Total Token throughput (tok/s):", m->total_token_throughput);
	if (ctx->percentile_metrics & LS_PM_TTFT)
		metric_block(out, "Time to First Token", "TTFT", &m->ttft, 0);
	if (ctx->percentile_metrics & LS_PM_TPOT)
		metric_block(out, "Time per Output Token (excl. 1st token)", "TPOT", &m->tpot, 0);
	if (ctx->percentile_metrics & LS_PM_ITL)
		metric_block(out, "Inter-token Latency", "ITL", &m->itl, rules->itl_max);
	if (ctx->percentile_metrics & LS_PM_E2EL)
		metric_block(out, "End-to-end Latency", "E2EL", &m->e2el, 0);
	if (ctx->show_client_queue && ctx->max_concurrency) {
		metric_block(out, "Client-side Queueing", "Client Queue Time", &m->queue, 0);
		if (isfinite(ctx->request_rate))
			metric_block(out, "Queue-inclusive End-to-end Latency", "E2EL incl. Client Queue",
				     &m->e2el_by_clock[LS_ORIGIN_SCHEDULED], 0);
	}
	if (ctx->spec)
		spec_block(out, ctx->spec);
	rule(out, NULL, '=');
}

/* latscope's own lines: the rules the block above was read under, then every clock. */
static void latscope_block(FILE *out, const struct ls_metrics *m, const struct ls_report_ctx *ctx)
{
	const struct ls_read_rules *rules = &m->rules;
	char buf[256];
	rule(out, " latscope ", '-');
	snprintf(buf, sizeof(buf), "%s (%s)", ctx->profile ? ctx->profile : "?",
		 ctx->profile_source ? ctx->profile_source : "built-in");
	line_s(out, "Profile:", buf);
	line_s(out, "Clock of TTFT and E2EL above:", clock_story(rules->origin));
	if (ctx->profile_description && *ctx->profile_description)
		line_s(out, "Profile rules are:", ctx->profile_description);
	snprintf(buf, sizeof(buf), "TTFT gate %s, ITL per %s, E2EL ends at %s, output tokens from %s",
		 ls_gate_name(rules->ttft_gate), ls_itl_mode_name(rules->itl_mode), ls_e2el_end_name(rules->e2el_end),
		 ls_out_tokens_name(rules->out_tokens));
	line_s(out, "Read rules:", buf);
	if (ctx->arrival) {
		/* Sent all at once, the starts are microseconds apart: a "rate" of them means nothing. */
		if (!isfinite(ctx->request_rate) && !(ctx->peer && ctx->peer->ramp)) /* a ramp-up paces them */
			snprintf(buf, sizeof(buf), "%s: all requests at once", ctx->arrival);
		else if (m->realised_rate > 0)
			snprintf(buf, sizeof(buf), "%s, realised %.2f req/s of started requests", ctx->arrival,
				 m->realised_rate);
		else
			snprintf(buf, sizeof(buf), "%s", ctx->arrival);
		line_s(out, "Arrivals:", buf);
	}
	stat_line(out, "Slot wait, admitted - scheduled (ms):", &m->slot_wait);
	stat_line(out, "Dispatch, started - admitted (ms):", &m->dispatch);
	for (int c = 0; c < LS_ORIGIN__COUNT; c++) {
		snprintf(buf, sizeof(buf), "TTFT from %s (ms):", ls_origin_name((enum ls_origin)c));
		stat_line(out, buf, &m->ttft_by_clock[c]);
	}
	for (int c = 0; c < LS_ORIGIN__COUNT; c++) {
		snprintf(buf, sizeof(buf), "E2EL from %s (ms):", ls_origin_name((enum ls_origin)c));
		stat_line(out, buf, &m->e2el_by_clock[c]);
	}
	stat_line(out, "ITL per frame, chunk (ms):", &m->itl_frame);
	stat_line(out, "ITL per token, amortised (ms):", &m->itl_token);
	engine_account(out, m);
	line_f(out, "Concurrency by Little's law:", m->littles_concurrency);
	tokens_per_frame(out, m);
	failures(out, m);
	if (ctx->record_path)
		line_s(out, "Per-request records:", ctx->record_path);
	if (ctx->interrupted)
		line_s(out, "Interrupted:", "yes: the numbers cover the requests that finished");
	server_gone(out, ctx);
	preconnected(out, ctx);
	rule(out, NULL, '=');
}

void ls_report_text(FILE *out, const struct ls_metrics *m, const struct ls_report_ctx *ctx)
{
	if (ctx->layout == LS_LAYOUT_SGLANG)
		sglang_block(out, m, ctx);
	else
		vllm_block(out, m, ctx);
	latscope_block(out, m, ctx);
	ls_gauges_print(out, ctx->gauges, ctx->run_start_ns);
}

void ls_checks_print(FILE *out, const struct ls_checks *c)
{
	fprintf(out, "------- Checks before you believe a number -------\n");
	for (size_t k = 0; k < c->n; k++)
		fprintf(out, "%-13s %s\n", ls_check_name(c->c[k].kind), c->c[k].text);
	fprintf(out, "==================================================\n");
}
