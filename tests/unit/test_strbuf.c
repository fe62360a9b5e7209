/* test_strbuf.c — base/strbuf.h: the growable buffer, and the one JSON string escaper the
 * record file and the simulator share (valid JSON for any bytes; UTF-8 kept as it is). */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "base/strbuf.h"

/* s[0..n) escaped, as a NUL-terminated string the caller frees. */
static char *escaped(const char *s, size_t n)
{
	struct ls_strbuf b = { 0 };
	cr_assert_eq(ls_strbuf_json_str(&b, s, n), 0);
	cr_assert_eq(strlen(b.data), b.len);
	return b.data;
}

/* The escaped form parses back to want (cJSON), and nothing but the string is there. */
static void expect_parses_to(const char *json, const char *want)
{
	cJSON *v = cJSON_Parse(json);
	cr_assert(cJSON_IsString(v), "not a JSON string: %s", json);
	cr_expect_str_eq(v->valuestring, want, "%s", json);
	cJSON_Delete(v);
}

Test(strbuf, json_controls_quotes_and_del)
{
	char *j = escaped("a\"b\\c\n\r\t\x01\x1f\x7f~", 12);
	cr_expect_str_eq(j, "\"a\\\"b\\\\c\\n\\r\\t\\u0001\\u001f\\u007f~\"");
	expect_parses_to(j, "a\"b\\c\n\r\t\x01\x1f\x7f~");
	free(j);
	j = escaped("x\0y", 3); /* a NUL inside the span is a byte like another */
	cr_expect_str_eq(j, "\"x\\u0000y\"");
	free(j);
	j = escaped(NULL, 0);
	cr_expect_str_eq(j, "\"\"");
	free(j);
}

/* Well-formed UTF-8 goes out as it came, so text round-trips (the simulator's é, a server's
 * error message in the record file). */
Test(strbuf, json_keeps_well_formed_utf8)
{
	const char *good[] = { "caf\xc3\xa9", "\xe2\x82\xac 5", "\xf0\x9f\x98\x80", "\xef\xbf\xbd",
			       "\xf4\x8f\xbf\xbf", "\xed\x9f\xbf", "\xe0\xa0\x80", "\xf0\x90\x80\x80" };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		char *j = escaped(good[i], strlen(good[i]));
		cr_expect_eq(strlen(j), strlen(good[i]) + 2, "%zu: %s", i, j);
		cr_expect_eq(memcmp(j + 1, good[i], strlen(good[i])), 0, "%zu: %s", i, j);
		expect_parses_to(j, good[i]);
		free(j);
	}
}

/* A byte that is not part of a well-formed sequence becomes \u00XX: the output is ASCII and
 * valid JSON whatever came in. */
Test(strbuf, json_escapes_every_byte_outside_utf8)
{
	static const struct {
		const char *in, *out;
	} bad[] = {
		{ "\x80", "\"\\u0080\"" },                                 /* lone continuation */
		{ "\xc0\xaf", "\"\\u00c0\\u00af\"" },                      /* overlong '/' */
		{ "\xe0\x80\xaf", "\"\\u00e0\\u0080\\u00af\"" },           /* overlong, 3 bytes */
		{ "\xed\xa0\x80", "\"\\u00ed\\u00a0\\u0080\"" },           /* UTF-16 surrogate */
		{ "\xf4\x90\x80\x80", "\"\\u00f4\\u0090\\u0080\\u0080\"" }, /* past U+10FFFF */
		{ "\xff", "\"\\u00ff\"" },
		{ "ab\xe2\x82", "\"ab\\u00e2\\u0082\"" },                  /* cut sequence */
		{ "\xc3\xa9\xc3", "\"\xc3\xa9\\u00c3\"" },                 /* good, then cut */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *j = escaped(bad[i].in, strlen(bad[i].in));
		cr_expect_str_eq(j, bad[i].out, "%zu", i);
		free(j);
	}
	for (int c = 0; c < 256; c++) {
		char in = (char)c;
		char *j = escaped(&in, 1);
		for (const unsigned char *p = (const unsigned char *)j; *p; p++)
			cr_assert_lt(*p, 0x80, "byte 0x%02x: %s", c, j);
		cJSON *v = cJSON_Parse(j);
		cr_expect(cJSON_IsString(v), "byte 0x%02x: %s", c, j);
		cJSON_Delete(v);
		free(j);
	}
}

Test(strbuf, append_printf_grow_and_consume)
{
	struct ls_strbuf b = { 0 };
	cr_assert_eq(ls_strbuf_puts(&b, "head "), 0);
	char big[1000];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	cr_assert_eq(ls_strbuf_printf(&b, "%s|%d", big, 42), 0); /* past the first room: a second try */
	cr_expect_eq(b.len, 5 + 999 + 3);
	cr_expect_str_eq(b.data + b.len - 4, "x|42");
	cr_assert_eq(ls_strbuf_append(&b, "\0z", 2), 0);
	cr_expect_eq(b.len, 5 + 999 + 5);
	ls_strbuf_consume(&b, 5);
	cr_expect_eq(b.data[0], 'x');
	cr_expect_eq(b.len, 999 + 5);
	ls_strbuf_consume(&b, 1u << 20);
	cr_expect_eq(b.len, 0);
	cr_expect_eq(b.data[0], 0);
	cr_expect_eq(ls_strbuf_reserve(&b, SIZE_MAX), -ENOMEM, "a size that cannot be is refused");
	cr_expect_eq(ls_strbuf_json_str(&b, "x", SIZE_MAX / 2), -ENOMEM);
	cr_expect_eq(b.len, 0, "a refused append leaves the buffer as it was");
	ls_strbuf_free(&b);
	cr_expect_null(b.data);
	ls_strbuf_free(&b); /* twice is fine */
}
