/* lab/lab_main.c — `latscope lab`: flags, the lab's lifetime (build, run one mode, tear down on
 * every path, SIGINT/SIGTERM included) and the modes that need no experiment logic. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>
#include "commands.h"
#include "base/opts.h"
#include "lab/lab.h"

enum {
	OPT_RTT, OPT_JITTER, OPT_RATE, OPT_SEED, OPT_QUEUE, OPT_SPIN, OPT_NO_RT, OPT_PORT,
	OPT_TLS, OPT_TLS_MAX, OPT_SIM_ARGS, OPT_NO_SIM, OPT_PING, OPT_CLIENT_SH, OPT_EXPERIMENT,
	OPT_REQUESTS, OPT_SECOND_RTT, OPT_JSON, OPT_KEEP, OPT_VERBOSE, OPT_HELP,
};

static const struct ls_opt opts[] = {
	{ "rtt-us", OPT_RTT, LS_ARG_ONE, "US",
	  "round-trip time to add, microseconds (default 500; 0 = just forward)", "delay line" },
	{ "jitter-us", OPT_JITTER, LS_ARG_ONE, "US",
	  "each packet's one-way delay varies by uniform +-US (order is kept)", NULL },
	{ "rate-mbit", OPT_RATE, LS_ARG_ONE, "R", "rate limit per direction, Mbit/s (default: none)", NULL },
	{ "seed", OPT_SEED, LS_ARG_ONE, "S", "jitter seed (default 1): the same seed gives the same delays", NULL },
	{ "queue-pkts", OPT_QUEUE, LS_ARG_ONE, "N",
	  "packets held per direction before drops (default 2048; drops counted)", NULL },
	{ "spin-us", OPT_SPIN, LS_ARG_ONE, "US",
	  "busy-wait this long before each due time instead of sleeping (100)", NULL },
	{ "no-realtime", OPT_NO_RT, LS_ARG_NONE, NULL, "do not ask for SCHED_FIFO for the forwarder thread", NULL },
	{ "port", OPT_PORT, LS_ARG_ONE, "P", "sim port in the server namespace (default 8000)", "server" },
	{ "tls", OPT_TLS, LS_ARG_NONE, NULL, "sim serves HTTPS (bench gets https:// and --insecure)", NULL },
	{ "tls-max", OPT_TLS_MAX, LS_ARG_ONE, "1.2|1.3", "highest TLS version the sim offers (implies --tls)", NULL },
	{ "sim-args", OPT_SIM_ARGS, LS_ARG_ONE, "\"...\"", "more `latscope sim` flags, e.g. \"--step-ms 5\"", NULL },
	{ "no-sim", OPT_NO_SIM, LS_ARG_NONE, NULL, "do not start the sim (with --client-sh)", NULL },
	{ "ping", OPT_PING, LS_ARG_ONE, "N", "N TCP connects client -> server: RTT median, p99, min, max", "modes" },
	{ "client-sh", OPT_CLIENT_SH, LS_ARG_ONE, "CMD",
	  "/bin/sh -c CMD in the client namespace, with LATSCOPE_LAB_URL,\n"
	  "LATSCOPE_LAB_SERVER, LATSCOPE_LAB_PORT, LATSCOPE_LAB_CLIENT_NS and\n"
	  "LATSCOPE_LAB_SERVER_NS (for `ip netns exec`) set", NULL },
	{ "experiment", OPT_EXPERIMENT, LS_ARG_NONE, NULL,
	  "the TCP/TLS experiment at --rtt-us and --second-rtt-us; prints\n"
	  "the table (docs/lab.md: TCP and TLS in your TTFT)", NULL },
	{ "requests", OPT_REQUESTS, LS_ARG_ONE, "N", "experiment: requests per configuration (default 50)", NULL },
	{ "second-rtt-us", OPT_SECOND_RTT, LS_ARG_ONE, "US",
	  "experiment: the second RTT; the slope between the two counts the\n"
	  "round trips, apart from the handshake's CPU time (default 10500)", NULL },
	{ "json", OPT_JSON, LS_ARG_ONE, "FILE", "experiment: write the figures as JSON", NULL },
	{ "keep", OPT_KEEP, LS_ARG_ONE, "DIR", "experiment: keep the bench record files in DIR", NULL },
	{ "verbose", OPT_VERBOSE, LS_ARG_NONE, NULL, "print the commands the lab runs", "other" },
	{ "v", OPT_VERBOSE, LS_ARG_NONE, NULL, NULL, NULL },
	{ "help", OPT_HELP, LS_ARG_NONE, NULL, "this text", NULL },
	{ "h", OPT_HELP, LS_ARG_NONE, NULL, NULL, NULL },
};
#define N_OPTS (sizeof(opts) / sizeof(opts[0]))

static void usage(FILE *out)
{
	fprintf(out,
"usage: latscope lab [flags] -- <bench flags>   run bench against sim across a real RTT\n"
"       latscope lab [flags] --ping N            measure the RTT the lab delivers\n"
"       latscope lab [flags] --client-sh CMD     run CMD in the client namespace (sim up)\n"
"       latscope lab [flags] --experiment        TCP and TLS in TTFT: plain / TLS 1.2 / TLS 1.3\n"
"                                                x per-request vs reused connections\n"
"\n"
"Builds two network namespaces, client (" LAB_NS_CLIENT_PREFIX "PID, " LAB_CLIENT_ADDR ") and server\n"
"(" LAB_NS_SERVER_PREFIX "PID, " LAB_SERVER_ADDR "), each with a TUN device, and moves every IP packet\n"
"between them after rtt/2 (a user-space delay line: the kernel has no netem). Runs `latscope sim`\n"
"in the server namespace and `latscope bench` in the client one, prints the bench report and\n"
"tears everything down (also on error, SIGINT and SIGTERM; labs of crashed runs are removed by\n"
"the next run). Needs root.\n");
	ls_opt_help(out, opts, N_OPTS);
	fprintf(out,
"\n"
"the bench mode:\n"
"  -- <bench flags>               `latscope bench` flags (vllm bench serve names); the lab adds\n"
"                                 --base-url (and --server-pid of the sim, so the probes watch both\n"
"                                 sides). Reports TIME_WAIT sockets (peak) and warns when\n"
"                                 rate x 60 s of TIME_WAIT exceeds the ephemeral port range\n");
}

static const char *set_switch(const char *v, int *dst)
{
	return ls_opt_parse_bool(v, dst) ? "takes no value (or =true / =false)" : NULL;
}

/* A whole-number flag into an int field. */
static int set_int(const char *v, double lo, double hi, int *dst)
{
	double x;
	if (ls_opt_parse_whole(v, lo, hi, &x))
		return -EINVAL;
	*dst = (int)x;
	return 0;
}

