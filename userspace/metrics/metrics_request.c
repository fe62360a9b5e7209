/* metrics_request.c — one request read under the rules (metrics.h): which frames are token
 * frames, how many tokens each carried, TTFT/E2EL/TPOT from every clock, and its ITL samples.
 * metrics.c aggregates these over a run. */
#include <math.h>
#include <string.h>
#include "metrics/metrics.h"
#include "metrics/metrics_int.h"

/* Whether a frame passes the gate; cum_text carries the text seen so far (CUM_TEXT). */
int ls_gate_pass(const struct ls_frame *fr, enum ls_ttft_gate gate, uint64_t *cum_text)
{
	if (!(fr->flags & LS_FRAME_CHOICES))
		return 0;
	*cum_text += fr->text_len;
	switch (gate) {
	case LS_GATE_TEXT:
		return fr->text_len > 0 && !(fr->flags & LS_FRAME_EMPTY_TEXT);
	case LS_GATE_CUM_TEXT:
		return *cum_text > 0;
	default:
		return 1;
	}
}

int ls_frame_is_token(const struct ls_frame *fr, enum ls_ttft_gate gate)
{
	uint64_t cum = 0; /* CUM_TEXT without the frames before: as CHOICES (see ls_frame_gated) */
	return ls_gate_pass(fr, gate == LS_GATE_CUM_TEXT ? LS_GATE_CHOICES : gate, &cum);
}

int ls_frame_gated(const struct ls_request *r, uint32_t i, const struct ls_read_rules *rules)
{
	uint64_t cum = 0;
	int pass = 0;
	for (uint32_t k = 0; k <= i && k < r->n_frames; k++)
		pass = ls_gate_pass(&r->frames[k], rules->ttft_gate, &cum);
	return i < r->n_frames && pass;
}

void ls_tok_est_init(const struct ls_request *r, const struct ls_read_rules *rules, struct ls_tok_est *e)
{
	uint64_t cum = 0, known = 0, frames = 0, unknown = 0, unknown_bytes = 0;
	memset(e, 0, sizeof(*e));
	for (uint32_t i = 0; i < r->n_frames; i++) {
		const struct ls_frame *fr = &r->frames[i];
		if (!ls_gate_pass(fr, rules->ttft_gate, &cum))
			continue;
		frames++;
		if (fr->tokens >= 0) {
			known += (uint64_t)fr->tokens;
		} else {
			unknown++;
			unknown_bytes += fr->text_len;
		}
	}
	if (!unknown || !unknown_bytes || r->usage_completion_tokens < 0)
		return;
	double extra = (double)r->usage_completion_tokens - (double)known - (double)unknown;
	if (extra > 0)
		e->extra_per_byte = extra / (double)unknown_bytes;
}

/* The next gated frame's tokens (call for every gated frame, in order). */
uint32_t ls_tok_next(const struct ls_frame *fr, struct ls_tok_est *e)
{
	if (fr->tokens >= 0)
		return fr->tokens > ITL_TOKENS_CAP ? ITL_TOKENS_CAP : (uint32_t)fr->tokens;
	e->acc += (double)fr->text_len * e->extra_per_byte;
	uint64_t want = (uint64_t)floor(e->acc + 0.5);
	uint64_t add = want > e->given ? want - e->given : 0;
	e->given = want;
	add += 1;
	return add > ITL_TOKENS_CAP ? ITL_TOKENS_CAP : (uint32_t)add;
}

double ls_frame_tokens(const struct ls_request *r, uint32_t i, const struct ls_read_rules *rules)
{
	struct ls_tok_est e;
	uint64_t cum = 0;
	uint32_t t = 0;
	ls_tok_est_init(r, rules, &e);
	for (uint32_t k = 0; k <= i && k < r->n_frames; k++) {
		int pass = ls_gate_pass(&r->frames[k], rules->ttft_gate, &cum);
		if (pass)
			t = ls_tok_next(&r->frames[k], &e);
		if (k == i)
			return pass ? (double)t : 0.0;
	}
	return 0.0;
}

uint64_t ls_origin_ns(const struct ls_request *r, enum ls_origin c)
{
	uint64_t stamps[LS_ORIGIN__COUNT] = { r->scheduled_ns, r->admitted_ns, r->started_ns };
	for (int k = (int)c; k < LS_ORIGIN__COUNT; k++)
		if (stamps[k])
			return stamps[k];
	for (int k = (int)c - 1; k >= 0; k--)
		if (stamps[k])
			return stamps[k];
	return 0;
}

