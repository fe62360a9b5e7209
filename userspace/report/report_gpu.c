/* report_gpu.c — the report's "GPU steps" section: what CUPTI saw of the engine's steps in the
 * run's window (attribution/gpu_steps.h summarises, this prints). */
#include <stdio.h>
#include "report/report.h"
#include "common/step_ring.h"

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

static const char *clock_words(uint32_t clocks)
{
	if (clocks == (1u << 1))
		return "CUPTI stamps in CLOCK_MONOTONIC (timestamp callback)";
	if (clocks == (1u << 2))
		return "CUPTI clock + calibrated offset";
	if (clocks == ((1u << 1) | (1u << 2)))
		return "mixed: timestamp callback in some processes, calibrated offset in others";
	return "none";
}

void ls_gpu_report_print(FILE *out, const struct ls_gpu_steps *gs, uint64_t from_ns,
			 uint64_t to_ns)
{
	struct ls_gpu_summary s;
	if (!gs->n_sources) {
		fprintf(out, "GPU: no step records in %s (start the engine with "
			"CUDA_INJECTION64_PATH=<latscope>/gpu/liblatscope_cupti.so)\n",
			gs->dir[0] ? gs->dir : LS_RING_DEFAULT_DIR);
		return;
	}
	if (ls_gpu_summarize(gs, from_ns, to_ns, &s) < 0) {
		fprintf(out, "GPU: out of memory summarising %zu steps\n", gs->n);
		return;
	}
	fprintf(out, "GPU steps (CUPTI: %zu process%s tracing, %zu device stream%s; clock: %s)\n",
		s.n_tracing, s.n_tracing == 1 ? "" : "es", s.n_streams, s.n_streams == 1 ? "" : "s",
		clock_words(s.clocks));
	fprintf(out, "  %-22s %llu", "steps seen", (unsigned long long)s.steps);
	if (s.prefill_steps)
		fprintf(out, " (prefill-bearing %llu, decode-only %llu)",
			(unsigned long long)s.prefill_steps, (unsigned long long)s.decode_steps);
	if (s.fallback_steps)
		fprintf(out, "; %llu cut by sync/idle fallback", (unsigned long long)s.fallback_steps);
	fputc('\n', out);
	if (s.steps) {
		fprintf(out, "  %-22s p50 %8.3f ms   p99 %8.3f ms\n", "step time", ms(s.step_p50_ns),
			ms(s.step_p99_ns));
		if (s.prefill_steps) {
			fprintf(out, "  %-22s p50 %8.3f ms   p99 %8.3f ms\n", "  prefill-bearing",
				ms(s.prefill_p50_ns), ms(s.prefill_p99_ns));
			if (s.decode_steps)
				fprintf(out, "  %-22s p50 %8.3f ms   p99 %8.3f ms\n", "  decode-only",
					ms(s.decode_p50_ns), ms(s.decode_p99_ns));
		}
		fprintf(out, "  %-22s %.1f%% of %.3f s per device stream\n", "GPU busy",
			100.0 * s.busy_fraction, (double)s.window_ns / 1e9);
		if (s.idle_gaps)
			fprintf(out, "  %-22s p50 %8.3f ms   p99 %8.3f ms   (%llu gaps)\n",
				"idle between steps", ms(s.idle_p50_ns), ms(s.idle_p99_ns),
				(unsigned long long)s.idle_gaps);
		fprintf(out, "  %-22s %.1f ms (step end -> record written)\n", "record delay max",
			ms(s.max_delay_ns));
	}
	if (s.max_clock_error_ns)
		fprintf(out, "  %-22s +-%.1f us\n", "clock offset error", (double)s.max_clock_error_ns / 1e3);
	if (s.dropped || s.late || s.overwritten || s.torn || s.too_long)
		fprintf(out, "  %-22s %llu activity records dropped, %llu late; %llu steps "
			"overwritten, %llu torn, %llu too long\n", "lost",
			(unsigned long long)s.dropped, (unsigned long long)s.late,
			(unsigned long long)s.overwritten, (unsigned long long)s.torn,
			(unsigned long long)s.too_long);
	for (size_t i = 0; i < gs->n_sources; i++)
		if (gs->sources[i].state != 1)
			fprintf(out, "  pid %u not traced: %s\n", gs->sources[i].pid,
				gs->sources[i].status[0] ? gs->sources[i].status : "starting");
}
