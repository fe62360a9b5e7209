/* bench_turns.c — see bench_turns.h. SGLang's round: prev_messages += the turn's question (as a
 * user message), the request sends prev_messages, then prev_messages += {"role": "assistant",
 * "content": output.generated_text} (the reply's delta content and reasoning content, as
 * _combine_openai_chat_content reads them; "" when the turn failed). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/bench_turns.h"
#include "cmd/bench_mpi.h"

uint32_t ls_bench_turns_of(const struct ls_config *c)
{
	uint32_t t = c->datasets.gsp.num_turns;
	return c->dataset == LS_DATASET_GSP && t > 1 ? t : 1;
}

int ls_bench_turns_init(struct ls_bench_turns *t, const struct ls_config *c, struct ls_driver_job *jobs, size_t n,
			const struct ls_dataset *ds)
{
	memset(t, 0, sizeof(*t));
	uint32_t turns = ls_bench_turns_of(c);
	if (turns == 1)
		return 0;
	if (ls_bench_mpi_on()) {
		fprintf(stderr, "latscope bench: --gsp-num-turns above 1 runs in one process (each turn follows "
				"its conversation's last one); run without mpirun\n");
		return -EINVAL;
	}
	if (!n || n % turns || ds->n != n) {
		fprintf(stderr, "latscope bench: %zu requests are not whole conversations of %u turns\n", n, turns);
		return -EINVAL;
	}
	t->turns = turns;
	t->n_conv = n / turns;
	t->jobs = jobs;
	t->recs = jobs[0].rec;
	t->ds = ds;
	t->firsts = calloc(t->n_conv, sizeof(*t->firsts));
	t->text = calloc(n, sizeof(*t->text));
	if (!t->firsts || !t->text) {
		ls_bench_turns_free(t);
		return -ENOMEM;
	}
	for (size_t k = 0; k < t->n_conv; k++)
		t->firsts[k] = jobs[k * turns];
	return 0;
}

/* The measured record index of job, or -1 (a probe request, a warmup). */
static long turn_index(const struct ls_bench_turns *t, const struct ls_driver_job *job)
{
	if (!job || job->rec < t->recs || job->rec >= t->recs + t->n_conv * t->turns)
		return -1;
	return (long)(job->rec - t->recs);
}

/* One chat frame: its delta's content and reasoning content, appended to the turn's reply. */
static void on_payload(void *ctx, const struct ls_driver_job *job, const char *data, size_t len)
{
	struct ls_bench_turns *t = ctx;
	long i = turn_index(t, job);
	if (i < 0 || (len == 6 && !memcmp(data, "[DONE]", 6)))
		return;
	cJSON *o = cJSON_ParseWithLength(data, len);
	const cJSON *ch = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "choices"), 0);
	const cJSON *delta = cJSON_GetObjectItemCaseSensitive(ch, "delta");
	static const char *const keys[] = { "reasoning_content", "content" };
	for (int k = 0; k < 2; k++) {
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(delta, keys[k]);
		if (cJSON_IsString(s)) /* out of memory: the reply is shorter, the run goes on */
			(void)ls_strbuf_append(&t->text[i], s->valuestring, strlen(s->valuestring));
	}
	cJSON_Delete(o);
}

/* The conversation up to turn `upto` (its questions, the replies before it) as messages. */
static cJSON *conversation(const struct ls_bench_turns *t, size_t first, size_t upto)
{
	cJSON *msgs = cJSON_CreateArray();
	for (size_t u = first; msgs && u <= upto; u++) {
		cJSON *q = cJSON_CreateObject(), *a = u < upto ? cJSON_CreateObject() : NULL;
		const char *text = t->ds->prompts[u].text ? t->ds->prompts[u].text : "";
		if (!q || !cJSON_AddItemToArray(msgs, q) || !cJSON_AddStringToObject(q, "role", "user") ||
		    !cJSON_AddStringToObject(q, "content", text) || (u < upto && !a)) {
			cJSON_Delete(a);
			cJSON_Delete(msgs);
			return NULL;
		}
		if (a && (!cJSON_AddItemToArray(msgs, a) || !cJSON_AddStringToObject(a, "role", "assistant") ||
			  !cJSON_AddStringToObject(a, "content", t->text[u].data ? t->text[u].data : ""))) {
			cJSON_Delete(msgs);
			return NULL;
		}
	}
	return msgs;
}

/* Turn i's body: the first turn's (model, max_tokens, sampling, extra body) with the messages so
 * far and include_usage. 0 or -ENOMEM (the turn then keeps its single-question body). */
static int turn_body(struct ls_bench_turns *t, size_t i)
{
	size_t first = i - i % t->turns;
	cJSON *root = cJSON_Parse(t->jobs[first].body), *msgs = root ? conversation(t, first, i) : NULL;
	cJSON *so = NULL;
	char *body = NULL;
	if (msgs && cJSON_ReplaceItemInObjectCaseSensitive(root, "messages", msgs)) {
		msgs = NULL;
		so = cJSON_GetObjectItemCaseSensitive(root, "stream_options");
		if (!so)
			so = cJSON_AddObjectToObject(root, "stream_options");
		if (so && !cJSON_GetObjectItemCaseSensitive(so, "include_usage"))
			cJSON_AddTrueToObject(so, "include_usage");
		body = cJSON_PrintUnformatted(root);
	}
	cJSON_Delete(msgs);
	cJSON_Delete(root);
	if (!body)
		return -ENOMEM;
	free((char *)t->jobs[i].body);
	t->jobs[i].body = body;
	t->jobs[i].body_len = strlen(body);
	return 0;
}

static struct ls_driver_job *follow_up(void *ctx, const struct ls_driver_job *done)
{
	struct ls_bench_turns *t = ctx;
	long i = turn_index(t, done);
	if (i < 0 || (size_t)(i + 1) % t->turns == 0)
		return NULL;
	if (turn_body(t, (size_t)i + 1))
		fprintf(stderr, "latscope bench: out of memory for turn %zu's messages: it sends its question alone\n",
			(size_t)i + 1);
	return &t->jobs[i + 1];
}

void ls_bench_turns_driver(struct ls_bench_turns *t, struct ls_driver_opts *o, struct ls_driver_job **jobs,
			   size_t *n)
{
	if (!t->turns)
		return;
	o->on_payload = on_payload;
	o->follow_up = follow_up;
	o->turns_ctx = t;
	*jobs = t->firsts;
	*n = t->n_conv;
}

void ls_bench_turns_free(struct ls_bench_turns *t)
{
	for (size_t i = 0; t->text && i < t->n_conv * t->turns; i++)
		ls_strbuf_free(&t->text[i]);
	free(t->text);
	free(t->firsts);
	memset(t, 0, sizeof(*t));
}
