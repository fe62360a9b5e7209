/* Request bodies and frame decoding for openai, openai-chat and sglang. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "driver/backend.h"
#include "t_unit.h"
#include "driver/backend_int.h"

Test(backend, names)
{
	enum ls_backend b;
	cr_assert_eq(ls_backend_parse("openai", &b), 0);
	cr_assert_eq(b, LS_BACKEND_OPENAI);
	cr_assert_eq(ls_backend_parse("vllm", &b), 0);
	cr_assert_eq(b, LS_BACKEND_OPENAI);
	cr_assert_eq(ls_backend_parse("openai-chat", &b), 0);
	cr_assert_eq(b, LS_BACKEND_OPENAI_CHAT);
	cr_assert_eq(ls_backend_parse("sglang", &b), 0);
	cr_assert_eq(b, LS_BACKEND_SGLANG);
	cr_assert_eq(ls_backend_parse("nosuch", &b), -EINVAL);
	cr_assert_eq(ls_backend_parse(NULL, &b), -EINVAL);
	cr_assert_str_eq(ls_backend_name(LS_BACKEND_OPENAI_CHAT), "openai-chat");
	cr_assert_str_eq(ls_backend_default_endpoint(LS_BACKEND_SGLANG), "/generate");
	cr_assert_str_eq(ls_backend_default_endpoint(LS_BACKEND_OPENAI), "/v1/completions");
	cr_assert_str_eq(ls_backend_default_endpoint(LS_BACKEND_OPENAI_CHAT), "/v1/chat/completions");
}

Test(backend, openai_body_text_and_ids)
{
	struct ls_prompt p = { .text = "Say \"hi\"\n", .output_len = 17 };
	cJSON *r = t_body_json(LS_BACKEND_OPENAI, "m1", &p, 1);
	cr_assert_str_eq(t_json_get(r, "model")->valuestring, "m1");
	cr_assert_str_eq(t_json_get(r, "prompt")->valuestring, "Say \"hi\"\n");
	cr_assert_eq(t_json_get(r, "max_tokens")->valueint, 17);
	cr_assert(cJSON_IsTrue(t_json_get(r, "stream")));
	cr_assert(cJSON_IsTrue(t_json_get(r, "stream_options.include_usage")));
	cr_assert(cJSON_IsTrue(t_json_get(r, "ignore_eos")));
	cJSON_Delete(r);

	uint32_t ids[] = { 5, 70000, 0 };
	struct ls_prompt q = { .token_ids = ids, .n_token_ids = 3, .output_len = 4 };
	r = t_body_json(LS_BACKEND_OPENAI, NULL, &q, 0);
	cr_assert_null(t_json_get(r, "model"), "no model when none is given");
	const cJSON *prompt = t_json_get(r, "prompt");
	cr_assert(cJSON_IsArray(prompt));
	cr_assert_eq(cJSON_GetArraySize(prompt), 3);
	cr_assert_eq(cJSON_GetArrayItem(prompt, 1)->valueint, 70000);
	cr_assert(cJSON_IsFalse(t_json_get(r, "ignore_eos")));
	cJSON_Delete(r);
}

Test(backend, chat_body)
{
	struct ls_prompt p = { .text = "hello", .output_len = 8 };
	cJSON *r = t_body_json(LS_BACKEND_OPENAI_CHAT, "m", &p, 1);
	const cJSON *msgs = t_json_get(r, "messages");
	cr_assert_eq(cJSON_GetArraySize(msgs), 1);
	cr_assert_str_eq(t_json_get(cJSON_GetArrayItem(msgs, 0), "role")->valuestring, "user");
	cr_assert_str_eq(t_json_get(cJSON_GetArrayItem(msgs, 0), "content")->valuestring, "hello");
	cr_assert_eq(t_json_get(r, "max_tokens")->valueint, 8);
	cr_assert(cJSON_IsTrue(t_json_get(r, "stream_options.include_usage")));
	cJSON_Delete(r);

	uint32_t ids[] = { 1, 2 };
	struct ls_prompt q = { .token_ids = ids, .n_token_ids = 2, .output_len = 4 };
	errno = 0;
	cr_assert_null(ls_backend_body(LS_BACKEND_OPENAI_CHAT, "m", &q, 0, NULL));
	cr_assert_eq(errno, EINVAL, "chat needs text");
	struct ls_prompt empty = { .output_len = 4 };
	cr_assert_null(ls_backend_body(LS_BACKEND_OPENAI, "m", &empty, 0, NULL));
}

Test(backend, sglang_body)
{
	struct ls_prompt p = { .text = "abc", .output_len = 9 };
	cJSON *r = t_body_json(LS_BACKEND_SGLANG, "m", &p, 1);
	cr_assert_str_eq(t_json_get(r, "text")->valuestring, "abc");
	cr_assert_eq(t_json_get(r, "sampling_params.max_new_tokens")->valueint, 9);
	cr_assert(cJSON_IsTrue(t_json_get(r, "sampling_params.ignore_eos")));
	cr_assert(cJSON_IsTrue(t_json_get(r, "stream")));
	cr_assert_null(t_json_get(r, "max_tokens"));
	cJSON_Delete(r);

	uint32_t ids[] = { 3, 4 };
	struct ls_prompt q = { .token_ids = ids, .n_token_ids = 2, .output_len = 2 };
	r = t_body_json(LS_BACKEND_SGLANG, NULL, &q, 0);
	cr_assert_eq(cJSON_GetArraySize(t_json_get(r, "input_ids")), 2);
	cr_assert_null(t_json_get(r, "text"));
	cr_assert(cJSON_IsFalse(t_json_get(r, "sampling_params.ignore_eos")));
	cJSON_Delete(r);
}

/* cJSON's path alone (frame_fast.c takes these shapes otherwise): the arena's tests. */
static int decode_json(struct t_dec *d, enum ls_backend b, const char *data)
{
	memset(&d->fr, 0, sizeof(d->fr));
	d->fr.tokens = -1;
	d->fr.cum_tokens = -1;
	return ls_backend_decode_json(b, data, strlen(data), &d->st, &d->fr, &d->req);
}

