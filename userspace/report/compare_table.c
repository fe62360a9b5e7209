/* compare_table.c — see compare.h: the metrics of each profile's reading, the table, the
 * rows that say which rule moved which number, and each run's checks. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/compare.h"
#include "report/report.h"

/* The table shows mean, median and P99 for every profile, whatever it prints itself. */
static const double table_pcts[] = { 50, 99 };
#define P99 1

static void table_rules(struct ls_read_rules *r)
{
	memcpy(r->percentiles, table_pcts, sizeof(table_pcts));
	r->n_percentiles = 2;
	r->n_itl_percentiles = 0;
}

/* The random dataset's length bounds under a run's range rule. */
static void bounds(const struct ls_cmp_send *s, uint32_t b[4])
{
	memset(b, 0, 4 * sizeof(*b));
	if (!s->random)
		return;
	if (ls_random_bounds(s->input_len, s->range_ratio, s->rules.range_semantics, 0, &b[0], &b[1]) ||
	    ls_random_bounds(s->output_len, s->range_ratio, s->rules.range_semantics, 1, &b[2], &b[3]))
		b[0] = b[1] = b[2] = b[3] = UINT32_MAX;
}

int ls_cmp_send_same(const struct ls_cmp_send *a, const struct ls_cmp_send *b)
{
	const struct ls_send_rules *x = &a->rules, *y = &b->rules;
	if (x->backend != y->backend || x->arrival != y->arrival || x->per_request_conn != y->per_request_conn ||
	    x->num_warmups != y->num_warmups || x->ignore_eos != y->ignore_eos ||
	    a->max_concurrency != b->max_concurrency || a->random != b->random)
		return 0;
	if (x->num_warmups && x->warmup_shape != y->warmup_shape)
		return 0;
	uint32_t bx[4], by[4];
	bounds(a, bx);
	bounds(b, by);
	return !memcmp(bx, by, sizeof(bx));
}

int ls_cmp_parse_profiles(const char *list, struct ls_cmp_col *cols, size_t cap)
{
	size_t n = 0;
	const char *p = list;
	if (!list || !*list) {
		fprintf(stderr, "latscope: --profiles needs a comma list, e.g. vllm,sglang,sglang-oai,honest\n");
		return -1;
	}
	while (*p) {
		size_t len = strcspn(p, ",");
		char name[256];
		if (!len || len >= sizeof(name)) {
			fprintf(stderr, "latscope: --profiles '%s': empty or overlong name\n", list);
			return -1;
		}
		if (n == cap) {
			fprintf(stderr, "latscope: --profiles: at most %zu profiles\n", cap);
			return -1;
		}
		memcpy(name, p, len);
		name[len] = 0;
		memset(&cols[n], 0, sizeof(cols[n]));
		if (ls_profile_load(name, &cols[n].prof))
			return -1;
		for (size_t k = 0; k < n; k++)
			if (!strcmp(cols[k].prof.name, cols[n].prof.name)) {
				fprintf(stderr, "latscope: --profiles: '%s' is listed twice\n", cols[n].prof.name);
				return -1;
			}
		n++;
		p += len;
		if (*p == ',')
			p++;
	}
	return (int)n;
}

/* ---- the read rules the rows measure one at a time ---- */

enum rule {
	RULE_CLOCK, RULE_GATE, RULE_ITL, RULE_END, RULE_OUT, RULE_SUCCESS, RULE_SHOWN, RULE_PCTS, RULE__COUNT
};
/* The rules before RULE_PCTS have an effect measured (struct ls_cmp_col's effect[]). */
_Static_assert(RULE_PCTS == LS_CMP_MEASURED_RULES, "compare.h counts the measured rules");

static const char *const rule_labels[RULE__COUNT] = {
	"clock", "TTFT gate", "ITL", "E2EL end", "output tokens", "success", "failures printed", "percentiles printed",
};

