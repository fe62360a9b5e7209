/* mpi_world.c — see mpi.h: OpenMPI when the build found it (LS_HAVE_MPI, from the Makefile's
 * pkg-config ompi-c), else the stub at the end. Waits poll MPI's non-blocking calls with short
 * sleeps: ranks share a host's cores with the server and with ranks still sending, and MPI's
 * own blocking calls spin. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base/clock.h"
#include "mpi/mpi.h"

int ls_mpi_launched(void)
{
	static const char *const env[] = { "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK" };
	for (size_t i = 0; i < sizeof(env) / sizeof(env[0]); i++) {
		const char *v = getenv(env[i]);
		if (v && *v)
			return 1;
	}
	/* SLURM_NTASKS alone is set in a whole allocation (an sbatch script too): only an srun
	 * step, which also sets SLURM_STEP_ID and SLURM_PROCID, launched this process as a task. */
	return getenv("SLURM_NTASKS") && getenv("SLURM_STEP_ID") && getenv("SLURM_PROCID");
}

#ifdef LS_HAVE_MPI
#include <mpi.h>

#define TAG_PING 101
#define TAG_PONG 102
#define POLL_NS 200000L

int ls_mpi_built(void)
{
	return 1;
}

/* The stop: when a SIGINT/SIGTERM came (the driver's, or the handler's after it), and how long
 * the launcher waits before SIGKILL. Atomics: the handler writes them. */
static _Atomic uint64_t stop_at_ns, stop_budget_ns;
static struct sigaction old_int, old_term;
static int watching;

static void on_stop(int sig)
{
	(void)sig;
	ls_mpi_stop_note(ls_now_ns());
}

void ls_mpi_stop_watch(uint64_t budget_ns)
{
	if (!budget_ns) {
		if (watching) {
			sigaction(SIGINT, &old_int, NULL);
			sigaction(SIGTERM, &old_term, NULL);
		}
		watching = 0;
		return;
	}
	stop_budget_ns = budget_ns;
	if (watching)
		return;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	/* The driver blocks both and reads them itself during the run: this catches the ones that
	 * come after it, which would otherwise end a rank that is sending its share to rank 0. */
	watching = sigaction(SIGINT, &sa, &old_int) == 0 && sigaction(SIGTERM, &sa, &old_term) == 0;
}

void ls_mpi_stop_note(uint64_t at_ns)
{
	uint64_t none = 0;
	atomic_compare_exchange_strong(&stop_at_ns, &none, at_ns ? at_ns : 1);
}

int ls_mpi_stopped(void)
{
	return stop_at_ns != 0;
}

uint64_t ls_mpi_stop_deadline_ns(void)
{
	return stop_at_ns ? stop_at_ns + stop_budget_ns : 0;
}

/* Past the stop's deadline a wait still gets LATE_GRACE_NS of its own: a message already sent
 * (the empty one that ends a rank's records, say) takes a few polls to be seen, and without them
 * every rank after the first late one would be given up too. */
#define LATE_GRACE_NS 20000000ull

static int past_deadline(uint64_t wait_from_ns)
{
	uint64_t d = ls_mpi_stop_deadline_ns();
	if (!d)
		return 0;
	if (d < wait_from_ns)
		d = wait_from_ns;
	return ls_now_ns() >= d + LATE_GRACE_NS;
}

static void pause_poll(void)
{
	struct timespec ts = { 0, POLL_NS };
	nanosleep(&ts, NULL);
}

