/* The peers' datasets (workload/dataset_peer.h): lengths, which parts are shared, order, and
 * determinism under --seed, for vLLM's prefix_repetition, sonnet, burstgpt, random prefix and
 * SGLang's generated-shared-prefix, mooncake and ShareGPT-based random. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "workload/dataset.h"
#include "workload/dataset_peer.h"

/* One token per whitespace-separated word: the simulator's count for word text. */
static int count_words(void *ctx, const char *text, uint32_t *tokens)
{
	uint32_t n = 0;
	for (const char *p = text; *p;) {
		p += strspn(p, " \t\r\n");
		if (!*p)
			break;
		n++;
		p += strcspn(p, " \t\r\n");
	}
	if (ctx)
		(*(int *)ctx)++;
	*tokens = n;
	return 0;
}

static uint32_t words_of(const char *s)
{
	uint32_t n;
	count_words(NULL, s, &n);
	return n;
}

static const char *fixture(const char *name)
{
	static char path[512];
	const char *root = getenv("LATSCOPE_ROOT");
	snprintf(path, sizeof(path), "%s/tests/fixtures/peer/%s", root ? root : ".", name);
	return path;
}

/* The first k words of s (with their leading spaces) as a new string. */
static char *head_words(const char *s, uint32_t k)
{
	const char *p = s;
	for (uint32_t i = 0; i < k && *p; i++) {
		p += strspn(p, " \n");
		p += strcspn(p, " \n");
	}
	return strndup(s, (size_t)(p - s));
}

Test(dataset_peer, prefix_repetition_shares_each_prefix_with_its_suffixes)
{
	struct ls_prefix_rep_opts o = { .n = 10, .prefix_len = 12, .suffix_len = 5, .num_prefixes = 3,
					.output_len = 7, .disable_shuffle = 1, .seed = 4 };
	struct ls_dataset ds;
	int calls = 0;
	cr_assert_eq(ls_dataset_prefix_repetition(&ds, &o, count_words, &calls), 0);
	cr_assert_eq(ds.n, 9, "3 prefixes x (10 / 3) suffixes, as vLLM");
	cr_expect_eq(calls, 9);
	for (size_t i = 0; i < ds.n; i++) {
		cr_expect_eq(ds.prompts[i].prompt_len, 17);
		cr_expect_eq(ds.prompts[i].output_len, 7);
		cr_expect_null(ds.prompts[i].token_ids);
	}
	/* Build order: prompts 3k..3k+2 share prefix k, and no other prompt does. */
	for (size_t i = 0; i < ds.n; i++)
		for (size_t j = 0; j < ds.n; j++) {
			char *a = head_words(ds.prompts[i].text, 12), *b = head_words(ds.prompts[j].text, 12);
			cr_expect_eq(!strcmp(a, b), i / 3 == j / 3, "prompts %zu and %zu", i, j);
			free(a);
			free(b);
		}
	/* Shuffled: the same prompts in another order; the same again for the same seed. */
	struct ls_dataset sh, sh2;
	o.disable_shuffle = 0;
	cr_assert_eq(ls_dataset_prefix_repetition(&sh, &o, NULL, NULL), 0);
	cr_assert_eq(ls_dataset_prefix_repetition(&sh2, &o, NULL, NULL), 0);
	cr_expect(sh.lens_estimated);
	int moved = 0;
	for (size_t i = 0; i < sh.n; i++) {
		cr_expect_str_eq(sh.prompts[i].text, sh2.prompts[i].text);
		moved += strcmp(sh.prompts[i].text, ds.prompts[i].text) != 0;
		int found = 0;
		for (size_t j = 0; j < ds.n; j++)
			found += !strcmp(sh.prompts[i].text, ds.prompts[j].text);
		cr_expect_eq(found, 1);
	}
	cr_expect(moved > 0, "shuffled");
	ls_dataset_free(&ds);
	ls_dataset_free(&sh);
	ls_dataset_free(&sh2);
	o.n = 2;
	cr_expect_neq(ls_dataset_prefix_repetition(&ds, &o, NULL, NULL), 0, "fewer prompts than prefixes");
}

