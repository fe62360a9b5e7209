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
};

/* The per-request line is formatted by hand: printf's machinery was most of the writer's cost
 * (~140 instructions per number). Callers reserve room first (ls_strbuf_reserve): these
 * append to the room there is. */
#define I64_CHARS 20 /* "-9223372036854775808", "18446744073709551615" */

static void sb_raw(struct ls_strbuf *b, const char *s, size_t n)
{
	memcpy(b->data + b->len, s, n);
	b->len += n;
}

#define sb_lit(b, s) sb_raw(b, s, sizeof(s) - 1)

static void sb_u64(struct ls_strbuf *b, uint64_t v)
{
	size_t n = 1;
	for (uint64_t t = v; t >= 10; t /= 10)
		n++;
	b->len += n;
	char *p = b->data + b->len;
	do
		*--p = (char)('0' + v % 10);
	while (v /= 10);
}

static void sb_i64(struct ls_strbuf *b, int64_t v)
{
	if (v < 0) {
		b->data[b->len++] = '-';
		sb_u64(b, (uint64_t)0 - (uint64_t)v); /* INT64_MIN too */
	} else {
		sb_u64(b, (uint64_t)v);
	}
}

/* A JSON string literal of a NUL-terminated field (NULL: ""), by base's one escaper: valid
 * JSON whatever an error message held. */
static int sb_json_str(struct ls_strbuf *b, const char *s, size_t cap)
{
	return ls_strbuf_json_str(b, s ? s : "", s ? strnlen(s, cap) : 0);
}

static int64_t rel(uint64_t stamp, uint64_t base)
{
	if (!stamp)
		return 0;
	return stamp >= base ? (int64_t)(stamp - base) : -(int64_t)(base - stamp);
}

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

/* ,"clock":{"offset_ns":N,"unc_ns":N,"at_ns":"N"} (or "clock_after" from the *_after fields):
 * at_ns is absolute, in rank 0's clock. */
static int put_clock(struct ls_strbuf *b, const char *key, int64_t off, uint64_t unc, uint64_t at)
{
	return ls_strbuf_printf(b, ",\"%s\":{\"offset_ns\":%" PRId64 ",\"unc_ns\":%" PRIu64 ",\"at_ns\":\"%" PRIu64
				"\"}", key, off, unc, at);
}

/* An MPI run's fields: which rank (-1: merged), of how many, its start instant, its clock. */
static int put_mpi_header(struct ls_strbuf *b, const struct ls_record_meta *m, uint64_t base)
{
	int rc = ls_strbuf_printf(b, ",\"mpi_rank\":%d,\"mpi_size\":%d,\"run_start_ns\":%" PRId64, m->mpi_rank,
				  m->mpi_size, rel(m->run_start_ns, base));
	if (m->mpi_rank >= 0)
		rc |= put_clock(b, "clock", m->clock.offset_ns, m->clock.unc_ns, m->clock.at_ns);
	return rc;
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
	struct ls_strbuf b = { 0 };
	int rc = ls_strbuf_printf(&b, "{\"latscope_record\":%d,\"base_ns\":\"%" PRIu64 "\",\"stamps\":\"ns after "
				  "base_ns, 0 = did not happen\",\"frame_fields\":[\"arrived_ns\",\"stream_off\","
				  "\"bytes\",\"text_len\",\"tokens\",\"cum_tokens\",\"flags\"]",
				  LS_RECORD_VERSION, w->base_ns);
	if (meta) {
		rc |= ls_strbuf_puts(&b, ",\"run_tag\":");
		rc |= sb_json_str(&b, meta->run_tag, sizeof(meta->run_tag));
		rc |= ls_strbuf_printf(&b, ",\"target_rate\":%.17g,\"max_concurrency\":%u,\"arrival\":",
				       isfinite(meta->target_rate) ? meta->target_rate : 0.0, meta->max_concurrency);
		rc |= sb_json_str(&b, meta->arrival, sizeof(meta->arrival));
		rc |= ls_strbuf_puts(&b, ",\"profile\":");
		rc |= sb_json_str(&b, meta->profile, sizeof(meta->profile));
		rc |= ls_strbuf_puts(&b, ",\"backend\":");
		rc |= sb_json_str(&b, meta->backend, sizeof(meta->backend));
		if (meta->request_json) { /* sampling parameters, headers by name (values redacted) */
			rc |= ls_strbuf_puts(&b, ",\"request\":");
			rc |= ls_strbuf_puts(&b, meta->request_json);
		}
		if (meta->mpi_size > 0)
			rc |= put_mpi_header(&b, meta, w->base_ns);
		w->clock = meta->clock;
		w->mpi = meta->mpi_size > 0 && meta->mpi_rank >= 0;
	}
	rc |= ls_strbuf_puts(&b, "}");
	int err = emit(w, &b, rc);
	ls_strbuf_free(&b);
	if (err) {
		close(w->fd);
		free(w->path);
		free(w);
		return NULL;
	}
	return w;
}

