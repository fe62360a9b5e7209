/* sse.h — incremental Server-Sent Events splitter (the `text/event-stream` wire format).
 * Pure: no I/O, no clock. Bytes go in as they arrive, split anywhere (a frame, a line end,
 * even a "\r\n" pair cut between two reads); each complete event (one `data:` message) comes
 * out through a callback, its data lines joined with '\n' as the SSE spec says.
 * Lines end in "\n", "\r\n" or "\r"; lines starting with ':' are comments; `event:`, `id:`,
 * `retry:` and unknown fields are ignored; an empty line dispatches the event when it had data.
 * The parser owns two buffers that grow up to LS_SSE_FRAME_MAX and are then reused, so after
 * the first frames a stream costs no allocation. */
#ifndef LATSCOPE_SSE_H
#define LATSCOPE_SSE_H

#include <stddef.h>
#include <stdint.h>

/* Cap on one event: its joined data and any single line. 1 MiB holds the cumulative text of
 * an SGLang stream of ~200k tokens; anything larger is a hostile or broken server. Over the cap
 * ls_sse_feed returns -EMSGSIZE (the driver records LS_FAIL_OVERSIZE). */
#define LS_SSE_FRAME_MAX (1u << 20)

struct ls_sse_event {
	const char *data;     /* joined data lines, NUL-terminated (valid during the callback) */
	size_t      data_len;
	uint32_t    n_data;   /* data: lines in the event */
	uint32_t    bytes;    /* raw bytes since the previous blank line, through this blank line */
	uint64_t    end_off;  /* stream offset of the event's last byte (its final line end) */
};

/* Return 0 to go on; anything else stops ls_sse_feed, which returns it. */
typedef int (*ls_sse_cb)(void *ctx, const struct ls_sse_event *ev);

struct ls_sse {
	char    *line;        /* the current line when it spans reads */
	size_t   line_len, line_cap;
	char    *data;        /* the current event's joined data */
	size_t   data_len, data_cap;
	uint32_t n_data;
	uint64_t off;         /* bytes consumed so far */
	uint64_t event_start; /* offset where the current event began */
	int      skip_lf;     /* the last line ended in '\r': a leading '\n' completes it */
	int      error;       /* sticky negative errno */
	uint32_t max;         /* cap, LS_SSE_FRAME_MAX unless set lower (tests) */
};

void ls_sse_init(struct ls_sse *p);
/* Back to the start of a stream, keeping the buffers. */
void ls_sse_reset(struct ls_sse *p);
void ls_sse_free(struct ls_sse *p);

/* Consumes len bytes. Returns 0, the callback's non-zero return, -EMSGSIZE when an event or
 * line passes the cap, or -ENOMEM. After an error the parser stays failed (same return). */
int ls_sse_feed(struct ls_sse *p, const char *buf, size_t len, ls_sse_cb cb, void *ctx);

/* Bytes of an event begun but not finished (a stream cut mid-frame leaves this > 0 when
 * the partial event had any data or an unfinished line). */
uint64_t ls_sse_pending(const struct ls_sse *p);

#endif
