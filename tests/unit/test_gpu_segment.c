/* test_gpu_segment.c — step segmentation on synthetic GPU traces (no GPU needed): sync decode,
 * prefill under CUDA graphs, chunked prefill, speculative decoding (both drafter placements),
 * overlapped scheduling, tensor-parallel devices, the fallbacks, and incremental feeding. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include "common/segment.h"

#define US 1000ull
#define MS 1000000ull
#define T0 (1000 * MS)
#define MAXEV 8192

struct trace {
	struct ls_gpu_event ev[MAXEV];
	size_t n;
};

static struct trace tr;
static struct ls_gpu_step steps[1024];

static void add(struct trace *t, uint32_t kind, uint32_t dev, uint32_t stream, uint64_t start,
		uint64_t dur, uint64_t bytes)
{
	cr_assert_lt(t->n, MAXEV);
	t->ev[t->n++] = (struct ls_gpu_event){ .start_ns = start, .end_ns = start + dur,
					       .bytes = bytes, .device = dev, .stream = stream,
					       .kind = kind };
}

static long segment(struct trace *t)
{
	struct ls_seg_config cfg;
	ls_seg_config_default(&cfg);
	long n = ls_segment_trace(&cfg, 42, t->ev, t->n, steps, 1024);
	cr_assert_geq(n, 0);
	return n;
}

static void setup(void)
{
	memset(&tr, 0, sizeof(tr));
	memset(steps, 0, sizeof(steps));
}

TestSuite(gpu_segment, .init = setup);

/* H2D inputs, three kernels, sampling, small D2H of the ids; host gap; repeat. */
Test(gpu_segment, sync_decode_steps_end_at_the_sampled_ids_copy)
{
	for (int i = 0; i < 10; i++) {
		uint64_t t = T0 + (uint64_t)i * 10 * MS;
		add(&tr, LS_GPU_EV_H2D, 0, 7, t, 5 * US, 64);
		add(&tr, LS_GPU_EV_KERNEL, 0, 7, t + 10 * US, 2000 * US, 0);
		add(&tr, LS_GPU_EV_KERNEL, 0, 7, t + 2010 * US, 3000 * US, 0);
		add(&tr, LS_GPU_EV_KERNEL, 0, 7, t + 5020 * US, 50 * US, 0);
		add(&tr, LS_GPU_EV_D2H, 0, 7, t + 5080 * US, 4 * US, 32);
	}
	cr_assert_eq(segment(&tr), 10);
	for (int i = 0; i < 10; i++) {
		uint64_t t = T0 + (uint64_t)i * 10 * MS;
		cr_assert_eq(steps[i].start_ns, t, "step %d start", i);
		cr_assert_eq(steps[i].end_ns, t + 5084 * US, "step %d end", i);
		cr_assert_eq(steps[i].busy_ns, 5050 * US, "step %d busy %llu", i,
			     (unsigned long long)steps[i].busy_ns);
		cr_assert_eq(steps[i].n_launches, 3);
		cr_assert_eq(steps[i].flags, 0);
		cr_assert_eq(steps[i].pid, 42);
		cr_assert_eq(steps[i].device, 0);
	}
}

Test(gpu_segment, busy_is_the_union_of_overlapping_kernels)
{
	add(&tr, LS_GPU_EV_KERNEL, 0, 1, T0, 100 * US, 0);
	add(&tr, LS_GPU_EV_KERNEL, 0, 2, T0 + 50 * US, 100 * US, 0);
	add(&tr, LS_GPU_EV_H2D, 0, 3, T0 + 160 * US, 10 * US, 8); /* copies are not busy */
	add(&tr, LS_GPU_EV_KERNEL, 0, 1, T0 + 200 * US, 50 * US, 0);
	add(&tr, LS_GPU_EV_D2H, 0, 1, T0 + 260 * US, 5 * US, 8);
	cr_assert_eq(segment(&tr), 1);
	cr_assert_eq(steps[0].busy_ns, 200 * US);
	cr_assert_eq(steps[0].n_launches, 3);
}