/* Applies one flag's value (v is "true" for a bare switch). NULL, or why the value is wrong. */
static const char *apply(void *ctx, const struct ls_opt *opt, const char *v)
{
	struct lab_opts *o = ctx;
	double x;
	int on;
	switch (opt->id) {
	case OPT_RTT:
		return ls_opt_parse_duration_ns(v, 1e3, 10e6, &o->rtt_ns) ? "must be microseconds 0..1e+07" : NULL;
	case OPT_JITTER:
		return ls_opt_parse_duration_ns(v, 1e3, 10e6, &o->delay.shape.jitter_ns) ?
			"must be microseconds 0..1e+07" : NULL;
	case OPT_RATE:
		return ls_opt_parse_double(v, 0.001, 1e6, &o->delay.shape.rate_mbit) ?
			"must be Mbit/s 0.001..1e+06" : NULL;
	case OPT_SEED:
		if (ls_opt_parse_whole(v, 0, 1e15, &x))
			return "must be a whole number 0..1e+15";
		o->delay.seed = (uint64_t)x;
		return NULL;
	case OPT_QUEUE:
		if (ls_opt_parse_whole(v, 16, 1 << 20, &x))
			return "must be a whole number 16..1048576";
		o->delay.queue_pkts = (uint32_t)x;
		return NULL;
	case OPT_SPIN:
		return ls_opt_parse_duration_ns(v, 1e3, 10000, &o->delay.spin_ns) ? "must be microseconds 0..10000" : NULL;
	case OPT_NO_RT:
		if (ls_opt_parse_bool(v, &on))
			return "takes no value (or =true / =false)";
		o->delay.realtime = !on;
		return NULL;
	case OPT_PORT: return set_int(v, 1, 65535, &o->port) ? "must be a port 1..65535" : NULL;
	case OPT_TLS: return set_switch(v, &o->tls);
	case OPT_TLS_MAX:
		if (strcmp(v, "1.2") && strcmp(v, "1.3"))
			return "must be 1.2 or 1.3";
		o->tls = 1;
		o->tls_max = v;
		return NULL;
	case OPT_SIM_ARGS: o->sim_args = v; return NULL;
	case OPT_NO_SIM: return set_switch(v, &o->no_sim);
	case OPT_PING: return set_int(v, 1, 100000, &o->ping_n) ? "must be a whole number 1..100000" : NULL;
	case OPT_CLIENT_SH: o->client_sh = v; return NULL;
	case OPT_EXPERIMENT: return set_switch(v, &o->experiment);
	case OPT_REQUESTS: return set_int(v, 5, 100000, &o->requests) ? "must be a whole number 5..100000" : NULL;
	case OPT_SECOND_RTT:
		return ls_opt_parse_double(v, 0, 10e6, &o->second_rtt_us) ? "must be microseconds 0..1e+07" : NULL;
	case OPT_JSON: o->json_path = v; return NULL;
	case OPT_KEEP: o->keep_dir = v; return NULL;
	case OPT_VERBOSE: return set_switch(v, &o->verbose);
	}
	return "unknown option";
}

