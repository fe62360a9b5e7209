/* driver.c — the one loop (ARCHITECTURE.md principle 4). io_uring is the only place the driver
 * waits: multishot POLL_ADD on libcurl's sockets and on the hooks' fds, a read on a signalfd
 * for SIGINT/SIGTERM, and ONE absolute CLOCK_MONOTONIC timeout set to the earliest deadline
 * of all (libcurl's timer, the next arrival, hook periods, the progress line, the grace
 * period). Pacing: jobs pass the arrival gate in order (scheduled), then take a slot in order
 * (admitted), then go to libcurl (started). libcurl's side is in driver_curl.c. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>
#include "base/clock.h"
#include "base/opts.h"
#include "base/stats.h"
#include "driver/driver_int.h"

#define RING_SQ_ENTRIES    4096
#define RING_CQ_ENTRIES    16384
#define PROGRESS_PERIOD_NS 250000000ull /* on a terminal: the line redrawn at most 4 times a second */
/* Without a terminal (CI logs) a plain line this often; LATSCOPE_PROGRESS_INTERVAL_MS sets it
 * (tests). */
#define PROGRESS_PLAIN_PERIOD_NS 10000000000ull
/* Timer wake-ups come late (30-90 us on these VMs, docs/delay-line.md): for an arrival
 * that can start at once the loop wakes early by how late wake-ups have been (a running p90,
 * plus a margin, at most ARRIVAL_SPIN_MAX_NS), then takes completions without sleeping until
 * the deadline. Only that last stretch is spent spinning. */
#define ARRIVAL_SPIN_MAX_NS 100000ull
#define ARRIVAL_SPIN_MIN_NS 10000ull
#define WAKE_LATE_START_NS  50000ull
#define WAKE_LATE_STEP_NS   1000ull
#define XFERS_PREPARED_MAX  16384
/* Inside a burst of new transfers, the running streams are read this often. */
#define START_DRAIN_NS      500000ull

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- the ring ---- */

struct io_uring_sqe *drv_sqe(struct drv *d)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&d->ring);
	if (!sqe) {
		int rc = io_uring_submit(&d->ring);
		if (rc < 0) {
			d->fatal = rc;
			return NULL;
		}
		sqe = io_uring_get_sqe(&d->ring);
		if (!sqe)
			d->fatal = -EBUSY;
	}
	return sqe;
}

/* Tries the cheapest setup first: completions run only when the loop waits (DEFER_TASKRUN),
 * so a burst of readiness does not interrupt frame processing. */
static int ring_init(struct drv *d)
{
	static const unsigned flag_sets[] = {
		IORING_SETUP_CQSIZE | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
		IORING_SETUP_CQSIZE | IORING_SETUP_COOP_TASKRUN,
		IORING_SETUP_CQSIZE,
	};
	int rc = -EINVAL;
	for (size_t i = 0; i < sizeof(flag_sets) / sizeof(flag_sets[0]); i++) {
		struct io_uring_params p = { .flags = flag_sets[i], .cq_entries = RING_CQ_ENTRIES };
		rc = io_uring_queue_init_params(RING_SQ_ENTRIES, &d->ring, &p);
		if (rc == 0) {
			d->ring_ok = 1;
			return 0;
		}
		if (rc != -EINVAL)
			break;
	}
	fprintf(stderr, "latscope: io_uring_queue_init: %s (io_uring disabled? check "
		"/proc/sys/kernel/io_uring_disabled)\n", strerror(-rc));
	return rc;
}

/* The one timeout: armed for `when`, moved earlier in place when a sooner deadline appears.
 * A later deadline leaves it armed; it fires early and the loop re-arms. */
static void arm_timer(struct drv *d, uint64_t when)
{
	if (d->timer_armed_ns && d->timer_armed_ns <= when)
		return;
	struct io_uring_sqe *sqe = drv_sqe(d);
	if (!sqe)
		return;
	/* io_uring compares an absolute timeout with the host's clock, not this process's time
	 * namespace's: a rank in a namespace offset by D would wake D late (or at once). */
	uint64_t host = (uint64_t)((int64_t)when - ls_clock_timens_offset_ns());
	d->timer_ts.tv_sec = (long long)(host / 1000000000ull);
	d->timer_ts.tv_nsec = (long long)(host % 1000000000ull);
	if (d->timer_armed_ns) {
		io_uring_prep_timeout_update(sqe, &d->timer_ts, (uint64_t)(uintptr_t)&d->timer_op,
					     IORING_TIMEOUT_ABS);
		io_uring_sqe_set_data64(sqe, 0);
	} else {
		io_uring_prep_timeout(sqe, &d->timer_ts, 0, IORING_TIMEOUT_ABS);
		io_uring_sqe_set_data(sqe, &d->timer_op);
	}
	d->timer_armed_ns = when;
}

