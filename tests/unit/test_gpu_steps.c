/* test_gpu_steps.c — the user side of GPU steps: loading rings from a directory, busy time in
 * a window (attribution), the step before a time, and the report's GPU section. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/step_ring.h"
#include "attribution/gpu_steps.h"
#include "report/report.h"

#define US 1000ull
#define MS 1000000ull
#define T0 (1000 * MS)

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/latscope-gsteps.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(gpu_steps, .init = setup, .fini = teardown);

static struct ls_gpu_step mk(uint32_t pid, uint32_t dev, uint64_t start, uint64_t end,
			     uint64_t busy, uint32_t flags)
{
	return (struct ls_gpu_step){ .pid = pid, .device = dev, .start_ns = start, .end_ns = end,
				     .busy_ns = busy, .n_launches = 3, .flags = flags };
}

static void make_ring(uint32_t pid, const struct ls_gpu_step *s, size_t n, uint32_t state,
		      const char *status)
{
	struct ls_ring_writer w;
	char err[256];
	cr_assert_eq(ls_ring_create(&w, dir, pid, 1024, err, sizeof(err)), 0, "%s", err);
	w.hdr->clock = LS_RING_CLOCK_CALLBACK;
	for (size_t i = 0; i < n; i++)
		ls_ring_write(&w, &s[i], s[i].end_ns + 30 * MS);
	ls_ring_set_status(&w, state, status);
	ls_ring_close(&w);
}

Test(gpu_steps, loads_every_ring_sorted_by_end_and_filters_by_window)
{
	struct ls_gpu_step a[3], b[3];
	for (int i = 0; i < 3; i++) {
		a[i] = mk(0, 0, T0 + (uint64_t)i * 10 * MS, T0 + (uint64_t)i * 10 * MS + 8 * MS, 6 * MS, 0);
		b[i] = mk(0, 1, T0 + (uint64_t)i * 10 * MS + 1 * MS, T0 + (uint64_t)i * 10 * MS + 9 * MS,
			  7 * MS, 0);
	}
	make_ring(100, a, 3, LS_RING_TRACING, "tracing");
	make_ring(200, b, 3, LS_RING_TRACING, "tracing");
	make_ring(300, NULL, 0, LS_RING_DISABLED, "another CUPTI client holds the process");
	char junk[128];
	snprintf(junk, sizeof(junk), "%s/latscope-gpu-999", dir); /* not a ring: skipped */
	FILE *f = fopen(junk, "w");
	cr_assert_not_null(f);
	fputs("junk", f);
	fclose(f);
	snprintf(junk, sizeof(junk), "%s/unrelated-file", dir);
	f = fopen(junk, "w");
	cr_assert_not_null(f);
	fclose(f);

	struct ls_gpu_steps gs;
	cr_assert_eq(ls_gpu_steps_load(dir, 0, 0, &gs), 0);
	cr_assert_eq(gs.n_sources, 3);
	cr_assert_eq(gs.n, 6);
	for (size_t i = 1; i < gs.n; i++)
		cr_assert_leq(gs.steps[i - 1].end_ns, gs.steps[i].end_ns);
	cr_assert_eq(gs.steps[0].pid, 100);
	cr_assert_eq(gs.steps[1].pid, 200);
	cr_assert_eq(gs.steps[1].device, 1);
	for (size_t i = 0; i < gs.n_sources; i++)
		if (gs.sources[i].pid != 300)
			cr_assert_eq(gs.sources[i].max_delay_ns, 30 * MS);
	ls_gpu_steps_free(&gs);

	/* Only the steps that overlap [T0 + 9.5 ms, T0 + 12 ms]. */
	cr_assert_eq(ls_gpu_steps_load(dir, T0 + 9500 * US, T0 + 12 * MS, &gs), 0);
	cr_assert_eq(gs.n, 2);
	cr_assert_eq(gs.steps[0].start_ns, T0 + 10 * MS);
	cr_assert_eq(gs.steps[1].start_ns, T0 + 11 * MS);
	ls_gpu_steps_free(&gs);
}

Test(gpu_steps, a_missing_directory_is_an_error_an_empty_one_is_not)
{
	struct ls_gpu_steps gs;
	cr_assert_eq(ls_gpu_steps_load("/nonexistent/latscope", 0, 0, &gs), -ENOENT);
	cr_assert_eq(ls_gpu_steps_load(dir, 0, 0, &gs), 0);
	cr_assert_eq(gs.n_sources, 0);
	cr_assert_eq(gs.n, 0);
	ls_gpu_steps_free(&gs);
}

