/* Datasets: vLLM's and SGLang's random length rules, token-id prompts, jsonl and ShareGPT
 * loading with errors that name the file and line. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "workload/dataset.h"
#include "t_unit.h"

Test(dataset, vllm_range_bounds)
{
	uint32_t lo, hi;
	cr_assert_eq(ls_random_bounds(100, 0.5, LS_RANGE_VLLM, 0, &lo, &hi), 0);
	cr_expect_eq(lo, 50);
	cr_expect_eq(hi, 150);
	cr_assert_eq(ls_random_bounds(100, 0.0, LS_RANGE_VLLM, 0, &lo, &hi), 0);
	cr_expect_eq(lo, 100);
	cr_expect_eq(hi, 100);
	cr_assert_eq(ls_random_bounds(1024, 0.1, LS_RANGE_VLLM, 0, &lo, &hi), 0);
	cr_expect_eq(lo, 921); /* floor(921.6) */
	cr_expect_eq(hi, 1127); /* ceil(1126.4) */
	cr_assert_eq(ls_random_bounds(1, 0.9, LS_RANGE_VLLM, 1, &lo, &hi), 0);
	cr_expect_eq(lo, 1, "output lengths never go below 1");
	cr_expect_eq(hi, 2);
}

Test(dataset, sglang_range_bounds)
{
	uint32_t lo, hi;
	cr_assert_eq(ls_random_bounds(100, 0.5, LS_RANGE_SGLANG, 0, &lo, &hi), 0);
	cr_expect_eq(lo, 50);
	cr_expect_eq(hi, 100);
	cr_assert_eq(ls_random_bounds(100, 1.0, LS_RANGE_SGLANG, 0, &lo, &hi), 0);
	cr_expect_eq(lo, 100, "SGLang's ratio 1.0 means exactly L");
	cr_expect_eq(hi, 100);
	cr_assert_eq(ls_random_bounds(100, 0.0, LS_RANGE_SGLANG, 0, &lo, &hi), 0);
	cr_expect_eq(lo, 1);
	cr_expect_eq(hi, 100);
}

Test(dataset, bad_ratios, .init = cr_redirect_stderr)
{
	uint32_t lo, hi;
	cr_expect_neq(ls_random_bounds(100, 1.0, LS_RANGE_VLLM, 0, &lo, &hi), 0, "vLLM needs r < 1");
	cr_expect_neq(ls_random_bounds(100, -0.1, LS_RANGE_SGLANG, 0, &lo, &hi), 0);
	cr_expect_neq(ls_random_bounds(100, 1.5, LS_RANGE_SGLANG, 0, &lo, &hi), 0);
	cr_expect_neq(ls_random_bounds(0, 0.0, LS_RANGE_VLLM, 0, &lo, &hi), 0, "a prompt of 0 tokens");
}

static void check_random(enum ls_range_semantics sem, double r, uint32_t want_lo, uint32_t want_hi)
{
	struct ls_random_opts o = { .n = 3000, .input_len = 200, .output_len = 40, .range_ratio = r,
				    .semantics = sem, .vocab_size = 1000, .seed = 1 };
	struct ls_dataset ds;
	cr_assert_eq(ls_dataset_random(&ds, &o), 0);
	cr_assert_eq(ds.n, 3000);
	uint32_t min = UINT32_MAX, max = 0;
	for (size_t i = 0; i < ds.n; i++) {
		const struct ls_prompt *p = &ds.prompts[i];
		cr_assert_eq(p->n_token_ids, p->prompt_len, "the prompt length is exact: one id per token");
		cr_assert_null(p->text);
		if (p->prompt_len < min)
			min = p->prompt_len;
		if (p->prompt_len > max)
			max = p->prompt_len;
		/* vLLM: (offset + index + arange(len)) % vocab */
		uint32_t offset = (p->token_ids[0] + 1000 - (uint32_t)(i % 1000)) % 1000;
		for (uint32_t j = 0; j < p->n_token_ids; j++)
			cr_assert_eq(p->token_ids[j], (offset + i + j) % 1000);
		cr_assert_lt(p->token_ids[p->n_token_ids - 1], 1000);
		cr_assert_geq(p->output_len, 1);
		cr_assert(p->timestamp_s < 0);
	}
	cr_expect_eq(min, want_lo, "%s r=%g: shortest %u, want %u", ls_range_semantics_name(sem), r, min, want_lo);
	cr_expect_eq(max, want_hi, "%s r=%g: longest %u, want %u", ls_range_semantics_name(sem), r, max, want_hi);
	ls_dataset_free(&ds);
}

Test(dataset, random_lengths_cover_each_range)
{
	check_random(LS_RANGE_VLLM, 0.5, 100, 300);
	check_random(LS_RANGE_SGLANG, 0.5, 100, 200);
	check_random(LS_RANGE_SGLANG, 1.0, 200, 200); /* equals vLLM's 0.0 */
	check_random(LS_RANGE_VLLM, 0.0, 200, 200);
}

