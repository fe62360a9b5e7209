/* attribution_file.c — reads back the attribution JSONL that `latscope bench` writes beside
 * --record (bench_probes.c: a header, then ls_attribution_request_json per request), so that
 * `latscope report --html` draws a recorded run's parts as bench would have. Only what the page
 * and the summaries read is restored: flags, the TTFT / gap / E2EL parts, the frames'
 * kernel stamps and each request's engine session (uprobe steps). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/report.h"

static uint64_t u64_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) && v->valuedouble > 0 ? (uint64_t)v->valuedouble : 0;
}

/* {"total_ns":..,"client_ns":..,...} -> parts; returns total_ns. */
static uint64_t parts_of(const cJSON *o, struct ls_parts *p)
{
	char key[48];
	for (int part = 0; part < LS_PART__COUNT; part++) {
		snprintf(key, sizeof(key), "%s_ns", ls_part_name((enum ls_part)part));
		p->ns[part] = u64_of(o, key);
	}
	return u64_of(o, "total_ns");
}

static int gaps_of(const cJSON *itl, struct ls_req_attr *r)
{
	int n = cJSON_GetArraySize(itl);
	if (n <= 0)
		return 0;
	r->gap_ns = calloc((size_t)n, sizeof(*r->gap_ns));
	r->gap_frame = calloc((size_t)n, sizeof(*r->gap_frame));
	r->gaps = calloc((size_t)n, sizeof(*r->gaps));
	if (!r->gap_ns || !r->gap_frame || !r->gaps)
		return -ENOMEM;
	const cJSON *g;
	cJSON_ArrayForEach(g, itl) {
		r->gap_ns[r->n_gaps] = parts_of(g, &r->gaps[r->n_gaps]);
		r->gap_frame[r->n_gaps] = (uint32_t)u64_of(g, "frame");
		r->n_gaps++;
	}
	return 0;
}

static int frames_of(const cJSON *frames, struct ls_req_attr *r)
{
	int n = cJSON_GetArraySize(frames);
	if (n <= 0)
		return 0;
	if (!(r->frames = calloc((size_t)n, sizeof(*r->frames))))
		return -ENOMEM;
	const cJSON *f;
	cJSON_ArrayForEach(f, frames) {
		const cJSON *v[3] = { cJSON_GetArrayItem(f, 0), cJSON_GetArrayItem(f, 1), cJSON_GetArrayItem(f, 2) };
		struct ls_frame_attr *fa = &r->frames[r->n_frames++];
		fa->server_write_ns = cJSON_IsNumber(v[0]) ? (uint64_t)v[0]->valuedouble : 0;
		fa->kernel_ns = cJSON_IsNumber(v[1]) ? (uint64_t)v[1]->valuedouble : 0;
		fa->read_ns = cJSON_IsNumber(v[2]) ? (uint64_t)v[2]->valuedouble : 0;
	}
	return 0;
}

/* "engine": the request's session of uprobe steps, when one was joined to it. */
static void engine_of(const cJSON *e, struct ls_req_attr *r)
{
	const cJSON *f, *seq = cJSON_GetObjectItemCaseSensitive(e, "seq");
	struct ls_req_engine *g = &r->engine;

	if (!cJSON_IsObject(e))
		return;
	cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(e, "flags"))
		for (unsigned b = 0; cJSON_IsString(f) && ls_eng_flag_name(b); b++)
			if (!strcmp(f->valuestring, ls_eng_flag_name(b)))
				g->flags |= 1u << b;
	g->seq = cJSON_IsNumber(seq) ? (int32_t)seq->valuedouble : 0;
	g->prompt_tokens = (uint32_t)u64_of(e, "prompt_tokens");
	g->prefill_steps = (uint32_t)u64_of(e, "prefill_steps");
	g->decode_steps = (uint32_t)u64_of(e, "decode_steps");
	g->first_step_ns = u64_of(e, "first_step_ns");
	g->frontend_ns = u64_of(e, "frontend_ns");
	g->tokenize_calls = (uint32_t)u64_of(e, "tokenize_calls");
	g->posted = (uint32_t)u64_of(e, "posted");
	g->queue_ns = u64_of(e, "queue_ns");
	g->prefill_ns = u64_of(e, "prefill_ns");
	g->decode_ns = u64_of(e, "decode_ns");
	g->prefill_steps_ns = u64_of(e, "prefill_steps_ns");
	g->decode_steps_ns = u64_of(e, "decode_steps_ns");
}

/* One request's line into r. 0 or -ENOMEM. */
static int request_of(const cJSON *o, struct ls_req_attr *r)
{
	const cJSON *f, *k = cJSON_GetObjectItemCaseSensitive(o, "kernel");
	r->flags = 0;
	cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(o, "flags"))
		for (unsigned b = 0; cJSON_IsString(f) && ls_attr_flag_name(b); b++)
			if (!strcmp(f->valuestring, ls_attr_flag_name(b)))
				r->flags |= 1u << b;
	r->ttft_ns = parts_of(cJSON_GetObjectItemCaseSensitive(o, "ttft"), &r->ttft);
	r->e2el_ns = parts_of(cJSON_GetObjectItemCaseSensitive(o, "e2el"), &r->e2el);
	r->client_cookie = u64_of(k, "client_cookie");
	r->server_cookie = u64_of(k, "server_cookie");
	r->connect_call_ns = u64_of(k, "connect_call_ns");
	r->established_ns = u64_of(k, "established_ns");
	engine_of(cJSON_GetObjectItemCaseSensitive(o, "engine"), r);
	if (gaps_of(cJSON_GetObjectItemCaseSensitive(o, "itl"), r) ||
	    frames_of(cJSON_GetObjectItemCaseSensitive(k, "frames"), r))
		return -ENOMEM;
	return 0;
}

