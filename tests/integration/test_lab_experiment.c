/* Integration tests of `latscope lab` with bench and sim inside (root only): the TCP/TLS
 * experiment's figures at RTT 0.5 ms, and the ephemeral-port report of per-request runs. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "t_helpers.h"

static void need_lab_and_bench(void)
{
	if (!t_is_root())
		cr_skip_test("needs root: the lab creates network namespaces and TUN devices");
	if (access("/dev/net/tun", R_OK | W_OK))
		cr_skip_test("no /dev/net/tun here");
	const char *help[] = { "bench", "--help", NULL };
	if (t_run(help, NULL, NULL, 10) != 0)
		cr_skip_test("`latscope bench` is not built");
}

static double jnum(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* Runs the experiment; the JSON figures, and the printed table into *table. */
static cJSON *experiment(char **table)
{
	char json[128];
	snprintf(json, sizeof(json), "/tmp/latscope-lab-exp-%d.json", getpid());
	unlink(json);
	const char *argv[] = { "lab", "--experiment", "--rtt-us", "500", "--requests", "50", "--json", json, NULL };
	char *err = NULL;
	int rc = t_run(argv, table, &err, 170);
	cr_assert_eq(rc, 0, "lab --experiment exited %d: %s", rc, err ? err : "");
	free(err);
	char *text = t_read_file(json, NULL);
	unlink(json);
	cr_assert(text, "no JSON figures");
	cJSON *root = cJSON_Parse(text);
	free(text);
	cr_assert(root, "unreadable JSON figures");
	return root;
}

Test(lab_experiment, tcp_and_tls_round_trips_in_ttft, .timeout = 360)
{
	need_lab_and_bench();
	char *table = NULL;
	cJSON *root = experiment(&table);
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "ok"))) {
		/* 2 cores shared with everyone's tests: a noisy neighbour gets one more run */
		cr_log_warn("experiment off target once, running it again:\n%s", table);
		cJSON_Delete(root);
		free(table);
		root = experiment(&table);
	}
	double rtt = jnum(root, "rtt_us");
	cr_expect(fabs(rtt - 500) <= 100, "RTT 0.5 ms delivered as %.0f us\n%s", rtt, table);
	double rtt_ms = rtt / 1e3;
	const cJSON *configs = cJSON_GetObjectItemCaseSensitive(root, "configs");
	cr_assert_eq(cJSON_GetArraySize(configs), 3);
	const cJSON *c;
	cJSON_ArrayForEach(c, configs) {
		const char *name = cJSON_GetObjectItemCaseSensitive(c, "name")->valuestring;
		double expected = jnum(c, "expected_rtts");
		/* per-request: k RTTs more than reuse, once the part that is not RTT is set apart */
		double off = jnum(c, "off_ms");
		cr_expect(fabs(off) <= 0.2, "%s: a fresh connection adds %.2f RTTs, not %.0f (%.2f ms off)\n%s",
			  name, jnum(c, "rtts"), expected, off, table);
		/* the parts: connect = 1 RTT, TLS handshake = expected - 1 */
		double conn = jnum(c, "connect_rtts");
		cr_expect(fabs(conn - 1) * rtt_ms <= 0.2, "%s: connect is %.2f RTTs\n%s", name, conn, table);
		if (expected > 1) {
			double tls = jnum(c, "tls_rtts");
			cr_expect(fabs(tls - (expected - 1)) * rtt_ms <= 0.2, "%s: TLS handshake is %.2f RTTs\n%s",
				  name, tls, table);
		}
		/* The handshake's CPU is the per-request runs' CPU less the reuse runs', per request,
		 * averaged over the two RTTs (0 when that is noise below 0): recompute it from the
		 * runs' own figures, and it cannot exceed a whole per-request request's CPU. */
		double cpu_sum = 0, cpu_whole = 0;
		int cpu_runs = 0;
		for (int r = 0; r < 2; r++) {
			const cJSON *run = cJSON_GetObjectItemCaseSensitive(c, r ? "second_rtt" : "rtt");
			const cJSON *per_run = cJSON_GetObjectItemCaseSensitive(run, "per_request");
			const cJSON *reuse_run = cJSON_GetObjectItemCaseSensitive(run, "reuse");
			double n_per = jnum(per_run, "n");
			if (n_per > 0) {
				cpu_sum += (jnum(per_run, "cpu_ms") - jnum(reuse_run, "cpu_ms")) / n_per;
				cpu_runs++;
				if (jnum(per_run, "cpu_ms") / n_per > cpu_whole)
					cpu_whole = jnum(per_run, "cpu_ms") / n_per;
			}
		}
		double cpu_want = cpu_runs && cpu_sum > 0 ? cpu_sum / cpu_runs : 0;
		double cpu_got = jnum(c, "handshake_cpu_ms");
		cr_expect(fabs(cpu_got - cpu_want) < 1e-6, "%s: handshake CPU %.4f ms, the runs give %.4f ms", name,
			  cpu_got, cpu_want);
		cr_expect(cpu_got >= 0 && cpu_got <= cpu_whole, "%s: handshake CPU %.4f ms of a request's %.4f ms", name,
			  cpu_got, cpu_whole);
		if (expected > 1) /* a TLS handshake's CPU is well above the noise */
			cr_expect_gt(jnum(c, "handshake_cpu_ms"), 0.1, "%s: handshake CPU %.2f ms\n%s", name,
				     jnum(c, "handshake_cpu_ms"), table);
		/* every request counted, and reuse means no setup after the first request */
		const cJSON *at = cJSON_GetObjectItemCaseSensitive(c, "rtt");
		const cJSON *per = cJSON_GetObjectItemCaseSensitive(at, "per_request");
		const cJSON *reuse = cJSON_GetObjectItemCaseSensitive(at, "reuse");
		cr_expect_eq(jnum(per, "n"), 50, "%s per-request: %.0f of 50 requests", name, jnum(per, "n"));
		cr_expect_eq(jnum(per, "new_connections"), 50, "%s per-request reused a connection", name);
		cr_expect_eq(jnum(reuse, "n"), 50);
		cr_expect_leq(jnum(reuse, "new_connections"), 1, "%s reuse opened %.0f connections", name,
			      jnum(reuse, "new_connections"));
		cr_expect_eq(jnum(reuse, "reused_with_setup"), 0,
			     "%s reuse: connect/TLS not zero after the first request", name);
	}
	cr_expect(strstr(table, "TCP and TLS in TTFT"), "no table printed:\n%s", table);
	cJSON_Delete(root);
	free(table);
}