static void gsp_system(const struct ls_prompt *p, char *out, size_t cap)
{
	const char *sep = strstr(p->text, "\n\n");
	cr_assert_not_null(sep, "system + \\n\\n + question: %s", p->text);
	snprintf(out, cap, "%.*s", (int)(sep - p->text), p->text);
}

Test(dataset_peer, gsp_groups_share_their_system_prompt)
{
	struct ls_gsp_opts o = { .num_groups = 3, .prompts_per_group = 4, .system_prompt_len = 20,
				 .question_len = 5, .output_len = 6, .range_ratio = 1.0, .ordered = 1, .seed = 1 };
	struct ls_dataset ds;
	cr_assert_eq(ls_dataset_gsp(&ds, &o, count_words, NULL), 0);
	cr_assert_eq(ds.n, 12, "groups x prompts per group, whatever --num-prompts");
	char sys[3][4096] = { { 0 } }, s[4096];
	for (size_t i = 0; i < ds.n; i++) {
		const struct ls_prompt *p = &ds.prompts[i];
		cr_expect_eq(p->prompt_len, 25, "range ratio 1: exact lengths");
		cr_expect_eq(p->output_len, 6);
		cr_assert_eq(p->prefix_group, i / 4 + 1, "ordered: group by group");
		gsp_system(p, s, sizeof(s));
		cr_expect_eq(words_of(s), 20);
		if (!sys[i / 4][0])
			snprintf(sys[i / 4], sizeof(sys[0]), "%s", s);
		cr_expect_str_eq(s, sys[i / 4], "one system prompt per group");
	}
	cr_expect_str_neq(sys[0], sys[1]);
	cr_expect_str_neq(sys[1], sys[2]);
	ls_dataset_free(&ds);

	/* Lengths in [max(int(L r), 1), L]; shuffled; the same for the same seed. */
	o.range_ratio = 0.5;
	o.ordered = 0;
	struct ls_dataset a, b;
	cr_assert_eq(ls_dataset_gsp(&a, &o, count_words, NULL), 0);
	cr_assert_eq(ls_dataset_gsp(&b, &o, count_words, NULL), 0);
	int out_of_order = 0;
	for (size_t i = 0; i < a.n; i++) {
		cr_expect_str_eq(a.prompts[i].text, b.prompts[i].text);
		cr_expect(a.prompts[i].output_len >= 3 && a.prompts[i].output_len <= 6);
		gsp_system(&a.prompts[i], s, sizeof(s));
		cr_expect(words_of(s) >= 10 && words_of(s) <= 20, "system prompt of %u words", words_of(s));
		out_of_order += i && a.prompts[i].prefix_group < a.prompts[i - 1].prefix_group;
	}
	cr_expect(out_of_order > 0, "shuffled unless --gsp-ordered");
	ls_dataset_free(&a);
	ls_dataset_free(&b);
}

Test(dataset_peer, gsp_zipf_skews_requests_to_the_first_groups)
{
	struct ls_gsp_opts o = { .num_groups = 8, .prompts_per_group = 100, .system_prompt_len = 2,
				 .question_len = 1, .output_len = 1, .range_ratio = 1.0, .zipf_alpha = 1.2, .seed = 3 };
	struct ls_dataset ds;
	cr_assert_eq(ls_dataset_gsp(&ds, &o, NULL, NULL), 0);
	cr_assert_eq(ds.n, 800);
	size_t per[8] = { 0 };
	for (size_t i = 0; i < ds.n; i++)
		per[ds.prompts[i].prefix_group - 1]++;
	/* P(group 1) = 1 / H(8, 1.2) ~ 0.40, P(group 8) ~ 0.03 */
	cr_expect(per[0] > 250 && per[0] < 400, "group 1: %zu of 800", per[0]);
	cr_expect(per[0] > per[3] && per[3] > per[7], "%zu > %zu > %zu", per[0], per[3], per[7]);
	ls_dataset_free(&ds);
}

