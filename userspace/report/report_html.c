/* report_html.c — one run's page (html.h): what the run was, its headline numbers next to the
 * same numbers from `scheduled`, then the charts (report_html_charts.c), the failures and the
 * checks. Every number in a table is read from the result JSON's tree, as --save-result writes it. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/html_int.h"

static void kv_text(struct ls_page *p, const char *label, const char *value)
{
	lp_puts(p, "<tr><td>");
	lp_text(p, label);
	lp_puts(p, "</td><td>");
	lp_text(p, value && *value ? value : "—");
	lp_puts(p, "</td></tr>\n");
}

static const char *str_at(const cJSON *tree, const char *path)
{
	const cJSON *v = lp_get(tree, path);
	return cJSON_IsString(v) ? v->valuestring : "";
}

/* The title, and the few numbers a reader looks for first. */
static void section_title(struct ls_page *p, const struct ls_html_run *h, const cJSON *tree)
{
	const struct ls_report_ctx *c = h->ctx;
	const struct ls_read_rules *r = &h->m->rules;
	double top = r->n_percentiles ? r->percentiles[r->n_percentiles - 1] : 99;
	char key[64], label[96];
	lp_puts(p, "<h1>latscope: ");
	lp_text(p, c->model ? c->model : "run");
	lp_puts(p, " at ");
	lp_text(p, c->base_url ? c->base_url : "?");
	lp_puts(p, "</h1>\n<p class=\"sub\">profile ");
	lp_text(p, c->profile);
	lp_printf(p, " · clock <b>%s</b> · %zu requests, ", ls_origin_name(r->origin), h->m->n_measured);
	lp_printf(p, "<span class=\"%s\">", h->m->failed ? "bad" : "good");
	lp_num(p, "span", tree, "failed", 0);
	lp_printf(p, " failed</span>%s</p>\n<div class=\"big\">", c->interrupted ? " · <span class=\"bad\">interrupted</span>" : "");
	static const char *const labels[] = { "TTFT", "ITL", "E2EL" };
	for (int i = 0; i < 3; i++) {
		ls_report_pct_key(key, sizeof(key), "p", top, i == 1 ? "_itl_ms" : i ? "_e2el_ms" : "_ttft_ms");
		if (!lp_get(tree, key))
			continue;
		snprintf(label, sizeof(label), "%s P%g (ms, from %s)", labels[i], top, ls_origin_name(r->origin));
		lp_puts(p, "<div>");
		lp_num(p, "b", tree, key, 2);
		lp_printf(p, "<span>%s</span></div>", label);
	}
	lp_puts(p, "<div>");
	lp_num(p, "b", tree, "output_throughput", 1);
	lp_puts(p, "<span>output tokens/s</span></div><div>");
	lp_num(p, "b", tree, "request_throughput", 2);
	lp_puts(p, "<span>requests/s</span></div></div>\n");
}

static void profile_rules(char *buf, size_t cap, const cJSON *tree)
{
	snprintf(buf, cap, "clock %s, first token: %s frame, ITL per %s, E2EL ends at %s, output tokens from %s, "
		 "failures in the headline: %s", str_at(tree, "latscope/rules/clock"), str_at(tree, "latscope/rules/ttft_gate"),
		 str_at(tree, "latscope/rules/itl"), str_at(tree, "latscope/rules/e2el_end"),
		 str_at(tree, "latscope/rules/out_tokens"),
		 cJSON_IsTrue(lp_get(tree, "latscope/rules/failures_in_headline")) ? "yes" : "no");
}

static void run_rates(struct ls_page *p, const struct ls_html_run *h, const cJSON *tree)
{
	lp_puts(p, "<tr><td>Request rate (req/s)</td><td>target ");
	if (isfinite(h->ctx->request_rate))
		lp_num(p, "span", tree, "request_rate", 2);
	else
		lp_puts(p, "inf");
	lp_puts(p, ", realised ");
	lp_num(p, "span", tree, "latscope/realised_request_rate", 2);
	lp_puts(p, "</td></tr>\n<tr><td>Concurrency</td><td>limit ");
	if (h->ctx->max_concurrency)
		lp_num(p, "span", tree, "max_concurrency", 0);
	else
		lp_puts(p, "none");
	lp_puts(p, ", peak in flight ");
	lp_num(p, "span", tree, "max_concurrent_requests", 0);
	lp_puts(p, ", mean (Little's law) ");
	lp_num(p, "span", tree, "latscope/littles_law_concurrency", 2);
	lp_puts(p, "</td></tr>\n<tr><td>Requests</td><td>");
	lp_num(p, "span", tree, "completed", 0);
	lp_printf(p, " ok, <span class=\"%s\">", h->m->failed ? "bad" : "good");
	lp_num(p, "span", tree, "failed", 0);
	lp_puts(p, " failed</span> of ");
	lp_num(p, "span", tree, "num_prompts", 0);
	lp_puts(p, " sent; duration ");
	lp_num(p, "span", tree, "duration", 2);
	lp_puts(p, " s</td></tr>\n");
}

