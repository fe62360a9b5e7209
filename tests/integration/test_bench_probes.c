/* `latscope bench` with the probes wired in, end to end against `latscope sim`: as root the
 * report has "Where the latency went", the attribution JSONL beside --record sums exactly to
 * each request's TTFT and E2EL as the record file gives them, --trace writes trace-event JSON;
 * as an unprivileged user (setuid nobody) the bench still runs and says why the probes are off,
 * and --probes on refuses to run. */
#include <criterion/criterion.h>
#include <math.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "attribution/attribution.h"
#include "cmd/bench_probes.h"
#include "config/profile.h"
#include "metrics/metrics.h"
#include "report/record_file.h"
#include "t_helpers.h"

#define NOBODY 65534

static void need_root_and_btf(void)
{
	if (!t_is_root())
		cr_skip_test("probes need root (running as uid %d)", (int)geteuid());
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
		cr_skip_test("no /sys/kernel/btf/vmlinux: the tp_btf probes need kernel BTF");
}

/* Sum of every "<part>_ns" of a parts object but total_ns (a gap also has "frame"). */
static double parts_sum(const cJSON *parts)
{
	double sum = 0;

	for (const cJSON *e = parts ? parts->child : NULL; e; e = e->next)
		if (strcmp(e->string, "total_ns") && strstr(e->string, "_ns") && cJSON_IsNumber(e))
			sum += e->valuedouble;
	return sum;
}

static double num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