Test(backend, openai_frames)
{
	struct t_dec d;
	t_dec_init(&d);
	cr_assert_eq(t_decode(&d, LS_BACKEND_OPENAI,
			    "{\"id\":\"c\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,"
			    "\"text\":\" hello\",\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}"), 0);
	cr_assert_eq(d.fr.flags, LS_FRAME_CHOICES);
	cr_assert_eq(d.fr.text_len, 6);
	cr_assert_eq(d.fr.tokens, -1, "openai frames carry no token count");

	cr_assert_eq(t_decode(&d, LS_BACKEND_OPENAI, "{\"choices\":[{\"text\":\"\",\"finish_reason\":\"length\"}]}"), 0);
	cr_assert_eq(d.fr.flags, LS_FRAME_CHOICES | LS_FRAME_FINISH | LS_FRAME_EMPTY_TEXT);

	cr_assert_eq(t_decode(&d, LS_BACKEND_OPENAI,
			    "{\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":30,\"total_tokens\":42}}"), 0);
	cr_assert_eq(d.fr.flags, LS_FRAME_USAGE | LS_FRAME_EMPTY_TEXT);
	cr_assert_eq(d.fr.cum_tokens, 30);
	cr_assert_eq(d.fr.tokens, 0, "a usage-only frame adds no tokens");
	cr_assert_eq(d.req.usage_prompt_tokens, 12);
	cr_assert_eq(d.req.usage_completion_tokens, 30);

	cr_assert_eq(t_decode(&d, LS_BACKEND_OPENAI, "[DONE]"), 0);
	cr_assert(d.fr.flags & LS_FRAME_DONE);
	cr_assert_eq(d.req.text_bytes, 6);
}