/* The most one frame takes: ",[" 20 "," 20 "," 10 "," 10 "," 11 "," 11 "," 10 "]". */
#define FRAME_CHARS (2 + 2 * I64_CHARS + 2 * 10 + 2 * 11 + 10 + 7)
/* The most the rest of a line takes, but the error text: its keys (~390 bytes), 9 stamps,
 * 3 u64, 7 int-sized fields and a fail name. */
#define LINE_CHARS 1024

/* The nine stamps, each as ns after base. */
static void put_stamps(struct ls_strbuf *b, const struct ls_request *r, uint64_t base)
{
	sb_lit(b, ",\"scheduled_ns\":");
	sb_i64(b, rel(r->scheduled_ns, base));
	sb_lit(b, ",\"admitted_ns\":");
	sb_i64(b, rel(r->admitted_ns, base));
	sb_lit(b, ",\"started_ns\":");
	sb_i64(b, rel(r->started_ns, base));
	sb_lit(b, ",\"connect_ns\":");
	sb_i64(b, rel(r->connect_ns, base));
	sb_lit(b, ",\"tls_ns\":");
	sb_i64(b, rel(r->tls_ns, base));
	sb_lit(b, ",\"sent_ns\":");
	sb_i64(b, rel(r->sent_ns, base));
	sb_lit(b, ",\"headers_ns\":");
	sb_i64(b, rel(r->headers_ns, base));
	sb_lit(b, ",\"done_frame_ns\":");
	sb_i64(b, rel(r->done_frame_ns, base));
	sb_lit(b, ",\"finished_ns\":");
	sb_i64(b, rel(r->finished_ns, base));
}

/* ,"frames":[[arrived_ns,stream_off,bytes,text_len,tokens,cum_tokens,flags],...] */
static void put_frames(struct ls_strbuf *b, const struct ls_request *r, uint64_t base)
{
	sb_lit(b, ",\"frames\":[");
	for (uint32_t i = 0; i < r->n_frames; i++) {
		const struct ls_frame *f = &r->frames[i];
		if (i)
			b->data[b->len++] = ',';
		b->data[b->len++] = '[';
		sb_i64(b, rel(f->arrived_ns, base));
		b->data[b->len++] = ',';
		sb_u64(b, f->stream_off);
		b->data[b->len++] = ',';
		sb_u64(b, f->bytes);
		b->data[b->len++] = ',';
		sb_u64(b, f->text_len);
		b->data[b->len++] = ',';
		sb_i64(b, f->tokens);
		b->data[b->len++] = ',';
		sb_i64(b, f->cum_tokens);
		b->data[b->len++] = ',';
		sb_u64(b, f->flags);
		b->data[b->len++] = ']';
	}
	b->data[b->len++] = ']';
}