Test(gpu_steps, busy_in_prorates_partial_steps)
{
	struct ls_gpu_step s[] = {
		mk(1, 0, T0, T0 + 10 * MS, 8 * MS, 0),
		mk(1, 0, T0 + 12 * MS, T0 + 22 * MS, 10 * MS, 0),
	};
	cr_assert_eq(ls_gpu_busy_in(s, 2, T0, T0 + 10 * MS), 8 * MS);
	cr_assert_eq(ls_gpu_busy_in(s, 2, T0 + 5 * MS, T0 + 17 * MS), 4 * MS + 5 * MS);
	cr_assert_eq(ls_gpu_busy_in(s, 2, T0 - 5 * MS, T0 + 30 * MS), 18 * MS);
	cr_assert_eq(ls_gpu_busy_in(s, 2, T0 + 10 * MS, T0 + 12 * MS), 0); /* the idle gap */
	cr_assert_eq(ls_gpu_busy_in(s, 2, T0 + 30 * MS, T0 + 40 * MS), 0);
	cr_assert_eq(ls_gpu_busy_in(s, 2, T0 + 5 * MS, T0 + 5 * MS), 0);
	cr_assert_eq(ls_gpu_busy_in(NULL, 0, T0, T0 + MS), 0);
}

/* Tensor-parallel ranks run the same step side by side: the window was GPU-bound as long as
 * its busiest device, not the sum. */
Test(gpu_steps, busy_in_takes_the_busiest_device)
{
	struct ls_gpu_step s[] = {
		mk(1, 0, T0, T0 + 10 * MS, 6 * MS, 0),
		mk(2, 1, T0, T0 + 10 * MS, 9 * MS, 0),
		mk(1, 0, T0 + 10 * MS, T0 + 20 * MS, 6 * MS, 0),
		mk(2, 1, T0 + 10 * MS, T0 + 20 * MS, 2 * MS, 0),
	};
	ls_gpu_steps_sort(s, 4);
	cr_assert_eq(ls_gpu_busy_in(s, 4, T0, T0 + 10 * MS), 9 * MS);
	cr_assert_eq(ls_gpu_busy_in(s, 4, T0, T0 + 20 * MS), 12 * MS);
	/* 1 ms inside both first steps: device 1's 9 of 10 ms busy gives 0.9 ms, device 0's 0.6. */
	cr_assert_eq(ls_gpu_busy_in(s, 4, T0 + 1 * MS, T0 + 2 * MS), 900 * US);
}

Test(gpu_steps, busy_in_finds_a_long_step_that_ends_after_many_short_ones)
{
	static struct ls_gpu_step s[2001];
	for (int i = 0; i < 2000; i++) /* device 0: 2000 short steps */
		s[i] = mk(1, 0, T0 + (uint64_t)i * MS, T0 + (uint64_t)i * MS + 500 * US, 500 * US, 0);
	s[2000] = mk(1, 1, T0, T0 + 1900 * MS, 1900 * MS, 0); /* device 1: one long prefill */
	ls_gpu_steps_sort(s, 2001);
	cr_assert_eq(ls_gpu_busy_in(s, 2001, T0 + 100 * MS, T0 + 110 * MS), 10 * MS);
}

Test(gpu_steps, step_before_is_the_latest_step_ended_by_then)
{
	struct ls_gpu_step s[] = {
		mk(1, 0, T0, T0 + 10 * MS, 8 * MS, 0),
		mk(1, 0, T0 + 12 * MS, T0 + 22 * MS, 10 * MS, 0),
		mk(1, 0, T0 + 22 * MS, T0 + 30 * MS, 8 * MS, 0),
	};
	cr_assert_null(ls_gpu_step_before(s, 3, T0 + 9 * MS));
	cr_assert_eq(ls_gpu_step_before(s, 3, T0 + 10 * MS), &s[0]);
	cr_assert_eq(ls_gpu_step_before(s, 3, T0 + 21 * MS), &s[0]);
	cr_assert_eq(ls_gpu_step_before(s, 3, T0 + 22 * MS), &s[1]);
	cr_assert_eq(ls_gpu_step_before(s, 3, T0 + 99 * MS), &s[2]);
	cr_assert_null(ls_gpu_step_before(s, 0, T0));
}

