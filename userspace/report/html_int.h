/* html_int.h — the pieces the HTML pages share (report_html_page.c): a page being built, its
 * escaping, its number cells read from the result tree, its charts' data. Not public. */
#ifndef LATSCOPE_HTML_INT_H
#define LATSCOPE_HTML_INT_H

#include <cjson/cJSON.h>
#include "base/strbuf.h"
#include "report/html.h"

struct ls_page {
	struct ls_strbuf body;  /* the page's <body> */
	cJSON *charts;          /* the charts' data: [{"id", "kind", ...}], the page's one script reads it */
	int    n_charts;        /* canvases the script must draw */
	int    err;             /* first error (-ENOMEM) */
};

int  lp_init(struct ls_page *p);
void lp_free(struct ls_page *p);
void lp_puts(struct ls_page *p, const char *s);
void lp_printf(struct ls_page *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void lp_text(struct ls_page *p, const char *s);      /* HTML-escaped */
/* The node at a "/"-separated path of tree ("latscope/ttft_by_clock/scheduled/p99_ms"), NULL none. */
const cJSON *lp_get(const cJSON *tree, const char *path);
/* <td class="n" data-key="PATH">VALUE</td>, VALUE with the given decimals ("—" when absent). */
void lp_num_cell(struct ls_page *p, const cJSON *tree, const char *path, int decimals);
/* A chart box (title, canvas, note): returns its data object to fill (kind set), NULL on ENOMEM. */
cJSON *lp_chart(struct ls_page *p, const char *kind, const char *title, const char *note);
/* A box in a chart's place saying why it is not drawn. */
void lp_missing(struct ls_page *p, const char *title, const char *why);
/* CDF points [[x, percent], ...] of n ascending values times scale, at fixed percents. */
cJSON *lp_cdf(const double *sorted, size_t n, double scale);
/* A number rounded to decimals, as a cJSON number (keeps the page's data small). */
cJSON *lp_round(double v, int decimals);
/* The whole page (head, styles, Chart.js, data, script) to path. 0 or -errno after a message. */
int  lp_write(struct ls_page *p, const char *path, const char *title);

/* The run page's sections that draw (report_html_charts.c). */
void lp_section_attribution(struct ls_page *p, const struct ls_html_run *h);
void lp_section_timeline(struct ls_page *p, const struct ls_html_run *h);
/* The server's /metrics series (--server-metrics-ms) beside latscope's in-flight count, and its
 * KV-cache use: nothing when the run did not poll. */
void lp_server_gauges(struct ls_page *p, const struct ls_html_run *h, uint64_t t0);
void lp_section_distributions(struct ls_page *p, const struct ls_html_run *h, const cJSON *tree);
/* <TAG class="n" data-key="PATH">VALUE</TAG> (lp_num_cell is this with td). */
void lp_num(struct ls_page *p, const char *tag, const cJSON *tree, const char *path, int decimals);

#endif
