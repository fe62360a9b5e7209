/* SSE splitter: every split point of several streams gives the same events as one read, and
 * every input sits right before a PROT_NONE page so an over-read crashes (ASan or not). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "driver/sse.h"

#define MAX_EV 32

struct got {
	int n;
	char data[MAX_EV][128];
	size_t len[MAX_EV];
	uint32_t n_data[MAX_EV], bytes[MAX_EV];
	uint64_t end_off[MAX_EV];
	int stop_after; /* return 1 after this many events (0 = never) */
};

static int collect(void *ctx, const struct ls_sse_event *ev)
{
	struct got *g = ctx;
	cr_assert_lt(g->n, MAX_EV);
	cr_assert_lt(ev->data_len, sizeof(g->data[0]));
	cr_assert_eq(ev->data[ev->data_len], 0, "data is NUL-terminated");
	memcpy(g->data[g->n], ev->data, ev->data_len + 1);
	g->len[g->n] = ev->data_len;
	g->n_data[g->n] = ev->n_data;
	g->bytes[g->n] = ev->bytes;
	g->end_off[g->n] = ev->end_off;
	g->n++;
	return g->stop_after && g->n >= g->stop_after;
}

/* Two pages, the second PROT_NONE: chunks are copied to end exactly at the guard. */
static char *guard_base;
static size_t page;

static void guard_setup(void)
{
	page = (size_t)sysconf(_SC_PAGESIZE);
	guard_base = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(guard_base, MAP_FAILED);
	cr_assert_eq(mprotect(guard_base + page, page, PROT_NONE), 0);
}

static void guard_teardown(void)
{
	munmap(guard_base, 2 * page);
}

static int feed_guarded(struct ls_sse *p, const char *buf, size_t len, struct got *g)
{
	cr_assert_leq(len, page);
	char *at = guard_base + page - len;
	memcpy(at, buf, len);
	return ls_sse_feed(p, at, len, collect, g);
}

static void parse_whole(const char *s, size_t len, struct got *g)
{
	struct ls_sse p;
	ls_sse_init(&p);
	memset(g, 0, sizeof(*g));
	cr_assert_eq(feed_guarded(&p, s, len, g), 0);
	ls_sse_free(&p);
}

/* Same events whatever the cut. Byte counts are exact except when a cut falls between the
 * '\r' and '\n' of a dispatching blank line: the event goes out at the '\r' (no wait for the
 * next read), so its bytes/end_off then stop one short. */
static void expect_same(const struct got *ref, const struct got *g, const char *what, size_t cut)
{
	cr_assert_eq(g->n, ref->n, "%s: cut at %zu gave %d events, want %d", what, cut, g->n, ref->n);
	for (int i = 0; i < ref->n; i++) {
		cr_assert_eq(g->len[i], ref->len[i], "%s: cut %zu event %d length", what, cut, i);
		cr_assert_eq(memcmp(g->data[i], ref->data[i], ref->len[i]), 0,
			     "%s: cut %zu event %d data '%s' want '%s'", what, cut, i, g->data[i], ref->data[i]);
		cr_assert_eq(g->n_data[i], ref->n_data[i]);
		cr_assert(g->end_off[i] == ref->end_off[i] || g->end_off[i] + 1 == ref->end_off[i],
			  "%s: cut %zu event %d end_off %lu want %lu", what, cut, i,
			  (unsigned long)g->end_off[i], (unsigned long)ref->end_off[i]);
		cr_assert(g->bytes[i] + 1 >= ref->bytes[i] && g->bytes[i] <= ref->bytes[i] + 1);
	}
}