Test(dataset_peer, sonnet_prompts_share_the_prefix_lines_and_stay_under_input_len)
{
	struct ls_sonnet_opts o = { .n = 6, .input_len = 90, .output_len = 9, .prefix_len = 40, .seed = 2 };
	struct ls_dataset ds;
	cr_assert_eq(ls_dataset_sonnet(&ds, fixture("sonnet.txt"), &o, count_words, NULL), 0);
	cr_assert_eq(ds.n, 6);
	/* base 10 words, ~9 words a line: round(30 / avg) = 3 prefix lines, the first three */
	const char *want = "Pick as many lines as you can from these poem lines:\nThe river light is water on the city\n"
			   "And each new stream of people made the world\nWhen time was only one cache of the server\n";
	for (size_t i = 0; i < ds.n; i++) {
		cr_expect(!strncmp(ds.prompts[i].text, want, strlen(want)), "prompt %zu: %.200s", i, ds.prompts[i].text);
		cr_expect(ds.prompts[i].prompt_len <= 90);
		cr_expect_eq(ds.prompts[i].output_len, 9);
	}
	ls_dataset_free(&ds);
	o.input_len = 5;
	cr_expect_neq(ls_dataset_sonnet(&ds, fixture("sonnet.txt"), &o, count_words, NULL), 0,
		      "input_len under the instruction's length");
}

Test(dataset_peer, burstgpt_keeps_gpt4_rows_with_a_response)
{
	struct ls_dataset ds;
	cr_assert_eq(ls_dataset_burstgpt(&ds, fixture("burstgpt.csv"), 4, 5), 0);
	cr_assert_eq(ds.n, 4);
	int seen[4] = { 0 };
	const uint32_t in[4] = { 1087, 24, 48, 32 }, out[4] = { 230, 12, 20, 8 };
	for (size_t i = 0; i < ds.n; i++) {
		int k = 0;
		while (k < 4 && in[k] != ds.prompts[i].prompt_len)
			k++;
		cr_assert_lt(k, 4, "row %u is a GPT-4 row with a response", ds.prompts[i].prompt_len);
		cr_expect_eq(ds.prompts[i].output_len, out[k]);
		cr_expect_eq(words_of(ds.prompts[i].text), in[k]);
		seen[k]++;
	}
	for (int k = 0; k < 4; k++)
		cr_expect_eq(seen[k], 1, "4 of 4 rows: sampled without replacement");
	ls_dataset_free(&ds);
	cr_assert_eq(ls_dataset_burstgpt(&ds, fixture("burstgpt.csv"), 10, 5), 0, "with replacement past the rows");
	cr_expect_eq(ds.n, 10);
	ls_dataset_free(&ds);
	cr_expect_neq(ls_dataset_burstgpt(&ds, fixture("sonnet.txt"), 2, 5), 0, "not a BurstGPT CSV");
}