static int rule_value(enum rule k, const struct ls_read_rules *r)
{
	switch (k) {
	case RULE_CLOCK: return (int)r->origin;
	case RULE_GATE: return (int)r->ttft_gate;
	case RULE_ITL: return (int)r->itl_mode;
	case RULE_END: return (int)r->e2el_end;
	case RULE_OUT: return (int)r->out_tokens;
	case RULE_SUCCESS: return (r->no_token_ok ? 2 : 0) | (r->no_done_ok ? 1 : 0);
	case RULE_SHOWN: return r->failures_in_headline;
	default: return 0;
	}
}

static void set_rule(enum rule k, struct ls_read_rules *r, int v)
{
	switch (k) {
	case RULE_CLOCK: r->origin = (enum ls_origin)v; break;
	case RULE_GATE: r->ttft_gate = (enum ls_ttft_gate)v; break;
	case RULE_ITL: r->itl_mode = (enum ls_itl_mode)v; break;
	case RULE_END: r->e2el_end = (enum ls_e2el_end)v; break;
	case RULE_OUT: r->out_tokens = (enum ls_out_tokens)v; break;
	case RULE_SUCCESS: r->no_token_ok = (v & 2) != 0; r->no_done_ok = v & 1; break;
	case RULE_SHOWN: r->failures_in_headline = v; break;
	default: break;
	}
}

/* The first column whose rule k has value v (n_cols: none). */
static size_t first_with(const struct ls_cmp_col *cols, size_t n_cols, enum rule k, int v)
{
	size_t i = 0;
	while (i < n_cols && rule_value(k, &cols[i].rules) != v)
		i++;
	return i;
}

/* The first column that reads run k (n_cols: none). */
static size_t first_on_run(const struct ls_cmp_col *cols, size_t n_cols, size_t k)
{
	size_t i = 0;
	while (i < n_cols && cols[i].run != k)
		i++;
	return i;
}

/* ---- every metric the printer shows, computed here (the printer computes none) ---- */

/* One rule at a time: the first column's run and rules, with rule k as column i has it, on
 * the first column with each value of k other than the first column's (its own reading is m). */
static int compute_effects(const struct ls_cmp_run *runs, struct ls_cmp_col *cols, size_t n_cols)
{
	for (int k = 0; k < LS_CMP_MEASURED_RULES; k++)
		for (size_t i = 1; i < n_cols; i++) {
			int v = rule_value((enum rule)k, &cols[i].rules);
			if (first_with(cols, n_cols, (enum rule)k, v) != i)
				continue;
			if (!cols[i].effect && !(cols[i].effect = calloc(LS_CMP_MEASURED_RULES, sizeof(*cols[i].effect))))
				return -ENOMEM;
			struct ls_read_rules r = cols[0].rules;
			table_rules(&r);
			set_rule((enum rule)k, &r, v);
			if (ls_metrics_compute(&runs[cols[0].run].run, &r, NULL, &cols[i].effect[k]))
				return -ENOMEM;
			cols[i].have_effect |= 1u << k;
		}
	return 0;
}

/* What sending differently did: each run but the first column's, read by its rules. */
static int compute_by_first(struct ls_cmp_run *runs, size_t n_runs, const struct ls_cmp_col *cols, size_t n_cols)
{
	if (!n_cols)
		return 0;
	struct ls_read_rules r = cols[0].rules;
	table_rules(&r);
	for (size_t k = 0; k < n_runs; k++) {
		if (k == cols[0].run)
			continue;
		if (ls_metrics_compute(&runs[k].run, &r, NULL, &runs[k].by_first))
			return -ENOMEM;
		runs[k].have_by_first = 1;
	}
	return 0;
}

