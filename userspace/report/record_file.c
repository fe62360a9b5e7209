/* record_file.c — see record_file.h. Lines are formatted by hand (exact integers, no per-frame
 * allocation) and read back with cJSON. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/clock.h"
#include "base/numconv.h"
#include "base/record_fields.h"
#include "base/strbuf.h"
#include "report/record_file.h"

struct ls_record_writer {
	int      fd;
	char    *path;
	uint64_t base_ns;
	struct ls_strbuf line; /* kept from line to line: one allocation for the run */
	int      failed;   /* a write already failed and was reported */
	uint64_t lines;
	struct ls_clock_fit clock; /* an MPI rank's file: its run_end line records the second sample */
	int      mpi;
	struct ls_spec_stats spec; /* the run_end line's spec-decode counters */
	const struct ls_gauge_series *gauges; /* the run_end line's /metrics series, NULL none */
};

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Ends the line built in b (built_rc: what building it returned) and writes it whole. */
static int emit(struct ls_record_writer *w, struct ls_strbuf *b, int built_rc)
{
	if (built_rc || ls_strbuf_append(b, "\n", 1))
		return -ENOMEM;
	int err = write_all(w->fd, b->data, b->len);
	if (err && !w->failed) {
		w->failed = 1;
		fprintf(stderr, "latscope: writing record file %s failed: %s (requests from here on may be "
				"missing from it)\n", w->path, strerror(-err));
	}
	if (!err)
		w->lines++;
	return err;
}

/* ---- the header's and run_end line's own tables (the request's are base/record_fields.h) ---- */

#define META(field, key, k, ...) \
	{ .name = key, .kind = k, .offset = offsetof(struct ls_record_meta, field), \
	  .size = sizeof(((struct ls_record_meta *)0)->field), __VA_ARGS__ }

/* What the run was: the report's labels and the rules it was read with. */
static const struct ls_field meta_fields[] = {
	META(run_tag, "run_tag", LS_FK_TEXT),
	META(target_rate, "target_rate", LS_FK_DOUBLE),
	META(max_concurrency, "max_concurrency", LS_FK_U32, .hi = UINT32_MAX),
	META(arrival, "arrival", LS_FK_TEXT),
	META(profile, "profile", LS_FK_TEXT),
	META(backend, "backend", LS_FK_TEXT),
	META(arrival_desc, "arrival_desc", LS_FK_TEXT),
	META(profile_source, "profile_source", LS_FK_TEXT),
	META(model, "model", LS_FK_TEXT),
	META(base_url, "base_url", LS_FK_TEXT),
	META(endpoint, "endpoint", LS_FK_TEXT),
	META(dataset, "dataset", LS_FK_TEXT),
	META(date, "date", LS_FK_TEXT),
	META(connection, "connection", LS_FK_TEXT),
	META(request_rate, "request_rate", LS_FK_DOUBLE),
	META(burstiness, "burstiness", LS_FK_DOUBLE),
	META(percentile_metrics, "percentile_metrics", LS_FK_U32, .hi = UINT32_MAX),
	META(percentiles, "percentiles", LS_FK_TEXT),
	META(goodput.has_ttft, "goodput_has_ttft", LS_FK_INT, .hi = 1),
	META(goodput.has_tpot, "goodput_has_tpot", LS_FK_INT, .hi = 1),
	META(goodput.has_e2el, "goodput_has_e2el", LS_FK_INT, .hi = 1),
	META(goodput.ttft_ms, "goodput_ttft_ms", LS_FK_DOUBLE),
	META(goodput.tpot_ms, "goodput_tpot_ms", LS_FK_DOUBLE),
	META(goodput.e2el_ms, "goodput_e2el_ms", LS_FK_DOUBLE),
};
#define N_META (sizeof(meta_fields) / sizeof(meta_fields[0]))

/* An MPI run's fields: which rank (-1: merged), of how many, its start instant. */
static const struct ls_field mpi_fields[] = {
	META(mpi_rank, "mpi_rank", LS_FK_INT, .lo = -1, .hi = INT32_MAX, .dflt = -1),
	META(mpi_size, "mpi_size", LS_FK_INT, .hi = INT32_MAX),
	META(run_start_ns, "run_start_ns", LS_FK_STAMP),
};
#define N_MPI (sizeof(mpi_fields) / sizeof(mpi_fields[0]))

