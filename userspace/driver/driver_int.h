/* driver_int.h — state shared by driver.c (the io_uring loop, pacing, signals, hooks),
 * driver_multi.c (the multi handle: sockets, timer, pool) and
 * driver_curl.c (each transfer: easy handle, callbacks, stamps). Not a public interface.
 * libcurl multi_socket state is split as in curl's hiperfifo.c: global (struct drv), per
 * transfer (struct xfer, via CURLOPT_PRIVATE), per socket (struct loop_sock, via curl_multi_assign). */
#ifndef LATSCOPE_DRIVER_INT_H
#define LATSCOPE_DRIVER_INT_H

#include <curl/curl.h>
#include <liburing.h>
#include <sys/signalfd.h>
#include "driver/driver.h"
#include "driver/sse.h"

/* Caps that keep a hostile server from growing memory without bound. */
#define LS_DRIVER_HEADER_MAX   (64u * 1024u)           /* response header bytes */
#define LS_DRIVER_ERRBODY_MAX  (64u * 1024u)           /* body bytes read after an HTTP error */
#define LS_DRIVER_BODY_MAX     (256ull * 1024 * 1024)  /* response body bytes */
#define LS_DRIVER_FRAMES_MIN   1024u                   /* frames allowed: 4 per max token + this */
#define LS_DRIVER_FRAMES_UNKNOWN 65536u                /* frames allowed when max_tokens is 0 */
#define LS_DRIVER_FRAMES_CAP   (1u << 22)              /* and never more (160 MiB of frames) */
/* Connect failures in a row, after the server had answered, that say it went away. */
#define LS_DRIVER_GONE_AFTER   3u

/* Every object a ring operation points at starts with its kind (the CQE's user_data). */
enum drv_op_kind {
	DRV_OP_SOCK = 1, /* POLL_ADD on a libcurl socket (multishot while it only reads) */
	DRV_OP_SOCK_CTL, /* update (mask) or remove of that poll */
	DRV_OP_TIMER,    /* the one absolute timeout: the earliest of every deadline */
	DRV_OP_SIGNAL,   /* read on the signalfd */
	DRV_OP_HOOK,     /* POLL_ADD (multishot) on a hook's fd */
};

struct drv_op {
	int kind;
};

struct drv;

/* Per socket libcurl asked us to watch. Freed when curl is done with it and the kernel holds
 * no poll on it any more (the poll's last CQE came). */
struct loop_sock {
	struct drv_op op;       /* the poll */
	struct drv_op ctl_op;   /* the one update/remove in flight for it */
	struct drv   *drv;
	curl_socket_t fd;
	int           want;     /* CURL_POLL_IN / OUT / INOUT */
	unsigned      armed_mask, ctl_mask; /* POLLIN/POLLOUT in the kernel; asked by ctl_op */
	int           live;     /* a poll is armed in the kernel: its last CQE not seen */
	int           armed_oneshot; /* that poll is one-shot (it wants POLLOUT, or no multishot) */
	int           ctl_pending;
	int           ctl_switch; /* the control op removes the poll to re-arm it in the other mode */
	int           poll_gone; /* a control op found no poll: it ended, its last CQE is due */
	uint32_t      gen, ctl_gen; /* polls armed so far; the one the control op targeted */
	int           removed;  /* curl said CURL_POLL_REMOVE */
	int           fresh;    /* opened inside start_jobs, not polled yet (drv_socks_fresh_run) */
	struct loop_sock  *fresh_next;
	struct loop_sock  *next, *prev; /* every sock alive, for teardown */
};

/* Per transfer (one request in flight). Pooled: easy handles and buffers are reused. */
struct xfer {
	struct drv          *drv;
	CURL                *easy;
	struct curl_slist   *headers;
	struct curl_slist   *id_header; /* headers' last node: X-Request-Id, rewritten per request */
	struct curl_slist   *route_header; /* X-SMG-Routing-Key, rewritten per request (opts->route_keys) */
	struct ls_driver_job *job;
	struct ls_request   *rec;
	struct ls_sse        sse;
	struct ls_decode_state dec;
	uint64_t             now_ns;      /* the write callback's stamp for the frames it completes */
	uint64_t             header_bytes;
	uint64_t             first_header_ns; /* the response's first header line (its status line) came */
	uint32_t             max_frames;
	int                  status;      /* latest status line (1xx included) */
	int                  saw_done;    /* [DONE] (or SGLang's final frame) arrived */
	int                  saw_finish;  /* a finish_reason arrived */
	int                  attempts;    /* PREREQFUNCTION calls: > 1 is libcurl retrying */
	int                  pc_held;     /* a preconnect GET paused (driver_preconnect.c) */
	char                 content_type[64]; /* of the latest header block, "" when none came */
	char                 errbuf[CURL_ERROR_SIZE];
	struct xfer         *next_free;
};

struct conn_map {        /* SO_COOKIE -> connection number, open addressing */
	uint64_t *cookies;
	uint32_t *seqs;
	size_t    cap, n;
};

struct drv {
	const struct ls_driver_opts *opts;
	struct ls_driver_job *jobs;
	size_t                n_jobs;
	struct ls_run        *run;