/* Decode runs as one graph launch; prefill runs eager kernels: once graphs are seen, an
 * eager-only step is prefill-bearing. */
Test(gpu_segment, eager_steps_on_a_graph_device_are_prefill)
{
	uint64_t t = T0;
	for (int i = 0; i < 8; i++, t += 20 * MS) {
		add(&tr, LS_GPU_EV_H2D, 0, 7, t, 5 * US, i == 0 || i == 6 ? 65536 : 256);
		if (i == 0 || i == 6) {
			for (int k = 0; k < 30; k++)
				add(&tr, LS_GPU_EV_KERNEL, 0, 7, t + 10 * US + (uint64_t)k * 300 * US,
				    290 * US, 0);
		} else {
			add(&tr, LS_GPU_EV_GRAPH, 0, 7, t + 10 * US, 4 * MS, 0);
		}
		add(&tr, LS_GPU_EV_KERNEL, 0, 7, t + 9500 * US, 40 * US, 0); /* sampler */
		add(&tr, LS_GPU_EV_D2H, 0, 7, t + 9550 * US, 4 * US, 1024);
	}
	cr_assert_eq(segment(&tr), 8);
	for (int i = 1; i < 8; i++) {
		int prefill = i == 6;
		cr_assert_eq(!!(steps[i].flags & LS_GPU_STEP_PREFILL), prefill, "step %d flags %u", i,
			     steps[i].flags);
		cr_assert_eq(steps[i].n_launches, prefill ? 31u : 2u);
	}
	/* The first step came before any graph launch: it cannot be told apart. */
	cr_assert_eq(steps[0].flags & LS_GPU_STEP_PREFILL, 0);
}

/* A long prompt in three chunks, each step mixing its chunk with decodes; the CPU turns
 * steps around in 50-300 us, so only the H2D opener separates them. */
Test(gpu_segment, chunked_prefill_steps_stay_separate)
{
	uint64_t t = T0, gaps[] = { 300 * US, 50 * US, 120 * US, 60 * US };
	uint64_t ends[4];
	for (int i = 0; i < 4; i++) {
		add(&tr, LS_GPU_EV_H2D, 0, 7, t, 8 * US, 2048 * 8);
		add(&tr, LS_GPU_EV_H2D, 0, 7, t + 9 * US, 3 * US, 512);
		add(&tr, LS_GPU_EV_KERNEL, 0, 7, t + 15 * US, 7 * MS, 0);
		add(&tr, LS_GPU_EV_KERNEL, 0, 7, t + 15 * US + 7 * MS, 40 * US, 0);
		add(&tr, LS_GPU_EV_D2H, 0, 7, t + 7100 * US, 4 * US, 16);
		ends[i] = t + 7104 * US;
		t = ends[i] + gaps[i];
	}
	cr_assert_eq(segment(&tr), 4);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(steps[i].end_ns, ends[i], "step %d", i);
		cr_assert_eq(steps[i].flags & LS_GPU_STEP_FALLBACK, 0);
		cr_assert_eq(steps[i].n_launches, 2);
	}
}

/* Speculative decoding, drafter launched by the host once the sampled ids arrived: sampled
 * ids copy, drafter kernels ~80 us later, draft ids copy. One step per iteration. */