/* The run_end line: the server's spec-decode counters over the run (per-position rates beside). */
#define SPEC(field, key, k, ...) \
	{ .name = key, .kind = k, .offset = offsetof(struct ls_spec_stats, field), \
	  .size = sizeof(((struct ls_spec_stats *)0)->field), __VA_ARGS__ }
static const struct ls_field spec_fields[] = {
	SPEC(has, "spec_has", LS_FK_INT, .hi = 1),
	SPEC(drafts, "spec_drafts", LS_FK_U64),
	SPEC(draft_tokens, "spec_draft_tokens", LS_FK_U64),
	SPEC(accepted, "spec_accepted", LS_FK_U64),
	SPEC(acceptance_rate_pct, "spec_acceptance_rate_pct", LS_FK_DOUBLE),
	SPEC(acceptance_length, "spec_acceptance_length", LS_FK_DOUBLE),
	SPEC(n_pos, "spec_n_pos", LS_FK_INT, .hi = LS_SPEC_MAX_POS),
	SPEC(has_avg, "spec_has_avg", LS_FK_INT, .hi = 1),
	SPEC(avg_accept_len, "spec_avg_accept_len", LS_FK_DOUBLE),
};
#define N_SPEC (sizeof(spec_fields) / sizeof(spec_fields[0]))

/* ,"clock":{"offset_ns":N,"unc_ns":N,"at_ns":"N"} (or "clock_after" from the *_after fields):
 * at_ns is absolute, in rank 0's clock. */
static int put_clock(struct ls_strbuf *b, const char *key, int64_t off, uint64_t unc, uint64_t at)
{
	return ls_strbuf_printf(b, ",\"%s\":{\"offset_ns\":%" PRId64 ",\"unc_ns\":%" PRIu64 ",\"at_ns\":\"%" PRIu64
				"\"}", key, off, unc, at);
}

static int put_header(struct ls_strbuf *b, const struct ls_record_meta *meta, uint64_t base)
{
	int rc = ls_strbuf_printf(b, "{\"latscope_record\":%d,\"base_ns\":\"%" PRIu64 "\",\"stamps\":\"ns after "
				  "base_ns, 0 = did not happen\",\"frame_fields\":", LS_RECORD_VERSION, base);
	rc |= ls_frame_field_names(b);
	if (meta) {
		rc |= ls_fields_put(b, meta_fields, N_META, meta, base, 0);
		const char *rq = meta->request_json ? meta->request_json : meta->request[0] ? meta->request : NULL;
		if (rq) { /* sampling parameters, headers by name (values redacted) */
			rc |= ls_strbuf_puts(b, ",\"request\":");
			rc |= ls_strbuf_puts(b, rq);
		}
		if (meta->mpi_size > 0)
			rc |= ls_fields_put(b, mpi_fields, N_MPI, meta, base, 0);
		if (meta->mpi_size > 0 && meta->mpi_rank >= 0)
			rc |= put_clock(b, "clock", meta->clock.offset_ns, meta->clock.unc_ns, meta->clock.at_ns);
	}
	return rc | ls_strbuf_puts(b, "}");
}

struct ls_record_writer *ls_record_open(const char *path, const struct ls_record_meta *meta)
{
	struct ls_record_writer *w = calloc(1, sizeof(*w));
	if (!w || !(w->path = strdup(path))) {
		free(w);
		fprintf(stderr, "latscope: out of memory opening %s\n", path);
		return NULL;
	}
	/* O_APPEND: each line is one write at the end, whole, even if someone else appends. */
	w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
	if (w->fd < 0) {
		fprintf(stderr, "latscope: cannot create record file %s: %s\n", path, strerror(errno));
		free(w->path);
		free(w);
		return NULL;
	}
	w->base_ns = meta && meta->base_ns ? meta->base_ns : ls_now_ns() - 1000000;
	if (meta) {
		w->clock = meta->clock;
		w->mpi = meta->mpi_size > 0 && meta->mpi_rank >= 0;
	}
	struct ls_strbuf b = { 0 };
	int err = emit(w, &b, put_header(&b, meta, w->base_ns));
	ls_strbuf_free(&b);
	if (err) {
		close(w->fd);
		free(w->path);
		free(w);
		return NULL;
	}
	return w;
}