int ls_cmp_compute(struct ls_cmp_run *runs, size_t n_runs, struct ls_cmp_col *cols, size_t n_cols)
{
	for (size_t i = 0; i < n_cols; i++) {
		struct ls_cmp_col *c = &cols[i];
		if (c->run >= n_runs)
			return -EINVAL;
		c->switched = ls_profile_read_rules(&c->prof, runs[c->run].accept_len, &c->rules);
		struct ls_read_rules r = c->rules;
		table_rules(&r);
		if (ls_metrics_compute(&runs[c->run].run, &r, NULL, &c->m))
			return -ENOMEM;
		c->have_m = 1;
	}
	for (size_t k = 0; k < n_runs; k++) {
		size_t first = first_on_run(cols, n_cols, k);
		if (first == n_cols)
			continue;
		/* Checks read the run under its first profile's own rules. */
		struct ls_metrics m;
		if (ls_metrics_compute(&runs[k].run, &cols[first].rules, NULL, &m))
			return -ENOMEM;
		struct ls_checks_ctx cx = { .arrival = runs[k].meta.arrival[0] ? runs[k].meta.arrival : NULL,
					    .repeated_run = runs[k].repeated, .cache_flushed = runs[k].flushed };
		ls_checks_compute(&runs[k].run, &m, &cx, &runs[k].checks);
		ls_metrics_free(&m);
	}
	if (compute_effects(runs, cols, n_cols) || compute_by_first(runs, n_runs, cols, n_cols))
		return -ENOMEM;
	return 0;
}

void ls_cmp_free(struct ls_cmp_run *runs, size_t n_runs, struct ls_cmp_col *cols, size_t n_cols)
{
	for (size_t i = 0; cols && i < n_cols; i++) {
		struct ls_cmp_col *c = &cols[i];
		if (c->have_m)
			ls_metrics_free(&c->m);
		for (int k = 0; k < LS_CMP_MEASURED_RULES; k++)
			if (c->have_effect & (1u << k))
				ls_metrics_free(&c->effect[k]);
		free(c->effect);
		c->effect = NULL;
		c->have_m = 0;
		c->have_effect = 0;
	}
	for (size_t k = 0; runs && k < n_runs; k++) {
		if (runs[k].have_by_first)
			ls_metrics_free(&runs[k].by_first);
		runs[k].have_by_first = 0;
		ls_run_free(&runs[k].run);
		ls_record_meta_free(&runs[k].meta);
	}
}

/* ---- the table ---- */

enum row {
	ROW_RUN, ROW_OK, ROW_FAILED, ROW_DURATION, ROW_OUT_TOKENS, ROW_REQ_TPUT, ROW_OUT_TPUT,
	ROW_TTFT_MEAN, ROW_TTFT_MEDIAN, ROW_TTFT_P99,
	ROW_TPOT_MEAN, ROW_TPOT_MEDIAN, ROW_TPOT_P99,
	ROW_ITL_MEAN, ROW_ITL_MEDIAN, ROW_ITL_P99,
	ROW_E2EL_MEAN, ROW_E2EL_MEDIAN, ROW_E2EL_P99,
	ROW_SLOT_WAIT,
	ROW__COUNT
};

static const char *const row_labels[ROW__COUNT] = {
	"Run", "Successful requests", "Failed requests", "Benchmark duration (s)", "Total generated tokens",
	"Request throughput (req/s)", "Output token throughput (tok/s)",
	"Mean TTFT (ms)", "Median TTFT (ms)", "P99 TTFT (ms)",
	"Mean TPOT (ms)", "Median TPOT (ms)", "P99 TPOT (ms)",
	"Mean ITL (ms)", "Median ITL (ms)", "P99 ITL (ms)",
	"Mean E2EL (ms)", "Median E2EL (ms)", "P99 E2EL (ms)",
	"Slot wait inside TTFT, mean (ms)",
};

static void cell(enum row row, const struct ls_cmp_col *c, char *buf, size_t cap);

size_t ls_cmp_n_rows(void)
{
	return ROW__COUNT;
}

const char *ls_cmp_row_label(size_t row)
{
	return row < ROW__COUNT ? row_labels[row] : "?";
}

void ls_cmp_cell(size_t row, const struct ls_cmp_col *c, char *buf, size_t cap)
{
	if (row < ROW__COUNT)
		cell((enum row)row, c, buf, cap);
	else
		snprintf(buf, cap, "?");
}

