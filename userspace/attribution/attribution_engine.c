/* attribution_engine.c — the join of engine sessions (uprobe steps, engine_steps.c) to the run's
 * requests, from what attribution already knows of each: when its server's kernel had it, when
 * the server wrote its first token, and the engine's own token counts (llama.cpp's timings). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "attribution/attribution_int.h"
#include "attribution/engine_steps.h"
#include "base/stats.h"

/* The first token's frame under the rules, or -1. */
int ls_attr_first_token_frame(const struct ls_request *r, const struct ls_read_rules *rules)
{
	for (uint32_t i = 0; i < r->n_frames; i++)
		if (ls_frame_is_token(&r->frames[i], rules->ttft_gate))
			return (int)i;
	return -1;
}

/* What the join reads of request i: the server side's stamps where the probes saw them, else
 * the client's (on one host they differ by tens of us; a step is milliseconds). */
static void map_req(const struct ls_request *r, const struct ls_req_attr *ra, const struct ls_read_rules *rules,
		    struct ls_map_req *q)
{
	int f = ls_attr_first_token_frame(r, rules);

	memset(q, 0, sizeof(*q));
	q->arrived_ns = ra->server_arrived_ns ? ra->server_arrived_ns :
			ra->server_read_ns ? ra->server_read_ns : r->sent_ns;
	if (f >= 0)
		q->first_token_ns = (uint32_t)f < ra->n_frames && ra->frames[f].server_write_ns ?
				    ra->frames[f].server_write_ns : r->frames[f].arrived_ns;
	q->prompt_n = r->engine_prompt_n;
	q->predicted_n = r->engine_predicted_n;
}

static void fill_request(const struct ls_engine_session *s, const struct ls_request *r, struct ls_req_attr *ra)
{
	struct ls_req_engine *e = &ra->engine;
	uint64_t read = ra->server_read_ns ? ra->server_read_ns : ra->server_arrived_ns ? ra->server_arrived_ns :
			r->sent_ns;

	e->flags = LS_ENG_MAPPED | (s->flags & LS_SESS_UNCERTAIN ? LS_ENG_UNCERTAIN : 0) |
		   (s->flags & LS_SESS_COUNTS_DIFFER ? LS_ENG_COUNTS_DIFFER : 0) |
		   (s->flags & LS_SESS_SEQS_MISSED ? LS_ENG_SEQS_MISSED : 0) |
		   (s->flags & LS_SESS_TWIN ? LS_ENG_TWIN : 0) | (s->flags & LS_SESS_SPLIT ? LS_ENG_SPLIT : 0);
	e->seq = s->seq;
	e->prompt_tokens = s->prompt_tokens;
	e->prefill_steps = s->n_prefill_steps;
	e->decode_steps = s->n_decode_steps;
	e->first_step_ns = s->first_start_ns;
	e->queue_ns = read && s->first_start_ns > read ? s->first_start_ns - read : 0; /* frontend's: below */
	e->prefill_ns = s->prefill_end_ns - s->first_start_ns;
	e->decode_ns = s->last_end_ns - s->prefill_end_ns;
	e->prefill_steps_ns = s->prefill_steps_ns;
	e->decode_steps_ns = s->decode_steps_ns;
}

/* Median step time of the sessions' prefill (kind 0) or decode (kind 1) steps, each step once. */
static uint64_t step_p50(const struct ls_engine_map *m, int kind)
{
	uint64_t *d = malloc((m->n_steps + 1) * sizeof(*d));
	unsigned char *seen = calloc(m->n_steps + 1, 1);
	size_t n = 0;
	uint64_t p50 = 0;

	for (size_t s = 0; d && seen && s < m->n_sess; s++) {
		const struct ls_engine_session *ss = &m->sess[s];
		size_t k0 = ss->first + (kind ? ss->n_prefill_steps : 0);
		size_t k1 = kind ? ss->first + ss->n : ss->first + ss->n_prefill_steps;
		for (size_t k = k0; k < k1; k++) {
			size_t i = m->step_idx[k];
			if (seen[i] & (1u << kind))
				continue;
			seen[i] |= (unsigned char)(1u << kind);
			d[n++] = m->steps[i].end_ns - m->steps[i].start_ns;
		}
	}
	if (n) {
		ls_sort_u64(d, n);
		p50 = (uint64_t)ls_percentile_u64(d, n, 50);
	}
	free(d);
	free(seen);
	return p50;
}