static void arm_signal_read(struct drv *d)
{
	struct io_uring_sqe *sqe = drv_sqe(d);
	if (!sqe)
		return;
	io_uring_prep_read(sqe, d->sigfd, &d->sig_buf, sizeof(d->sig_buf), 0);
	io_uring_sqe_set_data(sqe, &d->sig_op);
	d->sig_armed = 1;
}

static void arm_hook(struct drv *d, struct drv_hook *h)
{
	struct io_uring_sqe *sqe = drv_sqe(d);
	if (!sqe)
		return;
	if (d->poll_oneshot)
		io_uring_prep_poll_add(sqe, h->hook->fd, POLLIN);
	else
		io_uring_prep_poll_multishot(sqe, h->hook->fd, POLLIN);
	io_uring_sqe_set_data(sqe, &h->op);
	h->live = 1;
}

/* ---- pacing ---- */

/* Transfers holding a concurrency slot: a probe request holds none (vLLM's probe_loop sends
 * outside the semaphore). */
static size_t slots_used(const struct drv *d)
{
	return d->in_flight - (d->probe != NULL);
}

static uint64_t deadline_of(struct drv *d, size_t i, uint64_t now)
{
	if (!d->opts->arrival || d->preconnect_url)
		return d->run_start_ns;
	return ls_arrival_deadline(d->opts->arrival, i, d->run_start_ns, now);
}

/* The next arrival's deadline when it could start the moment it comes (a slot free, no job
 * queued for one, sending not stopped), else 0: only then is being on time worth a spin. */
static uint64_t startable_arrival(const struct drv *d)
{
	uint32_t limit = d->opts->max_concurrency;
	if (d->stopping || d->fatal || d->next_arrive >= d->n_jobs || d->next_admit < d->next_arrive ||
	    (limit && slots_used(d) >= limit))
		return 0;
	return d->next_deadline_ns;
}

/* The arrival gate: every job whose deadline has passed is scheduled. */
static void pace_arrivals(struct drv *d, uint64_t now)
{
	while (d->next_arrive < d->n_jobs && d->next_deadline_ns <= now) {
		d->jobs[d->next_arrive].rec->scheduled_ns = d->next_deadline_ns;
		d->next_arrive++;
		if (d->next_arrive < d->n_jobs)
			d->next_deadline_ns = deadline_of(d, d->next_arrive, ls_now_ns());
	}
}

/* Arrival gate (pace_arrivals), then slots: the next scheduled job takes a free slot and goes
 * to libcurl: 1, or 0 when none may. A job waiting for a slot does not hold back the next
 * arrival (as in vLLM and SGLang, whose semaphores sit inside the request task).
 * slot_ns (0 = now): when the slot was free, its admitted_ns unless it was scheduled later. */
static int admit_one(struct drv *d, uint64_t slot_ns)
{
	uint32_t limit = d->opts->max_concurrency;
	if (d->next_admit >= d->next_arrive || (limit && slots_used(d) >= limit) || d->fatal)
		return 0;
	struct ls_driver_job *job = &d->jobs[d->next_admit++];
	uint64_t admitted = slot_ns > job->rec->scheduled_ns ? slot_ns : ls_now_ns();
	drv_xfer_start(d, job, admitted);
	return 1;
}

/* ---- the loop ---- */

/* On a terminal one line redrawn in place, with a share done and an ETA at the rate so far;
 * else a plain line per period (none at the end: the report follows). */
static void progress_line(struct drv *d, uint64_t now, int final)
{
	double elapsed = (double)(now - d->run_start_ns) / 1e9;
	struct ls_progress_counts c = { d->n_jobs, d->n_started, d->n_done, d->n_failed };
	if (d->opts->progress_more) { /* the other ranks' share of the run */
		c.jobs += d->opts->progress_more->jobs;
		c.started += d->opts->progress_more->started;
		c.done += d->opts->progress_more->done;
		c.failed += d->opts->progress_more->failed;
	}
	double rate = elapsed > 0 ? (double)c.done / elapsed : 0.0;
	if (!d->progress_tty) {
		if (!final)
			fprintf(stderr, "latscope: progress: %llu/%llu requests done, %llu failed, %.1f s elapsed\n",
				(unsigned long long)c.done, (unsigned long long)c.jobs, (unsigned long long)c.failed,
				elapsed);
		return;
	}
	char eta[32] = "";
	if (!final && rate > 0)
		snprintf(eta, sizeof(eta), "  ETA %.0f s", (double)(c.jobs - c.done) / rate);
	fprintf(stderr, "\r  sent %llu/%llu  done %llu  failed %llu  %.0f%%  %.1f req/s  %.1f s%s   ",
		(unsigned long long)c.started, (unsigned long long)c.jobs, (unsigned long long)c.done,
		(unsigned long long)c.failed, c.jobs ? 100.0 * (double)c.done / (double)c.jobs : 100.0, rate, elapsed,
		eta);
	if (final)
		fputc('\n', stderr);
}

