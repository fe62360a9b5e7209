/* sweep_run.c — one point of `latscope sweep`: a whole `latscope bench` run in a process of its
 * own (this binary again, through /proc/self/exe), so each point is a saved run that `latscope
 * report` reads like any other, and a point that crashes or hangs cannot take the sweep with it.
 * While it runs, its record file (written as requests finish) is read to stop it early when it
 * is over-saturated, and the time budget is kept; then its record is read per clock. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cmd/sweep_int.h"
#include "base/json_file.h"
#include "config/profile.h"
#include "report/record_file.h"

extern char **environ;

#define POLL_NS        100000000L /* how often the child is looked at */
#define OVERSAT_EVERY_S 0.5       /* how often its record is read for over-saturation */
#define CANCEL_AFTER_S 2.0        /* after the first SIGINT, a second one cancels what is in flight */
#define KILL_AFTER_S   30.0       /* a bench that ignores both is killed */

volatile int sweep_interrupted;

double sweep_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* argv of the point's bench: the user's flags, then the point's own. NULL on ENOMEM. */
static char **point_argv(const struct sweep_args *a, const struct sweep_job *job, const struct ls_sweep_point *p,
			 char (*num)[32])
{
	char **v = calloc(a->n_bench + 24, sizeof(*v));
	size_t k = 0;
	if (!v)
		return NULL;
	v[k++] = "latscope";
	v[k++] = "bench";
	for (size_t i = 0; i < a->n_bench; i++)
		v[k++] = a->bench[i];
	snprintf(num[0], sizeof(num[0]), a->concurrency ? "%.0f" : "%.6g", job->x);
	v[k++] = a->concurrency ? "--max-concurrency" : "--request-rate";
	v[k++] = num[0];
	if (a->concurrency && !a->user_arrival && !a->user_rate) {
		/* Closed loop: each of the C users sends its next request when its last one ends.
		 * (bench's default, every request due at once behind C slots, would read the burst's
		 * queue as the scheduled clock's latency.) */
		v[k++] = "--arrival";
		v[k++] = "closed";
	}
	if (a->point_s > 0) {
		double n = ceil(job->x * a->point_s);
		snprintf(num[1], sizeof(num[1]), "%.0f", n > a->min_requests ? n : a->min_requests);
		v[k++] = "--num-prompts";
		v[k++] = num[1];
	}
	if (!job->first && !a->user_ready_timeout) {
		/* The server answered before: a point that finds it gone should say so in seconds,
		 * not wait bench's 600 s for it to come back. */
		v[k++] = "--ready-check-timeout-sec";
		v[k++] = "10";
	}
	v[k++] = "--record";
	v[k++] = (char *)p->record;
	v[k++] = "--save-result";
	v[k++] = "--result-dir";
	v[k++] = (char *)a->dir;
	snprintf(num[2], sizeof(num[2]), "point-%zu.json", job->index);
	v[k++] = "--result-filename";
	v[k++] = num[2];
	v[k++] = "--disable-tqdm";
	v[k] = NULL;
	return v;
}

