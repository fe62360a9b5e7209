/* fuzz_sse.c — the SSE splitter and the frame decoder together, as the driver runs them: the
 * first byte picks the backend and where the input is cut into reads (the splitter must give
 * the same events wherever the cuts fall), every event is decoded into a frame of a record, by
 * the fast path and by cJSON's alone, which must agree. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "driver/backend.h"
#include "driver/backend_int.h"
#include "base/record.h"
#include "driver/sse.h"

struct ctx {
	enum ls_backend backend;
	struct ls_decode_state dec;
	struct ls_request rec;
	uint64_t events;
	uint64_t hash; /* of every event, to compare the cut and the whole feeds */
};

static int on_event(void *p, const struct ls_sse_event *ev)
{
	struct ctx *c = p;
	if (ev->data[ev->data_len] != 0 || strlen(ev->data) > ev->data_len)
		abort(); /* the data must be NUL-terminated at data_len */
	for (size_t i = 0; i < ev->data_len; i++)
		c->hash = (c->hash ^ (unsigned char)ev->data[i]) * 0x100000001b3ull;
	c->hash = (c->hash ^ ev->n_data) * 0x100000001b3ull;
	c->events++;
	if (c->rec.n_frames >= 4096)
		return 0; /* bound the record, as the driver's frame cap does */
	struct ls_frame *fr = ls_request_add_frame(&c->rec);
	if (!fr)
		return 1;
	fr->bytes = ev->bytes;
	fr->stream_off = ev->end_off;
	/* The fast path (frame_fast.c) must leave what cJSON's path leaves. */
	struct ls_frame slow = *fr;
	struct ls_decode_state dec = c->dec;
	struct ls_request rec = c->rec;
	int rs = ls_backend_decode_json(c->backend, ev->data, ev->data_len, &dec, &slow, &rec);
	int rf = ls_backend_decode(c->backend, ev->data, ev->data_len, &c->dec, fr, &c->rec);
	if (rs != rf || memcmp(&slow, fr, sizeof(slow)) || dec.last_cum_tokens != c->dec.last_cum_tokens ||
	    dec.last_text_len != c->dec.last_text_len || rec.text_bytes != c->rec.text_bytes ||
	    rec.usage_prompt_tokens != c->rec.usage_prompt_tokens ||
	    rec.usage_completion_tokens != c->rec.usage_completion_tokens || strcmp(rec.error, c->rec.error))
		abort();
	return 0;
}

static int run(const uint8_t *data, size_t size, size_t cut, uint32_t max, enum ls_backend b, struct ctx *c)
{
	struct ls_sse p;
	ls_sse_init(&p);
	p.max = max;
	memset(c, 0, sizeof(*c));
	c->backend = b;
	ls_request_reset(&c->rec, 0);
	ls_decode_state_init(&c->dec);
	int rc = 0;
	for (size_t off = 0; off < size && !rc; off += cut) {
		size_t n = size - off < cut ? size - off : cut;
		/* each read in its own exact-size allocation: an over-read past it is caught */
		char *piece = malloc(n ? n : 1);
		if (!piece)
			abort();
		memcpy(piece, data + off, n);
		rc = ls_sse_feed(&p, piece, n, on_event, c);
		free(piece);
	}
	(void)ls_sse_pending(&p);
	ls_sse_free(&p);
	ls_request_free(&c->rec);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t sel = data[0];
	data++;
	size--;
	enum ls_backend b = (enum ls_backend)(sel % 3);
	size_t cut = 1 + (sel >> 2) % 17; /* reads of 1..17 bytes */
	uint32_t max = (sel & 0x80) ? 64 : LS_SSE_FRAME_MAX;
	struct ctx whole, pieces;
	int rw = run(data, size, size ? size : 1, max, b, &whole);
	int rp = run(data, size, cut, max, b, &pieces);
	/* The events do not depend on how the bytes were cut (only an event that ends in "\r\n"
	 * cut between the two may end one byte earlier: it is dispatched at the '\r'). */
	if (rw != rp || (!rw && (whole.events != pieces.events || whole.hash != pieces.hash)))
		abort();
	return 0;
}
