/* cupti_records.h — CUPTI activity buffers -> struct ls_gpu_event (gpu/common/segment.h).
 * Walks a buffer with the real cuptiActivityGetNextRecord and reads only the leading fields
 * of each record (kind, times, device, stream, copy kind and size), which have kept their
 * places across CUPTI versions. */
#ifndef LATSCOPE_GPU_CUPTI_RECORDS_H
#define LATSCOPE_GPU_CUPTI_RECORDS_H

#include <stddef.h>
#include <stdint.h>
#include "cupti_api.h"
#include "common/segment.h"

struct ls_cupti_parse_stats {
	uint64_t records;        /* records walked */
	uint64_t events;         /* turned into events */
	uint64_t no_timestamp;   /* start/end 0 or reversed: skipped */
	uint64_t other_kinds;    /* kinds we do not use */
	uint64_t graph_launch_api; /* cudaGraphLaunch runtime records (counted only) */
	uint64_t overflow;       /* events that did not fit in out */
	uint64_t bad_buffer;     /* the walk ended with an error other than end-of-buffer */
};

/* Appends the events of buf[0..valid) to out (up to cap, counting the rest as overflow).
 * offset_ns is added to every device and API time (0 when CUPTI stamps in our clock).
 * Returns the number of events appended. */
size_t ls_cupti_parse(const struct ls_cupti_api *api, uint8_t *buf, size_t valid, int64_t offset_ns,
		      struct ls_gpu_event *out, size_t cap, struct ls_cupti_parse_stats *st);

/* Is this runtime API callback one the library records (graph launch, synchronize)? */
int ls_cupti_is_sync_cbid(uint32_t cbid);
int ls_cupti_is_graph_launch_cbid(uint32_t cbid);

#endif
