/* attribution.h — where each millisecond went: a run's records + probe events (+ GPU steps) ->
 * per request, for TTFT, every inter-token gap and E2EL, the parts client / network / server
 * (queue + gpu when GPU steps are given) / network+server / unattributed. The parts of a window
 * always add up exactly to the measured latency of that window.
 * Takes: a run's records (base/record.h), the probes' per-socket events (probes/evstore.h), GPU
 * steps (gpu/common/gpu_step.h) and a profile's read rules.
 * Gives: struct ls_attribution: per request and window, the parts that sum exactly to the latency. */
#ifndef LATSCOPE_ATTRIBUTION_H
#define LATSCOPE_ATTRIBUTION_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "base/record.h"
#include "metrics/metrics.h"
#include "probes/evstore.h"
#include "common/gpu_step.h"

enum ls_part {
	LS_PART_CLIENT,         /* slot wait, dispatch, curl noticing, bytes waiting in the kernel */
	LS_PART_NETWORK,        /* connect, TLS handshake, request and frames in flight */
	LS_PART_SERVER,         /* server read the request -> wrote the frame (no GPU steps given) */
	LS_PART_FRONTEND,       /* with engine steps mapped to the request: its server read -> the
				 * HTTP thread's hand-off to the engine (uprobes: post_tasks, else its
				 * last llama_tokenize) */
	LS_PART_QUEUE,          /* server time outside GPU steps (GPU steps given); with engine steps
				 * mapped to the request: server time before its first step (after
				 * the frontend when one was found) */
	LS_PART_GPU,            /* server time inside GPU steps */
	LS_PART_PREFILL,        /* server time inside the engine steps that computed its prompt (uprobe) */
	LS_PART_DECODE,         /* server time inside the engine steps that decoded its tokens (uprobe) */
	LS_PART_NETWORK_SERVER, /* in flight or at the server: no server-side events to split it */
	LS_PART_UNATTRIBUTED,   /* no events to say (probes off, events lost) */
	LS_PART__COUNT
};

struct ls_parts {
	uint64_t ns[LS_PART__COUNT];
};

/* Per-request flags: why parts may be coarse. */
enum {
	LS_ATTR_NO_EVENTS     = 1u << 0, /* no probe events for its socket (probes off, unknown cookie) */
	LS_ATTR_NO_SERVER     = 1u << 1, /* no server-side socket paired: network+server */
	LS_ATTR_LOST_EVENTS   = 1u << 2, /* the ring buffer dropped events of its sockets */
	LS_ATTR_DISORDER      = 1u << 3, /* stamps out of causal order (matching went wrong) */
	LS_ATTR_REUSED        = 1u << 4, /* rode an existing connection: connect and TLS are zero */
	LS_ATTR_NO_TLS_EVENTS = 1u << 5, /* TLS, but no handshake events (no libssl uprobes) */
	LS_ATTR_WARMUP        = 1u << 6, /* a warmup request: not in the percentiles */
	LS_ATTR_NOT_OK        = 1u << 7, /* failed or no first token: no TTFT/ITL/E2EL windows */
};

/* What the kernel saw of one frame (0 = unknown). */
struct ls_frame_attr {
	uint64_t server_write_ns; /* server's send start that carried the frame's last byte */
	uint64_t kernel_ns;       /* client kernel had the last byte (sk_data_ready) */
	uint64_t read_ns;         /* user space read it (sock_recv_length) */
	uint32_t seq_end;         /* TCP sequence just after the frame's last byte (estimated) */
	uint32_t exact;           /* 1: the frame ended its read, seq_end exact to the segment */
};

/* One round trip of a TLS handshake that the client waited for: its flight left the client's
 * kernel, reached the server's, the server's reply left and reached the client's kernel
 * (attribution_tls.c). 0 = unknown (server_* are 0 when the server is not watched). */
struct ls_tls_round {
	uint64_t client_sent_ns;    /* send start of the client write that carried the flight's end */
	uint64_t server_arrived_ns; /* server kernel had the flight (sk_data_ready) */
	uint64_t server_sent_ns;    /* send start of the server write that carried the reply's end */
	uint64_t client_arrived_ns; /* client kernel had the reply's end */
};

/* What the engine steps (uprobe) say of one request: its session (engine_steps.h). */
enum {
	LS_ENG_MAPPED = 1u << 0,       /* joined to a session of engine steps */
	LS_ENG_UNCERTAIN = 1u << 1,    /* another request fitted the session as well */
	LS_ENG_COUNTS_DIFFER = 1u << 2,/* joined by time alone: its engine token counts did not fit */
	LS_ENG_SEQS_MISSED = 1u << 3,  /* a step of its session could not list every sequence */
	LS_ENG_TWIN = 1u << 4,         /* uncertain between twin sessions (same steps): parts unaffected */
	LS_ENG_SPLIT = 1u << 5,        /* its session was cut from a longer run by the engine's counts */
	LS_ENG_NO_FRONTEND = 1u << 6,  /* no frontend mark in its window: frontend stays in queue */
};