static void section_run(struct ls_page *p, const struct ls_html_run *h, const cJSON *tree)
{
	const struct ls_report_ctx *c = h->ctx;
	char buf[1024];
	lp_puts(p, "<h2>The run</h2>\n<table class=\"kv\">\n<tr><td>Command</td><td><code>");
	lp_text(p, h->command_line ? h->command_line : "—");
	lp_puts(p, "</code></td></tr>\n");
	snprintf(buf, sizeof(buf), "%s (%s)%s%s", c->profile ? c->profile : "?", c->profile_source ? c->profile_source : "?",
		 c->profile_description ? ": " : "", c->profile_description ? c->profile_description : "");
	kv_text(p, "Profile", buf);
	profile_rules(buf, sizeof(buf), tree);
	kv_text(p, "Its read rules", buf);
	kv_text(p, "Arrivals", c->arrival);
	run_rates(p, h, tree);
	kv_text(p, "Connection policy", h->connection);
	snprintf(buf, sizeof(buf), "%s%s, backend %s, model %s", c->base_url ? c->base_url : "?", c->endpoint ? c->endpoint : "",
		 c->backend ? c->backend : "?", c->model ? c->model : "?");
	kv_text(p, "Server", buf);
	kv_text(p, "Watched", h->watched);
	kv_text(p, "Dataset", c->dataset);
	snprintf(buf, sizeof(buf), "latscope %s, %s, run tag %s%s%s", h->version ? h->version : "?", c->date ? c->date : "?",
		 c->run_tag ? c->run_tag : "?", c->record_path ? ", records " : "", c->record_path ? c->record_path : "");
	kv_text(p, "Made by", buf);
	if (c->server_gone) {
		snprintf(buf, sizeof(buf), "the server stopped accepting connections %.2f s into the run; %zu requests failed to "
			 "connect from then on", c->server_gone_at_s, c->n_connect_failed_gone);
		kv_text(p, "Server gone", buf);
	}
	lp_puts(p, "</table>\n");
}

/* One row of the headline table: a stat of the result tree at path prefix (vLLM's keys when
 * vllm_name is given, else a latscope stat object). */
static void stat_row(struct ls_page *p, const cJSON *tree, const char *label, const char *clock,
		     const char *vllm_name, const char *obj, const struct ls_read_rules *r)
{
	char key[160], suffix[64];
	lp_printf(p, "<tr><td>%s</td><td>%s</td>", label, clock);
	snprintf(suffix, sizeof(suffix), "_%s_ms", vllm_name ? vllm_name : "");
	static const char *const fields[] = { "mean", "median" };
	for (int f = 0; f < 2; f++) {
		if (vllm_name)
			snprintf(key, sizeof(key), "%s_%s_ms", fields[f], vllm_name);
		else
			snprintf(key, sizeof(key), "%s/%s_ms", obj, fields[f]);
		lp_num_cell(p, tree, key, 2);
	}
	for (size_t k = 0; k < r->n_percentiles; k++) {
		char pk[64];
		if (vllm_name) {
			ls_report_pct_key(key, sizeof(key), "p", r->percentiles[k], suffix);
		} else {
			ls_report_pct_key(pk, sizeof(pk), "p", r->percentiles[k], "_ms");
			snprintf(key, sizeof(key), "%s/%s", obj, pk);
		}
		lp_num_cell(p, tree, key, 2);
	}
	lp_puts(p, "</tr>\n");
}

/* The engine's own account (latscope.engine), a row per part it gave, labelled with its source. */
static void engine_rows(struct ls_page *p, const cJSON *tree, const struct ls_read_rules *r)
{
	static const struct {
		const char *key, *label;
	} parts[] = { { "queue", "engine queue" }, { "prompt", "engine prefill" },
		      { "ttft_outside_prompt", "TTFT outside the engine" }, { "decode_per_token", "engine decode / token" },
		      { "e2e", "engine end-to-end" } };
	const cJSON *src, *sources = lp_get(tree, "latscope/engine/sources");
	char label[160] = "";
	size_t len = 0;
	cJSON_ArrayForEach(src, sources) {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(src, "engine"), *f = cJSON_GetObjectItemCaseSensitive(src, "fields");
		if (cJSON_IsString(e) && cJSON_IsString(f) && len < sizeof(label))
			len += (size_t)snprintf(label + len, sizeof(label) - len, "%s%s %s", len ? " + " : "", e->valuestring,
						f->valuestring);
	}
	for (size_t k = 0; len && k < sizeof(parts) / sizeof(parts[0]); k++) {
		char path[96];
		snprintf(path, sizeof(path), "latscope/engine/%s", parts[k].key);
		if (cJSON_IsObject(lp_get(tree, path)))
			stat_row(p, tree, parts[k].label, label, NULL, path, r);
	}
}

