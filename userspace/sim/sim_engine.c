/* sim/sim_engine.c — the continuous-batching step model.
 * A step: admit waiting requests while the batch has room and the token budget lasts, give
 * each running request its decode tokens (1 + drafts) or its next prefill chunk, and last
 * step_ms + decode_token_us * decode tokens + prefill_token_us * prefill tokens. When the step
 * ends, a request that finished its prefill samples its first token and every decoding request
 * samples 1 + accepted drafts; the frames go out at once and the next step starts. Deadlines
 * are absolute (each step's planned end is the next one's planned start), so late timer
 * wake-ups (50-90 us here) do not accumulate into drift; the truth keeps the real stamps. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/clock.h"
#include "sim/sim.h"

#define MAX_FRAME_TOKENS 64

static void list_push(struct sim_req_list *l, struct sim_req *r)
{
	r->next = NULL;
	r->prev = l->tail;
	if (l->tail)
		l->tail->next = r;
	else
		l->head = r;
	l->tail = r;
	l->count++;
	r->listed = 1;
}

static void list_remove(struct sim_req_list *l, struct sim_req *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		l->head = r->next;
	if (r->next)
		r->next->prev = r->prev;
	else
		l->tail = r->prev;
	r->prev = r->next = NULL;
	l->count--;
	r->listed = 0;
}

double sim_engine_accept_p(double accept_len, int k)
{
	if (accept_len <= 1.0 || k <= 0)
		return 0.0;
	if (accept_len >= k + 1)
		return 1.0;
	/* mean tokens = 1 + p + p^2 + ... + p^k, increasing in p: bisect */
	double lo = 0.0, hi = 1.0;
	for (int it = 0; it < 100; it++) {
		double p = (lo + hi) / 2, mean = 0, term = 1;
		for (int i = 0; i <= k; i++, term *= p)
			mean += term;
		if (mean < accept_len)
			lo = p;
		else
			hi = p;
	}
	return (lo + hi) / 2;
}

int sim_engine_draw_tokens(const struct sim_config *cfg, double p, uint64_t *rng)
{
	int k = cfg->accept_len > 1.0 ? cfg->num_spec_tokens : 0;
	if (k <= 0)
		return 1;
	if (cfg->accept_dist == SIM_ACCEPT_TWO_POINT) {
		double fl = floor(cfg->accept_len);
		int t = (int)fl + (sim_rng_unit(rng) < cfg->accept_len - fl);
		return t > k + 1 ? k + 1 : t;
	}
	/* geometric: drafts are verified in order and the first rejection ends the run */
	int accepted = 0;
	while (accepted < k && sim_rng_unit(rng) < p)
		accepted++;
	return 1 + accepted;
}

/* ---- prefix cache: a set of chained block hashes ---- */

static uint64_t block_hash(const int *ids, int n, uint64_t prev)
{
	uint64_t h = sim_hash64(ids, (size_t)n * sizeof(int), prev);
	return h ? h : 1;
}

static int cache_has(const struct sim_prefix_cache *c, uint64_t h)
{
	if (!c->cap)
		return 0;
	for (size_t i = h & (c->cap - 1);; i = (i + 1) & (c->cap - 1)) {
		if (c->slots[i] == h)
			return 1;
		if (!c->slots[i])
			return 0;
	}
}

static void cache_add(struct sim_prefix_cache *c, uint64_t h)
{
	if (!c->cap || cache_has(c, h))
		return;
	if (c->used * 10 >= c->cap * 7) { /* full: evict everything (crude, documented) */
		memset(c->slots, 0, c->cap * sizeof(uint64_t));
		c->used = 0;
	}
	size_t i = h & (c->cap - 1);
	while (c->slots[i])
		i = (i + 1) & (c->cap - 1);
	c->slots[i] = h;
	c->used++;
}

static int cache_lookup(struct sim_server *srv, const struct sim_req *r)
{
	const struct sim_config *cfg = srv->cfg;
	int b = cfg->prefix_block, hit = 0;
	uint64_t h = cfg->seed;
	for (int off = 0; off + b <= r->prompt_len; off += b) {
		h = block_hash(r->prompt_ids + off, b, h);
		if (!cache_has(&srv->engine.cache, h))
			break;
		hit += b;
	}
	if (hit >= r->prompt_len)
		hit = r->prompt_len - 1; /* the last prompt token is always computed */
	return hit < 0 ? 0 : hit;
}