	struct io_uring ring;
	int             ring_ok;
	CURLM          *multi;
	int             fatal;          /* negative errno that ends the run */
	int             poll_oneshot;   /* the kernel refused multishot polls */
	size_t          ring_errors;    /* remove/update operations that failed unexpectedly */
	struct {                        /* printed with LATSCOPE_DRIVER_DEBUG=1 */
		uint64_t cqes, waits, socket_actions, ctl_retries;
	} stats;
	int             ring_error_first;

	uint64_t run_start_ns;
	size_t   next_arrive;           /* next job to pass the arrival gate */
	uint64_t next_deadline_ns;      /* its deadline */
	size_t   next_admit;            /* next job to get a slot (< next_arrive) */
	size_t   in_flight, n_started, n_done, n_failed;
	int      starting;              /* inside start_jobs: a due arrival only passes the gate */
	int      in_cqes;               /* inside take_completions' walk of the ring */
	int      h2c_answered;          /* a response came over --http2 cleartext: the server speaks it */
	int      server_answered;       /* a request got a response (or a connection that later broke) */
	size_t   connect_fail_streak;   /* connect failures since the last answer */
	uint64_t streak_start_ns;       /* when the first of them started */

	uint64_t curl_deadline_ns;      /* libcurl's timer, 0 = none */
	struct drv_op timer_op;
	uint64_t timer_armed_ns;        /* deadline of the armed timeout, 0 = none */
	struct __kernel_timespec timer_ts;

	int      sigfd;
	struct drv_op sig_op;
	struct signalfd_siginfo sig_buf;
	int      sig_armed;
	int      stopping;              /* a signal came: send nothing more */
	uint64_t stop_deadline_ns;      /* then cancel what is still in flight */

	struct drv_hook {
		struct drv_op op;
		const struct ls_loop_hook *hook;
		uint64_t next_ns;       /* next periodic call, 0 = none */
		int      live;
	} *hooks;
	size_t n_hooks;

	uint64_t progress_next_ns;
	uint64_t progress_period_ns;
	int      progress_tty;          /* stderr is a terminal: the line redrawn in place */

	struct xfer  *free_xfers;
	struct xfer **xfers;            /* every xfer allocated, for teardown */
	size_t        n_xfers, cap_xfers;
	struct loop_sock  *socks;
	struct loop_sock  *fresh_socks;   /* opened by the transfer start_jobs is carrying */
	struct conn_map conns;
	uint32_t      n_conns;
	struct curl_slist *base_headers;
	char         *preconnect_url; /* while set, transfers GET it (driver_preconnect.c), unmeasured */
	size_t        pc_held;        /* of those, paused at their first body byte, each holding its connection */
	int           pc_released;    /* every one held or done: all let go */
	struct ls_driver_job *probe;  /* the probe request in flight (opts->probe_interval_ns), NULL none */
	uint64_t      probe_next_ns;  /* when the next probe may start */
	/* The loop's own lag (the client check without probes): every DRV_LAG_TICK_NS of the
	 * measured run the loop owes itself a turn; how late each such turn starts. */
	uint64_t      lag_next_ns;    /* the next tick, 0 = none */
	uint64_t     *lag_ns;
	size_t        n_lag, cap_lag;
};

/* driver.c */
struct io_uring_sqe *drv_sqe(struct drv *d);

/* driver_multi.c */
int  drv_multi_setup(struct drv *d);
void drv_multi_teardown(struct drv *d);
void drv_note_socket(struct drv *d, struct ls_request *rec, curl_socket_t fd);
/* Connection sockets libcurl holds open (every multi of the process: the pool outlives a run):
 * counted from CURLOPT_SOCKOPTFUNCTION to CURLOPT_CLOSESOCKETFUNCTION (drv_conn_close). */
void drv_conn_opened(void);
int  drv_conn_close(void *clientp, curl_socket_t fd);
/* Whether the keep-alive pool can hold an idle connection for the next transfer: more sockets
 * open than transfers in flight. */
int  drv_pool_may_have_idle(const struct drv *d);
void drv_sock_arm(struct drv *d, struct loop_sock *s);
void drv_sock_cqe(struct drv *d, struct loop_sock *s, int res, int more);
void drv_sock_ctl_cqe(struct drv *d, struct loop_sock *s, int res);
void drv_socks_free(struct drv *d);
void drv_socks_fresh_run(struct drv *d);

/* driver.c: the loop, until every job of d->jobs is done (driver_preconnect.c runs it twice) */
int  drv_loop(struct drv *d);

/* driver.c: 1 when job is the probe request in flight (it is then done: the next is due
 * probe_interval_ns from now), 0 for a job of the run. */
int  drv_probe_finished(struct drv *d, const struct ls_driver_job *job, uint64_t now);
/* driver.c: the next turn of done's conversation (opts->follow_up), started at once. */
void drv_follow_up(struct drv *d, const struct ls_driver_job *done, uint64_t now);

/* driver_preconnect.c: opts->preconnect connections opened before the clock starts. 0, 1 when
 * interrupted, or -errno (message on stderr). */
int  drv_preconnect(struct drv *d);
/* The loop, each turn while preconnecting: once every GET is held or done, lets them all go. */
void drv_preconnect_turn(struct drv *d);

/* driver_curl.c */
void drv_xfers_free(struct drv *d);
int  drv_xfers_prepare(struct drv *d, size_t n);
int  drv_xfer_start(struct drv *d, struct ls_driver_job *job, uint64_t admitted_ns);
void drv_check_done(struct drv *d);
void drv_cancel_all(struct drv *d, const char *why);

#endif
