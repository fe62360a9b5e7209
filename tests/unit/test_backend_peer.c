/* Request bodies and frame decoding for tgi and tensorrt-llm (driver/backend_peer.c), and the
 * backend names vLLM and SGLang use. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "driver/backend.h"
#include "t_unit.h"

Test(backend_peer, names_of_both_tools)
{
	const struct { const char *name; enum ls_backend b; } cases[] = {
		{ "tgi", LS_BACKEND_TGI }, { "tensorrt-llm", LS_BACKEND_TRT }, { "trt", LS_BACKEND_TRT },
		{ "lmdeploy", LS_BACKEND_OPENAI }, { "scalellm", LS_BACKEND_OPENAI },
		{ "lmdeploy-chat", LS_BACKEND_OPENAI_CHAT }, { "sglang-oai", LS_BACKEND_OPENAI },
		{ "sglang-oai-chat", LS_BACKEND_OPENAI_CHAT }, { "vllm", LS_BACKEND_OPENAI },
		{ "vllm-chat", LS_BACKEND_OPENAI_CHAT }, { "sglang", LS_BACKEND_SGLANG },
		{ "sglang-native", LS_BACKEND_SGLANG }, { "llama.cpp", LS_BACKEND_OPENAI },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum ls_backend b;
		cr_assert_eq(ls_backend_parse(cases[i].name, &b), 0, "%s", cases[i].name);
		cr_expect_eq(b, cases[i].b, "%s", cases[i].name);
		cr_expect(strstr(ls_backend_names(), cases[i].name), "listed: %s", cases[i].name);
	}
	cr_expect_str_eq(ls_backend_default_endpoint(LS_BACKEND_TGI), "/generate_stream");
	cr_expect_str_eq(ls_backend_default_endpoint(LS_BACKEND_TRT), "/v2/models/ensemble/generate_stream");
	cr_expect(ls_backend_needs_text(LS_BACKEND_TGI) && ls_backend_needs_text(LS_BACKEND_TRT));
	cr_expect(!ls_backend_sends_model(LS_BACKEND_TGI) && !ls_backend_sends_model(LS_BACKEND_TRT));
	cr_expect(ls_backend_final_frame_ends(LS_BACKEND_TGI) && !ls_backend_final_frame_ends(LS_BACKEND_TRT));
	cr_expect(ls_backend_eof_ends(LS_BACKEND_TRT) && !ls_backend_eof_ends(LS_BACKEND_OPENAI));
}

Test(backend_peer, tgi_body_is_vllms)
{
	struct ls_prompt p = { .text = "hello there", .prompt_len = 2, .output_len = 9 };
	cJSON *r = t_body_json(LS_BACKEND_TGI, "m", &p, 1);
	cr_expect_str_eq(t_json_get(r, "inputs")->valuestring, "hello there");
	cr_expect_null(t_json_get(r, "model"), "TGI serves one model: no model field");
	cr_expect_eq(t_json_get(r, "parameters.max_new_tokens")->valueint, 9);
	cr_expect(cJSON_IsTrue(t_json_get(r, "parameters.do_sample")));
	cr_expect_float_eq(t_json_get(r, "parameters.temperature")->valuedouble, 0.01, 1e-12);
	cr_expect_float_eq(t_json_get(r, "parameters.top_p")->valuedouble, 0.99, 1e-12);
	cr_expect_eq(t_json_get(r, "parameters.truncate")->valueint, 2);
	cr_expect(cJSON_IsTrue(t_json_get(r, "parameters.ignore_eos_token")));
	cJSON_Delete(r);
	struct ls_prompt ids = { .token_ids = (uint32_t[]){ 1, 2 }, .n_token_ids = 2, .output_len = 1 };
	cr_expect_null(ls_backend_body(LS_BACKEND_TGI, "m", &ids, 0, NULL), "token ids: TGI takes text");
}

Test(backend_peer, trt_body_is_triton_ensembles)
{
	struct ls_prompt p = { .text = "hi", .output_len = 5 };
	cJSON *r = t_body_json(LS_BACKEND_TRT, "m", &p, 1);
	cr_expect_str_eq(t_json_get(r, "text_input")->valuestring, "hi");
	cr_expect(cJSON_IsTrue(t_json_get(r, "accumulate_tokens")));
	cr_expect(cJSON_IsTrue(t_json_get(r, "stream")));
	cr_expect_eq(t_json_get(r, "max_tokens")->valueint, 5);
	cr_expect_eq(t_json_get(r, "min_length")->valueint, 5, "ignore_eos: min_length = max_tokens");
	cJSON_Delete(r);
	r = t_body_json(LS_BACKEND_TRT, "m", &p, 0);
	cr_expect_null(t_json_get(r, "min_length"));
	cJSON_Delete(r);
}

Test(backend_peer, tgi_frames)
{
	struct t_dec d;
	t_dec_init(&d);
	cr_assert_eq(t_decode(&d, LS_BACKEND_TGI, "{\"index\":1,\"token\":{\"id\":5,\"text\":\" the\",\"logprob\":-0.1,"
						"\"special\":false},\"generated_text\":null,\"details\":null}"), 0);
	cr_expect_eq(d.fr.text_len, 4);
	cr_expect_eq(d.fr.tokens, 1);
	cr_expect_eq(d.fr.cum_tokens, 1);
	cr_expect(d.fr.flags & LS_FRAME_CHOICES);
	cr_expect(!(d.fr.flags & LS_FRAME_FINISH));
	cr_assert_eq(t_decode(&d, LS_BACKEND_TGI, "{\"index\":2,\"token\":{\"id\":2,\"text\":\"</s>\",\"special\":true},"
						"\"generated_text\":null,\"details\":null}"), 0);
	cr_expect_eq(d.fr.text_len, 0, "a special token's text is not output");
	cr_expect(d.fr.flags & LS_FRAME_EMPTY_TEXT);
	cr_assert_eq(t_decode(&d, LS_BACKEND_TGI, "{\"index\":3,\"token\":{\"id\":7,\"text\":\" end\",\"special\":false},"
						"\"generated_text\":\" the end\",\"details\":{\"finish_reason\":"
						"\"length\",\"generated_tokens\":3,\"seed\":null}}"), 0);
	cr_expect(d.fr.flags & LS_FRAME_FINISH);
	cr_expect_eq(d.fr.tokens, 1);
	cr_expect_eq(d.req.usage_completion_tokens, 3);
	cr_expect_eq(d.req.text_bytes, 8);
	cr_expect_eq(t_decode(&d, LS_BACKEND_TGI, "{\"error\":\"Input validation error\",\"error_type\":\"validation\"}"),
		     -EPROTO);
	cr_expect(strstr(d.req.error, "Input validation error"), "%s", d.req.error);
	cr_expect_eq(t_decode(&d, LS_BACKEND_TGI, "[1,2]"), -EBADMSG);
}

Test(backend_peer, trt_frames)
{
	struct t_dec d;
	t_dec_init(&d);
	cr_assert_eq(t_decode(&d, LS_BACKEND_TRT, "{\"model_name\":\"ensemble\",\"model_version\":\"1\","
						"\"sequence_end\":false,\"sequence_id\":0,\"text_output\":\" new\"}"), 0);
	cr_expect_eq(d.fr.text_len, 4);
	cr_expect_eq(d.fr.tokens, -1, "Triton's frames carry no token counts");
	cr_expect(d.fr.flags & LS_FRAME_CHOICES);
	cr_assert_eq(t_decode(&d, LS_BACKEND_TRT, "{\"model_name\":\"ensemble\",\"text_output\":\"\"}"), 0);
	cr_expect(d.fr.flags & LS_FRAME_EMPTY_TEXT);
	cr_expect_eq(t_decode(&d, LS_BACKEND_TRT, "{\"error\":\"model not ready\"}"), -EPROTO);
	cr_expect_eq(t_decode(&d, LS_BACKEND_TRT, "not json"), -EBADMSG);
}

Test(backend_peer, llamacpp_native_body)
{
	enum ls_backend b;
	cr_assert_eq(ls_backend_parse("llama.cpp-native", &b), 0);
	cr_expect_eq(b, LS_BACKEND_LLAMACPP);
	cr_expect_str_eq(ls_backend_default_endpoint(b), "/completion");
	cr_expect(!ls_backend_needs_text(b) && !ls_backend_sends_model(b) && ls_backend_final_frame_ends(b));
	struct ls_prompt ids = { .token_ids = (uint32_t[]){ 7, 9 }, .n_token_ids = 2, .output_len = 4 };
	cJSON *r = t_body_json(b, "m", &ids, 1);
	cr_expect_eq(cJSON_GetArraySize(t_json_get(r, "prompt")), 2, "token ids go as they are");
	cr_expect_eq(t_json_get(r, "n_predict")->valueint, 4);
	cr_expect(cJSON_IsTrue(t_json_get(r, "stream")) && cJSON_IsTrue(t_json_get(r, "ignore_eos")));
	cr_expect_null(t_json_get(r, "model"));
	cJSON_Delete(r);
}

/* What llama-server streams on /completion (captured from de3ff81): content deltas, a
 * cumulative tokens_predicted, and a last frame with stop: true and the counts. */
