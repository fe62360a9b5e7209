/* evstore.h — probe events kept per socket (keyed by cookie), each socket's events in time
 * order; plus what was lost. Filled by probes.c from the ring buffer, or by tests directly. */
#ifndef LATSCOPE_EVSTORE_H
#define LATSCOPE_EVSTORE_H

#include <stddef.h>
#include <stdint.h>
#include "events.h"

struct ls_sock_events {
	uint64_t cookie;
	struct ls_event *ev; /* sorted by ts_ns (stable for equal stamps) */
	size_t   n, cap;
	uint64_t lost;       /* events of this socket the ring buffer dropped */
};

struct ls_evstore;

struct ls_evstore *ls_evstore_new(void);
void ls_evstore_free(struct ls_evstore *st);
/* How many events a socket is expected to get: its first array holds that many (at least 32).
 * Sockets that all grow in step (a burst's streams) otherwise leave each smaller array behind as
 * a hole at every doubling: 3 MB of 1,400 streams' peak RSS. */
void ls_evstore_expect(struct ls_evstore *st, size_t per_socket);

/* Adds one event (any order: it is inserted in time order). 0, or -ENOMEM. */
int ls_evstore_add(struct ls_evstore *st, const struct ls_event *ev);
/* Records that n events of this socket were lost (a running total: keeps the larger). */
int ls_evstore_set_lost(struct ls_evstore *st, uint64_t cookie, uint64_t n);
/* Counts lost events per kind (totals from the kernel). */
void ls_evstore_set_lost_by_kind(struct ls_evstore *st, const uint64_t lost[LS_EV__COUNT]);

/* The socket's events, or NULL when none was seen. */
const struct ls_sock_events *ls_evstore_find(const struct ls_evstore *st, uint64_t cookie);
/* Every socket, for iteration (index < ls_evstore_sockets()). Order is unspecified. */
size_t ls_evstore_sockets(const struct ls_evstore *st);
const struct ls_sock_events *ls_evstore_at(const struct ls_evstore *st, size_t i);

/* Totals: events kept and lost per kind. */
uint64_t ls_evstore_count(const struct ls_evstore *st, unsigned kind);
uint64_t ls_evstore_lost(const struct ls_evstore *st, unsigned kind);
uint64_t ls_evstore_lost_total(const struct ls_evstore *st);

const char *ls_event_kind_name(unsigned kind);

/* Index of the first event of s with ts_ns >= t (s->n when none). */
size_t ls_sock_events_from(const struct ls_sock_events *s, uint64_t t);

/* Sockets' events as plain bytes for another process of the same build (evstore_pack.c: MPI
 * ranks send rank 0 the events of their own requests' sockets). A message is segments, each a
 * head and n events of one socket; a socket may span segments and messages. */
struct ls_evseg_head {
	uint64_t cookie;
	uint64_t lost;      /* the socket's lost events (ls_sock_events.lost) */
	uint32_t n, reserved;
};
/* The sockets cookies[0..n) of st (duplicates and unknown cookies skipped) in messages of at
 * most max_bytes (at least one event each): emit(ctx, buf, len) per message. *n_events gets the
 * events packed (may be NULL). 0, -ENOMEM, or emit's negative error. */
int ls_evstore_pack(const struct ls_evstore *st, const uint64_t *cookies, size_t n, size_t max_bytes,
		    int (*emit)(void *ctx, const void *buf, size_t len), void *ctx, uint64_t *n_events);
/* One message into st, every ts_ns through map(ctx, ts) (NULL: kept). 0, -EPROTO (not whole
 * segments), or -ENOMEM. */
int ls_evstore_unpack(struct ls_evstore *st, const void *buf, size_t len, uint64_t (*map)(void *ctx, uint64_t t),
		      void *ctx);

#endif
