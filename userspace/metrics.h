/* metrics.h — TTFT, TPOT, ITL, E2EL, throughput, goodput and percentiles, as pure functions of
 * a run's records plus the read rules of a profile (DESIGN.md principle 1). Nothing here does
 * I/O; the same records give vLLM's, SGLang's and latscope's numbers by changing the rules. */
#ifndef LATSCOPE_METRICS_H
#define LATSCOPE_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include "record.h"

/* Where a request's latency clock starts. */
enum ls_clock {
	LS_CLOCK_SCHEDULED, /* the arrival process said go (coordinated omission corrected) */
	LS_CLOCK_ADMITTED,  /* it got a concurrency slot */
	LS_CLOCK_STARTED,   /* handed to libcurl: where vLLM and SGLang take `st` */
	LS_CLOCK__COUNT
};

/* Which frame is the first token (and which frames count as tokens at all). */
enum ls_ttft_gate {
	LS_GATE_CHOICES, /* any frame with choices, empty text included (vLLM) */
	LS_GATE_TEXT,    /* only frames whose text is non-empty (SGLang's OpenAI client) */
};

enum ls_itl_mode {
	LS_ITL_FRAME, /* one sample per frame gap (vLLM's chunk ITL) */
	LS_ITL_TOKEN, /* a gap spread over the tokens its frame carried (SGLang's amortised ITL) */
};

enum ls_e2el_end {
	LS_END_LAST_CONTENT, /* the last token frame (vLLM's most_recent_timestamp) */
	LS_END_DONE,         /* the [DONE] frame (SGLang) */
	LS_END_LAST_BYTE,    /* the transfer completed (latscope honest) */
};

#define LS_MAX_PERCENTILES 16

/* The read-side rules a profile fixes. */
struct ls_read_rules {
	enum ls_clock     clock;
	enum ls_ttft_gate ttft_gate;
	enum ls_itl_mode  itl_mode;
	enum ls_e2el_end  e2el_end;
	int    failures_in_headline;      /* the headline block shows failed requests */
	double itl_divisor;               /* > 0: headline ITL samples divided by it (sglang-oai divides
					   * chunk ITL by the server's avg_spec_accept_length); 0 = off */
	size_t n_percentiles;
	double percentiles[LS_MAX_PERCENTILES]; /* e.g. 50, 90, 99 */
};

/* --goodput ttft:900 tpot:50 e2el:14100 (ms), vLLM semantics: a request is good when it
 * meets every SLO given. */
struct ls_goodput {
	int    has_ttft, has_tpot, has_e2el;
	double ttft_ms, tpot_ms, e2el_ms;
};

const char *ls_clock_name(enum ls_clock clock);      /* "scheduled" | "admitted" | "started" */
const char *ls_gate_name(enum ls_ttft_gate gate);    /* "choices" | "text" */
const char *ls_itl_mode_name(enum ls_itl_mode mode); /* "frame" | "token" */
const char *ls_e2el_end_name(enum ls_e2el_end end);  /* "last_content" | "done" | "last_byte" */
int ls_clock_parse(const char *s, enum ls_clock *out);      /* 0 / -EINVAL */
int ls_gate_parse(const char *s, enum ls_ttft_gate *out);
int ls_itl_mode_parse(const char *s, enum ls_itl_mode *out);
int ls_e2el_end_parse(const char *s, enum ls_e2el_end *out);
/* "50,90,99" -> rules->percentiles; 0 or -EINVAL (each in (0, 100], at most 16). */
int ls_percentiles_parse(const char *s, struct ls_read_rules *rules);
/* "ttft:900" added to g; 0 or -EINVAL (names ttft, tpot, e2el; value >= 0 ms). */
int ls_goodput_parse(const char *s, struct ls_goodput *g);

/* One request read under the rules. Times in seconds. */
struct ls_req_view {
	int      ok;             /* finished without failure and produced a first token */
	int      no_first_token; /* finished "ok" but no frame passed the gate (vLLM fails these) */
	uint64_t first_ns;       /* first token frame */
	uint64_t end_ns;         /* E2EL end under the rule */
	uint32_t input_tokens;   /* usage prompt_tokens, else what latscope built */
	uint32_t output_tokens;  /* usage completion_tokens, else counted from frames */
	uint32_t token_frames;   /* frames that passed the gate */
	double   ttft_s[LS_CLOCK__COUNT];
	double   e2el_s[LS_CLOCK__COUNT];
	double   tpot_s;         /* (e2el - ttft) / (output_tokens - 1); 0 when output_tokens <= 1 */
	int      has_tpot;       /* output_tokens > 1 */
	double   slot_wait_s;    /* admitted - scheduled */
	double   dispatch_s;     /* started - admitted */
	double   queue_s;        /* started - scheduled: vLLM's client_queue_time */
};

