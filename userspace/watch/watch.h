/* watch/ — what `latscope watch` derives from the probes' stamps of someone else's harness.
 * Takes: struct ls_evstore (probes/evstore.h): the watched processes' client sockets and, with a
 *        watched server, its sockets; optionally the harness's own saved result (TTFTs, ITLs).
 * Gives: struct ls_watch: per connection (connect, ESTABLISHED, TLS handshake, close) and per
 *        exchange (an HTTP/1.1 request on a connection: a send burst, then the response until the
 *        next send or close), every read with the arrival of the oldest byte it delivered, and
 *        struct ls_watch_summary, the figures a user wants first. Pure functions of the events:
 *        tests feed them hand-made events. */
#ifndef LATSCOPE_WATCH_H
#define LATSCOPE_WATCH_H

#include <stddef.h>
#include <stdint.h>
#include "probes/evstore.h"

/* Arrivals on one socket closer than this are one burst (a final token frame, the usage frame
 * and [DONE] leave together): one unit for arrival-to-arrival gaps. */
#define LS_WATCH_BURST_NS 200000ull
/* A response's first burst: what came within this of its first byte (the head, and on TLS 1.3
 * session tickets written just before it). */
#define LS_WATCH_PREAMBLE_NS 2000000ull

struct ls_watch_conn {
	uint64_t cookie;
	uint32_t tgid;
	uint16_t lport, rport;
	uint64_t connect_ns;     /* connect() called; 0: connected before the probes attached */
	uint64_t established_ns; /* SYN_SENT -> ESTABLISHED */
	uint64_t tls_start_ns, tls_end_ns; /* the (first) handshake; 0 without one */
	uint32_t n_handshakes;
	uint64_t close_ns;       /* -> CLOSE; 0 still open when the watch ended */
	int      closed_by;      /* 1 the harness closed first (FIN_WAIT1), 2 the server (CLOSE_WAIT), 0 unknown */
	int      time_wait;      /* went through TIME_WAIT (or FIN_WAIT2, which ends there) */
	uint32_t first_ex, n_ex; /* its exchanges: ex[first_ex .. first_ex + n_ex) */
	uint64_t srv_cookie;     /* the watched server's end of it, 0 none */
};

struct ls_watch_exchange {
	uint32_t conn;           /* index in conns */
	uint32_t nth;            /* 0, 1, ... on its connection */
	uint64_t send_first_ns;  /* the request's first send started */
	uint64_t sent_ns;        /* the request's last byte handed to the kernel */
	uint32_t req_bytes;
	uint32_t req_end_seq;    /* the harness's write_seq after the request */
	uint64_t first_byte_ns;  /* first response byte in the harness's kernel (the head, when apart) */
	uint64_t first_byte_read_ns;
	int      head_apart;     /* the first burst came early and alone: the response head (timing rule) */
	uint64_t first_data_ns;  /* first arrival after the head: the first frame */
	uint64_t first_data_read_ns;
	uint32_t data_seq;       /* sequence number of the first frame's first byte */
	uint64_t last_byte_ns, last_read_ns;
	uint32_t resp_bytes;
	uint32_t n_reads, n_bursts;
	uint32_t first_read;     /* index in reads of its first read (when n_reads) */
	uint32_t first_gap, n_gaps; /* its arrival-to-arrival gaps: gaps[first_gap ..) (data bursts) */
	uint64_t burst2_ns;      /* the second burst: where the first frame is when the first is the head */
	uint32_t burst2_seq;
	uint32_t burst1_bytes;   /* bytes of the first burst, when a second followed (else 0) */
	uint64_t arr2_ns;        /* a second arrival inside the first burst: when, */
	uint32_t arr2_off;       /* and at which byte of the response it starts (0: none) */
	uint64_t srv_read_ns;    /* the server read the whole request (watched server) */
	uint64_t srv_write_ns;   /* the server started writing the first frame */
};

/* One read of response bytes: when it returned, and when the oldest byte it delivered arrived. */
struct ls_watch_read {
	uint64_t read_ns, arrived_ns;
	uint32_t ex;             /* the exchange the oldest byte belongs to, UINT32_MAX none */
	uint32_t bytes;
	uint32_t end_seq;        /* copied_seq after the read */
};

struct ls_watch {
	struct ls_watch_conn *conns;
	size_t n_conns;
	struct ls_watch_exchange *ex;
	size_t n_ex;
	struct ls_watch_read *reads;
	size_t n_reads;
	uint64_t *gaps;          /* arrival-to-arrival gaps of data bursts, per exchange in order */
	size_t n_gaps;
	size_t n_conns_no_ex;    /* connections that carried no exchange (left out of conns) */
	int have_server;         /* server sockets were in the events */
	int tls_unlinked;        /* handshakes seen whose socket the probes could not name */
};

struct ls_watch_opts {
	const uint32_t *tgids;   /* client processes; NULL: every client socket in the events */
	size_t n_tgids;
	uint16_t port;           /* only connections to this remote port; 0 every one */
};

/* Builds the connections and exchanges. 0, or -ENOMEM. */
int ls_watch_build(const struct ls_evstore *ev, const struct ls_watch_opts *o, struct ls_watch *w);
void ls_watch_free(struct ls_watch *w);

/* P50/P90/P99/max (and mean, n) of a set of ns values. */
struct ls_watch_dist {
	size_t n;
	double mean_ns, p50_ns, p90_ns, p99_ns, max_ns;
};
/* Of v[0..n) (sorted in place). */
void ls_watch_dist_of(uint64_t *v, size_t n, struct ls_watch_dist *d);

struct ls_watch_summary {
	size_t n_conns, n_ex;
	size_t n_conns_connect_seen;
	double conns_per_request;
	struct ls_watch_dist held_read;       /* read - arrival of the oldest byte, every read */
	struct ls_watch_dist held_first;      /* first frame read - its arrival, per request */
	struct ls_watch_dist connect_to_sent; /* connect() -> request sent, first request of a connection */
	struct ls_watch_dist connect_to_est;  /* connect() -> ESTABLISHED */
	struct ls_watch_dist est_to_sent;     /* ESTABLISHED (or TLS done) -> request sent */
	struct ls_watch_dist tls;             /* handshakes: first entry -> done */
	size_t n_handshakes, n_conns_tls;
	struct ls_watch_dist ttft_kernel;     /* request sent -> first frame arrived */
	struct ls_watch_dist itl_kernel;      /* arrival-to-arrival gaps of data bursts */
	size_t n_head_apart;
	/* with a watched server: the four parts of sent-first -> first frame read */
	size_t n_server;
	struct ls_watch_dist part_client, part_network, part_server, part_unattributed;
};

/* The summary of w. 0, or -ENOMEM. */
int ls_watch_summarise(const struct ls_watch *w, struct ls_watch_summary *s);

/* A harness's own saved result: its TTFTs and ITLs (seconds in the file, ns here). */
struct ls_harness_result {
	uint64_t *ttfts; size_t n_ttfts;
	uint64_t *itls;  size_t n_itls;
	const char *format;  /* "vllm --save-result", "sglang --output-details", "generic" */
};
/* Reads vLLM's --save-result JSON (ttfts, itls: a list per request or flat), SGLang's
 * --output-file JSONL (the last line with ttfts; --output-details), or {"ttfts":[], "itls":[]}.
 * 0, or -errno with why set (names the path). */
int ls_harness_result_read(const char *path, struct ls_harness_result *r, char *why, size_t why_len);
void ls_harness_result_free(struct ls_harness_result *r);

#endif