/* ,"frames":[[...],...] in ls_frame_fields' order. */
static int put_frames(struct ls_strbuf *b, const struct ls_request *r, uint64_t base)
{
	int rc = ls_strbuf_puts(b, ",\"frames\":[");
	for (uint32_t i = 0; i < r->n_frames && !rc; i++)
		rc = (i && ls_strbuf_append(b, ",", 1)) || ls_frame_put(b, &r->frames[i], base) ? -ENOMEM : 0;
	return rc | ls_strbuf_puts(b, "]");
}

int ls_record_write(struct ls_record_writer *w, const struct ls_request *r)
{
	if (!w)
		return -EINVAL;
	struct ls_strbuf *b = &w->line;
	b->len = 0;
	int rc = ls_strbuf_puts(b, "{");
	rc |= ls_fields_put(b, ls_request_fields, ls_n_request_fields, r, w->base_ns, 1);
	rc |= put_frames(b, r, w->base_ns);
	rc |= ls_strbuf_puts(b, "}");
	return emit(w, b, rc ? -ENOMEM : 0);
}

int ls_record_write_late(struct ls_record_writer *w, const struct ls_request *r)
{
	if (!w)
		return -EINVAL;
	struct ls_strbuf *b = &w->line;
	b->len = 0;
	int rc = ls_strbuf_printf(b, "{\"latscope_engine\":1,\"id\":%" PRIu64 ",\"warmup\":%d", r->id, r->warmup != 0);
	rc |= ls_request_late_put(b, r);
	rc |= ls_strbuf_puts(b, "}");
	return emit(w, b, rc ? -ENOMEM : 0);
}

void ls_record_set_clock(struct ls_record_writer *w, const struct ls_clock_fit *fit)
{
	if (w && fit)
		w->clock = *fit;
}

void ls_record_set_spec(struct ls_record_writer *w, const struct ls_spec_stats *spec)
{
	if (w && spec)
		w->spec = *spec;
}

void ls_record_set_gauges(struct ls_record_writer *w, const struct ls_gauge_series *s)
{
	if (w)
		w->gauges = s;
}

void ls_record_meta_free(struct ls_record_meta *m)
{
	if (m)
		ls_gauge_series_free(&m->gauges);
}

/* ,"server_metrics":{engine, period, counts, first miss, "samples":[[start, arrived, running,
 * waiting, kv_use], ...]}: stamps in ns from base_ns (signed: a GET may start before it), a
 * gauge the server did not give is null. */
static int put_gauges(struct ls_strbuf *b, const struct ls_gauge_series *s, uint64_t base_ns)
{
	int rc = ls_strbuf_printf(b, ",\"server_metrics\":{\"engine\":\"%s\",\"period_ms\":%u,\"timeout_ms\":%u,"
				  "\"polls\":%" PRIu64 ",\"dropped\":%" PRIu64 ",\"cpu_ns\":%" PRIu64 ",\"missed\":{",
				  ls_gauge_engine_name(s->engine), s->period_ms, s->timeout_ms, s->n_polls, s->n_dropped,
				  s->cpu_ns);
	for (int m = 0; m < LS_GMISS__COUNT; m++)
		rc |= ls_strbuf_printf(b, "%s\"%s\":%" PRIu64, m ? "," : "", ls_gauge_miss_name(m), s->n_missed[m]);
	rc |= ls_strbuf_puts(b, "},\"first_miss\":");
	rc |= ls_strbuf_json_str(b, s->first_miss, strlen(s->first_miss));
	rc |= ls_strbuf_puts(b, ",\"samples\":[");
	for (size_t i = 0; i < s->n; i++) {
		const struct ls_gauge_sample *x = &s->samples[i];
		/* signed: a poll may start before base_ns (an MPI run's merged file counts from its start) */
		rc |= ls_strbuf_printf(b, "%s[%" PRId64 ",%" PRId64, i ? "," : "", (int64_t)(x->start_ns - base_ns),
				       (int64_t)(x->arrived_ns - base_ns));
		for (int g = 0; g < LS_GAUGE__COUNT; g++)
			rc |= isnan(x->v[g]) ? ls_strbuf_puts(b, ",null") : ls_strbuf_printf(b, ",%.17g", x->v[g]);
		rc |= ls_strbuf_puts(b, "]");
	}
	return rc | ls_strbuf_puts(b, "]}");
}

