/* segment.c — engine steps from GPU activity; the rules are in segment.h. */
#include "segment.h"

#include <stdlib.h>
#include <string.h>

void ls_seg_config_default(struct ls_seg_config *cfg)
{
	cfg->marker_max_bytes = 64 * 1024;
	cfg->join_gap_ns = 200 * 1000ull;
	cfg->idle_gap_ns = 2 * 1000 * 1000ull;
	cfg->marker_idle_gap_ns = 50 * 1000 * 1000ull;
	cfg->max_step_ns = 2 * 1000 * 1000 * 1000ull;
	cfg->max_step_events = 1u << 20;
}

static int is_compute(uint32_t kind)
{
	return kind == LS_GPU_EV_KERNEL || kind == LS_GPU_EV_GRAPH;
}

static int is_opener(uint32_t kind)
{
	return is_compute(kind) || kind == LS_GPU_EV_H2D;
}

static int is_marker(const struct ls_segmenter *seg, const struct ls_gpu_event *ev)
{
	return ev->kind == LS_GPU_EV_D2H && ev->bytes <= seg->cfg.marker_max_bytes;
}

static int push(struct ls_gpu_event **arr, size_t *n, size_t *cap, const struct ls_gpu_event *ev,
		uint64_t max)
{
	if (*n == *cap) {
		size_t want = *cap ? *cap * 2 : 64;
		if (want > max)
			want = (size_t)max;
		if (want <= *n)
			return -1;
		struct ls_gpu_event *grown = realloc(*arr, want * sizeof(*grown));
		if (!grown)
			return -1;
		*arr = grown;
		*cap = want;
	}
	(*arr)[(*n)++] = *ev;
	return 0;
}

void ls_seg_init(struct ls_segmenter *seg, const struct ls_seg_config *cfg, uint32_t pid,
		 uint32_t device)
{
	memset(seg, 0, sizeof(*seg));
	if (cfg)
		seg->cfg = *cfg;
	else
		ls_seg_config_default(&seg->cfg);
	seg->pid = pid;
	seg->device = device;
}

void ls_seg_free(struct ls_segmenter *seg)
{
	free(seg->ev);
	free(seg->carry);
	seg->ev = seg->carry = NULL;
	seg->n_ev = seg->cap_ev = seg->n_carry = seg->cap_carry = 0;
}

static void open_step(struct ls_segmenter *seg)
{
	seg->open = 1;
	seg->start_ns = UINT64_MAX;
	seg->end_ns = 0;
	seg->compute_end_ns = 0;
	seg->marked = 0;
	seg->marker_end_ns = 0;
	seg->synced = 0;
	seg->sync_end_ns = 0;
	seg->n_ev = 0;
}

static void add_event(struct ls_segmenter *seg, const struct ls_gpu_event *ev)
{
	if (push(&seg->ev, &seg->n_ev, &seg->cap_ev, ev, seg->cfg.max_step_events) < 0)
		seg->stats.dropped++;
	if (ev->start_ns < seg->start_ns)
		seg->start_ns = ev->start_ns;
	if (ev->end_ns > seg->end_ns)
		seg->end_ns = ev->end_ns;
	if (is_compute(ev->kind) && ev->end_ns > seg->compute_end_ns)
		seg->compute_end_ns = ev->end_ns;
}

static int by_start(const void *a, const void *b)
{
	const struct ls_gpu_event *x = a, *y = b;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	if (x->end_ns != y->end_ns)
		return x->end_ns < y->end_ns ? -1 : 1;
	return 0;
}

/* Union of kernel and graph intervals; ev sorted by start. */
static uint64_t busy_union(const struct ls_gpu_event *ev, size_t n)
{
	uint64_t busy = 0, cur_start = 0, cur_end = 0;
	int have = 0;
	for (size_t i = 0; i < n; i++) {
		if (!is_compute(ev[i].kind))
			continue;
		if (have && ev[i].start_ns <= cur_end) {
			if (ev[i].end_ns > cur_end)
				cur_end = ev[i].end_ns;
			continue;
		}
		if (have)
			busy += cur_end - cur_start;
		cur_start = ev[i].start_ns;
		cur_end = ev[i].end_ns;
		have = 1;
	}
	if (have)
		busy += cur_end - cur_start;
	return busy;
}

