/* metrics_poll.h — the server's Prometheus GET /metrics, polled on a thread of its own during
 * the measured run (bench --server-metrics-ms): requests running and waiting, KV-cache use, as a
 * time series, each sample stamped (CLOCK_MONOTONIC) when its GET started and when its answer
 * was whole. The thread has its own libcurl multi handle and never touches the driver's loop;
 * a /metrics that hangs, is slow, is too big or is not Prometheus text costs one bounded try
 * (a timeout, a size cap) and a count in the series' notes, never the run.
 *
 * Names read (each engine's own, checked in its source):
 *   vLLM      vllm:num_requests_running, vllm:num_requests_waiting, vllm:kv_cache_usage_perc
 *             (a fraction 0..1; vllm:gpu_cache_usage_perc before V1)
 *   SGLang    sglang:num_running_reqs, sglang:num_queue_reqs, sglang:token_usage (fraction)
 *   llama.cpp llamacpp:requests_processing (busy slots), llamacpp:requests_deferred,
 *             llamacpp:kv_cache_usage_ratio (older servers; tools/server has none now)
 *   TGI       tgi_batch_current_size, tgi_queue_size (no KV-cache gauge)
 * Counts are summed over label sets (one per engine of a data-parallel server); fractions are
 * averaged. Histograms are never read: no percentile comes from a Prometheus bucket. */
#ifndef LATSCOPE_METRICS_POLL_H
#define LATSCOPE_METRICS_POLL_H

#include <stddef.h>
#include <stdint.h>
#include "server/http_easy.h"

enum ls_gauge {
	LS_GAUGE_RUNNING,   /* requests in the running batch (llama.cpp: busy slots) */
	LS_GAUGE_WAITING,   /* requests queued for a slot or a batch place */
	LS_GAUGE_KV_USE,    /* KV-cache use, fraction 0..1 */
	LS_GAUGE__COUNT
};

enum ls_gauge_engine { LS_GENGINE_NONE, LS_GENGINE_VLLM, LS_GENGINE_SGLANG, LS_GENGINE_LLAMACPP,
		       LS_GENGINE_TGI, LS_GENGINE__COUNT };

/* Why a poll gave no sample. */
enum ls_gauge_miss { LS_GMISS_TIMEOUT, LS_GMISS_TOO_BIG, LS_GMISS_HTTP, LS_GMISS_CONNECT,
		     LS_GMISS_NO_GAUGES, LS_GMISS__COUNT };

#define LS_GAUGE_BODY_CAP   (4u * 1024 * 1024) /* a /metrics answer longer than this is dropped */
#define LS_GAUGE_MAX_SAMPLES 200000            /* ~14 h at 250 ms; later samples are counted, not kept */

struct ls_gauge_sample {
	uint64_t start_ns;              /* the GET was handed to libcurl */
	uint64_t arrived_ns;            /* its answer was whole */
	double   v[LS_GAUGE__COUNT];    /* NaN: the server did not say */
};

struct ls_gauge_series {
	int      on;                    /* polling was asked for (the record says so even with no sample) */
	enum ls_gauge_engine engine;    /* whose names the samples came from */
	uint32_t period_ms;
	uint32_t timeout_ms;            /* one GET's bound */
	size_t   n, cap;
	struct ls_gauge_sample *samples; /* malloc'd, n of them in time order */
	uint64_t n_polls;               /* GETs made */
	uint64_t n_missed[LS_GMISS__COUNT];
	uint64_t n_dropped;             /* samples past LS_GAUGE_MAX_SAMPLES */
	uint64_t cpu_ns;                /* the poll thread's own CPU (inside the run's client CPU) */
	char     first_miss[200];       /* the first failed poll, in words */
};

const char *ls_gauge_name(enum ls_gauge g);             /* "running", "waiting", "kv_use" */
const char *ls_gauge_engine_name(enum ls_gauge_engine e); /* "vllm", "sglang", "llama.cpp", "tgi", "" */
enum ls_gauge_engine ls_gauge_engine_parse(const char *name); /* LS_GENGINE_NONE when unknown */
const char *ls_gauge_miss_name(enum ls_gauge_miss m);  /* "timeout", "too_big", ... */

/* Prometheus text -> one sample's values (NaN where absent) and whose names they were. 0 when
 * at least one gauge was read, -1 otherwise. Pure; text need not be NUL-terminated. */
int ls_gauge_parse(const char *text, size_t len, double v[LS_GAUGE__COUNT], enum ls_gauge_engine *engine);

void ls_gauge_series_free(struct ls_gauge_series *s);
/* Appends a sample (counted in n_dropped past the cap). 0 or -ENOMEM. */
int ls_gauge_series_add(struct ls_gauge_series *s, const struct ls_gauge_sample *smp);

struct ls_metrics_poll;

/* Starts polling base + "/metrics" every period_ms on a new thread (o: TLS and headers, as the
 * run's). NULL with a message when the thread cannot start (the run goes on without it). */
struct ls_metrics_poll *ls_metrics_poll_start(const char *base, const struct ls_http_opts *o, uint32_t period_ms);
/* Stops at once (a GET in flight is abandoned), joins the thread and moves its series into out
 * (owned by the caller from then on). NULL p: out is left as it was. */
void ls_metrics_poll_stop(struct ls_metrics_poll *p, struct ls_gauge_series *out);

#endif