void ls_record_on_finish(void *ctx, const struct ls_request *req)
{
	ls_record_write(ctx, req);
}

/* {"latscope_run_end":1, every run field, the spec-decode counters, an MPI rank's clock_after}. */
static int put_run_end(struct ls_strbuf *b, const struct ls_record_writer *w, const struct ls_run *run)
{
	int rc = ls_strbuf_puts(b, "{\"latscope_run_end\":1");
	rc |= ls_fields_put(b, ls_run_fields, ls_n_run_fields, run, w->base_ns, 0);
	rc |= ls_fields_put(b, spec_fields, N_SPEC, &w->spec, w->base_ns, 0);
	rc |= ls_strbuf_puts(b, ",\"spec_per_pos_rate\":[");
	for (int i = 0; i < w->spec.n_pos && i < LS_SPEC_MAX_POS; i++)
		rc |= ls_strbuf_printf(b, "%s%.17g", i ? "," : "", w->spec.per_pos_rate[i]);
	rc |= ls_strbuf_puts(b, "]");
	if (w->gauges && w->gauges->on)
		rc |= put_gauges(b, w->gauges, w->base_ns);
	if (w->mpi && w->clock.have_after)
		rc |= put_clock(b, "clock_after", w->clock.offset_after_ns, w->clock.unc_after_ns, w->clock.after_at_ns);
	return rc | ls_strbuf_puts(b, "}");
}

int ls_record_close(struct ls_record_writer *w, const struct ls_run *run)
{
	if (!w)
		return 0;
	int err = 0;
	if (run) {
		struct ls_strbuf b = { 0 };
		err = emit(w, &b, put_run_end(&b, w, run));
		ls_strbuf_free(&b);
	}
	if (close(w->fd) && !err)
		err = -errno;
	ls_strbuf_free(&w->line);
	free(w->path);
	free(w);
	return err;
}

/* ---- reader ---- */

static double num_of(const cJSON *obj, const char *key, double dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static uint64_t u64_str(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (cJSON_IsString(v))
		return strtoull(v->valuestring, NULL, 10);
	return cJSON_IsNumber(v) ? ls_d2u64(v->valuedouble) : 0;
}

static int parse_request(const cJSON *o, uint64_t base, struct ls_request *r)
{
	ls_request_reset(r, 0);
	ls_fields_get(o, ls_request_fields, ls_n_request_fields, r, base);
	const cJSON *frames = cJSON_GetObjectItemCaseSensitive(o, "frames");
	if (frames && !cJSON_IsArray(frames))
		return -EINVAL;
	for (const cJSON *f = frames ? frames->child : NULL; f; f = f->next) {
		struct ls_frame *fr = ls_request_add_frame(r);
		if (!fr)
			return -ENOMEM;
		if (ls_frame_get(f, fr, base))
			return -EINVAL;
	}
	return 0;
}

/* Run order: warmups first, then by id (the file is in finish order). */
static int cmp_run_order(const void *a, const void *b)
{
	const struct ls_request *x = a, *y = b;
	if ((x->warmup != 0) != (y->warmup != 0))
		return x->warmup ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

/* A record file being read, line by line. */
struct loader {
	const char           *path;
	size_t                lineno;
	size_t                n_cap;       /* room in run->requests */
	int                   have_header;
	struct ls_record_meta m;           /* m.complete: the run_end line was read */
	struct ls_run        *run;
	struct ls_request    *late;        /* "latscope_engine" lines, applied once every request is read */
	size_t                n_late, late_cap;
};

/* "clock" / "clock_after": 1 with the sample, 0 when the key is not there. */
static int read_clock(const cJSON *o, const char *key, int64_t *off, uint64_t *unc, uint64_t *at)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!cJSON_IsObject(c))
		return 0;
	double d = num_of(c, "offset_ns", 0);
	*off = d > -9e18 && d < 9e18 ? (int64_t)d : 0; /* a hostile file's offset: no overflow */
	*unc = ls_d2u64(num_of(c, "unc_ns", 0));
	*at = u64_str(c, "at_ns");
	return 1;
}