/* Terminal or plain lines (the caller knows which stderr is), and how often. */
static void progress_setup(struct drv *d, uint64_t start)
{
	d->progress_tty = d->opts->progress == LS_PROGRESS_TERMINAL;
	d->progress_period_ns = d->progress_tty ? PROGRESS_PERIOD_NS : PROGRESS_PLAIN_PERIOD_NS;
	const char *env = getenv("LATSCOPE_PROGRESS_INTERVAL_MS");
	uint64_t ns;
	if (env && *env) {
		if (ls_opt_parse_duration_ns(env, 1e6, 86400e3, &ns) == 0 && ns)
			d->progress_period_ns = ns;
		else
			fprintf(stderr, "latscope: LATSCOPE_PROGRESS_INTERVAL_MS '%s' is not a positive number of "
				"milliseconds; ignored\n", env);
	}
	d->progress_next_ns = d->progress_tty ? start : start + d->progress_period_ns;
}

static void on_signal(struct drv *d, int res, uint64_t now)
{
	d->sig_armed = 0;
	if (res != (int)sizeof(d->sig_buf)) {
		arm_signal_read(d);
		return;
	}
	d->run->interrupted = 1;
	if (!d->stopping) {
		d->stopping = 1;
		d->stop_deadline_ns = now + d->opts->grace_ns;
		fprintf(stderr, "\nlatscope: %s: sending stopped; waiting up to %.1f s for %zu streams "
			"(again to cancel them now)\n", strsignal((int)d->sig_buf.ssi_signo),
			(double)d->opts->grace_ns / 1e9, d->in_flight);
	} else {
		d->stop_deadline_ns = now; /* a second signal: cancel now */
	}
	arm_signal_read(d);
}

static void handle_cqe(struct drv *d, const struct io_uring_cqe *cqe, uint64_t now)
{
	struct drv_op *op = io_uring_cqe_get_data(cqe);
	if (!op) {
		/* Timeout updates. ENOENT: the timeout had just fired (its own CQE clears it).
		 * Anything else is a bug worth one line at the end. */
		if (cqe->res < 0 && cqe->res != -ENOENT && cqe->res != -ECANCELED &&
		    !d->ring_errors++)
			d->ring_error_first = cqe->res;
		return;
	}
	int more = (cqe->flags & IORING_CQE_F_MORE) != 0;
	switch (op->kind) {
	case DRV_OP_SOCK:
		if (cqe->res == -EINVAL && !d->poll_oneshot)
			d->poll_oneshot = 1; /* a kernel without multishot poll: re-armed one-shot */
		drv_sock_cqe(d, (struct loop_sock *)op, cqe->res, more);
		break;
	case DRV_OP_SOCK_CTL:
		drv_sock_ctl_cqe(d, (struct loop_sock *)((char *)op - offsetof(struct loop_sock, ctl_op)), cqe->res);
		break;
	case DRV_OP_TIMER:
		d->timer_armed_ns = 0;
		break;
	case DRV_OP_SIGNAL:
		on_signal(d, cqe->res, now);
		break;
	case DRV_OP_HOOK: {
		struct drv_hook *h = (struct drv_hook *)op;
		if (cqe->res == -EINVAL && !d->poll_oneshot)
			d->poll_oneshot = 1;
		if (cqe->res > 0 && h->hook->on_ready(h->hook->ctx, now) > 0)
			h->next_ns = now; /* more to do: the next turn calls it again */
		if (!more) {
			h->live = 0;
			if (cqe->res >= 0 || cqe->res == -EINVAL)
				arm_hook(d, h);
		}
		break;
	}
	}
}

