/* sse.c — see sse.h. One pass over the input: find each line end with memchr, handle the
 * line in place when it lies whole in this read, copy it only when it spans reads. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "driver/sse.h"

void ls_sse_init(struct ls_sse *p)
{
	memset(p, 0, sizeof(*p));
	p->max = LS_SSE_FRAME_MAX;
}

void ls_sse_reset(struct ls_sse *p)
{
	p->line_len = 0;
	p->data_len = 0;
	p->n_data = 0;
	p->off = 0;
	p->event_start = 0;
	p->skip_lf = 0;
	p->error = 0;
}

void ls_sse_free(struct ls_sse *p)
{
	free(p->line);
	free(p->data);
	p->line = p->data = NULL;
	p->line_cap = p->data_cap = 0;
	ls_sse_reset(p);
}

uint64_t ls_sse_pending(const struct ls_sse *p)
{
	return (p->n_data || p->line_len) ? p->off - p->event_start : 0;
}

/* Grows *buf to hold need bytes (+1 for the NUL); need is already checked against the cap. */
static int reserve(char **buf, size_t *cap, size_t need)
{
	if (need + 1 <= *cap)
		return 0;
	size_t ncap = *cap ? *cap : 256;
	while (ncap < need + 1)
		ncap *= 2;
	char *grown = realloc(*buf, ncap);
	if (!grown)
		return -ENOMEM;
	*buf = grown;
	*cap = ncap;
	return 0;
}

/* One complete line (without its end). end_off: stream offset of the line end's last byte. */
static int on_line(struct ls_sse *p, const char *line, size_t len, uint64_t end_off,
		   ls_sse_cb cb, void *ctx)
{
	if (len == 0) {
		int rc = 0;
		if (p->n_data) {
			/* The spec drops the final '\n' the data lines added. */
			size_t dlen = p->data_len ? p->data_len - 1 : 0;
			p->data[dlen] = 0;
			struct ls_sse_event ev = {
				.data = p->data, .data_len = dlen, .n_data = p->n_data,
				.bytes = (uint32_t)(end_off + 1 - p->event_start), .end_off = end_off,
			};
			rc = cb(ctx, &ev);
		}
		p->data_len = 0;
		p->n_data = 0;
		p->event_start = end_off + 1;
		return rc;
	}
	if (line[0] == ':')
		return 0; /* comment (keep-alive pings) */
	const char *colon = memchr(line, ':', len);
	size_t name_len = colon ? (size_t)(colon - line) : len;
	if (name_len != 4 || memcmp(line, "data", 4) != 0)
		return 0; /* event:, id:, retry: and unknown fields carry nothing we measure */
	const char *val = colon ? colon + 1 : line + len;
	size_t val_len = (size_t)(line + len - val);
	if (val_len && val[0] == ' ') {
		val++;
		val_len--;
	}
	size_t need = p->data_len + val_len + 1;
	if (need > p->max)
		return -EMSGSIZE;
	if (reserve(&p->data, &p->data_cap, need))
		return -ENOMEM;
	memcpy(p->data + p->data_len, val, val_len);
	p->data[p->data_len + val_len] = '\n';
	p->data_len = need;
	p->n_data++;
	return 0;
}

/* Appends n bytes to the line kept across reads, within the frame cap. */
static int line_append(struct ls_sse *p, const char *src, size_t n)
{
	if (p->line_len + n > p->max)
		return -EMSGSIZE;
	if (reserve(&p->line, &p->line_cap, p->line_len + n))
		return -ENOMEM;
	memcpy(p->line + p->line_len, src, n);
	p->line_len += n;
	return 0;
}

int ls_sse_feed(struct ls_sse *p, const char *buf, size_t len, ls_sse_cb cb, void *ctx)
{
	if (p->error)
		return p->error;
	const char *cur = buf, *end = buf + len;
	int rc = 0;
	if (cur < end && p->skip_lf) {
		if (*cur == '\n') {
			cur++;
			p->off++;
			/* A blank line that ended in "\r\n" dispatched at the '\r': the '\n' belongs to it. */
			if (p->event_start == p->off - 1 && !p->n_data && !p->line_len)
				p->event_start = p->off;
		}
		p->skip_lf = 0;
	}
	while (cur < end) {
		size_t avail = (size_t)(end - cur);
		const char *nl = memchr(cur, '\n', avail);
		const char *cr = memchr(cur, '\r', nl ? (size_t)(nl - cur) : avail);
		const char *eol = cr ? cr : nl;
		if (!eol) {
			/* Unfinished line: keep it for the next read. */
			rc = line_append(p, cur, avail);
			if (!rc)
				p->off += avail;
			break;
		}
		size_t seg = (size_t)(eol - cur);
		/* The line end is "\r\n" when a '\n' follows the '\r' in this read; a '\r' last in the
		 * read may still be followed by '\n' in the next one (skip_lf). */
		size_t eol_len = 1;
		if (eol == cr) {
			if (cr + 1 < end && cr[1] == '\n')
				eol_len = 2;
			else if (cr + 1 == end)
				p->skip_lf = 1;
		}
		uint64_t end_off = p->off + seg + eol_len - 1;
		if (p->line_len) {
			if ((rc = line_append(p, cur, seg)))
				break;
			size_t line_len = p->line_len;
			p->line_len = 0;
			rc = on_line(p, p->line, line_len, end_off, cb, ctx);
		} else {
			if (seg > p->max) {
				rc = -EMSGSIZE;
				break;
			}
			rc = on_line(p, cur, seg, end_off, cb, ctx);
		}
		p->off = end_off + 1;
		cur = eol + eol_len;
		if (rc)
			break;
	}
	if (rc < 0)
		p->error = rc;
	return rc;
}
