/* html.h — one self-contained HTML page per run (`--html FILE`): the run, the headline numbers
 * next to the same numbers from `scheduled`, where the latency went, a timeline, distributions,
 * failures and the checks; or, for compare, a column per profile. The page opens offline: the
 * one script it runs is Debian's Chart.js (libjs-chart.js), read from disk and inlined when the
 * page is written, and its data are figures computed here in C (histograms, CDF points, per-
 * second bins), never raw per-request arrays. Every number in its tables is read from the
 * result JSON's own tree (ls_report_json_tree), marked data-key="a/b/c" with that tree's path. */
#ifndef LATSCOPE_HTML_H
#define LATSCOPE_HTML_H

#include "report/compare.h"
#include "report/report.h"

/* Debian's libjs-chart.js; LATSCOPE_CHARTJS in the environment names another copy (tests). */
#define LS_CHARTJS_PATH "/usr/share/javascript/chart.js/chart.min.js"
#define LS_HTML_TIMELINE_MAX 2000 /* requests drawn on the timeline, sampled evenly */

/* What one run's page shows beyond the metrics. Strings may be NULL. */
struct ls_html_run {
	const struct ls_metrics *m;        /* under the profile's read rules */
	const struct ls_run *run;
	const struct ls_report_ctx *ctx;   /* as the result JSON gets it (ls_run_report_ctx) */
	const struct ls_attribution *attr; /* NULL: none (attr_why says why) */
	const char *attr_why;
	const char *command_line;
	const char *version;
	const char *connection;            /* "reuse (keep-alive pool)" or "per-request" */
	const char *watched;               /* what the probes watched, or why they were off */
};

/* Before a run: the page can be made (Chart.js readable, path creatable). 0 or -errno after a
 * message naming what is missing (the package, or the path). */
int ls_html_check(const char *what, const char *path);

/* Writes the page (whole or not at all, base/outfile.h). 0 or -errno after a message. */
int ls_html_write_run(const char *path, const struct ls_html_run *h);

/* The compare page: the table and effect rows of ls_cmp_print, and every column's TTFT and
 * ITL CDFs on one chart each. 0 or -errno after a message. */
int ls_html_write_compare(const char *path, const struct ls_cmp_run *runs, size_t n_runs,
			  const struct ls_cmp_col *cols, size_t n_cols, const char *command_line,
			  const char *version);

/* "latscope bench --base-url ..." from argv, shell-quoted where needed (malloc'd, NULL on ENOMEM). */
char *ls_html_command_line(const char *prog, int argc, char **argv);

#endif
