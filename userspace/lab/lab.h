/* lab/lab.h — `latscope lab`: two network namespaces joined by a user-space delay line.
 * Takes: a bench command line, an RTT, a server command line.
 * Gives: both run in namespaces with real RTT between them; experiment tables (TCP/TLS cost in TTFT).
 *
 *   client ns (lsc-PID)            latscope lab (host ns)             server ns (lss-PID)
 *   bench -> lstun0 10.213.0.1 ==> [fd] forwarder: FIFO + delay [fd] ==> lstun0 10.213.0.2 -> sim
 *
 * Every IP packet one namespace sends leaves through its TUN device, is held rtt/2 by the
 * forwarder (from the kernel's timestamp of the packet, see docs/delay-line.md) and is
 * written into the other TUN device. The 10.213.0.0/30 addresses exist only inside the lab's
 * own namespaces. Stages: lab_netns.c (namespaces, TUNs), lab_fifo.c + lab_delay.c (the delay
 * line), lab_ping.c (delivered RTT), lab_proc.c (children, TIME_WAIT), lab_records.c +
 * lab_experiment.c (the TCP/TLS experiment), lab_main.c (CLI). */
#ifndef LATSCOPE_LAB_H
#define LATSCOPE_LAB_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define LAB_NS_CLIENT_PREFIX "lsc-"
#define LAB_NS_SERVER_PREFIX "lss-"
#define LAB_TUN_NAME         "lstun0"
#define LAB_CLIENT_ADDR      "10.213.0.1"
#define LAB_SERVER_ADDR      "10.213.0.2"
#define LAB_MTU              1500
#define LAB_PKT_MAX          2048   /* slot size: packets stay <= MTU without IFF_VNET_HDR */
#define LAB_STAMP_BYTES      64     /* bytes of each packet the stamping socket keeps to match it */
#define LAB_TIME_WAIT_S      60     /* TCP_TIMEWAIT_LEN */

enum { LAB_CLIENT = 0, LAB_SERVER = 1 };

/* ---- lab_netns.c ---------------------------------------------------------------------- */

struct lab_ns {
	char  name[2][32];  /* [LAB_CLIENT] lsc-PID, [LAB_SERVER] lss-PID, under /run/netns */
	int   ns_fd[2];     /* the namespaces */
	int   host_fd;      /* the namespace we started in (setns back to it) */
	int   tun_fd[2];    /* each namespace's TUN device, held by the forwarder */
	int   stamp_fd[2];  /* packet socket on each TUN: kernel timestamp of each packet it sends */
	int   created[2];   /* 1 once `ip netns add` made the namespace: teardown deletes it */
};

/* Builds both namespaces, TUN devices, addresses and routes; owner names them. On failure
 * everything built so far is torn down and a message says what failed. 0 or -1. */
int lab_ns_create(struct lab_ns *ns, pid_t owner);
/* Closes every fd, kills what still runs inside the namespaces and deletes them. Idempotent. */
void lab_ns_destroy(struct lab_ns *ns);
/* Deletes labs left by crashed runs: lsc-/lss- namespaces whose owner pid is gone (or is no
 * longer latscope), killing processes still inside them. Returns how many were removed. */
int lab_ns_clean_stale(int verbose);
/* Parses "lsc-123"/"lss-123": returns the owner pid, or -1 when name is not a lab's. */
pid_t lab_ns_owner(const char *name);
/* A socket created inside one side's namespace (the calling thread returns to its own). */
int lab_socket_in(const struct lab_ns *ns, int side, int domain, int type);
/* Moves the calling thread into one side (host side with side < 0). 0 or -1. */
int lab_ns_enter(const struct lab_ns *ns, int side);
/* Opens path read-only as seen from one side's namespace (/proc/thread-self/net/... follows the
 * thread's namespace at open time). An fd or -1. */
int lab_open_in(const struct lab_ns *ns, int side, const char *path);
/* Reads a small file as seen from one side's namespace (e.g. /proc/sys/net/...). Bytes or -1. */
ssize_t lab_read_in(const struct lab_ns *ns, int side, const char *path, char *buf, size_t cap);
/* Runs `ip ARGS...` (NULL-terminated), quiet unless it fails. 0 or -1. */
int lab_ip(const char *const *args);

/* ---- lab_fifo.c: one direction of the delay line (pure: unit tested) ------------------ */

struct lab_pkt {
	uint64_t due_ns;    /* when to write it to the other TUN */
	uint64_t sent_ns;   /* when its namespace handed it to the TUN (kernel stamp or read time) */
	uint32_t len;
	uint8_t  data[LAB_PKT_MAX];
};

struct lab_fifo {
	struct lab_pkt *slots;
	uint32_t cap, head, n;
	uint64_t last_due_ns;   /* order: no packet is due before the one ahead of it */
	uint64_t link_free_ns;  /* rate limit: when the emulated link finishes the last packet */
};

struct lab_shape {
	uint64_t one_way_ns;   /* rtt / 2 */
	uint64_t jitter_ns;    /* each packet's delay gets uniform [-jitter, +jitter], clamped */
	double   rate_mbit;    /* 0: unlimited */
};

