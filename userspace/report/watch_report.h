/* watch_report.h — `latscope watch`'s outputs: the text (the summary first, then per connection
 * and per request), the --record JSONL (every connection, request and read) and the --trace
 * (Chrome trace-event JSON, one track per connection). Reads struct ls_watch and its summary;
 * computes nothing but differences and percentiles of what they hold. */
#ifndef LATSCOPE_WATCH_REPORT_H
#define LATSCOPE_WATCH_REPORT_H

#include <stdio.h>
#include <sys/types.h>
#include "watch/watch.h"

struct ls_watch_report_ctx {
	const char *what;        /* "`curl -sN ...`" or "pid 1234" */
	const pid_t *pids;       /* client pids seen (children included) */
	size_t n_pids;
	const pid_t *server_pids;
	size_t n_server_pids;
	double watched_s;
	int exit_known, exit_code; /* the watched command's */
	const char *notes;       /* lines (the probes' and watch's), "" none */
	const char *harness_path;/* --harness-result, NULL none */
	size_t max_rows;         /* rows per table (the rest are in --record) */
	uint16_t port;
	uint64_t t0_ns;          /* the watch's start: times in the tables are from here */
	uint64_t probe_events;   /* events drained, for "events per read" */
	uint64_t lost_events;    /* events the ring buffer dropped */
};

void ls_watch_report_text(FILE *out, const struct ls_watch *w, const struct ls_watch_summary *s,
			  const struct ls_harness_result *hr, const struct ls_watch_report_ctx *ctx);
/* 0, or -errno after one line naming the path. */
int ls_watch_record_write(const char *path, const struct ls_watch *w, const struct ls_watch_report_ctx *ctx);
int ls_watch_trace_write(const char *path, const struct ls_watch *w);

#endif