static int read_header(struct loader *ld, const cJSON *o)
{
	if (!cJSON_GetObjectItemCaseSensitive(o, "latscope_record")) {
		fprintf(stderr, "latscope: %s:%zu: no latscope_record header: not a latscope --record file\n",
			ld->path, ld->lineno);
		return -EINVAL;
	}
	struct ls_record_meta *m = &ld->m;
	ld->have_header = 1;
	m->base_ns = u64_str(o, "base_ns");
	ls_fields_get(o, meta_fields, N_META, m, m->base_ns);
	ls_fields_get(o, mpi_fields, N_MPI, m, m->base_ns);
	const cJSON *rq = cJSON_GetObjectItemCaseSensitive(o, "request");
	char *text = cJSON_IsObject(rq) ? cJSON_PrintUnformatted(rq) : NULL;
	if (text && strlen(text) < sizeof(m->request))
		memcpy(m->request, text, strlen(text) + 1);
	free(text);
	if (m->mpi_size)
		ld->run->start_ns = m->run_start_ns; /* a killed rank's file has no run_end line */
	read_clock(o, "clock", &m->clock.offset_ns, &m->clock.unc_ns, &m->clock.at_ns);
	return 0;
}

/* One sample [start, arrived, running, waiting, kv_use]; 0, or -1 when it is not one. */
static int read_gauge_sample(const cJSON *e, uint64_t base, struct ls_gauge_sample *x)
{
	if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 + LS_GAUGE__COUNT)
		return -1;
	const cJSON *c = e->child;
	double t[2];
	for (int k = 0; k < 2; k++, c = c->next) {
		if (!cJSON_IsNumber(c) || !(c->valuedouble >= -9e18) || c->valuedouble > 9e18)
			return -1;
		t[k] = c->valuedouble;
	}
	if (t[0] < -(double)base || t[1] < -(double)base)
		return -1; /* before the clock's zero: not a stamp */
	x->start_ns = base + (uint64_t)(int64_t)t[0];
	x->arrived_ns = base + (uint64_t)(int64_t)t[1];
	for (int g = 0; g < LS_GAUGE__COUNT; g++, c = c->next)
		x->v[g] = cJSON_IsNumber(c) && isfinite(c->valuedouble) ? c->valuedouble : NAN;
	return 0;
}

/* run_end's "server_metrics" into m->gauges (absent: off). A malformed sample is skipped. */
static void read_gauges(struct ls_record_meta *m, const cJSON *o)
{
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(o, "server_metrics");
	if (!cJSON_IsObject(g))
		return;
	struct ls_gauge_series *s = &m->gauges;
	s->on = 1;
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(g, "engine");
	s->engine = cJSON_IsString(e) ? ls_gauge_engine_parse(e->valuestring) : LS_GENGINE_NONE;
	s->period_ms = (uint32_t)ls_d2u64(fmin(num_of(g, "period_ms", 0), UINT32_MAX));
	s->timeout_ms = (uint32_t)ls_d2u64(fmin(num_of(g, "timeout_ms", 0), UINT32_MAX));
	s->n_polls = ls_d2u64(num_of(g, "polls", 0));
	s->n_dropped = ls_d2u64(num_of(g, "dropped", 0));
	s->cpu_ns = ls_d2u64(num_of(g, "cpu_ns", 0));
	const cJSON *missed = cJSON_GetObjectItemCaseSensitive(g, "missed");
	for (int k = 0; k < LS_GMISS__COUNT; k++)
		s->n_missed[k] = ls_d2u64(num_of(missed, ls_gauge_miss_name(k), 0));
	const cJSON *fm = cJSON_GetObjectItemCaseSensitive(g, "first_miss");
	snprintf(s->first_miss, sizeof(s->first_miss), "%s", cJSON_IsString(fm) ? fm->valuestring : "");
	const cJSON *samples = cJSON_GetObjectItemCaseSensitive(g, "samples");
	for (const cJSON *x = cJSON_IsArray(samples) ? samples->child : NULL; x; x = x->next) {
		struct ls_gauge_sample smp;
		if (!read_gauge_sample(x, m->base_ns, &smp) && ls_gauge_series_add(s, &smp))
			break; /* out of memory: the samples read so far */
	}
}