/* The bench flags after "--": the lab owns where the server is. 0 or 2. */
static int check_bench_flags(const struct lab_opts *o)
{
	static const char *const owned[] = { "--base-url", "--host", "--port" };
	for (int i = 0; i < o->bench_argc; i++) {
		for (size_t k = 0; k < sizeof(owned) / sizeof(owned[0]); k++) {
			size_t len = strlen(owned[k]);
			if (!strncmp(o->bench_argv[i], owned[k], len) &&
			    (o->bench_argv[i][len] == 0 || o->bench_argv[i][len] == '=')) {
				fprintf(stderr, "latscope lab: the lab sets the bench's %s (the sim at %s:%d); "
					"drop it from the bench flags\n", owned[k], LAB_SERVER_ADDR, o->port);
				return 2;
			}
		}
	}
	return 0;
}

/* Exactly one mode, and an experiment's two RTTs far enough apart. 0 or 2. */
static int check_mode(const struct lab_opts *o)
{
	int modes = (o->ping_n > 0) + !!o->client_sh + o->experiment + (o->bench_argc > 0);
	if (modes != 1) {
		fprintf(stderr, "latscope lab: %s: give one of -- <bench flags>, --ping N, --client-sh CMD "
			"or --experiment (see latscope lab --help)\n", modes ? "more than one mode" : "nothing to run");
		return 2;
	}
	if (o->experiment && o->second_rtt_us * 1e3 < (double)o->rtt_ns + 200e3) {
		fprintf(stderr, "latscope lab: --second-rtt-us must exceed --rtt-us by 200 us or more (the "
			"slope between the two counts the round trips)\n");
		return 2;
	}
	return 0;
}

/* Fills o from argv: -1 to run, 0 after --help, 2 on a usage error. */
static int parse_args(int argc, char **argv, struct lab_opts *o)
{
	struct ls_opt_walk w;
	ls_opt_walk_init(&w, "latscope lab", opts, N_OPTS, argc, argv);
	const char *v;
	int step = ls_opt_flags(&w, OPT_HELP, apply, o, &v);
	if (step == LS_OPT_HELP) {
		usage(stdout);
		return 0;
	}
	if (step < 0)
		return 2;
	if (step == LS_OPT_ARG) {
		fprintf(stderr, "latscope lab: unexpected '%s': bench flags go after -- (see latscope lab --help)\n", v);
		return 2;
	}
	o->bench_argc = argc - w.i;
	o->bench_argv = argv + w.i;
	if (check_bench_flags(o) || check_mode(o))
		return 2;
	return -1; /* parsed: run */
}

/* Value of a bench flag given as "--name V" or "--name=V", else NULL. */
static const char *bench_flag(const struct lab_opts *o, const char *name)
{
	size_t len = strlen(name);
	for (int i = 0; i < o->bench_argc; i++) {
		const char *a = o->bench_argv[i];
		if (!strncmp(a, name, len) && a[len] == '=')
			return a + len + 1;
		if (!strcmp(a, name))
			return i + 1 < o->bench_argc ? o->bench_argv[i + 1] : "";
	}
	return NULL;
}

