/* watch_cmd.c — `latscope watch [flags] -- COMMAND [ARGS...]` and `latscope watch --pid PID`: the
 * flags (base/opts.h table) and their checks; watch_run.c does the rest. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/opts.h"
#include "cmd/watch.h"
#include "commands.h"

enum { O_PID, O_DURATION, O_PORT, O_SERVER_PID, O_SERVER_COMM, O_RECORD, O_TRACE, O_HARNESS, O_OUTPUT,
       O_MAX_ROWS, O_NO_TLS, O_HELP };

static const struct ls_opt opts[] = {
	{ "pid", O_PID, LS_ARG_ONE, "PID", "attach to this running process (and the children it forks from now)",
	  "what to watch (else the COMMAND after --, and every child it forks)" },
	{ "duration", O_DURATION, LS_ARG_ONE, "S", "with --pid: stop after S seconds (default: when it exits, or SIGINT)",
	  NULL },
	{ "port", O_PORT, LS_ARG_ONE, "N", "only TCP connections to this remote port (default: every connection\n"
	  "that carries requests)", NULL },
	{ "server-pid", O_SERVER_PID, LS_ARG_ONE, "PID", "a server on this host: its sockets are joined to the\n"
	  "harness's (repeatable)", "server" },
	{ "server-comm", O_SERVER_COMM, LS_ARG_ONE, "NAME", "also every process with this command name", NULL },
	{ "record", O_RECORD, LS_ARG_ONE, "FILE", "JSONL: every connection, request and read with its stamps",
	  "outputs" },
	{ "trace", O_TRACE, LS_ARG_ONE, "FILE.json", "Chrome trace (ui.perfetto.dev): one track per connection", NULL },
	{ "harness-result", O_HARNESS, LS_ARG_ONE, "FILE", "the harness's own result after it ran: vLLM --save-result\n"
	  "JSON, SGLang --output-file JSONL (--output-details), or\n{\"ttfts\":[...],\"itls\":[...]} (seconds)", NULL },
	{ "output", O_OUTPUT, LS_ARG_ONE, "FILE", "the report goes here instead of stdout", NULL },
	{ "max-rows", O_MAX_ROWS, LS_ARG_ONE, "N", "rows per table in the report (default 20)", NULL },
	{ "no-tls", O_NO_TLS, LS_ARG_NONE, NULL, "do not attach the libssl uprobes", NULL },
	{ "help", O_HELP, LS_ARG_NONE, NULL, "this text", "other" },
	{ "h", O_HELP, LS_ARG_NONE, NULL, NULL, NULL },
};
#define N_OPTS (sizeof(opts) / sizeof(opts[0]))

static void usage(FILE *out)
{
	fprintf(out, "usage: latscope watch [flags] -- COMMAND [ARGS...]\n"
		     "       latscope watch --pid PID [--duration S] [flags]\n\n"
		     "Watches someone else's benchmark client (vllm bench serve, SGLang bench_serving, your script)\n"
		     "from the kernel and libssl, without changing it: per connection and per request, how long\n"
		     "it held bytes the kernel already had, and how long it took from connect() to sending the\n"
		     "request; with --harness-result, its reported TTFT/ITL next to the kernel-level ones.\n"
		     "Needs root and kernel BTF. Exit status: the command's; 1 when watch itself fails.\n");
	ls_opt_help(out, opts, N_OPTS);
	fprintf(out, "\nexample: sudo latscope watch --harness-result res.json -- \\\n"
		     "           python3 tests/clients/aiohttp_client.py --max-concurrency 64 --save-result res.json\n");
}

static const char *apply(void *ctx, const struct ls_opt *o, const char *v)
{
	struct ls_watch_args *a = ctx;
	double d;

	switch (o->id) {
	case O_PID:
		if (ls_opt_parse_whole(v, 1, 4194304, &d))
			return "must be a process id";
		a->pid = (pid_t)d;
		break;
	case O_DURATION:
		if (ls_opt_parse_duration_ns(v, 1e9, 1e7, &a->duration_ns) || !a->duration_ns)
			return "must be seconds > 0";
		break;
	case O_PORT:
		if (ls_opt_parse_whole(v, 1, 65535, &d))
			return "must be a port in 1..65535";
		a->port = (uint16_t)d;
		break;
	case O_SERVER_PID:
		if (ls_opt_parse_whole(v, 1, 4194304, &d))
			return "must be a process id";
		if (a->n_server_pids == LS_WATCH_MAX_SERVERS)
			return "given too many times (16 at most)";
		a->server_pids[a->n_server_pids++] = (pid_t)d;
		break;
	case O_SERVER_COMM: a->server_comm = v; break;
	case O_RECORD: a->record = v; break;
	case O_TRACE: a->trace = v; break;
	case O_HARNESS: a->harness = v; break;
	case O_OUTPUT: a->output = v; break;
	case O_MAX_ROWS:
		if (ls_opt_parse_u64(v, 0, 1000000000, &a->max_rows))
			return "must be a count";
		break;
	case O_NO_TLS:
		if (ls_opt_parse_bool(v, &a->no_tls))
			return "must be true or false";
		break;
	}
	return NULL;
}

/* 0, -1 after --help, 2 after a usage message. */
static int parse(int argc, char **argv, struct ls_watch_args *a)
{
	struct ls_opt_walk w;
	const char *v;

	memset(a, 0, sizeof(*a));
	a->max_rows = 20;
	ls_opt_walk_init(&w, "latscope watch", opts, N_OPTS, argc, argv);
	int step = ls_opt_flags(&w, O_HELP, apply, a, &v);
	if (step == LS_OPT_HELP) {
		usage(stdout);
		return -1;
	}
	if (step < 0)
		return 2;
	if (step == LS_OPT_ARG) {
		fprintf(stderr, "latscope watch: '%s': put the command after -- (latscope watch [flags] -- COMMAND)\n", v);
		return 2;
	}
	if (w.dashdash && w.i < argc)
		a->cmd = &argv[w.i];
	if (!a->cmd == !a->pid) {
		fprintf(stderr, "latscope watch: give either a command after -- or --pid PID (see latscope watch --help)\n");
		return 2;
	}
	if (a->duration_ns && !a->pid) {
		fprintf(stderr, "latscope watch: --duration goes with --pid (a command is watched until it exits)\n");
		return 2;
	}
	return 0;
}

int cmd_watch(int argc, char **argv)
{
	struct ls_watch_args a;
	int rc = parse(argc, argv, &a);

	if (rc == -1)
		return 0;
	if (rc)
		return rc;
	return ls_watch_run(&a);
}
