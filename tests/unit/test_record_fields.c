/* test_record_fields.c — every field of the record tables (base/record_fields.h) goes through every
 * path that moves a record: the record file's writer and reader, the move into rank 0's clock, an
 * MPI rank's raw packing, a run's copy and the merge of ranks' runs. Each field gets a value of its
 * own, so a field a path drops, swaps with another or clamps wrong fails here by name; a field
 * added to a table is tested with no edit to this file. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/record_fields.h"
#include "mpi/mpi.h"
#include "report/record_file.h"

#define BASE 7000000000000ull

/* Field i's own value, in its kind's range (stamps after BASE; text a word). */
static void set_field(const struct ls_field *f, void *obj, size_t i)
{
	char *p = (char *)obj + f->offset;
	uint64_t v = 1000 + 37 * (uint64_t)i;
	switch (f->kind) {
	case LS_FK_STAMP: *(uint64_t *)p = BASE + 1000000 * (i + 1) + i; break;
	case LS_FK_U64: case LS_FK_U64_STR: *(uint64_t *)p = f->kind == LS_FK_U64_STR ? (1ull << 60) + i : v; break;
	case LS_FK_U32: *(uint32_t *)p = (uint32_t)v; break;
	case LS_FK_SIZE: *(size_t *)p = v; break;
	case LS_FK_DOUBLE: *(double *)p = 0.25 + (double)i; break;
	case LS_FK_FAIL: *(enum ls_fail *)p = LS_FAIL_TIMEOUT; break;
	case LS_FK_TEXT: snprintf(p, f->size, "field \"%zu\"", i); break;
	default: { /* I32, INT: a value inside the reader's clamp, not its default */
		int64_t x = f->hi > f->lo + 2 ? f->lo + 2 : f->hi;
		if (f->hi - f->lo > 100)
			x = f->lo + (int64_t)(v % (uint64_t)(f->hi - f->lo));
		if (f->kind == LS_FK_I32)
			*(int32_t *)p = (int32_t)x;
		else
			*(int *)p = (int)x;
	}
	}
}

static void fill(const struct ls_field *t, size_t n, void *obj)
{
	for (size_t i = 0; i < n; i++)
		set_field(&t[i], obj, i);
}

/* Each field of want equals got's, by name. */
static void expect_same(const struct ls_field *t, size_t n, const void *want, const void *got, const char *path)
{
	for (size_t i = 0; i < n; i++) {
		if (t[i].derived)
			continue;
		const char *a = (const char *)want + t[i].offset, *b = (const char *)got + t[i].offset;
		cr_expect(!memcmp(a, b, t[i].size), "%s: field %s lost or changed", path, t[i].name);
	}
}

static char *tmp_path(void)
{
	static char path[64];
	snprintf(path, sizeof(path), "/tmp/ls-fields-%d.jsonl", (int)getpid());
	return path;
}

Test(record_fields, every_request_and_frame_field_through_the_file)
{
	struct ls_request r;
	memset(&r, 0, sizeof(r));
	fill(ls_request_fields, ls_n_request_fields, &r);
	for (int k = 0; k < 3; k++)
		fill(ls_frame_fields, ls_n_frame_fields, ls_request_add_frame(&r));
	r.warmup = 0; /* the reader keeps warmups first: one request either way */
	const char *path = tmp_path();
	struct ls_record_meta meta = { .base_ns = BASE };
	struct ls_record_writer *w = ls_record_open(path, &meta);
	cr_assert_not_null(w);
	cr_assert_eq(ls_record_write(w, &r), 0);
	struct ls_run run = { .requests = &r, .n_requests = 1 };
	fill(ls_run_fields, ls_n_run_fields, &run);
	run.requests = &r;
	run.n_requests = 1;
	run.n_warmup = 0;
	cr_assert_eq(ls_record_close(w, &run), 0);

	struct ls_run back;
	struct ls_record_meta m;
	cr_assert_eq(ls_record_load(path, &back, &m), 0);
	unlink(path);
	cr_assert_eq(back.n_requests, 1);
	expect_same(ls_request_fields, ls_n_request_fields, &r, &back.requests[0], "record file");
	cr_assert_eq(back.requests[0].n_frames, 3);
	for (int k = 0; k < 3; k++)
		expect_same(ls_frame_fields, ls_n_frame_fields, &r.frames[k], &back.requests[0].frames[k], "frame");
	expect_same(ls_run_fields, ls_n_run_fields, &run, &back, "run_end line");
	ls_run_free(&back);
	ls_request_free(&r);
}

/* The engine's account joined after a request's line (TensorRT-LLM's /perf_metrics): its late
 * fields come on a later "latscope_engine" line and the reader puts them into that request, every
 * late field by name, no other field touched; a late line for a request not in the file changes
 * nothing. */
