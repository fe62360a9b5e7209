/* test_gpu_ring.c — the per-process step ring: round trip, wrap-around, torn and foreign
 * files, and a reader racing the writer. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common/step_ring.h"

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/latscope-ring.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(gpu_ring, .init = setup, .fini = teardown);

static struct ls_gpu_step step_n(uint64_t i)
{
	return (struct ls_gpu_step){ .pid = 9, .device = (uint32_t)(i % 3), .start_ns = 1000 + i * 100,
				     .end_ns = 1050 + i * 100, .busy_ns = 40, .n_launches = (uint32_t)i,
				     .flags = (uint32_t)(i & 3) };
}

static int consistent(const struct ls_ring_record *r)
{
	uint64_t i = (r->seq - 2) / 2;
	struct ls_gpu_step s = step_n(i);
	return r->start_ns == s.start_ns && r->end_ns == s.end_ns && r->busy_ns == s.busy_ns &&
	       r->device == s.device && r->n_launches == s.n_launches && r->flags == s.flags;
}

Test(gpu_ring, steps_round_trip_with_header)
{
	struct ls_ring_writer w;
	char err[256], path[128];
	cr_assert_eq(ls_ring_create(&w, dir, 4242, 1024, err, sizeof(err)), 0, "%s", err);
	snprintf(path, sizeof(path), "%s/latscope-gpu-4242", dir);
	cr_assert_str_eq(w.path, path);
	ls_ring_set_status(&w, LS_RING_TRACING, "tracing (test)");
	w.hdr->clock = LS_RING_CLOCK_CALLBACK;
	ls_ring_add(&w.hdr->dropped, 3);
	for (uint64_t i = 0; i < 100; i++) {
		struct ls_gpu_step s = step_n(i);
		ls_ring_write(&w, &s, s.end_ns + 7);
	}
	struct ls_ring_snapshot snap;
	cr_assert_eq(ls_ring_read(path, &snap, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(snap.hdr.pid, 4242);
	cr_assert_eq(snap.hdr.state, LS_RING_TRACING);
	cr_assert_eq(snap.hdr.clock, LS_RING_CLOCK_CALLBACK);
	cr_assert_eq(snap.hdr.dropped, 3);
	cr_assert_str_eq(snap.hdr.status, "tracing (test)");
	cr_assert_eq(snap.n_recs, 100);
	cr_assert_eq(snap.overwritten, 0);
	cr_assert_eq(snap.torn, 0);
	for (size_t i = 0; i < snap.n_recs; i++) {
		cr_assert(consistent(&snap.recs[i]));
		cr_assert_eq(snap.recs[i].seq, 2 * i + 2);
		cr_assert_eq(snap.recs[i].written_ns, snap.recs[i].end_ns + 7);
	}
	ls_ring_snapshot_free(&snap);
	ls_ring_close(&w);
}

Test(gpu_ring, a_full_ring_keeps_the_newest_and_counts_the_rest)
{
	struct ls_ring_writer w;
	char err[256];
	cr_assert_eq(ls_ring_create(&w, dir, 7, LS_RING_MIN_CAP, err, sizeof(err)), 0, "%s", err);
	for (uint64_t i = 0; i < 200; i++) {
		struct ls_gpu_step s = step_n(i);
		ls_ring_write(&w, &s, 0);
	}
	struct ls_ring_snapshot snap;
	cr_assert_eq(ls_ring_read(w.path, &snap, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(snap.n_recs, LS_RING_MIN_CAP);
	cr_assert_eq(snap.overwritten, 200 - LS_RING_MIN_CAP);
	cr_assert_eq(snap.recs[0].n_launches, 200 - LS_RING_MIN_CAP);
	cr_assert_eq(snap.recs[snap.n_recs - 1].n_launches, 199);
	ls_ring_snapshot_free(&snap);
	ls_ring_close(&w);
}

Test(gpu_ring, a_record_being_written_is_skipped)
{
	struct ls_ring_writer w;
	char err[256];
	cr_assert_eq(ls_ring_create(&w, dir, 8, 128, err, sizeof(err)), 0, "%s", err);
	for (uint64_t i = 0; i < 10; i++) {
		struct ls_gpu_step s = step_n(i);
		ls_ring_write(&w, &s, 0);
	}
	w.recs[4].seq = 2 * 4 + 1; /* the writer is on record 4 */
	struct ls_ring_snapshot snap;
	cr_assert_eq(ls_ring_read(w.path, &snap, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(snap.n_recs, 9);
	cr_assert_eq(snap.torn, 1);
	ls_ring_snapshot_free(&snap);
	ls_ring_close(&w);
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(data, 1, len, f), len);
	fclose(f);
}