Test(dataset_peer, mooncake_replays_sorted_sessions_with_rounds)
{
	struct ls_mooncake_opts o = { .n = 0, .num_rounds = 2, .slowdown = 2.0 };
	struct ls_dataset ds;
	cr_assert_eq(ls_dataset_mooncake(&ds, fixture("mooncake.jsonl"), &o, count_words, NULL), 0);
	cr_assert_eq(ds.n, 8, "4 records x 2 rounds");
	const double ts[4] = { 0.0, 0.5, 1.0, 2.4 }; /* (t - t0) / 1000 x slowdown 2, sorted */
	const uint32_t out[4] = { 8, 4, 6, 5 };
	for (size_t i = 0; i < ds.n; i++) {
		const struct ls_prompt *p = &ds.prompts[i];
		cr_expect_float_eq(p->timestamp_s, ts[i / 2], 1e-9, "prompt %zu at %g", i, p->timestamp_s);
		cr_expect_eq(p->output_len, out[i / 2]);
		cr_expect(strstr(p->text, "Tell me a story based on this context."));
		cr_expect(!strncmp(p->text, "user: Round 1: ", 15), "%.40s", p->text);
	}
	cr_expect(strstr(ds.prompts[0].text, "46hi hi") && strstr(ds.prompts[0].text, "47hi"), "%.80s", ds.prompts[0].text);
	cr_expect(strstr(ds.prompts[1].text, "\nassistant: story story"), "round 2 carries round 1");
	cr_expect(strstr(ds.prompts[1].text, "\nuser: Round 2: "));
	cr_expect_gt(ds.prompts[1].prompt_len, ds.prompts[0].prompt_len);
	/* "user: Round 1: " + "46hi hi ... hi" + "47hi hi ... hi" + "Tell me ...": SGLang joins them with
	 * no space ("hi47hi", "hiTell"), so 3 + (2 x 128 - 1) + 7 words */
	cr_expect_eq(ds.prompts[0].prompt_len, 3 + 2 * 128 - 1 + 7, "got %u", ds.prompts[0].prompt_len);
	ls_dataset_free(&ds);
	o.n = 2;
	o.num_rounds = 1;
	cr_assert_eq(ls_dataset_mooncake(&ds, fixture("mooncake.jsonl"), &o, NULL, NULL), 0);
	cr_expect_eq(ds.n, 2, "the first n lines");
	cr_expect(ds.lens_estimated);
	ls_dataset_free(&ds);
}

Test(dataset_peer, sglang_random_repeats_sharegpt_prompts_to_length)
{
	struct ls_sglang_random_opts o = { .n = 3, .input_len = 13, .output_len = 4, .range_ratio = 1.0, .seed = 9 };
	struct ls_dataset ds, again;
	cr_assert_eq(ls_dataset_sglang_random(&ds, fixture("sharegpt.json"), &o, count_words, NULL), 0);
	cr_assert_eq(ls_dataset_sglang_random(&again, fixture("sharegpt.json"), &o, count_words, NULL), 0);
	cr_assert_eq(ds.n, 3, "the empty prompt and the one-turn entry are skipped");
	for (size_t i = 0; i < ds.n; i++) {
		cr_expect_eq(ds.prompts[i].prompt_len, 13);
		cr_expect_eq(ds.prompts[i].output_len, 4);
		cr_expect_str_eq(ds.prompts[i].text, again.prompts[i].text, "seeded");
		cr_expect(!strstr(ds.prompts[i].text, "empty prompt"));
	}
	ls_dataset_free(&ds);
	ls_dataset_free(&again);
	o.n = 10;
	cr_assert_eq(ls_dataset_sglang_random(&ds, fixture("sharegpt.json"), &o, NULL, NULL), 0);
	cr_expect_eq(ds.n, 3, "fewer usable prompts: SGLang runs those");
	ls_dataset_free(&ds);
}

Test(dataset_peer, random_prefix_len_shares_leading_ids)
{
	struct ls_random_opts o = { .n = 5, .input_len = 8, .output_len = 2, .range_ratio = 0.0,
				    .semantics = LS_RANGE_VLLM, .vocab_size = 1000, .seed = 1, .prefix_len = 6 };
	struct ls_dataset ds;
	cr_assert_eq(ls_dataset_random(&ds, &o), 0);
	for (size_t i = 0; i < ds.n; i++) {
		cr_expect_eq(ds.prompts[i].prompt_len, 14);
		cr_expect_eq(ds.prompts[i].n_token_ids, 14);
		cr_expect(!memcmp(ds.prompts[i].token_ids, ds.prompts[0].token_ids, 6 * sizeof(uint32_t)));
	}
	cr_expect(memcmp(ds.prompts[1].token_ids + 6, ds.prompts[0].token_ids + 6, 8 * sizeof(uint32_t)));
	ls_dataset_free(&ds);
	cr_assert_eq(ls_dataset_random_text(&ds, &o, count_words, NULL), 0);
	for (size_t i = 0; i < ds.n; i++) {
		cr_expect_eq(ds.prompts[i].prompt_len, 14);
		char *a = head_words(ds.prompts[i].text, 6), *b = head_words(ds.prompts[0].text, 6);
		cr_expect_str_eq(a, b, "the text prefix is shared too");
		free(a);
		free(b);
	}
	ls_dataset_free(&ds);
}