static void cell(enum row row, const struct ls_cmp_col *c, char *buf, size_t cap)
{
	const struct ls_metrics *m = &c->m;
	double v = 0;
	switch (row) {
	case ROW_RUN: snprintf(buf, cap, "%zu", c->run + 1); return;
	case ROW_OK: snprintf(buf, cap, "%zu", m->completed); return;
	case ROW_FAILED:
		snprintf(buf, cap, c->rules.failures_in_headline ? "%zu" : "%zu hidden", m->failed);
		return;
	case ROW_OUT_TOKENS: snprintf(buf, cap, "%llu", (unsigned long long)m->total_output); return;
	case ROW_DURATION: v = m->duration_s; break;
	case ROW_REQ_TPUT: v = m->request_throughput; break;
	case ROW_OUT_TPUT: v = m->output_throughput; break;
	case ROW_TTFT_MEAN: v = m->ttft.mean_ms; break;
	case ROW_TTFT_MEDIAN: v = m->ttft.median_ms; break;
	case ROW_TTFT_P99: v = m->ttft.pct_ms[P99]; break;
	case ROW_TPOT_MEAN: v = m->tpot.mean_ms; break;
	case ROW_TPOT_MEDIAN: v = m->tpot.median_ms; break;
	case ROW_TPOT_P99: v = m->tpot.pct_ms[P99]; break;
	case ROW_ITL_MEAN: v = m->itl.mean_ms; break;
	case ROW_ITL_MEDIAN: v = m->itl.median_ms; break;
	case ROW_ITL_P99: v = m->itl.pct_ms[P99]; break;
	case ROW_E2EL_MEAN: v = m->e2el.mean_ms; break;
	case ROW_E2EL_MEDIAN: v = m->e2el.median_ms; break;
	case ROW_E2EL_P99: v = m->e2el.pct_ms[P99]; break;
	case ROW_SLOT_WAIT:
		if (c->rules.origin != LS_ORIGIN_SCHEDULED) {
			snprintf(buf, cap, "hidden");
			return;
		}
		v = m->slot_wait.mean_ms;
		break;
	default: break;
	}
	snprintf(buf, cap, "%.2f", v);
}

static void print_table(FILE *out, const struct ls_cmp_col *cols, size_t n_cols, int markdown)
{
	char buf[64];
	if (markdown) {
		fprintf(out, "| Metric |");
		for (size_t i = 0; i < n_cols; i++)
			fprintf(out, " %s |", cols[i].prof.name);
		fprintf(out, "\n|---|");
		for (size_t i = 0; i < n_cols; i++)
			fprintf(out, "---:|");
		fprintf(out, "\n");
	} else {
		fprintf(out, "%-34s", "Metric");
		for (size_t i = 0; i < n_cols; i++)
			fprintf(out, " %12s", cols[i].prof.name);
		fprintf(out, "\n");
	}
	for (int r = 0; r < ROW__COUNT; r++) {
		fprintf(out, markdown ? "| %s |" : "%-34s", row_labels[r]);
		for (size_t i = 0; i < n_cols; i++) {
			cell((enum row)r, &cols[i], buf, sizeof(buf));
			fprintf(out, markdown ? " %s |" : " %12s", buf);
		}
		fprintf(out, "\n");
	}
}

/* ---- which rule moved which number ---- */

static const char *value_name(enum rule k, int v)
{
	static const char *const success[] = { "strict", "no [DONE] ok", "tokenless ok", "tokenless and no [DONE] ok" };
	switch (k) {
	case RULE_CLOCK: return ls_origin_name((enum ls_origin)v);
	case RULE_GATE: return ls_gate_name((enum ls_ttft_gate)v);
	case RULE_ITL: return v == LS_ITL_TOKEN ? "per-token" : "per-frame";
	case RULE_END: return ls_e2el_end_name((enum ls_e2el_end)v);
	case RULE_OUT: return ls_out_tokens_name((enum ls_out_tokens)v);
	case RULE_SUCCESS: return success[v & 3];
	case RULE_SHOWN: return v ? "yes" : "no";
	default: return "?";
	}
}