Test(backend, openai_continuous_usage_gives_tokens)
{
	struct t_dec d;
	t_dec_init(&d);
	cr_assert_eq(t_decode(&d, LS_BACKEND_OPENAI,
			    "{\"choices\":[{\"text\":\"ab\"}],\"usage\":{\"completion_tokens\":3}}"), 0);
	cr_assert_eq(d.fr.tokens, 3);
	cr_assert_eq(t_decode(&d, LS_BACKEND_OPENAI,
			    "{\"choices\":[{\"text\":\"cd\"}],\"usage\":{\"completion_tokens\":5}}"), 0);
	cr_assert_eq(d.fr.tokens, 2);
	cr_assert_eq(d.fr.cum_tokens, 5);
}

Test(backend, chat_frames)
{
	struct t_dec d;
	t_dec_init(&d);
	cr_assert_eq(t_decode(&d, LS_BACKEND_OPENAI_CHAT,
			    "{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}"), 0);
	cr_assert_eq(d.fr.flags, LS_FRAME_CHOICES | LS_FRAME_EMPTY_TEXT);
	cr_assert_eq(t_decode(&d, LS_BACKEND_OPENAI_CHAT, "{\"choices\":[{\"delta\":{\"content\":\"héllo\"}}]}"), 0);
	cr_assert_eq(d.fr.text_len, 6, "UTF-8 bytes");
	cr_assert_eq(t_decode(&d, LS_BACKEND_OPENAI_CHAT, "{\"choices\":[{\"delta\":{\"content\":null}}]}"), 0);
	cr_assert(d.fr.flags & LS_FRAME_EMPTY_TEXT);
	cr_assert_eq(t_decode(&d, LS_BACKEND_OPENAI_CHAT,
			    "{\"choices\":[{\"delta\":{\"reasoning_content\":\"hm\"},\"finish_reason\":\"stop\"}]}"), 0);
	cr_assert_eq(d.fr.text_len, 2);
	cr_assert(d.fr.flags & LS_FRAME_FINISH);
	cr_assert_eq(t_decode(&d, LS_BACKEND_OPENAI_CHAT, "{\"choices\":[{\"text\":\"completions shape\"}]}"), 0);
	cr_assert_eq(d.fr.text_len, 0, "chat reads delta.content, not text");
}

Test(backend, sglang_cumulative_frames)
{
	struct t_dec d;
	t_dec_init(&d);
	const char *frames[] = {
		"{\"text\":\"H\",\"meta_info\":{\"prompt_tokens\":7,\"completion_tokens\":1,\"finish_reason\":null}}",
		"{\"text\":\"Hel\",\"meta_info\":{\"prompt_tokens\":7,\"completion_tokens\":2,\"finish_reason\":null}}",
		"{\"text\":\"Hel\",\"meta_info\":{\"prompt_tokens\":7,\"completion_tokens\":3,\"finish_reason\":null}}",
		"{\"text\":\"Hello\",\"meta_info\":{\"prompt_tokens\":7,\"completion_tokens\":6,"
		"\"finish_reason\":{\"type\":\"length\",\"length\":6}}}",
	};
	uint32_t text[] = { 1, 2, 0, 2 };
	int32_t tokens[] = { 1, 1, 1, 3 };
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(t_decode(&d, LS_BACKEND_SGLANG, frames[i]), 0);
		cr_assert_eq(d.fr.text_len, text[i], "frame %d text %u", i, d.fr.text_len);
		cr_assert_eq(d.fr.tokens, tokens[i], "frame %d tokens %d", i, d.fr.tokens);
		cr_assert(d.fr.flags & LS_FRAME_CHOICES);
		cr_assert_eq(!!(d.fr.flags & LS_FRAME_EMPTY_TEXT), text[i] == 0);
		cr_assert_eq(!!(d.fr.flags & LS_FRAME_FINISH), i == 3);
	}
	cr_assert_eq(d.fr.cum_tokens, 6);
	cr_assert_eq(d.req.usage_prompt_tokens, 7);
	cr_assert_eq(d.req.usage_completion_tokens, 6);
	cr_assert_eq(d.req.text_bytes, 5);
	cr_assert_eq(t_decode(&d, LS_BACKEND_SGLANG, "[DONE]"), 0);
	cr_assert(d.fr.flags & LS_FRAME_DONE);
}

