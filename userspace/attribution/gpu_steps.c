/* gpu_steps.c — loads the injection library's step rings, answers attribution's questions
 * (busy time in a window, the step before a time) and prints the report's GPU section. */
#include "attribution/gpu_steps.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "base/numconv.h"
#include "base/stats.h"
#include "common/step_ring.h"

static int step_by_end(const void *a, const void *b)
{
	const struct ls_gpu_step *x = a, *y = b;
	if (x->end_ns != y->end_ns)
		return x->end_ns < y->end_ns ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	return 0;
}

void ls_gpu_steps_sort(struct ls_gpu_step *steps, size_t n)
{
	if (n > 1)
		qsort(steps, n, sizeof(*steps), step_by_end);
}

static int is_ring_name(const char *name)
{
	size_t plen = strlen(LS_RING_PREFIX);
	if (strncmp(name, LS_RING_PREFIX, plen) || !name[plen])
		return 0;
	for (const char *p = name + plen; *p; p++)
		if (*p < '0' || *p > '9')
			return 0;
	return 1;
}

static int in_window(const struct ls_ring_record *r, uint64_t from_ns, uint64_t to_ns)
{
	if (!from_ns && !to_ns)
		return 1;
	return r->end_ns > from_ns && r->start_ns < to_ns;
}

/* Appends one ring's steps; a ring that cannot be read is reported and skipped. */
static int load_ring(struct ls_gpu_steps *gs, const char *path, uint64_t from_ns, uint64_t to_ns,
		     size_t *cap_steps)
{
	struct ls_ring_snapshot snap;
	char err[600];
	if (ls_ring_read(path, &snap, err, sizeof(err)) < 0) {
		fprintf(stderr, "latscope: skipping GPU steps: %s\n", err);
		return 0;
	}
	struct ls_gpu_source *grown = realloc(gs->sources, (gs->n_sources + 1) * sizeof(*grown));
	if (!grown) {
		ls_ring_snapshot_free(&snap);
		return -ENOMEM;
	}
	gs->sources = grown;
	struct ls_gpu_source *src = &gs->sources[gs->n_sources++];
	memset(src, 0, sizeof(*src));
	src->pid = snap.hdr.pid;
	src->state = snap.hdr.state;
	src->clock = snap.hdr.clock;
	src->clock_error_ns = snap.hdr.clock_error_ns;
	src->dropped = snap.hdr.dropped;
	src->late = snap.hdr.late;
	src->overwritten = snap.overwritten;
	src->torn = snap.torn;
	snprintf(src->status, sizeof(src->status), "%s", snap.hdr.status);
	snprintf(src->path, sizeof(src->path), "%s", path);

	for (size_t i = 0; i < snap.n_recs; i++) {
		const struct ls_ring_record *r = &snap.recs[i];
		if (r->end_ns < r->start_ns || !in_window(r, from_ns, to_ns))
			continue;
		if (r->end_ns - r->start_ns > LS_GPU_STEP_MAX_NS) {
			gs->too_long++;
			continue;
		}
		if (gs->n == *cap_steps) {
			size_t want = *cap_steps ? *cap_steps * 2 : 1024;
			struct ls_gpu_step *more = realloc(gs->steps, want * sizeof(*more));
			if (!more) {
				ls_ring_snapshot_free(&snap);
				return -ENOMEM;
			}
			gs->steps = more;
			*cap_steps = want;
		}
		struct ls_gpu_step *s = &gs->steps[gs->n++];
		s->pid = snap.hdr.pid;
		s->device = r->device;
		s->start_ns = r->start_ns;
		s->end_ns = r->end_ns;
		s->busy_ns = r->busy_ns;
		s->n_launches = r->n_launches;
		s->flags = r->flags;
		src->n_steps++;
		if (r->written_ns > r->end_ns && r->written_ns - r->end_ns > src->max_delay_ns)
			src->max_delay_ns = r->written_ns - r->end_ns;
	}
	ls_ring_snapshot_free(&snap);
	return 0;
}

int ls_gpu_steps_load(const char *dir, uint64_t from_ns, uint64_t to_ns, struct ls_gpu_steps *out)
{
	memset(out, 0, sizeof(*out));
	if (!dir || !*dir)
		dir = getenv("LATSCOPE_GPU_DIR");
	if (!dir || !*dir)
		dir = LS_RING_DEFAULT_DIR;
	snprintf(out->dir, sizeof(out->dir), "%s", dir);
	DIR *d = opendir(dir);
	if (!d) {
		int e = errno;
		fprintf(stderr, "latscope: cannot read GPU step directory '%s': %s (give the "
			"directory the engine ran with: LATSCOPE_GPU_DIR or --gpu-dir)\n", dir,
			strerror(e));
		return -e;
	}
	size_t cap_steps = 0;
	int rc = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!is_ring_name(de->d_name))
			continue;
		char path[1024];
		int n = snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (n < 0 || (size_t)n >= sizeof(path))
			continue;
		rc = load_ring(out, path, from_ns, to_ns, &cap_steps);
		if (rc < 0)
			break;
	}
	closedir(d);
	if (rc < 0) {
		fprintf(stderr, "latscope: out of memory loading GPU steps from '%s'\n", dir);
		ls_gpu_steps_free(out);
		return rc;
	}
	ls_gpu_steps_sort(out->steps, out->n);
	return 0;
}