static void cache_insert(struct sim_server *srv, const struct sim_req *r)
{
	int b = srv->cfg->prefix_block;
	uint64_t h = srv->cfg->seed;
	for (int off = 0; off + b <= r->prompt_len; off += b) {
		h = block_hash(r->prompt_ids + off, b, h);
		cache_add(&srv->engine.cache, h);
	}
}

void sim_engine_flush_cache(struct sim_server *srv)
{
	struct sim_prefix_cache *c = &srv->engine.cache;
	if (c->cap)
		memset(c->slots, 0, c->cap * sizeof(uint64_t));
	c->used = 0;
}

int sim_engine_init(struct sim_server *srv)
{
	struct sim_engine *e = &srv->engine;
	memset(e, 0, sizeof(*e));
	e->accept_p = sim_engine_accept_p(srv->cfg->accept_len, srv->cfg->num_spec_tokens);
	if (srv->cfg->prefix_cache) {
		e->cache.cap = 1u << 20;
		e->cache.slots = calloc(e->cache.cap, sizeof(uint64_t));
		if (!e->cache.slots) {
			fprintf(stderr, "latscope sim: out of memory for the prefix cache\n");
			return -1;
		}
	}
	return 0;
}

void sim_engine_fini(struct sim_server *srv)
{
	free(srv->engine.cache.slots);
	srv->engine.cache.slots = NULL;
}

void sim_engine_submit(struct sim_server *srv, struct sim_req *r)
{
	r->state = SIM_REQ_WAITING;
	list_push(&srv->engine.waiting, r);
}

void sim_engine_detach(struct sim_server *srv, struct sim_req *r)
{
	if (!r->listed)
		return;
	if (r->state == SIM_REQ_WAITING)
		list_remove(&srv->engine.waiting, r);
	else
		list_remove(&srv->engine.running, r);
}

static int spec_k(const struct sim_config *cfg)
{
	return cfg->accept_len > 1.0 ? cfg->num_spec_tokens : 0;
}

/* Gives r its next prefill chunk out of *budget (r->prefilled < prompt_len). 1 when the chunk
 * ends the prompt: the step then samples r's first token. */
static int prefill_chunk(struct sim_req *r, int *budget, uint32_t *prefill_tokens)
{
	int chunk = r->prompt_len - r->prefilled;
	if (chunk > *budget)
		chunk = *budget;
	r->step_prefill = chunk;
	*budget -= chunk;
	*prefill_tokens += (uint32_t)chunk;
	return r->prefilled + chunk == r->prompt_len;
}

/* Plans and starts a step at now whose planned start is base. 0 when there is no work. */
static int start_step(struct sim_server *srv, uint64_t now, uint64_t base)
{
	struct sim_engine *e = &srv->engine;
	const struct sim_config *cfg = srv->cfg;
	int budget = cfg->max_batch_tokens, decode_cost = 1 + spec_k(cfg);
	uint32_t decode_tokens = 0, prefill_tokens = 0, sampled = 0;
	int any = 0;

	for (struct sim_req *r = e->running.head; r; r = r->next) {
		r->in_step = r->step_decode = r->step_prefill = 0;
		if (r->prefilled >= r->prompt_len) {
			if (budget < decode_cost)
				continue;
			r->step_decode = 1;
			budget -= decode_cost;
			decode_tokens += (uint32_t)decode_cost;
			sampled++;
		} else {
			if (budget <= 0)
				continue;
			sampled += prefill_chunk(r, &budget, &prefill_tokens);
		}
		r->in_step = any = 1;
	}
	while (e->waiting.head && e->running.count < cfg->max_batch && budget > 0) {
		struct sim_req *r = e->waiting.head;
		list_remove(&e->waiting, r);
		r->state = SIM_REQ_RUNNING;
		list_push(&e->running, r);
		r->admitted_ns = now;
		if (cfg->prefix_cache) {
			e->prefix_queries_total += (uint64_t)r->prompt_len;
			r->cached_tokens = cache_lookup(srv, r);
			e->prefix_hits_total += (uint64_t)r->cached_tokens;
		}
		r->prefilled = r->cached_tokens;
		r->step_decode = 0;
		sampled += prefill_chunk(r, &budget, &prefill_tokens);
		r->in_step = any = 1;
	}
	if (!any) {
		e->step_active = 0;
		return 0;
	}
	uint64_t dur_ns = (uint64_t)llround(cfg->step_ms * 1e6 + cfg->decode_token_us * 1e3 * decode_tokens +
					    cfg->prefill_token_us * 1e3 * prefill_tokens);
	e->step_active = 1;
	e->step_start_ns = now;
	e->step_base_ns = base;
	e->step_deadline_ns = base + dur_ns;
	e->step_tokens = decode_tokens + prefill_tokens;
	e->step_prefill_tokens = prefill_tokens;
	e->gpu_start_ns = e->gpu_end_ns = 0;
	if (srv->gpu.handle) {
		/* The step's work runs on the GPU; the loop blocks for it as a synchronous engine would. */
		e->gpu_start_ns = ls_now_ns();
		srv->gpu.step(dur_ns, sampled);
		e->gpu_end_ns = ls_now_ns();
		if (e->step_deadline_ns < e->gpu_end_ns)
			e->step_deadline_ns = e->gpu_end_ns;
	}
	sim_server_set_timer(srv, e->step_deadline_ns);
	return 1;
}

