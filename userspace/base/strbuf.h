/* strbuf.h — a growable byte buffer, and the one JSON string escaper. Hot JSON (the record
 * file's per-request lines, the simulator's frames) is formatted by hand into one of these:
 * cJSON per line or frame would cost more than the rest of the work.
 * data is always NUL-terminated past len once anything was appended; { 0 } is an empty buffer. */
#ifndef LATSCOPE_STRBUF_H
#define LATSCOPE_STRBUF_H

#include <stddef.h>

struct ls_strbuf {
	char  *data;
	size_t len, cap;
};

/* Room for extra more bytes and the NUL. 0, or -ENOMEM (the buffer is left as it was). */
int  ls_strbuf_reserve(struct ls_strbuf *b, size_t extra);
/* Appends; 0 or -ENOMEM (-EINVAL for a format vsnprintf cannot write). */
int  ls_strbuf_append(struct ls_strbuf *b, const void *p, size_t n);
int  ls_strbuf_puts(struct ls_strbuf *b, const char *s);
int  ls_strbuf_printf(struct ls_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s[0..n) as a quoted JSON string, valid JSON (RFC 8259) whatever the bytes: '"', '\\'
 * and \n \r \t get their short escapes, other control bytes and DEL \u00XX; well-formed
 * UTF-8 (RFC 3629) is copied as it is; a byte that is not part of one is written \u00XX (its
 * Latin-1 reading: the line stays valid and the byte stays visible). At most 6 n + 2 bytes. */
int  ls_strbuf_json_str(struct ls_strbuf *b, const char *s, size_t n);
/* Drops the first n bytes (all when n >= len). */
void ls_strbuf_consume(struct ls_strbuf *b, size_t n);
void ls_strbuf_free(struct ls_strbuf *b);

/* The one UTF-8 rule (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF).
 * The length of the well-formed sequence at s, 0 when s[0] (>= 0x80) does not start one; and
 * 1 when all of s is UTF-8 (JSON text must be, RFC 8259, and Python clients fail a frame that
 * is not; cJSON does not check). */
size_t ls_utf8_seq_len(const unsigned char *s, size_t n);
int ls_utf8_valid(const unsigned char *s, size_t n);

#endif
