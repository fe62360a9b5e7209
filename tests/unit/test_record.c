#include <criterion/criterion.h>
#include "base/record.h"

Test(record, frames_grow_and_reset_keeps_buffer)
{
	struct ls_request req = { 0 };
	ls_request_reset(&req, 7);
	for (int i = 0; i < 1000; i++) {
		struct ls_frame *fr = ls_request_add_frame(&req);
		cr_assert_not_null(fr);
		cr_assert_eq(fr->tokens, -1);
		fr->arrived_ns = (uint64_t)i;
	}
	cr_assert_eq(req.n_frames, 1000);
	cr_assert_eq(req.frames[999].arrived_ns, 999);
	ls_request_reset(&req, 8);
	cr_assert_eq(req.n_frames, 0);
	cr_assert_eq(req.id, 8);
	cr_assert_eq(req.fd, -1);
	ls_request_free(&req);
}

Test(record, fail_names_are_stable)
{
	cr_assert_str_eq(ls_fail_name(LS_OK), "ok");
	cr_assert_str_eq(ls_fail_name(LS_FAIL_RESET_MID_STREAM), "reset_mid_stream");
	cr_assert_str_eq(ls_fail_name((enum ls_fail)999), "other");
	for (int f = 0; f < LS_FAIL__COUNT; f++)
		cr_assert_not_null(ls_fail_name((enum ls_fail)f));
}
