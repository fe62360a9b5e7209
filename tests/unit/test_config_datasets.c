/* The peers' dataset flags (config/config_datasets.c): vLLM's and SGLang's defaults, values,
 * refusals that name the reason, and which datasets need a file. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <string.h>
#include "config/config.h"
#include "t_unit.h"

Test(config_datasets, defaults_are_the_peers)
{
	struct ls_config c;
	const char *args[] = { NULL };
	cr_assert_eq(t_config_parse(&c, args), 0);
	const struct ls_config_datasets *p = &c.datasets;
	cr_expect(p->prefix_rep.prefix_len == 256 && p->prefix_rep.suffix_len == 256 && p->prefix_rep.num_prefixes == 10 &&
		  p->prefix_rep.output_len == 128, "vLLM's prefix_repetition defaults");
	cr_expect(p->sonnet.input_len == 550 && p->sonnet.output_len == 150 && p->sonnet.prefix_len == 200);
	cr_expect_eq(p->custom_output_len, 256);
	cr_expect(p->gsp.num_groups == 64 && p->gsp.prompts_per_group == 16 && p->gsp.system_prompt_len == 2048 &&
		  p->gsp.question_len == 128 && p->gsp.output_len == 256 && p->gsp.range_ratio == 1.0, "SGLang's gsp");
	cr_expect(p->mooncake.num_rounds == 1 && p->mooncake.slowdown == 1.0);
	cr_expect(!p->input_len && !p->output_len && !p->dataset_offset);
	ls_config_free(&c);
}

Test(config_datasets, flags_set_their_fields)
{
	struct ls_config c;
	const char *args[] = { "--dataset-name", "prefix_repetition", "--prefix-repetition-prefix-len", "64",
			       "--prefix-repetition-suffix-len", "8", "--prefix-repetition-num-prefixes", "3",
			       "--prefix-repetition-output-len", "5", "--disable-shuffle", "--no-oversample",
			       "--input-len", "40", "--output-len", "9", "--random-prefix-len", "4", "--random-batch-size", "1",
			       "--sonnet-input-len", "300", "--sonnet-output-len", "20", "--sonnet-prefix-len", "50",
			       "--custom-output-len", "17", "--gsp-num-groups", "2", "--gsp-prompts-per-group", "3",
			       "--gsp-system-prompt-len", "100", "--gsp-question-len", "10", "--gsp-output-len", "6",
			       "--gsp-range-ratio", "0.5", "--gsp-fast-prepare", "--gsp-send-routing-key", "--gsp-ordered",
			       "--gsp-num-turns", "1", "--gsp-group-distribution", "zipf", "--gsp-zipf-alpha", "1.5",
			       "--mooncake-slowdown-factor", "2", "--mooncake-num-rounds", "3", "--mooncake-workload",
			       "conversation", "--sharegpt-context-len", "4096", "--dataset-offset", "7", NULL };
	cr_assert_eq(t_config_parse(&c, args), 0);
	const struct ls_config_datasets *p = &c.datasets;
	cr_expect_eq(c.dataset, LS_DATASET_PREFIX_REPETITION);
	cr_expect(p->prefix_rep.prefix_len == 64 && p->prefix_rep.suffix_len == 8 && p->prefix_rep.num_prefixes == 3 &&
		  p->prefix_rep.output_len == 5);
	cr_expect(p->disable_shuffle && p->no_oversample);
	cr_expect(p->input_len == 40 && p->output_len == 9 && p->random_prefix_len == 4);
	cr_expect(p->sonnet.input_len == 300 && p->sonnet.output_len == 20 && p->sonnet.prefix_len == 50);
	cr_expect_eq(p->custom_output_len, 17);
	cr_expect(p->gsp.num_groups == 2 && p->gsp.prompts_per_group == 3 && p->gsp.system_prompt_len == 100 &&
		  p->gsp.question_len == 10 && p->gsp.output_len == 6 && p->gsp.range_ratio == 0.5);
	cr_expect(p->gsp.fast_prepare && p->gsp_send_routing_key && p->gsp.ordered);
	cr_expect(p->gsp_zipf && p->gsp_zipf_alpha == 1.5);
	cr_expect(p->mooncake.slowdown == 2.0 && p->mooncake.num_rounds == 3);
	cr_expect(p->sharegpt_context_len == 4096 && p->dataset_offset == 7);
	ls_config_free(&c);
}

Test(config_datasets, dataset_names_and_files)
{
	const char *no_file[] = { "prefix_repetition", "prefix-repetition", "generated-shared-prefix", "random-ids",
				  "random" };
	for (size_t i = 0; i < sizeof(no_file) / sizeof(no_file[0]); i++) {
		struct ls_config c;
		const char *args[] = { "--dataset-name", no_file[i], NULL };
		cr_expect_eq(t_config_parse(&c, args), 0, "%s builds its prompts itself", no_file[i]);
		ls_config_free(&c);
	}
	const char *file[] = { "sonnet", "burstgpt", "mooncake", "custom" };
	for (size_t i = 0; i < sizeof(file) / sizeof(file[0]); i++) {
		struct ls_config c;
		const char *args[] = { "--dataset-name", file[i], NULL };
		cr_expect_eq(t_config_parse(&c, args), 2, "%s needs --dataset-path", file[i]);
		ls_config_free(&c);
		const char *with[] = { "--dataset-name", file[i], "--dataset-path", "f", NULL };
		cr_expect_eq(t_config_parse(&c, with), 0, "%s with a file", file[i]);
		ls_config_free(&c);
	}
}

Test(config_datasets, trace_timestamps_replay_mooncake, .init = cr_redirect_stderr)
{
	struct ls_config c;
	const char *args[] = { "--dataset-name", "mooncake", "--dataset-path", "t.jsonl", "--use-trace-timestamps", NULL };
	cr_assert_eq(t_config_parse(&c, args), 0);
	cr_expect_eq(c.profile.send.arrival, LS_ARRIVAL_TRACE);
	cr_expect(c.datasets.use_trace_timestamps);
	ls_config_free(&c);
	const char *sglang_doc[] = { "--dataset-name", "mooncake-conversation", "--dataset-path", "t.jsonl",
				     "--use-trace-timestamps", "true", "--mooncake-num-rounds", "2", NULL };
	cr_assert_eq(t_config_parse(&c, sglang_doc), 0, "SGLang's docs give the switch a value");
	cr_expect_eq(c.profile.send.arrival, LS_ARRIVAL_TRACE);
	cr_expect_eq(c.dataset, LS_DATASET_MOONCAKE);
	ls_config_free(&c);
	const char *off[] = { "--dataset-name", "mooncake", "--dataset-path", "t.jsonl", "--use-trace-timestamps",
			      "False", NULL };
	cr_assert_eq(t_config_parse(&c, off), 0);
	cr_expect(!c.datasets.use_trace_timestamps);
	ls_config_free(&c);
	const char *random[] = { "--use-trace-timestamps", NULL };
	cr_expect_eq(t_config_parse(&c, random), 2, "random has no times");
	ls_config_free(&c);
	cr_expect(strstr(t_stderr_text(), "mooncake"));
}

Test(config_datasets, out_of_scope_values_say_why, .init = cr_redirect_stderr)
{
	struct ls_config c;
	const char *batch[] = { "--random-batch-size", "4", NULL };
	cr_expect_eq(t_config_parse(&c, batch), 2);
	ls_config_free(&c);
	const char *turns[] = { "--dataset-name", "generated-shared-prefix", "--gsp-num-turns", "3", NULL };
	cr_expect_eq(t_config_parse(&c, turns), 2, "multi-turn needs a chat backend (SGLang's assert)");
	ls_config_free(&c);
	const char *chat[] = { "--dataset-name", "generated-shared-prefix", "--gsp-num-turns", "3", "--backend",
			       "openai-chat", NULL };
	cr_expect_eq(t_config_parse(&c, chat), 0);
	cr_expect_eq(c.datasets.gsp.num_turns, 3);
	ls_config_free(&c);
	const char *zero[] = { "--gsp-num-turns", "0", NULL };
	cr_expect_eq(t_config_parse(&c, zero), 2);
	ls_config_free(&c);
	const char *dist[] = { "--gsp-group-distribution", "pareto", NULL };
	cr_expect_eq(t_config_parse(&c, dist), 2);
	ls_config_free(&c);
	const char *name[] = { "--dataset-name", "hf", NULL };
	cr_expect_eq(t_config_parse(&c, name), 2);
	ls_config_free(&c);
	const char *err = t_stderr_text();
	cr_expect(strstr(err, "embedding"), "%s", err);
	cr_expect(strstr(err, "needs a chat backend"), "%s", err);
	cr_expect(strstr(err, "generated-shared-prefix or mooncake"), "%s", err);
}