Test(bench_probes, root_report_record_and_trace, .timeout = 90)
{
	need_root_and_btf();
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "2", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, extra), 0);
	char dir[] = "/tmp/latscope-bp-XXXXXX", record[96], attr[96], trace[96], pid[16];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(record, sizeof(record), "%s/run.jsonl", dir);
	snprintf(attr, sizeof(attr), "%s/run.attribution.jsonl", dir);
	snprintf(trace, sizeof(trace), "%s/trace.json", dir);
	snprintf(pid, sizeof(pid), "%d", (int)sim.pid);
	const char *argv[] = { "bench", "--base-url", sim.url, "--model", "latscope-sim", "--random-input-len", "16",
			       "--random-output-len", "8", "--ignore-eos", "--num-prompts", "24", "--num-warmups", "2",
			       "--request-rate", "300", "--max-concurrency", "4", "--connection", "per-request",
			       "--disable-tqdm", "--probes", "on", "--server-pid", pid, "--record", record,
			       "--trace", trace, "--ready-check-timeout-sec", "5", NULL };
	char *out = NULL, *err = NULL;
	int rc = t_run(argv, &out, &err, 60);
	t_sim_stop(&sim);
	cr_assert_eq(rc, 0, "bench failed:\n%s\n%s", out, err);
	cr_expect(strstr(out, "Where the latency went"), "%s", out);
	cr_expect(!strstr(out, "probes off"), "%s", out);
	cr_expect(strstr(out, "client delay per frame"), "%s", out);
	/* A sleeping loop's client delay above 50 us at P50 comes with what it is made of. */
	const char *cd = strstr(out, "client delay per frame");
	double cd50 = -1;
	cr_assert(cd && (cd = strstr(cd, "P50 ")) && sscanf(cd, "P50 %lf ms", &cd50) == 1, "%s", out);
	int hint_undecided = fabs(cd50 - 0.050) <= 0.0005; /* the printed P50 is rounded to the us */
	if (!hint_undecided)
		cr_expect_eq(strstr(out, "waking it costs") != NULL, cd50 > 0.050, "P50 %.3f ms; hint %s", cd50,
			     strstr(out, "waking it costs") ? "printed" : "absent");
	/* The harness's cost per frame, split into its own code (user) and the kernel's. */
	const char *hc = strstr(out, "harness cost"), *pf = hc ? strstr(hc, "us per request, ") : NULL;
	double per_frame = -1, user = -1, kern = -1;
	cr_assert(pf && sscanf(pf, "us per request, %lf us per frame (user %lf + kernel %lf)", &per_frame, &user,
			       &kern) == 3, "%s", out);
	cr_expect(user >= 0 && kern >= 0 && fabs(user + kern - per_frame) <= 0.02, "%.2f = %.2f + %.2f", per_frame,
		  user, kern);
	/* The server was watched: its part is split out of TTFT. */
	cr_expect(strstr(out, "  server "), "%s", out);

	/* Record file (the harness's own stamps) against the attribution JSONL. */
	struct ls_run run;
	cr_assert_eq(ls_record_load(record, &run, NULL), 0);
	cr_assert_eq(run.n_requests, 26);
	struct ls_profile honest; /* the rules bench attributes by */
	cr_assert_eq(ls_profile_builtin("honest", &honest), 0);
	struct ls_read_rules rules = honest.read;
	char *text = t_read_file(attr, NULL);
	cr_assert_not_null(text, "no %s", attr);
	size_t lines = 0, with_server = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"), lines++) {
		cJSON *o = cJSON_Parse(line);
		cr_assert_not_null(o, "line %zu is not JSON", lines + 1);
		if (!lines) {
			cr_expect(cJSON_GetObjectItemCaseSensitive(o, "latscope_attribution"), "header: %s", line);
			cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "clock")), "scheduled");
			cJSON_Delete(o);
			continue;
		}
		double id = num(o, "id");
		const struct ls_request *r = NULL;
		for (size_t i = 0; i < run.n_requests; i++)
			if ((double)run.requests[i].id == id)
				r = &run.requests[i];
		cr_assert_not_null(r, "attribution of unknown request %g", id);
		struct ls_req_view v;
		cr_assert(ls_request_view(r, &rules, &v), "request %g not ok", id);
		uint64_t origin = ls_origin_ns(r, LS_ORIGIN_SCHEDULED);
		const cJSON *ttft = cJSON_GetObjectItemCaseSensitive(o, "ttft");
		const cJSON *e2el = cJSON_GetObjectItemCaseSensitive(o, "e2el");
		cr_assert(ttft && e2el, "request %g has no windows: %s", id, line);
		/* Exact: ns integers well under 2^53 survive JSON doubles. */
		cr_expect_eq(num(ttft, "total_ns"), (double)(v.first_ns - origin), "request %g TTFT", id);
		cr_expect_eq(num(e2el, "total_ns"), (double)(v.end_ns - origin), "request %g E2EL", id);
		cr_expect_eq(parts_sum(ttft), num(ttft, "total_ns"), "request %g TTFT parts", id);
		cr_expect_eq(parts_sum(e2el), num(e2el, "total_ns"), "request %g E2EL parts", id);
		const cJSON *itl = cJSON_GetObjectItemCaseSensitive(o, "itl");
		cr_expect_eq(cJSON_GetArraySize(itl), 7, "request %g: 8 tokens, 7 gaps", id);
		for (const cJSON *g = itl ? itl->child : NULL; g; g = g->next)
			cr_expect_eq(parts_sum(g), num(g, "total_ns"), "request %g gap", id);
		with_server += num(ttft, "server_ns") > 0 && num(ttft, "network_ns") > 0;
		cJSON_Delete(o);
	}
	cr_expect_eq(lines, 27, "header + one line per request (warmups too)");
	cr_expect_geq(with_server, 20, "server and network split for most requests (%zu of 26)", with_server);
	free(text);
	ls_run_free(&run);

	/* The trace parses and has the request phases. */
	text = t_read_file(trace, NULL);
	cr_assert_not_null(text);
	cJSON *t = cJSON_Parse(text);
	cr_assert_not_null(t, "trace is not JSON");
	const cJSON *evs = cJSON_GetObjectItemCaseSensitive(t, "traceEvents");
	cr_assert(cJSON_IsArray(evs) && cJSON_GetArraySize(evs) > 26 * 3, "traceEvents");
	size_t spans = 0;
	for (const cJSON *e = evs->child; e; e = e->next)
		spans += !strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "ph")), "X");
	cr_expect_gt(spans, 26, "complete events for request phases");
	cJSON_Delete(t);
	free(text);
	free(out);
	free(err);
	unlink(record);
	unlink(attr);
	unlink(trace);
	rmdir(dir);
	/* Last, so every other check above still ran (and a failure above still fails the test). */
	if (hint_undecided)
		cr_skip_test("client delay P50 %.3f ms sits on the 50 us threshold: whether the wake-up hint "
			     "belongs cannot be told from the rounded figure", cd50);
}

