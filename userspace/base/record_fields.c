/* record_fields.c — see record_fields.h. The request line is formatted by hand (printf's
 * machinery was most of the writer's cost, ~140 instructions per number) into room reserved
 * first; everything is read back with cJSON. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/numconv.h"
#include "base/record_fields.h"

#define F(type, field, key, k, ...) \
	{ .name = key, .kind = k, .offset = offsetof(type, field), .size = sizeof(((type *)0)->field), __VA_ARGS__ }
#define REQ(field, k, ...) F(struct ls_request, field, #field, k, __VA_ARGS__)
#define FRAME(field, k, ...) F(struct ls_frame, field, #field, k, __VA_ARGS__)
#define RUN(field, key, k, ...) F(struct ls_run, field, key, k, __VA_ARGS__)

const struct ls_field ls_request_fields[] = {
	REQ(id, LS_FK_U64),
	REQ(warmup, LS_FK_INT, .lo = 0, .hi = 1),
	REQ(prompt_len, LS_FK_U32, .hi = UINT32_MAX),
	REQ(output_len, LS_FK_U32, .hi = UINT32_MAX),
	REQ(scheduled_ns, LS_FK_STAMP),
	REQ(admitted_ns, LS_FK_STAMP),
	REQ(started_ns, LS_FK_STAMP),
	REQ(connect_ns, LS_FK_STAMP),
	REQ(tls_ns, LS_FK_STAMP),
	REQ(sent_ns, LS_FK_STAMP),
	REQ(headers_ns, LS_FK_STAMP),
	REQ(done_frame_ns, LS_FK_STAMP),
	REQ(finished_ns, LS_FK_STAMP),
	REQ(new_connection, LS_FK_INT, .lo = 0, .hi = 1),
	REQ(fd, LS_FK_INT, .lo = -1, .hi = INT32_MAX, .dflt = -1),
	REQ(socket_cookie, LS_FK_U64_STR),
	REQ(conn_seq, LS_FK_U32, .hi = UINT32_MAX),
	REQ(http_status, LS_FK_INT, .lo = 0, .hi = 999),
	REQ(fail, LS_FK_FAIL),
	REQ(error, LS_FK_TEXT),
	REQ(usage_prompt_tokens, LS_FK_I32, .lo = -1, .hi = INT32_MAX, .dflt = -1),
	REQ(usage_completion_tokens, LS_FK_I32, .lo = -1, .hi = INT32_MAX, .dflt = -1),
	REQ(body_bytes, LS_FK_U64),
	REQ(text_bytes, LS_FK_U64),
	REQ(engine_prompt_n, LS_FK_I32, .lo = -1, .hi = INT32_MAX, .dflt = -1, .late = 1),
	REQ(engine_prompt_ns, LS_FK_U64, .late = 1),
	REQ(engine_predicted_n, LS_FK_I32, .lo = -1, .hi = INT32_MAX, .dflt = -1, .late = 1),
	REQ(engine_predicted_ns, LS_FK_U64, .late = 1),
	REQ(engine_cache_n, LS_FK_I32, .lo = -1, .hi = INT32_MAX, .dflt = -1, .late = 1),
	REQ(engine_source, LS_FK_INT, .lo = 0, .hi = LS_ENGINE__COUNT - 1, .late = 1),
	REQ(engine_known, LS_FK_U32, .hi = UINT32_MAX, .late = 1),
	REQ(engine_queue_ns, LS_FK_U64, .late = 1),
	REQ(engine_e2e_ns, LS_FK_U64, .late = 1),
	REQ(engine_bad, LS_FK_U32, .hi = UINT32_MAX, .late = 1),
};
const size_t ls_n_request_fields = sizeof(ls_request_fields) / sizeof(ls_request_fields[0]);

const struct ls_field ls_frame_fields[] = {
	FRAME(arrived_ns, LS_FK_STAMP),
	FRAME(stream_off, LS_FK_U64),
	FRAME(bytes, LS_FK_U32, .hi = UINT32_MAX),
	FRAME(text_len, LS_FK_U32, .hi = UINT32_MAX),
	FRAME(tokens, LS_FK_I32, .lo = INT32_MIN, .hi = INT32_MAX),
	FRAME(cum_tokens, LS_FK_I32, .lo = INT32_MIN, .hi = INT32_MAX),
	FRAME(flags, LS_FK_U32, .hi = UINT32_MAX),
};
const size_t ls_n_frame_fields = sizeof(ls_frame_fields) / sizeof(ls_frame_fields[0]);

const struct ls_field ls_run_fields[] = {
	RUN(start_ns, "start_ns", LS_FK_STAMP, .merge = LS_FM_MIN),
	RUN(end_ns, "end_ns", LS_FK_STAMP, .merge = LS_FM_MAX),
	RUN(interrupted, "interrupted", LS_FK_INT, .merge = LS_FM_OR, .lo = 0, .hi = 1),
	RUN(n_requests, "n_requests", LS_FK_SIZE, .derived = 1),
	RUN(n_warmup, "n_warmup", LS_FK_SIZE, .derived = 1),
	RUN(spin_stalls.n, "spin_stalls", LS_FK_U64, .merge = LS_FM_SUM),
	RUN(spin_stalls.max_ns, "spin_stall_max_ns", LS_FK_U64, .merge = LS_FM_MAX),
	RUN(spin_stalls.sum_ns, "spin_stall_sum_ns", LS_FK_U64, .merge = LS_FM_SUM),
	RUN(server_gone_ns, "server_gone_ns", LS_FK_STAMP, .merge = LS_FM_MIN),
	RUN(n_connect_failed_gone, "n_connect_failed_gone", LS_FK_SIZE, .merge = LS_FM_SUM),
	RUN(n_preconnected, "n_preconnected", LS_FK_U32, .merge = LS_FM_SUM, .hi = UINT32_MAX),
	RUN(preconnect_ns, "preconnect_ns", LS_FK_U64, .merge = LS_FM_MAX),
	RUN(client_cpu_ns, "client_cpu_ns", LS_FK_U64, .merge = LS_FM_SUM),
	RUN(n_client_procs, "n_client_procs", LS_FK_U32, .merge = LS_FM_SUM, .hi = UINT32_MAX),
	RUN(loop_spins, "loop_spins", LS_FK_INT, .merge = LS_FM_OR, .lo = 0, .hi = 1),
	RUN(client_delay_p99_ns, "client_delay_p99_ns", LS_FK_U64, .merge = LS_FM_MAX),
	RUN(loop_lag_p99_ns, "loop_lag_p99_ns", LS_FK_U64, .merge = LS_FM_MAX),
	RUN(loop_lag_ticks, "loop_lag_ticks", LS_FK_U64, .merge = LS_FM_SUM),
};
const size_t ls_n_run_fields = sizeof(ls_run_fields) / sizeof(ls_run_fields[0]);

/* ---- a field's value as an integer, whatever its C type ---- */