static void curl_timer_due(struct drv *d, uint64_t now)
{
	if (d->curl_deadline_ns && d->curl_deadline_ns <= now) {
		int running;
		d->curl_deadline_ns = 0;
		curl_multi_socket_action(d->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	}
}

static uint64_t min_ns(uint64_t a, uint64_t b)
{
	return (a && (!b || a < b)) ? a : b;
}

/* Quantile tracking: up 9 steps on a sample above, down 1 below, so it settles where 1 in 10
 * samples is above it. Outliers (a preempted loop) move it little. */
static void wake_late_sample(uint64_t *p90_ns, uint64_t late_ns)
{
	if (late_ns > *p90_ns)
		*p90_ns = *p90_ns + 9 * WAKE_LATE_STEP_NS < ARRIVAL_SPIN_MAX_NS ? *p90_ns + 9 * WAKE_LATE_STEP_NS
										 : ARRIVAL_SPIN_MAX_NS;
	else if (*p90_ns >= WAKE_LATE_STEP_NS)
		*p90_ns -= WAKE_LATE_STEP_NS;
}

static uint64_t spin_window(uint64_t p90_ns)
{
	uint64_t w = p90_ns + ARRIVAL_SPIN_MIN_NS;
	return w < ARRIVAL_SPIN_MAX_NS ? w : ARRIVAL_SPIN_MAX_NS;
}

/* Runs the ring's completions (task work included) without sleeping until one is ready or
 * until (0 = no deadline), so no wake-up stands between a frame and its stamp. */
static int spin_for_events(struct drv *d, uint64_t until)
{
	uint64_t prev = ls_now_ns(), now;
	int rc;
	for (;;) {
		rc = io_uring_submit_and_get_events(&d->ring);
		now = ls_now_ns();
		int ready = io_uring_cq_ready(&d->ring) != 0;
		/* An empty turn is a few us: a long one means this thread did not run. */
		if (!ready && now - prev > LS_SPIN_STALL_NS) {
			uint64_t gap = now - prev;
			struct ls_spin_stalls *st = &d->run->spin_stalls;
			st->n++;
			st->sum_ns += gap;
			if (gap > st->max_ns)
				st->max_ns = gap;
		}
		prev = now;
		if (rc < 0 || ready || (until && now >= until))
			return rc;
	}
}

/* --spin-us / --busy-poll: spins up to opts->spin_ns (never past until, the loop's own next
 * deadline, 0 = none). 1 when the loop must not sleep: a completion, until, or an error. */
static int spin_first(struct drv *d, uint64_t until, uint64_t now, int *rc)
{
	uint64_t spin = d->opts->spin_ns;
	if (!spin)
		return 0;
	uint64_t end = spin == LS_SPIN_FOREVER || now + spin < now ? until : min_ns(until, now + spin);
	*rc = spin_for_events(d, end);
	return *rc < 0 || io_uring_cq_ready(&d->ring) || (until && ls_now_ns() >= until);
}

static void start_jobs(struct drv *d);
static void take_completions(struct drv *d, uint64_t slept_until, uint64_t *wake_late_ns);

/* Starts what may start, one transfer at a time, each carried as far as it goes before the
 * next: libcurl connects it (its timer is due at once) and, the connection being up (on
 * loopback, by the time connect() returns), writes the request (drv_socks_fresh_run). A burst
 * of N is then connect+write, connect+write, ..., not N connects and then N writes: each
 * request leaves one connect+write after the one before, libcurl's CONNECT_TIME is the
 * kernel's, not the whole burst's (issue 17). The streams already running are read every
 * START_DRAIN_NS meanwhile. A transfer that ends at once (refused) frees its slot for the next. */
static void start_jobs(struct drv *d)
{
	/* Every job admitted here found its slot free when this began (or when one freed inside,
	 * or when it was scheduled later): admitted_ns says so, started_ns when libcurl got it. */
	uint64_t slot_ns = ls_now_ns();
	uint32_t limit = d->opts->max_concurrency;
	size_t used = slots_used(d);
	size_t free_slots = !limit ? SIZE_MAX : used < limit ? limit - used : 0;
	uint64_t drained_ns = slot_ns, late_unused = 0;
	d->starting = 1;
	pace_arrivals(d, slot_ns);
	while (!d->stopping && admit_one(d, free_slots ? slot_ns : 0)) {
		if (free_slots && free_slots != SIZE_MAX)
			free_slots--; /* past those, a slot freed inside: admitted when taken */
		curl_timer_due(d, ls_now_ns());
		drv_socks_fresh_run(d);
		drv_check_done(d);
		uint64_t now = ls_now_ns();
		if (now - drained_ns >= START_DRAIN_NS && !d->in_cqes) {
			/* A long burst: the streams already running are read every START_DRAIN_NS
			 * (their frames wait at most that, not the whole burst). No wait here. */
			int rc = io_uring_submit_and_get_events(&d->ring);
			if (rc < 0 && rc != -EINTR && rc != -EBUSY && rc != -EAGAIN)
				d->fatal = rc;
			take_completions(d, 0, &late_unused);
			drv_check_done(d);
			drained_ns = now = ls_now_ns();
		}
		pace_arrivals(d, now);
	}
	d->starting = 0;
}

/* vLLM's probe_loop: while jobs remain (to start or in flight), one probe request at a time,
 * outside the slots, probe_interval_ns after the previous one returned. scheduled_ns is when it
 * was due, admitted_ns when the loop took it. */
static void start_probe(struct drv *d, uint64_t now)
{
	if (!d->opts->probe_interval_ns || d->probe || d->stopping || d->fatal || d->preconnect_url ||
	    now < d->probe_next_ns || (d->next_admit >= d->n_jobs && !slots_used(d)))
		return;
	struct ls_driver_job *job = d->opts->probe_job(d->opts->probe_ctx);
	if (!job) {
		d->probe_next_ns = UINT64_MAX; /* no more asked for */
		return;
	}
	job->rec->scheduled_ns = d->probe_next_ns;
	d->probe = job;
	if (drv_xfer_start(d, job, now)) { /* failed at once: its record says why */
		d->probe = NULL;
		d->probe_next_ns = ls_now_ns() + d->opts->probe_interval_ns;
		d->n_done--;
		d->n_failed--;
	} else {
		curl_timer_due(d, ls_now_ns());
		drv_socks_fresh_run(d);
	}
	d->n_started--; /* progress counts the run's jobs */
}

int drv_probe_finished(struct drv *d, const struct ls_driver_job *job, uint64_t now)
{
	if (!d->probe || job != d->probe)
		return 0;
	d->probe = NULL;
	d->probe_next_ns = now + d->opts->probe_interval_ns;
	d->n_done--;
	if (job->rec->fail)
		d->n_failed--;
	return 1;
}

static void reset_records(struct ls_driver_job *jobs, size_t n);

void drv_follow_up(struct drv *d, const struct ls_driver_job *done, uint64_t now)
{
	if (!d->opts->follow_up || d->stopping || d->fatal || d->preconnect_url)
		return;
	struct ls_driver_job *next = d->opts->follow_up(d->opts->turns_ctx, done);
	if (!next)
		return;
	reset_records(next, 1);
	next->rec->scheduled_ns = now; /* it arrives when the turn before it is done */
	d->n_done--;                   /* progress counts conversations: this one goes on */
	drv_xfer_start(d, next, now);
	d->n_started--;
}

/* Calls the hooks that are due, and those that run every turn. */
static void run_hooks(struct drv *d, uint64_t now)
{
	for (size_t i = 0; i < d->n_hooks; i++) {
		struct drv_hook *h = &d->hooks[i];
		int due = h->next_ns && h->next_ns <= now;
		if (due || h->hook->each_turn) {
			int more = h->hook->on_ready(h->hook->ctx, now) > 0;
			if (more)
				h->next_ns = now + 1; /* due again on the next turn */
			else if (due && h->hook->period_ns)
				while (h->next_ns <= now)
					h->next_ns += h->hook->period_ns;
			else if (due)
				h->next_ns = 0;
		}
	}
}

/* 1 when the run ends here, with *rc what ls_driver_run returns; else 0. */
static int run_ends(struct drv *d, uint64_t now, int *rc)
{
	if (d->fatal) {
		drv_cancel_all(d, "internal error in the driver loop");
		*rc = d->fatal;
		return 1;
	}
	if (d->stopping && (!d->in_flight || now >= d->stop_deadline_ns)) {
		drv_cancel_all(d, "run interrupted before the stream finished");
		*rc = 1;
		return 1;
	}
	if (!d->stopping && d->next_admit == d->n_jobs && !d->in_flight) {
		*rc = 0;
		return 1;
	}
	return 0;
}

/* The earliest deadline of all (0 = none): libcurl's timer, the next arrival, the hooks'
 * periods, the progress line, the grace period after a signal. */
static uint64_t next_wake(const struct drv *d)
{
	uint64_t wake = d->curl_deadline_ns;
	if (!d->stopping && d->next_arrive < d->n_jobs)
		wake = min_ns(wake, d->next_deadline_ns);
	for (size_t i = 0; i < d->n_hooks; i++)
		wake = min_ns(wake, d->hooks[i].next_ns);
	if (d->opts->progress)
		wake = min_ns(wake, d->progress_next_ns);
	if (d->stopping)
		wake = min_ns(wake, d->stop_deadline_ns);
	if (d->opts->probe_interval_ns && !d->probe && !d->stopping && d->probe_next_ns != UINT64_MAX)
		wake = min_ns(wake, d->probe_next_ns);
	if (d->lag_next_ns)
		wake = min_ns(wake, d->lag_next_ns);
	return wake;
}

/* The loop's lag, the client's own delay without the probes: a turn due at a tick starts late
 * by the scheduler's delay (another process on the core) or by the turn before it (a client
 * saturated by its frames), and a frame that came then waited as long. Every DRV_LAG_TICK_NS
 * (a quiet loop wakes for it: ~200 wake-ups a second), up to DRV_LAG_SAMPLES_MAX samples. */
#define DRV_LAG_TICK_NS 5000000ull
#define DRV_LAG_SAMPLES_MAX (1u << 21) /* 2.9 hours of ticks, 16 MiB */

static void lag_tick(struct drv *d, uint64_t now)
{
	if (!d->lag_next_ns || now < d->lag_next_ns)
		return;
	if (d->n_lag == d->cap_lag && d->cap_lag < DRV_LAG_SAMPLES_MAX) {
		size_t cap = d->cap_lag ? d->cap_lag * 2 : 1024;
		uint64_t *v = realloc(d->lag_ns, cap * sizeof(*v));
		if (v) { /* else the samples so far stand */
			d->lag_ns = v;
			d->cap_lag = cap;
		}
	}
	if (d->n_lag < d->cap_lag)
		d->lag_ns[d->n_lag++] = now - d->lag_next_ns;
	d->lag_next_ns = now + DRV_LAG_TICK_NS;
}

/* The run's loop lag P99 (0: no tick came). */
static void lag_report(struct drv *d)
{
	ls_sort_u64(d->lag_ns, d->n_lag);
	d->run->loop_lag_p99_ns = d->n_lag ? (uint64_t)ls_percentile_u64(d->lag_ns, d->n_lag, 99) : 0;
	d->run->loop_lag_ticks = d->n_lag;
}

/* Submits and waits for completions: not at all when wake is due or an arrival is in the spin
 * window, spinning first under --spin-us, else asleep until wake (or the arrival less the
 * wake-up lateness). *slept_until: the timer it slept on, 0 none. io_uring's rc. */
static int wait_events(struct drv *d, uint64_t wake, uint64_t now, uint64_t wake_late_ns,
		       uint64_t *slept_until)
{
	int rc;
	uint64_t arrival = startable_arrival(d);
	uint64_t early = spin_window(wake_late_ns);
	*slept_until = 0;
	if ((wake && wake <= now) || (arrival && arrival <= now + early)) {
		/* Due, or an arrival in the spin window: take what completed, do not sleep. */
		rc = io_uring_submit_and_get_events(&d->ring);
	} else if (spin_first(d, arrival ? min_ns(wake, arrival) : wake, now, &rc)) {
		/* completed, due or failed while spinning: no sleep */
	} else {
		if (arrival)
			wake = min_ns(wake, arrival - early);
		if (wake)
			arm_timer(d, wake);
		if (d->timer_armed_ns > now) /* else it fired while the loop was busy */
			*slept_until = d->timer_armed_ns;
		rc = io_uring_submit_and_wait(&d->ring, 1);
	}
	return rc;
}

/* Handles every completion that is ready, then learns how late the timer woke the loop. */
static void take_completions(struct drv *d, uint64_t slept_until, uint64_t *wake_late_ns)
{
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;
	uint64_t now = ls_now_ns();
	uint64_t woke_ns = now;
	uint64_t arrival = startable_arrival(d);
	d->in_cqes = 1;
	io_uring_for_each_cqe(&d->ring, head, cqe) {
		handle_cqe(d, cqe, now);
		n++;
		/* A long batch of frames must not hold back an arrival that is due: it starts
		 * here, connected and written as in a burst (start_jobs does not drain the ring
		 * while this loop holds it). */
		if (arrival && arrival <= (now = ls_now_ns())) {
			if (d->starting)
				pace_arrivals(d, now);
			else
				start_jobs(d);
			arrival = startable_arrival(d);
		}
	}
	io_uring_cq_advance(&d->ring, n);
	d->in_cqes = 0;
	/* The timer fired while the loop slept (its CQE clears timer_armed_ns): how late? */
	if (slept_until && !d->timer_armed_ns && woke_ns >= slept_until)
		wake_late_sample(wake_late_ns, woke_ns - slept_until);
	d->stats.cqes += n;
}

/* One turn: timers, what may start, hooks, progress, then wait and take completions. The
 * helpers are static and called once, so they compile into this one function. */
int drv_loop(struct drv *d)
{
	uint64_t wake_late_ns = WAKE_LATE_START_NS;
	for (;;) {
		uint64_t now = ls_now_ns(), slept_until;
		int rc;
		lag_tick(d, now);
		curl_timer_due(d, now);
		drv_check_done(d);
		start_jobs(d);
		now = ls_now_ns();
		if (d->opts->progress_out)
			*d->opts->progress_out = (struct ls_progress_counts){ d->n_jobs, d->n_started, d->n_done,
									  d->n_failed };
		start_probe(d, now);
		run_hooks(d, now);
		if (d->opts->progress && d->progress_next_ns <= now && !d->preconnect_url) {
			progress_line(d, now, 0);
			d->progress_next_ns = now + d->progress_period_ns;
		}
		if (run_ends(d, now, &rc))
			return rc;
		if (d->preconnect_url)
			drv_preconnect_turn(d);
		uint64_t wake = next_wake(d);
		if (!d->sig_armed)
			arm_signal_read(d);
		rc = wait_events(d, wake, now, wake_late_ns, &slept_until);
		if (rc < 0 && rc != -EINTR && rc != -ETIME && rc != -EBUSY && rc != -EAGAIN) {
			fprintf(stderr, "latscope: io_uring_submit_and_wait: %s\n", strerror(-rc));
			d->fatal = rc;
			continue;
		}
		take_completions(d, slept_until, &wake_late_ns);
		d->stats.waits++;
	}
}

/* ---- setup and teardown ---- */

static void raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			fprintf(stderr, "latscope: could not raise the open-file limit to %llu: %s\n",
				(unsigned long long)rl.rlim_max, strerror(errno));
	}
}