Test(dataset, random_is_seeded)
{
	struct ls_random_opts o = { .n = 50, .input_len = 64, .output_len = 16, .range_ratio = 0.5,
				    .semantics = LS_RANGE_VLLM, .vocab_size = 32000, .seed = 9 };
	struct ls_dataset a, b;
	cr_assert_eq(ls_dataset_random(&a, &o), 0);
	cr_assert_eq(ls_dataset_random(&b, &o), 0);
	for (size_t i = 0; i < a.n; i++) {
		cr_assert_eq(a.prompts[i].prompt_len, b.prompts[i].prompt_len);
		cr_assert_eq(a.prompts[i].output_len, b.prompts[i].output_len);
		cr_assert_arr_eq(a.prompts[i].token_ids, b.prompts[i].token_ids, a.prompts[i].prompt_len * 4);
	}
	ls_dataset_free(&a);
	ls_dataset_free(&b);
}

static int count_words(void *ctx, const char *text, uint32_t *tokens)
{
	(*(int *)ctx)++;
	uint32_t n = 0;
	for (const char *p = text; *p; p++)
		n += *p == ' ';
	*tokens = n + 1; /* a tokenizer that adds one (a BOS): the loader must correct for it */
	return 0;
}

Test(dataset, random_text_meets_the_counted_length)
{
	struct ls_random_opts o = { .n = 20, .input_len = 50, .output_len = 8, .semantics = LS_RANGE_VLLM,
				    .vocab_size = 32000, .seed = 2 };
	struct ls_dataset ds;
	int calls = 0;
	cr_assert_eq(ls_dataset_random_text(&ds, &o, count_words, &calls), 0);
	for (size_t i = 0; i < ds.n; i++) {
		cr_assert_not_null(ds.prompts[i].text);
		cr_assert_null(ds.prompts[i].token_ids);
		cr_expect_eq(ds.prompts[i].prompt_len, 50);
		uint32_t counted;
		count_words(&calls, ds.prompts[i].text, &counted);
		cr_expect_eq(counted, 50);
	}
	cr_expect_gt(calls, 20);
	ls_dataset_free(&ds);
}

/* A character-level vocabulary (the engine tests' random model): ~one token per 2 bytes, so
 * 3-5 per word, and a BOS. Stepping by (target - got) words diverged there (480 tokens for 32). */
static int count_pairs(void *ctx, const char *text, uint32_t *tokens)
{
	(*(int *)ctx)++;
	*tokens = (uint32_t)(strlen(text) + 1) / 2 + 1;
	return 0;
}

Test(dataset, random_text_converges_on_many_tokens_per_word)
{
	struct ls_random_opts o = { .n = 20, .input_len = 32, .output_len = 8, .semantics = LS_RANGE_VLLM,
				    .vocab_size = 32000, .seed = 3 };
	struct ls_dataset ds;
	int calls = 0;
	cr_assert_eq(ls_dataset_random_text(&ds, &o, count_pairs, &calls), 0);
	for (size_t i = 0; i < ds.n; i++) {
		uint32_t counted;
		count_pairs(&calls, ds.prompts[i].text, &counted);
		cr_expect_eq(ds.prompts[i].prompt_len, counted, "prompt %zu: prompt_len is what was counted", i);
		cr_expect(counted >= 28 && counted <= 36, "prompt %zu: %u tokens for a target of 32", i, counted);
	}
	ls_dataset_free(&ds);
}

static char *write_tmp(const char *content)
{
	char *path = strdup("/tmp/latscope-ds-XXXXXX");
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
	return path;
}

Test(dataset, jsonl_loads_prompts_ids_and_timestamps)
{
	char *path = write_tmp("{\"prompt\": \"hello there world\", \"output_len\": 12, \"timestamp\": 0.5}\n"
			       "\n"
			       "{\"prompt_token_ids\": [5, 6, 7], \"max_tokens\": 3, \"timestamp\": 1.25}\r\n"
			       "{\"prompt\": \"x\", \"prompt_len\": 9}\n");
	struct ls_dataset ds;
	cr_assert_eq(ls_dataset_jsonl(&ds, path, 0, 77, NULL, NULL), 0);
	cr_assert_eq(ds.n, 3);
	cr_expect_str_eq(ds.prompts[0].text, "hello there world");
	cr_expect_eq(ds.prompts[0].output_len, 12);
	cr_expect_eq(ds.prompts[0].prompt_len, 5, "estimated at 1 token per 4 bytes");
	cr_expect_eq(ds.prompts[1].n_token_ids, 3);
	cr_expect_eq(ds.prompts[1].token_ids[2], 7);
	cr_expect_eq(ds.prompts[1].output_len, 3);
	cr_expect_eq(ds.prompts[2].prompt_len, 9);
	cr_expect_eq(ds.prompts[2].output_len, 77, "default output length");
	cr_expect(ds.prompts[2].timestamp_s < 0);
	double *ts = ls_dataset_timestamps(&ds);
	cr_expect_null(ts, "one line has no timestamp");
	ls_dataset_free(&ds);

	cr_assert_eq(ls_dataset_jsonl(&ds, path, 2, 77, NULL, NULL), 0);
	cr_assert_eq(ds.n, 2, "takes the first n");
	ts = ls_dataset_timestamps(&ds);
	cr_assert_not_null(ts);
	cr_expect(ts[1] == 1.25);
	free(ts);
	ls_dataset_free(&ds);
	unlink(path);
	free(path);
}

