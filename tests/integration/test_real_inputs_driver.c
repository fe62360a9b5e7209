/* Real inputs must not break the driver: request bodies of megabytes (plain and TLS) and a
 * 128k-token prompt finish with the prompt the server counted; a 2xx that is not an event
 * stream, and --http2 against a server without h2c, fail with their cause named; a server that
 * dies mid-run is said to have gone, once, and counted in the report; a run without a terminal
 * shows plain progress lines. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "base/clock.h"
#include "test_driver_common.h"
#include "workload/dataset.h"

#define SEC_NS 1000000000ull

TestSuite(real_inputs_driver, .fini = t_sim_fini);

/* A body of about body_bytes: a prompt of token ids 10..99 ("12," is 3 bytes each). */
static void big_job(struct t_batch *b, size_t i, size_t body_bytes, uint32_t max_tokens)
{
	uint32_t n = (uint32_t)(body_bytes / 3);
	uint32_t *ids = malloc((size_t)n * sizeof(*ids));
	cr_assert_not_null(ids);
	for (uint32_t k = 0; k < n; k++)
		ids[k] = 10 + k % 90;
	struct ls_prompt p = { .token_ids = ids, .n_token_ids = n, .prompt_len = n, .output_len = max_tokens };
	size_t len = 0;
	char *body = ls_backend_body(LS_BACKEND_OPENAI, "latscope-sim", &p, 1, &len);
	cr_assert_not_null(body);
	free(ids);
	free((char *)b->jobs[i].body);
	b->jobs[i].body = body;
	b->jobs[i].body_len = len;
	b->recs[i].prompt_len = n;
	b->recs[i].output_len = max_tokens;
}

/* prompt_tokens the sim's truth gives request "<tag>-<i>", -1 when it has none. */
static long truth_prompt_tokens(const struct t_sim *sim, const char *tag, size_t i)
{
	char want[96];
	snprintf(want, sizeof(want), "%s-%zu", tag, i);
	char *text = t_read_file(sim->truth, NULL);
	cr_assert_not_null(text, "no truth file %s", sim->truth);
	long found = -1;
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line && found < 0; line = strtok_r(NULL, "\n", &save)) {
		cJSON *j = cJSON_Parse(line);
		const cJSON *id = cJSON_GetObjectItem(j, "id"), *pt = cJSON_GetObjectItem(j, "prompt_tokens");
		if (cJSON_IsString(id) && !strcmp(id->valuestring, want) && cJSON_IsNumber(pt))
			found = (long)pt->valuedouble;
		cJSON_Delete(j);
	}
	free(text);
	return found;
}

/* Bodies of 0.2, 1 and 4 MiB all finish, each with the prompt the sim counted. They used to
 * stop after 3 x 64 KiB: a multishot POLLOUT fires only on a new wakeup of the socket. */
static void big_bodies(int tls)
{
	struct t_sim sim;
	const char *extra[] = { "--max-model-len", "2000000", "--max-batch-tokens", "2000000", "--prefill-token-us", "0",
				"--quiet", tls ? "--tls" : NULL, NULL };
	t_sim_start_checked(&sim, tls, extra);
	static const size_t sizes[] = { 200u * 1024, 1024u * 1024, 4096u * 1024 };
	struct t_batch b;
	t_batch_init(&b, LS_BACKEND_OPENAI, 3, 4);
	for (size_t i = 0; i < b.n; i++)
		big_job(&b, i, sizes[i], 4);
	struct ls_driver_opts o;
	char url[256];
	t_opts(&o, &b, &sim, LS_BACKEND_OPENAI, url, sizeof(url));
	o.insecure = tls;
	uint64_t t0 = ls_now_ns();
	cr_assert_eq(t_driver_run(&o, &b), 0);
	cr_assert_lt(ls_now_ns() - t0, 15 * SEC_NS, "no stall");
	for (size_t i = 0; i < b.n; i++)
		cr_assert_eq(b.recs[i].fail, LS_OK, "%zu-byte body: %s (%s)", b.jobs[i].body_len,
			     ls_fail_name(b.recs[i].fail), b.recs[i].error);
	struct t_truth t;
	cr_assert_eq(t_truth_load(sim.truth, b.run.run_tag, b.n, &t), 0, "the sim saw every request");
	for (size_t i = 0; i < b.n; i++) {
		const struct ls_request *r = &b.recs[i];
		cr_expect_eq(r->usage_prompt_tokens, (int32_t)r->prompt_len, "usage prompt tokens %d, sent %u",
			     r->usage_prompt_tokens, r->prompt_len);
		cr_expect_eq(truth_prompt_tokens(&sim, b.run.run_tag, i), (long)r->prompt_len, "the sim's count");
	}
	t_truth_free(&t);
	t_batch_free(&b);
	t_sim_stop_checked(&sim);
}

