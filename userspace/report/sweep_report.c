/* sweep_report.c — see sweep_report.h: the sweep's table, summary and JSON, from the points'
 * figures and the summary metrics/sweep_point.c computed. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/sweep_report.h"

static int clock_free(enum ls_slo_metric m)
{
	return m == LS_SLO_ITL || m == LS_SLO_TPOT; /* gaps between tokens: no origin in them */
}

void ls_sweep_print_header(FILE *out, const struct ls_sweep_desc *d)
{
	fprintf(out, "%3s %4s %9s %8s %8s %9s %10s", "#", "rep", d->mode[0] == 'r' ? "rate" : "users",
		"started/s", "done/s", "failed", "slot p50");
	for (size_t k = 0; k < d->slo->n; k++) {
		char h[48];
		snprintf(h, sizeof(h), "%s p%g ms%s", ls_slo_metric_name(d->slo->slo[k].metric), d->slo->slo[k].pct,
			 clock_free(d->slo->slo[k].metric) ? "" : " s/a/st");
		fprintf(out, "  %-24s", h);
	}
	if (!d->slo->n)
		fprintf(out, "  %-24s  %-24s", "ttft p50 ms s/a/st", "e2el p50 ms s/a/st");
	fprintf(out, "  %-17s  %s\n", "goodput % s/a/st", "meets s a st");
}

static void print_ms3(FILE *out, double a, double b, double c)
{
	char buf[64];
	snprintf(buf, sizeof(buf), "%.1f/%.1f/%.1f", a, b, c);
	fprintf(out, "  %-24s", buf);
}

void ls_sweep_print_point(FILE *out, const struct ls_sweep_desc *d, const struct ls_sweep_point *p, size_t i)
{
	const struct ls_sweep_clock *k = p->clock;
	fprintf(out, "%3zu %4u %9.2f %8.2f %8.2f %9zu %10.1f", i, p->repeat + 1, p->x, p->realised_rate,
		p->throughput, p->failed, p->slot_wait_p50_ms);
	for (size_t s = 0; s < d->slo->n; s++) {
		if (clock_free(d->slo->slo[s].metric))
			fprintf(out, "  %-24.1f", k[0].eval.value_ms[s]);
		else
			print_ms3(out, k[0].eval.value_ms[s], k[1].eval.value_ms[s], k[2].eval.value_ms[s]);
	}
	if (!d->slo->n) {
		print_ms3(out, k[0].ttft_p50_ms, k[1].ttft_p50_ms, k[2].ttft_p50_ms);
		print_ms3(out, k[0].e2el_p50_ms, k[1].e2el_p50_ms, k[2].e2el_p50_ms);
	}
	char good[48];
	snprintf(good, sizeof(good), "%.1f/%.1f/%.1f", k[0].eval.goodput * 100, k[1].eval.goodput * 100,
		 k[2].eval.goodput * 100);
	fprintf(out, "  %-17s  %s %s %s", good, p->pass[0] ? "Y" : "N", p->pass[1] ? "Y" : "N", p->pass[2] ? "Y" : "N");
	if (p->stopped[0])
		fprintf(out, "  (stopped: %s)", p->stopped);
	if (p->failed && p->fail_list[0])
		fprintf(out, "  [%s]", p->fail_list);
	fputc('\n', out);
}

/* One clock's capacity line. */
static void print_cap(FILE *out, const struct ls_sweep_desc *d, const struct ls_sweep_summary *s, int c)
{
	const struct ls_sweep_cap *k = &s->cap[c];
	fprintf(out, "  %-10s ", ls_origin_name((enum ls_origin)c));
	if (!k->has_cap)
		fprintf(out, "none: no point met the SLO%s\n", k->has_fail ? " (the lowest failed)" : "");
	else if (s->above_all[c])
		fprintf(out, ">= %.2f %s (no point failed: the capacity is above what the sweep ran)\n", k->cap, d->unit);
	else
		fprintf(out, "%.2f %s (the next point, %.2f, failed)\n", k->cap, d->unit, k->fail);
}