/* Starts bench with stdout and stderr to the point's log. 0 or -errno (said). */
static int spawn_bench(const struct sweep_args *a, const struct sweep_job *job, const struct ls_sweep_point *p,
		       pid_t *pid)
{
	char num[3][32];
	char **argv = point_argv(a, job, p, num);
	posix_spawn_file_actions_t fa;
	int rc;
	if (!argv) {
		fprintf(stderr, "latscope sweep: out of memory starting point %zu\n", job->index);
		return -ENOMEM;
	}
	rc = posix_spawn_file_actions_init(&fa);
	if (!rc)
		rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (!rc)
		rc = posix_spawn_file_actions_addopen(&fa, 1, p->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (!rc)
		rc = posix_spawn_file_actions_adddup2(&fa, 1, 2);
	if (!rc)
		rc = posix_spawn(pid, "/proc/self/exe", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	free(argv);
	if (rc)
		fprintf(stderr, "latscope sweep: cannot start bench for point %zu (log %s): %s\n", job->index, p->log,
			strerror(rc));
	return -rc;
}

/* Whether the file's last byte is a newline: bench writes each line with one write(2), so a
 * file that ends in one holds whole lines (the reader would note a cut one on stderr). */
static int ends_whole(const char *path, off_t size)
{
	char c = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = pread(fd, &c, 1, size - 1);
	close(fd);
	return n == 1 && c == '\n';
}

/* Whether the records the point has written so far show it over-saturated. */
static int check_oversat(const struct ls_sweep_point *p, double rate)
{
	struct stat st;
	struct ls_run run = { 0 };
	struct ls_record_meta meta;
	struct ls_oversat o;
	if (stat(p->record, &st) || st.st_size < 64 || !ends_whole(p->record, st.st_size))
		return 0; /* not started yet, or a line is being written: the next look reads it whole */
	if (ls_record_load(p->record, &run, &meta)) {
		ls_run_free(&run);
		return 0; /* a line caught mid-write: the next look reads it whole */
	}
	ls_sweep_oversat(&run, rate, &o);
	ls_run_free(&run);
	ls_record_meta_free(&meta);
	if (o.oversat)
		fprintf(stderr, "latscope sweep: point at %.2f req/s is over-saturated: requests finish at %.2f/s "
			"and their wait grew from %.0f ms to %.0f ms; stopping it\n", rate, o.done_rate,
			o.early_wait_s * 1e3, o.late_wait_s * 1e3);
	return o.oversat;
}

/* Signals the child to stop for why: SIGINT (bench stops sending, then reports), a second one
 * later cancels what is in flight, SIGKILL past KILL_AFTER_S. */
struct stopper {
	double first, second;
	int    killed;
};

static void stop_child(pid_t pid, struct stopper *s, double now)
{
	if (!s->first) {
		s->first = now;
		kill(pid, SIGINT);
	} else if (!s->second && now - s->first >= CANCEL_AFTER_S) {
		s->second = now;
		kill(pid, SIGINT);
	} else if (!s->killed && now - s->first >= KILL_AFTER_S) {
		s->killed = 1;
		kill(pid, SIGKILL);
	}
}

/* Waits for the child; stops it when over-saturated, past the deadline or interrupted. */
static int watch_child(const struct sweep_args *a, const struct sweep_job *job, double start_s, pid_t pid,
		       struct ls_sweep_point *p)
{
	struct stopper stop = { 0 };
	double next_look = sweep_now_s() + OVERSAT_EVERY_S;
	for (;;) {
		int status;
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid) {
			p->bench_rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
			return 0;
		}
		if (w < 0 && errno != EINTR) {
			fprintf(stderr, "latscope sweep: waiting for point %zu's bench: %s\n", job->index, strerror(errno));
			return -errno;
		}
		double now = sweep_now_s();
		if (!stop.first && !a->concurrency && a->oversat_stop && now >= next_look) {
			if (check_oversat(p, job->x))
				snprintf(p->stopped, sizeof(p->stopped), "oversaturated");
			/* Reading a long run's record takes CPU from the run it measures: look at most
			 * a tenth of the time. */
			double took = sweep_now_s() - now;
			next_look = now + (10 * took > OVERSAT_EVERY_S ? 10 * took : OVERSAT_EVERY_S);
		}
		if (!stop.first && job->deadline_s > 0 && now - start_s >= job->deadline_s)
			snprintf(p->stopped, sizeof(p->stopped), "budget");
		if (!stop.first && sweep_interrupted)
			snprintf(p->stopped, sizeof(p->stopped), "interrupted");
		if (p->stopped[0])
			stop_child(pid, &stop, now);
		nanosleep(&(struct timespec){ 0, POLL_NS }, NULL);
	}
}

/* The last lines of a point's log on stderr: why bench stopped, where the user looks first. */
static void show_log_tail(const char *log)
{
	size_t len;
	char *text = ls_read_file(log, "latscope sweep", "bench log", &len);
	if (!text)
		return;
	size_t from = len, lines = 0;
	while (from > 0 && lines < 4)
		lines += text[--from] == '\n';
	fprintf(stderr, "  %s ends:\n%s%s", log, text + from + (text[from] == '\n'),
		len && text[len - 1] != '\n' ? "\n" : "");
	free(text);
}

/* The point's record read per clock under profile (NULL: the run's own). */
static int read_point(const struct sweep_args *a, struct ls_sweep_point *p, const char *profile, int *server_gone)
{
	struct ls_run run = { 0 };
	struct ls_record_meta meta;
	struct ls_profile prof;
	struct ls_read_rules rules;
	int rc = ls_record_load(p->record, &run, &meta);
	if (rc) {
		fprintf(stderr, "latscope sweep: point %s left no readable record (bench exited %d; its output is in %s)\n",
			p->record, p->bench_rc, p->log);
		show_log_tail(p->log);
		ls_run_free(&run);
		return rc;
	}
	rc = ls_profile_load(profile ? profile : meta.profile[0] ? meta.profile : "vllm", &prof);
	if (!rc) {
		snprintf(p->rules, sizeof(p->rules), "%s", prof.name);
		ls_profile_read_rules(&prof, meta.spec.has_avg ? meta.spec.avg_accept_len : 0, &rules);
		rc = ls_sweep_point_read(&run, &rules, &a->slo, a->warm, a->cool, p);
		if (rc)
			fprintf(stderr, "latscope sweep: out of memory reading %s\n", p->record);
	}
	*server_gone = run.server_gone_ns != 0;
	ls_run_free(&run);
	ls_record_meta_free(&meta);
	return rc;
}

int sweep_run_point(const struct sweep_args *a, const struct sweep_job *job, double start_s,
		    struct ls_sweep_point *p, int *server_gone)
{
	pid_t pid;
	memset(p, 0, sizeof(*p));
	p->x = job->x;
	snprintf(p->record, sizeof(p->record), "%s/point-%zu.jsonl", a->dir, job->index);
	snprintf(p->result, sizeof(p->result), "%s/point-%zu.json", a->dir, job->index);
	snprintf(p->log, sizeof(p->log), "%s/point-%zu.log", a->dir, job->index);
	*server_gone = 0;
	double t0 = sweep_now_s();
	int rc = spawn_bench(a, job, p, &pid);
	if (rc)
		return rc;
	rc = watch_child(a, job, start_s, pid, p);
	p->wall_s = sweep_now_s() - t0;
	if (rc)
		return rc;
	return read_point(a, p, NULL, server_gone);
}

int sweep_read_as(const struct sweep_args *a, const char *profile, const struct ls_sweep_point *pts, size_t n,
		  struct ls_sweep_point *out)
{
	for (size_t i = 0; i < n; i++) {
		int gone;
		struct ls_sweep_point *o = &out[i];
		memset(o, 0, sizeof(*o));
		o->x = pts[i].x;
		o->repeat = pts[i].repeat;
		o->bench_rc = pts[i].bench_rc;
		memcpy(o->stopped, pts[i].stopped, sizeof(o->stopped));
		memcpy(o->record, pts[i].record, sizeof(o->record));
		memcpy(o->log, pts[i].log, sizeof(o->log));
		int rc = read_point(a, o, profile, &gone);
		if (rc)
			return rc;
	}
	return 0;
}