Test(backend_peer, llamacpp_native_frames)
{
	struct t_dec d;
	t_dec_init(&d);
	cr_assert_eq(t_decode(&d, LS_BACKEND_LLAMACPP, "{\"index\":0,\"content\":\"e\",\"tokens\":[274],\"stop\":false,"
						     "\"id_slot\":-1,\"tokens_predicted\":1,\"tokens_evaluated\":10}"), 0);
	cr_expect_eq(d.fr.text_len, 1);
	cr_expect_eq(d.fr.tokens, 1);
	cr_expect(!(d.fr.flags & LS_FRAME_FINISH));
	/* a frame that held a partial character back: two tokens, the text of both */
	cr_assert_eq(t_decode(&d, LS_BACKEND_LLAMACPP, "{\"content\":\"dc\",\"stop\":false,\"tokens_predicted\":3}"), 0);
	cr_expect_eq(d.fr.tokens, 2);
	cr_expect_eq(d.fr.text_len, 2);
	cr_assert_eq(t_decode(&d, LS_BACKEND_LLAMACPP, "{\"content\":\"\",\"tokens\":[],\"stop\":true,\"tokens_predicted\":3,"
						     "\"tokens_evaluated\":10,\"timings\":{\"prompt_n\":1}}"), 0);
	cr_expect(d.fr.flags & LS_FRAME_FINISH);
	cr_expect(d.fr.flags & LS_FRAME_EMPTY_TEXT);
	cr_expect_eq(d.fr.tokens, 0);
	cr_expect_eq(d.req.usage_completion_tokens, 3);
	cr_expect_eq(d.req.usage_prompt_tokens, 10);
	cr_expect_eq(t_decode(&d, LS_BACKEND_LLAMACPP, "{\"error\":{\"code\":400,\"message\":\"Prompt contains invalid tokens\"}}"),
		     -EPROTO);
	cr_expect(strstr(d.req.error, "invalid tokens"), "%s", d.req.error);
}