Test(dataset_peer, skip_drops_the_first_prompts)
{
	struct ls_random_opts o = { .n = 4, .input_len = 3, .output_len = 2, .semantics = LS_RANGE_VLLM,
				    .vocab_size = 100, .seed = 1 };
	struct ls_dataset ds, all;
	cr_assert_eq(ls_dataset_random(&ds, &o), 0);
	cr_assert_eq(ls_dataset_random(&all, &o), 0);
	ls_dataset_skip(&ds, 3);
	cr_assert_eq(ds.n, 1);
	cr_expect(!memcmp(ds.prompts[0].token_ids, all.prompts[3].token_ids, 3 * sizeof(uint32_t)));
	ls_dataset_skip(&ds, 5);
	cr_expect_eq(ds.n, 0);
	ls_dataset_free(&ds);
	ls_dataset_free(&all);
}

Test(dataset_peer, sglang_sharegpt_prunes_as_sglang_does)
{
	struct ls_sglang_sharegpt_opts o = { .n = 10, .seed = 3 };
	struct ls_dataset ds;
	cr_assert_eq(ls_dataset_sglang_sharegpt(&ds, fixture("sharegpt.json"), &o, count_words, NULL), 0);
	cr_expect_eq(ds.n, 3, "two turns whoever spoke them, prompt and output >= 2 tokens; no oversampling");
	uint32_t sum_out = 0;
	for (size_t i = 0; i < ds.n; i++)
		sum_out += ds.prompts[i].output_len;
	cr_expect_eq(sum_out, 10 + 8 + 2, "outputs are the answers' tokens");
	ls_dataset_free(&ds);
	o.context_len = 12;
	cr_assert_eq(ls_dataset_sglang_sharegpt(&ds, fixture("sharegpt.json"), &o, count_words, NULL), 0);
	cr_assert_eq(ds.n, 1, "--sharegpt-context-len 12 keeps 9 + 2 only");
	cr_expect_str_eq(ds.prompts[0].text, "the kernel and the client of the network queue");
	ls_dataset_free(&ds);
	o.context_len = 0;
	o.fixed_output_len = 3;
	cr_expect_neq(ls_dataset_sglang_sharegpt(&ds, fixture("sharegpt.json"), &o, count_words, NULL), 0,
		      "SGLang refuses an output length under 4");
}

Test(dataset_peer, sharegpt_in_order_keeps_the_file_order)
{
	struct ls_dataset ds;
	cr_assert_eq(ls_dataset_sharegpt_in_order(&ds, fixture("sharegpt.json"), 2, 0, count_words, NULL), 0);
	cr_assert_eq(ds.n, 2);
	cr_expect_str_eq(ds.prompts[0].text, "the model of the city", "vLLM's --disable-shuffle");
	cr_expect_str_eq(ds.prompts[1].text, "what is the number of the system");
	ls_dataset_free(&ds);
}

