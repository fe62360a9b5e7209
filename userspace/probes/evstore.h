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

#endif
