/* segment.h — engine steps from GPU activity (pure: no CUDA, no clock, no I/O).
 *
 * Input: device activity already converted to CLOCK_MONOTONIC ns (kernels, graph launches,
 * copies) and host-side synchronize calls. Output: struct ls_gpu_step (gpu_step.h).
 *
 * The rules, per (pid, device), on events in start order:
 *  - A step opens at the first H2D copy, kernel or graph launch after the previous step.
 *  - A small D2H copy (<= marker_max_bytes: the sampled token ids) is a step's end marker.
 *    Further small D2H copies extend it; the step closes at the next burst of work: an H2D
 *    copy (a new step's inputs), a kernel/graph that overlaps the marker copy (it did not
 *    wait for the host) or starts join_gap_ns or more after the step's last activity (a
 *    drafter launched straight after the marker joins: speculative decoding), or
 *    any work once the next step has been seen to start (below), or when settle() learns
 *    that nothing else can join.
 *  - Overlapped (async) scheduling: the marker copy waits for the step's last kernel (C);
 *    work of this step that starts at or after C is the next step's, already running on
 *    the main stream, and is carried over to it.
 *  - Busy time = union of kernel and graph intervals of the step.
 *  - Fallbacks (flag LS_GPU_STEP_FALLBACK), only on devices that never showed a marker:
 *    a host synchronize ends the step it waited for; otherwise a GPU idle gap of
 *    idle_gap_ns does. Devices with markers fall back to a long idle gap only
 *    (marker_idle_gap_ns). Any step is cut at max_step_ns.
 *  - Prefill: a step with eager kernels and no graph launch on a device that runs graphs
 *    (engines capture decode in CUDA graphs, run prefill eager) gets LS_GPU_STEP_PREFILL. */
#ifndef LATSCOPE_GPU_SEGMENT_H
#define LATSCOPE_GPU_SEGMENT_H

#include <stddef.h>
#include <stdint.h>
#include "gpu_step.h"

enum ls_gpu_ev_kind {
	LS_GPU_EV_KERNEL = 1, /* an eager kernel (CONCURRENT_KERNEL) */
	LS_GPU_EV_GRAPH,      /* one graph launch, first node start to last node end (GRAPH_TRACE) */
	LS_GPU_EV_H2D,        /* host -> device copy */
	LS_GPU_EV_D2H,        /* device -> host copy (small ones are step markers) */
	LS_GPU_EV_COPY,       /* any other copy or memset: part of a step, never opens one */
	LS_GPU_EV_SYNC,       /* the host waited for the device (stream/event/device synchronize) */
};

#define LS_GPU_ALL_DEVICES UINT32_MAX /* a SYNC event applies to every device of the process */

struct ls_gpu_event {
	uint64_t start_ns;
	uint64_t end_ns;
	uint64_t bytes;   /* copies only */
	uint32_t device;  /* CUDA device ordinal, or LS_GPU_ALL_DEVICES */
	uint32_t stream;
	uint32_t kind;    /* enum ls_gpu_ev_kind */
	uint32_t reserved;
};

struct ls_seg_config {
	uint64_t marker_max_bytes;   /* D2H copies up to this size end a step (64 KiB) */
	uint64_t join_gap_ns;        /* work this soon after a marker, no H2D first, joins (200 us) */
	uint64_t idle_gap_ns;        /* marker-less devices: GPU idle this long ends a step (2 ms) */
	uint64_t marker_idle_gap_ns; /* devices with markers: idle this long ends an unmarked step (50 ms) */
	uint64_t max_step_ns;        /* no step is longer (2 s) */
	uint64_t max_step_events;    /* events kept per open step; beyond, counted as dropped (1 M) */
};

void ls_seg_config_default(struct ls_seg_config *cfg);