/* "P99" or "P99; ITL P95/P99 + max" */
static void pcts_desc(const struct ls_read_rules *r, char *buf, size_t cap)
{
	size_t len = 0;
	buf[0] = 0;
	for (size_t k = 0; k < r->n_percentiles && len < cap; k++)
		len += (size_t)snprintf(buf + len, cap - len, "%sP%g", k ? "/" : "", r->percentiles[k]);
	if ((r->n_itl_percentiles || r->itl_max) && len < cap) {
		len += (size_t)snprintf(buf + len, cap - len, ", ITL ");
		const double *p = r->n_itl_percentiles ? r->itl_percentiles : r->percentiles;
		size_t n = r->n_itl_percentiles ? r->n_itl_percentiles : r->n_percentiles;
		for (size_t k = 0; k < n && len < cap; k++)
			len += (size_t)snprintf(buf + len, cap - len, "%sP%g", k ? "/" : "", p[k]);
		if (r->itl_max && len < cap)
			snprintf(buf + len, cap - len, " + max");
	}
}

/* Profiles (names) whose rule k has value v. */
static void who(const struct ls_cmp_col *cols, size_t n_cols, enum rule k, int v, char *buf, size_t cap)
{
	size_t len = 0;
	buf[0] = 0;
	for (size_t i = 0; i < n_cols && len < cap; i++)
		if (rule_value(k, &cols[i].rules) == v)
			len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", cols[i].prof.name);
}

/* The percentiles each profile prints, when they differ. */
static void pcts_row(FILE *out, const struct ls_cmp_col *cols, size_t n_cols)
{
	char descs[LS_CMP_MAX_PROFILES][96], names[256];
	size_t nd = 0;
	for (size_t i = 0; i < n_cols; i++) {
		char d[96];
		pcts_desc(&cols[i].rules, d, sizeof(d));
		size_t j = 0;
		while (j < nd && strcmp(descs[j], d))
			j++;
		if (j == nd)
			snprintf(descs[nd++], sizeof(descs[0]), "%s", d);
	}
	if (nd < 2)
		return;
	fprintf(out, "  %s:", rule_labels[RULE_PCTS]);
	for (size_t j = 0; j < nd; j++) {
		size_t len = 0;
		names[0] = 0;
		for (size_t i = 0; i < n_cols; i++) {
			char d[96];
			pcts_desc(&cols[i].rules, d, sizeof(d));
			if (!strcmp(d, descs[j]))
				len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s", len ? ", " : "",
							cols[i].prof.name);
		}
		fprintf(out, "%s %s (%s)", j ? " vs" : "", descs[j], names);
	}
	fprintf(out, "\n");
}

/* The numbers rule k moves, one per value: m[j] is the first column's reading with the j-th. */
static void effect_numbers(FILE *out, enum rule k, const struct ls_metrics *const *m, size_t nv)
{
#define SERIES(fmt, expr)                                                           \
	do {                                                                        \
		for (size_t j = 0; j < nv; j++)                                     \
			fprintf(out, j ? " vs " fmt : fmt, (expr));                 \
	} while (0)
	switch (k) {
	case RULE_CLOCK:
		SERIES("%.2f ms", m[j]->ttft.mean_ms);
		fprintf(out, " TTFT, ");
		SERIES("%.2f ms", m[j]->e2el.mean_ms);
		fprintf(out, " E2EL (mean)");
		break;
	case RULE_GATE:
		SERIES("%.2f ms", m[j]->ttft.mean_ms);
		fprintf(out, " TTFT, ");
		SERIES("%.2f ms", m[j]->itl.mean_ms);
		fprintf(out, " ITL (mean), ");
		SERIES("%zu", m[j]->itl.n);
		fprintf(out, " ITL samples");
		break;
	case RULE_ITL:
		SERIES("%.2f ms", m[j]->itl.mean_ms);
		fprintf(out, " (mean; median ");
		SERIES("%.2f", m[j]->itl.median_ms);
		fprintf(out, ")");
		break;
	case RULE_END:
		SERIES("%.2f ms", m[j]->e2el.mean_ms);
		fprintf(out, " E2EL, ");
		SERIES("%.3f ms", m[j]->tpot.mean_ms);
		fprintf(out, " TPOT (mean)");
		break;
	case RULE_OUT:
		SERIES("%llu", (unsigned long long)m[j]->total_output);
		fprintf(out, " tokens, ");
		SERIES("%.3f ms", m[j]->tpot.mean_ms);
		fprintf(out, " TPOT (mean)");
		break;
	case RULE_SUCCESS:
		SERIES("%zu", m[j]->completed);
		fprintf(out, " successful, ");
		SERIES("%.2f ms", m[j]->ttft.mean_ms);
		fprintf(out, " TTFT (mean)");
		break;
	case RULE_SHOWN:
		fprintf(out, "%zu failed request%s left out of the headline", m[0]->failed, m[0]->failed == 1 ? "" : "s");
		break;
	default:
		break;
	}
#undef SERIES
}