static const struct {
	const char *name, *s;
	int n;
	const char *first, *last;
} streams[] = {
	{ "openai-lf",
	  "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choices\":[{\"text\":\"bc\"}]}\n\n"
	  "data: [DONE]\n\n",
	  3, "{\"choices\":[{\"text\":\"a\"}]}", "[DONE]" },
	{ "crlf-comments-multiline",
	  ": ping\r\n\r\nevent: message\r\nid: 3\r\ndata: line1\r\ndata:line2\r\ndata\r\n\r\n"
	  "retry: 10\r\ndata: z\r\n\r\n",
	  2, "line1\nline2\n", "z" },
	{ "bare-cr",
	  "data: a\r\rdata: b\rdata: c\r\r:x\r\r",
	  2, "a", "b\nc" },
	{ "mixed-ends",
	  "data: x\n\r\ndata: y\r\n\ndatax: ignored\ndata:\n\n:\n\ndata:  two spaces\n\n",
	  4, "x", " two spaces" }, /* "data:" alone is an event with empty data */
	{ "trailing-partial",
	  "data: 1\n\ndata: {\"never\":\"done",
	  1, "1", "1" },
};

TestSuite(sse, .init = guard_setup, .fini = guard_teardown);

Test(sse, reference_parse)
{
	for (size_t k = 0; k < sizeof(streams) / sizeof(streams[0]); k++) {
		struct got g;
		parse_whole(streams[k].s, strlen(streams[k].s), &g);
		cr_assert_eq(g.n, streams[k].n, "%s: %d events", streams[k].name, g.n);
		cr_assert_str_eq(g.data[0], streams[k].first, "%s", streams[k].name);
		cr_assert_str_eq(g.data[g.n - 1], streams[k].last, "%s", streams[k].name);
	}
	/* Offsets of the first stream: each event ends on its blank line's '\n'. */
	struct got g;
	const char *s = "data: a\n\n:c\n\ndata: bb\n\n";
	parse_whole(s, strlen(s), &g);
	cr_assert_eq(g.n, 2);
	cr_assert_eq(g.end_off[0], 8);
	cr_assert_eq(g.bytes[0], 9);
	cr_assert_eq(g.end_off[1], strlen(s) - 1);
	cr_assert_eq(g.bytes[1], 10, "comment-only event before it is not counted: %u", g.bytes[1]);
	cr_assert_eq(g.n_data[1], 1);
}

Test(sse, every_two_way_split)
{
	for (size_t k = 0; k < sizeof(streams) / sizeof(streams[0]); k++) {
		const char *s = streams[k].s;
		size_t len = strlen(s);
		struct got ref;
		parse_whole(s, len, &ref);
		for (size_t cut = 0; cut <= len; cut++) {
			struct ls_sse p;
			struct got g = { 0 };
			ls_sse_init(&p);
			cr_assert_eq(feed_guarded(&p, s, cut, &g), 0);
			cr_assert_eq(feed_guarded(&p, s + cut, len - cut, &g), 0);
			expect_same(&ref, &g, streams[k].name, cut);
			cr_assert_eq(p.off, len);
			ls_sse_free(&p);
		}
	}
}

Test(sse, every_three_way_split_and_bytewise)
{
	for (size_t k = 0; k < sizeof(streams) / sizeof(streams[0]); k++) {
		const char *s = streams[k].s;
		size_t len = strlen(s);
		struct got ref;
		parse_whole(s, len, &ref);
		for (size_t a = 0; a <= len; a++)
			for (size_t b = a; b <= len; b++) {
				struct ls_sse p;
				struct got g = { 0 };
				ls_sse_init(&p);
				cr_assert_eq(feed_guarded(&p, s, a, &g), 0);
				cr_assert_eq(feed_guarded(&p, s + a, b - a, &g), 0);
				cr_assert_eq(feed_guarded(&p, s + b, len - b, &g), 0);
				expect_same(&ref, &g, streams[k].name, a * 1000 + b);
				ls_sse_free(&p);
			}
		struct ls_sse p;
		struct got g = { 0 };
		ls_sse_init(&p);
		for (size_t i = 0; i < len; i++)
			cr_assert_eq(feed_guarded(&p, s + i, 1, &g), 0);
		expect_same(&ref, &g, streams[k].name, 1);
		ls_sse_free(&p);
	}
}

