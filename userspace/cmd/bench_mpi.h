/* bench_mpi.h — `mpirun -n N latscope bench` (and `srun -n N`): one benchmark over N processes.
 * Rank 0 builds the dataset and the schedule as one process would, and sends rank k every
 * measured request i with i % N == k (with its offset in the schedule) and every warmup; all
 * ranks start at one agreed instant; --max-concurrency C is C/N slots per rank (the remainder to
 * the first ranks). Before and after the run rank 0 measures each rank's clock by ping-pong;
 * each rank writes FILE.rank<K> as its requests finish (--record FILE); after the run rank 0
 * gathers every record, moves its stamps into rank 0's clock and reports the run as one, with a
 * line per rank. Every hook is a no-op (0, or its argument back) when no launcher started the
 * process: bench.c calls them unconditionally. */
#ifndef LATSCOPE_BENCH_MPI_H
#define LATSCOPE_BENCH_MPI_H

#include <stdio.h>
#include "cmd/bench_probes.h"
#include "config/config.h"
#include "driver/driver.h"
#include "driver/plan.h"
#include "report/record_file.h"
#include "workload/arrival.h"

/* A rank's run as it goes to the gather, and what rank 0 gets back. */
struct ls_bench_mpi_run {
	struct ls_run *run;               /* in: this rank's (unsent requests dropped); out at rank 0: the
					   * merged run, every rank's requests in rank 0's clock */
	size_t n_not_sent;                /* in: this rank's; out at rank 0: every rank's */
	struct ls_bench_probes *probes;   /* this rank's (its events go to rank 0; rank 0 attributes all) */
	struct ls_record_writer *merged_record; /* out, rank 0 with --record: the merged file, open */
};

/* After the flags: MPI_Init when a launcher started this process (mpirun, srun). 0 (also when
 * none did, or the job has one rank), or -1 after a message (MPI off in this build, MPI_Init
 * failed). Ranks but 0 print nothing on stdout from here on. */
int ls_bench_mpi_start(void);
/* 1 in a run of more than one rank. */
int ls_bench_mpi_on(void);
/* This process's rank (0 when MPI is not on). */
int ls_bench_mpi_rank(void);

/* prepare(): on rank 0 after the plan is built (it sends each rank its share and keeps its
 * own), on the others instead of building one (plan and run are empty; they get their share).
 * cfg is read, never written. 0, or -1 after a message (an arrival that has no one schedule,
 * fewer slots than ranks, ...). */
int ls_bench_mpi_share(const struct ls_config *cfg, struct ls_plan *plan, struct ls_run *run);
/* The record file's header fields (--record): the ranks write FILE.rank<K> with them. */
void ls_bench_mpi_record_meta(const struct ls_record_meta *meta);
/* Rank 0's rc (the initial test's result) on every rank. */
int ls_bench_mpi_agree(int rc);
/* Just before the measured run: clocks measured, one start instant, this rank's slots, its
 * rank file. 0 or -1 after a message. */
int ls_bench_mpi_before_run(struct ls_driver_opts *o);
/* Just after it (unsent requests dropped): the clocks again, every record to rank 0, merged
 * into r->run in rank 0's clock, the merged record file opened on r->merged_record; with the
 * records, each rank's probe events of its requests' sockets, moved into rank 0's clock and
 * handed to the probes (ls_bench_probes_set_parts) so the attribution covers every rank's
 * requests. rc is the driver's; returns it, or -errno. */
int ls_bench_mpi_after_run(int rc, struct ls_bench_mpi_run *r);
/* Rank 0 closes its FILE.rank0 after the run's end with the server's spec-decode counters over
 * the run (it alone asks the server); the other ranks close theirs in ls_bench_mpi_after_run. */
void ls_bench_mpi_close_rank_file(const struct ls_spec_stats *spec);
/* The per-rank lines of the report (rank 0). */
void ls_bench_mpi_report(FILE *out);
/* 1 with *exit_code when this rank prints no report: a rank but 0, or rank 0 when the merge
 * did not fit in its memory and every record was spilled to the record file instead (it said
 * where). 0: report as usual. */
int ls_bench_mpi_no_report(int *exit_code);
/* At exit: MPI_Finalize, or MPI_Abort of the whole job when this rank stops before the others
 * know (an error before the gather). */
void ls_bench_mpi_end(int exit_code);

#endif