static uint64_t get_u(const struct ls_field *f, const void *obj)
{
	const char *p = (const char *)obj + f->offset;
	switch (f->kind) {
	case LS_FK_U32: return *(const uint32_t *)p;
	case LS_FK_I32: return (uint64_t)(int64_t) * (const int32_t *)p;
	case LS_FK_INT: return (uint64_t)(int64_t) * (const int *)p;
	case LS_FK_FAIL: return (uint64_t)*(const enum ls_fail *)p;
	case LS_FK_SIZE: return *(const size_t *)p;
	default: return *(const uint64_t *)p;
	}
}

static void set_u(const struct ls_field *f, void *obj, uint64_t v)
{
	char *p = (char *)obj + f->offset;
	switch (f->kind) {
	case LS_FK_U32: *(uint32_t *)p = (uint32_t)v; break;
	case LS_FK_I32: *(int32_t *)p = (int32_t)(int64_t)v; break;
	case LS_FK_INT: *(int *)p = (int)(int64_t)v; break;
	case LS_FK_FAIL: *(enum ls_fail *)p = (enum ls_fail)v; break;
	case LS_FK_SIZE: *(size_t *)p = (size_t)v; break;
	default: *(uint64_t *)p = v; break;
	}
}

void ls_fields_map_stamps(const struct ls_field *t, size_t n, void *obj, ls_stamp_map map, void *ctx)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t *p = (uint64_t *)((char *)obj + t[i].offset);
		if (t[i].kind == LS_FK_STAMP && *p)
			*p = map(ctx, *p);
	}
}

void ls_request_map_stamps(struct ls_request *r, ls_stamp_map map, void *ctx)
{
	ls_fields_map_stamps(ls_request_fields, ls_n_request_fields, r, map, ctx);
	for (uint32_t i = 0; i < r->n_frames; i++)
		ls_fields_map_stamps(ls_frame_fields, ls_n_frame_fields, &r->frames[i], map, ctx);
}

void ls_run_map_stamps(struct ls_run *run, ls_stamp_map map, void *ctx)
{
	ls_fields_map_stamps(ls_run_fields, ls_n_run_fields, run, map, ctx);
}