Test(real_inputs_driver, bodies_of_megabytes_finish, .timeout = 60) { big_bodies(0); }
Test(real_inputs_driver, bodies_of_megabytes_finish_over_tls, .timeout = 60) { big_bodies(1); }

/* The mechanism, many times over: 12 transfers of 600 KiB bodies through 4 slots, on pooled
 * and on fresh connections, all finish (a POLLOUT left waiting would stall its slot). */
Test(real_inputs_driver, many_big_bodies_through_few_slots, .timeout = 60)
{
	struct t_sim sim;
	const char *extra[] = { "--max-model-len", "300000", "--max-batch-tokens", "300000", "--prefill-token-us", "0",
				"--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	for (int fresh = 0; fresh <= 1; fresh++) {
		struct t_batch b;
		t_batch_init(&b, LS_BACKEND_OPENAI, 12, 2);
		for (size_t i = 0; i < b.n; i++)
			big_job(&b, i, 600u * 1024, 2);
		struct ls_driver_opts o;
		char url[256];
		t_opts(&o, &b, &sim, LS_BACKEND_OPENAI, url, sizeof(url));
		o.max_concurrency = 4;
		o.per_request_conn = fresh;
		uint64_t t0 = ls_now_ns();
		cr_assert_eq(t_driver_run(&o, &b), 0);
		cr_assert_lt(ls_now_ns() - t0, 20 * SEC_NS, "no stall");
		cr_assert_eq(b.finished, b.n);
		for (size_t i = 0; i < b.n; i++)
			cr_assert_eq(b.recs[i].fail, LS_OK, "%s connections, request %zu: %s (%s)", fresh ? "fresh" : "pooled",
				     i, ls_fail_name(b.recs[i].fail), b.recs[i].error);
		for (size_t i = 0; i < b.n; i++)
			cr_expect_eq(b.recs[i].usage_prompt_tokens, (int32_t)b.recs[i].prompt_len);
		t_batch_free(&b);
	}
	t_sim_stop_checked(&sim);
}

static char *scratch_dir(void)
{
	char *dir = strdup("/tmp/latscope-realin-XXXXXX");
	cr_assert(dir && mkdtemp(dir));
	return dir;
}

/* A 128,000-token random prompt with 4 output tokens, inside the sim's 131,072-token context,
 * through bench end to end. */
Test(real_inputs_driver, prompt_of_128k_tokens, .timeout = 90)
{
	struct t_sim sim;
	const char *extra[] = { "--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	const char *argv[] = { "bench", "--base-url", sim.url, "--dataset-name", "random", "--random-input-len", "128000",
			       "--random-output-len", "4", "--num-prompts", "1", "--disable-tqdm", NULL };
	char *out = NULL, *err = NULL;
	int rc = t_run(argv, &out, &err, 60);
	cr_assert_eq(rc, 0, "bench exit %d: %s", rc, err);
	cr_assert(strstr(out, "Successful requests:                     1 "), "%s", out);
	cr_assert(strstr(out, "Total input tokens:                      128000 "), "%s", out);
	char *truth = t_read_file(sim.truth, NULL);
	cr_assert(truth && strstr(truth, "\"prompt_tokens\":128000,"), "the sim counted 128000 prompt tokens");
	free(truth);
	free(out);
	free(err);
	t_sim_stop_checked(&sim);
}

/* Two requests against a canned reply; the records in *b. */
static void against_canned(const char *resp, struct t_batch *b)
{
	struct t_canned srv;
	cr_assert_eq(t_canned_start(&srv, resp, strlen(resp), 0), 0);
	t_batch_init(b, LS_BACKEND_OPENAI, 2, 4);
	struct t_sim fake = { .port = srv.port };
	snprintf(fake.url, sizeof(fake.url), "%s", srv.url);
	struct ls_driver_opts o;
	char url[256];
	t_opts(&o, b, &fake, LS_BACKEND_OPENAI, url, sizeof(url));
	o.per_request_conn = 1;
	o.max_concurrency = 1;
	cr_assert_eq(t_driver_run(&o, b), 0);
	cr_assert_eq(b->finished, b->n);
	t_canned_stop(&srv);
}

