/* gpu_steps.h — the engine's GPU steps as latscope's user side sees them: loaded from the
 * rings liblatscope_cupti.so writes (gpu/common/step_ring.h), queried by attribution, and
 * summarised for the report's GPU section. All times CLOCK_MONOTONIC ns. */
#ifndef LATSCOPE_GPU_STEPS_H
#define LATSCOPE_GPU_STEPS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "base/record.h"
#include "common/gpu_step.h"

/* No step is longer (the library cuts steps there; the loader drops longer ones). The busy
 * and lookup functions rely on it to bound their scans. */
#define LS_GPU_STEP_MAX_NS (2ull * 1000 * 1000 * 1000)

/* One traced process (one ring file). */
struct ls_gpu_source {
	uint32_t pid;
	uint32_t state;            /* enum ls_ring_state: 1 tracing, 2 disabled (status says why) */
	uint32_t clock;            /* enum ls_ring_clock: 1 CUPTI callback, 2 calibrated offset */
	uint32_t n_steps;          /* steps of this source kept (inside the window) */
	uint64_t clock_error_ns;   /* offset clock: uncertainty of the calibration */
	uint64_t dropped;          /* activity records lost in the library */
	uint64_t late;             /* activity records that came too late to place */
	uint64_t overwritten;      /* steps the ring no longer held when read */
	uint64_t torn;             /* steps skipped because the writer was on them */
	uint64_t max_delay_ns;     /* worst step end -> record written, among kept steps */
	char     status[160];
	char     path[1024];
};

struct ls_gpu_steps {
	struct ls_gpu_step   *steps;     /* sorted by end_ns */
	size_t                n;
	struct ls_gpu_source *sources;
	size_t                n_sources;
	uint64_t              too_long;  /* steps dropped: longer than LS_GPU_STEP_MAX_NS */
	char                  dir[512];
};

/* Loads every ring in dir: dir NULL means $LATSCOPE_GPU_DIR, else /dev/shm (auto-discovery
 * of latscope-gpu-<pid>). Keeps steps that overlap [from_ns, to_ns] (both 0: all). No rings
 * is not an error (n_sources == 0). An unreadable ring is skipped with a line on stderr.
 * Returns 0, or -errno with a message on stderr (dir unreadable, out of memory). */
int  ls_gpu_steps_load(const char *dir, uint64_t from_ns, uint64_t to_ns, struct ls_gpu_steps *out);
void ls_gpu_steps_free(struct ls_gpu_steps *gs);

/* Sorts steps by end_ns, the order the functions below need. */
void ls_gpu_steps_sort(struct ls_gpu_step *steps, size_t n);

/* GPU busy time inside [from_ns, to_ns]: each step overlapping the window contributes its
 * busy_ns in proportion to the part of it inside the window; per (pid, device) these are
 * summed and the largest is returned (tensor-parallel ranks run the same step side by side,
 * so the window was GPU-bound for as long as its busiest device). Never more than the
 * window. steps: sorted by end_ns, none longer than LS_GPU_STEP_MAX_NS. */
uint64_t ls_gpu_busy_in(const struct ls_gpu_step *steps, size_t n, uint64_t from_ns,
			uint64_t to_ns);

/* The latest step (by end) that ended at or before t_ns, or NULL. steps sorted by end_ns. */
const struct ls_gpu_step *ls_gpu_step_before(const struct ls_gpu_step *steps, size_t n,
					     uint64_t t_ns);

/* The report's GPU section, as numbers (for JSON writers) and as text. */
struct ls_gpu_summary {
	size_t   n_sources, n_tracing, n_disabled;
	size_t   n_streams;                 /* (pid, device) pairs with steps in the window */
	uint64_t window_ns;                 /* [from, to], or the steps' span when both are 0 */
	uint64_t steps, prefill_steps, decode_steps, fallback_steps;
	uint64_t step_p50_ns, step_p99_ns;  /* every step; numpy-linear percentiles (base/stats.h) */
	uint64_t prefill_p50_ns, prefill_p99_ns; /* prefill-bearing steps (0 when none) */
	uint64_t decode_p50_ns, decode_p99_ns;   /* the others, when prefill ones were told apart */
	double   busy_fraction;             /* busy time / (window x streams) */
	uint64_t idle_gaps;                 /* gaps between consecutive steps of a stream */
	uint64_t idle_p50_ns, idle_p99_ns;  /* overlapping steps count as a 0 gap */
	uint64_t dropped, late, overwritten, torn, too_long;
	uint64_t max_delay_ns;
	uint32_t clocks;                    /* bit (1 << enum ls_ring_clock) per clock in use */
	uint64_t max_clock_error_ns;
};

int  ls_gpu_summarize(const struct ls_gpu_steps *gs, uint64_t from_ns, uint64_t to_ns,
		      struct ls_gpu_summary *sum);

#endif
