/* test_sim_model.c — the simulator's model pieces in isolation: speculative acceptance (solver
 * and both distributions), fault kinds, the tokenizer. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "sim/sim.h"

static double mean_tokens(struct sim_config *cfg, int draws, double *var)
{
	double p = sim_engine_accept_p(cfg->accept_len, cfg->num_spec_tokens);
	uint64_t rng = 42;
	double sum = 0, sq = 0;
	for (int i = 0; i < draws; i++) {
		int t = sim_engine_draw_tokens(cfg, p, &rng);
		cr_assert(t >= 1 && t <= cfg->num_spec_tokens + 1);
		sum += t;
		sq += (double)t * t;
	}
	double m = sum / draws;
	if (var)
		*var = sq / draws - m * m;
	return m;
}

Test(sim_model, geometric_acceptance_has_the_asked_mean)
{
	double targets[] = { 1.5, 2.0, 3.5, 4.9 };
	for (size_t i = 0; i < 4; i++) {
		struct sim_config cfg = { .accept_len = targets[i], .num_spec_tokens = (int)ceil(targets[i]) + 1 };
		double var;
		double m = mean_tokens(&cfg, 1000000, &var);
		cr_expect(fabs(m - targets[i]) < 0.01, "A=%g: mean %.4f (sd %.3f)", targets[i], m, sqrt(var));
	}
}

Test(sim_model, two_point_acceptance_has_the_asked_mean)
{
	struct sim_config cfg = { .accept_len = 3.5, .num_spec_tokens = 5, .accept_dist = SIM_ACCEPT_TWO_POINT };
	double var;
	double m = mean_tokens(&cfg, 200000, &var);
	cr_expect(fabs(m - 3.5) < 0.01, "mean %.4f", m);
	cr_expect(var < 0.26, "two-point variance %.3f", var);
}

Test(sim_model, no_speculation_is_one_token)
{
	struct sim_config cfg = { .accept_len = 1.0, .num_spec_tokens = 0 };
	cr_expect_eq(mean_tokens(&cfg, 1000, NULL), 1.0);
}

Test(sim_model, fault_kinds_parse_and_pick)
{
	unsigned mask;
	cr_assert_eq(sim_fault_parse_kinds("mixed", &mask), 0);
	cr_expect_eq(mask, ((1u << SIM_FAULT__COUNT) - 1) & ~1u);
	cr_assert_eq(sim_fault_parse_kinds("stall,http500", &mask), 0);
	cr_expect_eq(mask, (1u << SIM_FAULT_STALL) | (1u << SIM_FAULT_HTTP500));
	cr_expect_eq(sim_fault_parse_kinds("stall,boom", &mask), -1);
	cr_expect_eq(sim_fault_parse_kinds("", &mask), -1);
	for (int k = 1; k < SIM_FAULT__COUNT; k++) {
		cr_assert_eq(sim_fault_parse_kinds(sim_fault_name(k), &mask), 0);
		cr_expect_eq(mask, 1u << k);
	}
	sim_fault_parse_kinds("mixed", &mask);
	int seen[SIM_FAULT__COUNT] = { 0 };
	uint64_t rng = 1;
	for (int i = 0; i < 10000; i++)
		seen[sim_fault_pick(0.3, mask, &rng)]++;
	cr_expect(seen[SIM_FAULT_NONE] > 6500 && seen[SIM_FAULT_NONE] < 7500, "none %d", seen[0]);
	for (int k = 1; k < SIM_FAULT__COUNT; k++) /* 3,000 faults over 15 request kinds: ~200 each */
		if (k != SIM_FAULT_CLOSE_AFTER_ACCEPT) /* drawn per connection, never per request */
			cr_expect_gt(seen[k], 120, "kind %s picked %d", sim_fault_name(k), seen[k]);
	cr_expect_eq(seen[SIM_FAULT_CLOSE_AFTER_ACCEPT], 0);
	rng = 1;
	cr_expect_eq(sim_fault_pick(0, mask, &rng), SIM_FAULT_NONE);
}

Test(sim_model, tokenizer_round_trips_any_bytes)
{
	const char *texts[] = { "", "hello world", " the quick brown fox.", "x", "\xff\x00\x01 and \xc3\xa9",
				"The  the\tthe\nthe", " model model model" };
	size_t lens[] = { 0, 11, 21, 1, 11, 16, 18 };
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		int *ids = NULL;
		int n = sim_tok_encode(texts[i], lens[i], &ids);
		cr_assert_geq(n, 0);
		struct ls_strbuf out = { 0 };
		cr_assert_eq(sim_tok_decode(ids, (size_t)n, &out), 0);
		cr_expect_eq(out.len, lens[i]);
		cr_expect(out.len == 0 || !memcmp(out.data, texts[i], lens[i]), "round trip %zu", i);
		ls_strbuf_free(&out);
		free(ids);
	}
	int *ids = NULL;
	int n = sim_tok_encode(" the model", 10, &ids);
	cr_expect_eq(n, 2, "words are one token each");
	free(ids);
	int bad = sim_tok_vocab_size();
	struct ls_strbuf out = { 0 };
	cr_expect_eq(sim_tok_decode(&bad, 1, &out), -1);
	ls_strbuf_free(&out);
}

Test(sim_model, generated_ids_re_encode_to_themselves)
{
	uint64_t rng = 9;
	int ids[500];
	for (int i = 0; i < 500; i++)
		ids[i] = sim_tok_generate(&rng);
	struct ls_strbuf text = { 0 };
	cr_assert_eq(sim_tok_decode(ids, 500, &text), 0);
	int *back = NULL;
	int n = sim_tok_encode(text.data, text.len, &back);
	cr_assert_eq(n, 500);
	cr_expect_eq(memcmp(back, ids, sizeof(ids)), 0);
	free(back);
	ls_strbuf_free(&text);
}

Test(sim_model, json_string_escapes)
{
	struct ls_strbuf b = { 0 };
	cr_assert_eq(ls_strbuf_json_str(&b, "a\"b\\c\n\x01", 7), 0);
	cr_expect_str_eq(b.data, "\"a\\\"b\\\\c\\n\\u0001\"");
	ls_strbuf_free(&b);
}