/* --profiles: the capacity each profile's read rules give on the same points. */
static void print_profiles(FILE *out, const struct ls_sweep_desc *d)
{
	if (!d->n_profiles)
		return;
	fprintf(out, "  the same points under other read rules (capacity at the points run; the search followed %s):\n",
		d->run_profile ? d->run_profile : "the run's");
	fprintf(out, "    %-12s %12s %12s %12s\n", "rules", "scheduled", "admitted", "started");
	for (size_t i = 0; i < d->n_profiles; i++) {
		fprintf(out, "    %-12s", d->profile_names[i]);
		for (int c = 0; c < LS_ORIGIN__COUNT; c++) {
			const struct ls_sweep_cap *k = &d->profile_sums[i].cap[c];
			char v[32] = "none";
			if (k->has_cap)
				snprintf(v, sizeof(v), "%s%.2f", d->profile_sums[i].above_all[c] ? ">=" : "", k->cap);
			fprintf(out, " %12s", v);
		}
		fputc('\n', out);
	}
}

/* The spread of each x run more than once (--repeat): mean +- sd per clock. */
static void print_spreads(FILE *out, const struct ls_sweep_desc *d, const struct ls_sweep_point *pts, size_t n)
{
	struct ls_sweep_spread *sp = d->repeat > 1 ? malloc(n * sizeof(*sp)) : NULL;
	if (!sp)
		return; /* one run per x (or no memory for the block): the table says it all */
	size_t m = ls_sweep_spreads(pts, n, d->slo, sp, n);
	fprintf(out, "\nrepeats: mean +- sd over the runs at each %s (s/a/st)\n", d->mode);
	for (size_t i = 0; i < m; i++) {
		fprintf(out, "  %9.2f x%zu  done %.2f +- %.2f req/s", sp[i].x, sp[i].n, sp[i].throughput_mean,
			sp[i].throughput_sd);
		for (size_t k = 0; k < d->slo->n; k++) {
			fprintf(out, "  %s p%g", ls_slo_metric_name(d->slo->slo[k].metric), d->slo->slo[k].pct);
			for (int c = 0; c < (clock_free(d->slo->slo[k].metric) ? 1 : LS_ORIGIN__COUNT); c++)
				fprintf(out, "%s%.1f+-%.1f", c ? "/" : " ", sp[i].mean_ms[c][k], sp[i].sd_ms[c][k]);
		}
		fprintf(out, "  goodput %.1f+-%.1f %%\n", sp[i].goodput_mean[0] * 100, sp[i].goodput_sd[0] * 100);
	}
	free(sp);
}

void ls_sweep_print_summary(FILE *out, const struct ls_sweep_desc *d, const struct ls_sweep_point *pts, size_t n,
			    const struct ls_sweep_summary *s)
{
	print_spreads(out, d, pts, n);
	fprintf(out, "\ncapacity at the SLO (%s%s", d->slo_text ? d->slo_text : "none given",
		d->slo->goodput_min >= 0 ? "" : ")");
	if (d->slo->goodput_min >= 0)
		fprintf(out, "; goodput >= %g)", d->slo->goodput_min);
	fprintf(out, ", per clock the latency starts from:\n");
	for (int c = 0; c < LS_ORIGIN__COUNT; c++)
		print_cap(out, d, s, c);
	if (d->mode[0] == 'c' && n && pts[0].target_rate <= 0)
		fprintf(out, "  (closed loop: every request is due at the run's start, so the scheduled clock counts the wait\n"
			"   for a free user from there; admitted is each user's own clock)\n");
	if (s->has_overstatement)
		fprintf(out, "  a harness that starts its clock at `started` (vLLM, SGLang) %s capacity by %+.1f %%%s "
			"(started %.2f vs scheduled %.2f %s)\n",
			s->overstatement_pct > 0 ? "overstates" : "states", s->overstatement_pct,
			s->above_all[LS_ORIGIN_STARTED] ? " or more" : "", s->cap[LS_ORIGIN_STARTED].cap,
			s->cap[LS_ORIGIN_SCHEDULED].cap, d->unit);
	if (s->knee >= 0 && (size_t)s->knee < n)
		fprintf(out, "  knee (largest throughput / median E2EL from scheduled): point %ld, %.2f %s: %.2f req/s done, "
			"median E2EL %.1f ms\n", s->knee, pts[s->knee].x, d->unit, pts[s->knee].throughput,
			pts[s->knee].clock[LS_ORIGIN_SCHEDULED].e2el_p50_ms);
	print_profiles(out, d);
	if (d->stop_reason)
		fprintf(out, "  the sweep stopped early: %s\n", d->stop_reason);
	fprintf(out, "  each point's run: %s/point-K.jsonl (latscope report reads it), its result point-K.json, "
		"bench's output point-K.log\n", d->dir);
}