int  lab_fifo_init(struct lab_fifo *q, uint32_t cap);
void lab_fifo_free(struct lab_fifo *q);
/* The slot the next packet goes into, NULL when the queue is full (caller drops and counts). */
struct lab_pkt *lab_fifo_tail(struct lab_fifo *q);
/* Stamps the tail slot's due time from its sent_ns and len, then makes it visible. */
void lab_fifo_push(struct lab_fifo *q, const struct lab_shape *shape, uint64_t *rng);
struct lab_pkt *lab_fifo_head(struct lab_fifo *q);  /* NULL when empty */
void lab_fifo_pop(struct lab_fifo *q);
/* Due time for a packet sent at sent_ns; updates q's order/link state. Jitter is drawn from
 * rng, a splitmix64 state (base/rng.h): one seed, the same delays. */
uint64_t lab_due_ns(struct lab_fifo *q, const struct lab_shape *shape, uint64_t sent_ns,
		    uint32_t len, uint64_t *rng);

/* ---- lab_delay.c: the forwarder thread ------------------------------------------------ */

#define LAB_LATE_BUCKETS 2048   /* lateness histogram, 1 us buckets, last one = overflow */

struct lab_delay_stats {
	uint64_t packets[2], bytes[2];   /* [0] client->server, [1] server->client */
	uint64_t drops_full[2];          /* queue full: dropped and counted */
	uint64_t drops_bad[2];           /* read errors / oversize */
	uint64_t stamped, unstamped;     /* hold measured from the kernel stamp vs from read time */
	uint64_t late_hist[LAB_LATE_BUCKETS]; /* written minus due, us */
	uint64_t cpu_ns, wall_ns;        /* forwarder thread CPU and lifetime */
	int      realtime;               /* SCHED_FIFO in effect */
};

struct lab_delay_cfg {
	struct lab_shape shape;
	uint64_t seed;
	uint32_t queue_pkts;   /* per direction */
	uint64_t spin_ns;      /* busy-wait this long before a due time instead of sleeping */
	int      realtime;     /* try SCHED_FIFO (1) */
};

struct lab_stamp {
	uint64_t sent_ns;
	uint32_t len, kept;
	uint8_t  head[LAB_STAMP_BYTES];
};

struct lab_delay {
	pthread_t thread;
	int started;
	int tun_fd[2], stamp_fd[2], stop_fd;
	struct lab_delay_cfg cfg;
	_Atomic uint64_t one_way_ns;  /* lab_delay_set_rtt changes it between experiment phases */
	struct lab_fifo q[2];
	struct lab_stamp *stamps[2];  /* ring of kernel stamps per direction, matched by content */
	uint32_t stamp_head[2], stamp_n[2];
	uint64_t rng;
	pthread_mutex_t lock;         /* guards published */
	struct lab_delay_stats local, published;
};

/* Starts the forwarder on ns's TUN and stamp fds (it does not own them). 0 or -1. */
int  lab_delay_start(struct lab_delay *d, const struct lab_ns *ns, const struct lab_delay_cfg *cfg);
void lab_delay_set_rtt(struct lab_delay *d, uint64_t rtt_ns);
void lab_delay_snapshot(struct lab_delay *d, struct lab_delay_stats *out);
void lab_delay_stop(struct lab_delay *d);  /* joins; safe when never started */
/* Percentile (0..100) of the lateness histogram, us. */
double lab_late_pct(const struct lab_delay_stats *s, double pct);
void lab_delay_print(FILE *out, const struct lab_delay_stats *s);

/* ---- lab_ping.c ------------------------------------------------------------------------ */

struct lab_rtt {
	int n;              /* round trips measured */
	int kernel;         /* 1: from the kernel's RTT sample (TCP_INFO), 0: connect() times */
	double median_us, p99_us, min_us, max_us;
	double connect_median_us, connect_p99_us; /* connect() call to return: wake-up included */
};
/* n TCP connects client -> server through the delay line; each is one RTT. */
int lab_ping(const struct lab_ns *ns, int n, struct lab_rtt *out);
/* Sort v, then its percentile pct (0..100) by base/stats.h's one rule (numpy's linear). */
double lab_pct_u64(uint64_t *v, size_t n, double pct);
double lab_pct_dbl(double *v, size_t n, double pct);

/* ---- lab_proc.c: children in the namespaces, TIME_WAIT ------------------------------- */

#define LAB_STDOUT_TO_LOG (-2)
/* Forks a child that joins one side's namespace, restores the signal mask, dies with us
 * (PDEATHSIG) and execs argv. stdout_fd >= 0 replaces its stdout (LAB_STDOUT_TO_LOG: into
 * log_path too); log_path receives its stderr. pid or -1. */
pid_t lab_spawn(const struct lab_ns *ns, int side, char *const argv[], const sigset_t *mask,
		int stdout_fd, const char *log_path);
/* SIGTERM, then SIGKILL after grace_ms; reaps. Returns the wait status or -1. */
int lab_stop_child(pid_t pid, int sig, int grace_ms);
/* Waits until a TCP connect from the client side to the server address:port succeeds, the
 * child dies or timeout_ms passes. 0 ready, -1 not. */
