/* run_to_report.c — see cmd.h: the one sequence from a run's records to its report (metrics ->
 * checks -> report context -> text and result JSON) that bench and report share, so that a
 * run reads the same whether it was just driven or loaded from its record file. */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <stdio.h>
#include "cmd/cmd.h"
#include "commands.h"

int ls_run_report_compute(struct ls_run_report *rr, const char *cmd, const struct ls_run *run,
			  const struct ls_read_rules *rules, const struct ls_goodput *goodput,
			  const char *arrival)
{
	struct ls_checks_ctx cx = { .arrival = arrival };

	if (ls_metrics_compute(run, rules, goodput, &rr->metrics)) {
		fprintf(stderr, "latscope %s: out of memory computing metrics\n", cmd);
		return -ENOMEM;
	}
	ls_checks_compute(run, &rr->metrics, &cx, &rr->checks);
	return 0;
}

static const char *or_null(const char *s)
{
	return s[0] ? s : NULL;
}

void ls_run_report_ctx(const struct ls_record_meta *m, struct ls_report_ctx *ctx)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->profile = or_null(m->profile);
	ctx->profile_source = or_null(m->profile_source);
	ctx->backend = or_null(m->backend);
	ctx->model = or_null(m->model);
	ctx->base_url = or_null(m->base_url);
	ctx->endpoint = or_null(m->endpoint);
	ctx->dataset = or_null(m->dataset);
	ctx->arrival = m->arrival_desc[0] ? m->arrival_desc : or_null(m->arrival);
	ctx->date = or_null(m->date);
	ctx->run_tag = m->run_tag;
	/* An older file has no request_rate: its target rate is the one it knew. */
	double rate = m->request_rate > 0 ? m->request_rate : m->percentile_metrics ? 0 : m->target_rate;
	ctx->request_rate = rate > 0 ? rate : INFINITY;
	ctx->burstiness = m->burstiness;
	ctx->max_concurrency = m->max_concurrency;
	ctx->percentile_metrics = m->percentile_metrics ? m->percentile_metrics
				  : LS_PM_TTFT | LS_PM_TPOT | LS_PM_ITL | LS_PM_E2EL;
	ctx->spec = &m->spec;
	ctx->gauges = &m->gauges;
}

/* The labels as the result JSON gets them: the caller's, with rr's figures. */
static void full_ctx(const struct ls_run_report *rr, const struct ls_run *run, const struct ls_report_ctx *ctx,
		     struct ls_report_ctx *out)
{
	struct ls_report_ctx c = *ctx;

	c.num_prompts = rr->metrics.n_measured; /* the run's non-warmup records: what was sent */
	c.checks = &rr->checks;
	c.run_start_ns = run ? run->start_ns : 0;
	if (run && run->server_gone_ns) {
		c.server_gone = 1;
		c.server_gone_at_s = run->server_gone_ns > run->start_ns ? (double)(run->server_gone_ns - run->start_ns) / 1e9 : 0;
		c.n_connect_failed_gone = run->n_connect_failed_gone;
	}
	if (run && run->preconnect_ns) {
		c.preconnected = 1;
		c.n_preconnected = run->n_preconnected;
		c.preconnect_ms = (double)run->preconnect_ns / 1e6;
	}
	*out = c;
}

int ls_run_report_print(FILE *out, const struct ls_run_report *rr, const struct ls_run *run,
			const struct ls_report_ctx *ctx, const char *save_path)
{
	struct ls_report_ctx c;

	full_ctx(rr, run, ctx, &c);
	ls_report_text(out, &rr->metrics, &c);
	fflush(out);
	return save_path ? ls_report_json_write(save_path, &rr->metrics, run, &c) : 0;
}

void ls_run_report_free(struct ls_run_report *rr)
{
	ls_metrics_free(&rr->metrics);
}

int ls_run_report_html(const char *path, const struct ls_run_report *rr, const struct ls_run *run,
		       const struct ls_report_ctx *ctx, const struct ls_html_run *page)
{
	struct ls_report_ctx c;
	struct ls_html_run h = *page;

	full_ctx(rr, run, ctx, &c);
	h.m = &rr->metrics;
	h.run = run;
	h.ctx = &c;
	h.version = LATSCOPE_VERSION;
	return ls_html_write_run(path, &h);
}
