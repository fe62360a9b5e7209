/* ls_backend_decode looks up a frame's members in one pass (backend.c: members()): it must
 * give what one cJSON_GetObjectItemCaseSensitive per name gave: the first member of that name,
 * in any order, exact (case-sensitive) names only, nothing from nested objects. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "driver/backend.h"
#include "t_unit.h"

Test(decode_members, first_of_duplicates_any_order)
{
	struct t_dec d;
	t_dec_init(&d);
	/* usage before choices; "choices" twice (the first counts); text twice in choices[0]. */
	cr_assert_eq(t_decode(&d, LS_BACKEND_OPENAI,
			    "{\"usage\":{\"completion_tokens\":4,\"prompt_tokens\":9,\"completion_tokens\":99},"
			    "\"choices\":[{\"text\":\"abc\",\"finish_reason\":null,\"text\":\"longer text\"}],"
			    "\"choices\":[{\"text\":\"x\",\"finish_reason\":\"stop\"}]}"), 0);
	cr_expect_eq(d.fr.text_len, 3);
	cr_expect_eq(d.fr.flags, LS_FRAME_CHOICES | LS_FRAME_USAGE);
	cr_expect_eq(d.fr.cum_tokens, 4);
	cr_expect_eq(d.fr.tokens, 4);
	cr_expect_eq(d.req.usage_prompt_tokens, 9);
	cr_expect_eq(d.req.usage_completion_tokens, 4);
}

Test(decode_members, names_are_exact_and_top_level)
{
	struct t_dec d;
	t_dec_init(&d);
	/* Near names (same first letter, prefix, case) and a nested "text" are not members. */
	cr_assert_eq(t_decode(&d, LS_BACKEND_OPENAI,
			    "{\"choice\":[{\"text\":\"no\"}],\"Choices\":[{\"text\":\"no\"}],\"choicesX\":[{\"text\":\"no\"}],"
			    "\"usag\":{\"completion_tokens\":5},\"text\":\"no\",\"error\":null,"
			    "\"choices\":[{\"texts\":\"no\",\"x\":{\"text\":\"nested\"},\"finish_reasonX\":\"stop\"}]}"), 0);
	cr_expect_eq(d.fr.text_len, 0);
	cr_expect_eq(d.fr.flags, LS_FRAME_CHOICES | LS_FRAME_EMPTY_TEXT);
	cr_expect_eq(d.fr.cum_tokens, -1);

	/* An error after the content members still fails the frame; "object":"error" likewise. */
	cr_expect_eq(t_decode(&d, LS_BACKEND_OPENAI, "{\"choices\":[],\"error\":{\"message\":\"boom\"}}"), -EPROTO);
	cr_expect(strstr(d.req.error, "boom"), "%s", d.req.error);
	cr_expect_eq(t_decode(&d, LS_BACKEND_OPENAI, "{\"message\":\"late\",\"object\":\"error\",\"object\":\"x\"}"),
		     -EPROTO);
	cr_expect(strstr(d.req.error, "late"), "%s", d.req.error);
	cr_expect_eq(t_decode(&d, LS_BACKEND_OPENAI, "{\"object\":\"text_completion\",\"choices\":[]}"), 0);
}

Test(decode_members, chat_and_sglang)
{
	struct t_dec d;
	t_dec_init(&d);
	cr_assert_eq(t_decode(&d, LS_BACKEND_OPENAI_CHAT,
			    "{\"choices\":[{\"finish_reason\":\"stop\",\"delta\":{\"reasoning_content\":\"ab\","
			    "\"content\":\"cde\",\"content\":\"ignored\"}}]}"), 0);
	cr_expect_eq(d.fr.text_len, 5);
	cr_expect(d.fr.flags & LS_FRAME_FINISH);

	t_dec_init(&d);
	cr_assert_eq(t_decode(&d, LS_BACKEND_SGLANG,
			    "{\"meta_info\":{\"finish_reason\":null,\"completion_tokens\":2,\"prompt_tokens\":3},"
			    "\"text\":\"Hi\",\"text\":\"Hi there\"}"), 0);
	cr_expect_eq(d.fr.text_len, 2);
	cr_expect_eq(d.fr.tokens, 2);
	cr_expect_eq(d.req.usage_prompt_tokens, 3);
	cr_expect(!(d.fr.flags & LS_FRAME_FINISH));
	cr_assert_eq(t_decode(&d, LS_BACKEND_SGLANG,
			    "{\"text\":\"Hi!\",\"meta_info\":{\"completion_tokens\":3,\"finish_reason\":{\"type\":\"stop\"}}}"), 0);
	cr_expect_eq(d.fr.text_len, 1);
	cr_expect_eq(d.fr.tokens, 1);
	cr_expect(d.fr.flags & LS_FRAME_FINISH);
}
