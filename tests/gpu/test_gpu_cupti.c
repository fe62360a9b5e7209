/* test_gpu_cupti.c — build/tests/gpu: the CUPTI half without a GPU. Hand-built activity
 * records (CUpti_ActivityMemcpy6, CUpti_ActivityKernel10, CUpti_ActivityGraphTrace2,
 * CUpti_ActivityAPI) are walked by the real libcupti cuptiActivityGetNextRecord, turned into
 * events and segmented; the clock calibration runs against the real cuptiGetTimestamp; and
 * the injection library is loaded and initialised the way the driver would. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cupti_api.h"
#include "cupti_records.h"
#include "common/segment.h"
#include "common/step_ring.h"
#include <cupti_runtime_cbid.h>

#define US 1000ull
#define MS 1000000ull
#define T0 (5000 * MS)

static struct ls_cupti_api api;

static void load_cupti(void)
{
	char err[512];
	if (ls_cupti_load(&api, err, sizeof(err)) < 0)
		cr_skip_test("libcupti not loadable here: %s", err);
}

/* A CUPTI activity buffer we fill by hand, records 8-byte aligned as CUPTI lays them. */
struct buf {
	_Alignas(8) uint8_t bytes[64 * 1024];
	size_t used;
};

static void *put(struct buf *b, size_t size)
{
	size = (size + 7) & ~(size_t)7;
	cr_assert_leq(b->used + size, sizeof(b->bytes));
	void *p = b->bytes + b->used;
	memset(p, 0, size);
	b->used += size;
	return p;
}

static void memcpy_rec(struct buf *b, uint8_t kind, uint64_t bytes, uint64_t start, uint64_t end,
		       uint32_t dev, uint32_t stream)
{
	CUpti_ActivityMemcpy6 *m = put(b, sizeof(*m));
	m->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m->copyKind = kind;
	m->bytes = bytes;
	m->start = start;
	m->end = end;
	m->deviceId = dev;
	m->streamId = stream;
	m->copyCount = 1;
}

static void kernel_rec(struct buf *b, uint64_t start, uint64_t end, uint32_t dev, uint32_t stream)
{
	CUpti_ActivityKernel10 *k = put(b, sizeof(*k));
	k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k->start = start;
	k->end = end;
	k->deviceId = dev;
	k->streamId = stream;
}

static void graph_rec(struct buf *b, uint64_t start, uint64_t end, uint32_t dev, uint32_t stream)
{
	CUpti_ActivityGraphTrace2 *g = put(b, sizeof(*g));
	g->kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE;
	g->start = start;
	g->end = end;
	g->deviceId = dev;
	g->endDeviceId = dev;
	g->streamId = stream;
	g->graphId = 3;
}

static void api_rec(struct buf *b, uint32_t cbid, uint64_t start, uint64_t end)
{
	CUpti_ActivityAPI *a = put(b, sizeof(*a));
	a->kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	a->cbid = cbid;
	a->start = start;
	a->end = end;
	a->processId = 1;
	a->threadId = 1;
}

Test(gpu_cupti, real_libcupti_walks_hand_built_records)
{
	load_cupti();
	static struct buf b;
	b.used = 0;
	memcpy_rec(&b, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 256, T0, T0 + 4 * US, 0, 7);
	kernel_rec(&b, T0 + 5 * US, T0 + 105 * US, 0, 7);
	graph_rec(&b, T0 + 110 * US, T0 + 2 * MS, 1, 8);
	memcpy_rec(&b, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 32, T0 + 2010 * US, T0 + 2014 * US, 0, 9);
	memcpy_rec(&b, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, 4096, T0 + 2020 * US, T0 + 2021 * US, 0, 7);
	api_rec(&b, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, T0 + 100 * US, T0 + 2100 * US);
	api_rec(&b, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, T0 + 90 * US, T0 + 95 * US);
	memcpy_rec(&b, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 8, 0, 0, 0, 7); /* no timestamps */

	struct ls_gpu_event ev[16];
	struct ls_cupti_parse_stats st = { 0 };
	size_t n = ls_cupti_parse(&api, b.bytes, b.used, 0, ev, 16, &st);
	cr_assert_eq(st.records, 8, "libcupti walked %llu records", (unsigned long long)st.records);
	cr_assert_eq(st.bad_buffer, 0);
	cr_assert_eq(n, 6);
	cr_assert_eq(st.graph_launch_api, 1);
	cr_assert_eq(st.no_timestamp, 1);
	cr_assert_eq(ev[0].kind, LS_GPU_EV_H2D);
	cr_assert_eq(ev[0].bytes, 256);
	cr_assert_eq(ev[0].stream, 7);
	cr_assert_eq(ev[1].kind, LS_GPU_EV_KERNEL);
	cr_assert_eq(ev[1].start_ns, T0 + 5 * US);
	cr_assert_eq(ev[1].end_ns, T0 + 105 * US);
	cr_assert_eq(ev[2].kind, LS_GPU_EV_GRAPH);
	cr_assert_eq(ev[2].device, 1);
	cr_assert_eq(ev[2].stream, 8);
	cr_assert_eq(ev[3].kind, LS_GPU_EV_D2H);
	cr_assert_eq(ev[3].bytes, 32);
	cr_assert_eq(ev[4].kind, LS_GPU_EV_COPY);
	cr_assert_eq(ev[5].kind, LS_GPU_EV_SYNC);
	cr_assert_eq(ev[5].device, LS_GPU_ALL_DEVICES);
	cr_assert_eq(ev[5].end_ns, T0 + 2100 * US);
}