/* Fills v; returns v->ok. */
int ls_request_view(const struct ls_request *r, const struct ls_read_rules *rules, struct ls_req_view *v);

/* ITL samples of one ok request under mode (seconds), written up to cap; returns how many
 * there are (call with cap 0 to size). Frame mode: one per gap between token frames; token
 * mode: each gap divided by the tokens its frame added, repeated that many times; frames
 * adding 0 tokens are skipped (SGLang); unknown counts are 1. */
size_t ls_request_itls(const struct ls_request *r, const struct ls_read_rules *rules, enum ls_itl_mode mode,
		       double *out, size_t cap);

/* Summary of a sample (ms). Empty samples give zeros, as vLLM's np.mean(x or 0). */
struct ls_stat {
	size_t n;
	double mean_ms, median_ms, std_ms, min_ms, max_ms;
	double pct_ms[LS_MAX_PERCENTILES]; /* at rules.percentiles */
};

/* numpy's default (linear) percentile of an ascending array; p in [0, 100]. */
double ls_percentile(const double *sorted, size_t n, double p);
/* Sorts values (seconds) in place and summarises them in ms. */
void ls_stat_compute(double *values, size_t n, const struct ls_read_rules *rules, struct ls_stat *out);

#define LS_TPF_MAX 16 /* tokens-per-frame histogram: 0..15, then 16+ in the last bucket */

struct ls_metrics {
	struct ls_read_rules rules;
	struct ls_goodput    goodput;
	size_t   n_measured;        /* non-warmup requests */
	size_t   completed;         /* ok under the rules */
	size_t   failed;            /* n_measured - completed */
	size_t   fail_counts[LS_FAIL__COUNT];
	size_t   no_first_token;    /* among failed: finished without a gated frame */
	double   duration_s;        /* run start -> last measured request finished */
	uint64_t total_input;
	uint64_t total_output;
	double   request_throughput, output_throughput, total_token_throughput;
	int      has_goodput;
	size_t   good_completed;
	double   request_goodput;
	double   peak_output_tps;   /* vLLM: max tokens in a one-second bucket from the first start */
	uint32_t peak_concurrency;  /* max requests in flight, [started, end) sweep */
	double   littles_concurrency; /* sum of E2EL / duration (SGLang's "Concurrency") */
	double   realised_rate;     /* requests started / (last start - run start) */
	double   target_rate;       /* from the run, 0 = inf/closed */

	/* Headline stats under the rules, plus every clock and both ITL modes. */
	struct ls_stat ttft, tpot, itl, e2el;
	struct ls_stat ttft_by_clock[LS_CLOCK__COUNT], e2el_by_clock[LS_CLOCK__COUNT];
	struct ls_stat itl_frame, itl_token;
	struct ls_stat slot_wait, dispatch, queue; /* queue = started - scheduled */

	/* Tokens per gated frame (speculative decoding shows here): counts per bucket. */
	uint64_t tpf_hist[LS_TPF_MAX + 1];
	uint64_t tpf_unknown;
	double   tpf_mean;          /* over frames with known counts; 0 when none */
	double   tpf_usage_mean;    /* usage completion tokens / token frames, over ok requests with usage */

	/* Per measured request, in run order (vLLM's result arrays): index i is the i-th
	 * measured request. Failed requests have 0 latencies and output length 0. */
	size_t    n;
	double   *ttfts_s, *e2els_s, *slot_waits_s, *queue_times_s, *start_times_s;
	uint32_t *input_lens, *output_lens;
	int      *ok;
	size_t   *itl_off;          /* request i's ITLs (headline mode) are itl_pool[itl_off[i] .. itl_off[i+1]) */
	double   *itl_pool;
};

/* Computes everything. 0 or -ENOMEM. run->start_ns / end_ns give the duration; when end_ns
 * is 0 (an interrupted or reloaded run) the last measured finish is used. */
int ls_metrics_compute(const struct ls_run *run, const struct ls_read_rules *rules,
		       const struct ls_goodput *goodput, struct ls_metrics *m);
void ls_metrics_free(struct ls_metrics *m);

#endif