void ls_gpu_steps_free(struct ls_gpu_steps *gs)
{
	free(gs->steps);
	free(gs->sources);
	gs->steps = NULL;
	gs->sources = NULL;
	gs->n = gs->n_sources = 0;
}

/* First index whose end_ns > t (n if none). */
static size_t first_end_after(const struct ls_gpu_step *steps, size_t n, uint64_t t)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (steps[mid].end_ns > t)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

#define BUSY_GROUPS 64

uint64_t ls_gpu_busy_in(const struct ls_gpu_step *steps, size_t n, uint64_t from_ns,
			uint64_t to_ns)
{
	if (!steps || !n || to_ns <= from_ns)
		return 0;
	struct { uint32_t pid, device; uint64_t busy; } groups[BUSY_GROUPS];
	size_t n_groups = 0;
	uint64_t scan_end = to_ns > UINT64_MAX - LS_GPU_STEP_MAX_NS ? UINT64_MAX
								    : to_ns + LS_GPU_STEP_MAX_NS;
	for (size_t i = first_end_after(steps, n, from_ns); i < n && steps[i].end_ns < scan_end; i++) {
		const struct ls_gpu_step *s = &steps[i];
		if (s->start_ns >= to_ns || s->end_ns <= s->start_ns)
			continue;
		uint64_t lo = s->start_ns > from_ns ? s->start_ns : from_ns;
		uint64_t hi = s->end_ns < to_ns ? s->end_ns : to_ns;
		if (hi <= lo)
			continue;
		uint64_t part = (uint64_t)((unsigned __int128)s->busy_ns * (hi - lo) /
					   (s->end_ns - s->start_ns));
		size_t g = 0;
		while (g < n_groups && (groups[g].pid != s->pid || groups[g].device != s->device))
			g++;
		if (g == n_groups) {
			if (n_groups == BUSY_GROUPS)
				g = BUSY_GROUPS - 1; /* more streams than we track: pool the rest */
			else
				groups[n_groups++] = (typeof(groups[0])){ s->pid, s->device, 0 };
		}
		groups[g].busy += part;
	}
	uint64_t busy = 0;
	for (size_t g = 0; g < n_groups; g++)
		if (groups[g].busy > busy)
			busy = groups[g].busy;
	return busy < to_ns - from_ns ? busy : to_ns - from_ns;
}

const struct ls_gpu_step *ls_gpu_step_before(const struct ls_gpu_step *steps, size_t n,
					     uint64_t t_ns)
{
	if (!steps)
		return NULL;
	size_t i = first_end_after(steps, n, t_ns);
	return i ? &steps[i - 1] : NULL;
}

/* Percentile p of sorted v (base/stats.h: numpy's linear rule, as every other figure in the
 * report), rounded to the nearest ns. */
static uint64_t pct(const uint64_t *v, size_t n, double p)
{
	return ls_d2u64(ls_percentile_u64(v, n, p) + 0.5);
}

static int step_by_stream(const void *a, const void *b)
{
	const struct ls_gpu_step *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return 0;
}

/* The sources' counters: how many traced, what was lost, which clocks. */
static void sum_sources(const struct ls_gpu_steps *gs, struct ls_gpu_summary *sum)
{
	sum->n_sources = gs->n_sources;
	sum->too_long = gs->too_long;
	for (size_t i = 0; i < gs->n_sources; i++) {
		const struct ls_gpu_source *src = &gs->sources[i];
		sum->n_tracing += src->state == 1;
		sum->n_disabled += src->state == 2;
		sum->dropped += src->dropped;
		sum->late += src->late;
		sum->overwritten += src->overwritten;
		sum->torn += src->torn;
		if (src->max_delay_ns > sum->max_delay_ns)
			sum->max_delay_ns = src->max_delay_ns;
		if (src->state == 1)
			sum->clocks |= 1u << (src->clock & 31);
		if (src->clock == 2 && src->clock_error_ns > sum->max_clock_error_ns)
			sum->max_clock_error_ns = src->clock_error_ns;
	}
}

/* The steps in the window and their durations: every step, prefill-bearing, decode-only. */
struct window_steps {
	struct ls_gpu_step *in;
	size_t    n_in, n_pre, n_dec;
	uint64_t *dur_all, *dur_pre, *dur_dec;
	uint64_t *gaps;                    /* room for n_in: between consecutive steps of a stream */
	uint64_t  span_lo, span_hi;        /* earliest start, latest end */
};