/* Clears what a previous run left, keeping what the caller set up (id, warmup, lengths). */
static void reset_records(struct ls_driver_job *jobs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct ls_request *r = jobs[i].rec;
		int warmup = r->warmup;
		uint32_t prompt_len = r->prompt_len, output_len = r->output_len;
		ls_request_reset(r, r->id);
		r->warmup = warmup;
		r->prompt_len = prompt_len;
		r->output_len = output_len;
	}
}

/* -EINVAL (message on stderr) for a run that cannot be driven, -EIO when libcurl did not
 * initialise, else 0. */
static int check_run(const struct ls_driver_opts *opts, const struct ls_driver_job *jobs, size_t n_jobs,
		     const struct ls_run *run)
{
	if (!opts || !opts->url || !run || (n_jobs && !jobs)) {
		fprintf(stderr, "latscope: ls_driver_run: no URL, jobs or run record given\n");
		return -EINVAL;
	}
	for (size_t i = 0; i < n_jobs; i++)
		if (!jobs[i].rec || !jobs[i].body) {
			fprintf(stderr, "latscope: ls_driver_run: job %zu has no body or record\n", i);
			return -EINVAL;
		}
	for (size_t i = 0; i < opts->n_hooks; i++)
		if (!opts->hooks[i].on_ready || (opts->hooks[i].fd < 0 && !opts->hooks[i].period_ns)) {
			fprintf(stderr, "latscope: ls_driver_run: hook %zu has no callback, fd or period\n", i);
			return -EINVAL;
		}
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK) {
		fprintf(stderr, "latscope: curl_global_init: %s\n", curl_easy_strerror(curl_init_rc));
		return -EIO;
	}
	return 0;
}