Test(record_fields, late_fields_on_a_later_line_join_their_request)
{
	struct ls_request r[2], joined;
	memset(r, 0, sizeof(r));
	for (int k = 0; k < 2; k++) {
		ls_request_reset(&r[k], (uint64_t)k + 3);
		r[k].sent_ns = BASE + 1000 + (uint64_t)k;
	}
	memset(&joined, 0, sizeof(joined));
	fill(ls_request_fields, ls_n_request_fields, &joined);
	size_t n_late = 0;
	for (size_t i = 0; i < ls_n_request_fields; i++) {
		cr_expect(!ls_request_fields[i].late || ls_request_fields[i].kind != LS_FK_STAMP,
			  "%s: a late field is written with no base: no stamp", ls_request_fields[i].name);
		n_late += ls_request_fields[i].late;
	}
	cr_assert_gt(n_late, 0);
	joined.id = 4; /* the second request */
	joined.warmup = 0;
	struct ls_request want = r[1], stray = joined;
	ls_request_late_copy(&want, &joined);
	stray.id = 99;
	const char *path = tmp_path();
	struct ls_record_meta meta = { .base_ns = BASE };
	struct ls_record_writer *w = ls_record_open(path, &meta);
	cr_assert_not_null(w);
	cr_assert_eq(ls_record_write(w, &r[1]), 0);
	cr_assert_eq(ls_record_write(w, &r[0]), 0);
	cr_assert_eq(ls_record_write_late(w, &joined), 0);
	cr_assert_eq(ls_record_write_late(w, &stray), 0);
	struct ls_run run = { .requests = r, .n_requests = 2 };
	cr_assert_eq(ls_record_close(w, &run), 0);

	struct ls_run back;
	cr_assert_eq(ls_record_load(path, &back, NULL), 0);
	unlink(path);
	cr_assert_eq(back.n_requests, 2, "a late line is no request");
	expect_same(ls_request_fields, ls_n_request_fields, &r[0], &back.requests[0], "request without a late line");
	expect_same(ls_request_fields, ls_n_request_fields, &want, &back.requests[1], "request with a late line");
	ls_run_free(&back);
}

static uint64_t plus_5s(void *ctx, uint64_t t)
{
	(void)ctx;
	return t + 5000000000ull;
}

/* The clock move touches exactly the stamps: each moved by the map, every other field as it was. */
static void expect_moved(const struct ls_field *t, size_t n, const void *before, const void *after, const char *what)
{
	for (size_t i = 0; i < n; i++) {
		const char *a = (const char *)before + t[i].offset, *b = (const char *)after + t[i].offset;
		if (t[i].kind == LS_FK_STAMP)
			cr_expect_eq(*(const uint64_t *)b, *(const uint64_t *)a + 5000000000ull, "%s: stamp %s not moved",
				     what, t[i].name);
		else
			cr_expect(!memcmp(a, b, t[i].size), "%s: %s is not a stamp and was changed", what, t[i].name);
	}
}

Test(record_fields, the_clock_move_moves_every_stamp_and_only_stamps)
{
	struct ls_request r, before;
	memset(&r, 0, sizeof(r));
	fill(ls_request_fields, ls_n_request_fields, &r);
	fill(ls_frame_fields, ls_n_frame_fields, ls_request_add_frame(&r));
	struct ls_frame frame0 = r.frames[0];
	before = r;
	ls_request_map_stamps(&r, plus_5s, NULL);
	expect_moved(ls_request_fields, ls_n_request_fields, &before, &r, "request");
	expect_moved(ls_frame_fields, ls_n_frame_fields, &frame0, &r.frames[0], "frame");
	/* The MPI move is the same walk, through the rank's fit: an offset of -5 s moves +5 s. */
	struct ls_clock_fit fit = { .offset_ns = -5000000000ll };
	struct ls_request r2 = before;
	struct ls_frame f2 = frame0;
	r2.frames = &f2;
	r2.n_frames = 1;
	ls_clock_request_to_root(&fit, &r2);
	expect_moved(ls_request_fields, ls_n_request_fields, &before, &r2, "request to rank 0");
	expect_moved(ls_frame_fields, ls_n_frame_fields, &frame0, &f2, "frame to rank 0");
	struct ls_run run, run_before;
	memset(&run, 0, sizeof(run));
	fill(ls_run_fields, ls_n_run_fields, &run);
	run_before = run;
	ls_clock_run_to_root(&fit, &run);
	expect_moved(ls_run_fields, ls_n_run_fields, &run_before, &run, "run");
	ls_request_free(&r);
}

Test(record_fields, a_rank_packs_records_whole)
{
	/* A rank sends its records as their structs (bench_mpi.c gather_out): every field travels. */
	struct ls_request r, got;
	memset(&r, 0, sizeof(r));
	fill(ls_request_fields, ls_n_request_fields, &r);
	char msg[sizeof(r)];
	memcpy(msg, &r, sizeof(r));
	memcpy(&got, msg, sizeof(got));
	expect_same(ls_request_fields, ls_n_request_fields, &r, &got, "MPI packing");
}

Test(record_fields, copy_and_merge_follow_each_fields_rule)
{
	struct ls_run a, b, m;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	memset(&m, 0, sizeof(m));
	fill(ls_run_fields, ls_n_run_fields, &a);
	ls_run_copy_fields(&m, &a);
	expect_same(ls_run_fields, ls_n_run_fields, &a, &m, "copy");
	fill(ls_run_fields, ls_n_run_fields, &b);
	ls_run_merge_fields(&m, &b); /* equal runs: min, max, or keep the value; sums double it */
	for (size_t i = 0; i < ls_n_run_fields; i++) {
		const struct ls_field *f = &ls_run_fields[i];
		if (f->derived)
			continue;
		const char *x = (const char *)&a + f->offset, *y = (const char *)&m + f->offset;
		if (f->merge == LS_FM_SUM) {
			uint64_t v = f->kind == LS_FK_U32 ? *(const uint32_t *)x : *(const uint64_t *)x;
			uint64_t w = f->kind == LS_FK_U32 ? *(const uint32_t *)y : *(const uint64_t *)y;
			cr_expect_eq(w, 2 * v, "merge: %s is a sum", f->name);
		} else {
			cr_expect(!memcmp(x, y, f->size), "merge: %s of two equal runs changed", f->name);
		}
	}
	/* The first time it happened: a rank's zero (never) does not win. */
	struct ls_run c = { .server_gone_ns = 0, .start_ns = 9 }, d = { .server_gone_ns = 77, .start_ns = 3 };
	ls_run_merge_fields(&c, &d);
	cr_expect_eq(c.server_gone_ns, 77);
	cr_expect_eq(c.start_ns, 3);
}
