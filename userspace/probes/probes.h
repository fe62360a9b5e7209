/* probes.h — the eBPF probes: open -> settings -> load -> attach, ring buffer -> per-socket event
 * store.
 * Takes: pids to watch (the client's own, servers by pid or comm), a loop hook slot (base/loop_hook.h).
 * Gives: struct ls_evstore: every socket's kernel and libssl stamps, keyed by socket cookie
 * (bpf/events.h), in this process's clock (a time namespace's offset applied); the watched
 * servers' engine steps (llama_decode uprobes: struct ls_step_event). Degrades loudly: when the probes cannot run (not root, no BTF), ls_probes_open returns
 * NULL and says why, and the bench runs without them. */
#ifndef LATSCOPE_PROBES_H
#define LATSCOPE_PROBES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "probes/evstore.h"

#include "base/loop_hook.h"

#define LS_PROBES_DRAIN_PERIOD_NS 50000000ull /* timer drain when the loop is idle: 50 ms */
#define LS_PROBES_DRAIN_SLICE 256                /* events per drain call in the loop, at first */
#define LS_PROBES_DRAIN_SLICE_MAX 4096           /* ... and at most, while it falls behind (~2 ms) */
#define LS_PROBES_RING_DEFAULT (2u << 20)

struct ls_probes_opts {
	const pid_t *client_pids;  /* processes whose connections are requests (the harness) */
	size_t       n_client_pids;
	const pid_t *server_pids;  /* servers on this host (--server-pid) */
	size_t       n_server_pids;
	const char  *server_comm;  /* also every process with this comm at open (--server-comm) */
	uint32_t     ringbuf_bytes;/* 0: LS_PROBES_RING_DEFAULT; a power of two >= page size */
	int          no_tls;       /* do not attach the libssl uprobes */
	int          ssl_read;     /* opt in: uretprobe on SSL_read (~10 us per call here) */
	int          stats;        /* count run time per program (BPF_STATS_RUN_TIME) for ls_probes_cost */
	int          follow_forks; /* watch: a process a watched one forks is watched too (ls_probes_follow) */
	int          tls_entry_all;/* watch: also SSL_do_handshake and SSL_write_ex (Python's ssl module) */
	int          engine_steps; /* also probe llama_decode in the servers (bpf/engine.bpf.c; bench) */
	uint32_t     socket_events;/* events a request's socket is expected to get (0: unknown) */
};

/* What the probes cost: per program, runs and time inside the BPF program (opts.stats), and the
 * user-space drain. */
struct ls_probe_cost {
	const char *name;         /* program name, e.g. "ls_arrived" */
	uint64_t    run_cnt;
	uint64_t    run_time_ns;
};

struct ls_probes;

/* Opens, loads and attaches every probe. NULL on failure, with the reason in why (e.g. not root,
 * no BTF); the reason names what to do. Partial coverage (no libssl in a pid, a comm that
 * matched nothing) is not a failure: ls_probes_notes says what is missing. */
struct ls_probes *ls_probes_open(const struct ls_probes_opts *opts, char *why, size_t why_len);
/* Detaches everything and frees the events. NULL is fine. */
void ls_probes_close(struct ls_probes *p);

/* The fd the driver's loop polls (readable only when the ring fills past a quarter; events are
 * submitted without a wake-up), and the drain it calls on readiness and every period. */
int ls_probes_fd(const struct ls_probes *p);
void ls_probes_drain(struct ls_probes *p);
/* Fills a struct ls_loop_hook (base/loop_hook.h) with the fd, LS_PROBES_DRAIN_PERIOD_NS and the drain. */
void ls_probes_loop_hook(struct ls_probes *p, struct ls_loop_hook *hook);

/* TLS sessions (SSL*) the probes track now: those the client has not freed (SSL_free). */
size_t ls_probes_tls_sessions(const struct ls_probes *p);

/* Everything drained so far (call ls_probes_drain once more after the run). */
const struct ls_evstore *ls_probes_events(const struct ls_probes *p);
/* What the probes could not cover, one line per item ("" when complete). */
const char *ls_probes_notes(const struct ls_probes *p);
/* Engine steps (bpf/engine.bpf.c): every llama_decode call of a watched server drained so far
 * (call ls_probes_drain first), and its frontend marks (llama_tokenize, post_tasks: flagged), each
 * thread's in time order, stamps in this process's clock.
 * info: how many server pids had llama_decode probed, where, and steps lost. */
struct ls_probes_engine_info {
	size_t   n_attached;
	uint64_t lost;
	char     where[512];
};
size_t ls_probes_engine_steps(const struct ls_probes *p, const struct ls_step_event **steps,
			      struct ls_probes_engine_info *info);

/* The pids watched as servers (resolved --server-comm included). */
size_t ls_probes_server_pids(const struct ls_probes *p, const pid_t **pids);

/* Fills up to cap programs (those loaded); returns how many. 0 without opts.stats. drain_ns:
 * time spent in ls_probes_drain so far, events: events drained. */
size_t ls_probes_cost(const struct ls_probes *p, struct ls_probe_cost *out, size_t cap,
		      uint64_t *drain_ns, uint64_t *events);

/* Fork following (opts.follow_forks): the kernel adds a watched process's children to the
 * watch map; this finds them there and attaches the libssl uprobes to each one that maps a
 * libssl other than the system one (which ls_probes_open probed for every process, filtered
 * by the watch map in the kernel), re-scans the maps of pids that had none yet, and drops the
 * pids that are gone. Call it every few tens of
 * ms. Returns how many client pids are watched now. */
size_t ls_probes_follow(struct ls_probes *p);
/* Every client pid seen so far (also gone ones), for the report. */
size_t ls_probes_client_pids(const struct ls_probes *p, const pid_t **pids);
/* 1 when client pid i (ls_probes_client_pids order) was seen mapping a libssl of its own. */
int ls_probes_client_tls(const struct ls_probes *p, size_t i);
/* Stops watching pid (e.g. latscope itself, watched only until its child was forked). */
void ls_probes_unwatch(struct ls_probes *p, pid_t pid);

/* Reads SO_COOKIE of fd (the join key with the probes). 0 when unavailable. */
uint64_t ls_socket_cookie(int fd);

#endif
