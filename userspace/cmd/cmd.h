/* cmd/ — the subcommands that wire the stages together (bench, compare, report).
 * Takes: argv, through config/.
 * Gives: a run driven, attributed, measured and reported; exit codes as in commands.h. The
 * pieces the commands share live here: the probes around a bench run (bench_probes.h) and
 * the one path from a run's records to its report (run_to_report.c, below). */
#ifndef LATSCOPE_CMD_H
#define LATSCOPE_CMD_H

#include <stdio.h>
#include "base/record.h"
#include "cmd/bench_probes.h"
#include "metrics/checks.h"
#include "metrics/metrics.h"
#include "report/record_file.h"
#include "report/report.h"
#include "report/html.h"

/* One run's numbers, as `bench` (after its run) and `report` (from a record file) both give
 * them: metrics under a profile's read rules, then the checks. */
struct ls_run_report {
	struct ls_metrics metrics;
	struct ls_checks  checks;
};

/* Metrics of run under rules and goodput (NULL: none), then the checks; arrival is the
 * schedule's kind name for the checks (NULL unknown). 0, or -ENOMEM with "latscope CMD: out
 * of memory computing metrics" on stderr (nothing to free then). */
int ls_run_report_compute(struct ls_run_report *rr, const char *cmd, const struct ls_run *run,
			  const struct ls_read_rules *rules, const struct ls_goodput *goodput,
			  const char *arrival);

/* The text report of rr to out (flushed), then the result JSON to save_path when it is not
 * NULL. ctx is the caller's labels; its num_prompts and checks are rr's. The checks block is
 * not printed: it ends the report, and bench prints its attribution section before it.
 * 0 or -errno from writing the JSON (the message names the path). */
int ls_run_report_print(FILE *out, const struct ls_run_report *rr, const struct ls_run *run,
			const struct ls_report_ctx *ctx, const char *save_path);

/* The HTML page of rr (report/html.h) to path: page gives what the run was beyond ctx (its
 * attribution, command line, connection, what was watched); the metrics, run and labels are
 * rr's, as ls_run_report_print gives them to the result JSON. 0 or -errno after a message. */
int ls_run_report_html(const char *path, const struct ls_run_report *rr, const struct ls_run *run,
		       const struct ls_report_ctx *ctx, const struct ls_html_run *page);

void ls_run_report_free(struct ls_run_report *rr);

/* A run's labels (ctx's profile, server, model, schedule, date, spec-decode counters) from what
 * it saved: bench fills meta before its run and writes it in the record file's header, report
 * reads it back, and both label the run through here. Strings point into meta. */
void ls_run_report_ctx(const struct ls_record_meta *meta, struct ls_report_ctx *ctx);

#endif
