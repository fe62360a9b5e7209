/* evstore.c — per-socket event store: an open-addressing table of cookie -> sorted events. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "probes/evstore.h"

struct ls_evstore {
	struct ls_sock_events **slots; /* open addressing, power-of-two size */
	size_t n_slots;
	struct ls_sock_events **list;  /* insertion order, for iteration */
	size_t n_list, cap_list;
	uint64_t count[LS_EV__COUNT];
	uint64_t lost[LS_EV__COUNT];
	size_t first_cap;              /* a socket's first array (ls_evstore_expect) */
};

static const char *const kind_names[LS_EV__COUNT] = {
	[LS_EV_NONE] = "none",
	[LS_EV_CONNECT] = "connect",
	[LS_EV_CONNECT_RET] = "connect_ret",
	[LS_EV_ESTABLISHED] = "established",
	[LS_EV_STATE] = "state",
	[LS_EV_CLOSE] = "close",
	[LS_EV_SEND_START] = "send_start",
	[LS_EV_SEND_END] = "send_end",
	[LS_EV_ARRIVED] = "arrived",
	[LS_EV_READ] = "read",
	[LS_EV_RTT] = "rtt",
	[LS_EV_RETRANSMIT] = "retransmit",
	[LS_EV_TLS_START] = "tls_start",
	[LS_EV_TLS_END] = "tls_end",
	[LS_EV_TLS_WRITE] = "tls_write",
	[LS_EV_TLS_READ] = "tls_read",
};

const char *ls_event_kind_name(unsigned kind)
{
	return kind < LS_EV__COUNT ? kind_names[kind] : "unknown";
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

struct ls_evstore *ls_evstore_new(void)
{
	struct ls_evstore *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->n_slots = 256;
	st->first_cap = 32;
	st->slots = calloc(st->n_slots, sizeof(*st->slots));
	if (!st->slots) {
		free(st);
		return NULL;
	}
	return st;
}

void ls_evstore_expect(struct ls_evstore *st, size_t per_socket)
{
	st->first_cap = per_socket > 32 ? per_socket : 32;
}

void ls_evstore_free(struct ls_evstore *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->n_list; i++) {
		free(st->list[i]->ev);
		free(st->list[i]);
	}
	free(st->list);
	free(st->slots);
	free(st);
}

static struct ls_sock_events **slot_of(struct ls_sock_events **slots, size_t n_slots, uint64_t cookie)
{
	size_t i = mix(cookie) & (n_slots - 1);

	while (slots[i] && slots[i]->cookie != cookie)
		i = (i + 1) & (n_slots - 1);
	return &slots[i];
}

static int grow(struct ls_evstore *st)
{
	size_t n = st->n_slots * 2;
	struct ls_sock_events **slots = calloc(n, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < st->n_list; i++)
		*slot_of(slots, n, st->list[i]->cookie) = st->list[i];
	free(st->slots);
	st->slots = slots;
	st->n_slots = n;
	return 0;
}

static struct ls_sock_events *get_or_add(struct ls_evstore *st, uint64_t cookie)
{
	struct ls_sock_events **slot = slot_of(st->slots, st->n_slots, cookie), *s;

	if (*slot)
		return *slot;
	if ((st->n_list + 1) * 2 > st->n_slots) {
		if (grow(st))
			return NULL;
		slot = slot_of(st->slots, st->n_slots, cookie);
	}
	if (st->n_list == st->cap_list) {
		size_t cap = st->cap_list ? st->cap_list * 2 : 64;
		struct ls_sock_events **list = realloc(st->list, cap * sizeof(*list));

		if (!list)
			return NULL;
		st->list = list;
		st->cap_list = cap;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->cookie = cookie;
	st->list[st->n_list++] = s;
	*slot = s;
	return s;
}

int ls_evstore_add(struct ls_evstore *st, const struct ls_event *ev)
{
	struct ls_sock_events *s = get_or_add(st, ev->cookie);
	size_t i;

	if (!s)
		return -ENOMEM;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : st->first_cap;
		struct ls_event *e = realloc(s->ev, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		s->ev = e;
		s->cap = cap;
	}
	/* Nearly in order already (one ring, stamped at reserve): insert from the back. */
	i = s->n;
	while (i > 0 && s->ev[i - 1].ts_ns > ev->ts_ns)
		i--;
	memmove(&s->ev[i + 1], &s->ev[i], (s->n - i) * sizeof(*ev));
	s->ev[i] = *ev;
	s->n++;
	if (ev->kind < LS_EV__COUNT)
		st->count[ev->kind]++;
	return 0;
}

int ls_evstore_set_lost(struct ls_evstore *st, uint64_t cookie, uint64_t n)
{
	struct ls_sock_events *s = get_or_add(st, cookie);

	if (!s)
		return -ENOMEM;
	if (n > s->lost)
		s->lost = n;
	return 0;
}

void ls_evstore_set_lost_by_kind(struct ls_evstore *st, const uint64_t lost[LS_EV__COUNT])
{
	memcpy(st->lost, lost, sizeof(st->lost));
}

const struct ls_sock_events *ls_evstore_find(const struct ls_evstore *st, uint64_t cookie)
{
	if (!st)
		return NULL;
	return *slot_of(st->slots, st->n_slots, cookie);
}

size_t ls_evstore_sockets(const struct ls_evstore *st)
{
	return st ? st->n_list : 0;
}

const struct ls_sock_events *ls_evstore_at(const struct ls_evstore *st, size_t i)
{
	return st && i < st->n_list ? st->list[i] : NULL;
}

uint64_t ls_evstore_count(const struct ls_evstore *st, unsigned kind)
{
	return st && kind < LS_EV__COUNT ? st->count[kind] : 0;
}

uint64_t ls_evstore_lost(const struct ls_evstore *st, unsigned kind)
{
	return st && kind < LS_EV__COUNT ? st->lost[kind] : 0;
}

uint64_t ls_evstore_lost_total(const struct ls_evstore *st)
{
	uint64_t n = 0;

	for (unsigned k = 0; st && k < LS_EV__COUNT; k++)
		n += st->lost[k];
	return n;
}

size_t ls_sock_events_from(const struct ls_sock_events *s, uint64_t t)
{
	size_t lo = 0, hi = s ? s->n : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->ev[mid].ts_ns < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