Test(gpu_segment, spec_decode_drafter_after_the_ids_joins_its_step)
{
	uint64_t t = T0;
	uint64_t ends[6];
	for (int i = 0; i < 6; i++) {
		add(&tr, LS_GPU_EV_H2D, 0, 7, t, 5 * US, 256);
		add(&tr, LS_GPU_EV_GRAPH, 0, 7, t + 10 * US, 6 * MS, 0);
		add(&tr, LS_GPU_EV_KERNEL, 0, 7, t + 6020 * US, 60 * US, 0); /* rejection sampler */
		add(&tr, LS_GPU_EV_D2H, 0, 7, t + 6085 * US, 4 * US, 4 * 5 * 8);
		for (int k = 0; k < 3; k++) /* drafter, 80 us after the ids landed */
			add(&tr, LS_GPU_EV_KERNEL, 0, 7, t + 6170 * US + (uint64_t)k * 110 * US,
			    100 * US, 0);
		add(&tr, LS_GPU_EV_D2H, 0, 7, t + 6500 * US, 4 * US, 4 * 4 * 8);
		ends[i] = t + 6504 * US;
		t = ends[i] + 900 * US;
	}
	cr_assert_eq(segment(&tr), 6);
	for (int i = 0; i < 6; i++) {
		cr_assert_eq(steps[i].end_ns, ends[i], "step %d", i);
		cr_assert_eq(steps[i].n_launches, 5);
		cr_assert_eq(steps[i].busy_ns, 6 * MS + 60 * US + 300 * US);
	}
}

/* Speculative decoding with the copies on a copy stream: the drafter runs on the main stream
 * while the ids are copied out. The drafter's kernels go to the step after (they did not
 * wait for the host), so each iteration still ends one step at its ids copy. */
Test(gpu_segment, spec_decode_drafter_beside_the_copy_moves_to_the_next_step)
{
	uint64_t t = T0;
	uint64_t marker_end[6];
	for (int i = 0; i < 6; i++) {
		uint64_t c;
		add(&tr, LS_GPU_EV_H2D, 0, 7, t, 5 * US, 256);
		add(&tr, LS_GPU_EV_GRAPH, 0, 7, t + 10 * US, 6 * MS, 0);
		add(&tr, LS_GPU_EV_KERNEL, 0, 7, t + 6020 * US, 60 * US, 0);
		c = t + 6080 * US; /* sampling done */
		add(&tr, LS_GPU_EV_D2H, 0, 9, c + 3 * US, 4 * US, 160);
		add(&tr, LS_GPU_EV_D2H, 0, 9, c + 8 * US, 3 * US, 32);
		marker_end[i] = c + 11 * US;
		for (int k = 0; k < 3; k++)
			add(&tr, LS_GPU_EV_KERNEL, 0, 7, c + 1 * US + (uint64_t)k * 101 * US, 100 * US, 0);
		t = c + 1200 * US;
	}
	long n = segment(&tr);
	int marked = 0;
	for (long i = 0; i < n; i++) {
		if (steps[i].flags & LS_GPU_STEP_FALLBACK)
			continue; /* the last drafter, with no step after it */
		cr_assert_eq(steps[i].end_ns, marker_end[marked], "step %ld", i);
		marked++;
	}
	cr_assert_eq(marked, 6);
	cr_assert_leq(n, 7);
}

/* Overlapped scheduling: step i+1's inputs and kernels start the moment step i's sampler
 * ends, while step i's ids are still being copied out on another stream. */
Test(gpu_segment, overlapped_scheduling_splits_at_the_last_kernel_before_the_copy)
{
	uint64_t t = T0;
	uint64_t starts[8], ends[8];
	for (int i = 0; i < 8; i++) {
		starts[i] = t;
		add(&tr, LS_GPU_EV_H2D, 0, 7, t, 4 * US, 256);
		add(&tr, LS_GPU_EV_GRAPH, 0, 7, t + 5 * US, 5 * MS, 0);
		add(&tr, LS_GPU_EV_KERNEL, 0, 7, t + 5 * US + 5 * MS, 50 * US, 0);
		uint64_t c = t + 5 * US + 5 * MS + 50 * US;
		add(&tr, LS_GPU_EV_D2H, 0, 9, c + 2 * US, 4 * US, 64);
		ends[i] = c + 6 * US;
		t = c + 1 * US; /* next step's H2D, before this step's copy */
	}
	cr_assert_eq(segment(&tr), 8);
	for (int i = 0; i < 8; i++) {
		cr_assert_eq(steps[i].start_ns, starts[i], "step %d start", i);
		cr_assert_eq(steps[i].end_ns, ends[i], "step %d end", i);
		cr_assert_eq(steps[i].busy_ns, 5 * MS + 50 * US, "step %d busy", i);
		cr_assert_eq(steps[i].n_launches, 2);
		cr_assert_eq(steps[i].flags, 0);
	}
}