/* vLLM's --backend openai-responses: its payload, and which events are tokens (bugs: a preamble
 * or .done event timed as a token, reasoning not timed, the usage or the end missed, an error
 * event taken for text). */
Test(backend_peer, openai_responses_body_and_events)
{
	enum ls_backend b;
	cr_assert_eq(ls_backend_parse("openai-responses", &b), 0);
	cr_expect_eq(b, LS_BACKEND_OPENAI_RESPONSES);
	cr_expect_str_eq(ls_backend_default_endpoint(b), "/v1/responses");
	cr_expect(ls_backend_needs_text(b) && ls_backend_sends_model(b) && ls_backend_final_frame_ends(b));
	struct ls_prompt p = { .text = "Why is the sky blue?", .prompt_len = 5, .output_len = 16 };
	cJSON *r = t_body_json(b, "served-alias", &p, 1);
	cr_expect_str_eq(t_json_get(r, "model")->valuestring, "served-alias");
	cr_expect_str_eq(t_json_get(r, "input")->valuestring, "Why is the sky blue?");
	cr_expect_eq(t_json_get(r, "max_output_tokens")->valueint, 16);
	cr_expect(cJSON_IsTrue(t_json_get(r, "stream")) && cJSON_IsFalse(t_json_get(r, "store")));
	cr_expect(cJSON_IsTrue(t_json_get(r, "ignore_eos")));
	cr_expect_eq(cJSON_GetArraySize(r), 6, "vLLM's six keys, no more");
	cJSON_Delete(r);
	struct t_dec d;
	t_dec_init(&d);
	cr_assert_eq(t_decode(&d, b, "{\"type\":\"response.created\",\"response\":{\"status\":\"in_progress\"}}"), 0);
	cr_expect(!(d.fr.flags & LS_FRAME_CHOICES), "the preamble is not a token");
	cr_assert_eq(t_decode(&d, b, "{\"type\":\"response.reasoning_text.delta\",\"delta\":\"The user asks \"}"), 0);
	cr_expect(d.fr.flags & LS_FRAME_CHOICES, "reasoning is timed");
	cr_expect_eq(d.fr.text_len, 14);
	cr_assert_eq(t_decode(&d, b, "{\"type\":\"response.output_text.delta\",\"item_id\":\"m\",\"output_index\":0,"
				  "\"content_index\":0,\"delta\":\"Rayleigh\"}"), 0);
	cr_expect(d.fr.flags & LS_FRAME_CHOICES);
	cr_expect_eq(d.fr.text_len, 8);
	cr_assert_eq(t_decode(&d, b, "{\"type\":\"response.output_text.done\",\"text\":\"Rayleigh\"}"), 0);
	cr_expect(!(d.fr.flags & LS_FRAME_CHOICES), ".done repeats the text: not a token");
	cr_expect(!(d.fr.flags & LS_FRAME_FINISH));
	cr_assert_eq(t_decode(&d, b, "{\"type\":\"response.completed\",\"response\":{\"status\":\"incomplete\","
				  "\"usage\":{\"input_tokens\":17,\"output_tokens\":4,\"total_tokens\":21}}}"), 0);
	cr_expect(d.fr.flags & LS_FRAME_FINISH && d.fr.flags & LS_FRAME_USAGE);
	cr_expect_eq(d.req.usage_prompt_tokens, 17);
	cr_expect_eq(d.req.usage_completion_tokens, 4);
	cr_expect_eq(t_decode(&d, b, "{\"type\":\"error\",\"message\":\"boom\"}"), -EPROTO);
	cr_expect(strstr(d.req.error, "boom"), "%s", d.req.error);
}
