/* An MPI run's clock and files without MPI: the clock fit (mpi_clock.c) moves a rank's stamps
 * into rank 0's clock, drift included; a rank file (FILE.rank<K>) reads back in rank 0's clock;
 * ls_record_load_many merges rank files into one run, each request once; and nothing touches
 * MPI unless a launcher's variables are there. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mpi/mpi.h"
#include "report/record_file.h"

#define T0 7000000000000ull /* rank 0's clock, CLOCK_MONOTONIC-sized */

Test(mpi_clock, offset_only_and_zero)
{
	struct ls_clock_fit f = { .offset_ns = 2500000, .unc_ns = 40000, .at_ns = T0 };
	cr_expect_eq(ls_clock_to_root(&f, T0 + 2500000 + 123), T0 + 123);
	cr_expect_eq(ls_clock_to_root(&f, 0), 0, "0 stays 'did not happen'");
	struct ls_clock_fit back = { .offset_ns = -1000, .at_ns = T0 };
	cr_expect_eq(ls_clock_to_root(&back, T0 - 1000), T0);
	cr_expect_eq(ls_clock_drift_ppm(&f), 0);
}

Test(mpi_clock, drift_is_linear_between_the_samples)
{
	/* 10 us more offset over 10 s: 1 ppm. Halfway the offset is halfway. */
	struct ls_clock_fit f = { .offset_ns = 1000000, .at_ns = T0, .have_after = 1, .offset_after_ns = 1010000,
				  .after_at_ns = T0 + 10000000000ull };
	cr_expect_float_eq(ls_clock_drift_ppm(&f), 1.0, 1e-9);
	cr_expect_eq(ls_clock_offset_at(&f, T0 + 5000000000ull), 1005000);
	uint64_t t_local = T0 + 5000000000ull + 1005000;
	cr_expect_eq(ls_clock_to_root(&f, t_local), T0 + 5000000000ull);
	struct ls_request r = { 0 };
	ls_request_reset(&r, 3);
	r.scheduled_ns = T0 + 1000000;
	r.finished_ns = T0 + 10000000000ull + 1010000;
	struct ls_frame *fr = ls_request_add_frame(&r);
	cr_assert_not_null(fr);
	fr->arrived_ns = t_local;
	ls_clock_request_to_root(&f, &r);
	cr_expect_eq(r.scheduled_ns, T0);
	cr_expect_eq(r.finished_ns, T0 + 10000000000ull);
	cr_expect_eq(r.frames[0].arrived_ns, T0 + 5000000000ull);
	cr_expect_eq(r.started_ns, 0);
	ls_request_free(&r);
}

/* A rank file whose clock runs offset_ns ahead of rank 0's, with requests ids[] (stamps in
 * rank 0's time ids[i] ms after T0, written in the rank's clock). */
static void write_rank(const char *path, int rank, int64_t offset_ns, const uint64_t *ids, size_t n, int end)
{
	struct ls_record_meta m = { .target_rate = 10, .mpi_rank = rank, .mpi_size = 2,
				    .clock = { .offset_ns = offset_ns, .unc_ns = 5000, .at_ns = T0 },
				    .run_start_ns = T0 + (uint64_t)offset_ns, .base_ns = T0 + (uint64_t)offset_ns - 1000000 };
	snprintf(m.run_tag, sizeof(m.run_tag), "lsTEST");
	snprintf(m.profile, sizeof(m.profile), "vllm");
	struct ls_record_writer *w = ls_record_open(path, &m);
	cr_assert_not_null(w);
	struct ls_run run = { .start_ns = T0 + (uint64_t)offset_ns };
	for (size_t i = 0; i < n; i++) {
		struct ls_request r = { 0 };
		ls_request_reset(&r, ids[i]);
		r.scheduled_ns = r.started_ns = T0 + (uint64_t)offset_ns + ids[i] * 1000000;
		r.finished_ns = r.started_ns + 500000;
		struct ls_frame *fr = ls_request_add_frame(&r);
		cr_assert_not_null(fr);
		fr->arrived_ns = r.started_ns + 100000;
		fr->flags = LS_FRAME_CHOICES;
		cr_assert_eq(ls_record_write(w, &r), 0);
		ls_request_free(&r);
	}
	run.n_requests = n;
	cr_assert_eq(ls_record_close(w, end ? &run : NULL), 0);
}

Test(mpi_files, rank_files_merge_in_rank0_clock_each_request_once)
{
	char a[64], b[64];
	snprintf(a, sizeof(a), "/tmp/latscope-mpi-%d.rank0", (int)getpid());
	snprintf(b, sizeof(b), "/tmp/latscope-mpi-%d.rank1", (int)getpid());
	uint64_t ids0[] = { 0, 2, 4 }, ids1[] = { 1, 3, 4 }; /* 4 in both: counted once */
	write_rank(a, 0, 0, ids0, 3, 1);
	write_rank(b, 1, 3000000000ll, ids1, 3, 0); /* 3 s ahead, killed: no run_end */
	const char *paths[] = { a, b };
	struct ls_run run;
	struct ls_record_meta meta;
	cr_assert_eq(ls_record_load_many(paths, 2, &run, &meta), 0);
	cr_expect_eq(run.n_requests, 5);
	for (size_t i = 0; i < run.n_requests; i++) {
		const struct ls_request *r = &run.requests[i];
		cr_expect_eq(r->id, i);
		cr_expect_eq(r->scheduled_ns, T0 + i * 1000000, "request %zu not in rank 0's clock", i);
		cr_expect_eq(r->frames[0].arrived_ns, T0 + i * 1000000 + 100000);
	}
	cr_expect_eq(run.start_ns, T0);
	cr_expect_eq(meta.complete, 0, "one file was cut");
	cr_expect(run.interrupted);
	ls_run_free(&run);
	unlink(a);
	unlink(b);
}

Test(mpi_env, launched_only_by_a_launcher)
{
	const char *vars[] = { "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_NTASKS", "SLURM_STEP_ID",
			       "SLURM_PROCID" };
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	cr_expect_eq(ls_mpi_launched(), 0);
	setenv("SLURM_NTASKS", "4", 1); /* an sbatch script: not a task of a step */
	cr_expect_eq(ls_mpi_launched(), 0);
	setenv("SLURM_STEP_ID", "0", 1);
	setenv("SLURM_PROCID", "2", 1);
	cr_expect_eq(ls_mpi_launched(), 1);
	unsetenv("SLURM_NTASKS");
	setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
	cr_expect_eq(ls_mpi_launched(), 1);
}

Test(mpi_clock, a_hostile_fit_stays_defined)
{
	/* Offsets a record file could claim: every result is a stamp (not 0), no overflow (UBSan). */
	struct ls_clock_fit f = { .offset_ns = INT64_MIN, .at_ns = UINT64_MAX, .have_after = 1,
				  .offset_after_ns = INT64_MAX, .after_at_ns = 1 };
	cr_expect_neq(ls_clock_to_root(&f, 1), 0);
	cr_expect_neq(ls_clock_to_root(&f, UINT64_MAX), 0);
	struct ls_clock_fit big = { .offset_ns = INT64_MAX };
	cr_expect_eq(ls_clock_to_root(&big, 5), 1, "a stamp before the clock's zero is 1");
}