static void expect_protocol(const char *resp, const char *text)
{
	struct t_batch b;
	against_canned(resp, &b);
	for (size_t i = 0; i < b.n; i++) {
		cr_expect_eq(b.recs[i].fail, LS_FAIL_PROTOCOL, "got %s (%s)", ls_fail_name(b.recs[i].fail),
			     b.recs[i].error);
		cr_expect(strstr(b.recs[i].error, text), "error '%s' lacks '%s'", b.recs[i].error, text);
	}
	t_batch_free(&b);
}

Test(real_inputs_driver, html_page_is_not_an_event_stream, .timeout = 30)
{
	expect_protocol("HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nConnection: close\r\n\r\n"
			"<!doctype html><html><body>Login required</body></html>\n",
			"not an event stream (Content-Type: text/html; charset=utf-8): <!doctype html>");
}

Test(real_inputs_driver, json_body_is_not_an_event_stream, .timeout = 30)
{
	expect_protocol("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
			"{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"choices\":[{\"text\":\"hi\",\"finish_reason\":null}]}",
			"not an event stream (Content-Type: application/json): {\"id\":\"cmpl-1\"");
}

Test(real_inputs_driver, body_without_content_type_or_frames, .timeout = 30)
{
	expect_protocol("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n<html>hello</html>",
			"not an event stream (no Content-Type, no data: frame in 18 bytes)");
}

/* A stream with a parameter on its Content-Type is a stream. */
Test(real_inputs_driver, event_stream_with_charset_is_a_stream, .timeout = 30)
{
	struct t_batch b;
	against_canned("HTTP/1.1 200 OK\r\nContent-Type: Text/Event-Stream; charset=utf-8\r\nConnection: close\r\n\r\n"
		       "data: {\"choices\":[{\"text\":\"x\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n", &b);
	cr_expect_eq(t_count_fail(&b, LS_OK), b.n, "first: %s (%s)", ls_fail_name(b.recs[0].fail), b.recs[0].error);
	t_batch_free(&b);
}

/* --http2 against http:// is h2c prior knowledge, which the sim (like most Python servers)
 * does not speak: every request says so, pooled or fresh. */
Test(real_inputs_driver, http2_without_h2c_says_so, .timeout = 30)
{
	struct t_sim sim;
	const char *extra[] = { "--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	for (int fresh = 0; fresh <= 1; fresh++) {
		struct t_batch b;
		t_batch_init(&b, LS_BACKEND_OPENAI, 3, 4);
		struct ls_driver_opts o;
		char url[256];
		t_opts(&o, &b, &sim, LS_BACKEND_OPENAI, url, sizeof(url));
		o.http2 = 1;
		o.per_request_conn = fresh;
		cr_assert_eq(t_driver_run(&o, &b), 0);
		for (size_t i = 0; i < b.n; i++) {
			cr_expect_eq(b.recs[i].fail, LS_FAIL_PROTOCOL, "got %s (%s)", ls_fail_name(b.recs[i].fail),
				     b.recs[i].error);
			cr_expect(strstr(b.recs[i].error, "server does not speak HTTP/2 over cleartext (h2c prior "
							  "knowledge): drop --http2 or use https:// (ALPN)"),
				  "error: %s", b.recs[i].error);
		}
		t_batch_free(&b);
	}
	t_sim_stop_checked(&sim);
}