void sim_engine_kick(struct sim_server *srv)
{
	struct sim_engine *e = &srv->engine;
	if (e->step_active || (!e->waiting.head && !e->running.head))
		return;
	uint64_t now = ls_now_ns();
	start_step(srv, now, now);
}

/* The ids a request samples this step: n tokens, empty-text specials on every Nth frame,
 * EOS last when the seeded end point is reached without ignore_eos. */
static void sample_ids(const struct sim_config *cfg, struct sim_req *r, int *ids, int n, int eos_last)
{
	int empty = (cfg->empty_first_frame && r->token_frames == 0) ||
		    (cfg->empty_frame_every > 0 && (r->token_frames + 1) % cfg->empty_frame_every == 0);
	for (int i = 0; i < n; i++)
		ids[i] = empty ? SIM_TOK_EMPTY : sim_tok_generate(&r->rng);
	if (eos_last && n > 0)
		ids[n - 1] = SIM_TOK_EOS;
}

void sim_engine_on_timer(struct sim_server *srv)
{
	struct sim_engine *e = &srv->engine;
	const struct sim_config *cfg = srv->cfg;
	if (!e->step_active)
		return;
	uint64_t now = ls_now_ns();
	if (now < e->step_deadline_ns) { /* early or stale wake-up: wait for the real deadline */
		sim_server_set_timer(srv, e->step_deadline_ns);
		return;
	}
	struct sim_step_rec rec = { .start_ns = e->step_start_ns, .end_ns = now,
				    .gpu_start_ns = e->gpu_start_ns, .gpu_end_ns = e->gpu_end_ns };
	int k = spec_k(cfg);
	e->steps_total++;
	for (struct sim_req *r = e->running.head, *next; r; r = next) {
		next = r->next;
		if (!r->in_step)
			continue;
		r->in_step = 0;
		int n = 0, ids[MAX_FRAME_TOKENS];
		rec.prefill_tokens = (uint32_t)r->step_prefill;
		if (r->step_prefill) {
			r->prefilled += r->step_prefill;
			e->prompt_tokens_total += (uint64_t)r->step_prefill;
			if (r->prefilled >= r->prompt_len) {
				n = 1; /* the step that ends the prefill samples the first token */
				e->prompt_tokens_total += (uint64_t)r->cached_tokens;
				if (cfg->prefix_cache)
					cache_insert(srv, r);
			}
		} else if (r->step_decode) {
			n = sim_engine_draw_tokens(cfg, e->accept_p, &r->rng);
			if (k > 0) {
				e->spec_drafts_total++;
				e->spec_draft_tokens_total += (uint64_t)k;
				r->spec_verify_ct++;
			}
		}
		int left = r->target_tokens - r->generated;
		if (n > left)
			n = left;
		if (r->step_decode && k > 0 && n > 0)
			e->spec_accepted_total += (uint64_t)(n - 1);
		rec.tokens = (uint32_t)n;
		sim_req_add_step(r, &rec);
		const char *reason = NULL;
		if (n > 0) {
			int done = r->generated + n >= r->target_tokens;
			int eos = done && !r->ignore_eos && r->target_tokens < r->max_tokens;
			sample_ids(cfg, r, ids, n, eos);
			e->generation_tokens_total += (uint64_t)n;
			if (done) {
				reason = eos ? "stop" : "length";
				list_remove(&e->running, r);
				r->state = SIM_REQ_DONE;
			}
			sim_stream_emit(srv, r, ids, n, reason); /* may free r */
		}
	}
	uint64_t after = ls_now_ns();
	/* Next planned start = this planned end, unless the loop fell a whole step behind. */
	uint64_t base = e->step_deadline_ns;
	uint64_t step_ns = (uint64_t)(cfg->step_ms * 1e6);
	if (after > base + step_ns + 1000000)
		base = after;
	e->step_active = 0;
	start_step(srv, after, base);
}