/* run's index of each request id (ids are small: measured 0..n-1, warmups after them). */
static size_t *index_by_id(const struct ls_run *run, size_t *cap)
{
	uint64_t max = 0;
	for (size_t i = 0; i < run->n_requests; i++)
		max = run->requests[i].id > max ? run->requests[i].id : max;
	*cap = max < 16 * (uint64_t)run->n_requests + 1024 ? (size_t)max + 1 : 0;
	size_t *idx = *cap ? malloc(*cap * sizeof(*idx)) : NULL;
	for (size_t i = 0; idx && i < *cap; i++)
		idx[i] = SIZE_MAX;
	for (size_t i = 0; idx && i < run->n_requests; i++)
		idx[run->requests[i].id] = i;
	return idx;
}

static void header_of(const cJSON *o, struct ls_attribution *a)
{
	const cJSON *why = cJSON_GetObjectItemCaseSensitive(o, "why");
	if (cJSON_IsString(why))
		snprintf(a->why, sizeof(a->why), "%s", why->valuestring);
	a->lost_events = u64_of(o, "lost_events");
}

/* What the requests' flags and parts say the probes saw. */
static void summarise(struct ls_attribution *a)
{
	for (size_t i = 0; i < a->n; i++) {
		const struct ls_req_attr *r = &a->req[i];
		if (r->flags & (LS_ATTR_WARMUP | LS_ATTR_NOT_OK))
			continue;
		a->have_client |= !(r->flags & LS_ATTR_NO_EVENTS);
		a->have_server |= !(r->flags & (LS_ATTR_NO_EVENTS | LS_ATTR_NO_SERVER));
		a->have_gpu |= r->ttft.ns[LS_PART_GPU] || r->e2el.ns[LS_PART_GPU] || r->ttft.ns[LS_PART_QUEUE];
		a->n_lost_requests += (r->flags & LS_ATTR_LOST_EVENTS) != 0;
		if (r->engine.flags & LS_ENG_MAPPED) {
			a->have_engine = 1;
			a->engine.mapped++;
			a->engine.uncertain += (r->engine.flags & LS_ENG_UNCERTAIN) != 0;
			a->engine.twins += (r->engine.flags & LS_ENG_TWIN) != 0;
			a->engine.split += (r->engine.flags & LS_ENG_SPLIT) != 0;
			a->engine.counts_differ += (r->engine.flags & LS_ENG_COUNTS_DIFFER) != 0;
			a->engine.no_frontend += (r->engine.flags & LS_ENG_NO_FRONTEND) != 0;
			a->engine.frontend += !(r->engine.flags & LS_ENG_NO_FRONTEND);
		}
	}
}

/* Reads the lines of f into a. 0, or -errno after a message naming path:line. */
static int read_lines(FILE *f, const char *path, const struct ls_run *run, struct ls_attribution *a)
{
	size_t cap_idx, *idx = index_by_id(run, &cap_idx), lineno = 0, len = 0;
	char *line = NULL;
	int err = 0;
	while (!err && getline(&line, &len, f) > 0) {
		cJSON *o = cJSON_Parse(line);
		lineno++;
		if (!o) {
			fprintf(stderr, "latscope report: %s:%zu: not a JSON line of an attribution file\n", path, lineno);
			err = -EINVAL;
		} else if (lineno == 1) {
			if (!cJSON_GetObjectItemCaseSensitive(o, "latscope_attribution")) {
				fprintf(stderr, "latscope report: %s: no latscope_attribution header on line 1\n", path);
				err = -EINVAL;
			}
			header_of(o, a);
		} else {
			uint64_t id = u64_of(o, "id");
			size_t i = SIZE_MAX;
			if (idx && id < cap_idx)
				i = idx[id];
			for (size_t k = 0; !idx && k < run->n_requests && i == SIZE_MAX; k++)
				i = run->requests[k].id == id ? k : SIZE_MAX;
			if (i != SIZE_MAX && !a->req[i].id && !a->req[i].flags) /* first line of that id wins */
				err = request_of(o, &a->req[i]);
			if (i != SIZE_MAX)
				a->req[i].id = id + 1; /* marks it read; set right below */
		}
		cJSON_Delete(o);
	}
	free(line);
	free(idx);
	return err;
}

struct ls_attribution *ls_attribution_load(const char *path, const struct ls_run *run, const struct ls_read_rules *rules)
{
	FILE *f = fopen(path, "r");
	struct ls_attribution *a;
	if (!f)
		return NULL; /* errno says why; ENOENT: the run had no probes */
	a = calloc(1, sizeof(*a));
	if (a && !(a->req = calloc(run->n_requests ? run->n_requests : 1, sizeof(*a->req)))) {
		free(a);
		a = NULL;
	}
	if (!a) {
		fclose(f);
		fprintf(stderr, "latscope report: out of memory reading %s\n", path);
		errno = ENOMEM;
		return NULL;
	}
	a->n = run->n_requests;
	a->rules = *rules;
	int err = read_lines(f, path, run, a);
	fclose(f);
	for (size_t i = 0; i < a->n; i++) {
		if (!a->req[i].id && !a->req[i].flags) /* no line: nothing the probes saw */
			a->req[i].flags = LS_ATTR_NO_EVENTS | LS_ATTR_NOT_OK;
		a->req[i].id = run->requests[i].id;
	}
	summarise(a);
	if (err) {
		ls_attribution_free(a);
		errno = -err;
		return NULL;
	}
	return a;
}