Test(sse, pending_marks_a_cut_frame)
{
	struct ls_sse p;
	struct got g = { 0 };
	ls_sse_init(&p);
	const char *s = "data: 1\n\n";
	cr_assert_eq(feed_guarded(&p, s, strlen(s), &g), 0);
	cr_assert_eq(ls_sse_pending(&p), 0);
	cr_assert_eq(feed_guarded(&p, ": keepalive\n", 12, &g), 0);
	cr_assert_eq(ls_sse_pending(&p), 0, "a comment alone is not a cut frame");
	cr_assert_eq(feed_guarded(&p, "data: {\"x\"", 10, &g), 0);
	cr_assert_gt(ls_sse_pending(&p), 0);
	cr_assert_eq(feed_guarded(&p, "}\n", 2, &g), 0);
	cr_assert_gt(ls_sse_pending(&p), 0, "data line without its blank line");
	cr_assert_eq(feed_guarded(&p, "\n", 1, &g), 0);
	cr_assert_eq(ls_sse_pending(&p), 0);
	cr_assert_eq(g.n, 2);
	ls_sse_reset(&p);
	cr_assert_eq(p.off, 0);
	ls_sse_free(&p);
}

Test(sse, caps_line_and_event)
{
	struct ls_sse p;
	struct got g = { 0 };
	char big[200];
	memset(big, 'x', sizeof(big));

	/* A line over the cap, arriving in pieces. */
	ls_sse_init(&p);
	p.max = 64;
	cr_assert_eq(feed_guarded(&p, "data: ", 6, &g), 0);
	int rc = 0;
	for (int i = 0; i < 4 && !rc; i++)
		rc = feed_guarded(&p, big, 30, &g);
	cr_assert_eq(rc, -EMSGSIZE);
	cr_assert_eq(feed_guarded(&p, "\n\n", 2, &g), -EMSGSIZE, "the error is sticky");
	ls_sse_free(&p);

	/* A line over the cap inside one read. */
	ls_sse_init(&p);
	p.max = 64;
	memcpy(big, "data: ", 6);
	big[150] = '\n';
	cr_assert_eq(feed_guarded(&p, big, 151, &g), -EMSGSIZE);
	ls_sse_free(&p);

	/* Many short data lines whose join passes the cap. */
	ls_sse_init(&p);
	p.max = 64;
	rc = 0;
	for (int i = 0; i < 20 && !rc; i++)
		rc = feed_guarded(&p, "data: 0123456789\n", 17, &g);
	cr_assert_eq(rc, -EMSGSIZE);
	cr_assert_eq(g.n, 0);
	ls_sse_free(&p);
}

Test(sse, callback_stops_the_feed)
{
	struct ls_sse p;
	struct got g = { .stop_after = 1 };
	ls_sse_init(&p);
	const char *s = "data: a\n\ndata: b\n\n";
	cr_assert_eq(feed_guarded(&p, s, strlen(s), &g), 1);
	cr_assert_eq(g.n, 1);
	ls_sse_free(&p);
}

static int count_only(void *ctx, const struct ls_sse_event *ev)
{
	(void)ctx;
	cr_assert_eq(ev->data[ev->data_len], 0);
	return 0;
}

Test(sse, binary_garbage_never_overreads)
{
	/* Every byte value, at every length, right before the guard. */
	unsigned char junk[512];
	unsigned seed = 12345;
	for (size_t i = 0; i < sizeof(junk); i++) {
		seed = seed * 1103515245u + 12345u;
		junk[i] = (unsigned char)(seed >> 16);
		if (i % 7 == 0)
			junk[i] = "\r\n:d"[i % 4];
	}
	for (size_t len = 0; len <= sizeof(junk); len += 13) {
		struct ls_sse p;
		ls_sse_init(&p);
		char *at = guard_base + page - len;
		memcpy(at, junk, len);
		(void)ls_sse_feed(&p, at, len, count_only, NULL);
		ls_sse_free(&p);
	}
}