/* Runs latscope bench as uid/gid nobody (from root), or as is when not root. */
static int run_unprivileged(const char *const *args, char **out, char **err)
{
	char out_path[] = "/tmp/latscope-bp-out.XXXXXX", err_path[] = "/tmp/latscope-bp-err.XXXXXX";
	int out_fd = mkstemp(out_path), err_fd = mkstemp(err_path);
	const char *argv[64];
	size_t n = 0;

	cr_assert(out_fd >= 0 && err_fd >= 0);
	unlink(out_path);
	unlink(err_path);
	argv[n++] = t_bin();
	for (size_t i = 0; args[i] && n < 63; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(out_fd, 1);
		dup2(err_fd, 2);
		if (geteuid() == 0 && (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY)))
			_exit(126);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	int status = 0, done = 0;
	for (int i = 0; i < 6000 && !(done = waitpid(pid, &status, WNOHANG) == pid); i++)
		usleep(10000);
	if (!done) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	*out = calloc(1, 65536);
	*err = calloc(1, 65536);
	cr_assert(*out && *err);
	cr_assert_geq(pread(out_fd, *out, 65535, 0), 0);
	cr_assert_geq(pread(err_fd, *err, 65535, 0), 0);
	close(out_fd);
	close(err_fd);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Test(bench_probes, unprivileged_runs_and_says_why, .timeout = 90)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "2", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, extra), 0);
	const char *argv[] = { "bench", "--base-url", sim.url, "--model", "latscope-sim", "--random-input-len", "16",
			       "--random-output-len", "4", "--ignore-eos", "--num-prompts", "8", "--num-warmups", "0",
			       "--request-rate", "200", "--disable-tqdm", "--ready-check-timeout-sec", "5", NULL };
	char *out, *err;
	int rc = run_unprivileged(argv, &out, &err);
	cr_expect_eq(rc, 0, "bench as nobody (--probes auto) must still run:\n%s\n%s", out, err);
	cr_expect(strstr(out, "Successful requests:                     8"), "%s", out);
	cr_expect(strstr(out, "Where the latency went"), "%s", out);
	int btf = access("/sys/kernel/btf/vmlinux", R_OK) == 0;
	cr_expect(strstr(out, "probes off: ") && (!btf || strstr(out, "root")), "the report says why: %s", out);
	cr_expect(strstr(err, "probes off: "), "%s", err);
	free(out);
	free(err);

	const char *on[] = { "bench", "--base-url", sim.url, "--model", "latscope-sim", "--num-prompts", "2",
			     "--random-input-len", "8", "--random-output-len", "2", "--probes", "on", "--disable-tqdm",
			     "--ready-check-timeout-sec", "5", NULL };
	rc = run_unprivileged(on, &out, &err);
	t_sim_stop(&sim);
	cr_expect_eq(rc, 1, "--probes on without root exits 1:\n%s\n%s", out, err);
	cr_expect(strstr(err, "--probes on") && (!btf || strstr(err, "root")), "a clear line: %s", err);
	cr_expect(!strstr(out, "Starting main benchmark run"), "nothing was sent: %s", out);
	free(out);
	free(err);
}
