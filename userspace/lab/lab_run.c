/* lab/lab_run.c — running sim (server namespace) and bench (client namespace) as children of
 * the lab: argv building, readiness, interruption, TIME_WAIT sampling while bench runs. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <wordexp.h>
#include "base/clock.h"
#include "lab/lab.h"

volatile sig_atomic_t lab_interrupted;

int lab_sleep_ms(int ms)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	uint64_t end = ls_now_ns() + (uint64_t)(ms > 0 ? ms : 0) * 1000000ull;
	for (;;) {
		uint64_t now = ls_now_ns(), left = end > now ? end - now : 0;
		struct timespec ts = { .tv_sec = (time_t)(left / 1000000000ull),
				       .tv_nsec = (long)(left % 1000000000ull) };
		int sig = sigtimedwait(&set, NULL, &ts);
		if (sig > 0) {
			lab_interrupted = 1;
			return 1;
		}
		if (errno == EINTR && left)
			continue;
		return lab_interrupted;
	}
}

void lab_argv_add(struct lab_argv *a, const char *word)
{
	if (a->n + 1 >= sizeof(a->v) / sizeof(a->v[0]) || !word) {
		a->overflow = 1;
		return;
	}
	a->v[a->n++] = (char *)word;
	a->v[a->n] = NULL;
}

void lab_argv_addf(struct lab_argv *a, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	int r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0 || a->n_owned >= sizeof(a->owned) / sizeof(a->owned[0])) {
		if (r >= 0)
			free(s);
		a->overflow = 1;
		return;
	}
	a->owned[a->n_owned++] = s;
	lab_argv_add(a, s);
}

int lab_argv_add_words(struct lab_argv *a, const char *words)
{
	if (!words || !*words)
		return 0;
	wordexp_t we;
	if (wordexp(words, &we, WRDE_NOCMD | WRDE_UNDEF) != 0) {
		fprintf(stderr, "lab: cannot split '%s' into flags (unbalanced quotes, $(...) or `...`?)\n", words);
		return -1;
	}
	for (size_t i = 0; i < we.we_wordc; i++)
		lab_argv_addf(a, "%s", we.we_wordv[i]);
	wordfree(&we);
	return a->overflow ? -1 : 0;
}

void lab_argv_free(struct lab_argv *a)
{
	for (size_t i = 0; i < a->n_owned; i++)
		free(a->owned[i]);
	memset(a, 0, sizeof(*a));
}

static void print_tail(const char *path, int lines)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	char ring[8][256];
	int n = 0;
	while (fgets(ring[n % 8], sizeof(ring[0]), f))
		n++;
	fclose(f);
	if (lines > 8)
		lines = 8;
	for (int i = n > lines ? n - lines : 0; i < n; i++)
		fprintf(stderr, "  | %s%s", ring[i % 8], strchr(ring[i % 8], '\n') ? "" : "\n");
}

pid_t lab_sim_start(struct lab_ctx *c, int tls, const char *tls_max, const char *step_ms,
		    const char *tag)
{
	const struct lab_opts *o = c->o;
	char truth[160], log[160];
	snprintf(truth, sizeof(truth), "%s/sim-%s.truth.jsonl", c->tmp_dir, tag);
	snprintf(log, sizeof(log), "%s/sim-%s.log", c->tmp_dir, tag);
	struct lab_argv a = { .n = 0 };
	lab_argv_add(&a, lab_self_exe());
	lab_argv_add(&a, "sim");
	lab_argv_add(&a, "--host");
	lab_argv_add(&a, LAB_SERVER_ADDR);
	lab_argv_add(&a, "--port");
	lab_argv_addf(&a, "%d", o->port);
	lab_argv_add(&a, "--truth");
	lab_argv_add(&a, truth);
	if (tls)
		lab_argv_add(&a, "--tls");
	if (tls && tls_max) {
		lab_argv_add(&a, "--tls-max");
		lab_argv_add(&a, tls_max);
	}
	if (step_ms) {
		lab_argv_add(&a, "--step-ms");
		lab_argv_add(&a, step_ms);
	}
	pid_t pid = -1;
	if (lab_argv_add_words(&a, o->sim_args) < 0 || a.overflow || !a.v[0])
		goto out;
	if (o->verbose) {
		fprintf(stderr, "lab: in %s:", c->ns.name[LAB_SERVER]);
		for (size_t i = 0; i < a.n; i++)
			fprintf(stderr, " %s", a.v[i]);
		fputc('\n', stderr);
	}
	pid = lab_spawn(&c->ns, LAB_SERVER, a.v, &c->orig_mask, LAB_STDOUT_TO_LOG, log);
	if (pid < 0)
		goto out;
	if (lab_wait_listening(&c->ns, o->port, pid, 10000) < 0) {
		if (!lab_interrupted) {
			fprintf(stderr, "lab: `latscope sim` did not accept on %s:%d in the server namespace "
				"within 10 s; the end of its log (%s):\n", LAB_SERVER_ADDR, o->port, log);
			print_tail(log, 6);
		}
		lab_stop_child(pid, SIGTERM, 2000);
		pid = -1;
	}
out:
	lab_argv_free(&a);
	return pid;
}

double lab_proc_cpu_s(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	unsigned long long on_cpu_ns = 0;
	int ok = fscanf(f, "%llu", &on_cpu_ns) == 1;
	fclose(f);
	return ok ? (double)on_cpu_ns / 1e9 : -1;
}

void lab_sim_stop(struct lab_ctx *c, pid_t pid)
{
	(void)c;
	if (pid > 0)
		lab_stop_child(pid, SIGTERM, 3000);
}

int lab_bench_run(struct lab_ctx *c, char *const flags[], size_t n_flags, int stdout_fd,
		  long *tw_peak, double *wall_s, double *cpu_s)
{
	struct lab_argv a = { .n = 0 };
	lab_argv_add(&a, lab_self_exe());
	lab_argv_add(&a, "bench");
	for (size_t i = 0; i < n_flags; i++)
		lab_argv_add(&a, flags[i]);
	if (a.overflow || !a.v[0]) {
		fprintf(stderr, "lab: too many bench flags\n");
		lab_argv_free(&a);
		return -1;
	}
	if (c->o->verbose) {
		fprintf(stderr, "lab: in %s:", c->ns.name[LAB_CLIENT]);
		for (size_t i = 0; i < a.n; i++)
			fprintf(stderr, " %s", a.v[i]);
		fputc('\n', stderr);
	}
	fflush(stdout);
	uint64_t t0 = ls_now_ns(), int_at = 0;
	pid_t pid = lab_spawn(&c->ns, LAB_CLIENT, a.v, &c->orig_mask, stdout_fd, NULL);
	lab_argv_free(&a);
	if (pid < 0)
		return -1;
	long peak[2] = { 0, 0 };
	int status = 0, killed = 0;
	struct rusage ru;
	memset(&ru, 0, sizeof(ru));
	for (;;) {
		pid_t r = wait4(pid, &status, WNOHANG, &ru);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR) {
			status = -1;
			break;
		}
		for (int side = 0; side < 2; side++) {
			long tw = lab_time_wait_in(&c->ns, side);
			if (tw > peak[side])
				peak[side] = tw;
		}
		/* Interrupted: bench gets SIGINT (it writes what finished), then 10 s, then SIGKILL. */
		if (lab_sleep_ms(100) && !int_at) {
			kill(pid, SIGINT);
			int_at = ls_now_ns();
		}
		if (int_at && !killed && ls_now_ns() - int_at > 10000000000ull) {
			kill(pid, SIGKILL);
			killed = 1;
		}
	}
	for (int side = 0; side < 2; side++) {
		long tw = lab_time_wait_in(&c->ns, side);
		if (tw > peak[side])
			peak[side] = tw;
		if (tw_peak)
			tw_peak[side] = peak[side];
	}
	if (wall_s)
		*wall_s = (double)(ls_now_ns() - t0) / 1e9;
	if (cpu_s)
		*cpu_s = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
			 (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	if (status < 0 || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}
