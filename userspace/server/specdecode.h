/* specdecode.h — the server's speculative-decoding counters, read before and after a run:
 * vLLM's Prometheus counters on GET /metrics (vllm:spec_decode_num_drafts_total,
 * ..._num_draft_tokens_total, ..._num_accepted_tokens_total, ..._num_accepted_tokens_per_pos_total)
 * or SGLang's GET /server_info internal_states[0].avg_spec_accept_length. The block printed
 * is vLLM's; latscope's own tokens-per-frame distribution (metrics.h) sits next to it. */
#ifndef LATSCOPE_SPECDECODE_H
#define LATSCOPE_SPECDECODE_H

#include <stdint.h>
#include "server/http_easy.h"

#define LS_SPEC_MAX_POS 32

struct ls_spec_snapshot {
	int      has_counters;          /* /metrics had vllm:spec_decode_*_total */
	uint64_t drafts, draft_tokens, accepted;
	uint64_t per_pos[LS_SPEC_MAX_POS];
	int      n_pos;                 /* positions seen (highest + 1) */
	int      has_avg;               /* /server_info had avg_spec_accept_length */
	double   avg_accept_len;
};

struct ls_spec_stats {
	int      has;                   /* counters moved during the run (vLLM's rule: draft tokens > 0) */
	uint64_t drafts, draft_tokens, accepted;
	double   acceptance_rate_pct;   /* accepted / draft tokens * 100 */
	double   acceptance_length;     /* 1 + accepted / drafts */
	double   per_pos_rate[LS_SPEC_MAX_POS];
	int      n_pos;
	int      has_avg;               /* SGLang: the server's own average after the run */
	double   avg_accept_len;
};

/* Pure parsers (tested on text). 0 when something was found, -1 otherwise. */
int ls_spec_parse_prometheus(const char *text, struct ls_spec_snapshot *s);
int ls_spec_parse_server_info(const char *json, struct ls_spec_snapshot *s);

/* Reads base/metrics, then base/server_info. Fills what it finds; never fails the run. */
void ls_spec_snapshot(const char *base, const struct ls_http_opts *o, struct ls_spec_snapshot *s);

/* after - before, as vLLM computes it. */
void ls_spec_delta(const struct ls_spec_snapshot *before, const struct ls_spec_snapshot *after,
		   struct ls_spec_stats *out);

#endif