/* The loop's state for this run, and the run's own fields it owns (tag, flags). */
static void drv_init(struct drv *d, const struct ls_driver_opts *opts, struct ls_driver_job *jobs,
		     size_t n_jobs, struct ls_run *run)
{
	d->opts = opts;
	d->jobs = jobs;
	d->n_jobs = n_jobs;
	d->run = run;
	d->sigfd = -1;
	d->timer_op.kind = DRV_OP_TIMER;
	d->sig_op.kind = DRV_OP_SIGNAL;
	if (opts->run_tag && *opts->run_tag && opts->run_tag != run->run_tag) {
		char tag[sizeof(run->run_tag)];
		snprintf(tag, sizeof(tag), "%s", opts->run_tag); /* may alias run->run_tag */
		memcpy(run->run_tag, tag, sizeof(tag));
	}
	else if (!run->run_tag[0])
		snprintf(run->run_tag, sizeof(run->run_tag), "ls%d", (int)getpid());
	run->interrupted = 0;
	run->spin_stalls = (struct ls_spin_stalls){ 0 };
	run->loop_lag_p99_ns = 0;
	run->loop_lag_ticks = 0;
	run->server_gone_ns = 0;
	run->n_connect_failed_gone = 0;
	run->n_preconnected = 0;
	run->preconnect_ns = 0;
	run->max_concurrency = opts->max_concurrency;
}

