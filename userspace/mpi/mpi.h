/* mpi.h — the MPI transport of a run spread over N processes (`mpirun -n N latscope bench`).
 * Takes: the launcher's environment (mpirun, srun), bytes to send, CLOCK_MONOTONIC stamps.
 * Gives: rank and size, messages and broadcasts that wait without spinning a core, every rank's
 * clock offset to rank 0 by ping-pong (struct ls_clock_fit) and the map of a rank's stamps into
 * rank 0's clock. Built against Debian's OpenMPI (libopenmpi-dev, pkg-config ompi-c) when the
 * build finds it, else as a stub whose calls fail with "MPI is off in this build"; the clock
 * fit (mpi_clock.c) is plain arithmetic and always there. Nothing here touches MPI unless
 * ls_mpi_launched() said a launcher started the process. */
#ifndef LATSCOPE_MPI_H
#define LATSCOPE_MPI_H

#include <stddef.h>
#include <stdint.h>
#include "base/record.h"

#define LS_MPI_OFF_MSG "MPI is off in this build (built without libopenmpi-dev: install it and rebuild)"

/* One rank's clock against rank 0's: clock_k - clock_0 = offset_ns, known to +-unc_ns (half the
 * smallest ping-pong round trip), sampled at at_ns (rank 0's clock); after the run a second
 * sample gives the drift between the two. Rank 0's own fit is all zeros. */
struct ls_clock_fit {
	int64_t  offset_ns;
	uint64_t unc_ns;
	uint64_t at_ns;
	int      have_after;       /* the second sample (after the run) is there */
	int64_t  offset_after_ns;
	uint64_t unc_after_ns;
	uint64_t after_at_ns;
};

/* The offset at rank-0 instant t0: linear between the two samples (the first alone without
 * the second). */
int64_t ls_clock_offset_at(const struct ls_clock_fit *f, uint64_t t0);
/* A stamp of this rank's clock in rank 0's (0 stays 0: "did not happen"). */
uint64_t ls_clock_to_root(const struct ls_clock_fit *f, uint64_t t_local);
/* Every stamp of r (its frames too) moved into rank 0's clock (base/record_fields.h's tables). */
void ls_clock_request_to_root(const struct ls_clock_fit *f, struct ls_request *r);
/* The run's own stamps (start, end, server gone, ...) moved into rank 0's clock. */
void ls_clock_run_to_root(const struct ls_clock_fit *f, struct ls_run *run);
/* Drift between the samples in parts per million (us per s; 0 without the second sample). */
double ls_clock_drift_ppm(const struct ls_clock_fit *f);

/* 1 when mpirun/srun started this process (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK, or
 * SLURM_NTASKS inside an srun step): only then is MPI touched. */
int ls_mpi_launched(void);
/* 1 when this build has MPI. */
int ls_mpi_built(void);

/* MPI_Init. 0 with rank and size, or -ENOSYS (stub) / -EIO with a line on stderr. */
int ls_mpi_init(int *rank, int *size);
/* Waits (without spinning) for every rank, then MPI_Finalize. */
void ls_mpi_finalize(void);
/* Ends the whole job (every rank) with code. */
void ls_mpi_abort(int code);

/* Blocking point to point of len bytes (len <= INT_MAX): 0 or -EIO. */
int ls_mpi_send(int to, int tag, const void *buf, size_t len);
/* The next message from `from` with tag, whatever its size, into *buf (malloc'd, NUL after
 * it; free it) and *len. Waits by polling every 0.2 ms, not spinning. 0, -ENOMEM or -EIO. */
int ls_mpi_recv(int from, int tag, void **buf, size_t *len);
/* root's len bytes at buf to every rank, polled. 0 or -EIO. */
int ls_mpi_bcast(void *buf, size_t len, int root);
/* Every rank here, polled (a rank that waits does not take a core from one still running). */
int ls_mpi_barrier(void);
/* A small message (len <= LS_MPI_POST_MAX) sent without waiting, for periodic news (progress):
 * 1 sent; 0 not sent because the previous one is still on its way (post again later); or -errno.
 * ls_mpi_post_flush waits (polled) until the last one is out. */
#define LS_MPI_POST_MAX 64
int ls_mpi_post(int to, int tag, const void *buf, size_t len);
int ls_mpi_post_flush(void);
/* A message with tag from any rank, of exactly len bytes, if one is there: 1 with it in buf and
 * its sender in *from, 0 when none is, -EPROTO (another length) or -EIO. Never waits. */
int ls_mpi_take(int tag, void *buf, size_t len, int *from);
/* Every rank here; *any = 1 when any rank's flag was non-zero (a max over the ranks). 0, -EIO or
 * -ETIMEDOUT (after a stop, below). */
int ls_mpi_any(int flag, int *any);

/* The launcher's stop: mpirun sends each rank SIGTERM on Ctrl-C and SIGKILL budget_ns later
 * (OpenMPI's odls_base_sigkill_timeout, 1 s). ls_mpi_stop_watch(budget) catches SIGINT/SIGTERM
 * from then on (noting the stop instead of dying; the driver reads them itself while it runs),
 * and (0) gives them back their old handlers. Once a stop is noted (the handler, or
 * ls_mpi_stop_note for one the driver saw), every wait above gives up at the stop + budget with
 * -ETIMEDOUT (a wait begun later still polls 20 ms: a message already sent takes a few polls to
 * be seen): what arrived by then is merged before the SIGKILL. */
void ls_mpi_stop_watch(uint64_t budget_ns);
void ls_mpi_stop_note(uint64_t at_ns);
int ls_mpi_stopped(void);
/* The instant waits give up (0: no stop noted). */
uint64_t ls_mpi_stop_deadline_ns(void);

/* Ping-pong between rank 0 and every other rank, rounds times each; rank 0 fills fits[0..size)
 * (smallest round trip kept; fits[0] zero) and every rank gets the array (broadcast). after 0:
 * the first sample (offset_ns, unc_ns, at_ns); after 1: the second (*_after_*, have_after).
 * 0 or -EIO. */
int ls_mpi_clock_sync(int rank, int size, int rounds, int after, struct ls_clock_fit *fits);

#endif
