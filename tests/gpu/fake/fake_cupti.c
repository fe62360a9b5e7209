/* fake_cupti.c — a stand-in libcupti for build/tests/gpu, loaded by liblatscope_cupti.so through
 * LATSCOPE_CUPTI_LIB. It plays an engine on a GPU: from the moment MEMCPY is enabled, a step
 * every 5 ms (H2D 4 us, kernel 3 ms, D2H of 32 bytes 4 us), delivered as real CUPTI record
 * structs through the registered buffer callbacks whenever the library flushes. So the whole
 * injection path (init, clock, drain thread, parse, segment, ring) runs without a GPU.
 *   FAKE_CUPTI_BUSY=1   cuptiSubscribe reports another subscriber ("nsys")
 *   FAKE_CUPTI_NO_TS=1  the timestamp callback is refused: records use CLOCK_REALTIME */
#include <cupti.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))
#define STEP_NS 5000000ull

static CUpti_TimestampCallbackFunc ts_cb;
static CUpti_BuffersCallbackRequestFunc buf_req;
static CUpti_BuffersCallbackCompleteFunc buf_done;
static uint64_t enabled_mask, t_enabled, next_step;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t now(void)
{
	return ts_cb ? ts_cb() : realtime_ns();
}

static int env_on(const char *name)
{
	const char *v = getenv(name);
	return v && *v && strcmp(v, "0");
}

EXPORT uint64_t fake_cupti_enabled_mask(void)
{
	return enabled_mask;
}

EXPORT CUptiResult cuptiGetVersion(uint32_t *v)
{
	*v = CUPTI_API_VERSION;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetResultString(CUptiResult r, const char **s)
{
	*s = r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
								  : "FAKE_CUPTI_RESULT";
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *ud)
{
	(void)cb, (void)ud;
	if (env_on("FAKE_CUPTI_BUSY"))
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	*s = (CUpti_SubscriberHandle)&lock;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *ud,
				     CUpti_SubscriberParams *p)
{
	CUptiResult rc = cuptiSubscribe(s, cb, ud);
	if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && p && p->oldSubscriberName &&
	    p->oldSubscriberSize > 4)
		strcpy(p->oldSubscriberName, "nsys");
	return rc;
}

EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle s)
{
	(void)s;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc f)
{
	if (env_on("FAKE_CUPTI_NO_TS"))
		return CUPTI_ERROR_NOT_SUPPORTED;
	ts_cb = f;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
						  CUpti_BuffersCallbackCompleteFunc done)
{
	buf_req = req;
	buf_done = done;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
	enabled_mask |= 1ull << kind;
	if (kind == CUPTI_ACTIVITY_KIND_MEMCPY)
		t_enabled = now();
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
	enabled_mask &= ~(1ull << kind);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable)
{
	(void)cbid, (void)enable;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext c, uint32_t s, size_t *n)
{
	(void)c, (void)s;
	*n = 0;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetTimestamp(uint64_t *t)
{
	*t = realtime_ns();
	return CUPTI_SUCCESS;
}

static size_t record_size(const CUpti_Activity *r)
{
	switch (r->kind) {
	case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
	case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: return sizeof(CUpti_ActivityGraphTrace2);
	case CUPTI_ACTIVITY_KIND_RUNTIME: return sizeof(CUpti_ActivityAPI);
	default: return 0;
	}
}

EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buf, size_t valid, CUpti_Activity **rec)
{
	size_t at = 0;
	if (*rec) {
		size_t sz = record_size(*rec);
		if (!sz)
			return CUPTI_ERROR_INVALID_KIND;
		at = (size_t)((uint8_t *)*rec - buf) + ((sz + 7) & ~(size_t)7);
	}
	if (at + sizeof(CUpti_Activity) > valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*rec = (CUpti_Activity *)(buf + at);
	return CUPTI_SUCCESS;
}

static void *put(uint8_t *buf, size_t *used, size_t size)
{
	void *p = buf + *used;
	memset(p, 0, size);
	*used += (size + 7) & ~(size_t)7;
	return p;
}

static void copy_rec(uint8_t *buf, size_t *used, uint8_t kind, uint64_t bytes, uint64_t s, uint64_t e)
{
	CUpti_ActivityMemcpy6 *m = put(buf, used, sizeof(*m));
	m->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m->copyKind = kind;
	m->bytes = bytes;
	m->start = s;
	m->end = e;
	m->streamId = 7;
	m->copyCount = 1;
}

/* Delivers every step that has finished by now. */
EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	(void)flag;
	if (!buf_req || !buf_done || !(enabled_mask & (1ull << CUPTI_ACTIVITY_KIND_MEMCPY)))
		return CUPTI_SUCCESS;
	pthread_mutex_lock(&lock);
	uint64_t t = now();
	uint8_t *buf = NULL;
	size_t size = 0, max = 0, used = 0;
	buf_req(&buf, &size, &max);
	if (!buf) {
		pthread_mutex_unlock(&lock);
		return CUPTI_SUCCESS;
	}
	for (;;) {
		uint64_t s = t_enabled + next_step * STEP_NS + 100000;
		if (s + 3010000 > t || used + 512 > size)
			break;
		copy_rec(buf, &used, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 256, s, s + 4000);
		CUpti_ActivityKernel10 *k = put(buf, &used, sizeof(*k));
		k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
		k->start = s + 5000;
		k->end = s + 3005000;
		k->streamId = 7;
		copy_rec(buf, &used, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 32, s + 3006000, s + 3010000);
		next_step++;
	}
	pthread_mutex_unlock(&lock);
	buf_done(NULL, 0, buf, size, used);
	return CUPTI_SUCCESS;
}