/* Each joined request's frontend: its HTTP thread's frontend marks (llama_tokenize, post_tasks)
 * between its server read and its first step (ls_engine_frontend), taken out of its queue. 0 or
 * -ENOMEM. */
static int frontend_all(const struct ls_run *run, struct ls_attribution *a, const struct ls_engine_steps *steps,
			const struct ls_engine_map *map)
{
	struct ls_fe_req *q = calloc(run->n_requests + 1, sizeof(*q));
	struct ls_fe_join *out = calloc(run->n_requests + 1, sizeof(*out));
	int err = -ENOMEM;

	if (q && out) {
		for (size_t i = 0; i < run->n_requests; i++) {
			const struct ls_req_attr *ra = &a->req[i];
			q[i].read_ns = ra->server_read_ns;
			q[i].pid = ra->server_tgid;
			q[i].tid = ra->server_read_tid;
			q[i].limit_ns = map->req_sess[i] != SIZE_MAX ? map->sess[map->req_sess[i]].first_start_ns : 0;
		}
		err = ls_engine_frontend(steps->calls, steps->n_calls, q, run->n_requests, out, &a->engine.marks_joined);
	}
	for (size_t i = 0; !err && i < run->n_requests; i++) {
		struct ls_req_engine *e = &a->req[i].engine;
		if (!(e->flags & LS_ENG_MAPPED))
			continue;
		e->tokenize_calls = out[i].tokenize;
		e->posted = out[i].posted;
		if (!out[i].end_ns) {
			e->flags |= LS_ENG_NO_FRONTEND;
			a->engine.no_frontend++;
			continue;
		}
		e->frontend_end_ns = out[i].end_ns;
		e->frontend_ns = out[i].end_ns - q[i].read_ns;
		e->queue_ns = e->first_step_ns - out[i].end_ns;
		a->engine.frontend++;
	}
	free(q);
	free(out);
	return err;
}

int ls_attr_engine_map(const struct ls_run *run, struct ls_attribution *a, const struct ls_engine_steps *steps,
		       uint64_t lost, struct ls_engine_map *map)
{
	struct ls_attr_engine *sum = &a->engine;
	struct ls_map_req *q;

	memset(map, 0, sizeof(*map));
	sum->steps = steps->n;
	sum->lost = lost;
	for (size_t i = 0; i < steps->n_calls; i++) {
		sum->tokenize_calls += steps->calls[i].what == LS_STEP_TOKENIZE;
		sum->post_calls += steps->calls[i].what == LS_STEP_POSTED;
	}
	for (size_t i = 0; i < steps->n; i++)
		sum->uprobe_steps += steps->steps[i].source == LS_STEP_SRC_UPROBE;
	if (!sum->uprobe_steps)
		return 0;
	q = calloc(run->n_requests + 1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	for (size_t i = 0; i < run->n_requests; i++)
		map_req(&run->requests[i], &a->req[i], &a->rules, &q[i]);
	int err = ls_engine_map_build(steps->steps, steps->n, q, run->n_requests, map);
	free(q);
	if (err)
		return err;
	for (size_t i = 0; i < run->n_requests; i++)
		if (map->req_sess[i] != SIZE_MAX)
			fill_request(&map->sess[map->req_sess[i]], &run->requests[i], &a->req[i]);
	sum->seq_steps = map->n_seq_steps;
	sum->sessions = map->n_sess;
	sum->mapped = map->n_mapped;
	sum->uncertain = map->n_uncertain;
	sum->twins = map->n_twins;
	sum->split = map->n_split;
	sum->counts_differ = map->n_counts_differ;
	sum->unjoined = map->n_sess_unjoined;
	sum->prefill_step_p50_ns = step_p50(map, 0);
	sum->decode_step_p50_ns = step_p50(map, 1);
	a->have_engine = map->n_mapped > 0;
	return frontend_all(run, a, steps, map);
}
