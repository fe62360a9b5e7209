/* metrics.h — TTFT, TPOT, ITL, E2EL, throughput, goodput and percentiles, as pure functions of
 * a run's records plus the read rules of a profile (ARCHITECTURE.md principle 1). Nothing here does
 * I/O; the same records give vLLM's, SGLang's and latscope's numbers by changing the rules.
 * Takes: struct ls_run (base/record.h) and a profile's read rules.
 * Gives: struct ls_metrics (TTFT, TPOT, ITL, E2EL, goodput, percentiles, slot wait, concurrency,
 * connections) and the checks (checks.h). */
#ifndef LATSCOPE_METRICS_H
#define LATSCOPE_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include "base/record.h"
#include "base/stats.h" /* ls_percentile: the one percentile the stats below use */

/* Where a request's latency clock starts: its origin (the one clock itself is base/clock.h). */
enum ls_origin {
	LS_ORIGIN_SCHEDULED, /* the arrival process said go (coordinated omission corrected) */
	LS_ORIGIN_ADMITTED,  /* it got a concurrency slot */
	LS_ORIGIN_STARTED,   /* handed to libcurl: where vLLM and SGLang take `st` */
	LS_ORIGIN__COUNT
};

/* Which frame is the first token (and which frames count as tokens at all). */
enum ls_ttft_gate {
	LS_GATE_CHOICES,  /* any frame with choices, empty text included (vLLM: `if choices := ...`) */
	LS_GATE_TEXT,     /* only frames whose own text is non-empty (SGLang's OpenAI client:
			   * `if data["choices"][0]["text"]`) */
	LS_GATE_CUM_TEXT, /* every frame once the cumulative text is non-empty (SGLang's native
			   * client: `if data["text"]` on /generate's cumulative text) */
};

enum ls_itl_mode {
	LS_ITL_FRAME, /* one sample per frame gap (vLLM's chunk ITL) */
	LS_ITL_TOKEN, /* a gap spread over the tokens its frame carried (SGLang's amortised ITL);
		       * frames without a count get an estimate from the request's usage total and
		       * their text bytes (ls_frame_tokens; SGLang re-tokenizes the chunk text) */
};

enum ls_e2el_end {
	LS_END_LAST_CONTENT, /* the last token frame (vLLM's most_recent_timestamp) */
	LS_END_DONE,         /* the [DONE] frame (SGLang) */
	LS_END_LAST_BYTE,    /* the transfer completed (latscope honest) */
};

/* Where a request's output token count (TPOT's divisor, throughput) comes from. */
enum ls_out_tokens {
	LS_OUT_USAGE,      /* the usage frame's completion_tokens, else counted from frames (vLLM) */
	LS_OUT_CUMULATIVE, /* the last token frame's cumulative count, else the requested length
			    * (SGLang native: meta_info.completion_tokens) */
	LS_OUT_REQUESTED,  /* usage only when it rides in a frame with text, else the requested
			    * max_tokens (SGLang's OpenAI client) */
};

#define LS_MAX_PERCENTILES 16

/* The read-side rules a profile fixes. */
struct ls_read_rules {
	enum ls_origin    origin; 
	enum ls_ttft_gate ttft_gate;
	enum ls_itl_mode  itl_mode;
	enum ls_e2el_end  e2el_end;
	enum ls_out_tokens out_tokens;
	int    failures_in_headline;      /* the headline block shows failed requests */
	int    no_token_ok;               /* a stream that ended without a gated frame is a success
					   * with TTFT 0 (SGLang); 0: a failure (vLLM, latscope) */
	int    no_done_ok;                /* a stream that ended cleanly without [DONE] is a success
					   * (vLLM, SGLang); 0: a failure (latscope) */
	int    itl_max;                   /* the report shows max ITL (SGLang) */
	size_t n_percentiles;
	double percentiles[LS_MAX_PERCENTILES]; /* e.g. 50, 90, 99 */
	size_t n_itl_percentiles;         /* 0: ITL uses percentiles[] too */
	double itl_percentiles[LS_MAX_PERCENTILES]; /* SGLang: 95, 99 for ITL, 99 elsewhere */
};

/* --goodput ttft:900 tpot:50 e2el:14100 (ms), vLLM semantics: a request is good when it
 * meets every SLO given. */
struct ls_goodput {
	int    has_ttft, has_tpot, has_e2el;
	double ttft_ms, tpot_ms, e2el_ms;
};

