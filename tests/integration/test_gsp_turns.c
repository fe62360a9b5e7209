/* SGLang's --gsp-num-turns above 1 against `latscope sim --truth --prefix-cache`: each
 * conversation's turn t + 1 reaches the sim after turn t is done (and at once), in the slot its
 * conversation holds (never more than --max-concurrency requests at the sim); its prompt is the
 * conversation so far, so the sim's prompt grows by the last reply plus the new question (plus
 * the same template tokens every time), and the sim finds the whole earlier prompt (its full
 * blocks) in its prefix cache.
 * Bugs these catch: turns sent as independent requests (the prompt does not grow, no cache hit),
 * the reply left out of the history (it grows by the question only), a turn sent before the
 * one before it returned, a conversation's next turn taking a new slot (more than C at once),
 * turns of different conversations mixed up (the cache hit is not the earlier prompt's). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/record_file.h"
#include "t_helpers.h"
#include "t_peer_truth.h"

#define TURNS     3
#define N_CONV    4  /* 2 groups x 2 prompts */
#define QUESTION  16 /* --gsp-question-len, exact (range ratio 1): one sim token per word */
#define SYSTEM    64 /* --gsp-system-prompt-len */
#define BLOCK     16

/* The sim's requests in flight at once, from its truth (received -> last write). */
static size_t peak_at_sim(const struct t_peer_truth *t, size_t n, const char *tag)
{
	size_t peak = 0;
	for (size_t i = 0; i < N_CONV * TURNS; i++) {
		const struct t_peer_truth *a = t_peer_truth_find(t, n, tag, i);
		size_t at = 0;
		for (size_t j = 0; a && j < N_CONV * TURNS; j++) {
			const struct t_peer_truth *b = t_peer_truth_find(t, n, tag, j);
			at += b && b->received_ns <= a->received_ns && a->received_ns < b->last_write_ns;
		}
		peak = at > peak ? at : peak;
	}
	return peak;
}

static const struct ls_request *rec_of(const struct ls_run *run, uint64_t id)
{
	for (size_t i = 0; i < run->n_requests; i++)
		if (run->requests[i].id == id)
			return &run->requests[i];
	return NULL;
}

/* Turn t of conversation c against turn t - 1: after it, at once, the history grown, cached. */
static void expect_turn(const struct ls_run *run, const struct t_peer_truth *truth, size_t n, const char *tag,
			size_t c, size_t t, int *overhead)
{
	const struct t_peer_truth *prev = t_peer_truth_find(truth, n, tag, c * TURNS + t - 1);
	const struct t_peer_truth *cur = t_peer_truth_find(truth, n, tag, c * TURNS + t);
	const struct ls_request *rp = rec_of(run, c * TURNS + t - 1), *rc = rec_of(run, c * TURNS + t);
	cr_assert(prev && cur && rp && rc, "conversation %zu turn %zu: no truth or record", c, t);
	cr_expect_geq(cur->received_ns, prev->last_write_ns, "conversation %zu: turn %zu reached the sim before turn "
		      "%zu's last frame", c, t, t - 1);
	cr_expect_lt(rc->started_ns - rp->finished_ns, 20000000ull, "conversation %zu: turn %zu went %.3f ms after turn "
		     "%zu returned", c, t, (double)(rc->started_ns - rp->finished_ns) / 1e6, t - 1);
	int grown = cur->prompt_tokens - prev->prompt_tokens - (int)prev->n_token - QUESTION;
	/* The reply is in it: past the question and the template tokens a turn adds (turn 0's: its
	 * prompt less the system prompt and question), the prompt grew by the reply's tokens. */
	const struct t_peer_truth *first = t_peer_truth_find(truth, n, tag, c * TURNS);
	cr_assert_not_null(first);
	int template0 = first->prompt_tokens - SYSTEM - QUESTION, reply = grown + (int)prev->n_token - template0;
	cr_expect_geq(reply, (int)prev->n_token - 2, "conversation %zu turn %zu: %d tokens of the %zu-token reply in "
		      "the history", c, t, reply, prev->n_token);
	if (*overhead < 0)
		*overhead = grown;
	cr_expect_eq(grown, *overhead, "conversation %zu turn %zu: the prompt grew by %d tokens past the reply (%zu) "
		     "and the question (%d); other turns by %d", c, t, grown, prev->n_token, QUESTION, *overhead);
	cr_expect_eq(cur->cached_tokens, prev->prompt_tokens / BLOCK * BLOCK, "conversation %zu turn %zu: %d cached, "
		     "turn %zu's prompt was %d tokens", c, t, cur->cached_tokens, t - 1, prev->prompt_tokens);
}

Test(gsp_turns, each_turn_carries_the_conversation_after_the_last_returned, .timeout = 120)
{
	struct t_sim sim;
	const char *sim_extra[] = { "--step-ms", "2", "--prefix-cache", "--prefix-block", "16", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, sim_extra), 0, "simulator did not start");
	char dir[] = "/tmp/latscope-gt-XXXXXX", record[300];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(record, sizeof(record), "%s/rec.jsonl", dir);
	const char *argv[] = { "bench", "--harness", "sglang", "--backend", "sglang-oai-chat", "--base-url", sim.url,
			       "--model", "latscope-sim", "--disable-tqdm", "--probes", "off", "--warmup-requests", "0",
			       "--skip-initial-test", "--record", record, "--dataset-name", "generated-shared-prefix",
			       "--gsp-num-groups", "2", "--gsp-prompts-per-group", "2", "--gsp-system-prompt-len", "64",
			       "--gsp-question-len", "16", "--gsp-output-len", "8", "--gsp-num-turns", "3",
			       "--max-concurrency", "2", "--output-file", "/dev/null", NULL };
	char *out = NULL, *err = NULL;
	int rc = t_run(argv, &out, &err, 60);
	cr_assert_eq(rc, 0, "bench exited %d\n%s\n%s", rc, out ? out : "", err ? err : "");
	free(out);
	free(err);
	struct ls_run run;
	struct ls_record_meta meta;
	cr_assert_eq(ls_record_load(record, &run, &meta), 0);
	cr_assert_eq(run.n_requests, N_CONV * TURNS, "every turn of every conversation is a request");
	size_t n = 0;
	struct t_peer_truth *truth = t_peer_truth_load(sim.truth, N_CONV * TURNS, &n);
	int overhead = -1;
	for (size_t c = 0; c < N_CONV; c++)
		for (size_t t = 1; t < TURNS; t++)
			expect_turn(&run, truth, n, meta.run_tag, c, t, &overhead);
	cr_expect(overhead >= 0 && overhead <= 4 * BLOCK, "the template (and the reply re-tokenized) adds %d tokens a turn", overhead);
	size_t peak = peak_at_sim(truth, n, meta.run_tag);
	cr_expect_leq(peak, 2, "%zu requests at the sim at once: a conversation keeps its slot", peak);
	fprintf(stderr, "gsp_turns: %d conversations x %d turns; each turn's prompt = the last + its reply + %d + %d "
		"tokens, the last's full blocks cached; at most %zu at the sim\n", N_CONV, TURNS, QUESTION, overhead,
		peak);
	t_peer_truth_free(truth, n);
	ls_run_free(&run);
	t_sim_stop(&sim);
	t_remove_tree(dir);
}
