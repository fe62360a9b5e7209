/* plan.c — see plan.h. A share travels as plain structs and bytes: every rank runs the same
 * build on the same architecture (ARCHITECTURE.md, "More than one process"). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "driver/plan.h"

struct share_head {
	uint64_t n_warmup, n_local;
	int32_t  arrival, has_offsets;
	uint32_t model_len, reserved;
	double   rate;
	uint64_t loop_delay_ns;
	char     run_tag[32];
};

struct job_item {
	uint64_t id, offset_ns, body_len, key_len;
	int32_t  warmup;
	uint32_t prompt_len, output_len, reserved;
};

int ls_plan_alloc(struct ls_plan *p, size_t n_warmup, size_t n_measured, struct ls_run *run)
{
	size_t n = n_warmup + n_measured;
	p->jobs = calloc(n ? n : 1, sizeof(*p->jobs));
	run->requests = calloc(n ? n : 1, sizeof(*run->requests));
	if (!p->jobs || !run->requests) {
		free(p->jobs);
		free(run->requests);
		p->jobs = NULL;
		run->requests = NULL;
		return -ENOMEM;
	}
	p->n_warmup = n_warmup;
	p->n_measured = n_measured;
	run->n_requests = n;
	run->n_warmup = n_warmup;
	for (size_t i = 0; i < n; i++) {
		ls_request_reset(&run->requests[i], i);
		run->requests[i].warmup = i < n_warmup;
		p->jobs[i].rec = &run->requests[i];
	}
	return 0;
}

void ls_plan_free(struct ls_plan *p)
{
	for (size_t i = 0; p->jobs && i < p->n_warmup + p->n_measured; i++) {
		free((char *)p->jobs[i].body);
		free((char *)p->jobs[i].route_key);
	}
	free(p->jobs);
	if (p->have_arrival)
		ls_arrival_free(&p->arrival);
	free(p->model);
	memset(p, 0, sizeof(*p));
}

/* Measured jobs of rank k: i = k, k + n, k + 2n, ... below total. */
static size_t local_count(int k, int n, size_t total)
{
	return (size_t)k < total ? (total - (size_t)k + (size_t)n - 1) / (size_t)n : 0;
}

static int put_job(struct ls_strbuf *b, const struct ls_driver_job *j, uint64_t offset_ns)
{
	size_t key_len = j->route_key ? strlen(j->route_key) : 0;
	struct job_item it = { .id = j->rec->id, .offset_ns = offset_ns, .body_len = j->body_len,
			       .key_len = key_len, .warmup = j->rec->warmup, .prompt_len = j->rec->prompt_len,
			       .output_len = j->rec->output_len };
	return ls_strbuf_append(b, &it, sizeof(it)) || ls_strbuf_append(b, j->body, j->body_len) ||
	       ls_strbuf_append(b, j->route_key ? j->route_key : "", key_len) ? -ENOMEM : 0;
}

int ls_plan_pack_share(const struct ls_plan *p, int k, int n, struct ls_strbuf *b)
{
	const char *model = p->model ? p->model : "";
	const uint64_t *off = p->arrival.offsets_ns;
	struct share_head h = { .n_warmup = p->n_warmup, .n_local = local_count(k, n, p->n_measured),
				.arrival = (int32_t)p->arrival.kind, .has_offsets = off != NULL,
				.model_len = (uint32_t)strlen(model), .rate = p->arrival.rate,
				.loop_delay_ns = p->arrival.loop_delay_ns };
	memcpy(h.run_tag, p->run_tag, sizeof(h.run_tag));
	int err = ls_strbuf_append(b, &h, sizeof(h)) || ls_strbuf_append(b, model, h.model_len) ? -ENOMEM : 0;
	for (size_t i = 0; !err && i < p->n_warmup; i++)
		err = put_job(b, &p->jobs[i], 0);
	for (size_t i = (size_t)k; !err && i < p->n_measured; i += (size_t)n)
		err = put_job(b, &p->jobs[p->n_warmup + i], off ? off[i] : 0);
	return err;
}

/* n bytes at *at as a new string (NUL after it), *at moved past them. NULL: ENOMEM or cut. */
static char *take_bytes(const char **at, const char *end, uint64_t n, int *err)
{
	if ((uint64_t)(end - *at) < n) {
		*err = -EPROTO;
		return NULL;
	}
	char *s = malloc(n + 1);
	if (!s) {
		*err = -ENOMEM;
		return NULL;
	}
	memcpy(s, *at, n);
	s[n] = 0;
	*at += n;
	return s;
}

