/* watch_int.h — what watch.c and watch_split.c share while building a struct ls_watch. */
#ifndef LATSCOPE_WATCH_INT_H
#define LATSCOPE_WATCH_INT_H

#include "watch/watch.h"

struct ls_watch_arrival {
	uint64_t ts;
	uint32_t from, to; /* bytes [from, to) came */
	uint32_t ex;       /* UINT32_MAX: before any request (handshake, session tickets) */
};
#define arrival ls_watch_arrival

/* Growable arrays of the build. */
struct build {
	struct ls_watch *w;
	size_t cap_conns, cap_ex, cap_reads, cap_gaps;
	struct ls_watch_arrival *arr; /* the current socket's */
	size_t n_arr, cap_arr;
};

/* *p grows to hold need items of size (doubling). 0, or -ENOMEM (*p untouched). */
int ls_watch_grow(void **p, size_t *cap, size_t need, size_t size);
/* After a socket's walk: exchange ex's bursts, head, first frame, gaps; the socket's reads start
 * at w->reads[first_read]. 0, or -ENOMEM. */
int ls_watch_split(struct build *b, uint32_t ex, size_t first_read);
/* After every socket: the head rule made consistent per server port (watch_split.c). */
void ls_watch_heads_by_server(struct ls_watch *w);
/* The watched server's end of every connection, and its read/first write per exchange. */
void ls_watch_join_server(struct ls_watch *w, const struct ls_evstore *ev);

#endif