/* Two tensor-parallel ranks on two devices of one process, skewed by a few us, with an
 * all-reduce on a communication stream inside each step. */
Test(gpu_segment, tensor_parallel_devices_are_segmented_apart)
{
	for (int i = 0; i < 5; i++) {
		uint64_t t = T0 + (uint64_t)i * 8 * MS;
		for (uint32_t dev = 0; dev < 2; dev++) {
			uint64_t s = t + dev * 3 * US;
			add(&tr, LS_GPU_EV_H2D, dev, 7, s, 4 * US, 256);
			add(&tr, LS_GPU_EV_KERNEL, dev, 7, s + 5 * US, 2 * MS, 0);
			add(&tr, LS_GPU_EV_KERNEL, dev, 13, s + 2005 * US, 300 * US, 0); /* nccl */
			add(&tr, LS_GPU_EV_KERNEL, dev, 7, s + 2305 * US, 2 * MS, 0);
			add(&tr, LS_GPU_EV_D2H, dev, 7, s + 4310 * US, 4 * US, 64);
		}
	}
	cr_assert_eq(segment(&tr), 10);
	int per_dev[2] = { 0, 0 };
	for (int i = 0; i < 10; i++) {
		uint32_t dev = steps[i].device;
		cr_assert_lt(dev, 2);
		uint64_t s = T0 + (uint64_t)per_dev[dev] * 8 * MS + dev * 3 * US;
		cr_assert_eq(steps[i].start_ns, s);
		cr_assert_eq(steps[i].end_ns, s + 4314 * US);
		cr_assert_eq(steps[i].busy_ns, 4300 * US);
		per_dev[dev]++;
	}
	cr_assert_eq(per_dev[0], 5);
	cr_assert_eq(per_dev[1], 5);
}

Test(gpu_segment, tensor_parallel_processes_keep_their_pid)
{
	struct ls_seg_config cfg;
	ls_seg_config_default(&cfg);
	for (uint32_t pid = 100; pid < 102; pid++) {
		setup();
		for (int i = 0; i < 3; i++) {
			uint64_t t = T0 + (uint64_t)i * 5 * MS + pid;
			add(&tr, LS_GPU_EV_H2D, pid - 100, 7, t, 4 * US, 256);
			add(&tr, LS_GPU_EV_KERNEL, pid - 100, 7, t + 5 * US, 1 * MS, 0);
			add(&tr, LS_GPU_EV_D2H, pid - 100, 7, t + 1010 * US, 4 * US, 64);
		}
		cr_assert_eq(ls_segment_trace(&cfg, pid, tr.ev, tr.n, steps, 1024), 3);
		for (int i = 0; i < 3; i++) {
			cr_assert_eq(steps[i].pid, pid);
			cr_assert_eq(steps[i].device, pid - 100);
		}
	}
}

/* No D2H markers: the host's synchronize ends a step. */
Test(gpu_segment, without_markers_a_synchronize_ends_the_step)
{
	for (int i = 0; i < 4; i++) {
		uint64_t t = T0 + (uint64_t)i * 6 * MS;
		add(&tr, LS_GPU_EV_H2D, 0, 7, t, 4 * US, 256);
		add(&tr, LS_GPU_EV_KERNEL, 0, 7, t + 5 * US, 3 * MS, 0);
		add(&tr, LS_GPU_EV_SYNC, LS_GPU_ALL_DEVICES, 0, t + 100 * US, 2930 * US, 0);
		add(&tr, LS_GPU_EV_KERNEL, 0, 7, t + 3010 * US, 20 * US, 0); /* launched before the sync */
	}
	cr_assert_eq(segment(&tr), 4);
	for (int i = 0; i < 4; i++) {
		uint64_t t = T0 + (uint64_t)i * 6 * MS;
		cr_assert_eq(steps[i].start_ns, t);
		cr_assert_eq(steps[i].end_ns, t + 3030 * US);
		cr_assert_eq(steps[i].n_launches, 2);
		cr_assert(steps[i].flags & LS_GPU_STEP_FALLBACK);
	}
}