/* A graph whose first node runs on the host reports deviceId INT_MAX: use where it ended. */
Test(gpu_cupti, a_graph_starting_on_the_host_is_placed_on_its_end_device)
{
	load_cupti();
	static struct buf b;
	b.used = 0;
	graph_rec(&b, T0, T0 + MS, 2, 7);
	CUpti_ActivityGraphTrace2 *g = (CUpti_ActivityGraphTrace2 *)b.bytes;
	g->deviceId = INT32_MAX;
	graph_rec(&b, T0 + 2 * MS, T0 + 3 * MS, 0, 7);
	g = (CUpti_ActivityGraphTrace2 *)(b.bytes + b.used - ((sizeof(*g) + 7) & ~(size_t)7));
	g->deviceId = INT32_MAX;
	g->endDeviceId = INT32_MAX;
	struct ls_gpu_event ev[4];
	struct ls_cupti_parse_stats st = { 0 };
	cr_assert_eq(ls_cupti_parse(&api, b.bytes, b.used, 0, ev, 4, &st), 1);
	cr_assert_eq(ev[0].device, 2);
	cr_assert_eq(st.other_kinds, 1);
}

Test(gpu_cupti, the_clock_offset_is_applied_and_overflow_counted)
{
	load_cupti();
	static struct buf b;
	b.used = 0;
	for (int i = 0; i < 5; i++)
		kernel_rec(&b, T0 + (uint64_t)i * MS, T0 + (uint64_t)i * MS + 10 * US, 0, 7);
	struct ls_gpu_event ev[3];
	struct ls_cupti_parse_stats st = { 0 };
	size_t n = ls_cupti_parse(&api, b.bytes, b.used, -(int64_t)(T0 - MS), ev, 3, &st);
	cr_assert_eq(n, 3);
	cr_assert_eq(st.overflow, 2);
	cr_assert_eq(ev[0].start_ns, 1 * MS);
	cr_assert_eq(ev[2].end_ns, 3 * MS + 10 * US);
}

/* Decode steps as CUPTI would report them (graph launch, sampler kernel, ids copy on a copy
 * stream, the host's synchronize), through the parser and the segmenter. */
