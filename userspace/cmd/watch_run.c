/* watch_run.c — `latscope watch`: opens the probes (fork following on, Python's libssl entry
 * points too), runs the command (posix_spawnp; the fork tracepoint puts the child in the watch
 * map before it execs) or attaches to --pid, drains the probes and picks up new children until
 * the process exits, --duration ends or SIGINT, then builds the exchanges (watch/) and reports
 * them (report/watch_report.h). watch has no driver: it waits in poll() on the process's pidfd,
 * a signalfd and the probes' ring, with a short timeout for the drain and the child scan. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "base/clock.h"
#include "base/outfile.h"
#include "base/strbuf.h"
#include "cmd/watch.h"
#include "probes/probes.h"
#include "report/watch_report.h"
#include "watch/watch.h"

extern char **environ;

#define TICK_MS 20 /* drain and look for new children this often */

struct watch_state {
	const struct ls_watch_args *a;
	struct ls_probes *probes;
	pid_t target;        /* the command's pid or --pid */
	int own_child;       /* target is our child (waitpid gives its status) */
	int pidfd, sigfd;
	int exit_known, exit_code;
	uint64_t t0_ns, t1_ns;
	sigset_t old_mask;
};

static int open_probes(struct watch_state *st)
{
	const struct ls_watch_args *a = st->a;
	pid_t client = a->pid ? a->pid : getpid(); /* latscope itself until the command is forked */
	char why[256];
	struct ls_probes_opts po = {
		.client_pids = &client, .n_client_pids = 1,
		.server_pids = a->n_server_pids ? a->server_pids : NULL, .n_server_pids = a->n_server_pids,
		.server_comm = a->server_comm, .no_tls = a->no_tls, .follow_forks = 1, .tls_entry_all = 1,
	};

	st->probes = ls_probes_open(&po, why, sizeof(why));
	if (!st->probes) {
		fprintf(stderr, "latscope watch: the eBPF probes cannot run: %s%s\n", why,
			a->cmd ? " (the command was not run)" : "");
		return -1;
	}
	return 0;
}

static int check_outputs(const struct ls_watch_args *a)
{
	const char *what[] = { "--record", "--trace", "--output" };
	const char *path[] = { a->record, a->trace, a->output };

	for (int i = 0; i < 3; i++)
		if (path[i] && ls_outfile_check(what[i], path[i], 1))
			return -1;
	return 0;
}

/* SIGINT/SIGTERM/SIGCHLD come through a signalfd; the command gets them back at their defaults. */
static int spawn(struct watch_state *st)
{
	posix_spawnattr_t at;
	sigset_t none, def;
	int err;

	sigemptyset(&none);
	sigemptyset(&def);
	sigaddset(&def, SIGINT);
	sigaddset(&def, SIGTERM);
	sigaddset(&def, SIGCHLD);
	if ((err = posix_spawnattr_init(&at)))
		goto fail;
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &def);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	err = posix_spawnp(&st->target, st->a->cmd[0], NULL, &at, st->a->cmd, environ);
	posix_spawnattr_destroy(&at);
	if (err)
		goto fail;
	st->own_child = 1;
	ls_probes_unwatch(st->probes, getpid());
	return 0;
fail:
	fprintf(stderr, "latscope watch: cannot run '%s': %s\n", st->a->cmd[0], strerror(err));
	return -1;
}