/* No markers, no syncs: a 3 ms idle gap separates steps; 1 ms gaps inside a step do not. */
Test(gpu_segment, without_markers_or_syncs_idle_gaps_end_steps)
{
	for (int i = 0; i < 5; i++) {
		uint64_t t = T0 + (uint64_t)i * 10 * MS;
		add(&tr, LS_GPU_EV_KERNEL, 0, 7, t, 3 * MS, 0);
		add(&tr, LS_GPU_EV_KERNEL, 0, 7, t + 4 * MS, 3 * MS, 0); /* 1 ms gap: same step */
	}
	cr_assert_eq(segment(&tr), 5);
	for (int i = 0; i < 5; i++) {
		cr_assert_eq(steps[i].busy_ns, 6 * MS);
		cr_assert(steps[i].flags & LS_GPU_STEP_FALLBACK);
	}
}

Test(gpu_segment, no_step_is_longer_than_max_step)
{
	for (int i = 0; i < 500; i++)
		add(&tr, LS_GPU_EV_KERNEL, 0, 7, T0 + (uint64_t)i * 10 * MS, 10 * MS, 0);
	long n = segment(&tr);
	cr_assert_eq(n, 3);
	for (long i = 0; i < n; i++) {
		cr_assert_leq(steps[i].end_ns - steps[i].start_ns, 2000 * MS);
		cr_assert(steps[i].flags & LS_GPU_STEP_FALLBACK);
	}
}

Test(gpu_segment, orphan_markers_and_stampless_records_make_no_steps)
{
	struct ls_segmenter seg;
	struct ls_gpu_step out[LS_SEG_MAX_OUT];
	ls_seg_init(&seg, NULL, 1, 0);
	struct ls_gpu_event d2h = { .start_ns = T0, .end_ns = T0 + US, .bytes = 8, .kind = LS_GPU_EV_D2H };
	struct ls_gpu_event none = { .start_ns = 0, .end_ns = 0, .kind = LS_GPU_EV_KERNEL };
	struct ls_gpu_event back = { .start_ns = T0 + 10 * US, .end_ns = T0, .kind = LS_GPU_EV_KERNEL };
	cr_assert_eq(ls_seg_feed(&seg, &d2h, out), 0);
	cr_assert_eq(ls_seg_feed(&seg, &none, out), 0);
	cr_assert_eq(ls_seg_feed(&seg, &back, out), 0);
	cr_assert_eq(ls_seg_finish(&seg, out), 0);
	cr_assert_eq(seg.stats.orphan_markers, 1);
	cr_assert_eq(seg.stats.steps, 0);
	ls_seg_free(&seg);
}

Test(gpu_segment, large_device_to_host_copies_are_not_markers)
{
	add(&tr, LS_GPU_EV_H2D, 0, 7, T0, 4 * US, 256);
	add(&tr, LS_GPU_EV_KERNEL, 0, 7, T0 + 5 * US, 1 * MS, 0);
	add(&tr, LS_GPU_EV_D2H, 0, 7, T0 + 1010 * US, 200 * US, 8 << 20); /* logprobs, 8 MiB */
	add(&tr, LS_GPU_EV_KERNEL, 0, 7, T0 + 1300 * US, 1 * MS, 0);
	add(&tr, LS_GPU_EV_D2H, 0, 7, T0 + 2310 * US, 4 * US, 64);
	cr_assert_eq(segment(&tr), 1);
	cr_assert_eq(steps[0].end_ns, T0 + 2314 * US);
	cr_assert_eq(steps[0].flags, 0);
}