int lab_wait_listening(const struct lab_ns *ns, int port, pid_t child, int timeout_ms);
/* TIME_WAIT sockets from the text of /proc/net/sockstat ("TCP: ... tw N ..."), -1 if absent. */
long lab_sockstat_tw(const char *sockstat);
/* Counts sockets in state 06 (TIME_WAIT) in the text of /proc/net/tcp or tcp6. */
long lab_count_time_wait(const char *proc_net_tcp);
/* Ephemeral-port arithmetic: 1 (and a message) when rate x TIME_WAIT exceeds the port range. */
int lab_port_warning(double rate_per_s, int per_request, int port_lo, int port_hi,
		     char *msg, size_t cap);
int lab_parse_port_range(const char *text, int *lo, int *hi);
/* The running latscope, for exec in a child (sim and bench): /proc/self/exe. */
const char *lab_self_exe(void);

/* ---- lab_records.c: bench --record JSONL -> per-run figures (pure: unit tested) ------- */

struct lab_run_fig {
	int    n;                  /* measured, successful requests */
	int    failed;
	int    new_conns;          /* requests that opened their connection */
	int    reused_with_setup;  /* reused requests whose connect/TLS stamp was not zero */
	double ttft_ms;            /* median, first token frame - started */
	double connect_ms;         /* median over new connections: connect - started */
	double tls_ms;             /* median over new TLS connections: tls - connect */
};
/* Reads a bench --record file (or several, as one run). 0, or -1 with a message. */
int lab_records_read(const char *path, struct lab_run_fig *out);
int lab_records_read_many(const char *const *paths, size_t n, struct lab_run_fig *out);
int lab_records_parse(const char *text, struct lab_run_fig *out);

/* ---- lab_main.c: options and the running lab ---------------------------------------- */

struct lab_opts {
	struct lab_delay_cfg delay;
	uint64_t rtt_ns;
	int      port;             /* sim port in the server namespace */
	int      tls;              /* sim --tls, https for bench */
	const char *tls_max;       /* "1.2" / "1.3" / NULL */
	const char *sim_args;      /* extra sim flags, split like a shell would (no commands) */
	int      no_sim;
	int      ping_n;           /* --ping N */
	const char *client_sh;     /* --client-sh CMD */
	int      experiment;
	int      requests;         /* experiment requests per config */
	double   second_rtt_us;    /* experiment: the second RTT (slope) */
	const char *json_path;     /* experiment figures as JSON */
	const char *keep_dir;      /* keep experiment records here */
	int      bench_argc;       /* flags after -- */
	char   **bench_argv;
	int      verbose;
};

struct lab_ctx {
	const struct lab_opts *o;
	struct lab_ns ns;
	struct lab_delay delay;
	sigset_t orig_mask;        /* restored in children */
	char tmp_dir[64];          /* per-run scratch (truth files, logs, records) */
};

extern volatile sig_atomic_t lab_interrupted;
/* Sleeps up to ms, waking early on SIGINT/SIGTERM/SIGHUP (blocked while the lab runs): 1 once
 * one of them came (lab_interrupted is then set). ms 0 only polls. */
int lab_sleep_ms(int ms);

/* An argv built from pieces and shell-like words (wordexp without command substitution). */
struct lab_argv {
	char  *v[160];
	size_t n;
	char  *owned[64];          /* strings this argv allocated */
	size_t n_owned;
	int    overflow;
};
void lab_argv_add(struct lab_argv *a, const char *word);
void lab_argv_addf(struct lab_argv *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int  lab_argv_add_words(struct lab_argv *a, const char *words); /* -1: bad quoting */
void lab_argv_free(struct lab_argv *a);

/* Starts `latscope sim` in the server namespace (listening on LAB_SERVER_ADDR:o->port) and
 * waits until it accepts through the delay line. step_ms NULL: the sim's default. pid or -1. */
pid_t lab_sim_start(struct lab_ctx *c, int tls, const char *tls_max, const char *step_ms,
		    const char *tag);
void  lab_sim_stop(struct lab_ctx *c, pid_t pid);
/* Runs `latscope bench` in the client namespace with these flags; stdout goes to stdout_fd
 * (-1: ours). Samples TIME_WAIT while it runs (peaks per side into tw_peak[2] when not NULL,
 * [LAB_CLIENT] and [LAB_SERVER]: whoever closes first holds it). Exit code or
 * -1 when it could not run or was killed. cpu_s: the CPU time bench used (its rusage). */
int lab_bench_run(struct lab_ctx *c, char *const flags[], size_t n_flags, int stdout_fd,
		  long *tw_peak, double *wall_s, double *cpu_s);
/* CPU time a running process has used (/proc/PID/schedstat), seconds; -1 when unreadable. */
double lab_proc_cpu_s(pid_t pid);
/* TIME_WAIT sockets in one side's namespace now, -1 when unreadable. */
long lab_time_wait_in(const struct lab_ns *ns, int side);

/* ---- lab_experiment.c ------------------------------------------------------------------ */

int lab_experiment(struct lab_ctx *c);

#endif