Test(dataset_peer, oversample_tops_up_with_seeded_copies)
{
	struct ls_dataset ds, again;
	cr_assert_eq(ls_dataset_jsonl(&ds, fixture("custom.jsonl"), 0, 9, count_words, NULL), 0);
	cr_assert_eq(ls_dataset_jsonl(&again, fixture("custom.jsonl"), 0, 9, count_words, NULL), 0);
	cr_assert_eq(ds.n, 3);
	cr_assert_eq(ls_dataset_oversample(&ds, 10, 4), 0);
	cr_assert_eq(ls_dataset_oversample(&again, 10, 4), 0);
	cr_assert_eq(ds.n, 10);
	for (size_t i = 0; i < ds.n; i++) {
		cr_expect_str_eq(ds.prompts[i].text, again.prompts[i].text, "seeded");
		cr_expect(!strcmp(ds.prompts[i].text, ds.prompts[0].text) || !strcmp(ds.prompts[i].text, ds.prompts[1].text) ||
			  !strcmp(ds.prompts[i].text, ds.prompts[2].text), "a copy of one of the file's prompts");
	}
	cr_expect_eq(ds.prompts[0].output_len, 9, "custom: --custom-output-len when the line has none");
	ls_dataset_free(&ds);
	ls_dataset_free(&again);
}

/* vLLM's spec_bench: turns[0] of each line of the category, shuffled by seed, output_len each;
 * n past the category's lines is topped up (oversampled) unless no_oversample. */
Test(dataset_peer, spec_bench_takes_the_first_turn_of_the_category, .init = cr_redirect_stderr)
{
	struct ls_dataset ds;
	struct ls_spec_bench_opts o = { .n = 0, .output_len = 9, .category = "coding", .seed = 1 };
	cr_assert_eq(ls_dataset_spec_bench(&ds, fixture("spec_bench.jsonl"), &o, count_words, NULL), 0);
	cr_assert_eq(ds.n, 4);
	int seen[12] = { 0 };
	for (size_t i = 0; i < ds.n; i++) {
		int q = -1;
		cr_assert_eq(sscanf(ds.prompts[i].text, "Question %d about the model and the cache coding", &q), 1,
			     "%s", ds.prompts[i].text);
		cr_expect_eq(q % 3, 1, "question %d is not coding", q);
		seen[q]++;
		cr_expect_eq(ds.prompts[i].output_len, 9);
		cr_expect_eq(ds.prompts[i].prompt_len, words_of(ds.prompts[i].text));
	}
	cr_expect(seen[1] && seen[4] && seen[7] && seen[10]);
	ls_dataset_free(&ds);
	o.n = 10;
	cr_assert_eq(ls_dataset_spec_bench(&ds, fixture("spec_bench.jsonl"), &o, count_words, NULL), 0);
	cr_expect_eq(ds.n, 10, "oversampled to n, as vLLM's CustomDataset");
	ls_dataset_free(&ds);
	o.no_oversample = 1, o.category = NULL, o.in_order = 1, o.n = 20;
	cr_assert_eq(ls_dataset_spec_bench(&ds, fixture("spec_bench.jsonl"), &o, count_words, NULL), 0);
	cr_expect_eq(ds.n, 12);
	cr_expect(strstr(ds.prompts[0].text, "Question 0 ") == ds.prompts[0].text, "in order: %s", ds.prompts[0].text);
	ls_dataset_free(&ds);
	o.category = "nope";
	cr_expect_neq(ls_dataset_spec_bench(&ds, fixture("spec_bench.jsonl"), &o, count_words, NULL), 0);
}

/* vLLM's timed_trace over the Mooncake fixture: file order, times x multiplier never before the
 * record before (500 then 250: sent together), hash blocks the same tokens in every record that
 * names them, the prompt cut at input_length, labels read; bugs: a sorted trace, blocks salted
 * per request, the multiplier ignored. */
