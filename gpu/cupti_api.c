/* cupti_api.c — dlopen of libcupti (see cupti_api.h). */
#include "cupti_api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *try_open(const char *name, char *path, size_t path_len)
{
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (h)
		snprintf(path, path_len, "%s", name);
	return h;
}

#define SYM(field, name, required)                                                           \
	do {                                                                                 \
		api->field = (typeof(api->field))dlsym(api->handle, name);                     \
		if (!api->field && (required)) {                                             \
			snprintf(err, err_len, "%s lacks %s: CUPTI too old for latscope",   \
				 api->path, name);                                           \
			dlclose(api->handle);                                                \
			api->handle = NULL;                                                  \
			return -1;                                                           \
		}                                                                            \
	} while (0)

int ls_cupti_load(struct ls_cupti_api *api, char *err, size_t err_len)
{
	memset(api, 0, sizeof(*api));
	const char *env = getenv("LATSCOPE_CUPTI_LIB");
	if (env && *env) {
		api->handle = try_open(env, api->path, sizeof(api->path));
		if (!api->handle) {
			const char *why = dlerror();
			snprintf(err, err_len, "cannot load LATSCOPE_CUPTI_LIB=%s: %s", env,
				 why ? why : "unknown error");
			return -1;
		}
	} else {
		const char *cuda = getenv("CUDA_HOME");
		char a[300], b[300];
		if (!cuda || !*cuda)
			cuda = "/usr/local/cuda";
		snprintf(a, sizeof(a), "%s/lib64/libcupti.so", cuda);
		snprintf(b, sizeof(b), "%s/extras/CUPTI/lib64/libcupti.so", cuda);
		const char *names[] = { "libcupti.so.13", "libcupti.so", a, b, "libcupti.so.12" };
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !api->handle; i++)
			api->handle = try_open(names[i], api->path, sizeof(api->path));
		if (!api->handle) {
			snprintf(err, err_len, "libcupti not found (tried libcupti.so.13, libcupti.so, "
				 "%s, %s): set LATSCOPE_CUPTI_LIB to its path", a, b);
			return -1;
		}
	}
	SYM(GetVersion, "cuptiGetVersion", 1);
	SYM(GetResultString, "cuptiGetResultString", 1);
	SYM(Subscribe, "cuptiSubscribe", 1);
	SYM(Subscribe_v2, "cuptiSubscribe_v2", 0);
	SYM(Unsubscribe, "cuptiUnsubscribe", 1);
	SYM(ActivityRegisterTimestampCallback, "cuptiActivityRegisterTimestampCallback", 0);
	SYM(ActivityRegisterCallbacks, "cuptiActivityRegisterCallbacks", 1);
	SYM(ActivityEnable, "cuptiActivityEnable", 1);
	SYM(ActivityDisable, "cuptiActivityDisable", 1);
	SYM(ActivityEnableRuntimeApi, "cuptiActivityEnableRuntimeApi", 0);
	SYM(ActivityFlushAll, "cuptiActivityFlushAll", 1);
	SYM(ActivityGetNextRecord, "cuptiActivityGetNextRecord", 1);
	SYM(ActivityGetNumDroppedRecords, "cuptiActivityGetNumDroppedRecords", 1);
	SYM(GetTimestamp, "cuptiGetTimestamp", 1);
	return 0;
}

const char *ls_cupti_strerror(const struct ls_cupti_api *api, CUptiResult rc)
{
	static __thread char buf[96];
	const char *name = NULL;
	if (!api->GetResultString || api->GetResultString(rc, &name) != CUPTI_SUCCESS || !name)
		name = "CUPTI error";
	snprintf(buf, sizeof(buf), "%s (%d)", name, (int)rc);
	return buf;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int ls_cupti_calibrate(const struct ls_cupti_api *api, int tries, int64_t *offset_ns,
		       uint64_t *error_ns)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < tries; i++) {
		uint64_t cupti = 0, m0 = mono_ns();
		CUptiResult rc = api->GetTimestamp(&cupti);
		uint64_t m1 = mono_ns();
		if (rc != CUPTI_SUCCESS || !cupti)
			continue;
		if (m1 - m0 < best) {
			best = m1 - m0;
			*offset_ns = (int64_t)(m0 + (m1 - m0) / 2) - (int64_t)cupti;
		}
	}
	if (best == UINT64_MAX)
		return -1;
	*error_ns = best / 2;
	return 0;
}