/* The clock starts: the run's start (when it has measured jobs), the hooks' first periods and
 * polls, the first deadline, the signal read. 0 or -ENOMEM. */
static int drv_start(struct drv *d)
{
	const struct ls_driver_opts *opts = d->opts;
	d->hooks = calloc(opts->n_hooks ? opts->n_hooks : 1, sizeof(*d->hooks));
	if (!d->hooks)
		return -ENOMEM;
	d->n_hooks = opts->n_hooks;
	uint64_t start = ls_now_ns();
	if (opts->start_at_ns) { /* an agreed start: sleep to it; passed already, the schedule catches up */
		struct timespec at = { (time_t)(opts->start_at_ns / 1000000000ull), (long)(opts->start_at_ns % 1000000000ull) };
		while (opts->start_at_ns > start && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR)
			;
		start = opts->start_at_ns;
	}
	d->run_start_ns = start;
	int measured = 0;
	for (size_t i = 0; i < d->n_jobs; i++)
		measured |= !d->jobs[i].rec->warmup;
	if (measured) {
		d->run->start_ns = start;
		d->run->end_ns = 0;
		d->lag_next_ns = start + DRV_LAG_TICK_NS;
	}
	for (size_t i = 0; i < d->n_hooks; i++) {
		struct drv_hook *h = &d->hooks[i];
		h->op.kind = DRV_OP_HOOK;
		h->hook = &opts->hooks[i];
		h->next_ns = h->hook->period_ns ? start + h->hook->period_ns : 0;
		if (h->hook->fd >= 0)
			arm_hook(d, h);
	}
	if (opts->progress)
		progress_setup(d, start);
	if (d->n_jobs)
		d->next_deadline_ns = deadline_of(d, 0, start);
	d->probe_next_ns = start;
	arm_signal_read(d);
	return 0;
}

