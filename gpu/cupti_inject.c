/* cupti_inject.c — liblatscope_cupti.so: loaded by the CUDA driver into every process that has
 * CUDA_INJECTION64_PATH pointing at it (engine workers inherit it). It turns CUPTI activity
 * into engine steps (gpu/common/segment.h) and leaves them in a per-process ring
 * (gpu/common/step_ring.h) for `latscope bench`.
 *
 * Rules it keeps, because it lives inside someone else's engine:
 *  - InitializeInjection only sets CUPTI up: no CUDA call, nothing that waits, never abort;
 *    any failure turns tracing off with one line on stderr (and in the ring's status).
 *  - Records are drained by our own thread every ~50 ms with cuptiActivityFlushAll(0):
 *    forked engine workers leave with _exit, so nothing may depend on atexit.
 *  - Never the serialising KERNEL kind; libcupti is dlopen'ed; linked with -z nodelete.
 *
 * Environment: LATSCOPE_GPU_DIR (ring directory, default /dev/shm), LATSCOPE_GPU_DISABLE=1,
 * LATSCOPE_CUPTI_LIB (libcupti path), LATSCOPE_GPU_CLOCK=offset (skip the timestamp
 * callback), LATSCOPE_GPU_DRAIN_MS (50), LATSCOPE_GPU_REORDER_MS (60),
 * LATSCOPE_GPU_RING_STEPS (262144), LATSCOPE_GPU_MARKER_BYTES (65536),
 * LATSCOPE_GPU_JOIN_US (200), LATSCOPE_GPU_IDLE_US (2000), LATSCOPE_GPU_VERBOSE=1. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cupti_api.h"
#include "cupti_records.h"
#include "common/segment.h"
#include "common/step_ring.h"

#define EXPORT __attribute__((visibility("default")))

#define BUFFER_BYTES     (1u << 20)  /* one CUPTI activity buffer */
#define QUEUE_MAX_EVENTS (1u << 20)  /* events waiting for the drain thread */
#define CALIBRATE_EVERY_NS (1000ull * 1000 * 1000)
#define CALIBRATE_TRIES  16

static struct {
	struct ls_cupti_api api;
	struct ls_ring_writer ring;
	CUpti_SubscriberHandle subscriber;
	pid_t pid;
	int verbose;

	/* Filled by CUPTI's buffer callback (any thread), emptied by the drain thread. */
	pthread_mutex_t queue_lock;
	struct ls_gpu_event *queue;
	size_t n_queue, cap_queue;
	uint64_t dropped;           /* CUPTI's dropped records + queue overflow (atomic) */
	uint64_t records;           /* activity records walked (atomic) */

	/* Drain thread only (and the exit hook, under drain_lock). */
	pthread_mutex_t drain_lock;
	struct ls_seg_set seg;
	struct ls_gpu_event *pending;
	size_t n_pending, cap_pending;
	uint64_t drain_ns, reorder_ns;

	int exiting;                /* set by the exit hook: the drain thread stops touching CUPTI */

	/* Clock: 0 offset with the timestamp callback; else calibrated (atomic). */
	int clock;
	int64_t offset_ns;
	uint64_t calibrated_ns;
} g = {
	.queue_lock = PTHREAD_MUTEX_INITIALIZER,
	.drain_lock = PTHREAD_MUTEX_INITIALIZER,
};

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t CUPTIAPI cupti_clock(void)
{
	return mono_ns();
}

static uint64_t env_u64(const char *name, uint64_t def, uint64_t lo, uint64_t hi)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return def;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (errno || *end || x < lo || x > hi) {
		fprintf(stderr, "latscope-gpu: ignoring %s=%s (want an integer in %llu..%llu)\n", name,
			v, (unsigned long long)lo, (unsigned long long)hi);
		return def;
	}
	return x;
}

static void disable(const char *why)
{
	fprintf(stderr, "latscope-gpu: pid %d: GPU step tracing off: %s\n", (int)g.pid, why);
	ls_ring_set_status(&g.ring, LS_RING_DISABLED, why); /* truncated to the status field */
}

/* Offset clock: recalibrated every second (CUPTI's default clock, CLOCK_REALTIME, can be
 * stepped or slewed against CLOCK_MONOTONIC). */
