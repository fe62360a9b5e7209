/* server/ — what latscope asks of the server besides the benchmark's own requests.
 * Takes: the server's base URL (and API key).
 * Gives: blocking HTTP GET/POST (http_easy.h), the model name, vocabulary and /tokenize counts
 * (bench_server.h), speculative-decoding counters from /metrics and /server_info (specdecode.h),
 * the /metrics gauges polled on a thread of its own during a run (metrics_poll.h). */
#ifndef LATSCOPE_SERVER_H
#define LATSCOPE_SERVER_H

#include "server/http_easy.h"
#include "server/bench_server.h"
#include "server/specdecode.h"
#include "server/metrics_poll.h"

#endif