static cJSON *clock_json(const struct ls_sweep_desc *d, const struct ls_sweep_point *p, int c)
{
	const struct ls_sweep_clock *k = &p->clock[c];
	cJSON *o = cJSON_CreateObject(), *slo = cJSON_CreateArray();
	if (!o || !slo) {
		cJSON_Delete(o);
		cJSON_Delete(slo);
		return NULL;
	}
	cJSON_AddItemToObject(o, "slo", slo);
	for (size_t s = 0; s < d->slo->n; s++) {
		cJSON *e = cJSON_CreateObject();
		if (!e || !cJSON_AddItemToArray(slo, e))
			return cJSON_Delete(o), cJSON_Delete(e), NULL;
		cJSON_AddStringToObject(e, "metric", ls_slo_metric_name(d->slo->slo[s].metric));
		cJSON_AddNumberToObject(e, "percentile", d->slo->slo[s].pct);
		cJSON_AddNumberToObject(e, "limit_ms", d->slo->slo[s].limit_ms);
		cJSON_AddNumberToObject(e, "value_ms", k->eval.value_ms[s]);
		cJSON_AddBoolToObject(e, "met", k->eval.met[s]);
	}
	cJSON_AddNumberToObject(o, "ttft_p50_ms", k->ttft_p50_ms);
	cJSON_AddNumberToObject(o, "ttft_p99_ms", k->ttft_p99_ms);
	cJSON_AddNumberToObject(o, "e2el_p50_ms", k->e2el_p50_ms);
	cJSON_AddNumberToObject(o, "e2el_p99_ms", k->e2el_p99_ms);
	cJSON_AddNumberToObject(o, "goodput", k->eval.goodput);
	cJSON_AddBoolToObject(o, "meets_slo", p->pass[c]);
	return o;
}

static cJSON *point_json(const struct ls_sweep_desc *d, const struct ls_sweep_point *p, size_t i)
{
	cJSON *o = cJSON_CreateObject(), *clocks = cJSON_CreateObject();
	if (!o || !clocks || !cJSON_AddItemToObject(o, "clocks", clocks)) {
		cJSON_Delete(o);
		cJSON_Delete(clocks);
		return NULL;
	}
	cJSON_AddNumberToObject(o, "index", (double)i);
	cJSON_AddNumberToObject(o, d->mode[0] == 'r' ? "rate" : "concurrency", p->x);
	cJSON_AddNumberToObject(o, "repeat", p->repeat);
	cJSON_AddStringToObject(o, "record", p->record);
	cJSON_AddStringToObject(o, "result", p->result);
	cJSON_AddNumberToObject(o, "bench_exit", p->bench_rc);
	if (p->stopped[0])
		cJSON_AddStringToObject(o, "stopped", p->stopped);
	else
		cJSON_AddNullToObject(o, "stopped");
	cJSON_AddNumberToObject(o, "wall_s", p->wall_s);
	cJSON_AddNumberToObject(o, "target_rate", p->target_rate);
	cJSON_AddNumberToObject(o, "realised_rate", p->realised_rate);
	cJSON_AddNumberToObject(o, "throughput", p->throughput);
	cJSON_AddNumberToObject(o, "measured", (double)p->n_measured);
	cJSON_AddNumberToObject(o, "failed", (double)p->failed);
	cJSON_AddStringToObject(o, "failures", p->fail_list);
	cJSON_AddNumberToObject(o, "trimmed", (double)p->trimmed);
	cJSON_AddNumberToObject(o, "slot_wait_p50_ms", p->slot_wait_p50_ms);
	cJSON_AddNumberToObject(o, "slot_wait_p99_ms", p->slot_wait_p99_ms);
	cJSON_AddNumberToObject(o, "itl_p50_ms", p->itl_p50_ms);
	cJSON_AddNumberToObject(o, "itl_p99_ms", p->itl_p99_ms);
	for (int c = 0; c < LS_ORIGIN__COUNT; c++) {
		cJSON *k = clock_json(d, p, c);
		if (!k || !cJSON_AddItemToObject(clocks, ls_origin_name((enum ls_origin)c), k))
			return cJSON_Delete(o), cJSON_Delete(k), NULL;
	}
	return o;
}