int ls_request_view(const struct ls_request *r, const struct ls_read_rules *rules, struct ls_req_view *v)
{
	memset(v, 0, sizeof(*v));
	v->first_frame = v->last_frame = -1;
	uint64_t counted = 0, cum = 0;
	int64_t cumulative = -1, text_usage = -1;
	for (uint32_t i = 0; i < r->n_frames; i++) {
		const struct ls_frame *fr = &r->frames[i];
		if (!ls_gate_pass(fr, rules->ttft_gate, &cum))
			continue;
		if (v->first_frame < 0)
			v->first_frame = (int)i;
		v->last_frame = (int)i;
		v->token_frames++;
		counted += fr->tokens >= 0 ? (uint64_t)fr->tokens : 1;
		if (fr->cum_tokens >= 0) {
			cumulative = fr->cum_tokens;
			if (fr->flags & LS_FRAME_USAGE)
				text_usage = fr->cum_tokens;
		}
	}
	v->input_tokens = r->usage_prompt_tokens >= 0 ? (uint32_t)r->usage_prompt_tokens : r->prompt_len;
	switch (rules->out_tokens) {
	case LS_OUT_USAGE:
		if (r->usage_completion_tokens >= 0)
			v->output_tokens = (uint32_t)r->usage_completion_tokens;
		else
			v->output_tokens = counted > UINT32_MAX ? UINT32_MAX : (uint32_t)counted;
		break;
	case LS_OUT_CUMULATIVE:
		v->output_tokens = cumulative >= 0 ? (uint32_t)cumulative : r->output_len;
		break;
	case LS_OUT_REQUESTED:
		v->output_tokens = text_usage >= 0 ? (uint32_t)text_usage : r->output_len;
		break;
	}
	if (r->admitted_ns && r->scheduled_ns)
		v->slot_wait_s = span_s(r->scheduled_ns, r->admitted_ns);
	if (r->started_ns && r->admitted_ns)
		v->dispatch_s = span_s(r->admitted_ns, r->started_ns);
	if (r->started_ns && r->scheduled_ns)
		v->queue_s = span_s(r->scheduled_ns, r->started_ns);
	if (r->fail != LS_OK && !(r->fail == LS_FAIL_NO_DONE && rules->no_done_ok))
		return 0;
	if (v->first_frame < 0 && !rules->no_token_ok) {
		v->no_first_token = 1;
		return 0;
	}
	v->ok = 1;
	uint64_t last_any = r->n_frames ? r->frames[r->n_frames - 1].arrived_ns : r->finished_ns;
	uint64_t last_content = v->last_frame >= 0 ? r->frames[v->last_frame].arrived_ns : last_any;
	v->first_ns = v->first_frame >= 0 ? r->frames[v->first_frame].arrived_ns : 0;
	switch (rules->e2el_end) {
	case LS_END_LAST_CONTENT:
		v->end_ns = last_content;
		break;
	case LS_END_DONE:
		v->end_ns = r->done_frame_ns ? r->done_frame_ns : last_any;
		break;
	case LS_END_LAST_BYTE:
		v->end_ns = r->finished_ns ? r->finished_ns : r->done_frame_ns ? r->done_frame_ns : last_any;
		break;
	}
	for (int c = 0; c < LS_ORIGIN__COUNT; c++) {
		uint64_t origin = ls_origin_ns(r, (enum ls_origin)c);
		/* SGLang keeps ttft = 0.0 for a stream that never carried text. */
		v->ttft_s[c] = v->first_ns ? span_s(origin, v->first_ns) : 0.0;
		v->e2el_s[c] = span_s(origin, v->end_ns);
	}
	if (v->output_tokens > 1) {
		v->has_tpot = 1;
		v->tpot_s = (v->e2el_s[LS_ORIGIN_STARTED] - v->ttft_s[LS_ORIGIN_STARTED]) / (double)(v->output_tokens - 1);
	}
	return 1;
}

size_t ls_request_itls(const struct ls_request *r, const struct ls_read_rules *rules, enum ls_itl_mode mode,
		       double *out, size_t cap)
{
	size_t n = 0;
	uint64_t prev = 0, cum = 0;
	int seen_first = 0;
	struct ls_tok_est est;
	ls_tok_est_init(r, rules, &est);
	for (uint32_t i = 0; i < r->n_frames; i++) {
		const struct ls_frame *fr = &r->frames[i];
		if (!ls_gate_pass(fr, rules->ttft_gate, &cum))
			continue;
		uint32_t t = ls_tok_next(fr, &est);
		if (!seen_first) {
			seen_first = 1;
			prev = fr->arrived_ns;
			continue;
		}
		double gap = span_s(prev, fr->arrived_ns);
		if (mode == LS_ITL_FRAME) {
			if (n < cap)
				out[n] = gap;
			n++;
		} else {
			if (t == 0)
				continue; /* SGLang: no new tokens, no sample, the gap keeps growing */
			for (uint32_t k = 0; k < t; k++, n++)
				if (n < cap)
					out[n] = gap / t;
		}
		prev = fr->arrived_ns;
	}
	return n;
}