struct ls_seg_stats {
	uint64_t events;          /* events fed */
	uint64_t late;            /* arrived after their time was settled: dropped */
	uint64_t dropped;         /* not kept (memory or max_step_events) */
	uint64_t orphan_markers;  /* small D2H copies with no open step */
	uint64_t steps;           /* steps closed */
	uint64_t fallback_steps;  /* of those, closed by a fallback rule */
};

/* One (pid, device) stream of steps. */
struct ls_segmenter {
	struct ls_seg_config cfg;
	uint32_t pid, device;
	int      uses_graphs;       /* a graph launch was seen: eager-only steps are prefill */
	int      markers_seen;      /* this device marks its steps with D2H copies */
	uint64_t last_start_ns;     /* start of the last event fed in order */
	uint64_t settled_ns;        /* settle() watermark: events starting before it are late */

	int      open;
	uint64_t start_ns, end_ns;  /* of the open step's device events */
	uint64_t compute_end_ns;    /* last kernel/graph end in the open step */
	int      marked;            /* open step has a marker */
	uint64_t marker_end_ns;
	int      synced;            /* fallback: a host synchronize covered the open step */
	uint64_t sync_end_ns;

	struct ls_gpu_event *ev;    /* the open step's events */
	size_t   n_ev, cap_ev;
	struct ls_gpu_event *carry; /* the next step's events, seen before this one closed */
	size_t   n_carry, cap_carry;

	struct ls_seg_stats stats;
};

#define LS_SEG_MAX_OUT 2 /* steps one feed/settle call can close */

void ls_seg_init(struct ls_segmenter *seg, const struct ls_seg_config *cfg, uint32_t pid,
		 uint32_t device);
void ls_seg_free(struct ls_segmenter *seg);

/* Feeds one event (events come in start order; a late one joins the open step or is counted
 * as late). Closed steps go to out; returns how many (0..LS_SEG_MAX_OUT). */
size_t ls_seg_feed(struct ls_segmenter *seg, const struct ls_gpu_event *ev,
		   struct ls_gpu_step out[LS_SEG_MAX_OUT]);

/* Every event starting before watermark_ns has been fed: closes steps nothing can join. */
size_t ls_seg_settle(struct ls_segmenter *seg, uint64_t watermark_ns,
		     struct ls_gpu_step out[LS_SEG_MAX_OUT]);

/* End of the trace: closes whatever is open. */
size_t ls_seg_finish(struct ls_segmenter *seg, struct ls_gpu_step out[LS_SEG_MAX_OUT]);

/* All devices of one process, fed in batches as they are drained. */
typedef void (*ls_step_sink)(void *ctx, const struct ls_gpu_step *step);

struct ls_seg_set {
	struct ls_seg_config cfg;
	uint32_t pid;
	struct ls_segmenter *segs;
	size_t   n_segs;
	ls_step_sink sink;
	void    *sink_ctx;
	uint64_t dropped;           /* events for a segmenter that could not be allocated */
};

void ls_seg_set_init(struct ls_seg_set *set, const struct ls_seg_config *cfg, uint32_t pid,
		     ls_step_sink sink, void *sink_ctx);
void ls_seg_set_free(struct ls_seg_set *set);

/* Sorts ev[0..n) by start, feeds those that start at or before watermark_ns, settles every
 * device at watermark_ns, and moves the rest to the front of ev. Returns how many are left. */
size_t ls_seg_set_run(struct ls_seg_set *set, struct ls_gpu_event *ev, size_t n,
		      uint64_t watermark_ns);
void ls_seg_set_finish(struct ls_seg_set *set);
void ls_seg_set_stats(const struct ls_seg_set *set, struct ls_seg_stats *sum);

/* The whole pipeline on a finished trace (tests, offline use): sorts ev in place, returns
 * the number of steps found; the first cap of them (ordered by end) are written to out.
 * Returns -1 when memory runs out. */
long ls_segment_trace(const struct ls_seg_config *cfg, uint32_t pid, struct ls_gpu_event *ev,
		      size_t n, struct ls_gpu_step *out, size_t cap);

#endif