struct ls_req_engine {
	uint32_t flags;             /* LS_ENG_* */
	int32_t  seq;               /* llama-server: the slot */
	uint32_t prompt_tokens, prefill_steps, decode_steps;
	uint64_t first_step_ns;     /* its first step started */
	uint64_t frontend_end_ns;   /* its HTTP thread's hand-off: its last frontend mark (0: none found) */
	uint64_t frontend_ns;       /* the server read it -> frontend_end_ns (0: none found) */
	uint32_t tokenize_calls;    /* llama_tokenize calls joined to it */
	uint32_t posted;            /* post_tasks calls joined to it (llama-server: 1) */
	uint64_t queue_ns;          /* the frontend's end (else the server's read) -> its first step */
	uint64_t prefill_ns;        /* its first step's start -> its prompt's last step's end */
	uint64_t decode_ns;         /* its prompt's end -> its last step's end (llama.cpp's predicted_ms span) */
	uint64_t prefill_steps_ns;  /* inside its prompt steps */
	uint64_t decode_steps_ns;   /* inside its decode steps */
};

#define LS_TLS_ROUNDS_MAX 6 /* TLS 1.2: 2, TLS 1.3: 1, + a HelloRetryRequest */

struct ls_req_attr {
	uint64_t id;
	uint32_t flags;           /* LS_ATTR_* */
	uint64_t client_cookie, server_cookie;
	/* Kernel stamps (0 = unknown / not applicable). */
	uint64_t connect_call_ns;   /* connect() called */
	uint64_t established_ns;    /* TCP ESTABLISHED on the client socket */
	uint64_t tls_start_ns, tls_end_ns;
	uint64_t request_send_ns;   /* client's first send start of the request */
	uint64_t request_sent_ns;   /* client's last send end of the request */
	uint32_t request_end_seq;
	uint64_t server_arrived_ns; /* server kernel had the whole request */
	uint64_t server_read_ns;    /* server read the whole request */
	uint32_t server_tgid, server_read_tid; /* the server process, and the thread of that read */
	uint64_t curl_connect_time_ns; /* curl's CONNECT_TIME (record: connect - started), 0 unknown */
	uint32_t srtt_us;           /* last smoothed RTT of the client socket, 0 unknown */
	uint32_t retransmits;
	/* A fresh connection's handshake split (valid when the span is not 0; parts sum to it). */
	uint64_t syn_sent_ns;       /* the SYN left: connect() -> here is the client's kernel */
	uint32_t n_tls_rounds;      /* 0: no flights seen, the TLS span is network as a whole */
	struct ls_tls_round tls_rounds[LS_TLS_ROUNDS_MAX];
	uint64_t connect_span_ns;   /* connect() called -> ESTABLISHED */
	struct ls_parts connect;
	uint64_t tls_span_ns;       /* ESTABLISHED -> SSL_connect done (setup, flights, CPU) */
	struct ls_parts tls;
	/* Windows (valid when !(flags & LS_ATTR_NOT_OK)). */
	uint64_t ttft_ns;
	struct ls_parts ttft;
	uint64_t e2el_ns;
	struct ls_parts e2el;
	uint32_t n_gaps;            /* gaps between consecutive token frames */
	uint64_t *gap_ns;
	uint32_t *gap_frame;        /* index of the frame that ends the gap */
	struct ls_parts *gaps;
	uint32_t n_frames;
	struct ls_frame_attr *frames; /* one per record frame */
	struct ls_req_engine engine;  /* engine steps (uprobe) joined to it */
};

/* The engine steps behind the split: how many, their sources, the join's counts. */
struct ls_attr_engine {
	size_t   steps;             /* every step given (CUPTI and uprobe) */
	size_t   uprobe_steps, seq_steps; /* llama_decode steps; those that listed their sequences */
	size_t   sessions, mapped, uncertain, twins, split, counts_differ, unjoined;
	uint64_t lost;              /* steps the kernel could not send */
	size_t   tokenize_calls, post_calls; /* frontend marks seen: llama_tokenize, post_tasks calls */
	size_t   marks_joined;      /* of them, in a request's window */
	size_t   frontend, no_frontend; /* joined requests with a frontend found; without one */
	uint64_t prefill_step_p50_ns, decode_step_p50_ns; /* the uprobe steps by kind (sessions') */
};

/* The engine's own account (its fields: queue, prefill; record.h engine_*) against the server's
 * kernel stamps, over the requests that have both: the server read the request -> wrote its
 * first token holds the engine's queue + prefill, and the rest is server time the engine does
 * not count (its frontend, writing, and the wait for a slot when it gives no queue). With
 * uprobe steps joined too, its prefill against theirs. */