static void read_run_end(struct loader *ld, const cJSON *o)
{
	read_gauges(&ld->m, o);
	ld->m.complete = 1;
	ls_fields_get(o, ls_run_fields, ls_n_run_fields, ld->run, ld->m.base_ns);
	ls_fields_get(o, spec_fields, N_SPEC, &ld->m.spec, ld->m.base_ns);
	const cJSON *pos = cJSON_GetObjectItemCaseSensitive(o, "spec_per_pos_rate");
	int k = 0;
	for (const cJSON *e = cJSON_IsArray(pos) ? pos->child : NULL; e && k < LS_SPEC_MAX_POS; e = e->next)
		ld->m.spec.per_pos_rate[k++] = cJSON_IsNumber(e) ? e->valuedouble : 0;
	ld->m.spec.n_pos = k < ld->m.spec.n_pos ? k : ld->m.spec.n_pos;
	struct ls_clock_fit *c = &ld->m.clock;
	c->have_after = read_clock(o, "clock_after", &c->offset_after_ns, &c->unc_after_ns, &c->after_at_ns);
}

/* A "latscope_engine" line: the engine's account of a request written before it was joined. */
static int add_late(struct loader *ld, const cJSON *o)
{
	if (ld->n_late == ld->late_cap) {
		size_t ncap = ld->late_cap ? ld->late_cap * 2 : 64;
		struct ls_request *grown = realloc(ld->late, ncap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		ld->late = grown;
		ld->late_cap = ncap;
	}
	struct ls_request *r = &ld->late[ld->n_late++];
	memset(r, 0, sizeof(*r));
	r->id = ls_d2u64(num_of(o, "id", 0));
	r->warmup = num_of(o, "warmup", 0) != 0;
	ls_request_late_get(o, r);
	return 0;
}

/* Each late line into its request (run order, sorted); one that names none is counted. */
static void apply_late(struct loader *ld)
{
	size_t orphans = 0;
	for (size_t i = 0; i < ld->n_late; i++) {
		struct ls_request *r = ld->run->n_requests
			? bsearch(&ld->late[i], ld->run->requests, ld->run->n_requests, sizeof(*r), cmp_run_order) : NULL;
		if (r)
			ls_request_late_copy(r, &ld->late[i]);
		else
			orphans++;
	}
	if (orphans)
		fprintf(stderr, "latscope: %s: %zu engine account lines name no request in the file; ignored\n",
			ld->path, orphans);
}

static int add_request(struct loader *ld, const cJSON *o)
{
	struct ls_run *run = ld->run;
	if (run->n_requests == ld->n_cap) {
		size_t ncap = ld->n_cap ? ld->n_cap * 2 : 256;
		struct ls_request *grown = realloc(run->requests, ncap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		memset(grown + ld->n_cap, 0, (ncap - ld->n_cap) * sizeof(*grown));
		run->requests = grown;
		ld->n_cap = ncap;
	}
	struct ls_request *r = &run->requests[run->n_requests++];
	int err = parse_request(o, ld->m.base_ns, r);
	if (err == -ENOMEM)
		fprintf(stderr, "latscope: %s:%zu: out of memory for the request's frames\n", ld->path, ld->lineno);
	else if (err)
		fprintf(stderr, "latscope: %s:%zu: malformed request record (\"frames\" must be a list of "
				"%zu-number lists)\n", ld->path, ld->lineno, ls_n_frame_fields);
	else
		run->n_warmup += r->warmup != 0;
	return err;
}

/* One line as getline read it. 0 to go on, 1 to stop at a last line cut short, or -errno. */
static int load_line(struct loader *ld, char *line, size_t len)
{
	int complete_line = len > 0 && line[len - 1] == '\n';
	while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		line[--len] = 0;
	if (!len)
		return 0;
	cJSON *o = cJSON_ParseWithLength(line, len);
	if (!o || !cJSON_IsObject(o)) {
		cJSON_Delete(o);
		if (!complete_line && ld->have_header) { /* the run died mid-write: keep what is whole */
			fprintf(stderr, "latscope: %s:%zu: last line is cut short; ignoring it\n", ld->path, ld->lineno);
			return 1;
		}
		fprintf(stderr, "latscope: %s:%zu: not a JSON object (is this a latscope --record file?)\n",
			ld->path, ld->lineno);
		return -EINVAL;
	}
	int err = 0;
	if (!ld->have_header)
		err = read_header(ld, o);
	else if (cJSON_GetObjectItemCaseSensitive(o, "latscope_run_end"))
		read_run_end(ld, o);
	else if (cJSON_GetObjectItemCaseSensitive(o, "latscope_engine"))
		err = add_late(ld, o);
	else
		err = add_request(ld, o);
	cJSON_Delete(o);
	return err;
}

static int load_lines(struct loader *ld, FILE *f)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int rc = 0;
	while ((len = getline(&line, &cap, f)) >= 0) {
		ld->lineno++;
		if ((rc = load_line(ld, line, (size_t)len)))
			break;
	}
	if (rc == 1)
		rc = 0;
	if (!rc && (ferror(f) || !feof(f))) { /* getline failed before the end of the file */
		fprintf(stderr, "latscope: cannot read record file %s past line %zu: %s\n", ld->path, ld->lineno,
			strerror(errno));
		rc = -EIO;
	}
	free(line);
	return rc;
}

/* No run_end line: the run was killed. Bound it by its own stamps. */
static void bound_killed_run(struct ls_run *run)
{
	for (size_t i = 0; i < run->n_requests; i++) {
		const struct ls_request *r = &run->requests[i];
		if (r->warmup)
			continue;
		if (r->scheduled_ns && (!run->start_ns || r->scheduled_ns < run->start_ns))
			run->start_ns = r->scheduled_ns;
	}
	run->interrupted = 1;
}

/* A rank file's stamps (its own clock) moved into rank 0's, by the fit its header and run_end
 * line hold. */
static void rank_to_root(struct ls_run *run, struct ls_record_meta *m)
{
	for (size_t i = 0; i < run->n_requests; i++)
		ls_clock_request_to_root(&m->clock, &run->requests[i]);
	ls_clock_run_to_root(&m->clock, run);
	m->run_start_ns = ls_clock_to_root(&m->clock, m->run_start_ns);
}

int ls_record_load(const char *path, struct ls_run *run, struct ls_record_meta *meta)
{
	memset(run, 0, sizeof(*run));
	FILE *f = fopen(path, "r");
	if (!f) {
		int open_errno = errno;
		fprintf(stderr, "latscope: cannot open record file %s: %s\n", path, strerror(open_errno));
		return -open_errno;
	}
	struct loader ld = { .path = path, .run = run };
	int err = load_lines(&ld, f);
	fclose(f);
	if (!err && !ld.have_header) {
		fprintf(stderr, "latscope: %s: empty record file\n", path);
		err = -EINVAL;
	}
	if (err) {
		free(ld.late);
		ls_run_free(run);
		ls_record_meta_free(&ld.m);
		return err;
	}
	if (ld.m.mpi_size && ld.m.mpi_rank >= 0) /* a rank's file: into rank 0's clock */
		rank_to_root(run, &ld.m);
	if (!ld.m.complete)
		bound_killed_run(run);
	if (run->n_requests)
		qsort(run->requests, run->n_requests, sizeof(*run->requests), cmp_run_order);
	apply_late(&ld);
	free(ld.late);
	run->target_rate = ld.m.target_rate;
	run->max_concurrency = ld.m.max_concurrency;
	snprintf(run->run_tag, sizeof(run->run_tag), "%s", ld.m.run_tag);
	if (meta)
		*meta = ld.m;
	else
		ls_record_meta_free(&ld.m);
	return 0;
}

/* Appends src's requests to dst (moved: src is left empty). 0 or -ENOMEM. */
static int append_run(struct ls_run *dst, struct ls_run *src)
{
	if (!src->n_requests)
		return 0;
	struct ls_request *grown = realloc(dst->requests, (dst->n_requests + src->n_requests) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	memcpy(grown + dst->n_requests, src->requests, src->n_requests * sizeof(*grown));
	dst->requests = grown;
	dst->n_requests += src->n_requests;
	free(src->requests);
	src->requests = NULL;
	src->n_requests = src->n_warmup = 0;
	return 0;
}

/* Sorted in run order: each (warmup, id) once. Returns how many were dropped. */
static size_t drop_repeats(struct ls_run *run)
{
	size_t kept = 0, dropped = 0;
	for (size_t i = 0; i < run->n_requests; i++) {
		struct ls_request *r = &run->requests[i];
		if (kept && !cmp_run_order(&run->requests[kept - 1], r)) {
			ls_request_free(r);
			dropped++;
			continue;
		}
		if (kept != i)
			run->requests[kept] = *r;
		kept++;
	}
	run->n_requests = kept;
	run->n_warmup = 0;
	for (size_t i = 0; i < kept; i++)
		run->n_warmup += run->requests[i].warmup != 0;
	return dropped;
}

/* One more file of the run into run and meta (the first file's meta, widened). */
static int merge_one(const char *path, size_t k, struct ls_run *run, struct ls_record_meta *meta,
		     uint64_t *root_start)
{
	struct ls_run one;
	struct ls_record_meta m;
	int err = ls_record_load(path, &one, &m);
	if (err)
		return err;
	if (k && strcmp(m.run_tag, meta->run_tag)) {
		fprintf(stderr, "latscope: %s is from run %s, %s from run %s: one run's rank files at a time\n", path,
			m.run_tag, "the first file", meta->run_tag);
		ls_run_free(&one);
		ls_record_meta_free(&m);
		return -EINVAL;
	}
	if (!k) {
		*meta = m;
		run->start_ns = one.start_ns;
		run->target_rate = one.target_rate;
		run->max_concurrency = one.max_concurrency;
		snprintf(run->run_tag, sizeof(run->run_tag), "%s", one.run_tag);
	}
	meta->complete &= m.complete;
	if (k && !meta->gauges.on) /* the /metrics series: rank 0's (it alone polls), or the merged file's */
		meta->gauges = m.gauges;
	else if (k)
		ls_record_meta_free(&m);
	if (k)
		ls_run_merge_fields(run, &one);
	else
		ls_run_copy_fields(run, &one);
	if (m.mpi_size && m.mpi_rank == 0 && m.run_start_ns) /* rank 0's clock is the run's: exact */
		*root_start = m.run_start_ns;
	err = append_run(run, &one);
	ls_run_free(&one);
	if (err)
		fprintf(stderr, "latscope: out of memory merging %s\n", path);
	return err;
}

int ls_record_load_many(const char *const *paths, size_t n, struct ls_run *run, struct ls_record_meta *meta)
{
	struct ls_record_meta m;
	uint64_t root_start = 0;
	if (n == 1)
		return ls_record_load(paths[0], run, meta);
	memset(run, 0, sizeof(*run));
	memset(&m, 0, sizeof(m));
	for (size_t k = 0; k < n; k++) {
		int err = merge_one(paths[k], k, run, &m, &root_start);
		if (err) {
			ls_run_free(run);
			ls_record_meta_free(&m);
			return err;
		}
	}
	if (run->n_requests)
		qsort(run->requests, run->n_requests, sizeof(*run->requests), cmp_run_order);
	size_t dropped = drop_repeats(run);
	if (dropped)
		fprintf(stderr, "latscope: %zu requests were in more than one file (warmups every rank sent, or a "
				"merged file beside its rank files): each is counted once\n", dropped);
	/* An MPI run starts at its one agreed instant, as rank 0 reported it: the other ranks' own
	 * starts, moved by their fitted drift, land a few ns off it. */
	if (root_start)
		run->start_ns = root_start;
	if (!m.complete) {
		run->end_ns = 0; /* a cut file: the last finish bounds the run */
		run->interrupted = 1;
	}
	if (meta)
		*meta = m;
	return 0;
}