int ls_record_write(struct ls_record_writer *w, const struct ls_request *r)
{
	if (!w)
		return -EINVAL;
	struct ls_strbuf *b = &w->line;
	b->len = 0;
	/* Room for the whole line at once: the appends below do not check. */
	if (ls_strbuf_reserve(b, LINE_CHARS + 6 * strnlen(r->error, sizeof(r->error)) +
				      (size_t)r->n_frames * FRAME_CHARS))
		return -ENOMEM;
	sb_lit(b, "{\"id\":");
	sb_u64(b, r->id);
	sb_lit(b, ",\"warmup\":");
	sb_i64(b, r->warmup);
	sb_lit(b, ",\"prompt_len\":");
	sb_u64(b, r->prompt_len);
	sb_lit(b, ",\"output_len\":");
	sb_u64(b, r->output_len);
	put_stamps(b, r, w->base_ns);
	sb_lit(b, ",\"new_connection\":");
	sb_i64(b, r->new_connection);
	sb_lit(b, ",\"fd\":");
	sb_i64(b, r->fd);
	sb_lit(b, ",\"socket_cookie\":\"");
	sb_u64(b, r->socket_cookie);
	sb_lit(b, "\",\"conn_seq\":");
	sb_u64(b, r->conn_seq);
	sb_lit(b, ",\"http_status\":");
	sb_i64(b, r->http_status);
	sb_lit(b, ",\"fail\":\"");
	const char *fail = ls_fail_name(r->fail);
	sb_raw(b, fail, strnlen(fail, 64)); /* fixed identifiers: no escaping needed */
	sb_lit(b, "\",\"error\":");
	sb_json_str(b, r->error, sizeof(r->error)); /* fits: reserved above */
	sb_lit(b, ",\"usage_prompt_tokens\":");
	sb_i64(b, r->usage_prompt_tokens);
	sb_lit(b, ",\"usage_completion_tokens\":");
	sb_i64(b, r->usage_completion_tokens);
	sb_lit(b, ",\"body_bytes\":");
	sb_u64(b, r->body_bytes);
	sb_lit(b, ",\"text_bytes\":");
	sb_u64(b, r->text_bytes);
	put_frames(b, r, w->base_ns);
	b->data[b->len++] = '}';
	return emit(w, b, 0);
}

void ls_record_set_clock(struct ls_record_writer *w, const struct ls_clock_fit *fit)
{
	if (w && fit)
		w->clock = *fit;
}

void ls_record_on_finish(void *ctx, const struct ls_request *req)
{
	ls_record_write(ctx, req);
}

int ls_record_close(struct ls_record_writer *w, const struct ls_run *run)
{
	if (!w)
		return 0;
	int err = 0;
	if (run) {
		struct ls_strbuf b = { 0 };
		int rc = ls_strbuf_printf(&b, "{\"latscope_run_end\":1,\"start_ns\":%" PRId64 ",\"end_ns\":%" PRId64
			      ",\"interrupted\":%d,\"n_requests\":%zu,\"n_warmup\":%zu",
			  rel(run->start_ns, w->base_ns), rel(run->end_ns, w->base_ns), run->interrupted,
			  run->n_requests, run->n_warmup);
		if (w->mpi && w->clock.have_after)
			rc |= put_clock(&b, "clock_after", w->clock.offset_after_ns, w->clock.unc_after_ns,
					w->clock.after_at_ns);
		rc |= ls_strbuf_puts(&b, "}");
		err = emit(w, &b, rc);
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

/* base + ahead, saturating at UINT64_MAX. */
static uint64_t after_base(uint64_t base, uint64_t ahead)
{
	return ahead > UINT64_MAX - base ? UINT64_MAX : base + ahead;
}

static uint64_t abs_of(const cJSON *obj, const char *key, uint64_t base)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!cJSON_IsNumber(v) || v->valuedouble == 0.0)
		return 0;
	double d = v->valuedouble;
	if (d < 0.0) {
		uint64_t back = ls_d2u64(-d);
		return base > back ? base - back : 1;
	}
	return after_base(base, ls_d2u64(d));
}

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

static void str_of(const cJSON *obj, const char *key, char *dst, size_t cap)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (cJSON_IsString(v))
		snprintf(dst, cap, "%s", v->valuestring);
}