/* Closes the open step into *out, then opens the carried-over one if any. Returns 1 when a
 * step was written. */
static size_t close_step(struct ls_segmenter *seg, struct ls_gpu_step *out, int fallback)
{
	size_t wrote = 0;
	if (seg->open && seg->start_ns <= seg->end_ns) {
		uint32_t kernels = 0, graphs = 0;
		for (size_t i = 0; i < seg->n_ev; i++) {
			kernels += seg->ev[i].kind == LS_GPU_EV_KERNEL;
			graphs += seg->ev[i].kind == LS_GPU_EV_GRAPH;
		}
		for (size_t i = 1; i < seg->n_ev; i++)
			if (seg->ev[i].start_ns < seg->ev[i - 1].start_ns) {
				qsort(seg->ev, seg->n_ev, sizeof(*seg->ev), by_start);
				break;
			}
		memset(out, 0, sizeof(*out));
		out->pid = seg->pid;
		out->device = seg->device;
		out->start_ns = seg->start_ns;
		out->end_ns = seg->end_ns;
		out->busy_ns = busy_union(seg->ev, seg->n_ev);
		out->n_launches = kernels + graphs;
		if (fallback)
			out->flags |= LS_GPU_STEP_FALLBACK;
		if (kernels && !graphs && seg->uses_graphs)
			out->flags |= LS_GPU_STEP_PREFILL;
		seg->stats.steps++;
		seg->stats.fallback_steps += fallback != 0;
		wrote = 1;
	}
	seg->open = 0;
	seg->n_ev = 0;
	if (seg->n_carry) {
		open_step(seg);
		for (size_t i = 0; i < seg->n_carry; i++)
			add_event(seg, &seg->carry[i]);
		seg->n_carry = 0;
	}
	return wrote;
}

/* The first marker of a step: work that started once the step's last kernel before the
 * marker had finished belongs to the next step (overlapped scheduling). */
static void split_at_marker(struct ls_segmenter *seg, const struct ls_gpu_event *marker)
{
	uint64_t cut = 0;
	for (size_t i = 0; i < seg->n_ev; i++)
		if (is_compute(seg->ev[i].kind) && seg->ev[i].end_ns <= marker->start_ns &&
		    seg->ev[i].end_ns > cut)
			cut = seg->ev[i].end_ns;
	if (!cut)
		return;
	size_t kept = 0, moved = 0;
	for (size_t i = 0; i < seg->n_ev; i++) {
		const struct ls_gpu_event *ev = &seg->ev[i];
		if (is_opener(ev->kind) && ev->start_ns >= cut) {
			if (push(&seg->carry, &seg->n_carry, &seg->cap_carry, ev,
				 seg->cfg.max_step_events) < 0)
				seg->stats.dropped++;
			moved++;
		} else {
			seg->ev[kept++] = *ev;
		}
	}
	if (!moved)
		return;
	seg->n_ev = kept;
	seg->start_ns = UINT64_MAX;
	seg->end_ns = 0;
	seg->compute_end_ns = 0;
	for (size_t i = 0; i < kept; i++) {
		const struct ls_gpu_event *ev = &seg->ev[i];
		if (ev->start_ns < seg->start_ns)
			seg->start_ns = ev->start_ns;
		if (ev->end_ns > seg->end_ns)
			seg->end_ns = ev->end_ns;
		if (is_compute(ev->kind) && ev->end_ns > seg->compute_end_ns)
			seg->compute_end_ns = ev->end_ns;
	}
}

/* Does opener ev start a new step, given the open one? 0 no, 1 yes, 2 yes by a fallback. */
static int starts_new_step(const struct ls_segmenter *seg, const struct ls_gpu_event *ev)
{
	if (ev->start_ns >= seg->start_ns && ev->start_ns - seg->start_ns >= seg->cfg.max_step_ns)
		return 2;
	if (seg->marked) {
		if (seg->n_carry || ev->kind == LS_GPU_EV_H2D)
			return 1;
		/* Overlapping the marker copy: it did not wait for the host, so it is the next
		 * step's work; starting well after the step's last activity: the host's next
		 * step. In between: a drafter launched as soon as the sampled ids arrived
		 * (and its kernels that follow back to back). */
		if (ev->start_ns < seg->marker_end_ns ||
		    ev->start_ns >= seg->end_ns + seg->cfg.join_gap_ns)
			return 1;
		return 0;
	}
	if (seg->synced)
		return ev->start_ns >= seg->sync_end_ns ? 2 : 0;
	uint64_t gap = seg->markers_seen ? seg->cfg.marker_idle_gap_ns : seg->cfg.idle_gap_ns;
	return ev->start_ns >= seg->end_ns && ev->start_ns - seg->end_ns >= gap ? 2 : 0;
}