/* Collects the steps overlapping [from_ns, to_ns] (all when both are 0). 0 or -ENOMEM. */
static int collect_window(const struct ls_gpu_steps *gs, uint64_t from_ns, uint64_t to_ns,
			  struct window_steps *w, struct ls_gpu_summary *sum)
{
	int all = !from_ns && !to_ns;
	memset(w, 0, sizeof(*w));
	w->span_lo = UINT64_MAX;
	w->in = malloc((gs->n ? gs->n : 1) * sizeof(*w->in));
	w->dur_all = malloc((gs->n ? gs->n : 1) * sizeof(uint64_t) * 4); /* and pre, dec, gaps */
	if (!w->in || !w->dur_all)
		return -ENOMEM;
	w->dur_pre = w->dur_all + gs->n;
	w->dur_dec = w->dur_pre + gs->n;
	w->gaps = w->dur_dec + gs->n;
	for (size_t i = 0; i < gs->n; i++) {
		const struct ls_gpu_step *s = &gs->steps[i];
		if (!all && !(s->end_ns > from_ns && s->start_ns < to_ns))
			continue;
		w->in[w->n_in] = *s;
		w->dur_all[w->n_in++] = s->end_ns - s->start_ns;
		if (s->flags & LS_GPU_STEP_PREFILL)
			w->dur_pre[w->n_pre++] = s->end_ns - s->start_ns;
		else
			w->dur_dec[w->n_dec++] = s->end_ns - s->start_ns;
		sum->fallback_steps += (s->flags & LS_GPU_STEP_FALLBACK) != 0;
		if (s->start_ns < w->span_lo)
			w->span_lo = s->start_ns;
		if (s->end_ns > w->span_hi)
			w->span_hi = s->end_ns;
	}
	return 0;
}

/* Step time percentiles; prefill and decode apart only when some steps were told apart. */
static void step_percentiles(struct window_steps *w, struct ls_gpu_summary *sum)
{
	ls_sort_u64(w->dur_all, w->n_in);
	sum->step_p50_ns = pct(w->dur_all, w->n_in, 50);
	sum->step_p99_ns = pct(w->dur_all, w->n_in, 99);
	if (!w->n_pre)
		return;
	ls_sort_u64(w->dur_pre, w->n_pre);
	ls_sort_u64(w->dur_dec, w->n_dec);
	sum->prefill_steps = w->n_pre;
	sum->decode_steps = w->n_dec;
	sum->prefill_p50_ns = pct(w->dur_pre, w->n_pre, 50);
	sum->prefill_p99_ns = pct(w->dur_pre, w->n_pre, 99);
	sum->decode_p50_ns = pct(w->dur_dec, w->n_dec, 50);
	sum->decode_p99_ns = pct(w->dur_dec, w->n_dec, 99);
}

/* Per stream: busy time inside [from_ns, to_ns] and the gaps between its steps (the steps
 * are re-sorted by stream). */
static void busy_and_gaps(struct window_steps *w, uint64_t from_ns, uint64_t to_ns, struct ls_gpu_summary *sum)
{
	struct ls_gpu_step *in = w->in;
	uint64_t *gaps = w->gaps;
	size_t n_gaps = 0;
	qsort(in, w->n_in, sizeof(*in), step_by_stream);
	double busy = 0;
	for (size_t i = 0; i < w->n_in; i++) {
		const struct ls_gpu_step *s = &in[i];
		int new_stream = !i || in[i - 1].pid != s->pid || in[i - 1].device != s->device;
		sum->n_streams += new_stream;
		if (!new_stream) {
			uint64_t prev_end = in[i - 1].end_ns;
			gaps[n_gaps++] = s->start_ns > prev_end ? s->start_ns - prev_end : 0;
		}
		uint64_t lo = s->start_ns > from_ns ? s->start_ns : from_ns;
		uint64_t hi = s->end_ns < to_ns ? s->end_ns : to_ns;
		if (hi > lo && s->end_ns > s->start_ns)
			busy += (double)s->busy_ns * (double)(hi - lo) / (double)(s->end_ns - s->start_ns);
	}
	if (sum->window_ns && sum->n_streams)
		sum->busy_fraction = busy / ((double)sum->window_ns * (double)sum->n_streams);
	ls_sort_u64(gaps, n_gaps);
	sum->idle_gaps = n_gaps;
	sum->idle_p50_ns = pct(gaps, n_gaps, 50);
	sum->idle_p99_ns = pct(gaps, n_gaps, 99);
}

int ls_gpu_summarize(const struct ls_gpu_steps *gs, uint64_t from_ns, uint64_t to_ns,
		     struct ls_gpu_summary *sum)
{
	memset(sum, 0, sizeof(*sum));
	sum_sources(gs, sum);
	struct window_steps w;
	if (collect_window(gs, from_ns, to_ns, &w, sum)) {
		free(w.in);
		free(w.dur_all);
		return -ENOMEM;
	}
	sum->steps = w.n_in;
	if (!from_ns && !to_ns) { /* the whole trace: its own span is the window */
		from_ns = w.n_in ? w.span_lo : 0;
		to_ns = w.n_in ? w.span_hi : 0;
	}
	sum->window_ns = to_ns > from_ns ? to_ns - from_ns : 0;
	step_percentiles(&w, sum);
	busy_and_gaps(&w, from_ns, to_ns, sum);
	free(w.in);
	free(w.dur_all);
	return 0;
}