/* A rule the profiles disagree on: its values, what each did to the first column's reading
 * (ls_cmp_compute measured it), and who has which. */
static void effect_row(FILE *out, const struct ls_cmp_col *cols, size_t n_cols, enum rule k)
{
	int vals[LS_CMP_MAX_PROFILES];
	const struct ls_metrics *m[LS_CMP_MAX_PROFILES];
	size_t nv = 0;
	char names[256];
	if (k == RULE_PCTS) {
		pcts_row(out, cols, n_cols);
		return;
	}
	for (size_t i = 0; i < n_cols; i++) {
		int v = rule_value(k, &cols[i].rules);
		if (first_with(cols, n_cols, k, v) != i)
			continue;
		vals[nv] = v;
		m[nv++] = !i ? &cols[0].m : cols[i].have_effect & (1u << k) ? &cols[i].effect[k] : NULL;
	}
	if (nv < 2)
		return;
	for (size_t j = 0; j < nv; j++)
		if (!m[j]) {
			fprintf(out, "  %s: not computed\n", rule_labels[k]);
			return;
		}
	fprintf(out, "  %s: ", rule_labels[k]);
	for (size_t j = 0; j < nv; j++)
		fprintf(out, "%s%s", j ? " vs " : "", value_name(k, vals[j]));
	fprintf(out, ": ");
	effect_numbers(out, k, m, nv);
	fprintf(out, " [");
	for (size_t j = 0; j < nv; j++) {
		who(cols, n_cols, k, vals[j], names, sizeof(names));
		fprintf(out, "%s%s: %s", j ? "; " : "", value_name(k, vals[j]), names);
	}
	fprintf(out, "]\n");
}

/* ---- what a run sent ---- */

static void send_desc(const struct ls_cmp_send *sent, char *buf, size_t cap)
{
	const struct ls_send_rules *s = &sent->rules;
	uint32_t b[4];
	char lens[96] = "";
	bounds(sent, b);
	if (sent->random)
		snprintf(lens, sizeof(lens), ", lengths (%s ratio %g) input [%u, %u] output [%u, %u]",
			 ls_range_semantics_name(s->range_semantics), sent->range_ratio, b[0], b[1], b[2], b[3]);
	snprintf(buf, cap, "backend %s, arrival %s, connection %s, %u warmup%s%s, ignore_eos %s%s",
		 ls_backend_name(s->backend), ls_arrival_kind_name(s->arrival),
		 s->per_request_conn ? "per-request" : "reuse", s->num_warmups, s->num_warmups == 1 ? "" : "s",
		 s->num_warmups ? (s->warmup_shape == LS_WARMUP_SGLANG ? " (sglang shape)" : " (vllm shape)") : "",
		 s->ignore_eos ? "on" : "off", lens);
}

static const char *warmup_desc(const struct ls_send_rules *s)
{
	return s->num_warmups ? (s->warmup_shape == LS_WARMUP_SGLANG ? " capped + 1 s pause" : " full") : "";
}