const char *ls_origin_name(enum ls_origin clock);      /* "scheduled" | "admitted" | "started" */
const char *ls_gate_name(enum ls_ttft_gate gate);    /* "choices" | "text" | "cum_text" */
const char *ls_itl_mode_name(enum ls_itl_mode mode); /* "frame" | "token" */
const char *ls_e2el_end_name(enum ls_e2el_end end);  /* "last_content" | "done" | "last_byte" */
const char *ls_out_tokens_name(enum ls_out_tokens o); /* "usage" | "cumulative" | "requested" */
int ls_origin_parse(const char *s, enum ls_origin *out);      /* 0 / -EINVAL */
int ls_gate_parse(const char *s, enum ls_ttft_gate *out);
int ls_itl_mode_parse(const char *s, enum ls_itl_mode *out);
int ls_e2el_end_parse(const char *s, enum ls_e2el_end *out);
int ls_out_tokens_parse(const char *s, enum ls_out_tokens *out);
/* "50,90,99" -> rules->percentiles; 0 or -EINVAL (each in (0, 100], at most 16). The ITL
 * list follows (a flag sets one list for every metric, as vLLM's --metric-percentiles). */
int ls_percentiles_parse(const char *s, struct ls_read_rules *rules);
/* "ttft:900" added to g; 0 or -EINVAL (names ttft, tpot, e2el; value >= 0 ms). */
int ls_goodput_parse(const char *s, struct ls_goodput *g);

/* One request read under the rules. Times in seconds. */
struct ls_req_view {
	int      ok;             /* finished without failure and produced a first token */
	int      no_first_token; /* finished "ok" but no frame passed the gate (vLLM fails these) */
	int      first_frame;    /* index of the first gated frame, -1 none */
	int      last_frame;     /* index of the last gated frame, -1 none */
	uint64_t first_ns;       /* first token frame (0 when no_token_ok let a tokenless stream pass) */
	uint64_t end_ns;         /* E2EL end under the rule */
	uint32_t input_tokens;   /* usage prompt_tokens, else what latscope built */
	uint32_t output_tokens;  /* from the rules' source (out_tokens) */
	uint32_t token_frames;   /* frames that passed the gate */
	double   ttft_s[LS_ORIGIN__COUNT];
	double   e2el_s[LS_ORIGIN__COUNT];
	double   tpot_s;         /* (e2el - ttft) / (output_tokens - 1); 0 when output_tokens <= 1 */
	int      has_tpot;       /* output_tokens > 1 */
	double   slot_wait_s;    /* admitted - scheduled */
	double   dispatch_s;     /* started - admitted */
	double   queue_s;        /* started - scheduled: vLLM's client_queue_time */
};

/* Whether a frame is a token frame under the gate, judged alone: exact for choices and text;
 * cum_text needs the frames before it (use ls_frame_gated or ls_req_view.first_frame). */
int ls_frame_is_token(const struct ls_frame *fr, enum ls_ttft_gate gate);
/* The stamp a clock starts at; an unset stamp falls back to the next later one (then earlier). */
uint64_t ls_origin_ns(const struct ls_request *r, enum ls_origin clock);

/* Fills v; returns v->ok. */
int ls_request_view(const struct ls_request *r, const struct ls_read_rules *rules, struct ls_req_view *v);

/* Whether frame i of r passes the rules' TTFT gate (a token frame). */
int ls_frame_gated(const struct ls_request *r, uint32_t i, const struct ls_read_rules *rules);

/* Tokens frame i of r added as token-mode ITL reads it: its count when known, else an
 * estimate: 1, plus its text bytes' share of what the request's usage total leaves over
 * one token per uncounted frame (rounded cumulatively, so a request's counts add up). */
double ls_frame_tokens(const struct ls_request *r, uint32_t i, const struct ls_read_rules *rules);

/* ITL samples of one ok request under mode (seconds), written up to cap; returns how many
 * there are (call with cap 0 to size). Frame mode: one per gap between token frames; token
 * mode: each gap divided by the tokens its frame added, repeated that many times (rounded,
 * at least once); frames adding 0 tokens are skipped and their gap carries over (SGLang's
 * `continue`); unknown counts are estimated (ls_frame_tokens). */
size_t ls_request_itls(const struct ls_request *r, const struct ls_read_rules *rules, enum ls_itl_mode mode,
		       double *out, size_t cap);

/* Summary of a sample (ms). Empty samples give zeros, as vLLM's np.mean(x or 0). */
struct ls_stat {
	size_t n;
	double mean_ms, median_ms, std_ms, min_ms, max_ms;
	size_t n_pcts;
	double pcts[LS_MAX_PERCENTILES];   /* the percentiles it was computed at */
	double pct_ms[LS_MAX_PERCENTILES]; /* their values */
};

