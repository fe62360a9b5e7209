/* bench_mpi.c — see bench_mpi.h. The transport (messages, broadcasts, clock ping-pong) is
 * mpi/; this file is what bench sends over it: each rank's share of the jobs, the start
 * instant, per-rank figures and every record, and the merge into one run at rank 0. Records
 * travel as their structs (every rank runs the same build on the same architecture). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <sys/resource.h>
#include "base/clock.h"
#include "base/record_fields.h"
#include "base/stats.h"
#include "base/strbuf.h"
#include "cmd/bench_mpi.h"
#include "driver/plan.h"
#include "config/profile.h"
#include "metrics/metrics.h"
#include "mpi/mpi.h"

#define TAG_SHARE 1
#define TAG_STATS 2
#define TAG_RECS  3
#define TAG_EVENTS 4
#define TAG_PROGRESS 5
#define PROGRESS_TICK_NS 250000000ull /* each rank's counts to rank 0: a 32-byte message per tick */
#define MAX_HOOKS 4
#define CHUNK_BYTES (4u << 20)  /* one message of records: what rank 0 holds beyond the records */
#define CLOCK_ROUNDS 64
#define START_MARGIN_NS 200000000ull /* the start instant's lead: its broadcast, each rank's wake-up */

/* What each rank tells rank 0 about its own run (besides the records). */
struct rank_stats {
	uint64_t n_measured, n_not_sent, n_frames;
	double   realised_rate, target_rate;
	uint64_t lag_p99_ns, n_lag;
	int      have_client_delay;
	uint64_t client_delay_p99_ns, n_client_frames;
	double   cpu_us;                /* getrusage over the measured run */
	struct ls_run fields;           /* its run's own fields (base/record_fields.h), its clock; no requests */
	int      driver_rc;
	char     host[64];
	char     probes[160];           /* "on", or why they are off */
	int      have_events;           /* its probes ran: its events follow its records */
	uint64_t n_events;              /* events of its own requests' sockets (sent after them) */
	uint64_t lost_by_kind[LS_EV__COUNT];
	uint64_t n_progress;            /* progress messages it sent rank 0 during the run */
};

static struct {
	int launched, on, rank, size;
	int gathered, agreed_exit;      /* every rank knows how the run ends: finalize, do not abort */
	int shared;                     /* rank 0 began sending the shares */
	const struct ls_config *cfg;    /* the flags, read only (set by the share) */
	char run_tag[32];               /* the plan's (set by the share) */
	enum ls_arrival_kind arrival;
	struct ls_bench_mpi_run *r;     /* the run being gathered, during ls_bench_mpi_after_run only */
	size_t n_merged;                /* requests in the merged run (the report's merge line) */
	uint32_t slots;
	struct ls_clock_fit *fits;      /* per rank, from rank 0's ping-pong (every rank has them) */
	uint64_t start0_ns;             /* the start instant, rank 0's clock */
	int have_meta;
	struct ls_record_meta meta;
	struct ls_record_writer *rank_file;
	struct ls_run own;              /* this rank's run fields (its rank file's run_end line) */
	struct rusage ru_before;
	struct rank_stats mine, *all;   /* all: rank 0 */
	struct ls_run local;            /* rank 0's own requests in the merged run (shallow copies) */
	uint64_t merge_ns, n_frames, n_events;
	uint64_t *cookies;              /* this rank's requests' sockets (ls_bench_probes_sockets) */
	size_t n_cookies;
	int spilled;                    /* the merge did not fit: every record went to a file */
	int stopped;                    /* a rank was stopped (mpirun's Ctrl-C): the gather is bounded */
	unsigned char *missing;         /* rank 0: ranks whose records did not arrive before the deadline */
	uint64_t budget_ns;             /* the launcher's SIGTERM -> SIGKILL time */
	/* The progress line over every rank: the driver publishes this rank's counts in `out`; a
	 * hook sends them to rank 0 (n_posted), whose hook keeps each rank's latest (peers,
	 * n_taken) and their sum (`more`) for its progress line. */
	struct ls_loop_hook hooks[MAX_HOOKS];
	struct ls_progress_counts out, posted, more, *peers;
	uint64_t n_posted, *n_taken, other_jobs;
	int events_dropped;             /* the records fit, the other ranks' events did not */
} g;

/* ---- the share: rank 0 -> rank k (driver/plan.h packs it) ---- */

int ls_bench_mpi_on(void)
{
	return g.on;
}

int ls_bench_mpi_rank(void)
{
	return g.on ? g.rank : 0;
}