Test(dataset_peer, timed_trace_blocks_times_and_lengths, .init = cr_redirect_stderr)
{
	struct ls_dataset ds;
	struct ls_timed_trace_opts o = { .chunk_hash_size = 16, .sec_multiplier = 0.001, .vocab_size = 5000,
					 .label_timestamp = "timestamp", .label_input_length = "input_length",
					 .label_output_length = "output_length", .label_hash_ids = "hash_ids" };
	cr_assert_eq(ls_dataset_timed_trace(&ds, fixture("mooncake.jsonl"), &o), 0);
	cr_assert_geq(ds.n, 3);
	const struct ls_prompt *a = &ds.prompts[0], *b = &ds.prompts[1], *c = &ds.prompts[2];
	cr_expect_eq(a->prompt_len, 300);
	cr_expect_eq(a->n_token_ids, 300);
	cr_expect_eq(a->output_len, 8);
	cr_expect_eq(b->n_token_ids, 150);
	cr_expect_eq(a->timestamp_s, 0.0);
	cr_expect_eq(b->timestamp_s, 0.5);
	cr_expect_eq(c->timestamp_s, 0.5, "250 ms after 500 ms: sent with it, in file order");
	cr_expect_eq(memcmp(a->token_ids, b->token_ids, 16 * sizeof(uint32_t)), 0, "hash id 46: the same block");
	cr_expect_neq(memcmp(a->token_ids + 16, b->token_ids + 16, 16 * sizeof(uint32_t)), 0,
		      "47 in one, the request's own tokens in the other");
	cr_expect_neq(memcmp(a->token_ids, c->token_ids, 16 * sizeof(uint32_t)), 0, "46 vs 12");
	for (uint32_t k = 0; k < a->n_token_ids; k++)
		cr_assert_lt(a->token_ids[k], 5000);
	ls_dataset_free(&ds);
	o.as_text = 1;
	o.vocab_size = ls_dataset_n_words();
	o.n = 2;
	cr_assert_eq(ls_dataset_timed_trace(&ds, fixture("mooncake.jsonl"), &o), 0);
	cr_expect_eq(ds.n, 2, "the first --num-prompts records");
	cr_expect_eq(words_of(ds.prompts[0].text), 300, "one word per token");
	ls_dataset_free(&ds);
	o.label_hash_ids = "hash_ids";
	o.label_input_length = "in";
	cr_expect_eq(ls_dataset_timed_trace(&ds, fixture("mooncake.jsonl"), &o), -EINVAL, "no \"in\" field");
	cr_expect_eq(ds.n, 0);
}

/* SGLang's multi-turn gsp: conversation c's turn t at c * T + t (shuffled as wholes), turn 0 the
 * group's system prompt + "\n\n" + its question, later turns a question alone, every turn the
 * conversation's output length; bugs: turns shuffled apart, the system prompt repeated in later
 * turns, a question per conversation instead of per turn. */
Test(dataset_peer, gsp_turns_keep_conversations_together)
{
	struct ls_gsp_opts o = { .num_groups = 2, .prompts_per_group = 3, .system_prompt_len = 20, .question_len = 5,
				 .output_len = 6, .range_ratio = 1.0, .num_turns = 3, .seed = 4 };
	struct ls_dataset ds;
	cr_assert_eq(ls_dataset_gsp(&ds, &o, count_words, NULL), 0);
	cr_assert_eq(ds.n, 18, "groups x prompts x turns");
	for (size_t c = 0; c < 6; c++) {
		const struct ls_prompt *t0 = &ds.prompts[c * 3];
		char s[4096];
		gsp_system(t0, s, sizeof(s));
		cr_expect_eq(words_of(s), 20, "turn 0 carries the system prompt");
		cr_expect_eq(t0->prompt_len, 25);
		for (size_t t = 1; t < 3; t++) {
			const struct ls_prompt *p = &ds.prompts[c * 3 + t];
			cr_expect_null(strstr(p->text, "\n\n"), "turn %zu is a question alone", t);
			cr_expect_eq(p->prompt_len, 5);
			cr_expect_eq(p->output_len, t0->output_len);
			cr_expect_eq(p->prefix_group, t0->prefix_group, "one conversation, one group");
			cr_expect_str_neq(p->text, ds.prompts[c * 3 + t - 1].text, "a new question each turn");
		}
	}
	ls_dataset_free(&ds);
}