Test(backend, error_objects_in_stream)
{
	const char *errs[] = {
		"{\"error\":{\"message\":\"out of KV cache\",\"type\":\"InternalServerError\",\"code\":500}}",
		"{\"object\":\"error\",\"message\":\"bad things\",\"type\":\"BadRequestError\",\"code\":400}",
		"{\"error\":\"plain string\"}",
	};
	const char *want[] = { "out of KV cache", "bad things", "plain string" };
	for (int b = 0; b <= LS_BACKEND_SGLANG; b++)
		for (int i = 0; i < 3; i++) {
			struct t_dec d;
			t_dec_init(&d);
			cr_assert_eq(t_decode(&d, (enum ls_backend)b, errs[i]), -EPROTO, "backend %d error %d", b, i);
			cr_assert(strstr(d.req.error, want[i]), "%s", d.req.error);
		}
	struct t_dec d;
	t_dec_init(&d);
	cr_assert_eq(t_decode(&d, LS_BACKEND_OPENAI, "{\"error\":null,\"choices\":[{\"text\":\"x\"}]}"), 0,
		     "error: null is no error");
}

Test(backend, malformed_payloads)
{
	const char *bad[] = { "{not json", "", "[1,2]", "\"str\"", "{\"choices\":[{\"text\":\"x\"}]", "nul\x01l" };
	for (int b = 0; b <= LS_BACKEND_SGLANG; b++)
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			struct t_dec d;
			t_dec_init(&d);
			cr_assert_eq(t_decode(&d, (enum ls_backend)b, bad[i]), -EBADMSG, "backend %d payload %zu", b, i);
			cr_assert(strstr(d.req.error, "malformed frame"), "%s", d.req.error);
		}
}

Test(backend, big_frame_spills_out_of_the_arena)
{
	size_t n = 200000;
	char *json = malloc(n + 64);
	cr_assert_not_null(json);
	int head = sprintf(json, "{\"choices\":[{\"text\":\"");
	memset(json + head, 'a', n);
	strcpy(json + head + n, "\"}]}");
	struct t_dec d;
	t_dec_init(&d);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(decode_json(&d, LS_BACKEND_OPENAI, json), 0);
		cr_assert_eq(d.fr.text_len, n);
		cr_assert_eq(t_decode(&d, LS_BACKEND_OPENAI, json), 0);
		cr_assert_eq(d.fr.text_len, n);
	}
	free(json);
	/* cJSON outside the decoder still allocates with malloc: free() on its output is fine. */
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "x", 1);
	char *s = cJSON_PrintUnformatted(o);
	cr_assert_str_eq(s, "{\"x\":1}");
	free(s);
	cJSON_Delete(o);
}

Test(backend, decode_survives_replaced_cjson_hooks)
{
	/* Someone else resetting cJSON's allocator must not make the decoder leak or crash. */
	struct t_dec d;
	t_dec_init(&d);
	cr_assert_eq(decode_json(&d, LS_BACKEND_OPENAI, "{\"choices\":[{\"text\":\"ab\"}]}"), 0);
	cJSON_InitHooks(NULL);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(decode_json(&d, LS_BACKEND_OPENAI, "{\"choices\":[{\"text\":\"abc\"}]}"), 0);
		cr_assert_eq(d.fr.text_len, 3);
	}
}