int ls_bench_mpi_start(void)
{
	if (!ls_mpi_launched())
		return 0;
	if (ls_mpi_init(&g.rank, &g.size))
		return -1;
	g.launched = 1;
	if (g.size < 2) { /* one rank: a plain run */
		ls_mpi_finalize();
		g.launched = 0;
		return 0;
	}
	g.on = 1;
	g.fits = calloc((size_t)g.size, sizeof(*g.fits));
	g.all = calloc((size_t)g.size, sizeof(*g.all));
	g.missing = calloc((size_t)g.size, 1);
	g.peers = calloc((size_t)g.size, sizeof(*g.peers));
	g.n_taken = calloc((size_t)g.size, sizeof(*g.n_taken));
	if (!g.fits || !g.all || !g.missing || !g.peers || !g.n_taken) {
		fprintf(stderr, "latscope bench: out of memory for %d ranks\n", g.size);
		return -1;
	}
	if (g.rank > 0) { /* one report, rank 0's: the others' stdout goes nowhere */
		int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		fflush(stdout);
		if (fd >= 0 && dup2(fd, STDOUT_FILENO) < 0)
			fprintf(stderr, "latscope bench: rank %d: cannot quiet stdout: %s\n", g.rank, strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	return 0;
}

/* A message of any length as an 8-byte length and pieces of CHUNK_BYTES (MPI counts are ints). */
static int send_pieces(int to, int tag, const char *buf, size_t len)
{
	uint64_t total = len;
	int err = ls_mpi_send(to, tag, &total, sizeof(total));
	for (size_t off = 0; !err && off < len; off += CHUNK_BYTES)
		err = ls_mpi_send(to, tag, buf + off, len - off < CHUNK_BYTES ? len - off : CHUNK_BYTES);
	return err;
}

static int recv_pieces(int from, int tag, char **out, size_t *out_len)
{
	void *piece;
	size_t len, got = 0;
	int err = ls_mpi_recv(from, tag, &piece, &len);
	if (err || len != sizeof(uint64_t))
		return err ? err : -EPROTO;
	uint64_t total;
	memcpy(&total, piece, sizeof(total));
	free(piece);
	char *buf = malloc(total + 1);
	if (!buf)
		return -ENOMEM;
	while (got < total) {
		if ((err = ls_mpi_recv(from, tag, &piece, &len)))
			break;
		if (len > total - got || !len)
			err = -EPROTO;
		else
			memcpy(buf + got, piece, len);
		got += len;
		free(piece);
		if (err)
			break;
	}
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	*out_len = total;
	return 0;
}

/* The checks a plan passes before it is split: one schedule for all, a slot for every rank. */
static int can_share(const struct ls_plan *plan)
{
	if (plan->arrival.kind == LS_ARRIVAL_POISSON_YIELD) {
		fprintf(stderr, "latscope bench: --arrival poisson-yield draws each gap after the previous request "
				"left, so %d ranks cannot share one schedule: use gamma (--burstiness 1 is Poisson)\n",
			g.size);
		return -1;
	}
	if (g.cfg->max_concurrency && g.cfg->max_concurrency < (uint32_t)g.size) {
		fprintf(stderr, "latscope bench: --max-concurrency %u is fewer slots than the %d ranks: every rank "
				"needs one\n", g.cfg->max_concurrency, g.size);
		return -1;
	}
	return 0;
}

static int share_out(struct ls_plan *plan, struct ls_run *run)
{
	if (can_share(plan))
		return -1;
	g.shared = 1; /* from here the others may be past the share: a stop must abort them */
	for (int k = 1; k < g.size; k++) {
		struct ls_strbuf b = { 0 };
		int err = ls_plan_pack_share(plan, k, g.size, &b);
		if (!err)
			err = send_pieces(k, TAG_SHARE, b.data, b.len);
		ls_strbuf_free(&b);
		if (err) {
			fprintf(stderr, "latscope bench: sending rank %d its share of the run failed: %s\n", k,
				strerror(-err));
			return -1;
		}
	}
	size_t all_jobs = plan->n_measured;
	if (ls_plan_keep_share(plan, run, 0, g.size)) {
		fprintf(stderr, "latscope bench: out of memory keeping rank 0's share of the run\n");
		return -1;
	}
	g.other_jobs = all_jobs - plan->n_measured; /* the progress line's from the first: all of them */
	return 0;
}

static int share_in(struct ls_plan *plan, struct ls_run *run)
{
	char *buf = NULL;
	size_t len = 0;
	int err = recv_pieces(0, TAG_SHARE, &buf, &len);
	if (!err && !len) { /* rank 0 stopped before the run and said why: end quietly, together */
		free(buf);
		g.agreed_exit = 1;
		return -1;
	}
	if (!err) { /* an empty plan: the share's head names the model (--model's copy would leak) */
		free(plan->model);
		plan->model = NULL;
		err = ls_plan_unpack_share(buf, len, plan, run);
	}
	free(buf);
	if (err) {
		fprintf(stderr, "latscope bench: rank %d: receiving its share of the run from rank 0 failed: %s\n",
			g.rank, strerror(-err));
		return -1;
	}
	return 0;
}

int ls_bench_mpi_share(const struct ls_config *cfg, struct ls_plan *plan, struct ls_run *run)
{
	if (!g.on)
		return 0;
	g.cfg = cfg;
	uint32_t c = cfg->max_concurrency, n = (uint32_t)g.size;
	g.slots = c ? c / n + ((uint32_t)g.rank < c % n) : 0;
	int err = g.rank == 0 ? share_out(plan, run) : share_in(plan, run);
	snprintf(g.run_tag, sizeof(g.run_tag), "%s", plan->run_tag);
	g.arrival = plan->arrival.kind;
	return err;
}

void ls_bench_mpi_record_meta(const struct ls_record_meta *meta)
{
	if (!g.on || !meta)
		return;
	g.meta = *meta;
	g.have_meta = 1;
}

int ls_bench_mpi_agree(int rc)
{
	if (!g.on)
		return rc;
	int32_t v = rc;
	if (ls_mpi_bcast(&v, sizeof(v), 0)) {
		fprintf(stderr, "latscope bench: rank %d: hearing from rank 0 failed\n", g.rank);
		return -EIO;
	}
	if (v)
		g.agreed_exit = 1;
	return v;
}

/* ---- the run ---- */

static int open_rank_file(uint64_t start_local_ns)
{
	struct ls_record_meta m = g.meta;
	m.mpi_rank = g.rank;
	m.mpi_size = g.size;
	m.clock = g.fits[g.rank];
	m.run_start_ns = start_local_ns;
	char *path = NULL;
	if (asprintf(&path, "%s.rank%d", g.cfg->record_path, g.rank) < 0) {
		fprintf(stderr, "latscope bench: out of memory naming the rank file\n");
		return -1;
	}
	g.rank_file = ls_record_open(path, &m);
	free(path);
	if (g.rank_file && g.rank == 0) /* a rank killed, or one too slow for mpirun's second */
		fprintf(stderr, "latscope bench: each rank writes its requests to %s.rank<K> as they finish; on "
			"Ctrl-C of mpirun rank 0 reports what finished within the second mpirun gives, and should "
			"a rank be killed first, `latscope report %s.rank0 ... %s.rank%d` reports what finished\n",
			g.cfg->record_path, g.cfg->record_path, g.cfg->record_path, g.size - 1);
	return g.rank_file ? 0 : -1;
}

/* Rank 0: the other ranks' counts that arrived, their sum for the progress line. */
static void take_progress(void)
{
	struct ls_progress_counts c;
	int from;
	while (ls_mpi_take(TAG_PROGRESS, &c, sizeof(c), &from) == 1)
		if (from > 0 && from < g.size) {
			g.peers[from] = c;
			g.n_taken[from]++;
		}
	memset(&g.more, 0, sizeof(g.more));
	g.more.jobs = g.other_jobs; /* rank 0 sent them: known before their first message */
	for (int k = 1; k < g.size; k++) {
		g.more.started += g.peers[k].started;
		g.more.done += g.peers[k].done;
		g.more.failed += g.peers[k].failed;
	}
}

/* Each tick: a rank sends its counts when they changed and the last ones are out (a message
 * still on its way means rank 0 is behind: skip, never wait); rank 0 takes what came. */
static int progress_tick(void *ctx, uint64_t now_ns)
{
	(void)ctx, (void)now_ns;
	if (g.rank == 0) {
		take_progress();
		return 0;
	}
	if (!memcmp(&g.out, &g.posted, sizeof(g.out)))
		return 0;
	if (ls_mpi_post(0, TAG_PROGRESS, &g.out, sizeof(g.out)) == 1) {
		g.posted = g.out;
		g.n_posted++;
	}
	return 0;
}

/* The progress hook beside the driver's others (the probes'): rank 0's line counts every rank. */
static void progress_hook(struct ls_driver_opts *o)
{
	if (g.cfg->disable_tqdm || o->n_hooks >= MAX_HOOKS) /* no line at rank 0: nothing to count */
		return;
	if (o->n_hooks)
		memcpy(g.hooks, o->hooks, o->n_hooks * sizeof(*g.hooks));
	g.hooks[o->n_hooks] = (struct ls_loop_hook){ .fd = -1, .period_ns = PROGRESS_TICK_NS,
						     .on_ready = progress_tick };
	o->hooks = g.hooks;
	o->n_hooks++;
	o->progress_out = &g.out;
	if (g.rank == 0) {
		g.more.jobs = g.other_jobs;
		o->progress_more = &g.more;
	}
}

static int rank_missing(int k, int err);

/* Rank 0, after the run: the progress messages still unread (each rank said how many it sent),
 * so that none is left for MPI_Finalize. */
static int drain_progress(void)
{
	for (int k = 1; k < g.size; k++)
		while (!g.missing[k] && g.n_taken[k] < g.all[k].n_progress) {
			void *buf;
			size_t len;
			int err = ls_mpi_recv(k, TAG_PROGRESS, &buf, &len);
			free(buf);
			if (err)
				return rank_missing(k, err);
			g.n_taken[k]++;
		}
	return 0;
}

/* How long the launcher waits between its SIGTERM and its SIGKILL: OpenMPI's
 * odls_base_sigkill_timeout (s; mpirun passes MCA parameters to the ranks as OMPI_MCA_*), 1 s by
 * default, which srun's KillWait (30 s) exceeds: 1 s unless told. */
static uint64_t stop_budget_ns(void)
{
	const char *v = getenv("OMPI_MCA_odls_base_sigkill_timeout");
	char *end = NULL;
	double s = v && *v ? strtod(v, &end) : 0;
	if (!v || !*v || *end || !(s >= 1 && s <= 3600))
		s = 1;
	return (uint64_t)(s * 1e9);
}

int ls_bench_mpi_before_run(struct ls_driver_opts *o)
{
	if (!g.on)
		return 0;
	if (ls_mpi_barrier() || ls_mpi_clock_sync(g.rank, g.size, CLOCK_ROUNDS, 0, g.fits)) {
		fprintf(stderr, "latscope bench: rank %d: measuring the clocks before the run failed\n", g.rank);
		return -1;
	}
	uint64_t start0 = g.rank == 0 ? ls_now_ns() + START_MARGIN_NS : 0;
	if (ls_mpi_bcast(&start0, sizeof(start0), 0)) {
		fprintf(stderr, "latscope bench: rank %d: hearing the start instant failed\n", g.rank);
		return -1;
	}
	g.start0_ns = start0;
	o->start_at_ns = (uint64_t)((int64_t)start0 + g.fits[g.rank].offset_ns); /* in this rank's clock */
	o->max_concurrency = g.slots;
	/* mpirun's Ctrl-C: SIGTERM to every rank, SIGKILL a budget later. The streams in flight get
	 * a quarter of it, the gather (bounded waits) the next ~40 %, the report the rest. */
	g.budget_ns = stop_budget_ns();
	if (o->grace_ns > g.budget_ns / 4)
		o->grace_ns = g.budget_ns / 4;
	/* Senders wait longer than rank 0: a rank whose part is late is given up at 65 %, and the
	 * ones after it are still there to send theirs. */
	ls_mpi_stop_watch(g.budget_ns * (g.rank ? 90 : 65) / 100);
	progress_hook(o);
	if (g.have_meta && open_rank_file(o->start_at_ns))
		return -1;
	if (g.rank_file) {
		o->on_finish = ls_record_on_finish;
		o->on_finish_ctx = g.rank_file;
	}
	getrusage(RUSAGE_SELF, &g.ru_before);
	return 0;
}

static double cpu_us(const struct rusage *a, const struct rusage *b)
{
	return ls_tv_us(&b->ru_utime) - ls_tv_us(&a->ru_utime) + ls_tv_us(&b->ru_stime) - ls_tv_us(&a->ru_stime);
}

/* Realised rate and schedule lag P99 (started - scheduled: metrics' client queue) of this rank. */
static void rate_and_lag(struct rank_stats *s, const struct ls_run *run)
{
	struct ls_read_rules rules;
	struct ls_goodput none = { 0 };
	struct ls_metrics m;
	ls_profile_read_rules(&g.cfg->profile, 0, &rules);
	rules.percentiles[0] = 99;
	rules.n_percentiles = 1;
	rules.n_itl_percentiles = 0;
	if (ls_metrics_compute(run, &rules, &none, &m))
		return;
	s->realised_rate = m.realised_rate;
	s->lag_p99_ns = (uint64_t)(m.queue.pct_ms[0] * 1e6);
	s->n_lag = m.queue.n;
	ls_metrics_free(&m);
}

/* The sockets of this rank's requests (once each) and how many events they hold: what goes to
 * rank 0 after the records (a server's sockets only with the rank whose request they served). */
static void local_sockets(struct rank_stats *s, struct ls_bench_rank_probes *rp)
{
	const struct ls_evstore *st = ls_bench_probes_events(g.r->probes);
	if (!st || !rp->cookies)
		return;
	g.cookies = rp->cookies;
	rp->cookies = NULL;
	g.n_cookies = ls_sort_unique_u64(g.cookies, rp->n_cookies);
	for (size_t i = 0; i < g.n_cookies; i++) {
		const struct ls_sock_events *se = ls_evstore_find(st, g.cookies[i]);
		s->n_events += se ? se->n : 0;
	}
	for (unsigned kind = 0; kind < LS_EV__COUNT; kind++)
		s->lost_by_kind[kind] = ls_evstore_lost(st, kind);
	s->have_events = 1;
}

static void local_stats(int rc, const struct rusage *after)
{
	struct rank_stats *s = &g.mine;
	const struct ls_run *run = g.r->run;
	memset(s, 0, sizeof(*s));
	s->n_measured = run->n_requests - run->n_warmup;
	s->n_not_sent = g.r->n_not_sent;
	for (size_t i = run->n_warmup; i < run->n_requests; i++)
		s->n_frames += run->requests[i].n_frames;
	s->cpu_us = cpu_us(&g.ru_before, after);
	s->target_rate = run->target_rate / g.size;
	rate_and_lag(s, run);
	struct ls_bench_rank_probes rp; /* one attribution: the client delay and the sockets to send */
	ls_bench_probes_rank_view(g.r->probes, run, &rp);
	s->have_client_delay = rp.have_client_delay;
	s->client_delay_p99_ns = rp.client_delay_p99_ns;
	s->n_client_frames = rp.n_client_frames;
	const char *why = ls_bench_probes_why(g.r->probes);
	snprintf(s->probes, sizeof(s->probes), "%s", why ? why : "on");
	local_sockets(s, &rp);
	free(rp.cookies);
	if (gethostname(s->host, sizeof(s->host) - 1))
		snprintf(s->host, sizeof(s->host), "?");
	ls_run_copy_fields(&s->fields, run);
	s->driver_rc = rc;
	if (g.rank && ls_mpi_post_flush() == 0) /* every one out: rank 0 reads exactly these */
		s->n_progress = g.n_posted;
}

/* ---- the gather: every rank's records to rank 0 ---- */

static int emit_to_root(void *ctx, const void *buf, size_t len)
{
	(void)ctx;
	return ls_mpi_send(0, TAG_EVENTS, buf, len);
}

/* LATSCOPE_MPI_SLOW_RANK=K (tests): after a stop, rank K sends its records only once rank 0 has
 * given up on them (a rank too slow for mpirun's second, made to order): at 92 % of the budget
 * from its own stop, rank 0 giving up at 65 % of it from its own (mpirun signals the ranks one
 * after another: at 70 % a rank 0 signalled 30 ms later still took them, in CI). */
static void slow_rank_for_tests(void)
{
	const char *v = getenv("LATSCOPE_MPI_SLOW_RANK");
	if (!g.stopped || !v || !*v || atoi(v) != g.rank)
		return;
	uint64_t until = g.budget_ns * 92 / 100 + ls_mpi_stop_deadline_ns() - g.budget_ns * 90 / 100;
	while (ls_now_ns() < until) {
		struct timespec ts = { 0, 10000000L };
		nanosleep(&ts, NULL);
	}
}

/* This rank's measured records, in messages of whole records (at most CHUNK_BYTES unless one
 * record is larger), then an empty message. */
static int gather_out(void)
{
	const struct ls_run *run = g.r->run;
	struct ls_strbuf b = { 0 };
	int err = ls_mpi_send(0, TAG_STATS, &g.mine, sizeof(g.mine));
	slow_rank_for_tests();
	for (size_t i = run->n_warmup; !err && i < run->n_requests; i++) {
		struct ls_request r = run->requests[i];
		size_t frames = (size_t)r.n_frames * sizeof(*r.frames);
		if (b.len && b.len + sizeof(r) + frames > CHUNK_BYTES) {
			err = ls_mpi_send(0, TAG_RECS, b.data, b.len);
			b.len = 0;
		}
		r.frames = NULL;
		if (!err && (ls_strbuf_append(&b, &r, sizeof(r)) ||
			     (frames && ls_strbuf_append(&b, run->requests[i].frames, frames))))
			err = -ENOMEM;
	}
	if (!err && b.len)
		err = ls_mpi_send(0, TAG_RECS, b.data, b.len);
	if (!err)
		err = ls_mpi_send(0, TAG_RECS, "", 0);
	ls_strbuf_free(&b);
	if (!err && g.mine.have_events) /* then its requests' sockets' events, in messages as bounded */
		err = ls_evstore_pack(ls_bench_probes_events(g.r->probes), g.cookies, g.n_cookies, CHUNK_BYTES,
				      emit_to_root, NULL, NULL);
	if (!err)
		err = ls_mpi_send(0, TAG_EVENTS, "", 0);
	if (err)
		fprintf(stderr, "latscope bench: rank %d: sending its records to rank 0 failed: %s\n", g.rank,
			strerror(-err));
	return err;
}

static uint64_t ev_to_root(void *fit, uint64_t t)
{
	return ls_clock_to_root(fit, t);
}

/* Rank k's events (after its records), stamps in rank 0's clock, into *out: NULL when its probes
 * were off, or out NULL (a spilled merge: read and let go). */
static int recv_events(int k, struct ls_evstore **out)
{
	struct ls_evstore *st = out && g.all[k].have_events ? ls_evstore_new() : NULL;
	if (out && g.all[k].have_events && !st)
		return -ENOMEM;
	if (st)
		ls_evstore_set_lost_by_kind(st, g.all[k].lost_by_kind);
	for (;;) {
		void *buf = NULL;
		size_t len = 0;
		int err = ls_mpi_recv(k, TAG_EVENTS, &buf, &len);
		if (!err && len && st)
			err = ls_evstore_unpack(st, buf, len, ev_to_root, &g.fits[k]);
		free(buf);
		if (err)
			ls_evstore_free(st);
		if (err || !len) {
			if (!err && out)
				*out = st;
			else if (!err)
				ls_evstore_free(st);
			return err;
		}
	}
}

static int unpack_into(void *st, const void *buf, size_t len)
{
	return ls_evstore_unpack(st, buf, len, NULL, NULL);
}

/* Rank 0's own requests' sockets' events, copied as the other ranks' travel: the server's
 * sockets of other ranks' requests stay out (they come with those ranks). */
static int own_events(struct ls_evstore **out)
{
	*out = NULL;
	if (!g.mine.have_events)
		return 0;
	struct ls_evstore *st = ls_evstore_new();
	if (!st)
		return -ENOMEM;
	ls_evstore_set_lost_by_kind(st, g.mine.lost_by_kind);
	int err = ls_evstore_pack(ls_bench_probes_events(g.r->probes), g.cookies, g.n_cookies, CHUNK_BYTES,
				  unpack_into, st, NULL);
	if (err)
		ls_evstore_free(st);
	else
		*out = st;
	return err;
}

/* Which rank's events attribute each request of the merged run (warmups: rank 0's). */
static uint32_t *parts_of(const struct ls_run *run)
{
	uint32_t *part = calloc(run->n_requests ? run->n_requests : 1, sizeof(*part));
	for (size_t i = run->n_warmup; part && i < run->n_requests; i++)
		part[i] = (uint32_t)(run->requests[i].id % (uint64_t)g.size);
	return part;
}

/* One message of rank k's records into reqs[*at ...), stamps moved into rank 0's clock. */
static int take_records(const char *p, size_t len, int k, struct ls_request *reqs, size_t *at, size_t cap)
{
	const char *end = p + len;
	while (p < end) {
		struct ls_request r;
		if ((size_t)(end - p) < sizeof(r) || *at >= cap)
			return -EPROTO;
		memcpy(&r, p, sizeof(r));
		p += sizeof(r);
		size_t frames = (size_t)r.n_frames * sizeof(*r.frames);
		if ((size_t)(end - p) < frames)
			return -EPROTO;
		r.frames = NULL;
		r.cap_frames = 0;
		if (frames && !(r.frames = malloc(frames)))
			return -ENOMEM;
		memcpy(r.frames, p, frames);
		r.cap_frames = r.n_frames;
		p += frames;
		ls_clock_request_to_root(&g.fits[k], &r);
		reqs[(*at)++] = r;
		g.n_frames += r.n_frames;
	}
	return 0;
}

static int recv_records(int k, struct ls_request *reqs, size_t *at, size_t cap)
{
	for (;;) {
		void *buf;
		size_t len;
		int err = ls_mpi_recv(k, TAG_RECS, &buf, &len);
		if (!err && len)
			err = take_records(buf, len, k, reqs, at, cap);
		free(buf);
		if (err || !len)
			return err;
	}
}

static int cmp_id(const void *a, const void *b)
{
	const struct ls_request *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

/* The merged run's own fields: every rank's, in rank 0's clock, merged by each field's rule
 * (base/record_fields.h); its start is the agreed instant. */
static void merge_run_fields(struct ls_run *run)
{
	struct ls_run merged;
	memset(&merged, 0, sizeof(merged));
	g.r->n_not_sent = 0;
	for (int k = 0; k < g.size; k++) {
		if (g.missing[k])
			continue;
		struct ls_run f = g.all[k].fields;
		f.requests = NULL;
		ls_clock_run_to_root(&g.fits[k], &f);
		if (k)
			ls_run_merge_fields(&merged, &f);
		else
			ls_run_copy_fields(&merged, &f);
		g.r->n_not_sent += g.all[k].n_not_sent;
	}
	ls_run_copy_fields(run, &merged);
	run->start_ns = g.start0_ns;
}

/* Rank 0's own requests of the merged run (warmups, ids i % N == 0): what its probes saw. */
static int keep_local_view(const struct ls_run *run)
{
	g.local = *run;
	g.local.requests = calloc(run->n_requests ? run->n_requests : 1, sizeof(*g.local.requests));
	if (!g.local.requests)
		return -ENOMEM;
	g.local.n_requests = 0;
	for (size_t i = 0; i < run->n_requests; i++)
		if (i < run->n_warmup || run->requests[i].id % (uint64_t)g.size == 0)
			g.local.requests[g.local.n_requests++] = run->requests[i];
	g.local.end_ns = g.mine.fields.end_ns;
	return 0;
}

/* A merged file's base_ns: stamps are written after it, and frames only forward of it, so it
 * is before the first stamp of run (rank 0's warmups, else the start instant). */
static uint64_t base_before(const struct ls_run *run)
{
	uint64_t base = g.start0_ns;
	for (size_t i = 0; i < run->n_requests; i++) {
		const struct ls_request *r = &run->requests[i];
		uint64_t first = r->scheduled_ns ? r->scheduled_ns : r->started_ns;
		if (first && first < base)
			base = first;
	}
	return base > 1000000 ? base - 1000000 : 1;
}

/* The merged --record FILE (every request, rank 0's clock); bench closes it with the run_end. */
static void write_merged(const struct ls_run *run)
{
	struct ls_record_meta m = g.meta;
	m.mpi_rank = -1;
	m.mpi_size = g.size;
	m.run_start_ns = g.start0_ns;
	m.base_ns = base_before(run);
	struct ls_record_writer *w = ls_record_open(g.cfg->record_path, &m);
	if (!w) {
		fprintf(stderr, "latscope bench: the merged record file is missing; the rank files (%s.rank<K>) hold "
				"every request\n", g.cfg->record_path);
		return;
	}
	for (size_t i = 0; i < run->n_requests; i++)
		ls_record_write(w, &run->requests[i]);
	g.r->merged_record = w;
}

/* Bytes the merge holds at rank 0 (records and frames), and whether this host has them:
 * MemAvailable, with a tenth kept for the metrics after it. LATSCOPE_MPI_SPILL=1 says no (tests), and
 * =events says no to the other ranks' probe events only. */
static int merge_fits(uint64_t need, uint64_t *avail, int with_events)
{
	const char *force = getenv("LATSCOPE_MPI_SPILL");
	char line[256];
	unsigned long long kib = 0;
	FILE *f = fopen("/proc/meminfo", "r");
	*avail = 0;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	*avail = (uint64_t)kib * 1024;
	if (force && (!strcmp(force, "1") || (with_events && !strcmp(force, "events"))))
		return 0;
	return !kib || need < *avail / 10 * 9; /* unknown: try */
}

/* The spill file: --record FILE, else latscope-<run tag>.jsonl here. */
static struct ls_record_writer *spill_open(const char **path, char *buf, size_t cap)
{
	const struct ls_config *c = g.cfg;
	struct ls_record_meta m = g.meta;
	if (!g.have_meta) {
		memset(&m, 0, sizeof(m));
		snprintf(m.run_tag, sizeof(m.run_tag), "%s", g.run_tag);
		snprintf(m.profile, sizeof(m.profile), "%s", c->profile.name);
		snprintf(m.arrival, sizeof(m.arrival), "%s", ls_arrival_kind_name(g.arrival));
		m.target_rate = g.r->run->target_rate;
		m.max_concurrency = c->max_concurrency;
	}
	m.mpi_rank = -1;
	m.mpi_size = g.size;
	m.run_start_ns = g.start0_ns;
	m.base_ns = base_before(g.r->run);
	snprintf(buf, cap, "latscope-%s.jsonl", g.run_tag);
	*path = c->record_path ? c->record_path : buf;
	return ls_record_open(*path, &m);
}

/* Rank k's records straight into w, one message at a time: rank 0 holds one message. */
static int spill_rank(struct ls_record_writer *w, int k)
{
	for (;;) {
		void *buf;
		size_t len, n = 0;
		int err = ls_mpi_recv(k, TAG_RECS, &buf, &len);
		struct ls_request *tmp = err || !len ? NULL : calloc(len / sizeof(*tmp) + 1, sizeof(*tmp));
		if (!err && len && !tmp)
			err = -ENOMEM;
		if (tmp)
			err = take_records(buf, len, k, tmp, &n, len / sizeof(*tmp) + 1);
		for (size_t i = 0; i < n; i++) {
			if (!err)
				err = ls_record_write(w, &tmp[i]);
			ls_request_free(&tmp[i]);
		}
		free(tmp);
		free(buf);
		if (err || !len)
			return err;
	}
}

/* The merge does not fit: every record to the record file, in rank 0's clock; no report. */
static int spill_in(size_t total, uint64_t need, uint64_t avail)
{
	char name[64];
	const char *path;
	struct ls_run *run = g.r->run;
	struct ls_record_writer *w = spill_open(&path, name, sizeof(name));
	if (!w)
		return -EIO;
	fprintf(stderr, "latscope bench: merging %zu records needs %.1f GiB at rank 0 and this host has %.1f GiB "
			"available: every record goes to %s instead (rank 0's clock); run `latscope report %s` "
			"where it fits\n", total, need / 1073741824.0, avail / 1073741824.0, path, path);
	int err = 0;
	for (size_t i = 0; i < run->n_requests && !err; i++)
		err = ls_record_write(w, &run->requests[i]);
	for (int k = 1; k < g.size && !err; k++)
		if (!(err = spill_rank(w, k)))
			err = recv_events(k, NULL); /* no report: no attribution */
	struct ls_run ends = *run;
	merge_run_fields(&ends);
	ends.n_requests = run->n_warmup + total;
	int cerr = ls_record_close(w, &ends);
	g.spilled = 1;
	return err ? err : cerr;
}

/* A rank whose part did not arrive before the stop's deadline: left out of the merge, said. */
static int rank_missing(int k, int err)
{
	if (err != -ETIMEDOUT)
		return err;
	g.missing[k] = 1;
	memset(&g.all[k], 0, sizeof(g.all[k]));
	snprintf(g.all[k].probes, sizeof(g.all[k].probes), "its records did not arrive in time");
	return 0;
}

/* Every rank's figures (rank 0's own first); the totals the merge holds. */
static int recv_stats(size_t *total, uint64_t *frames, uint64_t *events)
{
	g.all[0] = g.mine;
	*total = g.mine.n_measured;
	*frames = g.mine.n_frames;
	*events = g.mine.n_events;
	for (int k = 1; k < g.size; k++) {
		void *buf;
		size_t len;
		int err = ls_mpi_recv(k, TAG_STATS, &buf, &len);
		if (!err && len != sizeof(g.all[k]))
			err = -EPROTO;
		if (!err)
			memcpy(&g.all[k], buf, sizeof(g.all[k]));
		free(buf);
		if (err && (err = rank_missing(k, err)))
			return err;
		*total += g.all[k].n_measured;
		*frames += g.all[k].n_frames;
		*events += g.all[k].n_events;
	}
	return 0;
}

/* Rank k's records after reqs[*at] and its events into stores[k]; a rank cut by the stop's
 * deadline leaves nothing of its part behind (its rank file has it). */
static int recv_rank(int k, struct ls_request *reqs, size_t *at, size_t cap, struct ls_evstore **stores)
{
	size_t before = *at;
	int err = g.missing[k] ? 0 : recv_records(k, reqs, at, cap);
	if (!err && !g.missing[k] && *at - before != g.all[k].n_measured)
		err = -EPROTO;
	if (!err && !g.missing[k])
		err = recv_events(k, g.events_dropped ? NULL : &stores[k]);
	if (err == -ETIMEDOUT) {
		for (size_t i = before; i < *at; i++) {
			g.n_frames -= reqs[i].n_frames;
			ls_request_free(&reqs[i]);
		}
		*at = before;
		ls_evstore_free(stores[k]);
		stores[k] = NULL;
		err = rank_missing(k, err);
	}
	return err;
}

static int gather_in(void)
{
	uint64_t t0 = ls_now_ns();
	struct ls_run *run = g.r->run;
	size_t nw = run->n_warmup, total, at = 0;
	uint64_t frames, events;
	int err = recv_stats(&total, &frames, &events);
	if (!err)
		err = drain_progress();
	if (err)
		return err;
	/* An event store's arrays grow by doubling: up to twice an event's bytes each. */
	uint64_t need = (uint64_t)(nw + total) * sizeof(struct ls_request) + frames * sizeof(struct ls_frame), avail;
	uint64_t ev_need = (events - g.mine.n_events) * 2 * sizeof(struct ls_event);
	if (!merge_fits(need, &avail, 0))
		return spill_in(total, need + ev_need, avail);
	if (ev_need && !merge_fits(need + ev_need, &avail, 1)) { /* the records fit: keep the report */
		g.events_dropped = 1;
		fprintf(stderr, "latscope bench: the other ranks' %llu probe events need %.1f GiB more at rank 0 and "
				"this host has %.1f GiB available: the attribution covers rank 0's requests only\n",
			(unsigned long long)(events - g.mine.n_events), ev_need / 1073741824.0, avail / 1073741824.0);
	}
	struct ls_request *reqs = calloc(nw + total ? nw + total : 1, sizeof(*reqs));
	if (!reqs)
		return -ENOMEM;
	for (size_t i = 0; i < run->n_requests; i++)
		reqs[at++] = run->requests[i]; /* moved: frames and all */
	for (size_t i = 0; i < run->n_requests; i++)
		g.n_frames += run->requests[i].warmup ? 0 : run->requests[i].n_frames;
	free(run->requests);
	run->requests = reqs;
	run->n_requests = at;
	struct ls_evstore **stores = calloc((size_t)g.size, sizeof(*stores));
	err = stores ? own_events(&stores[0]) : -ENOMEM;
	for (int k = 1; k < g.size && !err; k++) {
		err = recv_rank(k, reqs, &at, nw + total, stores);
		run->n_requests = at;
	}
	uint32_t *part = NULL;
	if (!err) {
		qsort(reqs + nw, at - nw, sizeof(*reqs), cmp_id);
		merge_run_fields(run);
		part = parts_of(run);
		if (!part || keep_local_view(run))
			err = -ENOMEM;
	}
	if (err) {
		for (int k = 0; k < g.size && stores; k++)
			ls_evstore_free(stores[k]);
		free(stores);
		free(part);
		return err;
	}
	for (int k = 0; k < g.size; k++)
		for (unsigned kind = 0; kind < LS_EV__COUNT; kind++)
			g.n_events += ls_evstore_count(stores[k], kind);
	/* Every rank's requests attributed with its own events (cookies are unique per host only). */
	ls_bench_probes_set_parts(g.r->probes, stores, (size_t)g.size, part, run->n_requests, &g.local);
	if (g.have_meta)
		write_merged(run);
	g.merge_ns = ls_now_ns() - t0;
	return 0;
}

void ls_bench_mpi_close_rank_file(const struct ls_spec_stats *spec)
{
	if (!g.rank_file)
		return;
	ls_record_set_clock(g.rank_file, &g.fits[g.rank]);
	ls_record_set_spec(g.rank_file, spec);
	ls_record_close(g.rank_file, &g.own);
	g.rank_file = NULL;
}

int ls_bench_mpi_after_run(int rc, struct ls_bench_mpi_run *r)
{
	if (!g.on)
		return rc;
	g.r = r;
	struct rusage after;
	getrusage(RUSAGE_SELF, &after);
	if (rc == 1) /* the driver read a stop, at most its grace ago: waits are bounded from there */
		ls_mpi_stop_note(ls_now_ns() - g.budget_ns / 4);
	local_stats(rc, &after);
	/* Every rank done before the second ping-pong: a rank still sending would skew it. After a
	 * stop (any rank's) there is no second one: the SIGKILL comes within the budget, and its
	 * blocking round trips would take from the gather's share. */
	int stop = 0, err = ls_mpi_any(ls_mpi_stopped(), &stop);
	if (err == -ETIMEDOUT) { /* a rank never came: nothing can be gathered before the SIGKILL */
		fprintf(stderr, "latscope bench: rank %d: not every rank ended its run within %.1f s of the stop%s\n",
			g.rank, g.budget_ns / 1e9, g.rank == 0 && g.rank_file ? ": report the rank files, as said "
			"above" : "");
		return -ETIMEDOUT;
	}
	if (err || (!(g.stopped = stop) && ls_mpi_clock_sync(g.rank, g.size, CLOCK_ROUNDS, 1, g.fits))) {
		fprintf(stderr, "latscope bench: rank %d: measuring the clocks after the run failed\n", g.rank);
		return -EIO;
	}
	ls_run_copy_fields(&g.own, g.r->run); /* this rank's own run fields, for its file */
	g.own.n_requests = g.r->run->n_requests;
	g.own.n_warmup = g.r->run->n_warmup;
	if (g.rank_file && g.rank)
		ls_bench_mpi_close_rank_file(NULL);
	err = g.rank == 0 ? gather_in() : gather_out();
	if (err && g.rank == 0)
		fprintf(stderr, "latscope bench: gathering the ranks' records failed: %s%s\n", strerror(-err),
			err == -ETIMEDOUT ? " (a rank did not answer before the stop's SIGKILL): report the rank "
			"files instead, as said above" : "");
	if (!err)
		g.gathered = 1;
	else if (g.rank && g.stopped)
		err = 0; /* it said so; rank 0 reports without its part: this rank ends as interrupted */
	g.n_merged = r->run->n_requests;
	g.r = NULL; /* the caller's: not kept past this call */
	return err ? err : rc;
}

/* ---- the report ---- */

static void print_rank(FILE *out, int k)
{
	const struct rank_stats *s = &g.all[k];
	const struct ls_clock_fit *f = &g.fits[k];
	char rate[32], delay[32];
	if (s->target_rate > 0)
		snprintf(rate, sizeof(rate), "%.2f/%.2f", s->realised_rate, s->target_rate);
	else
		snprintf(rate, sizeof(rate), "%.2f/inf", s->realised_rate);
	if (s->have_client_delay)
		snprintf(delay, sizeof(delay), "%.3f ms", s->client_delay_p99_ns / 1e6);
	else
		snprintf(delay, sizeof(delay), "n/a");
	uint64_t unc = f->have_after && f->unc_after_ns > f->unc_ns ? f->unc_after_ns : f->unc_ns;
	fprintf(out, "  %-4d %-8.8s %8llu %12s %8.3f ms %11s %7.2f us %+9.1f +-%-6.1f %+7.2f\n", k, s->host,
		(unsigned long long)s->n_measured, rate, s->lag_p99_ns / 1e6, delay,
		s->n_frames ? s->cpu_us / (double)s->n_frames : 0.0, (double)f->offset_ns / 1e3, unc / 1e3,
		ls_clock_drift_ppm(f));
}

void ls_bench_mpi_report(FILE *out)
{
	if (!g.on || g.rank || !g.gathered)
		return;
	const struct ls_config *c = g.cfg;
	uint32_t mc = c->max_concurrency, n = (uint32_t)g.size;
	fprintf(out, "\n------------- MPI: %d ranks, one run --------------\n", g.size);
	fprintf(out, "one schedule (request i on rank i mod %d), one start instant, every stamp in rank 0's clock\n",
		g.size);
	if (mc)
		fprintf(out, "--max-concurrency %u: %u slots per rank%s (a semaphore per rank, not one for all)\n",
			mc, mc / n, mc % n ? ", one more on the first ranks" : "");
	fprintf(out, "  %-4s %-8s %8s %12s %11s %11s %10s %9s %-8s %7s\n", "rank", "host", "requests", "rate/target",
		"lag P99", "delay P99", "CPU/frame", "clock us", "+-unc", "ppm");
	for (int k = 0; k < g.size; k++)
		if (!g.missing[k])
			print_rank(out, k);
	for (int k = 0; k < g.size; k++)
		if (g.missing[k] && g.have_meta)
			fprintf(out, "  rank %d: its records did not arrive within the %.1f s mpirun gives after its stop: "
				"not in this report; `latscope report %s.rank%d` has what it finished\n", k,
				g.budget_ns / 1e9, g.cfg->record_path, k);
		else if (g.missing[k])
			fprintf(out, "  rank %d: its records did not arrive within the %.1f s mpirun gives after its stop: "
				"not in this report (--record FILE keeps each rank's in FILE.rank<K>)\n", k,
				g.budget_ns / 1e9);
		else if (strcmp(g.all[k].probes, "on"))
			fprintf(out, "  rank %d: probes off: %s\n", k, g.all[k].probes);
	int arrived = 0;
	for (int k = 0; k < g.size; k++)
		arrived += !g.missing[k];
	if (g.stopped)
		fprintf(out, "stopped (SIGINT/SIGTERM): what finished, from %d of %d ranks, merged within the %.1f s mpirun "
			"gives before SIGKILL (more: --mca odls_base_sigkill_timeout S); one clock sample per rank\n",
			arrived, g.size, g.budget_ns / 1e9);
	fprintf(out, "(rate: realised/target req/s; lag: started - scheduled; delay: client delay per frame, "
		"harness stamp - kernel arrival, by each rank's own probes; clock: offset to rank 0, its "
		"uncertainty and drift; the attribution above is %s)\n", g.events_dropped ? "rank 0's requests "
		"only: the other ranks' probe events did not fit in its memory" : "every rank's requests, each "
		"attributed with its own rank's probe events moved into rank 0's clock");
	double mib = ((double)g.n_merged * sizeof(struct ls_request) + (double)g.n_frames *
		      sizeof(struct ls_frame) + (double)g.n_events * sizeof(struct ls_event)) / (1024.0 * 1024.0);
	fprintf(out, "merge: %zu records, %llu frames, %llu probe events from %d ranks in %.1f ms; rank 0 holds "
		"%zu B per request + %zu B per frame + %zu B per event (up to twice that as its store grows) = "
		"%.1f MiB, and one message of at most %u MiB in flight\n", g.n_merged,
		(unsigned long long)g.n_frames, (unsigned long long)g.n_events, g.size, g.merge_ns / 1e6,
		sizeof(struct ls_request), sizeof(struct ls_frame), sizeof(struct ls_event), mib, CHUNK_BYTES >> 20);
	fflush(out);
}

int ls_bench_mpi_no_report(int *exit_code)
{
	if (!g.on || (g.rank == 0 && !g.spilled))
		return 0;
	*exit_code = g.spilled || g.mine.driver_rc < 0 || g.mine.fields.interrupted ? 1 : 0;
	return 1;
}

void ls_bench_mpi_end(int exit_code)
{
	if (!g.launched)
		return;
	if (g.on && g.rank == 0 && !g.shared && !g.gathered && !g.agreed_exit) {
		/* Rank 0 stopped before the run (it said why): the others wait for their share, so an
		 * empty one tells them, and every rank ends quietly (no MPI_Abort banner). */
		for (int k = 1; k < g.size; k++)
			send_pieces(k, TAG_SHARE, "", 0);
		g.agreed_exit = 1;
	}
	if (g.on && !g.gathered && !g.agreed_exit && !ls_mpi_stopped()) {
		/* The others would wait for this rank forever: end the job. */
		fprintf(stderr, "latscope bench: rank %d stopped before the run's end: ending every rank\n", g.rank);
		ls_mpi_abort(exit_code ? exit_code : 1);
	}
	ls_mpi_finalize();
	ls_mpi_stop_watch(0);
	free(g.fits);
	free(g.all);
	free(g.missing);
	free(g.peers);
	free(g.n_taken);
	free(g.local.requests);
	free(g.cookies);
	memset(&g, 0, sizeof(g));
}
