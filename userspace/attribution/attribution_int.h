/* attribution_int.h — shared by attribution.c (windows and parts), attribution_seq.c (a
 * request's kernel stamps from its sockets' events) and attribution_tls.c (its handshake). Not
 * an interface for other stages. */
#ifndef LATSCOPE_ATTRIBUTION_INT_H
#define LATSCOPE_ATTRIBUTION_INT_H

#include "attribution/attribution.h"

/* Server sockets by (local port, remote port), to pair with a client socket on this host. */
struct ls_attr_srv {
	uint32_t ports; /* lport << 16 | rport */
	uint64_t cookie, first_ns, last_ns;
};

struct ls_attr_index {
	const struct ls_evstore *store; /* NULL: probes off */
	struct ls_attr_srv *srv;
	size_t n_srv;
};

int ls_attr_index_build(struct ls_attr_index *x, const struct ls_evstore *store);
void ls_attr_index_free(struct ls_attr_index *x);

/* Fills a's kernel stamps, its frames (a->frames allocated here) and the flags that follow from
 * the events (no events, no server, lost, reused, no TLS events). tail: the response's last
 * bytes when they were read after the last frame (read_ns 0 otherwise). 0 or -ENOMEM. */
int ls_attr_match(const struct ls_attr_index *x, const struct ls_request *r, struct ls_req_attr *a,
		  struct ls_frame_attr *tail);

/* A fresh connection's handshake (attribution_tls.c): a->syn_sent_ns and the TLS round trips
 * from the client socket cs and the paired server socket (a->server_cookie). */
void ls_attr_handshake(const struct ls_attr_index *x, const struct ls_sock_events *cs, struct ls_req_attr *a);

/* The uprobe steps' sessions joined to the requests (attribution_engine.c), and the requests'
 * llama_tokenize calls (their frontend): fills map (the caller frees it), each a->req[i].engine
 * and a->engine / a->have_engine. Needs the requests' kernel stamps (ls_attr_match) first. steps
 * sorted (ls_engine_steps_sort). 0 or -ENOMEM. */
struct ls_engine_steps;
struct ls_engine_map;
/* The first token's frame of r under the rules (which frame counts as the first token), or -1. */
int ls_attr_first_token_frame(const struct ls_request *r, const struct ls_read_rules *rules);
/* The engine's own account of each request against the server's kernel stamps, into a->account
 * (attribution_account.c). 0 or -ENOMEM. */
int ls_attr_engine_account(const struct ls_run *run, struct ls_attribution *a);
int ls_attr_engine_map(const struct ls_run *run, struct ls_attribution *a, const struct ls_engine_steps *steps,
		       uint64_t lost, struct ls_engine_map *map);

#endif
