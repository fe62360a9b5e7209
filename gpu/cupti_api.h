/* cupti_api.h — libcupti, dlopen'ed (never linked): the injection library must load, and do
 * no harm, wherever the installed CUPTI differs from the one we built against or is absent.
 * Only the calls latscope makes; optional ones are NULL when the library lacks them. */
#ifndef LATSCOPE_GPU_CUPTI_API_H
#define LATSCOPE_GPU_CUPTI_API_H

#include <stddef.h>
#include <cupti.h>

struct ls_cupti_api {
	void *handle;
	char  path[256];  /* the name that loaded */

	CUptiResult (*GetVersion)(uint32_t *version);
	CUptiResult (*GetResultString)(CUptiResult result, const char **str);
	CUptiResult (*Subscribe)(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb, void *ud);
	CUptiResult (*Subscribe_v2)(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb, void *ud,
				    CUpti_SubscriberParams *params); /* optional (CUDA 13) */
	CUptiResult (*Unsubscribe)(CUpti_SubscriberHandle sub);
	CUptiResult (*ActivityRegisterTimestampCallback)(CUpti_TimestampCallbackFunc f); /* optional */
	CUptiResult (*ActivityRegisterCallbacks)(CUpti_BuffersCallbackRequestFunc req,
						 CUpti_BuffersCallbackCompleteFunc done);
	CUptiResult (*ActivityEnable)(CUpti_ActivityKind kind);
	CUptiResult (*ActivityDisable)(CUpti_ActivityKind kind);
	CUptiResult (*ActivityEnableRuntimeApi)(CUpti_CallbackId cbid, uint8_t enable); /* optional */
	CUptiResult (*ActivityFlushAll)(uint32_t flag);
	CUptiResult (*ActivityGetNextRecord)(uint8_t *buffer, size_t valid, CUpti_Activity **record);
	CUptiResult (*ActivityGetNumDroppedRecords)(CUcontext ctx, uint32_t stream, size_t *dropped);
	CUptiResult (*GetTimestamp)(uint64_t *ts);
};

/* Loads libcupti: $LATSCOPE_CUPTI_LIB when set, else libcupti.so.13, libcupti.so, then
 * $CUDA_HOME (default /usr/local/cuda) lib64 and extras/CUPTI/lib64. Returns 0, or -1 with
 * the reason in err. */
int ls_cupti_load(struct ls_cupti_api *api, char *err, size_t err_len);

/* The offset from CUPTI's clock to CLOCK_MONOTONIC: cuptiGetTimestamp bracketed between two
 * CLOCK_MONOTONIC reads, the narrowest of tries brackets wins. *error_ns is half its width.
 * Returns 0, or -1 when cuptiGetTimestamp never answered. */
int ls_cupti_calibrate(const struct ls_cupti_api *api, int tries, int64_t *offset_ns,
		       uint64_t *error_ns);

/* A CUPTI result as "NAME (n)". */
const char *ls_cupti_strerror(const struct ls_cupti_api *api, CUptiResult rc);

#endif