static void print_rtt(const struct lab_opts *o, const struct lab_rtt *r)
{
	printf("lab: RTT target %.0f us; delivered median %.0f us, p99 %.0f us, min %.0f us, max %.0f us "
	       "(%s, %d TCP connects %s -> %s); connect() returned after median %.0f us, p99 %.0f us\n",
	       (double)o->rtt_ns / 1e3, r->median_us, r->p99_us, r->min_us, r->max_us,
	       r->kernel ? "kernel RTT samples" : "connect() times", r->n, LAB_CLIENT_ADDR,
	       LAB_SERVER_ADDR, r->connect_median_us, r->connect_p99_us);
}

static int mode_bench(struct lab_ctx *c)
{
	const struct lab_opts *o = c->o;
	struct lab_rtt rtt;
	if (lab_ping(&c->ns, 20, &rtt) == 0)
		print_rtt(o, &rtt);
	pid_t sim = lab_sim_start(c, o->tls, o->tls_max, NULL, "run");
	if (sim < 0)
		return 1;
	struct lab_argv f = { .n = 0 };
	lab_argv_add(&f, "--base-url");
	lab_argv_addf(&f, "%s://%s:%d", o->tls ? "https" : "http", LAB_SERVER_ADDR, o->port);
	if (o->tls && !bench_flag(o, "--insecure"))
		lab_argv_add(&f, "--insecure"); /* the sim's certificate is self-signed */
	/* Probes on both sides: the sim is our child, in our pid namespace. */
	if (!bench_flag(o, "--server-pid") && !bench_flag(o, "--server-comm")) {
		lab_argv_add(&f, "--server-pid");
		lab_argv_addf(&f, "%d", (int)sim);
	}
	for (int i = 0; i < o->bench_argc; i++)
		lab_argv_add(&f, o->bench_argv[i]);

	/* Ephemeral ports, before the run: the arithmetic from the flags and the namespace. */
	char text[64];
	int lo = 32768, hi = 60999;
	if (lab_read_in(&c->ns, LAB_CLIENT, "/proc/sys/net/ipv4/ip_local_port_range", text, sizeof(text)) > 0)
		lab_parse_port_range(text, &lo, &hi);
	const char *rate_s = bench_flag(o, "--request-rate"), *conn = bench_flag(o, "--connection");
	const char *prompts_s = bench_flag(o, "--num-prompts");
	double rate = rate_s ? strtod(rate_s, NULL) : 0;
	if (!isfinite(rate))
		rate = 0;
	int per_request = conn && !strcmp(conn, "per-request");
	char msg[512];
	int warned = lab_port_warning(rate, per_request, lo, hi, msg, sizeof(msg));
	if (warned)
		fprintf(stderr, "lab: %s\n", msg);

	long tw_peak[2] = { 0, 0 };
	double wall_s = 0;
	int rc = f.overflow ? -1 : lab_bench_run(c, f.v, f.n, -1, tw_peak, &wall_s, NULL);
	lab_argv_free(&f);
	lab_sim_stop(c, sim);
	printf("lab: TIME_WAIT: peak %ld sockets in the client namespace, %ld in the server's (sampled "
	       "every 100 ms; the side that closes first holds them); client ephemeral ports %d-%d (%d)\n",
	       tw_peak[LAB_CLIENT], tw_peak[LAB_SERVER], lo, hi, hi - lo + 1);
	/* No fixed rate: judge by the rate the run reached. */
	double reached = prompts_s && wall_s > 0 ? strtod(prompts_s, NULL) / wall_s : 0;
	if (!warned && rate <= 0 && lab_port_warning(reached, per_request, lo, hi, msg, sizeof(msg)))
		printf("lab: %s\n", msg);
	else if (warned)
		printf("lab: %s\n", msg);
	if (rc < 0)
		fprintf(stderr, "lab: `latscope bench` did not finish\n");
	return rc == 0 ? 0 : 1;
}