static cJSON *sweep_desc_json(const struct ls_sweep_desc *d)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "mode", d->mode);
	cJSON_AddStringToObject(o, "unit", d->unit);
	if (d->slo_text)
		cJSON_AddStringToObject(o, "slo", d->slo_text);
	else
		cJSON_AddNullToObject(o, "slo");
	if (d->slo->goodput_min >= 0)
		cJSON_AddNumberToObject(o, "goodput_min", d->slo->goodput_min);
	else
		cJSON_AddNullToObject(o, "goodput_min");
	cJSON_AddBoolToObject(o, "search", d->search);
	cJSON_AddNumberToObject(o, "precision", d->precision);
	cJSON_AddNumberToObject(o, "repeat", d->repeat);
	cJSON_AddNumberToObject(o, "warmup_fraction", d->warmup_frac);
	cJSON_AddNumberToObject(o, "cooldown_fraction", d->cooldown_frac);
	cJSON_AddStringToObject(o, "dir", d->dir);
	if (d->run_profile)
		cJSON_AddStringToObject(o, "rules", d->run_profile);
	if (d->stop_reason)
		cJSON_AddStringToObject(o, "stopped_early", d->stop_reason);
	else
		cJSON_AddNullToObject(o, "stopped_early");
	return o;
}

/* "capacity": {clock: R|null}, "bracket": {clock: {"met", "failed", "above_all"}}; all null
 * without an SLO (a list of points read as they are: there is nothing to be within). */
static int capacity_json(cJSON *root, const struct ls_sweep_desc *d, const struct ls_sweep_summary *full)
{
	struct ls_sweep_summary none = { .knee = full->knee };
	const struct ls_sweep_summary *s = d->slo->n || d->slo->goodput_min >= 0 ? full : &none;
	cJSON *cap = cJSON_AddObjectToObject(root, "capacity"), *br = cJSON_AddObjectToObject(root, "bracket");
	if (!cap || !br)
		return -1;
	for (int c = 0; c < LS_ORIGIN__COUNT; c++) {
		const char *name = ls_origin_name((enum ls_origin)c);
		const struct ls_sweep_cap *k = &s->cap[c];
		cJSON *b = cJSON_AddObjectToObject(br, name);
		if (!b)
			return -1;
		if (k->has_cap)
			cJSON_AddNumberToObject(cap, name, k->cap);
		else
			cJSON_AddNullToObject(cap, name);
		if (k->has_fail)
			cJSON_AddNumberToObject(b, "failed", k->fail);
		else
			cJSON_AddNullToObject(b, "failed");
		cJSON_AddBoolToObject(b, "above_all", s->above_all[c]);
	}
	if (s->has_overstatement)
		cJSON_AddNumberToObject(root, "overstatement_pct", s->overstatement_pct);
	else
		cJSON_AddNullToObject(root, "overstatement_pct");
	return 0;
}