Test(gpu_cupti, parsed_records_segment_into_steps)
{
	load_cupti();
	static struct buf b;
	b.used = 0;
	for (int i = 0; i < 5; i++) {
		uint64_t t = T0 + (uint64_t)i * 8 * MS;
		memcpy_rec(&b, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 512, t, t + 3 * US, 0, 7);
		api_rec(&b, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, t - 20 * US, t - 10 * US);
		graph_rec(&b, t + 5 * US, t + 5 * MS, 0, 7);
		kernel_rec(&b, t + 5005 * US, t + 5045 * US, 0, 7);
		memcpy_rec(&b, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 64, t + 5050 * US, t + 5054 * US, 0, 9);
		api_rec(&b, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, t + 30 * US, t + 5060 * US);
	}
	static struct ls_gpu_event ev[64];
	struct ls_cupti_parse_stats st = { 0 };
	size_t n = ls_cupti_parse(&api, b.bytes, b.used, 0, ev, 64, &st);
	cr_assert_eq(n, 25);
	struct ls_gpu_step steps[16];
	cr_assert_eq(ls_segment_trace(NULL, 77, ev, n, steps, 16), 5);
	for (int i = 0; i < 5; i++) {
		uint64_t t = T0 + (uint64_t)i * 8 * MS;
		cr_assert_eq(steps[i].start_ns, t);
		cr_assert_eq(steps[i].end_ns, t + 5054 * US);
		cr_assert_eq(steps[i].busy_ns, 4995 * US + 40 * US);
		cr_assert_eq(steps[i].n_launches, 2);
		cr_assert_eq(steps[i].flags, 0);
		cr_assert_eq(steps[i].pid, 77);
	}
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Without the timestamp callback CUPTI stamps in CLOCK_REALTIME: the calibrated offset must
 * map it onto CLOCK_MONOTONIC. */
Test(gpu_cupti, calibration_maps_the_cupti_clock_to_monotonic)
{
	load_cupti();
	int64_t offset = 0;
	uint64_t error = 0;
	if (ls_cupti_calibrate(&api, 16, &offset, &error) < 0)
		cr_skip_test("cuptiGetTimestamp does not answer without a driver here");
	uint64_t cupti = 0;
	cr_assert_eq(api.GetTimestamp(&cupti), CUPTI_SUCCESS);
	uint64_t mono = clock_ns(CLOCK_MONOTONIC);
	int64_t diff = (int64_t)(cupti + (uint64_t)offset) - (int64_t)mono;
	cr_assert_lt(llabs(diff), 1000000, "calibrated CUPTI time off by %lld ns", (long long)diff);
	cr_assert_lt(error, 1000000);
}

static const char *inject_path(void)
{
	static char path[4096];
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	cr_assert_gt(n, 0);
	exe[n] = 0;
	/* build[/san]/tests/gpu -> build[/san]/gpu/liblatscope_cupti.so */
	char *tests = dirname(exe);
	char *buildd = dirname(tests);
	snprintf(path, sizeof(path), "%s/gpu/liblatscope_cupti.so", buildd);
	return path;
}

struct inject_run {
	int rc;
	double took_ms;
	char err[2048];
	char dir[64];
};

/* Loads the library as the driver does and calls InitializeInjection, stderr captured. */
static void run_inject(struct inject_run *r)
{
	snprintf(r->dir, sizeof(r->dir), "/tmp/latscope-inject.XXXXXX");
	cr_assert_not_null(mkdtemp(r->dir));
	setenv("LATSCOPE_GPU_DIR", r->dir, 1);
	char errfile[128];
	snprintf(errfile, sizeof(errfile), "%s/stderr", r->dir);
	int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	fflush(stderr);
	int saved = dup(2);
	dup2(fd, 2);
	close(fd);
	void *h = dlopen(inject_path(), RTLD_NOW);
	if (!h) {
		dup2(saved, 2);
		cr_assert_fail("cannot load %s: %s (make builds it)", inject_path(), dlerror());
	}
	int (*init)(void) = (int (*)(void))dlsym(h, "InitializeInjection");
	cr_assert_not_null(init, "InitializeInjection is not exported");
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
	r->rc = init();
	r->took_ms = (double)(clock_ns(CLOCK_MONOTONIC) - t0) / 1e6;
	cr_assert_eq(init(), 1, "a second call must be a no-op");
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	FILE *f = fopen(errfile, "r");
	cr_assert_not_null(f);
	size_t len = fread(r->err, 1, sizeof(r->err) - 1, f);
	r->err[len] = 0;
	fclose(f);
}

static void cleanup(const struct inject_run *r)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", r->dir);
	cr_assert_eq(system(cmd), 0);
}

/* Here (no driver) CUPTI refuses to subscribe: tracing must switch itself off with one line
 * on stderr and say why in the ring; on a GPU machine it must be tracing, silently. */
