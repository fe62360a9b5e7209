/* evstore_pack.c — see evstore.h: sockets' events to plain bytes and back. The structs travel as
 * they are (every rank runs the same build on the same architecture, as the records do). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "base/strbuf.h"
#include "base/stats.h"
#include "probes/evstore.h"


/* b sent (when it holds anything) and emptied. */
static int flush(struct ls_strbuf *b, int (*emit)(void *ctx, const void *buf, size_t len), void *ctx)
{
	int err = b->len ? emit(ctx, b->data, b->len) : 0;
	b->len = 0;
	return err;
}

/* Socket s as segments into b, b sent whenever the next segment would pass max_bytes. */
static int pack_socket(struct ls_strbuf *b, const struct ls_sock_events *s, size_t max_bytes,
		       int (*emit)(void *ctx, const void *buf, size_t len), void *ctx)
{
	size_t from = 0, per = sizeof(struct ls_event), head = sizeof(struct ls_evseg_head);
	int err = 0;
	do {
		if (b->len && b->len + head + per > max_bytes && (err = flush(b, emit, ctx)))
			return err;
		size_t room = max_bytes > b->len + head + per ? (max_bytes - b->len - head) / per : 1;
		size_t n = s->n - from < room ? s->n - from : room;
		struct ls_evseg_head h = { .cookie = s->cookie, .lost = s->lost, .n = (uint32_t)n };
		if (ls_strbuf_append(b, &h, sizeof(h)) || (n && ls_strbuf_append(b, s->ev + from, n * per)))
			return -ENOMEM;
		from += n;
	} while (from < s->n);
	return 0;
}

int ls_evstore_pack(const struct ls_evstore *st, const uint64_t *cookies, size_t n, size_t max_bytes,
		    int (*emit)(void *ctx, const void *buf, size_t len), void *ctx, uint64_t *n_events)
{
	uint64_t *sorted = malloc((n ? n : 1) * sizeof(*sorted)), total = 0;
	struct ls_strbuf b = { 0 };
	int err = 0;
	if (!sorted)
		return -ENOMEM;
	if (n)
		memcpy(sorted, cookies, n * sizeof(*sorted));
	n = ls_sort_unique_u64(sorted, n);
	if (max_bytes > UINT32_MAX * sizeof(struct ls_event))
		max_bytes = UINT32_MAX * sizeof(struct ls_event); /* a segment's n is 32 bits */
	for (size_t i = 0; !err && i < n; i++) {
		const struct ls_sock_events *s = sorted[i] ? ls_evstore_find(st, sorted[i]) : NULL;
		if (!s)
			continue;
		err = pack_socket(&b, s, max_bytes, emit, ctx);
		total += s->n;
	}
	if (!err)
		err = flush(&b, emit, ctx);
	ls_strbuf_free(&b);
	free(sorted);
	if (n_events)
		*n_events = total;
	return err;
}

int ls_evstore_unpack(struct ls_evstore *st, const void *buf, size_t len, uint64_t (*map)(void *ctx, uint64_t t),
		      void *ctx)
{
	const char *p = buf, *end = p + len;
	while (p < end) {
		struct ls_evseg_head h;
		if ((size_t)(end - p) < sizeof(h))
			return -EPROTO;
		memcpy(&h, p, sizeof(h));
		p += sizeof(h);
		if ((size_t)(end - p) / sizeof(struct ls_event) < h.n)
			return -EPROTO;
		for (uint32_t i = 0; i < h.n; i++, p += sizeof(struct ls_event)) {
			struct ls_event e;
			memcpy(&e, p, sizeof(e));
			if (e.cookie != h.cookie)
				return -EPROTO;
			if (map)
				e.ts_ns = map(ctx, e.ts_ns);
			if (ls_evstore_add(st, &e))
				return -ENOMEM;
		}
		if ((h.lost || !h.n) && ls_evstore_set_lost(st, h.cookie, h.lost))
			return -ENOMEM;
	}
	return 0;
}