/* "capacity_by_profile": {name: {clock: R|null}} for --profiles. */
static int profiles_json(cJSON *root, const struct ls_sweep_desc *d)
{
	if (!d->n_profiles)
		return 0;
	cJSON *all = cJSON_AddObjectToObject(root, "capacity_by_profile");
	if (!all)
		return -1;
	for (size_t i = 0; i < d->n_profiles; i++) {
		cJSON *o = cJSON_AddObjectToObject(all, d->profile_names[i]);
		if (!o)
			return -1;
		for (int c = 0; c < LS_ORIGIN__COUNT; c++) {
			const struct ls_sweep_cap *k = &d->profile_sums[i].cap[c];
			if (k->has_cap)
				cJSON_AddNumberToObject(o, ls_origin_name((enum ls_origin)c), k->cap);
			else
				cJSON_AddNullToObject(o, ls_origin_name((enum ls_origin)c));
		}
	}
	return 0;
}

/* "repeats": per x, the mean and sd per clock (only with --repeat above 1). */
static int spreads_json(cJSON *root, const struct ls_sweep_desc *d, const struct ls_sweep_point *pts, size_t n)
{
	if (d->repeat <= 1 || !n)
		return 0;
	struct ls_sweep_spread *sp = malloc(n * sizeof(*sp));
	cJSON *arr = cJSON_AddArrayToObject(root, "repeats");
	if (!sp || !arr)
		return free(sp), -1;
	size_t m = ls_sweep_spreads(pts, n, d->slo, sp, n);
	for (size_t i = 0; i < m; i++) {
		cJSON *o = cJSON_CreateObject(), *clocks;
		if (!o || !cJSON_AddItemToArray(arr, o))
			return cJSON_Delete(o), free(sp), -1;
		if (!(clocks = cJSON_AddObjectToObject(o, "clocks")))
			return free(sp), -1;
		cJSON_AddNumberToObject(o, d->mode[0] == 'r' ? "rate" : "concurrency", sp[i].x);
		cJSON_AddNumberToObject(o, "runs", (double)sp[i].n);
		cJSON_AddNumberToObject(o, "throughput_mean", sp[i].throughput_mean);
		cJSON_AddNumberToObject(o, "throughput_sd", sp[i].throughput_sd);
		for (int c = 0; c < LS_ORIGIN__COUNT; c++) {
			cJSON *k = cJSON_AddObjectToObject(clocks, ls_origin_name((enum ls_origin)c));
			cJSON *mean = k ? cJSON_AddArrayToObject(k, "slo_mean_ms") : NULL;
			cJSON *sd = k ? cJSON_AddArrayToObject(k, "slo_sd_ms") : NULL;
			if (!mean || !sd)
				return free(sp), -1;
			for (size_t s = 0; s < d->slo->n; s++) {
				cJSON_AddItemToArray(mean, cJSON_CreateNumber(sp[i].mean_ms[c][s]));
				cJSON_AddItemToArray(sd, cJSON_CreateNumber(sp[i].sd_ms[c][s]));
			}
			cJSON_AddNumberToObject(k, "goodput_mean", sp[i].goodput_mean[c]);
			cJSON_AddNumberToObject(k, "goodput_sd", sp[i].goodput_sd[c]);
		}
	}
	free(sp);
	return 0;
}

cJSON *ls_sweep_json(const struct ls_sweep_desc *d, const struct ls_sweep_point *pts, size_t n,
		     const struct ls_sweep_summary *s)
{
	cJSON *root = cJSON_CreateObject(), *desc = sweep_desc_json(d), *arr = cJSON_CreateArray();
	if (!root || !desc || !arr || !cJSON_AddItemToObject(root, "sweep", desc)) {
		cJSON_Delete(root);
		cJSON_Delete(desc);
		cJSON_Delete(arr);
		return NULL;
	}
	cJSON_AddItemToObject(root, "points", arr);
	for (size_t i = 0; i < n; i++) {
		cJSON *p = point_json(d, &pts[i], i);
		if (!p || !cJSON_AddItemToArray(arr, p))
			return cJSON_Delete(root), cJSON_Delete(p), NULL;
	}
	if (capacity_json(root, d, s) || spreads_json(root, d, pts, n) || profiles_json(root, d))
		return cJSON_Delete(root), NULL;
	if (s->knee >= 0)
		cJSON_AddNumberToObject(root, "knee", (double)s->knee);
	else
		cJSON_AddNullToObject(root, "knee");
	return root;
}