Test(gpu_ring, foreign_short_and_future_files_are_refused)
{
	char path[128], err[512];
	struct ls_ring_snapshot snap;
	snprintf(path, sizeof(path), "%s/latscope-gpu-1", dir);
	write_file(path, "hello", 5);
	cr_assert_eq(ls_ring_read(path, &snap, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, path), "%s", err);

	static char page[8192];
	write_file(path, page, sizeof(page));
	cr_assert_eq(ls_ring_read(path, &snap, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "magic"), "%s", err);

	struct ls_ring_header *h = (struct ls_ring_header *)page;
	h->magic = LS_RING_MAGIC;
	h->version = 99;
	h->header_size = sizeof(*h);
	h->record_size = sizeof(struct ls_ring_record);
	write_file(path, page, sizeof(page));
	cr_assert_eq(ls_ring_read(path, &snap, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "version 99"), "%s", err);

	/* Header says 64 records, 10 written, but the file stops early. */
	h->version = LS_RING_VERSION;
	h->capacity = 64;
	h->head = 10;
	write_file(path, page, LS_RING_DATA_OFFSET + 100);
	cr_assert_eq(ls_ring_read(path, &snap, err, sizeof(err)), -EAGAIN);

	cr_assert_eq(ls_ring_read("/nonexistent/latscope-gpu-1", &snap, err, sizeof(err)), -ENOENT);
}

Test(gpu_ring, create_reports_a_directory_it_cannot_use)
{
	struct ls_ring_writer w;
	char err[256], file[128];
	snprintf(file, sizeof(file), "%s/plain", dir);
	write_file(file, "x", 1);
	cr_assert_lt(ls_ring_create(&w, file, 1, 128, err, sizeof(err)), 0);
	cr_assert(strstr(err, file), "%s", err);
}

struct race {
	struct ls_ring_writer *w;
	int stop;
};

static void *writer_main(void *arg)
{
	struct race *r = arg;
	for (uint64_t i = 0; !__atomic_load_n(&r->stop, __ATOMIC_RELAXED) && i < 2000000; i++) {
		struct ls_gpu_step s = step_n(i);
		ls_ring_write(r->w, &s, 0);
	}
	return NULL;
}

/* Whatever a reader gets while the writer laps the ring is whole and in order. */
Test(gpu_ring, a_reader_racing_the_writer_sees_only_whole_records)
{
	struct ls_ring_writer w;
	char err[256];
	cr_assert_eq(ls_ring_create(&w, dir, 11, 256, err, sizeof(err)), 0, "%s", err);
	struct race r = { .w = &w };
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, writer_main, &r), 0);
	size_t seen = 0;
	for (int spin = 0; spin < 5000 && __atomic_load_n(&w.hdr->head, __ATOMIC_ACQUIRE) < 1000; spin++)
		usleep(1000); /* let the writer get going */
	for (int round = 0; round < 200; round++) {
		struct ls_ring_snapshot snap;
		cr_assert_eq(ls_ring_read(w.path, &snap, err, sizeof(err)), 0, "%s", err);
		for (size_t i = 0; i < snap.n_recs; i++) {
			cr_assert(consistent(&snap.recs[i]), "round %d record %zu torn", round, i);
			if (i)
				cr_assert_gt(snap.recs[i].seq, snap.recs[i - 1].seq);
		}
		seen += snap.n_recs;
		ls_ring_snapshot_free(&snap);
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	/* On a loaded machine the writer can lap the ring during every racing read, and each read
	 * then rightly drops all it copied as torn; once it stops, the ring must read whole. */
	struct ls_ring_snapshot still;
	cr_assert_eq(ls_ring_read(w.path, &still, err, sizeof(err)), 0, "%s", err);
	for (size_t i = 0; i < still.n_recs; i++)
		cr_assert(consistent(&still.recs[i]), "record %zu torn after the writer stopped", i);
	cr_expect_eq(still.torn, 0);
	seen += still.n_recs;
	ls_ring_snapshot_free(&still);
	cr_assert_gt(seen, 0);
	ls_ring_close(&w);
}
