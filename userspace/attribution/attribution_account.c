/* attribution_account.c — the engine's own account of a request (its fields: queue, prefill)
 * against the server's kernel stamps (docs/engine.md, "The engine's account against the
 * kernel's"). The server's read of the request -> its write of the first token must hold the
 * engine's queue + prefill: what is left is server time the engine does not count (its
 * frontend, writing, and the slot wait of an engine that gives no queue); an account longer
 * than the interval means the engine's clock, or what its fields measure, is not the kernel's. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "attribution/attribution_int.h"
#include "base/stats.h"
#include "metrics/metrics.h"

struct tally {
	double *inside, *server, *gap, *prefill_diff;
	size_t n, n_steps;
};

/* Request i into t when it has both an account and the server's interval. */
static void one(const struct ls_request *r, const struct ls_req_attr *ra, const struct ls_read_rules *rules,
		struct ls_attr_engine_account *o, struct tally *t)
{
	if (r->warmup || r->fail != LS_OK || !ls_engine_has(r, LS_ENGINE_PREFILL) || !ra->server_read_ns)
		return;
	int f = ls_attr_first_token_frame(r, rules);
	if (f < 0 || (uint32_t)f >= ra->n_frames)
		return;
	uint64_t write = ra->frames[f].server_write_ns;
	if (!write || write < ra->server_read_ns)
		return;
	int queue = ls_engine_has(r, LS_ENGINE_QUEUE);
	uint64_t inside = r->engine_prompt_ns + (queue ? r->engine_queue_ns : 0), server = write - ra->server_read_ns;
	o->has_queue &= queue;
	t->inside[t->n] = (double)inside / 1e6;
	t->server[t->n] = (double)server / 1e6;
	t->gap[t->n] = server > inside ? (double)(server - inside) / 1e6 : 0.0;
	if (inside > server + LS_ATTR_ACCOUNT_SLACK_NS) {
		o->over++;
		double by = (double)(inside - server) / 1e6;
		o->worst_over_ms = by > o->worst_over_ms ? by : o->worst_over_ms;
	}
	t->n++;
	if (ra->engine.flags & LS_ENG_MAPPED)
		t->prefill_diff[t->n_steps++] = ((double)r->engine_prompt_ns - (double)ra->engine.prefill_ns) / 1e6;
}

static double p(double *v, size_t n, double pct)
{
	ls_sort_doubles(v, n);
	return ls_percentile(v, n, pct);
}

int ls_attr_engine_account(const struct ls_run *run, struct ls_attribution *a)
{
	struct ls_attr_engine_account *o = &a->account;
	size_t cap = run->n_requests + 1;
	struct tally t = { malloc(cap * sizeof(double)), malloc(cap * sizeof(double)), malloc(cap * sizeof(double)),
			   malloc(cap * sizeof(double)), 0, 0 };
	int err = 0;

	memset(o, 0, sizeof(*o));
	o->has_queue = 1;
	if (!t.inside || !t.server || !t.gap || !t.prefill_diff) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < run->n_requests && i < a->n; i++)
		one(&run->requests[i], &a->req[i], &a->rules, o, &t);
	o->n = t.n;
	o->n_steps = t.n_steps;
	if (!t.n) {
		o->has_queue = 0;
		goto out;
	}
	o->inside_p50_ms = p(t.inside, t.n, 50);
	o->server_p50_ms = p(t.server, t.n, 50);
	o->not_counted_p50_ms = p(t.gap, t.n, 50);
	o->not_counted_p99_ms = ls_percentile(t.gap, t.n, 99);
	o->prefill_minus_steps_p50_ms = t.n_steps ? p(t.prefill_diff, t.n_steps, 50) : 0.0;
out:
	free(t.inside);
	free(t.server);
	free(t.gap);
	free(t.prefill_diff);
	return err;
}
