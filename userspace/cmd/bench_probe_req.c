/* bench_probe_req.c — see bench_probe_req.h. vLLM's probe_input is the test request with
 * prompt "Hi", prompt_len 1, output_len 1 and no multimodal content or chat messages; it keeps
 * the run's model, logprobs, ignore_eos, extra body and headers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/bench_probe_req.h"
#include "cmd/bench_peer.h"
#include "driver/backend.h"
#include "base/rng.h"

int ls_probe_reqs_init(struct ls_probe_reqs *pr, const struct ls_config *c, const char *model, uint64_t first_id)
{
	memset(pr, 0, sizeof(*pr));
	pr->first_id = first_id;
	char text[] = "Hi";
	struct ls_prompt p = { .text = text, .prompt_len = 1, .output_len = 1, .timestamp_s = -1 };
	pr->body = ls_backend_body(c->profile.send.backend, model, &p, c->profile.send.ignore_eos, &pr->body_len);
	if (!pr->body) {
		fprintf(stderr, "latscope bench: cannot build the probe request's body: %s\n", strerror(errno));
		return -ENOMEM;
	}
	uint64_t rng[2]; /* the warmup's LoRA pick: vLLM's probe keeps the run's model */
	ls_rng_seed(rng, c->seed);
	return ls_bench_peer_body(c, 0, 1, rng, &pr->body, &pr->body_len);
}

/* The driver's probe_job: a fresh record for the next probe, NULL past LS_PROBE_REQ_MAX. */
static struct ls_driver_job *next_probe(void *ctx)
{
	struct ls_probe_reqs *pr = ctx;
	if (pr->n == LS_PROBE_REQ_MAX)
		return NULL;
	if (pr->n == pr->cap) {
		size_t cap = pr->cap ? pr->cap * 2 : 64;
		struct ls_request **recs = realloc(pr->recs, cap * sizeof(*recs));
		if (!recs)
			return NULL;
		pr->recs = recs;
		pr->cap = cap;
	}
	struct ls_request *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	ls_request_reset(r, pr->first_id + pr->n);
	r->prompt_len = 1;
	r->output_len = 1;
	pr->recs[pr->n++] = r;
	pr->job = (struct ls_driver_job){ .body = pr->body, .body_len = pr->body_len, .rec = r };
	return &pr->job;
}

void ls_probe_reqs_driver(struct ls_probe_reqs *pr, const struct ls_config *c, struct ls_driver_opts *o)
{
	double rate = c->peer.probe_request_rate;
	if (!pr->body || !(rate > 0))
		return;
	o->probe_interval_ns = (uint64_t)(1e9 / rate); /* vLLM: asyncio.sleep(1 / probe_request_rate) */
	o->probe_job = next_probe;
	o->probe_ctx = pr;
}

int ls_probe_reqs_split(const struct ls_probe_reqs *pr, const struct ls_evstore *events,
			const struct ls_read_rules *rules, struct ls_attribution **attr,
			double mean_ms[LS_PART__COUNT], size_t *n_split)
{
	*attr = NULL;
	*n_split = 0;
	memset(mean_ms, 0, LS_PART__COUNT * sizeof(double));
	if (!events || !pr->n)
		return 0;
	/* The probes as a run of their own (copies that share the frames: not freed here). */
	struct ls_run probes = { .requests = malloc(pr->n * sizeof(struct ls_request)), .n_requests = pr->n };
	if (!probes.requests)
		return -ENOMEM;
	for (size_t i = 0; i < pr->n; i++)
		probes.requests[i] = *pr->recs[i];
	probes.start_ns = probes.requests[0].scheduled_ns;
	*attr = ls_attribute(&probes, events, NULL, 0, rules, NULL);
	free(probes.requests);
	if (!*attr)
		return -ENOMEM;
	for (size_t i = 0; i < (*attr)->n; i++) {
		const struct ls_req_attr *a = &(*attr)->req[i];
		if (a->flags & (LS_ATTR_NOT_OK | LS_ATTR_NO_EVENTS))
			continue;
		for (int k = 0; k < LS_PART__COUNT; k++)
			mean_ms[k] += (double)a->ttft.ns[k] / 1e6;
		(*n_split)++;
	}
	for (int k = 0; *n_split && k < LS_PART__COUNT; k++)
		mean_ms[k] /= (double)*n_split;
	return 0;
}

void ls_probe_reqs_free(struct ls_probe_reqs *pr)
{
	for (size_t i = 0; i < pr->n; i++) {
		ls_request_free(pr->recs[i]);
		free(pr->recs[i]);
	}
	free(pr->recs);
	free(pr->body);
	memset(pr, 0, sizeof(*pr));
}