/* The send rules on which run k differs from run 1 (index 0). */
static void send_diff_row(FILE *out, const struct ls_cmp_send *sx, const struct ls_cmp_send *sy, size_t k)
{
	const struct ls_send_rules *x = &sx->rules, *y = &sy->rules;
	const char *sep = " ";
	fprintf(out, "  send rules, run 1 vs run %zu:", k + 1);
	if (x->arrival != y->arrival) {
		fprintf(out, "%sarrival %s vs %s", sep, ls_arrival_kind_name(x->arrival), ls_arrival_kind_name(y->arrival));
		sep = "; ";
	}
	if (x->per_request_conn != y->per_request_conn) {
		fprintf(out, "%sconnection %s vs %s", sep, x->per_request_conn ? "per-request" : "reuse",
			y->per_request_conn ? "per-request" : "reuse");
		sep = "; ";
	}
	if (x->backend != y->backend) {
		fprintf(out, "%sbackend %s vs %s", sep, ls_backend_name(x->backend), ls_backend_name(y->backend));
		sep = "; ";
	}
	if (x->num_warmups != y->num_warmups || (x->num_warmups && x->warmup_shape != y->warmup_shape)) {
		fprintf(out, "%swarmups %u%s vs %u%s", sep, x->num_warmups, warmup_desc(x), y->num_warmups,
			warmup_desc(y));
		sep = "; ";
	}
	if (x->ignore_eos != y->ignore_eos) {
		fprintf(out, "%signore_eos %s vs %s", sep, x->ignore_eos ? "on" : "off", y->ignore_eos ? "on" : "off");
		sep = "; ";
	}
	uint32_t bx[4], by[4];
	bounds(sx, bx);
	bounds(sy, by);
	if (memcmp(bx, by, sizeof(bx)))
		fprintf(out, "%slengths (%s ratio %g vs %s ratio %g) input [%u, %u] vs [%u, %u], output [%u, %u] vs "
			     "[%u, %u]", sep, ls_range_semantics_name(x->range_semantics), sx->range_ratio,
			ls_range_semantics_name(y->range_semantics), sy->range_ratio, bx[0], bx[1], by[0], by[1], bx[2],
			bx[3], by[2], by[3]);
	fprintf(out, "\n");
}

/* Run k read by the first column's rules (ls_cmp_compute), NULL when not computed. */
static const struct ls_metrics *read_by_first(const struct ls_cmp_run *runs, const struct ls_cmp_col *cols, size_t k)
{
	if (k == cols[0].run)
		return cols[0].have_m ? &cols[0].m : NULL;
	return runs[k].have_by_first ? &runs[k].by_first : NULL;
}

/* The wait for a concurrency slot in run k: only the schedule clock sees it. */
static void slot_wait_row(FILE *out, const struct ls_cmp_run *runs, size_t k, const struct ls_cmp_col *cols,
			  size_t n_cols)
{
	char a[256], b[256];
	const struct ls_metrics *m = read_by_first(runs, cols, k); /* metrics' slot wait: the ok requests' */
	if (!m)
		return;
	size_t la = 0, lb = 0;
	a[0] = b[0] = 0;
	for (size_t i = 0; i < n_cols; i++) {
		if (cols[i].run != k)
			continue;
		if (cols[i].rules.origin == LS_ORIGIN_SCHEDULED)
			la += (size_t)snprintf(a + la, sizeof(a) - la, "%s%s", la ? ", " : "", cols[i].prof.name);
		else
			lb += (size_t)snprintf(b + lb, sizeof(b) - lb, "%s%s", lb ? ", " : "", cols[i].prof.name);
		la = la < sizeof(a) ? la : sizeof(a) - 1;
		lb = lb < sizeof(b) ? lb : sizeof(b) - 1;
	}
	fprintf(out, "  hidden slot wait, run %zu: admitted - scheduled mean %.2f ms, max %.2f ms; counted by %s, "
		     "hidden from %s (their clock starts after the slot)\n", k + 1, m->slot_wait.mean_ms, m->slot_wait.max_ms,
		la ? a : "none", lb ? b : "none");
}