struct collected {
	struct ls_gpu_step v[1024];
	size_t n;
};

static void collect(void *ctx, const struct ls_gpu_step *s)
{
	struct collected *got = ctx;
	if (got->n < 1024)
		got->v[got->n++] = *s;
}

/* The library feeds batches as CUPTI delivers them (out of order, whenever they finished),
 * with a watermark behind the drain time: the result must equal the whole-trace result. */
Test(gpu_segment, incremental_feeding_matches_the_whole_trace)
{
	uint64_t t = T0;
	for (int i = 0; i < 40; i++) { /* overlapped steps with spec drafter, two devices */
		for (uint32_t dev = 0; dev < 2; dev++) {
			uint64_t s = t + dev * 2 * US;
			add(&tr, LS_GPU_EV_H2D, dev, 7, s, 4 * US, 256);
			add(&tr, LS_GPU_EV_GRAPH, dev, 7, s + 5 * US, (3 + (uint64_t)(i % 5)) * MS, 0);
			uint64_t c = s + 5 * US + (3 + (uint64_t)(i % 5)) * MS;
			add(&tr, LS_GPU_EV_KERNEL, dev, 7, c, 40 * US, 0);
			add(&tr, LS_GPU_EV_D2H, dev, 9, c + 42 * US, 4 * US, 64);
		}
		t += (4 + (uint64_t)(i % 5)) * MS + (i % 3 ? 0 : 20 * MS);
	}
	static struct ls_gpu_event copy[MAXEV], pending[MAXEV];
	memcpy(copy, tr.ev, tr.n * sizeof(*copy));
	struct ls_seg_config cfg;
	ls_seg_config_default(&cfg);
	static struct ls_gpu_step whole[1024];
	long n_whole = ls_segment_trace(&cfg, 7, copy, tr.n, whole, 1024);
	cr_assert_gt(n_whole, 70);

	struct collected *got = calloc(1, sizeof(*got));
	cr_assert_not_null(got);
	struct ls_seg_set set;
	ls_seg_set_init(&set, &cfg, 7, collect, got);
	size_t n_pending = 0;
	unsigned seed = 12345;
	int delivered[MAXEV] = { 0 };
	for (uint64_t drain = T0; drain < t + 500 * MS; drain += 50 * MS) {
		/* Deliver what finished before this drain, in a scrambled order. */
		size_t first = n_pending;
		for (size_t i = 0; i < tr.n; i++)
			if (!delivered[i] && tr.ev[i].end_ns <= drain) {
				pending[n_pending++] = tr.ev[i];
				delivered[i] = 1;
			}
		for (size_t i = n_pending; i > first + 1; i--) {
			size_t j = first + (size_t)(rand_r(&seed) % (unsigned)(i - first));
			struct ls_gpu_event tmp = pending[i - 1];
			pending[i - 1] = pending[j];
			pending[j] = tmp;
		}
		n_pending = ls_seg_set_run(&set, pending, n_pending, drain - 60 * MS);
	}
	ls_seg_set_finish(&set);
	struct ls_seg_stats st;
	ls_seg_set_stats(&set, &st);
	cr_assert_eq(st.late, 0);
	ls_seg_set_free(&set);
	cr_assert_eq((long)got->n, n_whole);
	/* Same steps; emission order differs between devices, so compare sorted by end. */
	for (size_t i = 0; i < got->n; i++)
		for (size_t j = i + 1; j < got->n; j++)
			if (got->v[j].end_ns < got->v[i].end_ns ||
			    (got->v[j].end_ns == got->v[i].end_ns && got->v[j].device < got->v[i].device)) {
				struct ls_gpu_step tmp = got->v[i];
				got->v[i] = got->v[j];
				got->v[j] = tmp;
			}
	for (long i = 0; i < n_whole; i++)
		cr_assert_eq(memcmp(&got->v[i], &whole[i], sizeof(whole[i])), 0, "step %ld differs", i);
	free(got);
}

