/* test_reliability.c — the pure parts of the reliability stage: the simulator's fault kinds
 * (names, parsing, which are drawn per request and which per connection, which act mid-stream)
 * and the frame decoder's UTF-8 check (a non-UTF-8 frame is malformed, as Python clients fail it). */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "driver/backend.h"
#include "base/record.h"
#include "sim/sim.h"

Test(reliability, every_fault_kind_has_a_name_that_parses_back)
{
	unsigned mask, all;
	cr_assert_eq(sim_fault_parse_kinds("mixed", &all), 0);
	cr_expect_eq(all, ((1u << SIM_FAULT__COUNT) - 1) & ~1u, "mixed is every kind");
	for (int k = 1; k < SIM_FAULT__COUNT; k++) {
		const char *name = sim_fault_name((enum sim_fault)k);
		cr_assert(name && strcmp(name, "unknown"), "kind %d has a name", k);
		cr_assert_eq(sim_fault_parse_kinds(name, &mask), 0, "%s parses", name);
		cr_expect_eq(mask, 1u << k);
	}
	cr_expect_eq(sim_fault_parse_kinds("no-headers,endless-stream,bad-utf8", &mask), 0);
	cr_expect_eq(mask, (1u << SIM_FAULT_NO_HEADERS) | (1u << SIM_FAULT_ENDLESS_STREAM) | (1u << SIM_FAULT_BAD_UTF8));
	cr_expect_eq(sim_fault_parse_kinds("no-headers,", &mask), 0, "a trailing comma is harmless");
	cr_expect_eq(sim_fault_parse_kinds("no-header", &mask), -1, "a prefix of a name is not a name");
	cr_expect_str_eq(sim_fault_name(SIM_FAULT__COUNT), "unknown");
}

Test(reliability, close_after_accept_is_never_drawn_per_request)
{
	unsigned mask = 1u << SIM_FAULT_CLOSE_AFTER_ACCEPT;
	uint64_t rng = 5;
	for (int i = 0; i < 1000; i++)
		cr_assert_eq(sim_fault_pick(1.0, mask, &rng), SIM_FAULT_NONE);
	mask |= 1u << SIM_FAULT_NO_HEADERS;
	for (int i = 0; i < 1000; i++)
		cr_assert_eq(sim_fault_pick(1.0, mask, &rng), SIM_FAULT_NO_HEADERS);
}

Test(reliability, mid_stream_kinds)
{
	const enum sim_fault mid[] = { SIM_FAULT_RESET_MID_STREAM, SIM_FAULT_STALL, SIM_FAULT_MALFORMED_FRAME,
				       SIM_FAULT_TRUNCATED_CHUNK, SIM_FAULT_OVERSIZE_FRAME, SIM_FAULT_BAD_UTF8,
				       SIM_FAULT_NO_BLANK_LINE, SIM_FAULT_ENDLESS_STREAM };
	int n_mid = 0;
	for (int k = 0; k < SIM_FAULT__COUNT; k++) {
		int want = 0;
		for (size_t i = 0; i < sizeof(mid) / sizeof(mid[0]); i++)
			want |= mid[i] == (enum sim_fault)k;
		cr_expect_eq(sim_fault_mid_stream((enum sim_fault)k), want, "%s", sim_fault_name((enum sim_fault)k));
		n_mid += want;
	}
	cr_expect_eq(n_mid, 8);
}

static int decode(const char *data, struct ls_request *req)
{
	struct ls_decode_state st;
	struct ls_frame fr;
	memset(&fr, 0, sizeof(fr));
	ls_request_reset(req, 0);
	ls_decode_state_init(&st);
	return ls_backend_decode(LS_BACKEND_OPENAI, data, strlen(data), &st, &fr, req);
}

Test(reliability, frame_text_must_be_utf8)
{
	struct ls_request req;
	/* valid: ASCII, 2-, 3- and 4-byte sequences, at every alignment of the 8-byte fast path */
	const char *good[] = {
		"{\"choices\":[{\"text\":\"plain\"}]}",
		"{\"choices\":[{\"text\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xef\xbf\xbd \xf4\x8f\xbf\xbf\"}]}",
		"{\"choices\":[{\"text\":\"\xc3\xa9\"}]}",
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		cr_expect_eq(decode(good[i], &req), 0, "valid UTF-8 %zu: %s", i, req.error);
	const char *bad[] = {
		"{\"choices\":[{\"text\":\"\x80\"}]}",             /* lone continuation byte */
		"{\"choices\":[{\"text\":\"\xc0\xaf\"}]}",         /* overlong '/' */
		"{\"choices\":[{\"text\":\"\xe0\x80\xaf\"}]}",     /* overlong, 3 bytes */
		"{\"choices\":[{\"text\":\"\xed\xa0\x80\"}]}",     /* UTF-16 surrogate */
		"{\"choices\":[{\"text\":\"\xf4\x90\x80\x80\"}]}", /* past U+10FFFF */
		"{\"choices\":[{\"text\":\"\xff\"}]}",
		"{\"choices\":[{\"text\":\"ab\xe2\x82\"}]}",       /* cut sequence */
		"{\"choices\":[{\"text\":\"abcdefgh\xc3\"}]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(decode(bad[i], &req), -EBADMSG, "invalid UTF-8 %zu accepted", i);
		cr_expect(strstr(req.error, "not UTF-8"), "error: %s", req.error);
	}
}
