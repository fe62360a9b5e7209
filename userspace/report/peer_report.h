/* peer_report.h — the peers' output files beside latscope's own: vLLM's result JSON keys that
 * follow its flags (--label, --metadata, ramp-up, --append-result) and SGLang's JSONL line
 * (python/sglang/benchmark/serving.py benchmark(): `result`, with `result_details` under
 * --output-details, appended to --output-file). Plus what the run sent (sampling parameters,
 * headers by name) for the result JSON. */
#ifndef LATSCOPE_PEER_REPORT_H
#define LATSCOPE_PEER_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "base/record.h"
#include "metrics/metrics.h"
#include "metrics/metrics_probe.h"
#include "attribution/attribution.h"

struct ls_report_ctx;

struct ls_peer_report {
	const char  *label;           /* vLLM --label; NULL: the backend */
	char *const *metadata;        /* "KEY=VALUE" per --metadata: top-level keys */
	size_t       n_metadata;
	int          append_result;   /* the result JSON is one more line of the file */
	const char  *ramp;            /* "linear" / "exponential"; NULL: no ramp-up */
	int          ramp_kind;       /* enum ls_ramp (workload/ramp.h) */
	double       ramp_start_rps, ramp_end_rps;
	const char  *request_json;    /* ls_request_extra_summary: what each request carried */
	/* SGLang's JSONL line */
	const char  *tag;
	const char  *dataset_name;
	uint32_t     sharegpt_output_len, random_input_len, random_output_len;
	double       random_range_ratio;
	int          output_details;
	/* vLLM's --probe-request-rate: the probes' figures and records (NULL: no probes sent) */
	const struct ls_probe_stats *probes;
	struct ls_request *const    *probe_recs;
	/* with the eBPF probes' events: each probe's TTFT split (NULL: none), each part's mean */
	const struct ls_attribution *probe_attr;
	double       probe_ttft_split_ms[LS_PART__COUNT];
	size_t       probe_n_split;
};

struct cJSON;
/* vLLM's header keys from its flags: label, metadata, ramp_up_*, probe_* (--probe-request-rate). */
void ls_peer_json_header(struct cJSON *root, const struct ls_report_ctx *ctx);
/* vLLM's rps_change_events under a ramp-up: {"rps": N, "timestamp": ISO local time} each time
 * the integer rate of the next request dispatched goes up, from the run's start. */
void ls_peer_json_ramp_events(struct cJSON *root, const struct ls_run *run, const struct ls_report_ctx *ctx);
/* "request": what each request carried, into latscope's object; "probe_requests": the probes'
 * TTFT and E2EL figures and each probe's stamps. */
void ls_peer_json_request(struct cJSON *latscope, const struct ls_report_ctx *ctx);

/* vLLM's "Probe Requests" block (its lines, then latscope's probe TTFT) when probes were sent. */
void ls_report_probe_text(FILE *out, const struct ls_peer_report *p);

/* vLLM's per-request arrays (report_json.c), which SGLang's result_details repeat: input_lens,
 * output_lens, ttfts and itls; and generated_texts (always empty: latscope keeps no text) with
 * errors, one per measured request (no_token: the error of one that failed with no frame). */
void ls_report_json_lens_ttfts_itls(struct cJSON *root, const struct ls_metrics *m);
void ls_report_json_texts_errors(struct cJSON *root, const struct ls_metrics *m, const struct ls_run *run,
				 const char *no_token);

/* text as the next line of path (vLLM's --append-result: a newline first when the file has
 * content), whole or not at all. 0 or -errno after a message. */
int ls_report_append_line(const char *what, const char *path, const char *text);

/* SGLang's result line for the run, appended to path. 0 or -errno after a message. */
int ls_report_sglang_write(const char *path, const struct ls_metrics *m, const struct ls_run *run,
			   const struct ls_report_ctx *ctx);

/* SGLang's --print-requests, after the run: one line per measured request. */
void ls_report_print_requests(FILE *out, const struct ls_metrics *m, const struct ls_run *run);

#endif
