/* cupti_records.c — CUPTI activity records -> latscope GPU events (see cupti_records.h). */
#include "cupti_records.h"

#include <cupti_runtime_cbid.h>

int ls_cupti_is_sync_cbid(uint32_t cbid)
{
	return cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020 ||
	       cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000 ||
	       cbid == CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020 ||
	       cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020;
}

int ls_cupti_is_graph_launch_cbid(uint32_t cbid)
{
	return cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 ||
	       cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000;
}

static uint64_t shift(uint64_t t, int64_t offset_ns)
{
	if (!t)
		return 0;
	if (offset_ns < 0 && (uint64_t)-offset_ns >= t)
		return 0;
	return t + (uint64_t)offset_ns;
}

static uint32_t copy_kind(uint8_t kind)
{
	switch (kind) {
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
		return LS_GPU_EV_H2D;
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
	case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
		return LS_GPU_EV_D2H;
	default:
		return LS_GPU_EV_COPY;
	}
}

/* Fills ev from one record; 0 when the record is not one we use. */
static int convert(const CUpti_Activity *rec, struct ls_gpu_event *ev, struct ls_cupti_parse_stats *st)
{
	switch (rec->kind) {
	case CUPTI_ACTIVITY_KIND_MEMCPY: {
		const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
		ev->kind = copy_kind(m->copyKind);
		ev->bytes = m->bytes;
		ev->start_ns = m->start;
		ev->end_ns = m->end;
		ev->device = m->deviceId;
		ev->stream = m->streamId;
		return 1;
	}
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
		const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
		ev->kind = LS_GPU_EV_KERNEL;
		ev->start_ns = k->start;
		ev->end_ns = k->end;
		ev->device = k->deviceId;
		ev->stream = k->streamId;
		return 1;
	}
	case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: {
		const CUpti_ActivityGraphTrace2 *g = (const CUpti_ActivityGraphTrace2 *)rec;
		ev->kind = LS_GPU_EV_GRAPH;
		ev->start_ns = g->start;
		ev->end_ns = g->end;
		ev->device = g->deviceId;
		ev->stream = g->streamId;
		if (ev->device == INT32_MAX) /* the graph starts with a host node */
			ev->device = g->endDeviceId;
		if (ev->device == INT32_MAX) {
			st->other_kinds++;
			return 0;
		}
		return 1;
	}
	case CUPTI_ACTIVITY_KIND_RUNTIME: {
		const CUpti_ActivityAPI *a = (const CUpti_ActivityAPI *)rec;
		if (ls_cupti_is_graph_launch_cbid(a->cbid)) {
			st->graph_launch_api++;
			return 0;
		}
		if (!ls_cupti_is_sync_cbid(a->cbid))
			return 0;
		ev->kind = LS_GPU_EV_SYNC;
		ev->start_ns = a->start;
		ev->end_ns = a->end;
		ev->device = LS_GPU_ALL_DEVICES;
		ev->stream = 0;
		return 1;
	}
	default:
		st->other_kinds++;
		return 0;
	}
}

size_t ls_cupti_parse(const struct ls_cupti_api *api, uint8_t *buf, size_t valid, int64_t offset_ns,
		      struct ls_gpu_event *out, size_t cap, struct ls_cupti_parse_stats *st)
{
	size_t n = 0;
	CUpti_Activity *rec = NULL;
	if (!buf || !valid)
		return 0;
	for (;;) {
		CUptiResult rc = api->ActivityGetNextRecord(buf, valid, &rec);
		if (rc == CUPTI_ERROR_MAX_LIMIT_REACHED)
			break;
		if (rc != CUPTI_SUCCESS) {
			st->bad_buffer++;
			break;
		}
		st->records++;
		struct ls_gpu_event ev = { 0 };
		if (!convert(rec, &ev, st))
			continue;
		ev.start_ns = shift(ev.start_ns, offset_ns);
		ev.end_ns = shift(ev.end_ns, offset_ns);
		if (!ev.start_ns || ev.end_ns < ev.start_ns) {
			st->no_timestamp++;
			continue;
		}
		if (n == cap) {
			st->overflow++;
			continue;
		}
		out[n++] = ev;
		st->events++;
	}
	return n;
}