static void section_headline(struct ls_page *p, const struct ls_html_run *h, const cJSON *tree)
{
	const struct ls_read_rules *r = &h->m->rules;
	const char *clock = ls_origin_name(r->origin);
	lp_puts(p, "<h2>Headline numbers</h2>\n<p class=\"sub\">As the profile reports them (its clock), and TTFT and "
		   "E2EL again from <b>scheduled</b>, when the arrival process said go: the difference is the wait for a "
		   "concurrency slot and the dispatch, which a clock that starts later does not see.</p>\n");
	lp_puts(p, "<table><tr><th>Metric (ms)</th><th>clock</th><th>mean</th><th>median</th>");
	for (size_t k = 0; k < r->n_percentiles; k++)
		lp_printf(p, "<th>P%g</th>", r->percentiles[k]);
	lp_puts(p, "</tr>\n");
	if (lp_get(tree, "mean_ttft_ms"))
		stat_row(p, tree, "TTFT", clock, "ttft", NULL, r);
	stat_row(p, tree, "TTFT", "scheduled", NULL, "latscope/ttft_by_clock/scheduled", r);
	if (lp_get(tree, "mean_tpot_ms"))
		stat_row(p, tree, "TPOT", "any", "tpot", NULL, r);
	if (lp_get(tree, "mean_itl_ms"))
		stat_row(p, tree, "ITL", "any", "itl", NULL, r);
	if (lp_get(tree, "mean_e2el_ms"))
		stat_row(p, tree, "E2EL", clock, "e2el", NULL, r);
	stat_row(p, tree, "E2EL", "scheduled", NULL, "latscope/e2el_by_clock/scheduled", r);
	stat_row(p, tree, "slot wait", "admitted − scheduled", NULL, "latscope/slot_wait", r);
	engine_rows(p, tree, r);
	lp_puts(p, "</table>\n");
	if (r->n_itl_percentiles)
		lp_puts(p, "<p class=\"note\">This profile reads ITL at its own percentiles: those columns show — for ITL "
			   "(the result JSON has them under p*_itl_ms).</p>\n");
}

/* Failed requests by reason (the result's latscope.failures), a few of their errors. */
static void section_failures(struct ls_page *p, const cJSON *tree)
{
	const cJSON *fails = lp_get(tree, "latscope/failures"), *f;
	lp_puts(p, "<h2>Failures</h2>\n");
	if (!cJSON_GetArraySize(fails)) {
		lp_puts(p, "<p class=\"good\">No request failed.</p>\n");
		return;
	}
	lp_puts(p, "<table><tr><th>reason</th><th>requests</th></tr>\n");
	cJSON_ArrayForEach(f, fails) {
		char key[96];
		snprintf(key, sizeof(key), "latscope/failures/%s", f->string);
		lp_puts(p, "<tr><td class=\"bad\">");
		lp_text(p, f->string);
		lp_puts(p, "</td>");
		lp_num_cell(p, tree, key, 0);
		lp_puts(p, "</tr>\n");
	}
	lp_puts(p, "</table>\n<p class=\"note\">The first errors, as the result file's \"errors\" has them:</p><pre>");
	int shown = 0;
	cJSON_ArrayForEach(f, lp_get(tree, "errors")) {
		if (!cJSON_IsString(f) || !*f->valuestring || shown >= 5)
			continue;
		lp_text(p, f->valuestring);
		lp_puts(p, "\n");
		shown++;
	}
	lp_puts(p, "</pre>\n");
}

static void section_checks(struct ls_page *p, const cJSON *tree)
{
	const cJSON *c;
	lp_puts(p, "<h2>Checks before you believe a number</h2>\n<ul class=\"checks\">\n");
	cJSON_ArrayForEach(c, lp_get(tree, "latscope/checks")) {
		int ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "ok"));
		lp_printf(p, "<li><span class=\"%s\">%s</span> <b>", ok ? "good" : "bad", ok ? "✓" : "✗");
		lp_text(p, str_at(c, "check"));
		lp_puts(p, "</b>: ");
		lp_text(p, str_at(c, "text"));
		lp_puts(p, "</li>\n");
	}
	lp_puts(p, "</ul>\n");
}

int ls_html_write_run(const char *path, const struct ls_html_run *h)
{
	struct ls_page p;
	cJSON *tree = ls_report_json_tree(h->m, h->run, h->ctx);
	char title[256];
	int err = tree ? lp_init(&p) : -ENOMEM;
	if (err) {
		cJSON_Delete(tree);
		fprintf(stderr, "latscope: out of memory building the HTML page %s\n", path);
		return err;
	}
	section_title(&p, h, tree);
	section_run(&p, h, tree);
	section_headline(&p, h, tree);
	lp_section_attribution(&p, h);
	lp_section_timeline(&p, h);
	lp_section_distributions(&p, h, tree);
	section_failures(&p, tree);
	section_checks(&p, tree);
	snprintf(title, sizeof(title), "latscope report: %zu requests, %zu failed", h->m->n_measured, h->m->failed);
	err = lp_write(&p, path, title);
	lp_free(&p);
	cJSON_Delete(tree);
	return err;
}