/* One job of a share into job i of p (and its record). 0, -EPROTO or -ENOMEM. */
static int take_job(const char **at, const char *end, struct ls_plan *p, size_t i)
{
	struct job_item it;
	int err = 0;
	if ((size_t)(end - *at) < sizeof(it))
		return -EPROTO;
	memcpy(&it, *at, sizeof(it));
	*at += sizeof(it);
	struct ls_driver_job *j = &p->jobs[i];
	if (!(j->body = take_bytes(at, end, it.body_len, &err)))
		return err;
	j->body_len = it.body_len;
	char *key = take_bytes(at, end, it.key_len, &err);
	if (!key)
		return err;
	if (it.key_len)
		j->route_key = key;
	else
		free(key);
	struct ls_request *r = j->rec;
	ls_request_reset(r, it.id);
	r->warmup = it.warmup;
	r->prompt_len = it.prompt_len;
	r->output_len = it.output_len;
	if (p->arrival.offsets_ns && !it.warmup)
		p->arrival.offsets_ns[i - p->n_warmup] = it.offset_ns;
	return 0;
}

int ls_plan_unpack_share(const char *buf, size_t len, struct ls_plan *p, struct ls_run *run)
{
	struct share_head h;
	const char *at = buf + sizeof(h), *end = buf + len;
	if (len < sizeof(h))
		return -EPROTO;
	memcpy(&h, buf, sizeof(h));
	if ((size_t)(end - at) < h.model_len || h.n_warmup > len || h.n_local > len)
		return -EPROTO;
	int err = 0;
	char *model = take_bytes(&at, end, h.model_len, &err);
	if (!model || ls_plan_alloc(p, h.n_warmup, h.n_local, run)) {
		free(model);
		return err ? err : -ENOMEM;
	}
	if (model[0]) {
		p->model = model;
	} else {
		free(model);
		p->model = NULL;
	}
	memcpy(p->run_tag, h.run_tag, sizeof(p->run_tag));
	p->run_tag[sizeof(p->run_tag) - 1] = 0;
	memset(&p->arrival, 0, sizeof(p->arrival));
	p->arrival.kind = (enum ls_arrival_kind)h.arrival;
	p->arrival.n = h.n_local;
	p->arrival.rate = h.rate;
	p->arrival.loop_delay_ns = h.loop_delay_ns;
	p->have_arrival = 1; /* ls_arrival_free frees the offsets */
	if (h.has_offsets && !(p->arrival.offsets_ns = calloc(h.n_local ? h.n_local : 1, sizeof(uint64_t))))
		return -ENOMEM;
	for (size_t i = 0; !err && i < h.n_warmup + h.n_local; i++)
		err = take_job(&at, end, p, i);
	return err;
}

int ls_plan_keep_share(struct ls_plan *p, struct ls_run *run, int k, int n)
{
	size_t nw = p->n_warmup, nm = p->n_measured, nl = local_count(k, n, nm), total = nw + nl;
	struct ls_request *reqs = calloc(total ? total : 1, sizeof(*reqs));
	struct ls_driver_job *jobs = calloc(total ? total : 1, sizeof(*jobs));
	uint64_t *off = p->arrival.offsets_ns ? calloc(nl ? nl : 1, sizeof(*off)) : NULL;
	if (!reqs || !jobs || (p->arrival.offsets_ns && !off)) {
		free(reqs), free(jobs), free(off);
		return -ENOMEM;
	}
	for (size_t i = 0, j = 0; i < nw + nm; i++) {
		if (i >= nw && (i - nw) % (size_t)n != (size_t)k) {
			free((char *)p->jobs[i].body);
			free((char *)p->jobs[i].route_key);
			ls_request_free(&run->requests[i]);
			continue;
		}
		reqs[j] = run->requests[i];
		jobs[j] = p->jobs[i];
		jobs[j].rec = &reqs[j];
		if (off && i >= nw)
			off[j - nw] = p->arrival.offsets_ns[i - nw];
		j++;
	}
	free(run->requests);
	free(p->jobs);
	run->requests = reqs;
	run->n_requests = total;
	p->jobs = jobs;
	p->n_measured = nl;
	if (off) {
		free(p->arrival.offsets_ns);
		p->arrival.offsets_ns = off;
	}
	p->arrival.n = nl;
	return 0;
}