Test(gpu_steps, summary_splits_prefill_and_measures_busy_and_gaps)
{
	struct ls_gpu_step st[12];
	uint64_t t = T0;
	for (int i = 0; i < 12; i++) {
		int prefill = i % 4 == 0;
		uint64_t dur = prefill ? 40 * MS : 10 * MS;
		st[i] = mk(5, 0, t, t + dur, dur / 2, prefill ? LS_GPU_STEP_PREFILL : 0);
		t += dur + 2 * MS;
	}
	st[11].flags |= LS_GPU_STEP_FALLBACK;
	make_ring(5, st, 12, LS_RING_TRACING, "tracing");
	struct ls_gpu_steps gs;
	cr_assert_eq(ls_gpu_steps_load(dir, 0, 0, &gs), 0);
	struct ls_gpu_summary sum;
	cr_assert_eq(ls_gpu_summarize(&gs, 0, 0, &sum), 0);
	cr_assert_eq(sum.steps, 12);
	cr_assert_eq(sum.prefill_steps, 3);
	cr_assert_eq(sum.decode_steps, 9);
	cr_assert_eq(sum.fallback_steps, 1);
	cr_assert_eq(sum.prefill_p50_ns, 40 * MS);
	cr_assert_eq(sum.decode_p99_ns, 10 * MS);
	cr_assert_eq(sum.step_p50_ns, 10 * MS);
	cr_assert_eq(sum.step_p99_ns, 40 * MS);
	cr_assert_eq(sum.idle_gaps, 11);
	cr_assert_eq(sum.idle_p50_ns, 2 * MS);
	cr_assert_eq(sum.n_streams, 1);
	/* busy = half of each step; window = 3*40 + 9*10 + 11*2 ms */
	double want = (0.5 * (3 * 40 + 9 * 10)) / (3 * 40 + 9 * 10 + 11 * 2);
	cr_assert_float_eq(sum.busy_fraction, want, 1e-9);
	cr_assert_eq(sum.clocks, 1u << LS_RING_CLOCK_CALLBACK);

	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	ls_gpu_report_print(out, &gs, 0, 0);
	fclose(out);
	cr_assert(strstr(text, "steps seen             12 (prefill-bearing 3, decode-only 9)"), "%s", text);
	cr_assert(strstr(text, "prefill-bearing"), "%s", text);
	cr_assert(strstr(text, "GPU busy"), "%s", text);
	cr_assert(strstr(text, "idle between steps"), "%s", text);
	cr_assert(strstr(text, "timestamp callback"), "%s", text);
	free(text);
	ls_gpu_steps_free(&gs);
}

/* Step percentiles are numpy's linear ones (base/stats.h), as every other figure in the report:
 * steps of 10, 20, 30 and 40 ms have a P50 of 25 ms and a P99 of 39.7 ms (nearest rank, used
 * here before, said 20 and 40). */
Test(gpu_steps, summary_percentiles_interpolate_as_numpy)
{
	struct ls_gpu_step st[4];
	uint64_t t = T0;
	for (int i = 0; i < 4; i++) {
		uint64_t dur = (uint64_t)(i + 1) * 10 * MS;
		st[i] = mk(6, 0, t, t + dur, dur / 2, 0);
		t += dur + 1 * MS;
	}
	make_ring(6, st, 4, LS_RING_TRACING, "tracing");
	struct ls_gpu_steps gs;
	cr_assert_eq(ls_gpu_steps_load(dir, 0, 0, &gs), 0);
	struct ls_gpu_summary sum;
	cr_assert_eq(ls_gpu_summarize(&gs, 0, 0, &sum), 0);
	cr_expect_eq(sum.step_p50_ns, 25 * MS);
	cr_expect_eq(sum.step_p99_ns, 39700 * US);
	cr_expect_eq(sum.idle_p50_ns, 1 * MS);
	ls_gpu_steps_free(&gs);
}

Test(gpu_steps, report_says_why_a_process_was_not_traced_and_when_nothing_was_found)
{
	make_ring(77, NULL, 0, LS_RING_DISABLED, "another CUPTI client holds the process");
	struct ls_gpu_steps gs;
	cr_assert_eq(ls_gpu_steps_load(dir, 0, 0, &gs), 0);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	ls_gpu_report_print(out, &gs, 0, 0);
	fclose(out);
	cr_assert(strstr(text, "pid 77 not traced: another CUPTI client"), "%s", text);
	free(text);
	ls_gpu_steps_free(&gs);

	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -f '%s'/latscope-gpu-*", dir);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(ls_gpu_steps_load(dir, 0, 0, &gs), 0);
	out = open_memstream(&text, &len);
	ls_gpu_report_print(out, &gs, 0, 0);
	fclose(out);
	cr_assert(strstr(text, "no step records in"), "%s", text);
	cr_assert(strstr(text, "CUDA_INJECTION64_PATH"), "%s", text);
	free(text);
	ls_gpu_steps_free(&gs);
}
