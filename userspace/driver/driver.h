/* driver.h — the io_uring + libcurl multi_socket loop that sends a run's requests and stamps
 * every event of each (ARCHITECTURE.md principle 4: the loop is the only place that waits).
 * Takes: a plan's jobs (driver/plan.h: bodies, the arrival schedule of workload/), a URL, a
 * backend, a connection policy.
 * Gives: struct ls_run: one struct ls_request per request with every stamp (base/record.h). */
#ifndef LATSCOPE_DRIVER_H
#define LATSCOPE_DRIVER_H

#include <stddef.h>
#include <stdint.h>
#include "base/record.h"
#include "driver/backend.h"
#include "workload/arrival.h"
#include "base/loop_hook.h"

/* Requests of a run: to send, handed to libcurl, finished, finished failed. */
struct ls_progress_counts {
	uint64_t jobs, started, done, failed;
};

struct ls_driver_opts {
	const char *url;                /* base URL + endpoint */
	enum ls_backend backend;
	int         per_request_conn;   /* 1: fresh TCP (+TLS) per request; 0: keep-alive pool */
	int         http2;
	int         insecure;           /* skip TLS verification */
	const char *cacert;             /* trust this CA file */
	uint64_t    request_timeout_ns; /* 0 = none */
	uint32_t    max_concurrency;    /* 0 = unlimited */
	struct ls_arrival *arrival;     /* schedule of measured requests */
	const char *run_tag;            /* X-Request-Id prefix */
	int         progress;           /* enum ls_progress: on stderr, or none */
	/* After the last event, spin on the ring this long before sleeping in io_uring_enter: an
	 * event within it needs no wake-up. 0 = sleep at once; LS_SPIN_FOREVER = never sleep. */
	uint64_t    spin_ns;
	const struct ls_loop_hook *hooks;
	size_t      n_hooks;
	/* Called once per request as it finishes (record file), in the loop thread. */
	void      (*on_finish)(void *ctx, const struct ls_request *req);
	void       *on_finish_ctx;
	uint64_t    grace_ns;           /* after SIGINT/SIGTERM: wait this long for streams in flight */
	int         route_keys;         /* send X-SMG-Routing-Key with each job's route_key (SGLang's gsp) */
	/* --header lines ("Name: value", request_extra.h), sent on every request; one named like a
	 * constant header (Content-Type, Authorization) replaces it, X-Request-Id never does. */
	char *const *headers;
	size_t      n_headers;
	const char *request_id_prefix;  /* X-Request-Id: PREFIX<id> (vLLM's form); NULL: run_tag-<id> */
	/* The run's clock starts at this CLOCK_MONOTONIC instant (the loop waits for it), not when
	 * the call is made: every rank of an MPI run starts at one agreed instant. 0 = now. */
	uint64_t    start_at_ns;
	/* Before the clock starts, this many GET /v1/models at once through the keep-alive pool,
	 * so that the run finds that many connections open (at most max_concurrency; reuse mode
	 * only). 0 = none: connections open inside the first requests, as the profiles do. */
	uint32_t    preconnect;
	/* One run over several processes (MPI ranks): the loop publishes this process's counts in
	 * *progress_out before the hooks run each turn (a hook sends them on), and the progress
	 * line adds *progress_more (the other processes', kept by a hook) to its own. NULL: none. */
	struct ls_progress_counts *progress_out;
	const struct ls_progress_counts *progress_more;
	/* vLLM's --probe-request-rate (serve.py probe_loop): one probe request at a time beside the
	 * jobs, outside max_concurrency; the first when the clock starts, each next
	 * probe_interval_ns after the last one returned, none once every job is done (one in
	 * flight then is waited for). probe_job(ctx) gives each probe's job, its record reset by
	 * the caller (NULL: no more). Probes are not counted in the run's end or progress, and get
	 * no on_finish. probe_interval_ns 0: no probes. */
	uint64_t    probe_interval_ns;
	struct ls_driver_job *(*probe_job)(void *ctx);
	void       *probe_ctx;
	/* SGLang's multi-turn conversations (the jobs are their first turns): each frame's data
	 * payload goes to on_payload (the owner keeps the reply's text); when a job is done,
	 * follow_up gives its conversation's next turn (NULL: none), sent at once in the slot the
	 * done one held (scheduled and admitted then; its record reset by the driver, keeping id and
	 * lengths). Both NULL: single requests. */
	void      (*on_payload)(void *ctx, const struct ls_driver_job *job, const char *data, size_t len);
	struct ls_driver_job *(*follow_up)(void *ctx, const struct ls_driver_job *done);
	void       *turns_ctx;
};

/* Progress on stderr: for a terminal one line redrawn in place (share done, ETA), for a log a
 * plain line every 10 s (LATSCOPE_PROGRESS_INTERVAL_MS sets the period). */
enum ls_progress {
	LS_PROGRESS_OFF = 0,
	LS_PROGRESS_TERMINAL = 1,
	LS_PROGRESS_PLAIN = 2,
};

/* What a request says when --http2 meets an http:// server without h2c (one copy, for any
 * other place that finds the same). */
#define LS_DRIVER_H2C_REFUSED "server does not speak HTTP/2 over cleartext (h2c prior knowledge): " \
			      "drop --http2 or use https:// (ALPN)"

#define LS_SPIN_FOREVER UINT64_MAX
#define LS_SPIN_STALL_NS 500000ull /* a spin iteration later than this: the loop was not running */

struct ls_driver_job {
	const char *body;               /* JSON body */
	size_t      body_len;
	struct ls_request *rec;         /* filled by the driver */
	const char *route_key;          /* X-SMG-Routing-Key value with opts->route_keys (NULL: empty) */
};

/* Sends every job (in order, paced by opts->arrival and the slot limit) and fills their records.
 * run->start_ns/end_ns/interrupted are set. Returns 0, 1 when interrupted, or -errno on setup
 * failure (message on stderr naming what failed).
 * - Records are cleared first, keeping id, warmup, prompt_len and output_len; each request
 *   carries "X-Request-Id: <run_tag>-<id>". A job the run never sent (interrupted) keeps
 *   started_ns == 0 and gets no on_finish call.
 * - scheduled_ns: job i's deadline, asked of opts->arrival when job i-1 passed it (NULL
 *   arrival: all at run start). admitted_ns: got a slot (max_concurrency). started_ns: just
 *   before libcurl gets it. A job waiting for a slot does not delay the next arrival.
 * - SIGINT/SIGTERM are blocked in the calling thread and read through a signalfd for the
 *   run's length (the mask is restored after); block them in any other thread of the process.
 *   The first stops sending and waits grace_ns for streams in flight (then LS_FAIL_CANCELLED);
 *   a second cancels at once. */
int ls_driver_run(const struct ls_driver_opts *opts, struct ls_driver_job *jobs, size_t n_jobs,
		  struct ls_run *run);

/* In reuse mode the keep-alive pool outlives ls_driver_run: the next run with the same URL and
 * TLS settings reuses its idle connections (the measured run those of its warmups, as in vLLM).
 * This closes them; call it when done benchmarking (harmless when there is none). */
void ls_driver_pool_close(void);

#endif
