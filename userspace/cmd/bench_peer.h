/* bench_peer.h — what `latscope bench` does for the peers' flags around its run: each
 * request's body and headers (driver/request_extra.h), vLLM's ramp-up schedule, the server
 * controls (--profile's /start_profile and /stop_profile, SGLang's /flush_cache), vLLM's result
 * file name with --label and ramp-up, SGLang's JSONL output file and --print-requests. */
#ifndef LATSCOPE_BENCH_PEER_H
#define LATSCOPE_BENCH_PEER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "config/config.h"
#include "driver/driver.h"
#include "server/bench_server.h"
#include "report/report.h"

/* *body (malloc'd, from ls_backend_body) with the run's sampling parameters, LoRA pick, extra
 * body and suffix applied, for request index i (measured) or a warmup. 0 or -errno (message). */
int ls_bench_peer_body(const struct ls_config *c, size_t i, int warmup, uint64_t rng[2], char **body, size_t *len);

/* The headers and (for measured requests) the request id prefix. */
void ls_bench_peer_driver(const struct ls_config *c, struct ls_driver_opts *o, int measured);

/* vLLM's ramp-up schedule when --ramp-up-strategy was given: 1 (a set up, desc filled), 0 (no
 * ramp-up), or -errno after a message. */
int ls_bench_peer_arrival(const struct ls_config *c, struct ls_arrival *a, size_t n, char *desc, size_t cap);
/* The lines vLLM prints for its traffic before the run (the rate as Python prints a float, or the
 * ramp-up). */
void ls_bench_peer_traffic_lines(FILE *out, const struct ls_config *c);

/* Before the measured run (after warmups): POST /flush_cache, then /start_profile. After it:
 * /stop_profile. Failures are reported and the run goes on, as both peers do. */
void ls_bench_peer_before_run(const struct ls_config *c, const struct ls_server *s);
void ls_bench_peer_after_run(const struct ls_config *c, const struct ls_server *s);

/* vLLM's result file name (compute_result_filename: label or backend, rate as a Python float,
 * ramp-up) into name. */
void ls_bench_peer_result_name(const struct ls_config *c, const char *model, const char *date, char *name, size_t cap);

/* The report pieces from the config; request_json: ls_request_extra_summary (kept by caller). */
void ls_bench_peer_report(const struct ls_config *c, const char *request_json, struct ls_peer_report *pr);
/* One line, first in the report, when SGLang's backend runs under vLLM's rules. */
void ls_bench_peer_rules_line(FILE *out, const struct ls_config *c);
/* SGLang's JSONL (--output-file, or its default name under --harness sglang) and
 * --print-requests. 0, or 1 when the file could not be written (said why). */
int ls_bench_peer_outputs(const struct ls_config *c, const struct ls_metrics *m, const struct ls_run *run,
			  const struct ls_report_ctx *ctx);

#endif