Test(dataset, jsonl_errors_name_file_and_line, .init = cr_redirect_stderr)
{
	char *path = write_tmp("{\"prompt\": \"ok\", \"output_len\": 4}\n\n{\"prompt\": \"broken\", \n");
	struct ls_dataset ds;
	cr_assert_neq(ls_dataset_jsonl(&ds, path, 0, 4, NULL, NULL), 0);
	char want[128];
	snprintf(want, sizeof(want), "%s:3:", path);
	char *err = t_stderr_text();
	cr_expect(strstr(err, want), "stderr was: %s", err);
	cr_expect_eq(ds.n, 0);
	unlink(path);
	free(path);

	path = write_tmp("{\"prompt\": \"ok\", \"output_len\": -4}\n");
	cr_assert_neq(ls_dataset_jsonl(&ds, path, 0, 4, NULL, NULL), 0);
	unlink(path);
	free(path);
	path = write_tmp("{\"nothing\": 1}\n");
	cr_assert_neq(ls_dataset_jsonl(&ds, path, 0, 4, NULL, NULL), 0);
	unlink(path);
	free(path);
	cr_assert_neq(ls_dataset_jsonl(&ds, "/nonexistent/latscope.jsonl", 0, 4, NULL, NULL), 0);
	cr_expect(strstr(t_stderr_text(), "/nonexistent/latscope.jsonl"));
}

static const char sharegpt[] =
	"[\n"
	" {\"id\": \"a\", \"conversations\": [{\"from\": \"human\", \"value\": \"Tell me about rivers and the sea please\"},\n"
	"                                   {\"from\": \"gpt\", \"value\": \"Rivers flow to the sea, carrying water far.\"}]},\n"
	" {\"id\": \"short\", \"conversations\": [{\"from\": \"human\", \"value\": \"hi\"}, {\"from\": \"gpt\", \"value\": \"hello\"}]},\n"
	" {\"id\": \"one-turn\", \"conversations\": [{\"from\": \"human\", \"value\": \"a question with no answer here\"}]},\n"
	" {\"id\": \"b\", \"conversations\": [{\"from\": \"system\", \"value\": \"be nice\"},\n"
	"                                   {\"from\": \"human\", \"value\": \"What is the capital of France, friend?\"},\n"
	"                                   {\"from\": \"gpt\", \"value\": \"Paris is the capital of France, friend.\"}]}\n"
	"]\n";

Test(dataset, sharegpt_first_turns_and_filter)
{
	char *path = write_tmp(sharegpt);
	struct ls_dataset ds;
	cr_assert_eq(ls_dataset_sharegpt(&ds, path, 2, 0, 1, NULL, NULL), 0);
	cr_assert_eq(ds.n, 2);
	cr_expect(ds.lens_estimated);
	int rivers = 0, paris = 0;
	for (size_t i = 0; i < ds.n; i++) {
		rivers += !strcmp(ds.prompts[i].text, "Tell me about rivers and the sea please");
		paris += !strcmp(ds.prompts[i].text, "What is the capital of France, friend?");
		cr_expect_geq(ds.prompts[i].output_len, 4);
	}
	cr_expect_eq(rivers, 1);
	cr_expect_eq(paris, 1, "the first human turn, after a system turn");
	ls_dataset_free(&ds);

	/* More prompts than usable conversations: repeated (vLLM oversamples); fixed output length. */
	int calls = 0;
	cr_assert_eq(ls_dataset_sharegpt(&ds, path, 5, 33, 1, count_words, &calls), 0);
	cr_assert_eq(ds.n, 5);
	cr_expect_not(ds.lens_estimated);
	cr_expect_gt(calls, 0);
	for (size_t i = 0; i < ds.n; i++)
		cr_expect_eq(ds.prompts[i].output_len, 33);
	uint32_t counted;
	count_words(&calls, ds.prompts[0].text, &counted);
	cr_expect_eq(ds.prompts[0].prompt_len, counted, "lengths come from the counter when given");
	ls_dataset_free(&ds);
	unlink(path);
	free(path);
}

Test(dataset, sharegpt_malformed_names_line, .init = cr_redirect_stderr)
{
	char *path = write_tmp("[\n {\"conversations\": []},\n {\"conversations\": [}\n]\n");
	struct ls_dataset ds;
	cr_assert_neq(ls_dataset_sharegpt(&ds, path, 2, 0, 1, NULL, NULL), 0);
	char want[128];
	snprintf(want, sizeof(want), "%s:3:", path);
	char *err = t_stderr_text();
	cr_expect(strstr(err, want), "stderr was: %s", err);
	unlink(path);
	free(path);
}
