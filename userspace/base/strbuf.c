/* strbuf.c — see strbuf.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/strbuf.h"

int ls_strbuf_reserve(struct ls_strbuf *b, size_t extra)
{
	if (extra > SIZE_MAX - 1 - b->len)
		return -ENOMEM;
	size_t need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < need) {
		if (cap > SIZE_MAX / 2)
			return -ENOMEM;
		cap *= 2;
	}
	char *grown = realloc(b->data, cap);
	if (!grown)
		return -ENOMEM;
	b->data = grown;
	b->cap = cap;
	return 0;
}

int ls_strbuf_append(struct ls_strbuf *b, const void *p, size_t n)
{
	if (ls_strbuf_reserve(b, n))
		return -ENOMEM;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = 0;
	return 0;
}

int ls_strbuf_puts(struct ls_strbuf *b, const char *s)
{
	return ls_strbuf_append(b, s, strlen(s));
}

/* One vsnprintf into the room there is; a second only when the text did not fit. */
int ls_strbuf_printf(struct ls_strbuf *b, const char *fmt, ...)
{
	if (ls_strbuf_reserve(b, 128))
		return -ENOMEM;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->data[b->len] = 0;
		return -EINVAL;
	}
	if ((size_t)n >= b->cap - b->len) {
		if (ls_strbuf_reserve(b, (size_t)n)) {
			b->data[b->len] = 0;
			return -ENOMEM;
		}
		va_start(ap, fmt);
		vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
	return 0;
}

size_t ls_utf8_seq_len(const unsigned char *s, size_t n)
{
	unsigned char lo = 0x80, hi = 0xbf; /* the range of the second byte */
	size_t len;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		lo = s[0] == 0xe0 ? 0xa0 : 0x80; /* overlong below U+0800 */
		hi = s[0] == 0xed ? 0x9f : 0xbf; /* surrogates U+D800..DFFF */
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		lo = s[0] == 0xf0 ? 0x90 : 0x80; /* overlong below U+10000 */
		hi = s[0] == 0xf4 ? 0x8f : 0xbf; /* past U+10FFFF */
	} else {
		return 0;
	}
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

int ls_utf8_valid(const unsigned char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		while (i + 8 <= n) { /* ASCII fast path: frames are mostly ASCII JSON */
			uint64_t w;
			memcpy(&w, s + i, 8);
			if (w & 0x8080808080808080ull)
				break;
			i += 8;
		}
		if (i >= n)
			break;
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		size_t len = ls_utf8_seq_len(s + i, n - i);
		if (!len)
			return 0;
		i += len;
	}
	return 1;
}

int ls_strbuf_json_str(struct ls_strbuf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	if (n > (SIZE_MAX - 2) / 6 || ls_strbuf_reserve(b, n * 6 + 2))
		return -ENOMEM;
	const unsigned char *in = (const unsigned char *)s;
	char *o = b->data + b->len;
	*o++ = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = in[i];
		if (ch >= 0x80) {
			size_t seq = ls_utf8_seq_len(in + i, n - i);
			if (seq) {
				memcpy(o, in + i, seq);
				o += seq;
				i += seq - 1;
				continue;
			}
		}
		switch (ch) {
		case '"': *o++ = '\\'; *o++ = '"'; break;
		case '\\': *o++ = '\\'; *o++ = '\\'; break;
		case '\n': *o++ = '\\'; *o++ = 'n'; break;
		case '\r': *o++ = '\\'; *o++ = 'r'; break;
		case '\t': *o++ = '\\'; *o++ = 't'; break;
		default:
			if (ch < 0x20 || ch >= 0x7f) {
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

void ls_strbuf_consume(struct ls_strbuf *b, size_t n)
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

void ls_strbuf_free(struct ls_strbuf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}