static void print_stats(const struct drv *d)
{
	if (getenv("LATSCOPE_DRIVER_DEBUG"))
		fprintf(stderr, "latscope: driver: %llu loop turns, %llu CQEs, %llu socket actions, %llu poll "
			"updates retried (busy), %u connections, multishot %s\n",
			(unsigned long long)d->stats.waits, (unsigned long long)d->stats.cqes,
			(unsigned long long)d->stats.socket_actions, (unsigned long long)d->stats.ctl_retries,
			d->n_conns, d->poll_oneshot ? "off" : "on");
	if (getenv("LATSCOPE_DRIVER_DEBUG") && d->n_lag) /* lag_report sorted them */
		fprintf(stderr, "latscope: driver: loop lag over %zu ticks: P50 %.3f, P90 %.3f, P99 %.3f, max %.3f ms\n",
			d->n_lag, ls_percentile_u64(d->lag_ns, d->n_lag, 50) / 1e6,
			ls_percentile_u64(d->lag_ns, d->n_lag, 90) / 1e6,
			ls_percentile_u64(d->lag_ns, d->n_lag, 99) / 1e6, d->lag_ns[d->n_lag - 1] / 1e6);
	if (d->ring_errors)
		fprintf(stderr, "latscope: driver: %zu io_uring poll/timeout updates failed (first: %s)\n",
			d->ring_errors, strerror(-d->ring_error_first));
}

static void drv_free(struct drv *d)
{
	drv_xfers_free(d);
	drv_multi_teardown(d);
	if (d->ring_ok)
		io_uring_queue_exit(&d->ring);
	drv_socks_free(d);
	free(d->hooks);
	free(d->lag_ns);
	if (d->sigfd >= 0)
		close(d->sigfd);
	free(d);
}

int ls_driver_run(const struct ls_driver_opts *opts, struct ls_driver_job *jobs, size_t n_jobs,
		  struct ls_run *run)
{
	int rc = check_run(opts, jobs, n_jobs, run);
	if (rc)
		return rc;
	raise_nofile();
	reset_records(jobs, n_jobs);

	struct drv *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	/* Timed sleeps end on time, not up to 50 us later (the default slack); restored after. */
	int old_slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	if (old_slack > 1)
		prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	drv_init(d, opts, jobs, n_jobs, run);

	sigset_t sigs, old_sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	int masked = pthread_sigmask(SIG_BLOCK, &sigs, &old_sigs) == 0;
	/* Blocking fd on purpose: io_uring then waits for the signal instead of failing EAGAIN. */
	d->sigfd = signalfd(-1, &sigs, SFD_CLOEXEC);
	if (d->sigfd < 0) {
		rc = -errno;
		fprintf(stderr, "latscope: signalfd: %s\n", strerror(errno));
		goto out;
	}
	if ((rc = ring_init(d)) || (rc = drv_multi_setup(d)))
		goto out;
	/* As many easy handles as can be in flight (capped: past that they are made as needed). */
	size_t prepare = opts->max_concurrency && opts->max_concurrency < n_jobs ? opts->max_concurrency : n_jobs;
	drv_xfers_prepare(d, prepare < XFERS_PREPARED_MAX ? prepare : XFERS_PREPARED_MAX);
	if (opts->preconnect && (rc = drv_preconnect(d)))
		goto out;
	if ((rc = drv_start(d)))
		goto out;
	rc = drv_loop(d);
	lag_report(d);
	print_stats(d);
	if (opts->progress)
		progress_line(d, ls_now_ns(), 1);
out:
	drv_free(d);
	if (masked)
		pthread_sigmask(SIG_SETMASK, &old_sigs, NULL);
	if (old_slack > 1)
		prctl(PR_SET_TIMERSLACK, (unsigned long)old_slack, 0, 0, 0);
	return rc;
}
