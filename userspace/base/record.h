/* record.h — the per-request record: every stamp the driver takes, raw (ARCHITECTURE.md principle 1).
 * Metrics, attribution and reports are pure functions of these records plus a profile.
 * All times are CLOCK_MONOTONIC nanoseconds; 0 means "did not happen". */
#ifndef LATSCOPE_RECORD_H
#define LATSCOPE_RECORD_H

#include <stddef.h>
#include <stdint.h>

#define LS_ERROR_MAX 160

/* Why a request failed. Names (ls_fail_name) are stable: they appear in JSON and JSONL. */
enum ls_fail {
	LS_OK = 0,
	LS_FAIL_HTTP_STATUS,          /* non-2xx response (http_status says which) */
	LS_FAIL_CONNECT,              /* TCP connect refused / unreachable */
	LS_FAIL_TLS,                  /* TLS handshake or verification failed */
	LS_FAIL_RESET_BEFORE_HEADERS, /* connection closed or reset before a status line */
	LS_FAIL_RESET_MID_STREAM,     /* connection closed or reset after headers, before [DONE] */
	LS_FAIL_TIMEOUT,              /* --request-timeout passed (stall) */
	LS_FAIL_MALFORMED_FRAME,      /* a data: payload that is not the backend's JSON */
	LS_FAIL_TRUNCATED,            /* chunked encoding or frame cut short */
	LS_FAIL_OVERSIZE,             /* a frame, header or token count over latscope's caps */
	LS_FAIL_NO_DONE,              /* stream ended cleanly but without [DONE] / finish */
	LS_FAIL_SERVER_ERROR_FRAME,   /* server sent an error object inside the stream */
	LS_FAIL_CANCELLED,            /* run interrupted (SIGINT/SIGTERM) before it finished */
	LS_FAIL_OTHER,
	LS_FAIL_PROTOCOL,             /* answered, but not as asked: a 2xx that is not an event stream,
				       * or no HTTP/2 where --http2 asked for it over cleartext */
	LS_FAIL__COUNT
};

const char *ls_fail_name(enum ls_fail fail);

/* Frame flags. */
enum {
	LS_FRAME_CHOICES    = 1u << 0, /* JSON had a non-empty choices array (openai) / text field (sglang) */
	LS_FRAME_EMPTY_TEXT = 1u << 1, /* the text it carried was empty */
	LS_FRAME_USAGE      = 1u << 2, /* carried a usage object */
	LS_FRAME_DONE       = 1u << 3, /* the data: [DONE] sentinel */
	LS_FRAME_FINISH     = 1u << 4, /* carried a finish_reason / meta_info.finish_reason */
};

/* Whose own per-request fields gave ls_request.engine_* (names: ls_engine_source_name, stable). */
enum ls_engine_source {
	LS_ENGINE_NONE = 0,
	LS_ENGINE_LLAMACPP, /* "timings" on the last frame */
	LS_ENGINE_SGLANG,   /* meta_info of the last /generate frame (--enable-metrics for the times) */
	LS_ENGINE_VLLM,     /* "metrics" on the usage frame (--enable-per-request-metrics) */
	LS_ENGINE_TGI,      /* x-queue-time, x-inference-time, ... response headers */
	LS_ENGINE_TRTLLM,   /* /perf_metrics timing_metrics */
	LS_ENGINE__COUNT
};
/* Which parts of the engine's account it gave (ls_request.engine_known). */
enum {
	LS_ENGINE_QUEUE   = 1u << 0, /* engine_queue_ns */
	LS_ENGINE_PREFILL = 1u << 1, /* engine_prompt_ns (engine_prompt_n when >= 0) */
	LS_ENGINE_DECODE  = 1u << 2, /* engine_predicted_ns over engine_predicted_n tokens */
	LS_ENGINE_E2E     = 1u << 3, /* engine_e2e_ns */
	LS_ENGINE_CACHED  = 1u << 4, /* engine_cache_n */
};
const char *ls_engine_source_name(int source); /* "llama.cpp", "sglang", ... */
const char *ls_engine_fields_name(int source); /* what carried it: "timings", "meta_info", ... */

/* One SSE message (one `data:` event), stamped when the write callback completed it. */
struct ls_frame {
	uint64_t arrived_ns;  /* harness saw the frame complete (write callback) */
	uint64_t stream_off;  /* offset of the frame's last byte in the response body: joins kernel reads */
	uint32_t bytes;       /* bytes of the SSE message, from `data:` through the blank line */
	uint32_t text_len;    /* bytes of generated text it added (delta for cumulative backends) */
	int32_t  tokens;      /* tokens it added when known (cumulative diff, usage diff), else -1 */
	int32_t  cum_tokens;  /* cumulative completion tokens the frame reported (sglang), else -1 */
	uint32_t flags;       /* LS_FRAME_* */
	uint32_t reserved;
};

struct ls_request {
	uint64_t id;             /* index in the run; sent as X-Request-Id "<run_tag>-<id>" */
	int      warmup;         /* 1 for warmup requests: never in metrics */
	uint32_t prompt_len;     /* prompt tokens as latscope built it */
	uint32_t output_len;     /* max_tokens requested */