size_t ls_seg_feed(struct ls_segmenter *seg, const struct ls_gpu_event *ev,
		   struct ls_gpu_step out[LS_SEG_MAX_OUT])
{
	size_t n_out = 0;
	if (ev->end_ns < ev->start_ns || !ev->start_ns)
		return 0; /* no timestamps: nothing to place */
	seg->stats.events++;
	if (ev->kind == LS_GPU_EV_GRAPH)
		seg->uses_graphs = 1;

	if (ev->start_ns < seg->settled_ns || ev->start_ns < seg->last_start_ns) {
		/* Out of order: it can only join the open step without moving boundaries. */
		if (seg->open && ev->start_ns >= seg->start_ns && ev->kind != LS_GPU_EV_SYNC)
			add_event(seg, ev);
		else
			seg->stats.late++;
		return 0;
	}
	seg->last_start_ns = ev->start_ns;

	if (ev->kind == LS_GPU_EV_SYNC) {
		if (seg->open && !seg->markers_seen && ev->start_ns >= seg->start_ns) {
			seg->synced = 1;
			if (ev->end_ns > seg->sync_end_ns)
				seg->sync_end_ns = ev->end_ns;
		}
		return 0;
	}
	if (is_marker(seg, ev)) {
		if (!seg->open) {
			seg->stats.orphan_markers++;
			return 0;
		}
		if (!seg->marked)
			split_at_marker(seg, ev);
		seg->marked = 1;
		seg->markers_seen = 1;
		if (ev->end_ns > seg->marker_end_ns)
			seg->marker_end_ns = ev->end_ns;
		add_event(seg, ev);
		return 0;
	}
	if (!is_opener(ev->kind)) {
		if (seg->open)
			add_event(seg, ev);
		return 0;
	}
	if (seg->open) {
		int why = starts_new_step(seg, ev);
		if (why)
			n_out += close_step(seg, &out[n_out], why == 2);
	}
	if (!seg->open)
		open_step(seg);
	add_event(seg, ev);
	return n_out;
}

size_t ls_seg_settle(struct ls_segmenter *seg, uint64_t watermark_ns,
		     struct ls_gpu_step out[LS_SEG_MAX_OUT])
{
	size_t n_out = 0;
	if (watermark_ns > seg->settled_ns)
		seg->settled_ns = watermark_ns;
	while (seg->open && n_out < LS_SEG_MAX_OUT) {
		int why = 0;
		if (seg->marked)
			why = watermark_ns >= seg->end_ns + seg->cfg.join_gap_ns;
		else if (seg->synced)
			why = watermark_ns >= seg->sync_end_ns ? 2 : 0;
		else {
			uint64_t gap = seg->markers_seen ? seg->cfg.marker_idle_gap_ns
							 : seg->cfg.idle_gap_ns;
			why = watermark_ns >= seg->end_ns + gap ? 2 : 0;
		}
		if (!why && watermark_ns > seg->start_ns &&
		    watermark_ns - seg->start_ns >= seg->cfg.max_step_ns)
			why = 2;
		if (!why)
			break;
		n_out += close_step(seg, &out[n_out], why == 2);
	}
	return n_out;
}

size_t ls_seg_finish(struct ls_segmenter *seg, struct ls_gpu_step out[LS_SEG_MAX_OUT])
{
	size_t n_out = 0;
	while (seg->open && n_out < LS_SEG_MAX_OUT)
		n_out += close_step(seg, &out[n_out], !seg->marked);
	return n_out;
}

void ls_seg_set_init(struct ls_seg_set *set, const struct ls_seg_config *cfg, uint32_t pid,
		     ls_step_sink sink, void *sink_ctx)
{
	memset(set, 0, sizeof(*set));
	if (cfg)
		set->cfg = *cfg;
	else
		ls_seg_config_default(&set->cfg);
	set->pid = pid;
	set->sink = sink;
	set->sink_ctx = sink_ctx;
}

