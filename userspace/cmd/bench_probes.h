/* bench_probes.h — the probes and attribution stages as `latscope bench` runs them: open the
 * eBPF probes as --probes says (auto: when root and BTF allow, else off with the reason; on:
 * or fail; off), hand the driver their drain hook, and after the run attribute every request,
 * print "Where the latency went" (and the GPU section with --gpu-dir), write the attribution
 * JSONL beside --record and the --trace file. bench.c calls open, hook, run_ended, attribute,
 * client_delay_p99, report,
 * attribution and watched (for --html) and close; bench_mpi.c the rank view, events and
 * set_parts (every rank's requests attributed at rank 0), and why. */
#ifndef LATSCOPE_BENCH_PROBES_H
#define LATSCOPE_BENCH_PROBES_H

#include <stdio.h>
#include "config/config.h"
#include "driver/driver.h"
#include "base/record.h"
#include "attribution/attribution.h"

struct ls_bench_probes;

/* Opens the probes for this process and the servers cfg names (run: the requests it will send,
 * to size each socket's event store). Returns 0 with *out set (also when the probes are off: the
 * reason is kept for the report and, under auto, printed on stderr), or -1 when --probes on
 * could not open them (one line on stderr naming why) or on ENOMEM. */
int ls_bench_probes_open(const struct ls_config *cfg, const struct ls_run *run, struct ls_bench_probes **out);

/* Adds the probes' drain hook to a driver run (nothing when the probes are off). bp may be NULL. */
void ls_bench_probes_hook(struct ls_bench_probes *bp, struct ls_driver_opts *o);

/* Marks the end of the measured run: the harness's cost is its CPU from open to here (metrics
 * and reports after it are not). bp may be NULL. */
void ls_bench_probes_run_ended(struct ls_bench_probes *bp);

/* After the run: drains the ring once more, loads GPU steps (--gpu-dir) and attributes every
 * request of run (before the report, so its figures are the run's: the client delay). 0,
 * -EIO when the GPU steps could not be read (said; the attribution goes on without them),
 * -ENOMEM. bp NULL: nothing. */
int ls_bench_probes_attribute(struct ls_bench_probes *bp, const struct ls_run *run);
/* The client delay per frame (harness stamp - kernel arrival) at P99 over run's requests, from
 * that attribution; 0 when the probes saw no frame. */
uint64_t ls_bench_probes_client_delay_p99(const struct ls_bench_probes *bp, const struct ls_run *run);
/* Prints the attribution's section(s) to out, writes the attribution JSONL (when cfg has a
 * --record path and the probes ran: ls_bench_attribution_path) and --trace. 0, or -errno when an
 * output file could not be written (message on stderr). Nothing before ls_bench_probes_attribute. */
int ls_bench_probes_report(struct ls_bench_probes *bp, const struct ls_run *run, FILE *out);

/* The attribution ls_bench_probes_attribute made (NULL before it, or when bp is NULL); freed by
 * ls_bench_probes_close. */
const struct ls_attribution *ls_bench_probes_attribution(const struct ls_bench_probes *bp);
/* What was watched, in words: "eBPF probes on: the harness, server pid 12" or "probes off: WHY". */
void ls_bench_probes_watched(const struct ls_bench_probes *bp, char *buf, size_t cap);
/* What an MPI rank reports of its own probes, from one attribution of run's requests: the
 * client delay per frame (harness stamp - kernel arrival) at P99 and over how many frames
 * (have_client_delay 0 when no frame had a kernel stamp), and the sockets another process needs
 * to attribute those requests again from this process's events: their client sockets and the
 * server sockets those paired with (so a server's sockets, which every rank on its host sees,
 * travel once: with the rank whose request they served). */
struct ls_bench_rank_probes {
	int       have_client_delay;
	uint64_t  client_delay_p99_ns, n_client_frames;
	uint64_t *cookies;             /* malloc'd, NULL when none */
	size_t    n_cookies;
};
/* 0, or -1 when the probes are off (bp NULL too) or out of memory (*out zeroed then). */
int ls_bench_probes_rank_view(struct ls_bench_probes *bp, const struct ls_run *run,
			      struct ls_bench_rank_probes *out);
/* This process's events (NULL when the probes are off). */
const struct ls_evstore *ls_bench_probes_events(const struct ls_bench_probes *bp);
/* MPI, rank 0: the run ls_bench_probes_report gets is merged from n_stores processes: request i
 * is attributed with stores[part[i]] (rank k's events in rank 0's clock; NULL: its probes were
 * off), n_part = its requests. own: rank 0's own requests, whose CPU the harness cost is. bp
 * takes stores and part (freed at close, also when bp is NULL). */
void ls_bench_probes_set_parts(struct ls_bench_probes *bp, struct ls_evstore **stores, size_t n_stores,
			       uint32_t *part, size_t n_part, const struct ls_run *own);
/* Why the probes are off ("--probes off", "not root", ...), or NULL when they are on. */
const char *ls_bench_probes_why(const struct ls_bench_probes *bp);

/* Detaches the probes and frees everything. NULL is fine. */
void ls_bench_probes_close(struct ls_bench_probes *bp);

/* Where the attribution JSONL of a --record file goes: "run.jsonl" -> "run.attribution.jsonl",
 * any other name gets ".attribution.jsonl" appended. malloc'd; NULL on ENOMEM. */
char *ls_bench_attribution_path(const char *record_path);

#endif