static void calibrate(void)
{
	int64_t offset = 0;
	uint64_t error = 0;
	g.calibrated_ns = mono_ns();
	if (ls_cupti_calibrate(&g.api, CALIBRATE_TRIES, &offset, &error) < 0)
		return;
	__atomic_store_n(&g.offset_ns, offset, __ATOMIC_RELAXED);
	if (g.ring.hdr) {
		__atomic_store_n(&g.ring.hdr->clock_offset_ns, offset, __ATOMIC_RELAXED);
		ls_ring_store(&g.ring.hdr->clock_error_ns, error);
	}
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*max_records = 0;
	*buffer = aligned_alloc(8, BUFFER_BYTES);
	*size = *buffer ? BUFFER_BYTES : 0; /* CUPTI counts what it cannot store as dropped */
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
				      size_t valid)
{
	(void)size;
	if (!buffer)
		return;
	struct ls_cupti_parse_stats st = { 0 };
	int64_t offset = __atomic_load_n(&g.offset_ns, __ATOMIC_RELAXED);
	pthread_mutex_lock(&g.queue_lock);
	/* Room for every record the buffer can hold (each is at least 32 bytes). */
	size_t room = valid / 32 + 1;
	if (g.n_queue + room > g.cap_queue && g.cap_queue < QUEUE_MAX_EVENTS) {
		size_t want = g.cap_queue ? g.cap_queue : 4096;
		while (want < g.n_queue + room && want < QUEUE_MAX_EVENTS)
			want *= 2;
		struct ls_gpu_event *grown = realloc(g.queue, want * sizeof(*grown));
		if (grown) {
			g.queue = grown;
			g.cap_queue = want;
		}
	}
	g.n_queue += ls_cupti_parse(&g.api, buffer, valid, offset, g.queue + g.n_queue,
				    g.cap_queue - g.n_queue, &st);
	pthread_mutex_unlock(&g.queue_lock);
	size_t cupti_dropped = 0;
	if (g.api.ActivityGetNumDroppedRecords(ctx, stream, &cupti_dropped) != CUPTI_SUCCESS)
		cupti_dropped = 0;
	__atomic_fetch_add(&g.dropped, st.overflow + cupti_dropped + st.bad_buffer, __ATOMIC_RELAXED);
	__atomic_fetch_add(&g.records, st.records, __ATOMIC_RELAXED);
	free(buffer);
}

static void write_step(void *ctx, const struct ls_gpu_step *step)
{
	(void)ctx;
	ls_ring_write(&g.ring, step, mono_ns());
}

/* Moves the queue into pending and segments what is old enough. */
static void process(uint64_t watermark_ns, int finish)
{
	pthread_mutex_lock(&g.queue_lock);
	if (g.n_pending + g.n_queue > g.cap_pending) {
		size_t want = g.cap_pending ? g.cap_pending : 4096;
		while (want < g.n_pending + g.n_queue)
			want *= 2;
		struct ls_gpu_event *grown = realloc(g.pending, want * sizeof(*grown));
		if (grown) {
			g.pending = grown;
			g.cap_pending = want;
		}
	}
	size_t take = g.cap_pending - g.n_pending;
	if (take > g.n_queue)
		take = g.n_queue;
	if (take)
		memcpy(g.pending + g.n_pending, g.queue, take * sizeof(*g.queue));
	if (g.n_queue > take)
		__atomic_fetch_add(&g.dropped, g.n_queue - take, __ATOMIC_RELAXED);
	g.n_pending += take;
	g.n_queue = 0;
	pthread_mutex_unlock(&g.queue_lock);

	g.n_pending = ls_seg_set_run(&g.seg, g.pending, g.n_pending, watermark_ns);
	if (finish)
		ls_seg_set_finish(&g.seg);

	struct ls_seg_stats st;
	ls_seg_set_stats(&g.seg, &st);
	struct ls_ring_header *h = g.ring.hdr;
	ls_ring_store(&h->events, st.events);
	ls_ring_store(&h->late, st.late);
	ls_ring_store(&h->fallback_steps, st.fallback_steps);
	ls_ring_store(&h->dropped, __atomic_load_n(&g.dropped, __ATOMIC_RELAXED) + st.dropped);
	ls_ring_store(&h->heartbeat_ns, mono_ns());
}

static void *drain_main(void *arg)
{
	(void)arg;
	struct timespec nap = { .tv_sec = (time_t)(g.drain_ns / 1000000000ull),
				.tv_nsec = (long)(g.drain_ns % 1000000000ull) };
	for (;;) {
		nanosleep(&nap, NULL);
		pthread_mutex_lock(&g.drain_lock);
		if (g.exiting) { /* CUDA is being torn down: no more CUPTI calls from here */
			pthread_mutex_unlock(&g.drain_lock);
			return NULL;
		}
		uint64_t now = mono_ns();
		if (g.clock == LS_RING_CLOCK_OFFSET && now - g.calibrated_ns >= CALIBRATE_EVERY_NS)
			calibrate();
		/* Every record of work that finished before now is delivered by this flush. */
		g.api.ActivityFlushAll(0);
		process(now > g.reorder_ns ? now - g.reorder_ns : 0, 0);
		pthread_mutex_unlock(&g.drain_lock);
	}
	return NULL;
}