static int mode_client_sh(struct lab_ctx *c)
{
	const struct lab_opts *o = c->o;
	pid_t sim = 0;
	if (!o->no_sim && (sim = lab_sim_start(c, o->tls, o->tls_max, NULL, "sh")) < 0)
		return 1;
	char url[64], port[16];
	snprintf(url, sizeof(url), "%s://%s:%d", o->tls ? "https" : "http", LAB_SERVER_ADDR, o->port);
	snprintf(port, sizeof(port), "%d", o->port);
	setenv("LATSCOPE_LAB_URL", url, 1);
	setenv("LATSCOPE_LAB_SERVER", LAB_SERVER_ADDR, 1);
	setenv("LATSCOPE_LAB_PORT", port, 1);
	setenv("LATSCOPE_LAB_CLIENT_NS", c->ns.name[LAB_CLIENT], 1);
	setenv("LATSCOPE_LAB_SERVER_NS", c->ns.name[LAB_SERVER], 1); /* ip netns exec ... */
	char *argv[] = { "/bin/sh", "-c", (char *)o->client_sh, NULL };
	fflush(stdout);
	pid_t pid = lab_spawn(&c->ns, LAB_CLIENT, argv, &c->orig_mask, -1, NULL);
	int status = -1;
	while (pid > 0) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid || (r < 0 && errno != EINTR))
			break;
		if (lab_sleep_ms(50)) {
			status = lab_stop_child(pid, SIGTERM, 3000);
			break;
		}
	}
	lab_sim_stop(c, sim);
	return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

static void remove_dir(const char *path)
{
	DIR *dir = opendir(path);
	if (!dir)
		return;
	struct dirent *e;
	while ((e = readdir(dir))) {
		if (e->d_name[0] == '.')
			continue;
		char p[512];
		snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
		unlink(p);
	}
	closedir(dir);
	rmdir(path);
}

static int run_lab(const struct lab_opts *o)
{
	if (geteuid() != 0) {
		fprintf(stderr, "latscope lab: needs root (it creates network namespaces and TUN devices); "
			"run it as root, e.g. sudo latscope lab ...\n");
		return 2;
	}
	struct lab_ctx c = { .o = o };
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	/* Blocked in every thread from here (the forwarder inherits it): the signals only end
	 * lab_sleep_ms, so every path reaches the teardown below. */
	if (sigprocmask(SIG_BLOCK, &stop, &c.orig_mask) < 0)
		return 1;
	lab_interrupted = 0;
	snprintf(c.tmp_dir, sizeof(c.tmp_dir), "/tmp/latscope-lab.XXXXXX");
	if (!mkdtemp(c.tmp_dir)) {
		fprintf(stderr, "lab: mkdtemp /tmp: %s\n", strerror(errno));
		sigprocmask(SIG_SETMASK, &c.orig_mask, NULL);
		return 1;
	}
	int rc = 1;
	lab_ns_clean_stale(1);
	if (lab_ns_create(&c.ns, getpid()) < 0)
		goto out;
	if (lab_delay_start(&c.delay, &c.ns, &o->delay) < 0)
		goto out_ns;
	if (o->verbose)
		fprintf(stderr, "lab: %s (%s) <-> %s (%s), RTT %.0f us, scratch %s\n", c.ns.name[LAB_CLIENT],
			LAB_CLIENT_ADDR, c.ns.name[LAB_SERVER], LAB_SERVER_ADDR, (double)o->rtt_ns / 1e3,
			c.tmp_dir);
	if (lab_sleep_ms(0))
		rc = 1;
	else if (o->ping_n > 0) {
		struct lab_rtt rtt;
		rc = lab_ping(&c.ns, o->ping_n, &rtt) < 0 ? 1 : 0;
		if (!rc)
			print_rtt(o, &rtt);
	} else if (o->client_sh) {
		rc = mode_client_sh(&c);
	} else if (o->experiment) {
		rc = lab_experiment(&c);
	} else {
		rc = mode_bench(&c);
	}
	struct lab_delay_stats st;
	lab_delay_stop(&c.delay);
	lab_delay_snapshot(&c.delay, &st);
	if (!o->experiment || o->verbose)
		lab_delay_print(stdout, &st);
out_ns:
	fflush(stdout);
	lab_ns_destroy(&c.ns);
out:
	remove_dir(c.tmp_dir);
	lab_sleep_ms(0);
	if (lab_interrupted) {
		fprintf(stderr, "lab: interrupted; the lab is torn down\n");
		rc = 1;
	}
	sigprocmask(SIG_SETMASK, &c.orig_mask, NULL);
	return rc;
}

int cmd_lab(int argc, char **argv)
{
	struct lab_opts o = {
		.delay = { .seed = 1, .queue_pkts = 2048, .spin_ns = 100000, .realtime = 1 },
		.rtt_ns = 500000,
		.port = 8000,
		.requests = 50,
		.second_rtt_us = 10500,
	};
	int rc = parse_args(argc, argv, &o);
	if (rc >= 0)
		return rc;
	o.delay.shape.one_way_ns = o.rtt_ns / 2;
	return run_lab(&o);
}