void ls_seg_set_free(struct ls_seg_set *set)
{
	for (size_t i = 0; i < set->n_segs; i++)
		ls_seg_free(&set->segs[i]);
	free(set->segs);
	set->segs = NULL;
	set->n_segs = 0;
}

static struct ls_segmenter *seg_for(struct ls_seg_set *set, uint32_t device)
{
	for (size_t i = 0; i < set->n_segs; i++)
		if (set->segs[i].device == device)
			return &set->segs[i];
	struct ls_segmenter *grown = realloc(set->segs, (set->n_segs + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	set->segs = grown;
	ls_seg_init(&set->segs[set->n_segs], &set->cfg, set->pid, device);
	return &set->segs[set->n_segs++];
}

static void emit(struct ls_seg_set *set, const struct ls_gpu_step *steps, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (set->sink)
			set->sink(set->sink_ctx, &steps[i]);
}

static void feed_one(struct ls_seg_set *set, const struct ls_gpu_event *ev)
{
	struct ls_gpu_step out[LS_SEG_MAX_OUT];
	if (ev->device == LS_GPU_ALL_DEVICES) {
		for (size_t i = 0; i < set->n_segs; i++)
			emit(set, out, ls_seg_feed(&set->segs[i], ev, out));
		return;
	}
	struct ls_segmenter *seg = seg_for(set, ev->device);
	if (!seg) {
		set->dropped++;
		return;
	}
	emit(set, out, ls_seg_feed(seg, ev, out));
}

size_t ls_seg_set_run(struct ls_seg_set *set, struct ls_gpu_event *ev, size_t n,
		      uint64_t watermark_ns)
{
	struct ls_gpu_step out[LS_SEG_MAX_OUT];
	qsort(ev, n, sizeof(*ev), by_start);
	size_t i = 0;
	for (; i < n && ev[i].start_ns <= watermark_ns; i++)
		feed_one(set, &ev[i]);
	for (size_t d = 0; d < set->n_segs; d++)
		emit(set, out, ls_seg_settle(&set->segs[d], watermark_ns, out));
	memmove(ev, ev + i, (n - i) * sizeof(*ev));
	return n - i;
}

void ls_seg_set_finish(struct ls_seg_set *set)
{
	struct ls_gpu_step out[LS_SEG_MAX_OUT];
	for (size_t d = 0; d < set->n_segs; d++)
		emit(set, out, ls_seg_finish(&set->segs[d], out));
}

void ls_seg_set_stats(const struct ls_seg_set *set, struct ls_seg_stats *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (size_t d = 0; d < set->n_segs; d++) {
		const struct ls_seg_stats *s = &set->segs[d].stats;
		sum->events += s->events;
		sum->late += s->late;
		sum->dropped += s->dropped;
		sum->orphan_markers += s->orphan_markers;
		sum->steps += s->steps;
		sum->fallback_steps += s->fallback_steps;
	}
	sum->dropped += set->dropped;
}

struct trace_sink {
	struct ls_gpu_step *out;
	size_t cap, n;
};

static void trace_sink(void *ctx, const struct ls_gpu_step *step)
{
	struct trace_sink *ts = ctx;
	if (ts->n < ts->cap)
		ts->out[ts->n] = *step;
	ts->n++;
}

static int by_end(const void *a, const void *b)
{
	const struct ls_gpu_step *x = a, *y = b;
	if (x->end_ns != y->end_ns)
		return x->end_ns < y->end_ns ? -1 : 1;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	return 0;
}

long ls_segment_trace(const struct ls_seg_config *cfg, uint32_t pid, struct ls_gpu_event *ev,
		      size_t n, struct ls_gpu_step *out, size_t cap)
{
	struct ls_seg_set set;
	struct trace_sink ts = { .out = out, .cap = cap, .n = 0 };
	ls_seg_set_init(&set, cfg, pid, trace_sink, &ts);
	size_t left = ls_seg_set_run(&set, ev, n, UINT64_MAX - 1);
	(void)left;
	ls_seg_set_finish(&set);
	uint64_t dropped = set.dropped;
	ls_seg_set_free(&set);
	if (dropped)
		return -1;
	qsort(out, ts.n < cap ? ts.n : cap, sizeof(*out), by_end);
	return (long)ts.n;
}
