/* 1,000 streams at once, measuring the driver's CPU time per frame (getrusage of this process;
 * the sim is another process). Speed targets live in tests/perf; here the figure is held to a
 * generous bound (about 10x what it costs), and the test asserts what must hold at that scale:
 * every stream completes, every frame the sim wrote is seen. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "base/clock.h"
#include "test_driver_common.h"

TestSuite(driver_perf, .fini = t_sim_fini);

static double cpu_us(double *user)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	*user = (double)ru.ru_utime.tv_sec * 1e6 + (double)ru.ru_utime.tv_usec;
	return *user + (double)ru.ru_stime.tv_sec * 1e6 + (double)ru.ru_stime.tv_usec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

Test(driver_perf, thousand_streams_cpu_per_frame, .timeout = 120)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "10", "--max-batch", "1024", "--prefill-token-us", "0", "--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	struct t_batch b;
	const uint32_t max_tokens = 32;
	t_batch_init(&b, LS_BACKEND_OPENAI, 1000, max_tokens);
	struct ls_driver_opts o;
	char url[256];
	t_opts(&o, &b, &sim, LS_BACKEND_OPENAI, url, sizeof(url));
	double u0, u1;
	double c0 = cpu_us(&u0);
	uint64_t t0 = ls_now_ns();
	cr_assert_eq(t_driver_run(&o, &b), 0);
	uint64_t wall = ls_now_ns() - t0;
	double cpu = cpu_us(&u1) - c0, user = u1 - u0;
	size_t frames = 0;
	for (size_t i = 0; i < b.n; i++) {
		cr_assert_eq(b.recs[i].fail, LS_OK, "request %zu: %s", i, b.recs[i].error);
		frames += b.recs[i].n_frames;
	}
	cr_assert_eq(frames, b.n * (max_tokens + 2), "every token frame + usage + [DONE]");
	cr_log_info("driver: 1000 streams x %u tokens: %zu frames in %.2f s wall, %.0f ms CPU = %.2f us CPU per frame "
		    "(incl. 1000 connects)", max_tokens, frames, (double)wall / 1e9, cpu / 1e3, cpu / (double)frames);
	fprintf(stderr, "driver_perf: %.2f us CPU per frame (user %.2f, system %.2f; %zu frames, 1000 streams)\n",
		cpu / (double)frames, user / (double)frames, (cpu - user) / (double)frames, frames);
	/* CPU time, not wall: a busy host does not move it much. It catches a driver gone
	 * quadratic in its streams or copying each frame around. */
	cr_expect_lt(cpu / (double)frames, 250.0, "driver CPU %.2f us per frame", cpu / (double)frames);

	/* Client delay as the driver sees it: sim's write -> frame complete in the write callback. */
	struct t_truth t;
	cr_assert_eq(t_truth_load(sim.truth, b.run.run_tag, b.n, &t), 0);
	uint64_t *delay = malloc(frames * sizeof(*delay));
	cr_assert_not_null(delay);
	size_t nd = 0;
	for (size_t i = 0; i < b.n; i++) {
		char id[64];
		snprintf(id, sizeof(id), "%s-%zu", b.run.run_tag, i);
		long k = t_truth_find(&t, id);
		cr_assert_geq(k, 0);
		cr_assert_eq(t.n_frames[k], b.recs[i].n_frames);
		for (uint32_t f = 0; f < b.recs[i].n_frames; f++)
			if (b.recs[i].frames[f].arrived_ns >= t.frame_t[k][f])
				delay[nd++] = b.recs[i].frames[f].arrived_ns - t.frame_t[k][f];
	}
	cr_assert_eq(nd, frames, "no frame arrived before the sim wrote it");
	qsort(delay, nd, sizeof(*delay), cmp_u64);
	fprintf(stderr, "driver_perf: sim write -> frame stamped: p50 %.1f us, p90 %.1f us, p99 %.1f us\n",
		(double)delay[nd / 2] / 1e3, (double)delay[nd * 9 / 10] / 1e3, (double)delay[nd * 99 / 100] / 1e3);
	free(delay);
	t_truth_free(&t);
	t_batch_free(&b);
	t_sim_stop_checked(&sim);
}