/* A clean exit: place what was already delivered (no CUPTI call: CUDA may be gone). */
static void at_exit(void)
{
	struct timespec limit;
	clock_gettime(CLOCK_REALTIME, &limit);
	limit.tv_nsec += 100 * 1000 * 1000;
	if (limit.tv_nsec >= 1000000000) {
		limit.tv_sec++;
		limit.tv_nsec -= 1000000000;
	}
	if (pthread_mutex_timedlock(&g.drain_lock, &limit) != 0)
		return;
	g.exiting = 1;
	process(UINT64_MAX - 1, 1);
	pthread_mutex_unlock(&g.drain_lock);
}

static int enable(CUpti_ActivityKind kind, const char *name, char *why, size_t why_len)
{
	CUptiResult rc = g.api.ActivityEnable(kind);
	if (rc != CUPTI_SUCCESS) {
		snprintf(why, why_len, "cuptiActivityEnable(%s): %s", name,
			 ls_cupti_strerror(&g.api, rc));
		return -1;
	}
	return 0;
}

static void disable_kinds(void)
{
	g.api.ActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY);
	g.api.ActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	g.api.ActivityDisable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
	g.api.ActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME);
}

static void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
				 const void *data)
{
	(void)ud, (void)domain, (void)cbid, (void)data; /* subscribed to own CUPTI, no callbacks */
}

static int subscribe(char *why, size_t why_len)
{
	CUptiResult rc;
	char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 8] = "";
	if (g.api.Subscribe_v2) {
		CUpti_SubscriberParams params = { 0 };
		params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
		params.subscriberName = "latscope";
		params.oldSubscriberName = other;
		params.oldSubscriberSize = sizeof(other) - 1;
		rc = g.api.Subscribe_v2(&g.subscriber, on_callback, NULL, &params);
	} else {
		rc = g.api.Subscribe(&g.subscriber, on_callback, NULL);
	}
	if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		snprintf(why, why_len, "another CUPTI client holds the process (%s; nsys, ncu or the "
			 "torch profiler?): CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED",
			 other[0] ? other : "name not given");
		return -1;
	}
	if (rc != CUPTI_SUCCESS) {
		snprintf(why, why_len, "cuptiSubscribe: %s", ls_cupti_strerror(&g.api, rc));
		return -1;
	}
	return 0;
}

/* Settings from the environment, the segmenter, and the ring file. 0, or -1 with why. */
static int start_ring(char *why, size_t why_len)
{
	g.pid = getpid();
	g.verbose = env_u64("LATSCOPE_GPU_VERBOSE", 0, 0, 1) != 0;
	g.drain_ns = env_u64("LATSCOPE_GPU_DRAIN_MS", 50, 1, 10000) * 1000000ull;
	g.reorder_ns = env_u64("LATSCOPE_GPU_REORDER_MS", 60, 0, 10000) * 1000000ull;
	struct ls_seg_config cfg;
	ls_seg_config_default(&cfg);
	cfg.marker_max_bytes = env_u64("LATSCOPE_GPU_MARKER_BYTES", cfg.marker_max_bytes, 1, 1ull << 30);
	cfg.join_gap_ns = env_u64("LATSCOPE_GPU_JOIN_US", cfg.join_gap_ns / 1000, 0, 1000000) * 1000;
	cfg.idle_gap_ns = env_u64("LATSCOPE_GPU_IDLE_US", cfg.idle_gap_ns / 1000, 1, 10000000) * 1000;
	ls_seg_set_init(&g.seg, &cfg, (uint32_t)g.pid, write_step, NULL);
	uint32_t cap = (uint32_t)env_u64("LATSCOPE_GPU_RING_STEPS", LS_RING_DEFAULT_CAP,
					 LS_RING_MIN_CAP, LS_RING_MAX_CAP);
	return ls_ring_create(&g.ring, getenv("LATSCOPE_GPU_DIR"), (uint32_t)g.pid, cap, why, why_len) < 0 ? -1 : 0;
}

/* The clock: CUPTI's timestamp callback unless LATSCOPE_GPU_CLOCK=offset or it is refused.
 * It must be set before any activity kind is enabled. */