Test(lab_experiment, per_request_at_a_high_rate_reports_time_wait_and_warns, .timeout = 120)
{
	need_lab_and_bench();
	const char *per[] = { "lab", "--rtt-us", "500", "--sim-args", "--step-ms 2", "--",
			      "--random-input-len", "16", "--random-output-len", "2", "--num-prompts", "200",
			      "--request-rate", "1000", "--connection", "per-request", NULL };
	char *out = NULL, *err = NULL;
	int rc = t_run(per, &out, &err, 90);
	cr_assert_eq(rc, 0, "lab -- bench exited %d: %s\n%s", rc, err, out);
	const char *peak = strstr(out, "TIME_WAIT: peak ");
	cr_assert(peak, "no TIME_WAIT report:\n%s", out);
	long n = strtol(peak + strlen("TIME_WAIT: peak "), NULL, 10);
	cr_expect_geq(n, 190, "200 per-request connections left %ld sockets in TIME_WAIT", n);
	long per_request_n = n;
	/* 1,000 req/s x 60 s = 60,000 > 28,232 ports */
	cr_expect(strstr(err, "warning:") && strstr(err, "reuse connections"), "no warning before the run: %s", err);
	cr_expect(strstr(out, "60000") && strstr(out, "--connection reuse"), "no warning in the report:\n%s", out);
	free(out);
	free(err);

	const char *reuse[] = { "lab", "--rtt-us", "500", "--sim-args", "--step-ms 2", "--",
				"--random-input-len", "16", "--random-output-len", "2", "--num-prompts", "100",
				"--request-rate", "1000", "--connection", "reuse", NULL };
	rc = t_run(reuse, &out, &err, 90);
	cr_assert_eq(rc, 0, "lab -- bench (reuse) exited %d: %s", rc, err);
	peak = strstr(out, "TIME_WAIT: peak ");
	cr_assert(peak);
	n = strtol(peak + strlen("TIME_WAIT: peak "), NULL, 10);
	/* Kept alive, connections are opened for the requests in flight, not per request: fewer
	 * than half the per-request run's (>= 190 above; 37-55 seen here, loaded or not). */
	cr_expect(n * 2 < per_request_n, "reused connections left %ld sockets in TIME_WAIT, per-request %ld", n,
		  per_request_n);
	cr_expect(!strstr(out, "warning:") && !strstr(err, "warning:"), "a reuse run got the port warning");
	free(out);
	free(err);
}
