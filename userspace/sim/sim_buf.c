/* sim/sim_buf.c — a growable byte buffer and the JSON string escaper frames are built with
 * (frames are formatted by hand: cJSON per frame would cost more than the rest of a step). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sim/sim.h"

int sim_buf_reserve(struct sim_buf *b, size_t extra)
{
	if (b->len + extra + 1 <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + extra + 1) {
		if (cap > ((size_t)-1) / 2)
			return -1;
		cap *= 2;
	}
	char *d = realloc(b->data, cap);
	if (!d)
		return -1;
	b->data = d;
	b->cap = cap;
	return 0;
}

int sim_buf_append(struct sim_buf *b, const void *p, size_t n)
{
	if (sim_buf_reserve(b, n))
		return -1;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = 0;
	return 0;
}

int sim_buf_puts(struct sim_buf *b, const char *s)
{
	return sim_buf_append(b, s, strlen(s));
}

int sim_buf_printf(struct sim_buf *b, const char *fmt, ...)
{
	va_list ap;
	if (sim_buf_reserve(b, 128))
		return -1;
	va_start(ap, fmt);
	int n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	if ((size_t)n >= b->cap - b->len) {
		if (sim_buf_reserve(b, (size_t)n))
			return -1;
		va_start(ap, fmt);
		vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
	return 0;
}

int sim_buf_json_str(struct sim_buf *b, const char *s, size_t n)
{
	if (sim_buf_reserve(b, n * 6 + 2))
		return -1;
	char *o = b->data + b->len;
	*o++ = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		switch (ch) {
		case '"': *o++ = '\\'; *o++ = '"'; break;
		case '\\': *o++ = '\\'; *o++ = '\\'; break;
		case '\n': *o++ = '\\'; *o++ = 'n'; break;
		case '\r': *o++ = '\\'; *o++ = 'r'; break;
		case '\t': *o++ = '\\'; *o++ = 't'; break;
		default:
			if (ch < 0x20 || ch == 0x7f) {
				static const char hex[] = "0123456789abcdef";
				memcpy(o, "\\u00", 4);
				o[4] = hex[ch >> 4];
				o[5] = hex[ch & 15];
				o += 6;
			} else {
				*o++ = (char)ch;
			}
		}
	}
	*o++ = '"';
	b->len = (size_t)(o - b->data);
	b->data[b->len] = 0;
	return 0;
}

void sim_buf_consume(struct sim_buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
	} else {
		memmove(b->data, b->data + n, b->len - n);
		b->len -= n;
	}
	if (b->data)
		b->data[b->len] = 0;
}

void sim_buf_free(struct sim_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

uint64_t sim_hash64(const void *p, size_t n, uint64_t seed)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ull ^ seed;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ull;
	}
	return ls_splitmix64(&h);
}