static enum ls_fail fail_of(const char *name)
{
	for (int f = 0; f < LS_FAIL__COUNT; f++)
		if (!strcmp(name, ls_fail_name((enum ls_fail)f)))
			return (enum ls_fail)f;
	return LS_FAIL_OTHER;
}

static int parse_request(const cJSON *o, uint64_t base, struct ls_request *r)
{
	ls_request_reset(r, ls_d2u64(num_of(o, "id", 0)));
	r->warmup = (int)ls_d2i(num_of(o, "warmup", 0), 0, 1);
	r->prompt_len = (uint32_t)ls_d2i(num_of(o, "prompt_len", 0), 0, UINT32_MAX);
	r->output_len = (uint32_t)ls_d2i(num_of(o, "output_len", 0), 0, UINT32_MAX);
	r->scheduled_ns = abs_of(o, "scheduled_ns", base);
	r->admitted_ns = abs_of(o, "admitted_ns", base);
	r->started_ns = abs_of(o, "started_ns", base);
	r->connect_ns = abs_of(o, "connect_ns", base);
	r->tls_ns = abs_of(o, "tls_ns", base);
	r->sent_ns = abs_of(o, "sent_ns", base);
	r->headers_ns = abs_of(o, "headers_ns", base);
	r->done_frame_ns = abs_of(o, "done_frame_ns", base);
	r->finished_ns = abs_of(o, "finished_ns", base);
	r->new_connection = (int)ls_d2i(num_of(o, "new_connection", 0), 0, 1);
	r->fd = (int)ls_d2i(num_of(o, "fd", -1), -1, INT32_MAX);
	r->socket_cookie = u64_str(o, "socket_cookie");
	r->conn_seq = (uint32_t)ls_d2i(num_of(o, "conn_seq", 0), 0, UINT32_MAX);
	r->http_status = (int)ls_d2i(num_of(o, "http_status", 0), 0, 999);
	char fail[32] = "ok";
	str_of(o, "fail", fail, sizeof(fail));
	r->fail = fail_of(fail);
	str_of(o, "error", r->error, sizeof(r->error));
	r->usage_prompt_tokens = (int32_t)ls_d2i(num_of(o, "usage_prompt_tokens", -1), -1, INT32_MAX);
	r->usage_completion_tokens = (int32_t)ls_d2i(num_of(o, "usage_completion_tokens", -1), -1, INT32_MAX);
	r->body_bytes = ls_d2u64(num_of(o, "body_bytes", 0));
	r->text_bytes = ls_d2u64(num_of(o, "text_bytes", 0));
	const cJSON *frames = cJSON_GetObjectItemCaseSensitive(o, "frames");
	if (frames && !cJSON_IsArray(frames))
		return -EINVAL;
	for (const cJSON *f = frames ? frames->child : NULL; f; f = f->next) {
		if (!cJSON_IsArray(f) || cJSON_GetArraySize(f) != 7)
			return -EINVAL;
		double v[7];
		int k = 0;
		for (const cJSON *e = f->child; e; e = e->next) {
			if (!cJSON_IsNumber(e))
				return -EINVAL;
			v[k++] = e->valuedouble;
		}
		struct ls_frame *fr = ls_request_add_frame(r);
		if (!fr)
			return -ENOMEM;
		uint64_t arrived = ls_d2u64(v[0]);
		fr->arrived_ns = arrived ? after_base(base, arrived) : 0;
		fr->stream_off = ls_d2u64(v[1]);
		fr->bytes = (uint32_t)ls_d2i(v[2], 0, UINT32_MAX);
		fr->text_len = (uint32_t)ls_d2i(v[3], 0, UINT32_MAX);
		fr->tokens = (int32_t)ls_d2i(v[4], INT32_MIN, INT32_MAX);
		fr->cum_tokens = (int32_t)ls_d2i(v[5], INT32_MIN, INT32_MAX);
		fr->flags = (uint32_t)ls_d2i(v[6], 0, UINT32_MAX);
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
	str_of(o, "run_tag", m->run_tag, sizeof(m->run_tag));
	str_of(o, "arrival", m->arrival, sizeof(m->arrival));
	str_of(o, "profile", m->profile, sizeof(m->profile));
	str_of(o, "backend", m->backend, sizeof(m->backend));
	m->target_rate = num_of(o, "target_rate", 0);
	m->max_concurrency = (uint32_t)ls_d2i(num_of(o, "max_concurrency", 0), 0, UINT32_MAX);
	m->mpi_size = (int)ls_d2i(num_of(o, "mpi_size", 0), 0, INT32_MAX);
	m->mpi_rank = (int)ls_d2i(num_of(o, "mpi_rank", -1), -1, INT32_MAX);
	if (m->mpi_size) {
		m->run_start_ns = abs_of(o, "run_start_ns", m->base_ns);
		ld->run->start_ns = m->run_start_ns; /* a killed rank's file has no run_end line */
	}
	read_clock(o, "clock", &m->clock.offset_ns, &m->clock.unc_ns, &m->clock.at_ns);
	return 0;
}

static void read_run_end(struct loader *ld, const cJSON *o)
{
	ld->m.complete = 1;
	ld->run->start_ns = abs_of(o, "start_ns", ld->m.base_ns);
	ld->run->end_ns = abs_of(o, "end_ns", ld->m.base_ns);
	ld->run->interrupted = (int)ls_d2i(num_of(o, "interrupted", 0), 0, 1);
	struct ls_clock_fit *c = &ld->m.clock;
	c->have_after = read_clock(o, "clock_after", &c->offset_after_ns, &c->unc_after_ns, &c->after_at_ns);
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
				"7-number lists)\n", ld->path, ld->lineno);
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
	run->start_ns = ls_clock_to_root(&m->clock, run->start_ns);
	run->end_ns = ls_clock_to_root(&m->clock, run->end_ns);
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
		ls_run_free(run);
		return err;
	}
	if (ld.m.mpi_size && ld.m.mpi_rank >= 0) /* a rank's file: into rank 0's clock */
		rank_to_root(run, &ld.m);
	if (!ld.m.complete)
		bound_killed_run(run);
	if (run->n_requests)
		qsort(run->requests, run->n_requests, sizeof(*run->requests), cmp_run_order);
	run->target_rate = ld.m.target_rate;
	run->max_concurrency = ld.m.max_concurrency;
	snprintf(run->run_tag, sizeof(run->run_tag), "%s", ld.m.run_tag);
	if (meta)
		*meta = ld.m;
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
static int merge_one(const char *path, size_t k, struct ls_run *run, struct ls_record_meta *meta)
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
	if (one.start_ns && (!run->start_ns || one.start_ns < run->start_ns))
		run->start_ns = one.start_ns;
	if (one.end_ns > run->end_ns)
		run->end_ns = one.end_ns;
	run->interrupted |= one.interrupted;
	err = append_run(run, &one);
	ls_run_free(&one);
	if (err)
		fprintf(stderr, "latscope: out of memory merging %s\n", path);
	return err;
}

int ls_record_load_many(const char *const *paths, size_t n, struct ls_run *run, struct ls_record_meta *meta)
{
	struct ls_record_meta m;
	if (n == 1)
		return ls_record_load(paths[0], run, meta);
	memset(run, 0, sizeof(*run));
	memset(&m, 0, sizeof(m));
	for (size_t k = 0; k < n; k++) {
		int err = merge_one(paths[k], k, run, &m);
		if (err) {
			ls_run_free(run);
			return err;
		}
	}
	if (run->n_requests)
		qsort(run->requests, run->n_requests, sizeof(*run->requests), cmp_run_order);
	size_t dropped = drop_repeats(run);
	if (dropped)
		fprintf(stderr, "latscope: %zu requests were in more than one file (warmups every rank sent, or a "
				"merged file beside its rank files): each is counted once\n", dropped);
	if (!m.complete) {
		run->end_ns = 0; /* a cut file: the last finish bounds the run */
		run->interrupted = 1;
	}
	if (meta)
		*meta = m;
	return 0;
}
