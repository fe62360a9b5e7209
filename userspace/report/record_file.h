/* record_file.h — the per-request JSONL file (--record FILE) and its reader (latscope report).
 * Line 1 is a header {"latscope_record": 1, "base_ns": "<CLOCK_MONOTONIC ns>", ...}; then one
 * line per finished request, written whole with one write(2) as it finishes (an interrupted
 * run keeps every finished request); a {"latscope_engine": 1, "id", "warmup", engine_* ...} line
 * per request whose engine's account was joined after its line (TensorRT-LLM's /perf_metrics,
 * read after the run): the reader puts those fields into that request; a last
 * {"latscope_run_end": 1, ...} line when the run ended normally or by signal, with every field
 * of struct ls_run (base/record_fields.h) and the server's speculative-decoding counters.
 * Stamps are ns after base_ns (0 = did not happen), so they stay exact as JSON doubles. Frames are arrays in the order the header's "frame_fields"
 * names. The header holds what the run was (struct ls_record_meta: its profile, server, model,
 * schedule, read percentiles and goodput SLOs), so `latscope report` of the file reports the run
 * as bench did (the same result JSON). Files written before these keys read as before. */
#ifndef LATSCOPE_RECORD_FILE_H
#define LATSCOPE_RECORD_FILE_H

#include <stdint.h>
#include "base/record.h"
#include "metrics/metrics.h"
#include "mpi/mpi.h"
#include "server/specdecode.h"
#include "server/metrics_poll.h"

#define LS_RECORD_VERSION 1

/* What a run was, for its report: written in the header, read back whole. */
struct ls_record_meta {
	uint64_t base_ns;          /* stamps in the file are relative to this */
	char     run_tag[32];
	double   target_rate;      /* 0 = inf / closed */
	uint32_t max_concurrency;
	char     arrival[32];      /* the kind (ls_arrival_kind_name) */
	char     profile[64];
	char     backend[32];
	char     arrival_desc[128]; /* as the report says it ("gamma, burstiness 1 (...)") */
	char     profile_source[256];
	char     model[256];
	char     base_url[256];
	char     endpoint[128];
	char     dataset[64];
	char     date[32];          /* YYYYmmdd-HHMMSS, as the result file names it */
	char     connection[96];    /* the connection policy, in words */
	double   request_rate;      /* --request-rate as given (0 = inf) */
	double   burstiness;
	uint32_t percentile_metrics; /* LS_PM_*; 0 = unknown (an older file) */
	char     percentiles[128];  /* the read rules' percentiles, "50,90,99"; "" = the profile's */
	struct ls_goodput goodput;  /* the SLOs the run was read with */
	struct ls_spec_stats spec;  /* run_end: the server's spec-decode counters over the run */
	/* run_end's "server_metrics": the server's /metrics polled during the run (its samples
	 * malloc'd by the reader: ls_record_meta_free; the writer's are the caller's). */
	struct ls_gauge_series gauges;
	int      complete;         /* reader: the run_end line was there */
	const char *request_json;  /* writer: what each request carried (a JSON object), or NULL */
	char     request[8192];    /* reader: the same, as read back ("" none) */
	/* One rank's file of an MPI run (FILE.rank<K>, mpi_size > 0): its stamps are in its own
	 * clock, and clock says how to move them into rank 0's (the reader does, so a loaded rank
	 * file is in rank 0's clock). mpi_rank -1: the merged file rank 0 writes at the end. */
	int      mpi_rank, mpi_size;
	struct ls_clock_fit clock;
	uint64_t run_start_ns;     /* the one start instant of an MPI run (this file's clock), 0 unknown */
};

struct ls_record_writer;

/* Creates (truncates) path and writes the header. base_ns 0 takes now minus 1 ms, so every
 * later stamp is positive. NULL with a message on failure. */
struct ls_record_writer *ls_record_open(const char *path, const struct ls_record_meta *meta);
/* One line for req. 0 or -errno (message once; later calls keep trying). */
int ls_record_write(struct ls_record_writer *w, const struct ls_request *req);
/* A "latscope_engine" line for req: its late fields (base/record_fields.h), the engine's account
 * joined after req's own line was written. 0 or -errno. */
int ls_record_write_late(struct ls_record_writer *w, const struct ls_request *req);
/* Writes the run_end line (when run != NULL) and closes. 0 or -errno. */
int ls_record_close(struct ls_record_writer *w, const struct ls_run *run);

/* The clock fit the run_end line records (its second sample: the drift). */
void ls_record_set_clock(struct ls_record_writer *w, const struct ls_clock_fit *fit);
/* The server's spec-decode counters over the run, for the run_end line. */
void ls_record_set_spec(struct ls_record_writer *w, const struct ls_spec_stats *spec);

/* The /metrics series polled during the run, for the run_end line (s: kept by the caller
 * until ls_record_close). */
void ls_record_set_gauges(struct ls_record_writer *w, const struct ls_gauge_series *s);
/* What a loaded meta owns (the /metrics samples). */
void ls_record_meta_free(struct ls_record_meta *m);

/* Driver on_finish adapter: ctx is the writer. */
void ls_record_on_finish(void *ctx, const struct ls_request *req);

/* Loads a record file into run (requests in file order: warmups wherever they were written;
 * stamps made absolute again with base_ns). A truncated last line (crash mid-write) is
 * skipped with a note; any other malformed line is an error naming path:line. 0 or -errno. */
int ls_record_load(const char *path, struct ls_run *run, struct ls_record_meta *meta);

/* Loads n files of one run (an MPI run's FILE.rank0 FILE.rank1 ...; n == 1 is ls_record_load)
 * into one run in rank 0's clock: every request id once (a request in two files, or a warmup
 * every rank sent, is kept once), run order. meta is the first file's, complete only when
 * every file is. Files of different runs (run tags) are an error. 0 or -errno (message). */
int ls_record_load_many(const char *const *paths, size_t n, struct ls_run *run, struct ls_record_meta *meta);

#endif
