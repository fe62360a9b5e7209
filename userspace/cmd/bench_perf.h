/* bench_perf.h — bench --perf-metrics: after the measured run, TensorRT-LLM's GET /perf_metrics
 * (trtllm-serve with return_perf_metrics and perf_metrics_max_requests), joined to the run's
 * requests by arrival time (driver/backend.h: ls_engine_perf_metrics_join), and each joined
 * request's account appended to the record file on a "latscope_engine" line (its request line
 * was written when it ended, before this read). One bounded GET (PERF_TIMEOUT_S, a size cap
 * from the run's length): an answer that hangs, fails, is too big or is no JSON list costs one
 * note, never a result. */
#ifndef LATSCOPE_BENCH_PERF_H
#define LATSCOPE_BENCH_PERF_H

#include "base/record.h"
#include "report/record_file.h"
#include "server/http_easy.h"

/* Fetches, joins into run->requests, writes the late lines to record (NULL: none). Returns how
 * many requests were joined, or -1 after its one note. */
int ls_bench_perf_metrics(const char *base, const struct ls_http_opts *http, struct ls_run *run,
			  struct ls_record_writer *record);

#endif