static void send_rows(FILE *out, const struct ls_cmp_run *runs, size_t n_runs, const struct ls_cmp_col *cols,
		      size_t n_cols)
{
	for (size_t k = 1; k < n_runs; k++) {
		if (!runs[0].send_known || !runs[k].send_known)
			continue;
		send_diff_row(out, &runs[0].send, &runs[k].send, k);
		/* Both runs read under the first profile's rules: what sending differently did. */
		const struct ls_metrics *mx = read_by_first(runs, cols, 0), *my = read_by_first(runs, cols, k);
		if (!mx || !my)
			continue;
		fprintf(out, "    read by %s's rules: TTFT %.2f vs %.2f ms, E2EL %.2f vs %.2f ms (mean), duration %.2f vs "
			     "%.2f s, realised %.2f vs %.2f req/s\n", cols[0].prof.name, mx->ttft.mean_ms, my->ttft.mean_ms,
			mx->e2el.mean_ms, my->e2el.mean_ms, mx->duration_s, my->duration_s, mx->realised_rate,
			my->realised_rate);
	}
	for (size_t k = 0; k < n_runs; k++) {
		const struct ls_metrics *m = read_by_first(runs, cols, k);
		if (!m)
			continue;
		size_t opened = m->conns_opened, n = m->n_measured;
		double conn_ms = m->conn_setup_mean_ms;
		fprintf(out, "  connections, run %zu (%s): %zu opened for %zu requests, connect (+TLS) %.3f ms each, inside "
			     "the TTFT of %s\n", k + 1, runs[k].profiles, opened, n, conn_ms,
			opened >= n && n ? "every request" : opened ? "those requests only" : "none");
	}
	for (size_t k = 0; k < n_runs; k++)
		slot_wait_row(out, runs, k, cols, n_cols);
}

void ls_cmp_print_effects(FILE *out, const struct ls_cmp_run *runs, size_t n_runs, const struct ls_cmp_col *cols,
			  size_t n_cols)
{
	for (int k = 0; k < RULE__COUNT; k++)
		effect_row(out, cols, n_cols, (enum rule)k);
	send_rows(out, runs, n_runs, cols, n_cols);
}

void ls_cmp_run_desc(const struct ls_cmp_run *run, char *buf, size_t cap)
{
	if (run->send_known)
		send_desc(&run->send, buf, cap);
	else
		snprintf(buf, cap, "records %s (sent by profile %s, arrival %s, backend %s)",
			 run->record_path[0] ? run->record_path : "-", run->meta.profile[0] ? run->meta.profile : "?",
			 run->meta.arrival[0] ? run->meta.arrival : "?", run->meta.backend[0] ? run->meta.backend : "?");
}

void ls_cmp_print(FILE *out, const struct ls_cmp_run *runs, size_t n_runs, const struct ls_cmp_col *cols,
		  size_t n_cols, int markdown)
{
	char desc[256];
	if (!n_cols)
		return;
	fprintf(out, "============ latscope compare: %zu profile%s, %zu run%s ============\n", n_cols,
		n_cols == 1 ? "" : "s", n_runs, n_runs == 1 ? "" : "s");
	for (size_t k = 0; k < n_runs; k++) {
		if (runs[k].send_known) {
			send_desc(&runs[k].send, desc, sizeof(desc));
			fprintf(out, "run %zu (%s): %s\n", k + 1, runs[k].profiles, desc);
		} else {
			fprintf(out, "run %zu (%s): records %s (sent by profile %s, arrival %s, backend %s)\n", k + 1,
				runs[k].profiles, runs[k].record_path[0] ? runs[k].record_path : "-",
				runs[k].meta.profile[0] ? runs[k].meta.profile : "?",
				runs[k].meta.arrival[0] ? runs[k].meta.arrival : "?",
				runs[k].meta.backend[0] ? runs[k].meta.backend : "?");
		}
	}
	if (n_runs > 1)
		fprintf(out, "Profiles that send alike were read from one run's records; each run went to the same "
			     "server in turn.\n");
	for (size_t i = 0; i < n_cols; i++)
		if (cols[i].switched)
			fprintf(out, "%s: the server reported accept length %.2f, so its headline ITL is per token\n",
				cols[i].prof.name, runs[cols[i].run].accept_len);
	fprintf(out, "\n");
	print_table(out, cols, n_cols, markdown);
	fprintf(out, "\nRules that differ, one at a time on run %zu's records (%s's rules otherwise):\n", cols[0].run + 1,
		cols[0].prof.name);
	ls_cmp_print_effects(out, runs, n_runs, cols, n_cols);
	for (size_t k = 0; k < n_runs; k++) {
		size_t first = first_on_run(cols, n_cols, k);
		if (first == n_cols || !runs[k].checks.n)
			continue;
		fprintf(out, "\nChecks, run %zu (read by %s's rules):\n", k + 1, cols[first].prof.name);
		ls_checks_print(out, &runs[k].checks);
	}
}
