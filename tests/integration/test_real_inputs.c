/* test_real_inputs.c — inputs just outside the everyday path (the "real inputs" issue): URLs and
 * TLS setups that can never work fail at once with the fix, probes of a faulty server are
 * retried instead of guessed, the API key goes on every request, a wrong base URL stops at
 * the initial test request, a run with no success exits 3, and output files are checked before
 * the run and are whole or absent after it. Against `latscope sim` and a tiny server here. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "t_helpers.h"

TestSuite(real_inputs, .timeout = 60);

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs bench with the common flags and extra ones; returns the exit code, out/err captured. */
static int bench(const char *url, const char *const *extra, char **out, char **err, double *secs)
{
	const char *argv[48] = { "bench", "--base-url", url, "--model", "m", "--num-prompts", "4",
				 "--random-input-len", "16", "--random-output-len", "4", "--probes", "off",
				 "--disable-tqdm" };
	size_t n = 14;
	for (size_t i = 0; extra && extra[i] && n < 47; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	double t0 = now_s();
	int rc = t_run(argv, out, err, 60);
	if (secs)
		*secs = now_s() - t0;
	return rc;
}

Test(real_inputs, hopeless_urls_fail_at_once_with_the_fix)
{
	const struct { const char *url, *says; } cases[] = {
		{ "http://127.0.0.1:99999", "a port from 1 to 65535" },
		{ "htp://127.0.0.1:8000", "http:// or https://" },
		{ "", "--base-url as http://HOST:PORT" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out = NULL, *err = NULL;
		double secs;
		int rc = bench(cases[i].url, NULL, &out, &err, &secs);
		cr_expect_eq(rc, 1, "'%s': exit %d", cases[i].url, rc);
		cr_expect_lt(secs, 2.0, "'%s' took %.2f s", cases[i].url, secs);
		cr_expect(err && strstr(err, cases[i].says), "'%s': %s", cases[i].url, err);
		free(out);
		free(err);
	}
}

Test(real_inputs, tls_that_cannot_verify_or_is_not_tls_fails_at_once)
{
	struct t_sim tls, plain;
	const char *tls_flags[] = { "--tls", NULL };
	cr_assert_eq(t_sim_start(&tls, 1, tls_flags), 0);
	cr_assert_eq(t_sim_start(&plain, 0, NULL), 0);
	char plain_as_https[160];
	snprintf(plain_as_https, sizeof(plain_as_https), "https://127.0.0.1:%d", plain.port);
	const struct { const char *url, *says; } cases[] = {
		{ tls.url, "--insecure" },                    /* self-signed: name both fixes */
		{ plain_as_https, "use http://" },           /* TLS to an HTTP server */
	};
	for (size_t i = 0; i < 2; i++) {
		char *out = NULL, *err = NULL;
		double secs;
		int rc = bench(cases[i].url, NULL, &out, &err, &secs);
		cr_expect_eq(rc, 1, "%s: exit %d", cases[i].url, rc);
		cr_expect_lt(secs, 2.0, "%s took %.2f s", cases[i].url, secs);
		cr_expect(err && strstr(err, cases[i].says), "%s: %s", cases[i].url, err);
		free(out);
		free(err);
	}
	t_sim_stop(&tls);
	t_sim_stop(&plain);
}

/* Counts "prompt token ids must be integers within the vocabulary" in a text. */
static int vocab_failures(const char *text)
{
	int n = 0;
	for (const char *p = text; p && (p = strstr(p, "within the vocabulary")); p++)
		n++;
	return n;
}

/* docs/reliability.md's fault storm: connections closed at accept also hit the vocabulary probe. */
Test(real_inputs, fault_storm_probes_retry_and_never_guess_the_vocabulary, .timeout = 120)
{
	const char *extra_sim[] = { "--fail-rate", "0.2", "--fail-kind", "mixed", "--seed", "7", NULL };
	struct t_sim sim;
	cr_assert_eq(t_sim_start(&sim, 0, extra_sim), 0);
	const char *extra[] = { "--num-prompts", "200", "--max-concurrency", "64", "--request-timeout", "2",
				"--skip-initial-test", NULL };
	char *out = NULL, *err = NULL;
	int rc = bench(sim.url, extra, &out, &err, NULL);
	cr_expect(rc == 0 || rc == 1, "exit %d: %s", rc, err);
	cr_expect_eq(vocab_failures(err), 0, "the vocabulary was guessed: %.600s", err);
	int ok = 0;
	const char *line = out ? strstr(out, "Successful requests:") : NULL;
	cr_assert(line, "%s", out);
	sscanf(line, "Successful requests: %d", &ok);
	cr_expect_gt(ok, 100, "only %d of 200 succeeded at a 20%% fault rate", ok);
	free(out);
	free(err);
	t_sim_stop(&sim);
}

/* A tiny HTTP server: answers every request 401 (or 404 for the generation endpoint when
 * the path is wrong) and remembers whether each carried the Authorization header. */
struct keyserver {
	int fd, port;
	int requests, with_key;
	char paths[512];
	pthread_t thread;
};

static void *keyserver_main(void *arg)
{
	struct keyserver *ks = arg;
	for (;;) {
		int c = accept(ks->fd, NULL, NULL);
		if (c < 0)
			return NULL;
		char buf[8192];
		ssize_t n = recv(c, buf, sizeof(buf) - 1, 0);
		if (n > 0) {
			buf[n] = 0;
			ks->requests++;
			ks->with_key += strstr(buf, "\r\nAuthorization: Bearer sk-test\r\n") != NULL;
			char *sp = strchr(buf, ' '), *sp2 = sp ? strchr(sp + 1, ' ') : NULL;
			if (sp && sp2 && strlen(ks->paths) + (size_t)(sp2 - sp) + 2 < sizeof(ks->paths)) {
				strncat(ks->paths, sp + 1, (size_t)(sp2 - sp - 1));
				strcat(ks->paths, ";");
			}
			const char *resp = "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
					   "Content-Length: 2\r\nConnection: close\r\n\r\n{}";
			ssize_t w = send(c, resp, strlen(resp), MSG_NOSIGNAL);
			(void)w;
		}
		close(c);
	}
}

static void keyserver_start(struct keyserver *ks)
{
	memset(ks, 0, sizeof(*ks));
	ks->fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(ks->fd, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	cr_assert_eq(bind(ks->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(ks->fd, 16), 0);
	cr_assert_eq(getsockname(ks->fd, (struct sockaddr *)&a, &len), 0);
	ks->port = ntohs(a.sin_port);
	cr_assert_eq(pthread_create(&ks->thread, NULL, keyserver_main, ks), 0);
}

static void keyserver_stop(struct keyserver *ks)
{
	shutdown(ks->fd, SHUT_RDWR);
	close(ks->fd);
	pthread_join(ks->thread, NULL);
}

Test(real_inputs, api_key_on_every_request_and_401_named)
{
	struct keyserver ks;
	keyserver_start(&ks);
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", ks.port);
	setenv("OPENAI_API_KEY", "sk-test", 1);
	/* No --model: the model lookup meets the 401 and must say so. */
	const char *argv[] = { "bench", "--base-url", url, "--num-prompts", "2", "--probes", "off", NULL };
	char *out = NULL, *err = NULL;
	int rc = t_run(argv, &out, &err, 30);
	unsetenv("OPENAI_API_KEY");
	keyserver_stop(&ks);
	cr_expect_eq(rc, 1, "exit %d", rc);
	cr_expect(err && strstr(err, "HTTP 401") && strstr(err, "OPENAI_API_KEY"), "%s", err);
	cr_expect_gt(ks.requests, 0);
	cr_expect_eq(ks.with_key, ks.requests, "%d of %d requests carried the key (%s)", ks.with_key,
		     ks.requests, ks.paths);
	free(out);
	free(err);
}

Test(real_inputs, wrong_base_url_stops_at_the_initial_test_request)
{
	struct t_sim sim;
	cr_assert_eq(t_sim_start(&sim, 0, NULL), 0);
	char url[160];
	snprintf(url, sizeof(url), "%s/v1", sim.url); /* -> /v1/v1/completions */
	char *out = NULL, *err = NULL;
	double secs;
	int rc = bench(url, NULL, &out, &err, &secs);
	cr_expect_eq(rc, 1, "exit %d", rc);
	cr_expect_lt(secs, 5.0);
	cr_expect(err && strstr(err, "initial test request") && strstr(err, "without /v1"), "%s", err);
	cr_expect(!out || !strstr(out, "Starting main benchmark run"), "the run went on: %s", out);
	free(out);
	free(err);
	/* The same run with the test skipped goes on, every request fails, and that is exit 3. */
	const char *skip[] = { "--skip-initial-test", NULL };
	rc = bench(url, skip, &out, &err, NULL);
	cr_expect_eq(rc, 3, "exit %d: %s", rc, err);
	cr_expect(err && strstr(err, "no request succeeded"), "%s", err);
	free(out);
	free(err);
	/* A good URL: the test request runs, is said, and is not counted. */
	rc = bench(sim.url, NULL, &out, &err, NULL);
	cr_expect_eq(rc, 0, "exit %d: %s", rc, err);
	cr_expect(out && strstr(out, "Initial test run completed."), "%s", out);
	cr_expect(out && strstr(out, "Successful requests:                     4"), "%s", out);
	free(out);
	free(err);
	t_sim_stop(&sim);
}

Test(real_inputs, result_dir_is_created_and_a_bad_path_fails_before_the_run)
{
	struct t_sim sim;
	cr_assert_eq(t_sim_start(&sim, 0, NULL), 0);
	char dir[] = "/tmp/latscope-real-XXXXXX";
	cr_assert(mkdtemp(dir));
	char nested[256];
	snprintf(nested, sizeof(nested), "%s/a/b", dir);
	const char *save[] = { "--save-result", "--result-dir", nested, "--result-filename", "r.json", NULL };
	char *out = NULL, *err = NULL;
	int rc = bench(sim.url, save, &out, &err, NULL);
	cr_expect_eq(rc, 0, "exit %d: %s", rc, err);
	char path[300];
	snprintf(path, sizeof(path), "%s/r.json", nested);
	struct stat st;
	cr_expect_eq(stat(path, &st), 0, "%s was not written", path);
	free(out);
	free(err);
	/* Under a regular file: no directory can be made there; said before any request. */
	char under_file[300];
	snprintf(under_file, sizeof(under_file), "%s/r.json/x", nested);
	const char *bad[] = { "--save-result", "--result-dir", under_file, NULL };
	double secs;
	rc = bench(sim.url, bad, &out, &err, &secs);
	cr_expect_eq(rc, 1, "exit %d", rc);
	cr_expect(err && strstr(err, "--save-result") && strstr(err, "cannot write there"), "%s", err);
	cr_expect(!out || !strstr(out, "Starting main benchmark run"), "the run started: %s", out);
	free(out);
	free(err);
	t_remove_tree(dir);
	t_sim_stop(&sim);
}

/* A full disk: a 64 KiB tmpfs already full. The text report is printed whole, the result and
 * trace are not left half-written, and the exit code says a file failed. */
Test(real_inputs, full_disk_keeps_the_report_whole_and_leaves_no_partial_file)
{
	if (!t_is_root())
		cr_skip_test("needs root to mount a small tmpfs");
	char dir[] = "/tmp/latscope-full-XXXXXX";
	cr_assert(mkdtemp(dir));
	if (mount("tmpfs", dir, "tmpfs", 0, "size=64k")) {
		t_remove_tree(dir);
		cr_skip_test("cannot mount a tmpfs here");
	}
	struct t_sim sim;
	cr_assert_eq(t_sim_start(&sim, 0, NULL), 0);
	/* Filled to the last page: the check before the run (an empty file created and removed)
	 * passes, and every byte written after it fails with ENOSPC. */
	char filler[300];
	snprintf(filler, sizeof(filler), "%s/filler", dir);
	FILE *f = fopen(filler, "w");
	cr_assert(f);
	static char block[1024];
	memset(block, 'x', sizeof(block));
	while (fwrite(block, 1, sizeof(block), f) == sizeof(block) && !fflush(f))
		;
	fclose(f);
	char path[300], trace[300];
	snprintf(path, sizeof(path), "%s/r.json", dir);
	snprintf(trace, sizeof(trace), "%s/t.json", dir);
	const char *save[] = { "--num-prompts", "40", "--save-result", "--result-dir", dir, "--result-filename",
			       "r.json", "--trace", trace, NULL };
	char *out = NULL, *err = NULL;
	int rc = bench(sim.url, save, &out, &err, NULL);
	cr_expect_eq(rc, 1, "exit %d: %s", rc, err);
	cr_expect(out && strstr(out, "Checks before you believe a number"), "the report stopped half way: %s", out);
	cr_expect(err && strstr(err, "write failed"), "%s", err);
	struct stat st;
	char *text = t_read_file(path, NULL);
	cr_expect(!text || strchr(text, '}'), "a partial result was left: %.200s", text ? text : "");
	free(text);
	cr_expect(stat(path, &st) != 0 || st.st_size > 0);
	free(out);
	free(err);
	t_sim_stop(&sim);
	umount2(dir, MNT_DETACH);
	t_remove_tree(dir);
}

Test(real_inputs, backend_is_saved_as_given_and_its_error_lists_every_name)
{
	struct t_sim sim;
	cr_assert_eq(t_sim_start(&sim, 0, NULL), 0);
	char dir[] = "/tmp/latscope-backend-XXXXXX";
	cr_assert(mkdtemp(dir));
	const char *extra[] = { "--backend", "vllm", "--save-result", "--result-dir", dir, NULL };
	char *out = NULL, *err = NULL;
	int rc = bench(sim.url, extra, &out, &err, NULL);
	cr_expect_eq(rc, 0, "exit %d: %s", rc, err);
	const char *saved = err ? strstr(err, "result written to ") : NULL;
	cr_assert(saved, "%s", err);
	char path[512];
	cr_assert_eq(sscanf(saved, "result written to %511s", path), 1);
	cr_expect(strstr(path, "/vllm-"), "the file name keeps the backend given: %s", path);
	char *json = t_read_file(path, NULL);
	cr_expect(json && (strstr(json, "\"backend\":\"vllm\"") || strstr(json, "\"backend\":\t\"vllm\"")),
		  "%.300s", json ? json : "");
	free(json);
	free(out);
	free(err);
	const char *bad[] = { "bench", "--backend", "nope", NULL };
	rc = t_run(bad, &out, &err, 10);
	cr_expect_eq(rc, 2);
	const char *all[] = { "openai", "vllm", "sglang-oai", "openai-chat", "vllm-chat", "sglang-oai-chat",
			      "sglang", "sglang-native" };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		cr_expect(err && strstr(err, all[i]), "the error lists %s: %s", all[i], err);
	free(out);
	free(err);
	t_remove_tree(dir);
	t_sim_stop(&sim);
}

/* The prefix-cache check against the sim: request 0 repeats the warmup's prompt. */
static int prefix_check_ok(const char *out)
{
	const char *line = out ? strstr(out, "prefix cache ") : NULL;
	cr_assert(line, "no prefix cache check in:\n%s", out);
	return !strncmp(line + strlen("prefix cache "), " ok", 3) || !strncmp(line + strlen("prefix cache "), "ok", 2);
}

Test(real_inputs, prefix_cache_check_no_false_warning_in_a_burst_and_a_warning_with_a_cache, .timeout = 90)
{
	const char *plain[] = { "--prefill-token-us", "200", NULL };
	struct t_sim sim;
	cr_assert_eq(t_sim_start(&sim, 0, plain), 0);
	const char *burst[] = { "--num-prompts", "16", "--random-input-len", "200", "--request-rate", "inf",
				"--num-warmups", "1", NULL };
	char *out = NULL, *err = NULL;
	cr_assert_eq(bench(sim.url, burst, &out, &err, NULL), 0, "%s", err);
	cr_expect(prefix_check_ok(out), "a burst without a prefix cache was flagged:\n%s", strstr(out, "prefix cache "));
	free(out);
	free(err);
	t_sim_stop(&sim);

	const char *cached[] = { "--prefill-token-us", "200", "--prefix-cache", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, cached), 0);
	const char *paced[] = { "--num-prompts", "6", "--random-input-len", "200", "--request-rate", "10",
				"--num-warmups", "1", NULL };
	cr_assert_eq(bench(sim.url, paced, &out, &err, NULL), 0, "%s", err);
	cr_expect(!prefix_check_ok(out), "a cached repeat was not flagged:\n%s", strstr(out, "prefix cache "));
	cr_expect(strstr(out, "likely served from the server's prefix cache"), "%s", strstr(out, "prefix cache "));
	free(out);
	free(err);
	t_sim_stop(&sim);
}

static size_t longest_line(const char *text)
{
	size_t longest = 0;
	for (const char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		longest = n > longest ? n : longest;
	}
	return longest;
}

/* What a terminal gets (LATSCOPE_WRAP stands in for one): no line of a default bench or
 * compare report over 100 columns; and sent all at once, the arrivals say so, not a "rate". */
Test(real_inputs, reports_fit_100_columns_and_inf_arrivals_say_all_at_once, .timeout = 90)
{
	struct t_sim sim;
	cr_assert_eq(t_sim_start(&sim, 0, NULL), 0);
	setenv("LATSCOPE_WRAP", "100", 1);
	const char *extra[] = { "--num-prompts", "12", "--num-warmups", "1", "--request-rate", "inf", NULL };
	char *out = NULL, *err = NULL;
	cr_expect_eq(bench(sim.url, extra, &out, &err, NULL), 0, "%s", err);
	cr_expect_leq(longest_line(out), 100, "%s", out);
	cr_expect(strstr(out, "all requests at once") && !strstr(out, "req/s of started"), "%s", out);
	free(out);
	free(err);
	const char *cmp[] = { "compare", "--profiles", "vllm,sglang,honest", "--base-url", sim.url, "--model", "m",
			      "--num-prompts", "12", "--request-rate", "50", "--random-input-len", "16",
			      "--random-output-len", "4", "--probes", "off", NULL };
	int rc = t_run(cmp, &out, &err, 80);
	unsetenv("LATSCOPE_WRAP");
	cr_expect_eq(rc, 0, "%s", err);
	cr_expect_leq(longest_line(out), 100, "%s", out);
	free(out);
	free(err);
	t_sim_stop(&sim);
}

/* A record file without its run_end line (the run was killed): report says the run was cut. */
Test(real_inputs, report_on_a_record_without_its_end_line_says_the_run_was_cut, .timeout = 60)
{
	struct t_sim sim;
	cr_assert_eq(t_sim_start(&sim, 0, NULL), 0);
	char dir[] = "/tmp/latscope-cut-XXXXXX", rec[300], cut[300];
	cr_assert(mkdtemp(dir));
	snprintf(rec, sizeof(rec), "%s/r.jsonl", dir);
	snprintf(cut, sizeof(cut), "%s/cut.jsonl", dir);
	const char *extra[] = { "--record", rec, NULL };
	char *out = NULL, *err = NULL;
	cr_assert_eq(bench(sim.url, extra, &out, &err, NULL), 0, "%s", err);
	free(out);
	free(err);
	t_sim_stop(&sim);
	size_t len = 0;
	char *text = t_read_file(rec, &len);
	cr_assert(text && len > 1);
	char *end = strstr(text, "{\"latscope_run_end\"");
	cr_assert(end, "no run_end line in %s", rec);
	FILE *f = fopen(cut, "w");
	cr_assert(f);
	fwrite(text, 1, (size_t)(end - text), f);
	fclose(f);
	free(text);
	const char *whole[] = { "report", rec, NULL }, *cutv[] = { "report", cut, NULL };
	cr_assert_eq(t_run(whole, &out, &err, 20), 0, "%s", err);
	cr_expect(!strstr(out, "the run was cut"), "%s", out);
	free(out);
	free(err);
	cr_assert_eq(t_run(cutv, &out, &err, 20), 0, "%s", err);
	cr_expect(strstr(out, "Run end: none in the file: the run was cut") && strstr(out, "the 4 requests on disk"),
		  "%s", out);
	free(out);
	free(err);
	t_remove_tree(dir);
}