static void start_clock(void)
{
	const char *clock_env = getenv("LATSCOPE_GPU_CLOCK");
	int want_offset = clock_env && !strcmp(clock_env, "offset");
	CUptiResult rc = CUPTI_ERROR_NOT_SUPPORTED;
	if (!want_offset && g.api.ActivityRegisterTimestampCallback)
		rc = g.api.ActivityRegisterTimestampCallback(cupti_clock);
	g.clock = rc == CUPTI_SUCCESS ? LS_RING_CLOCK_CALLBACK : LS_RING_CLOCK_OFFSET;
	if (g.clock == LS_RING_CLOCK_OFFSET)
		calibrate();
	g.ring.hdr->clock = (uint32_t)g.clock;
}

/* The runtime API records the sync fallback needs: 1 when all were enabled. */
static int enable_runtime_records(void)
{
	static const CUpti_CallbackId cbids[] = {
		CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
		CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
		CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
		CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000,
		CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
		CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
	};
	if (!g.api.ActivityEnableRuntimeApi)
		return 0;
	int ok = 1;
	for (size_t i = 0; i < sizeof(cbids) / sizeof(cbids[0]); i++)
		if (g.api.ActivityEnableRuntimeApi(cbids[i], 1) != CUPTI_SUCCESS)
			ok = 0;
	return ok;
}

/* The activity callbacks and kinds; extra gets what is missing, in words. 0, or -1 with why
 * (kinds already enabled are the caller's to disable). */
static int start_activity(char *why, size_t why_len, char *extra, size_t extra_len)
{
	CUptiResult rc = g.api.ActivityRegisterCallbacks(buffer_requested, buffer_completed);
	if (rc != CUPTI_SUCCESS) {
		snprintf(why, why_len, "cuptiActivityRegisterCallbacks: %s", ls_cupti_strerror(&g.api, rc));
		return -2; /* nothing enabled yet */
	}
	if (enable(CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY", why, why_len) < 0 ||
	    enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL", why, why_len) < 0)
		return -1;
	extra[0] = 0;
	if (enable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE, "GRAPH_TRACE", why, why_len) < 0)
		snprintf(extra, extra_len, "; no graph trace: graphs show as their kernels");
	if (!enable_runtime_records() && !extra[0])
		snprintf(extra, extra_len, "; no sync records: sync fallback off");
	return 0;
}

/* The drain thread, with every signal blocked (the host's signals are not ours to take). */
static int start_drain(void)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t tid;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	int err = pthread_create(&tid, &attr, drain_main, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

static void start(void)
{
	char why[LS_RING_STATUS_MAX * 2], extra[96];
	if (start_ring(why, sizeof(why)) < 0 || ls_cupti_load(&g.api, why, sizeof(why)) < 0) {
		disable(why);
		return;
	}
	uint32_t version = 0;
	if (g.api.GetVersion(&version) == CUPTI_SUCCESS)
		g.ring.hdr->cupti_version = version;
	if (subscribe(why, sizeof(why)) < 0) {
		disable(why);
		return;
	}
	start_clock();
	int act = start_activity(why, sizeof(why), extra, sizeof(extra));
	if (act == -2)
		goto fail_unsubscribe;
	if (act < 0)
		goto fail_kinds;
	int err = start_drain();
	if (err) {
		snprintf(why, sizeof(why), "cannot start the drain thread: %s", strerror(err));
		goto fail_kinds;
	}
	atexit(at_exit);
	char status[LS_RING_STATUS_MAX];
	snprintf(status, sizeof(status), "tracing (CUPTI %u, clock %s%s)", version,
		 g.clock == LS_RING_CLOCK_CALLBACK ? "callback" : "offset", extra);
	ls_ring_set_status(&g.ring, LS_RING_TRACING, status);
	if (g.verbose)
		fprintf(stderr, "latscope-gpu: pid %d: %s -> %s\n", (int)g.pid, status, g.ring.path);
	return;

fail_kinds:
	disable_kinds();
fail_unsubscribe:
	g.api.Unsubscribe(g.subscriber);
	disable(why);
}

/* Called by the CUDA driver during cuInit when CUDA_INJECTION64_PATH names this library.
 * Always returns 1: a failure here must not become the engine's failure. */
EXPORT int InitializeInjection(void)
{
	static int started;
	if (__atomic_exchange_n(&started, 1, __ATOMIC_ACQ_REL))
		return 1;
	const char *off = getenv("LATSCOPE_GPU_DISABLE");
	if (off && *off && strcmp(off, "0"))
		return 1;
	start();
	return 1;
}