static int wait_req(MPI_Request *rq)
{
	uint64_t from = ls_now_ns();
	for (;;) {
		int done = 0;
		if (MPI_Test(rq, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
			return -EIO;
		if (done)
			return 0;
		if (past_deadline(from))
			return -ETIMEDOUT;
		pause_poll();
	}
}

int ls_mpi_init(int *rank, int *size)
{
	int provided = 0, rc;
	sigset_t stop, old;
	/* The threads MPI starts (PMIx, libevent) get SIGINT and SIGTERM blocked, so those signals
	 * reach the main thread, whose driver reads them (a graceful stop: Slurm's scancel sends
	 * SIGTERM to every task) instead of a thread of MPI's taking the default action. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	int masked = pthread_sigmask(SIG_BLOCK, &stop, &old) == 0;
	/* Funneled: only the main thread calls MPI (libcurl's resolver threads never do). */
	rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
	if (masked)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != MPI_SUCCESS) {
		fprintf(stderr, "latscope bench: MPI_Init failed: started by a launcher (mpirun/srun) that "
				"this OpenMPI cannot talk to?\n");
		return -EIO;
	}
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Comm_rank(MPI_COMM_WORLD, rank);
	MPI_Comm_size(MPI_COMM_WORLD, size);
	return 0;
}

void ls_mpi_finalize(void)
{
	ls_mpi_barrier();
	MPI_Finalize();
}

void ls_mpi_abort(int code)
{
	MPI_Abort(MPI_COMM_WORLD, code);
}

int ls_mpi_send(int to, int tag, const void *buf, size_t len)
{
	if (len > INT_MAX)
		return -EMSGSIZE;
	MPI_Request rq;
	if (MPI_Isend(buf, (int)len, MPI_BYTE, to, tag, MPI_COMM_WORLD, &rq) != MPI_SUCCESS)
		return -EIO;
	return wait_req(&rq);
}

int ls_mpi_recv(int from, int tag, void **buf, size_t *len)
{
	MPI_Status st;
	int flag = 0, n = 0;
	uint64_t wait_from = ls_now_ns();
	*buf = NULL;
	*len = 0;
	for (;;) {
		if (MPI_Iprobe(from, tag, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS)
			return -EIO;
		if (flag)
			break;
		if (past_deadline(wait_from))
			return -ETIMEDOUT;
		pause_poll();
	}
	if (MPI_Get_count(&st, MPI_BYTE, &n) != MPI_SUCCESS || n < 0)
		return -EIO;
	char *p = malloc((size_t)n + 1);
	if (!p)
		return -ENOMEM;
	if (MPI_Recv(p, n, MPI_BYTE, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
		free(p);
		return -EIO;
	}
	p[n] = 0;
	*buf = p;
	*len = (size_t)n;
	return 0;
}

int ls_mpi_bcast(void *buf, size_t len, int root)
{
	if (len > INT_MAX)
		return -EMSGSIZE;
	MPI_Request rq;
	if (MPI_Ibcast(buf, (int)len, MPI_BYTE, root, MPI_COMM_WORLD, &rq) != MPI_SUCCESS)
		return -EIO;
	return wait_req(&rq);
}

int ls_mpi_barrier(void)
{
	MPI_Request rq;
	if (MPI_Ibarrier(MPI_COMM_WORLD, &rq) != MPI_SUCCESS)
		return -EIO;
	return wait_req(&rq);
}

/* The one small message on its way (ls_mpi_post): its bytes stay here until it is out. */
static struct {
	MPI_Request rq;
	int pending;
	unsigned char buf[LS_MPI_POST_MAX];
} post;

int ls_mpi_post(int to, int tag, const void *buf, size_t len)
{
	if (len > sizeof(post.buf))
		return -EMSGSIZE;
	if (post.pending) {
		int done = 0;
		if (MPI_Test(&post.rq, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
			return -EIO;
		if (!done)
			return 0;
		post.pending = 0;
	}
	memcpy(post.buf, buf, len);
	if (MPI_Isend(post.buf, (int)len, MPI_BYTE, to, tag, MPI_COMM_WORLD, &post.rq) != MPI_SUCCESS)
		return -EIO;
	post.pending = 1;
	return 1;
}

int ls_mpi_post_flush(void)
{
	if (!post.pending)
		return 0;
	post.pending = 0;
	return wait_req(&post.rq);
}

int ls_mpi_take(int tag, void *buf, size_t len, int *from)
{
	MPI_Status st;
	int flag = 0, n = 0;
	if (MPI_Iprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS)
		return -EIO;
	if (!flag)
		return 0;
	if (MPI_Get_count(&st, MPI_BYTE, &n) != MPI_SUCCESS || n < 0 || (size_t)n != len)
		return -EPROTO;
	if (MPI_Recv(buf, n, MPI_BYTE, st.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS)
		return -EIO;
	*from = st.MPI_SOURCE;
	return 1;
}

int ls_mpi_any(int flag, int *any)
{
	int mine = flag != 0;
	MPI_Request rq;
	*any = mine;
	if (MPI_Iallreduce(&mine, any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &rq) != MPI_SUCCESS)
		return -EIO;
	return wait_req(&rq);
}

/* Rank 0's side with rank k: the sample with the smallest round trip. */
static int ping_rank(int k, int rounds, int after, struct ls_clock_fit *fit)
{
	uint64_t best = UINT64_MAX;
	for (int r = 0; r < rounds; r++) {
		uint64_t t0 = ls_now_ns(), tk = 0;
		if (MPI_Send(&t0, sizeof(t0), MPI_BYTE, k, TAG_PING, MPI_COMM_WORLD) != MPI_SUCCESS ||
		    MPI_Recv(&tk, sizeof(tk), MPI_BYTE, k, TAG_PONG, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS)
			return -EIO;
		uint64_t t1 = ls_now_ns(), rtt = t1 - t0;
		if (rtt >= best)
			continue;
		best = rtt;
		/* k stamped tk between t0 and t1: at the midpoint when the two ways take as long,
		 * and anywhere in them at worst, so the offset is known to half the round trip. */
		int64_t off = (int64_t)(tk - t0) - (int64_t)(rtt / 2);
		if (after) {
			fit->offset_after_ns = off;
			fit->unc_after_ns = (rtt + 1) / 2;
			fit->after_at_ns = t0 + rtt / 2;
			fit->have_after = 1;
		} else {
			fit->offset_ns = off;
			fit->unc_ns = (rtt + 1) / 2;
			fit->at_ns = t0 + rtt / 2;
		}
	}
	return 0;
}

/* A rank's side: answer each ping with its own clock. The first is awaited without
 * spinning (rank 0 may be busy with other ranks); the rest follow at once. */
static int pong(int rounds)
{
	for (int r = 0; r < rounds; r++) {
		uint64_t t0 = 0, tk;
		if (r == 0) {
			void *buf;
			size_t len;
			if (ls_mpi_recv(0, TAG_PING, &buf, &len))
				return -EIO;
			free(buf);
		} else if (MPI_Recv(&t0, sizeof(t0), MPI_BYTE, 0, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE) !=
			   MPI_SUCCESS) {
			return -EIO;
		}
		tk = ls_now_ns();
		if (MPI_Send(&tk, sizeof(tk), MPI_BYTE, 0, TAG_PONG, MPI_COMM_WORLD) != MPI_SUCCESS)
			return -EIO;
	}
	return 0;
}

int ls_mpi_clock_sync(int rank, int size, int rounds, int after, struct ls_clock_fit *fits)
{
	int rc = 0;
	if (rank == 0) {
		for (int k = 1; k < size && !rc; k++)
			rc = ping_rank(k, rounds, after, &fits[k]);
	} else {
		rc = pong(rounds);
	}
	if (rc)
		return rc;
	return ls_mpi_bcast(fits, (size_t)size * sizeof(*fits), 0);
}

#else /* no MPI in this build: every call says so */

int ls_mpi_built(void)
{
	return 0;
}

int ls_mpi_init(int *rank, int *size)
{
	*rank = 0;
	*size = 1;
	fprintf(stderr, "latscope bench: started by mpirun/srun, but %s\n", LS_MPI_OFF_MSG);
	return -ENOSYS;
}

void ls_mpi_finalize(void)
{
}

void ls_mpi_abort(int code)
{
	(void)code;
}

int ls_mpi_send(int to, int tag, const void *buf, size_t len)
{
	(void)to, (void)tag, (void)buf, (void)len;
	return -ENOSYS;
}

int ls_mpi_recv(int from, int tag, void **buf, size_t *len)
{
	(void)from, (void)tag;
	*buf = NULL;
	*len = 0;
	return -ENOSYS;
}

int ls_mpi_bcast(void *buf, size_t len, int root)
{
	(void)buf, (void)len, (void)root;
	return -ENOSYS;
}

int ls_mpi_barrier(void)
{
	return -ENOSYS;
}

int ls_mpi_any(int flag, int *any)
{
	*any = flag;
	return -ENOSYS;
}

int ls_mpi_post(int to, int tag, const void *buf, size_t len)
{
	(void)to, (void)tag, (void)buf, (void)len;
	return -ENOSYS;
}

int ls_mpi_post_flush(void)
{
	return -ENOSYS;
}

int ls_mpi_take(int tag, void *buf, size_t len, int *from)
{
	(void)tag, (void)buf, (void)len, (void)from;
	return -ENOSYS;
}

void ls_mpi_stop_watch(uint64_t budget_ns)
{
	(void)budget_ns;
}

void ls_mpi_stop_note(uint64_t at_ns)
{
	(void)at_ns;
}

int ls_mpi_stopped(void)
{
	return 0;
}

uint64_t ls_mpi_stop_deadline_ns(void)
{
	return 0;
}

int ls_mpi_clock_sync(int rank, int size, int rounds, int after, struct ls_clock_fit *fits)
{
	(void)rank, (void)size, (void)rounds, (void)after, (void)fits;
	return -ENOSYS;
}

#endif
