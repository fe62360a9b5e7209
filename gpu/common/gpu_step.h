/* gpu_step.h — the GPU/user boundary: one engine step as liblatscope_cupti.so writes it into its
 * ring (step_ring.h) and latscope's attribution reads it (userspace/attribution/gpu_steps.h).
 * Plain fixed-size fields only, like bpf/events.h for the kernel side. */
#ifndef LATSCOPE_GPU_STEP_H
#define LATSCOPE_GPU_STEP_H

#include <stdint.h>

/* One engine step as seen on the GPU (CUPTI), in CLOCK_MONOTONIC ns (issue: GPU steps). */
struct ls_gpu_step {
	uint32_t pid;
	uint32_t device;
	uint64_t start_ns;
	uint64_t end_ns;
	uint64_t busy_ns;       /* union of kernel/graph intervals inside [start, end] */
	uint32_t n_launches;    /* kernels + graph launches in the step */
	uint32_t flags;         /* LS_GPU_STEP_* */
};

enum {
	LS_GPU_STEP_PREFILL   = 1u << 0, /* the step carried prefill work (when the records tell) */
	LS_GPU_STEP_FALLBACK  = 1u << 1, /* segmented by sync/idle fallback, not by the D2H copy */
};

#endif