/* A child that SIGKILLs pid once path has min_lines lines (the sim's truth: requests served). */
static pid_t kill_after_lines(pid_t pid, const char *path, size_t min_lines)
{
	pid_t child = fork();
	cr_assert_geq(child, 0);
	if (child)
		return child;
	for (int tries = 0; tries < 3000; tries++) {
		char *text = t_read_file(path, NULL);
		size_t n = 0;
		for (const char *p = text; p && *p; p++)
			n += *p == '\n';
		free(text);
		if (n >= min_lines)
			break;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	_exit(0);
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; p && (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The driver's side: after the sim dies, the connect failures are counted from the first. */
Test(real_inputs_driver, server_gone_is_counted_in_the_run, .timeout = 60)
{
	struct t_sim sim;
	const char *extra[] = { "--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	struct t_batch b;
	t_batch_init(&b, LS_BACKEND_OPENAI, 30, 8); /* 8 steps of 10 ms each, one at a time */
	struct ls_driver_opts o;
	char url[256];
	t_opts(&o, &b, &sim, LS_BACKEND_OPENAI, url, sizeof(url));
	o.max_concurrency = 1;
	o.per_request_conn = 1;
	pid_t killer = kill_after_lines(sim.pid, sim.truth, 5);
	cr_assert_eq(t_driver_run(&o, &b), 0);
	waitpid(killer, NULL, 0);
	size_t connect = t_count_fail(&b, LS_FAIL_CONNECT);
	cr_assert_geq(connect, 3, "the rest failed to connect (%zu)", connect);
	cr_expect_neq(b.run.server_gone_ns, 0, "the run says the server went away");
	cr_expect_eq(b.run.n_connect_failed_gone, connect, "every connect failure counted");
	cr_expect(b.run.server_gone_ns >= b.run.start_ns && b.run.server_gone_ns <= b.run.end_ns);
	t_batch_free(&b);
	t_sim_stop_checked(&sim);
}

/* bench: the message once on stderr, and the note in the text report and the JSON result. */
Test(real_inputs_driver, server_gone_is_said_once_and_reported, .timeout = 90)
{
	struct t_sim sim;
	const char *extra[] = { "--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	char *dir = scratch_dir();
	const char *argv[] = { "bench", "--base-url", sim.url, "--dataset-name", "random", "--random-input-len", "16",
			       "--random-output-len", "4", "--num-prompts", "80", "--request-rate", "40", "--save-result",
			       "--result-dir", dir, "--result-filename", "gone.json", "--disable-tqdm", NULL };
	pid_t killer = kill_after_lines(sim.pid, sim.truth, 15);
	char *out = NULL, *err = NULL;
	int rc = t_run(argv, &out, &err, 60);
	waitpid(killer, NULL, 0);
	cr_assert_eq(rc, 0, "bench exit %d: %s", rc, err);
	cr_expect_eq(count_of(err, "stopped accepting connections at t="), 1, "said once: %s", err);
	cr_expect(strstr(err, "latscope: the server at http://127.0.0.1:"), "%s", err);
	cr_expect(strstr(out, "Server stopped accepting connections:    at t="), "%s", out);
	char path[256];
	snprintf(path, sizeof(path), "%s/gone.json", dir);
	char *json = t_read_file(path, NULL);
	cr_assert_not_null(json, "no result file");
	cJSON *j = cJSON_Parse(json);
	const cJSON *gone = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "latscope"), "server_gone");
	cr_assert(cJSON_IsObject(gone), "latscope.server_gone in the result");
	const cJSON *n = cJSON_GetObjectItem(gone, "connect_failures_since");
	cr_expect(cJSON_IsNumber(n) && n->valuedouble >= 3, "connect_failures_since");
	cr_expect(cJSON_IsNumber(cJSON_GetObjectItem(gone, "at_s")));
	cJSON_Delete(j);
	free(json);
	free(out);
	free(err);
	t_remove_tree(dir);
	free(dir);
	t_sim_stop_checked(&sim);
}

/* Without a terminal (t_run's stderr is a pipe) a plain progress line every interval; none
 * with --disable-tqdm. */
Test(real_inputs_driver, plain_progress_lines_without_a_terminal, .timeout = 60)
{
	struct t_sim sim;
	const char *extra[] = { "--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	setenv("LATSCOPE_PROGRESS_INTERVAL_MS", "200", 1);
	for (int quiet = 0; quiet <= 1; quiet++) {
		const char *argv[] = { "bench", "--base-url", sim.url, "--dataset-name", "random", "--random-input-len", "16",
				       "--random-output-len", "4", "--num-prompts", "30", "--request-rate", "30",
				       quiet ? "--disable-tqdm" : NULL, NULL };
		char *out = NULL, *err = NULL;
		int rc = t_run(argv, &out, &err, 60);
		cr_assert_eq(rc, 0, "bench exit %d: %s", rc, err);
		if (quiet) {
			cr_expect_null(strstr(err, "latscope: progress:"), "--disable-tqdm silences it: %s", err);
		} else {
			cr_expect_geq(count_of(err, "latscope: progress: "), 2, "%s", err);
			cr_expect(strstr(err, "/30 requests done, 0 failed, "), "%s", err);
			cr_expect_null(strstr(err, "\r"), "no terminal redraws in a log");
		}
		free(out);
		free(err);
	}
	unsetenv("LATSCOPE_PROGRESS_INTERVAL_MS");
	t_sim_stop_checked(&sim);
}