void ls_run_copy_fields(struct ls_run *dst, const struct ls_run *src)
{
	for (size_t i = 0; i < ls_n_run_fields; i++) {
		const struct ls_field *f = &ls_run_fields[i];
		if (!f->derived)
			memcpy((char *)dst + f->offset, (const char *)src + f->offset, f->size);
	}
}

void ls_run_merge_fields(struct ls_run *dst, const struct ls_run *src)
{
	for (size_t i = 0; i < ls_n_run_fields; i++) {
		const struct ls_field *f = &ls_run_fields[i];
		uint64_t a = get_u(f, dst), b = get_u(f, src), v = a;
		switch (f->merge) {
		case LS_FM_MIN: v = !a || (b && b < a) ? b : a; break;
		case LS_FM_MAX: v = b > a ? b : a; break;
		case LS_FM_SUM: v = a + b; break;
		case LS_FM_OR: v = a || b; break;
		default: break;
		}
		set_u(f, dst, v);
	}
}

/* ---- the writer ---- */

#define NUM_CHARS 26 /* "-9223372036854775808", "18446744073709551615", %.17g */

static void sb_raw(struct ls_strbuf *b, const char *s, size_t n)
{
	memcpy(b->data + b->len, s, n);
	b->len += n;
}

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

static int64_t rel(uint64_t stamp, uint64_t base)
{
	if (!stamp)
		return 0;
	return stamp >= base ? (int64_t)(stamp - base) : -(int64_t)(base - stamp);
}

size_t ls_fields_max_chars(const struct ls_field *t, size_t n)
{
	size_t chars = 0;
	for (size_t i = 0; i < n; i++)
		chars += 4 + strlen(t[i].name) + (t[i].kind == LS_FK_TEXT ? 2 + 6 * (size_t)t[i].size : NUM_CHARS + 2);
	return chars;
}

/* One value of f in obj, into reserved room (a text field's escaping may grow b: checked). */
static int put_value(struct ls_strbuf *b, const struct ls_field *f, const void *obj, uint64_t base)
{
	const char *p = (const char *)obj + f->offset;
	switch (f->kind) {
	case LS_FK_STAMP: sb_i64(b, rel(*(const uint64_t *)p, base)); return 0;
	case LS_FK_U64_STR:
		b->data[b->len++] = '"';
		sb_u64(b, *(const uint64_t *)p);
		b->data[b->len++] = '"';
		return 0;
	case LS_FK_I32: case LS_FK_INT: sb_i64(b, (int64_t)get_u(f, obj)); return 0;
	case LS_FK_DOUBLE: {
		double d = *(const double *)p;
		b->len += (size_t)snprintf(b->data + b->len, NUM_CHARS, "%.17g", isfinite(d) ? d : 0.0);
		return 0;
	}
	case LS_FK_FAIL: {
		const char *name = ls_fail_name(*(const enum ls_fail *)p); /* fixed identifiers: no escaping */
		b->data[b->len++] = '"';
		sb_raw(b, name, strnlen(name, 32));
		b->data[b->len++] = '"';
		return 0;
	}
	case LS_FK_TEXT: return ls_strbuf_json_str(b, p, strnlen(p, f->size));
	default: sb_u64(b, get_u(f, obj)); return 0;
	}
}

int ls_fields_put(struct ls_strbuf *b, const struct ls_field *t, size_t n, const void *obj, uint64_t base,
		  int first)
{
	if (ls_strbuf_reserve(b, ls_fields_max_chars(t, n)))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!first || i)
			b->data[b->len++] = ',';
		b->data[b->len++] = '"';
		sb_raw(b, t[i].name, strlen(t[i].name));
		sb_raw(b, "\":", 2);
		if (put_value(b, &t[i], obj, base))
			return -ENOMEM;
	}
	return 0;
}

int ls_request_late_put(struct ls_strbuf *b, const struct ls_request *r)
{
	if (ls_strbuf_reserve(b, ls_fields_max_chars(ls_request_fields, ls_n_request_fields)))
		return -ENOMEM;
	for (size_t i = 0; i < ls_n_request_fields; i++) {
		const struct ls_field *f = &ls_request_fields[i];
		if (!f->late)
			continue;
		sb_raw(b, ",\"", 2);
		sb_raw(b, f->name, strlen(f->name));
		sb_raw(b, "\":", 2);
		if (put_value(b, f, r, 0))
			return -ENOMEM;
	}
	return 0;
}

