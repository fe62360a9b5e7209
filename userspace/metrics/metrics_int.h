/* metrics_int.h — what metrics.c and metrics_request.c share: the gate with its running
 * state, and the per-frame token estimate. Not a public interface. */
#ifndef LATSCOPE_METRICS_INT_H
#define LATSCOPE_METRICS_INT_H

#include <stdint.h>
#include "metrics/metrics.h"

/* Seconds from one stamp to another, negative when `to` is earlier. */
static inline double span_s(uint64_t from, uint64_t to)
{
	return to >= from ? (double)(to - from) / 1e9 : -((double)(from - to) / 1e9);
}

/* A frame claiming more tokens than this is clamped when its gap is spread (token ITL). */
#define ITL_TOKENS_CAP 4096

/* Whether a frame passes the gate; cum_text carries the text seen so far (CUM_TEXT). Call
 * for every frame of a request, in order. */
int ls_gate_pass(const struct ls_frame *fr, enum ls_ttft_gate gate, uint64_t *cum_text);

/* Token counts for gated frames that carry none (OpenAI streams without continuous usage).
 * Each such frame made at least one token; whatever the request's usage total leaves beyond
 * that is spread over their text bytes, rounded cumulatively so the counts add up (SGLang
 * re-tokenizes each chunk's text, which latscope does not keep). */
struct ls_tok_est {
	double   extra_per_byte;
	double   acc;
	uint64_t given;
};
void ls_tok_est_init(const struct ls_request *r, const struct ls_read_rules *rules, struct ls_tok_est *e);
/* The next gated frame's tokens (call for every gated frame, in order). */
uint32_t ls_tok_next(const struct ls_frame *fr, struct ls_tok_est *e);

#endif