static int setup_fds(struct watch_state *st)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &mask, &st->old_mask) || (st->sigfd = signalfd(-1, &mask, SFD_CLOEXEC)) < 0) {
		fprintf(stderr, "latscope watch: signalfd: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* The target ended? (pidfd readable, or gone from /proc where pidfds are missing.) */
static int target_gone(struct watch_state *st, int pidfd_ready)
{
	int status;

	if (st->own_child) {
		pid_t r = waitpid(st->target, &status, WNOHANG);
		if (r != st->target)
			return 0;
		st->exit_known = 1;
		st->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		return 1;
	}
	if (st->pidfd >= 0)
		return pidfd_ready;
	return kill(st->target, 0) != 0 && errno == ESRCH;
}

/* Until the target exits, --duration ends or (with --pid) SIGINT/SIGTERM. */
static void wait_loop(struct watch_state *st)
{
	uint64_t end = st->a->duration_ns ? st->t0_ns + st->a->duration_ns : 0;

	for (;;) {
		struct pollfd fds[3] = { { st->sigfd, POLLIN, 0 }, { st->pidfd, POLLIN, 0 },
					 { ls_probes_fd(st->probes), POLLIN, 0 } };
		int n = poll(fds, 3, TICK_MS), pidfd_ready = n > 0 && (fds[1].revents & POLLIN);
		ls_probes_drain(st->probes);
		ls_probes_follow(st->probes);
		if (n > 0 && (fds[0].revents & POLLIN)) {
			struct signalfd_siginfo si;
			if (read(st->sigfd, &si, sizeof(si)) == sizeof(si) && si.ssi_signo != SIGCHLD) {
				if (!st->own_child)
					break;
				kill(st->target, (int)si.ssi_signo); /* the command decides; watch reports after */
			}
		}
		if (target_gone(st, pidfd_ready))
			break;
		if (end && ls_now_ns() >= end)
			break;
	}
	st->t1_ns = ls_now_ns();
	ls_probes_drain(st->probes);
}

/* What watch says besides the probes' notes: client pids with connections that never mapped a
 * libssl of their own (a TLS client without it is not split). */
static void watch_notes(struct watch_state *st, const struct ls_watch *w, struct ls_strbuf *notes)
{
	const pid_t *pids;
	size_t n = ls_probes_client_pids(st->probes, &pids);

	ls_strbuf_puts(notes, ls_probes_notes(st->probes));
	for (size_t i = 0; i < n && !st->a->no_tls; i++) {
		size_t conns = 0;
		for (size_t c = 0; c < w->n_conns; c++)
			conns += w->conns[c].tgid == (uint32_t)pids[i];
		if (conns && !ls_probes_client_tls(st->probes, i))
			ls_strbuf_printf(notes, "pid %d never mapped a libssl: if its %zu connection(s) are TLS (Go's "
					 "crypto/tls, rustls), handshake and request are not split\n", (int)pids[i], conns);
	}
}

/* The client pids to report: every one seen but latscope itself. */
static size_t client_pids(struct watch_state *st, pid_t *out, size_t cap)
{
	const pid_t *pids;
	size_t n = ls_probes_client_pids(st->probes, &pids), k = 0;

	for (size_t i = 0; i < n && k < cap; i++)
		if (pids[i] != getpid())
			out[k++] = pids[i];
	return k;
}

static int read_harness(const char *path, struct ls_harness_result *hr, int *have)
{
	char why[512];

	*have = 0;
	if (!path)
		return 0;
	int err = ls_harness_result_read(path, hr, why, sizeof(why));
	if (err) {
		if (err != -EIO) /* ls_read_file said why it could not read the file */
			fprintf(stderr, "latscope watch: %s\n", why);
		return -1;
	}
	*have = 1;
	return 0;
}

static int write_outputs(const struct ls_watch_args *a, const struct ls_watch *w, const struct ls_watch_report_ctx *ctx)
{
	int err = 0;

	if (a->record && !(err = ls_watch_record_write(a->record, w, ctx)))
		fprintf(stderr, "latscope watch: every connection, request and read written to %s\n", a->record);
	if (a->trace && !ls_watch_trace_write(a->trace, w))
		fprintf(stderr, "latscope watch: trace written to %s (open it in ui.perfetto.dev)\n", a->trace);
	else if (a->trace)
		err = -EIO;
	return err;
}

static void what_line(const struct ls_watch_args *a, char *buf, size_t len)
{
	size_t off = 0;

	if (!a->cmd) {
		snprintf(buf, len, "pid %d", (int)a->pid);
		return;
	}
	off += snprintf(buf, len, "`");
	for (char **c = a->cmd; *c && off + 8 < len; c++)
		off += snprintf(buf + off, len - off, "%s%.*s", c == a->cmd ? "" : " ", (int)(len - off - 8), *c);
	if (off + 2 < len)
		snprintf(buf + off, len - off, "`");
}

static int ls_watch_report(struct watch_state *st)
{
	const struct ls_watch_args *a = st->a;
	struct ls_watch w;
	struct ls_watch_summary s;
	struct ls_harness_result hr;
	struct ls_strbuf notes = { 0 };
	pid_t pids[256];
	uint32_t tgids[256];
	char what[512];
	int have_hr, rc = 0;
	size_t n = client_pids(st, pids, 256);

	for (size_t i = 0; i < n; i++)
		tgids[i] = (uint32_t)pids[i];
	struct ls_watch_opts wo = { .tgids = tgids, .n_tgids = n, .port = a->port };
	if (ls_watch_build(ls_probes_events(st->probes), &wo, &w) || ls_watch_summarise(&w, &s)) {
		fprintf(stderr, "latscope watch: out of memory building the report\n");
		ls_watch_free(&w);
		return 1;
	}
	if (read_harness(a->harness, &hr, &have_hr))
		rc = 1;
	watch_notes(st, &w, &notes);
	what_line(a, what, sizeof(what));
	const pid_t *srv;
	uint64_t drain_ns, events;
	ls_probes_cost(st->probes, NULL, 0, &drain_ns, &events);
	struct ls_watch_report_ctx ctx = {
		.what = what, .pids = pids, .n_pids = n, .watched_s = (st->t1_ns - st->t0_ns) / 1e9,
		.exit_known = st->exit_known, .exit_code = st->exit_code, .notes = notes.data ? notes.data : "",
		.harness_path = a->harness, .max_rows = a->max_rows, .port = a->port, .t0_ns = st->t0_ns,
		.probe_events = events, .lost_events = ls_evstore_lost_total(ls_probes_events(st->probes)),
	};
	ctx.n_server_pids = ls_probes_server_pids(st->probes, &srv);
	ctx.server_pids = srv;
	struct ls_outfile of;
	FILE *out = stdout;
	if (a->output && ls_outfile_open(&of, "--output", a->output) == 0)
		out = of.f;
	else if (a->output)
		rc = 1;
	ls_watch_report_text(out, &w, &s, have_hr ? &hr : NULL, &ctx);
	if (out != stdout && ls_outfile_commit(&of))
		rc = 1;
	if (write_outputs(a, &w, &ctx))
		rc = 1;
	if (have_hr)
		ls_harness_result_free(&hr);
	ls_strbuf_free(&notes);
	ls_watch_free(&w);
	return rc;
}

int ls_watch_run(const struct ls_watch_args *a)
{
	struct watch_state st = { .a = a, .pidfd = -1, .sigfd = -1 };
	int rc = 1;

	if (check_outputs(a) || setup_fds(&st))
		goto out;
	if (open_probes(&st))
		goto out;
	st.t0_ns = ls_now_ns();
	if (a->cmd && spawn(&st))
		goto out;
	if (a->pid)
		st.target = a->pid;
	st.pidfd = (int)syscall(SYS_pidfd_open, st.target, 0);
	wait_loop(&st);
	rc = ls_watch_report(&st);
	if (rc == 0 && st.exit_known)
		rc = st.exit_code;
out:
	if (st.own_child && !st.exit_known) { /* watch failed after the spawn: do not leave it behind */
		int status;
		waitpid(st.target, &status, 0);
	}
	ls_probes_close(st.probes);
	if (st.pidfd >= 0)
		close(st.pidfd);
	if (st.sigfd >= 0)
		close(st.sigfd);
	sigprocmask(SIG_SETMASK, &st.old_mask, NULL);
	return rc;
}