#define LS_ATTR_ACCOUNT_SLACK_NS 500000ull /* an account this much longer than the interval is not the kernel's */
struct ls_attr_engine_account {
	size_t   n;                 /* requests with both */
	int      has_queue;         /* every one's account gave a queue */
	double   inside_p50_ms;     /* its queue + prefill */
	double   server_p50_ms;     /* the server's read -> first-token write */
	double   not_counted_p50_ms, not_counted_p99_ms; /* per request: server interval - account (>= 0) */
	size_t   over;              /* accounts longer than the interval by more than the slack */
	double   worst_over_ms;
	size_t   n_steps;           /* of them, joined to uprobe steps too */
	double   prefill_minus_steps_p50_ms; /* engine prefill - the steps' prefill, per request */
};

struct ls_attribution {
	struct ls_req_attr *req;    /* one per run record, same order */
	size_t   n;
	struct ls_read_rules rules; /* which frame is first, where E2EL ends, the clock */
	int      have_client;       /* client-side events existed */
	int      have_server;       /* some request paired with a server socket */
	int      have_gpu;          /* GPU steps split server into queue + gpu */
	int      have_engine;       /* engine steps (uprobe) split server into (frontend +) queue +
				     * prefill + decode */
	struct ls_attr_engine engine;
	struct ls_attr_engine_account account;
	uint64_t lost_events;       /* ring buffer overflow, all kinds */
	size_t   n_lost_requests;   /* requests marked LS_ATTR_LOST_EVENTS */
	char     why[512];          /* why parts are missing ("" when complete) */
};

/* Attributes every request of run under rules (which frame is first, where E2EL ends, the
 * clock, the percentiles the report shows): the caller passes them, bench the honest profile's
 * read rules (config/ ranks above this stage). events may be NULL (probes off: why says why,
 * e.g. the reason ls_probes_open gave), steps may be NULL. Returns NULL with errno EINVAL when
 * rules is NULL, else only on ENOMEM. */
struct ls_attribution *ls_attribute(const struct ls_run *run, const struct ls_evstore *events,
				    const struct ls_gpu_step *steps, size_t n_steps,
				    const struct ls_read_rules *rules, const char *why);
/* The same over a run merged from several processes (`mpirun -n N latscope bench`): request i
 * is attributed with the events of stores[part[i]] alone, since socket cookies are unique only
 * per host and each process's probes saw their own sockets (a NULL store: that process had no
 * probes; its requests are marked no_events). part NULL: every request is part 0. The totals
 * (lost events, what is missing) are over every store. NULL on ENOMEM, or with errno EINVAL for
 * no store or a part out of range. ls_attribute is this with one store. */
struct ls_attribution *ls_attribute_parts(const struct ls_run *run, const struct ls_evstore *const *stores,
					  size_t n_stores, const uint32_t *part, const struct ls_gpu_step *steps,
					  size_t n_steps, const struct ls_read_rules *rules, const char *why);
/* Steps of the engine beside the events: CUPTI's GPU steps, llama_decode's uprobe steps (both
 * optional), and how many uprobe steps the kernel lost. */
struct ls_attr_steps {
	const struct ls_gpu_step   *gpu;
	size_t                      n_gpu;
	const struct ls_step_event *uprobe;
	size_t                      n_uprobe;
	uint64_t                    uprobe_lost;
};
/* ls_attribute_parts with engine steps: each request joined to a session of uprobe steps
 * (engine_steps.h) has its server time split into frontend (its read -> its HTTP thread's
 * hand-off to the engine, when a mark was found), queue (-> its first step), prefill and decode
 * (inside its steps), the rest staying server; requests not joined use the GPU steps' queue +
 * gpu split when given. steps may be NULL. */
struct ls_attribution *ls_attribute_steps(const struct ls_run *run, const struct ls_evstore *const *stores,
					  size_t n_stores, const uint32_t *part, const struct ls_attr_steps *steps,
					  const struct ls_read_rules *rules, const char *why);
void ls_attribution_free(struct ls_attribution *a);

const char *ls_part_name(enum ls_part part); /* "client", "network", ..., "network+server" */
/* The name of LS_ATTR_* bit `bit` (request flags) / LS_ENG_* bit (engine session flags) in the
 * attribution file; NULL past the last. */
const char *ls_attr_flag_name(unsigned bit);
const char *ls_eng_flag_name(unsigned bit);
uint64_t ls_parts_sum(const struct ls_parts *p);


/* The parts of request i as a cJSON object for the per-request JSONL (caller owns it). */
struct cJSON;
struct cJSON *ls_attribution_request_json(const struct ls_attribution *a, size_t i);

/* --trace FILE.json: Chrome trace-event JSON (opens in ui.perfetto.dev): one track per request
 * with its phases, one per server connection, one for GPU steps when given. 0 or -errno. */
int ls_trace_write(const char *path, const struct ls_run *run, const struct ls_attribution *a,
		   const struct ls_evstore *events, const struct ls_gpu_step *steps, size_t n_steps);
/* The same with the server connections of several stores (a merged MPI run: one per rank). */
int ls_trace_write_stores(const char *path, const struct ls_run *run, const struct ls_attribution *a,
			  const struct ls_evstore *const *stores, size_t n_stores, const struct ls_gpu_step *steps,
			  size_t n_steps);

#endif
