/* watch.h — `latscope watch`: its settings (watch_cmd.c parses them) and the run (watch_run.c). */
#ifndef LATSCOPE_CMD_WATCH_H
#define LATSCOPE_CMD_WATCH_H

#include <stdint.h>
#include <sys/types.h>

#define LS_WATCH_MAX_SERVERS 16

struct ls_watch_args {
	char **cmd;              /* the command after "--", NULL with --pid */
	pid_t pid;               /* --pid, 0 none */
	uint64_t duration_ns;    /* --duration, 0 until the process exits or SIGINT */
	uint16_t port;
	pid_t server_pids[LS_WATCH_MAX_SERVERS];
	size_t n_server_pids;
	const char *server_comm, *record, *trace, *harness, *output;
	uint64_t max_rows;
	int no_tls;
};

/* Runs it: the probes, the command (or the pid), the report. Returns the exit code (the
 * command's; 1 for watch's own failure, after one line on stderr). */
int ls_watch_run(const struct ls_watch_args *a);

#endif