	uint64_t scheduled_ns;   /* arrival process said: go */
	uint64_t admitted_ns;    /* got a concurrency slot */
	uint64_t started_ns;     /* handed to libcurl (where vLLM takes st) */
	uint64_t connect_ns;     /* TCP connected, started + CURLINFO_CONNECT_TIME_T; 0 on reuse */
	uint64_t tls_ns;         /* TLS done, started + CURLINFO_APPCONNECT_TIME_T; 0 if none/reused */
	uint64_t sent_ns;        /* request fully handed to the socket (CURLINFO_PRETRANSFER_TIME_T bound) */
	uint64_t headers_ns;     /* response headers complete */
	uint64_t done_frame_ns;  /* the [DONE] frame (or final sglang frame) arrived */
	uint64_t finished_ns;    /* transfer complete: last byte, connection handed back */

	int      new_connection; /* 1 when this request opened its connection */
	int      fd;             /* socket fd libcurl used, -1 unknown */
	uint64_t socket_cookie;  /* SO_COOKIE of that socket (join key for probes), 0 unknown */
	uint32_t conn_seq;       /* harness-side connection number (per distinct cookie) */

	int      http_status;
	enum ls_fail fail;
	char     error[LS_ERROR_MAX];

	int32_t  usage_prompt_tokens;     /* from the usage frame / meta_info, -1 unknown */
	int32_t  usage_completion_tokens; /* likewise */
	uint64_t body_bytes;              /* response body bytes received */
	uint64_t text_bytes;              /* generated text bytes */

	/* The engine's own account of the request where its response gives one (llama.cpp's
	 * "timings", SGLang's meta_info, vLLM's "metrics", TGI's x-*-time headers: docs/engine.md):
	 * which engine's fields (engine_source), which parts they gave (engine_known, LS_ENGINE_*),
	 * its queue, its prompt compute (prefill) over engine_prompt_n tokens, its decode time over
	 * engine_predicted_n tokens, its own end-to-end time, the prompt tokens it took from its
	 * cache; and how many of its values were malformed and ignored (engine_bad). Counts -1 and
	 * times 0 when not given. */
	int32_t  engine_prompt_n, engine_predicted_n, engine_cache_n;
	uint64_t engine_prompt_ns, engine_predicted_ns;
	int      engine_source;  /* enum ls_engine_source */
	uint32_t engine_known;   /* LS_ENGINE_* bits */
	uint64_t engine_queue_ns, engine_e2e_ns;
	uint32_t engine_bad;

	uint32_t n_frames, cap_frames;
	struct ls_frame *frames;
};

/* A whole run: what was sent, when, and under which sending rules. */
struct ls_run {
	struct ls_request *requests; /* warmups first, then measured requests */
	size_t   n_requests;
	size_t   n_warmup;
	uint64_t start_ns;           /* first measured request scheduled at or after this */
	uint64_t end_ns;             /* last measured request finished */
	double   target_rate;        /* req/s, 0 = inf / closed */
	uint32_t max_concurrency;    /* 0 = unlimited */
	int      interrupted;        /* SIGINT/SIGTERM stopped the run */
	/* --spin-us / --busy-poll: times the spinning loop did not run for over LS_SPIN_STALL_NS
	 * (another task or the hypervisor had its CPU: frames that came then were stamped late). */
	struct ls_spin_stalls {
		uint64_t n, max_ns, sum_ns;
	} spin_stalls;
	char     run_tag[32];        /* prefix of X-Request-Id */
	/* The server went away mid-run: after it had answered, requests in a row failed to connect.
	 * When the first of them started (0 = it did not happen), and how many failed to connect
	 * from then on. */
	uint64_t server_gone_ns;
	size_t   n_connect_failed_gone;
	/* --preconnect: connections open in the pool before the clock started (0: none asked),
	 * and how long opening them took. */
	uint32_t n_preconnected;
	uint64_t preconnect_ns;
	/* The client's own CPU (user + kernel, getrusage) over the measured run, how many client
	 * processes spent it (MPI ranks), and whether their loops spun (--busy-poll, --spin-us: the
	 * CPU is then busy by design). The client check reads them. */
	uint64_t client_cpu_ns;
	uint32_t n_client_procs;
	int      loop_spins;
	/* The client's delay per frame (kernel arrival -> its stamp) at P99, from the probes' attribution
	 * of the run (0: the probes saw no frame). */
	uint64_t client_delay_p99_ns;
	/* How late the loop's turns started after their 5 ms ticks, at P99, over how many ticks
	 * (the driver's; 0: none): the client's delay without the probes. */
	uint64_t loop_lag_p99_ns;
	uint64_t loop_lag_ticks;
};

/* Appends a frame, growing the array; returns the new frame or NULL on ENOMEM. */
struct ls_frame *ls_request_add_frame(struct ls_request *req);
void ls_request_reset(struct ls_request *req, uint64_t id);
void ls_request_free(struct ls_request *req);
void ls_run_free(struct ls_run *run);

#endif
