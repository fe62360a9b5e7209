/* test_reliability_hostile.c — hostile servers the simulator does not play, beyond
 * test_driver_hostile.c: one header line with no end, NUL bytes and binary in frames, a data:
 * line with no end, a status line that is not HTTP. Each request fails with a named reason,
 * quickly, and the caps keep what latscope holds small. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/clock.h"
#include "test_driver_common.h"

static char *repeat(const char *head, char fill, size_t n, const char *tail, size_t *len)
{
	size_t h = strlen(head), t = strlen(tail);
	char *p = malloc(h + n + t + 1);
	cr_assert_not_null(p);
	memcpy(p, head, h);
	memset(p + h, fill, n);
	memcpy(p + h + n, tail, t + 1);
	*len = h + n + t;
	return p;
}

/* Two requests against a canned answer; every one must fail with want (within 8 s). */
static void expect(const char *resp, size_t len, enum ls_fail want, const char *text)
{
	struct td_canned srv;
	cr_assert_eq(td_canned_start(&srv, resp, len, 0), 0);
	struct td_batch b;
	td_batch_init(&b, LS_BACKEND_OPENAI, 2, 4);
	struct ls_driver_opts o;
	char url[256];
	struct t_sim fake = { .port = srv.port };
	snprintf(fake.url, sizeof(fake.url), "%s", srv.url);
	td_opts(&o, &b, &fake, LS_BACKEND_OPENAI, url, sizeof(url));
	o.per_request_conn = 1;
	o.max_concurrency = 1;
	o.request_timeout_ns = 10000000000ull;
	uint64_t t0 = ls_now_ns();
	cr_assert_eq(td_run(&o, &b), 0);
	cr_assert_lt(ls_now_ns() - t0, 8000000000ull, "no stall");
	cr_assert_eq(b.finished, b.n, "every request finished once");
	for (size_t i = 0; i < b.n; i++) {
		cr_expect_eq(b.recs[i].fail, want, "got %s (%s), want %s", ls_fail_name(b.recs[i].fail), b.recs[i].error,
			     ls_fail_name(want));
		if (text)
			cr_expect(strstr(b.recs[i].error, text), "error '%s' lacks '%s'", b.recs[i].error, text);
		cr_expect_lt(b.recs[i].n_frames, 8, "nothing from the hostile bytes became frames");
	}
	td_batch_free(&b);
	td_canned_stop(&srv);
}

Test(reliability_hostile, header_line_without_end_is_refused, .timeout = 30)
{
	size_t len;
	char *r = repeat("HTTP/1.1 200 OK\r\nX-Endless: ", 'h', 300000, "", &len);
	/* libcurl refuses a header line over its own 100 KiB limit (as "out of memory") before our
	 * 64 KiB cap sees the line whole: the driver names it oversize. */
	expect(r, len, LS_FAIL_OVERSIZE, "header line");
	free(r);
}

Test(reliability_hostile, data_line_without_end_is_oversize, .timeout = 30)
{
	size_t len;
	char *r = repeat("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\ndata: ", 'd',
			 (1u << 20) + 4096, "", &len);
	expect(r, len, LS_FAIL_OVERSIZE, "1 MiB");
	free(r);
}

Test(reliability_hostile, nul_and_binary_in_a_frame_is_malformed, .timeout = 30)
{
	static const char r[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
				"data: {\"choices\":[{\"text\":\"a\0b\xfe\"}]}\n\ndata: [DONE]\n\n";
	expect(r, sizeof(r) - 1, LS_FAIL_MALFORMED_FRAME, "malformed frame");
}

Test(reliability_hostile, status_line_that_is_not_http_fails, .timeout = 30)
{
	static const char r[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 this is TLS, not HTTP\r\n\r\n";
	struct td_canned srv;
	cr_assert_eq(td_canned_start(&srv, r, sizeof(r) - 1, 0), 0);
	struct td_batch b;
	td_batch_init(&b, LS_BACKEND_OPENAI, 2, 4);
	struct ls_driver_opts o;
	char url[256];
	struct t_sim fake = { .port = srv.port };
	snprintf(fake.url, sizeof(fake.url), "%s", srv.url);
	td_opts(&o, &b, &fake, LS_BACKEND_OPENAI, url, sizeof(url));
	o.per_request_conn = 1;
	cr_assert_eq(td_run(&o, &b), 0);
	for (size_t i = 0; i < b.n; i++)
		cr_expect_neq(b.recs[i].fail, LS_OK, "garbage is a failure (%s)", b.recs[i].error);
	td_batch_free(&b);
	td_canned_stop(&srv);
}