Test(gpu_cupti, injection_without_a_driver_turns_itself_off_quietly)
{
	unsetenv("LATSCOPE_GPU_DISABLE");
	unsetenv("LATSCOPE_CUPTI_LIB");
	struct inject_run r;
	run_inject(&r);
	cr_assert_eq(r.rc, 1);
	cr_assert_lt(r.took_ms, 2000, "InitializeInjection took %.1f ms", r.took_ms);
	char ring[128], err[512];
	snprintf(ring, sizeof(ring), "%s/latscope-gpu-%d", r.dir, (int)getpid());
	struct ls_ring_snapshot snap;
	cr_assert_eq(ls_ring_read(ring, &snap, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(snap.hdr.pid, (uint32_t)getpid());
	if (snap.hdr.state == LS_RING_DISABLED) {
		cr_assert(strstr(r.err, "GPU step tracing off"), "stderr: %s", r.err);
		cr_assert_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1, "one line: %s", r.err);
		cr_assert_neq(snap.hdr.status[0], 0);
		cr_assert(strstr(r.err, snap.hdr.status), "stderr '%s' vs status '%s'", r.err, snap.hdr.status);
	} else {
		cr_assert_eq(snap.hdr.state, LS_RING_TRACING, "state %u: %s", snap.hdr.state, snap.hdr.status);
		cr_assert_eq(r.err[0], 0, "stderr: %s", r.err);
		cr_assert_neq(snap.hdr.clock, LS_RING_CLOCK_NONE);
	}
	ls_ring_snapshot_free(&snap);
	cleanup(&r);
}

Test(gpu_cupti, injection_with_a_missing_libcupti_says_which)
{
	unsetenv("LATSCOPE_GPU_DISABLE");
	setenv("LATSCOPE_CUPTI_LIB", "/nonexistent/libcupti.so", 1);
	struct inject_run r;
	run_inject(&r);
	cr_assert_eq(r.rc, 1);
	cr_assert(strstr(r.err, "/nonexistent/libcupti.so"), "stderr: %s", r.err);
	cleanup(&r);
}

Test(gpu_cupti, injection_disabled_by_environment_does_nothing)
{
	setenv("LATSCOPE_GPU_DISABLE", "1", 1);
	struct inject_run r;
	run_inject(&r);
	cr_assert_eq(r.rc, 1);
	cr_assert_eq(r.err[0], 0, "stderr: %s", r.err);
	char ring[128];
	snprintf(ring, sizeof(ring), "%s/latscope-gpu-%d", r.dir, (int)getpid());
	cr_assert_neq(access(ring, F_OK), 0, "no ring when disabled");
	cleanup(&r);
}

/* ---- the injection library over the stand-in libcupti (tests/gpu/fake/fake_cupti.c): an
 * engine step every 5 ms (H2D, 3 ms kernel, 32-byte D2H), delivered when the library flushes. */

static const char *fake_cupti_path(void)
{
	static char path[4096];
	snprintf(path, sizeof(path), "%s", inject_path());
	char *slash = strrchr(path, '/');
	cr_assert_not_null(slash);
	snprintf(slash, sizeof(path) - (size_t)(slash - path), "/test/libfakecupti.so");
	return path;
}

static void use_fake_cupti(const char *busy, const char *no_ts)
{
	unsetenv("LATSCOPE_GPU_DISABLE");
	setenv("LATSCOPE_CUPTI_LIB", fake_cupti_path(), 1);
	setenv("LATSCOPE_GPU_DRAIN_MS", "10", 1);
	setenv("LATSCOPE_GPU_REORDER_MS", "20", 1);
	setenv("FAKE_CUPTI_BUSY", busy, 1);
	setenv("FAKE_CUPTI_NO_TS", no_ts, 1);
}

/* Reads this process's ring after the library ran for a while. */
static void read_own_ring(const struct inject_run *r, struct ls_ring_snapshot *snap)
{
	char ring[128], err[512];
	snprintf(ring, sizeof(ring), "%s/latscope-gpu-%d", r->dir, (int)getpid());
	cr_assert_eq(ls_ring_read(ring, snap, err, sizeof(err)), 0, "%s", err);
}

static void check_steps(const struct ls_ring_snapshot *snap, uint64_t t_before, uint64_t t_after)
{
	cr_assert_geq(snap->n_recs, 20, "only %zu steps in 400 ms of 5 ms steps", snap->n_recs);
	cr_assert_leq(snap->n_recs, 81);
	for (size_t i = 0; i < snap->n_recs; i++) {
		const struct ls_ring_record *s = &snap->recs[i];
		cr_assert_eq(s->end_ns - s->start_ns, 3010 * US, "step %zu lasts %llu ns", i,
			     (unsigned long long)(s->end_ns - s->start_ns));
		cr_assert_eq(s->busy_ns, 3000 * US);
		cr_assert_eq(s->n_launches, 1);
		cr_assert_eq(s->flags, 0);
		cr_assert_geq(s->start_ns + 1 * MS, t_before, "step %zu is not in CLOCK_MONOTONIC", i);
		cr_assert_leq(s->end_ns, t_after);
		cr_assert_leq(s->written_ns - s->end_ns, 200 * MS, "step %zu written %llu ns late", i,
			      (unsigned long long)(s->written_ns - s->end_ns));
		if (i) {
			int64_t gap = (int64_t)(s->start_ns - snap->recs[i - 1].start_ns) - (int64_t)(5 * MS);
			cr_assert_lt(llabs(gap), 1000, "steps %zu and %zu are not 5 ms apart", i - 1, i);
		}
	}
}

Test(gpu_cupti, injection_over_a_working_cupti_writes_steps_in_time)
{
	use_fake_cupti("0", "0");
	uint64_t t_before = clock_ns(CLOCK_MONOTONIC);
	struct inject_run r;
	run_inject(&r);
	cr_assert_eq(r.rc, 1);
	cr_assert_eq(r.err[0], 0, "stderr: %s", r.err);
	usleep(400 * 1000);
	struct ls_ring_snapshot snap;
	read_own_ring(&r, &snap);
	cr_assert_eq(snap.hdr.state, LS_RING_TRACING, "%s", snap.hdr.status);
	cr_assert_eq(snap.hdr.clock, LS_RING_CLOCK_CALLBACK);
	cr_assert(strstr(snap.hdr.status, "clock callback"), "%s", snap.hdr.status);
	cr_assert_eq(snap.hdr.dropped, 0);
	cr_assert_gt(snap.hdr.heartbeat_ns, t_before);
	check_steps(&snap, t_before, clock_ns(CLOCK_MONOTONIC));
	ls_ring_snapshot_free(&snap);

	void *fake = dlopen(fake_cupti_path(), RTLD_NOW | RTLD_NOLOAD);
	cr_assert_not_null(fake, "the library did not load LATSCOPE_CUPTI_LIB");
	uint64_t (*mask)(void) = (uint64_t (*)(void))dlsym(fake, "fake_cupti_enabled_mask");
	cr_assert_not_null(mask);
	uint64_t m = mask();
	cr_assert_eq(m & (1ull << CUPTI_ACTIVITY_KIND_KERNEL), 0, "the serialising KERNEL kind is on");
	cr_assert(m & (1ull << CUPTI_ACTIVITY_KIND_MEMCPY));
	cr_assert(m & (1ull << CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
	cr_assert(m & (1ull << CUPTI_ACTIVITY_KIND_GRAPH_TRACE));
	cleanup(&r);
}

/* The timestamp callback refused: CUPTI stamps CLOCK_REALTIME, the calibrated offset must
 * still land every step in CLOCK_MONOTONIC. */
Test(gpu_cupti, injection_without_the_timestamp_callback_calibrates_an_offset)
{
	use_fake_cupti("0", "1");
	uint64_t t_before = clock_ns(CLOCK_MONOTONIC);
	struct inject_run r;
	run_inject(&r);
	usleep(400 * 1000);
	struct ls_ring_snapshot snap;
	read_own_ring(&r, &snap);
	cr_assert_eq(snap.hdr.state, LS_RING_TRACING, "%s", snap.hdr.status);
	cr_assert_eq(snap.hdr.clock, LS_RING_CLOCK_OFFSET);
	cr_assert(strstr(snap.hdr.status, "clock offset"), "%s", snap.hdr.status);
	cr_assert_lt(snap.hdr.clock_error_ns, 1 * MS);
	check_steps(&snap, t_before, clock_ns(CLOCK_MONOTONIC));
	ls_ring_snapshot_free(&snap);
	cleanup(&r);
}

Test(gpu_cupti, injection_under_another_profiler_says_so)
{
	use_fake_cupti("1", "0");
	struct inject_run r;
	run_inject(&r);
	cr_assert_eq(r.rc, 1);
	cr_assert(strstr(r.err, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"), "stderr: %s", r.err);
	cr_assert(strstr(r.err, "nsys"), "stderr: %s", r.err);
	struct ls_ring_snapshot snap;
	read_own_ring(&r, &snap);
	cr_assert_eq(snap.hdr.state, LS_RING_DISABLED);
	cr_assert(strstr(snap.hdr.status, "another CUPTI client"), "%s", snap.hdr.status);
	ls_ring_snapshot_free(&snap);
	cleanup(&r);
}
