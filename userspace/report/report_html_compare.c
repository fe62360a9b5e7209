/* report_html_compare.c — the compare page (html.h): a column per profile with the table
 * ls_cmp_print prints (the same cells), its effect rows, every profile's TTFT and ITL CDFs on
 * one chart each, and each run's checks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/stats.h"
#include "metrics/checks.h"
#include "report/html_int.h"

static void cmp_table(struct ls_page *p, const struct ls_cmp_col *cols, size_t n_cols)
{
	char buf[64];
	lp_puts(p, "<table><tr><th>Metric</th>");
	for (size_t i = 0; i < n_cols; i++) {
		lp_puts(p, "<th>");
		lp_text(p, cols[i].prof.name);
		lp_puts(p, "</th>");
	}
	lp_puts(p, "</tr>\n");
	for (size_t r = 0; r < ls_cmp_n_rows(); r++) {
		lp_puts(p, "<tr><td>");
		lp_text(p, ls_cmp_row_label(r));
		lp_puts(p, "</td>");
		for (size_t i = 0; i < n_cols; i++) {
			ls_cmp_cell(r, &cols[i], buf, sizeof(buf));
			lp_puts(p, "<td class=\"n\">");
			lp_text(p, buf);
			lp_puts(p, "</td>");
		}
		lp_puts(p, "</tr>\n");
	}
	lp_puts(p, "</table>\n");
}

/* The rows ls_cmp_print prints after the table, one list item per line. */
static void cmp_effects(struct ls_page *p, const struct ls_cmp_run *runs, size_t n_runs, const struct ls_cmp_col *cols,
			size_t n_cols)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f) {
		p->err = -ENOMEM;
		return;
	}
	ls_cmp_print_effects(f, runs, n_runs, cols, n_cols);
	fclose(f);
	lp_puts(p, "<ul>\n");
	for (char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		while (*line == ' ')
			line++;
		if (!*line)
			continue;
		lp_puts(p, "<li>");
		lp_text(p, line);
		lp_puts(p, "</li>\n");
	}
	lp_puts(p, "</ul>\n");
	free(text);
}

/* The ok requests' TTFTs (ITL samples when itl) of one column's reading, sorted, as one series. */
static void cmp_series(cJSON *series, const struct ls_cmp_col *c, int itl)
{
	const struct ls_metrics *m = &c->m;
	size_t n = itl ? (m->itl_off ? m->itl_off[m->n] : 0) : m->n, k = 0;
	double *v = malloc((n + 1) * sizeof(*v));
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		if (itl || m->ok[i])
			v[k++] = itl ? m->itl_pool[i] : m->ttfts_s[i];
	ls_sort_doubles(v, k);
	cJSON *o = cJSON_CreateObject();
	if (o && cJSON_AddItemToArray(series, o)) {
		char name[96];
		snprintf(name, sizeof(name), "%s (from %s%s)", c->prof.name, ls_origin_name(c->rules.origin),
			 itl ? c->rules.itl_mode == LS_ITL_TOKEN ? ", per token" : ", per frame" : "");
		cJSON_AddStringToObject(o, "name", name);
		cJSON_AddItemToObject(o, "pts", lp_cdf(v, k, 1000));
	} else {
		cJSON_Delete(o);
	}
	free(v);
}

static void cmp_cdfs(struct ls_page *p, const struct ls_cmp_col *cols, size_t n_cols)
{
	static const char *const titles[2] = { "TTFT under each profile (CDF)", "ITL under each profile (CDF)" };
	static const char *const notes[2] = {
		"Each profile's own reading of its run: its clock, its first-token gate, its success rule.",
		"Each profile's headline ITL: per frame (vLLM) or per token (SGLang).",
	};
	lp_puts(p, "<div class=\"grid\">\n");
	for (int itl = 0; itl < 2; itl++) {
		cJSON *c = lp_chart(p, "cdf", titles[itl], notes[itl]);
		cJSON *series = cJSON_AddArrayToObject(c, "series");
		cJSON_AddStringToObject(c, "xlabel", itl ? "ITL (ms)" : "TTFT (ms)");
		for (size_t i = 0; series && i < n_cols; i++)
			if (cols[i].have_m)
				cmp_series(series, &cols[i], itl);
	}
	lp_puts(p, "</div>\n");
}

static void cmp_checks(struct ls_page *p, const struct ls_cmp_run *runs, size_t n_runs)
{
	for (size_t k = 0; k < n_runs; k++) {
		if (!runs[k].checks.n)
			continue;
		lp_printf(p, "<h3>Checks, run %zu (", k + 1);
		lp_text(p, runs[k].profiles);
		lp_puts(p, ")</h3>\n<ul class=\"checks\">\n");
		for (size_t i = 0; i < runs[k].checks.n; i++) {
			const struct ls_check *c = &runs[k].checks.c[i];
			lp_printf(p, "<li><span class=\"%s\">%s</span> <b>%s</b>: ", c->ok ? "good" : "bad", c->ok ? "✓" : "✗",
				  ls_check_name(c->kind));
			lp_text(p, c->text);
			lp_puts(p, "</li>\n");
		}
		lp_puts(p, "</ul>\n");
	}
}

int ls_html_write_compare(const char *path, const struct ls_cmp_run *runs, size_t n_runs,
			  const struct ls_cmp_col *cols, size_t n_cols, const char *command_line,
			  const char *version)
{
	struct ls_page p;
	char desc[512], title[128];
	if (lp_init(&p)) {
		fprintf(stderr, "latscope: out of memory building the HTML page %s\n", path);
		return -ENOMEM;
	}
	snprintf(title, sizeof(title), "latscope compare: %zu profile%s, %zu run%s", n_cols, n_cols == 1 ? "" : "s", n_runs,
		 n_runs == 1 ? "" : "s");
	lp_printf(&p, "<h1>%s</h1>\n<p class=\"sub\"><code>", title);
	lp_text(&p, command_line ? command_line : "");
	lp_printf(&p, "</code> · latscope %s</p>\n<h2>The runs</h2>\n<ul>\n", version ? version : "?");
	for (size_t k = 0; k < n_runs; k++) {
		ls_cmp_run_desc(&runs[k], desc, sizeof(desc));
		lp_printf(&p, "<li>run %zu (", k + 1);
		lp_text(&p, runs[k].profiles);
		lp_puts(&p, "): ");
		lp_text(&p, desc);
		lp_puts(&p, "</li>\n");
	}
	lp_puts(&p, "</ul>\n<h2>One column per profile</h2>\n");
	cmp_table(&p, cols, n_cols);
	lp_printf(&p, "<h2>Rules that differ</h2>\n<p class=\"sub\">One at a time on run %zu's records (%s's rules "
		      "otherwise):</p>\n", n_cols ? cols[0].run + 1 : 1, n_cols ? cols[0].prof.name : "");
	cmp_effects(&p, runs, n_runs, cols, n_cols);
	lp_puts(&p, "<h2>Distributions</h2>\n");
	cmp_cdfs(&p, cols, n_cols);
	lp_puts(&p, "<h2>Checks before you believe a number</h2>\n");
	cmp_checks(&p, runs, n_runs);
	int err = lp_write(&p, path, title);
	lp_free(&p);
	return err;
}