int ls_frame_put(struct ls_strbuf *b, const struct ls_frame *f, uint64_t base)
{
	if (ls_strbuf_reserve(b, 2 + ls_n_frame_fields * (NUM_CHARS + 1)))
		return -ENOMEM;
	b->data[b->len++] = '[';
	for (size_t i = 0; i < ls_n_frame_fields; i++) {
		if (i)
			b->data[b->len++] = ',';
		put_value(b, &ls_frame_fields[i], f, base); /* numbers only: cannot fail */
	}
	b->data[b->len++] = ']';
	return 0;
}

int ls_frame_field_names(struct ls_strbuf *b)
{
	int rc = ls_strbuf_puts(b, "[");
	for (size_t i = 0; i < ls_n_frame_fields; i++)
		rc |= ls_strbuf_printf(b, "%s\"%s\"", i ? "," : "", ls_frame_fields[i].name);
	return rc | ls_strbuf_puts(b, "]");
}

/* ---- the reader ---- */

/* base + ahead, saturating at UINT64_MAX. */
static uint64_t after_base(uint64_t base, uint64_t ahead)
{
	return ahead > UINT64_MAX - base ? UINT64_MAX : base + ahead;
}

/* A stamp from its ns after base (negative: before it; 0: did not happen). */
static uint64_t stamp_of(double d, uint64_t base)
{
	if (d == 0.0 || isnan(d))
		return 0;
	if (d < 0.0) {
		uint64_t back = ls_d2u64(-d);
		return base > back ? base - back : 1;
	}
	return after_base(base, ls_d2u64(d));
}

static enum ls_fail fail_of(const char *name)
{
	for (int f = 0; f < LS_FAIL__COUNT; f++)
		if (!strcmp(name, ls_fail_name((enum ls_fail)f)))
			return (enum ls_fail)f;
	return LS_FAIL_OTHER;
}

/* One value of f from v (NULL: absent) into obj. */
static void get_value(const cJSON *v, const struct ls_field *f, void *obj, uint64_t base)
{
	char *p = (char *)obj + f->offset;
	double d = cJSON_IsNumber(v) ? v->valuedouble : f->dflt;
	switch (f->kind) {
	case LS_FK_STAMP: *(uint64_t *)p = stamp_of(cJSON_IsNumber(v) ? d : 0, base); break;
	case LS_FK_U64_STR:
		*(uint64_t *)p = cJSON_IsString(v) ? strtoull(v->valuestring, NULL, 10) : ls_d2u64(d);
		break;
	case LS_FK_U64: case LS_FK_SIZE: set_u(f, obj, ls_d2u64(d)); break;
	case LS_FK_DOUBLE: *(double *)p = d; break;
	case LS_FK_FAIL: *(enum ls_fail *)p = cJSON_IsString(v) ? fail_of(v->valuestring) : LS_OK; break;
	case LS_FK_TEXT: snprintf(p, f->size, "%s", cJSON_IsString(v) ? v->valuestring : ""); break;
	default: set_u(f, obj, (uint64_t)ls_d2i(d, f->lo, f->hi)); break;
	}
}

void ls_fields_get(const void *o, const struct ls_field *t, size_t n, void *obj, uint64_t base)
{
	for (size_t i = 0; i < n; i++)
		if (!t[i].derived)
			get_value(cJSON_GetObjectItemCaseSensitive(o, t[i].name), &t[i], obj, base);
}

void ls_request_late_get(const void *o, struct ls_request *r)
{
	for (size_t i = 0; i < ls_n_request_fields; i++)
		if (ls_request_fields[i].late)
			get_value(cJSON_GetObjectItemCaseSensitive(o, ls_request_fields[i].name), &ls_request_fields[i], r, 0);
}

void ls_request_late_copy(struct ls_request *dst, const struct ls_request *src)
{
	for (size_t i = 0; i < ls_n_request_fields; i++) {
		const struct ls_field *f = &ls_request_fields[i];
		if (f->late)
			memcpy((char *)dst + f->offset, (const char *)src + f->offset, f->size);
	}
}

int ls_frame_get(const void *arr, struct ls_frame *f, uint64_t base)
{
	const cJSON *a = arr;
	if (!cJSON_IsArray(a) || (size_t)cJSON_GetArraySize(a) != ls_n_frame_fields)
		return -EINVAL;
	size_t k = 0;
	for (const cJSON *e = a->child; e; e = e->next, k++) {
		if (!cJSON_IsNumber(e))
			return -EINVAL;
		get_value(e, &ls_frame_fields[k], f, base);
	}
	return 0;
}