/* Sorts values (seconds) in place and summarises them in ms at rules->percentiles. */
void ls_stat_compute(double *values, size_t n, const struct ls_read_rules *rules, struct ls_stat *out);
/* The same at an explicit list of percentiles. */
void ls_stat_compute_at(double *values, size_t n, const double *pcts, size_t n_pcts, struct ls_stat *out);

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
	/* Connections the measured requests opened (failed ones too: a connection is opened before
	 * anything fails), and what connect (+TLS) cost inside the TTFT of those, mean. */
	size_t   conns_opened;
	double   conn_setup_mean_ms;
	double   realised_rate;     /* requests started / (last start - run start) */
	double   target_rate;       /* from the run, 0 = inf/closed */

	/* Headline stats under the rules, plus every clock and both ITL modes. */
	struct ls_stat ttft, tpot, itl, e2el;
	struct ls_stat ttft_by_clock[LS_ORIGIN__COUNT], e2el_by_clock[LS_ORIGIN__COUNT];
	struct ls_stat itl_frame, itl_token;
	struct ls_stat slot_wait, dispatch, queue; /* queue = started - scheduled */

	/* The engine's own account (ls_request.engine_*: llama.cpp's timings, SGLang's meta_info,
	 * vLLM's metrics, TGI's headers, TensorRT-LLM's /perf_metrics), over the ok measured requests
	 * that carry a part of it, each part over those that carry that part, exact percentiles of
	 * the per-request values: its queue, its prompt compute (prefill), its decode time per token,
	 * its own end-to-end time; and this profile's TTFT less the engine's queue (where it gave
	 * one) and prefill: what the engine does not count (its frontend, the network, the client;
	 * and its queue when engine_outside_has_queue is 0). engine_sources: bit 1 << source per
	 * engine seen. engine_bad_values: malformed values ignored over every measured request, in
	 * engine_bad_requests of them. engine_n 0: no request had an account. */
	size_t   engine_n;
	unsigned engine_sources;
	uint64_t engine_prompt_tokens, engine_cached_tokens;
	size_t   engine_bad_values, engine_bad_requests;
	int      engine_outside_has_queue;
	struct ls_stat engine_queue, engine_prompt, engine_decode_per_token, engine_e2e, ttft_outside_prompt;

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
	/* The one-second buckets peak_output_tps is the largest of: output tokens (frames in frame
	 * mode) arrived in [out_bins_from_ns + b s, + 1 s), from the earliest start; NULL when no
	 * request was ok. */
	double   *out_bins;
	size_t    n_out_bins;
	uint64_t  out_bins_from_ns;
	double   *in_flight_bins;   /* the same grid: mean requests in flight (peak_concurrency's intervals) */
};

/* Whether r's engine account gave a part (LS_ENGINE_*). Records written before engine_known
 * existed (llama.cpp's timings only) read their times as given when not 0. */
int ls_engine_has(const struct ls_request *r, uint32_t part);

/* Computes everything. 0 or -ENOMEM. run->start_ns / end_ns give the duration; when end_ns
 * is 0 (an interrupted or reloaded run) the last measured finish is used. */
int ls_metrics_compute(const struct ls_run *run, const struct ls_read_rules *rules,
		       const struct ls_goodput *goodput, struct ls_metrics *m);
void ls_metrics_free(struct ls_metrics *m);

/* A request entering (+1) or leaving (-1) flight at t. */
struct ls_conc_event {
	uint64_t t;
	int      delta;
};
/* Most requests in flight at once over n events (sorted here, in place; a departure before an
 * arrival at the same instant). */
size_t ls_peak_in_flight(struct ls_conc_event *ev, size_t n);
/* The most streams the client held open at once: every request it sent (warmups and failures
 * too), started -> finished. Not peak_concurrency, which is vLLM's max_concurrent_requests: the
 * measured requests that succeeded, started -> the end of their E2EL. 0 on ENOMEM. */
size_t ls_run_peak_streams(const struct ls_run *run);

/* The failed requests by reason, as every report words them: "timeout 2, no_first_token 1"
 * ("" when none failed); truncated to fit cap. */
void ls_metrics_fail_list(const struct ls_metrics *m, char *buf, size_t cap);

/* --percentile-metrics bits */
enum {
	LS_PM_TTFT = 1u << 0,
	LS_PM_TPOT = 1u << 1,
	LS_PM_ITL  = 1u << 2,
	LS_PM_E2EL = 1u << 3,
};

/* "ttft,tpot,itl,e2el" (any non-empty subset) -> LS_PM_* bits; 0, or -1 for a bad list. */
int ls_parse_percentile_metrics(const char *v, unsigned *out);

#endif
