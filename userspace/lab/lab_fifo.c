/* lab/lab_fifo.c — one direction of the delay line: a FIFO of packets, each with the time it
 * is due at the other end. One FIFO per direction and due times that never go backwards keep
 * packets in order even with jitter; a rate limit serialises packets like a link would. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/rng.h"
#include "lab/lab.h"

int lab_fifo_init(struct lab_fifo *q, uint32_t cap)
{
	memset(q, 0, sizeof(*q));
	if (!cap)
		return -EINVAL;
	q->slots = calloc(cap, sizeof(*q->slots));
	if (!q->slots) {
		fprintf(stderr, "lab: out of memory for a %u-packet queue\n", cap);
		return -ENOMEM;
	}
	q->cap = cap;
	return 0;
}

void lab_fifo_free(struct lab_fifo *q)
{
	free(q->slots);
	memset(q, 0, sizeof(*q));
}

struct lab_pkt *lab_fifo_tail(struct lab_fifo *q)
{
	if (q->n >= q->cap)
		return NULL;
	return &q->slots[(q->head + q->n) % q->cap];
}

uint64_t lab_due_ns(struct lab_fifo *q, const struct lab_shape *shape, uint64_t sent_ns,
		    uint32_t len, uint64_t *rng)
{
	int64_t delay = (int64_t)shape->one_way_ns;
	if (shape->jitter_ns) {
		uint64_t span = 2 * shape->jitter_ns + 1;
		delay += (int64_t)(ls_splitmix64(rng) % span) - (int64_t)shape->jitter_ns;
		if (delay < 0)
			delay = 0;
	}
	uint64_t start = sent_ns;
	if (shape->rate_mbit > 0) {
		/* bits / (Mbit/s) = us; the packet arrives once its last bit is on the wire */
		uint64_t tx_ns = (uint64_t)((double)len * 8.0 * 1000.0 / shape->rate_mbit);
		if (start < q->link_free_ns)
			start = q->link_free_ns;
		start += tx_ns;
		q->link_free_ns = start;
	}
	uint64_t due = start + (uint64_t)delay;
	if (due < q->last_due_ns)
		due = q->last_due_ns;
	q->last_due_ns = due;
	return due;
}

void lab_fifo_push(struct lab_fifo *q, const struct lab_shape *shape, uint64_t *rng)
{
	struct lab_pkt *p = lab_fifo_tail(q);
	if (!p)
		return;
	p->due_ns = lab_due_ns(q, shape, p->sent_ns, p->len, rng);
	q->n++;
}

struct lab_pkt *lab_fifo_head(struct lab_fifo *q)
{
	return q->n ? &q->slots[q->head] : NULL;
}

void lab_fifo_pop(struct lab_fifo *q)
{
	if (!q->n)
		return;
	q->head = (q->head + 1) % q->cap;
	q->n--;
}
