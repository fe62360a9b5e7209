/* test_behaviour_tls.c — failures over TLS: each simulator fault kind through `latscope bench`
 * over https ends with the reason it gets over plain HTTP (and the one
 * test_reliability_faults.c expects); a peer that resets the handshake fails as `tls` with a
 * message that says so; a stream whose peer closes without close_notify after [DONE] is ok. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>
#include "base/clock.h"
#include "sim/sim.h"
#include "test_driver_common.h"
#include "test_reliability.h"

TestSuite(behaviour_tls, .fini = t_sim_fini, .timeout = 60);

/* The reason test_reliability_faults.c's table gives each kind tried here. */
static const struct {
	const char *kind, *fail;
} kinds[] = {
	{ "http500", "http_status" },
	{ "reset-mid-stream", "reset_mid_stream" },
	{ "stall", "timeout" },
	{ "malformed-frame", "malformed_frame" },
	{ "truncated-chunk", "truncated" },
};

enum { N_REQ = 8 };

/* One bench of N_REQ requests against a sim that faults every one with kind, over TLS or not.
 * Returns the record file read back; every line is whole and every request is there. */
static void bench_faulted(const char *kind, int tls, struct t_records *rec, char truth_faults[N_REQ][32])
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "2", "--fail-rate", "1", "--fail-kind", kind, "--quiet",
				tls ? "--tls" : NULL, NULL };
	t_sim_start_checked(&sim, tls, extra);
	char record[128], tag[64];
	snprintf(tag, sizeof(tag), "beh-tls-%s-%d.jsonl", kind, tls);
	t_tmp(record, sizeof(record), tag);
	/* stall waits for the request timeout: short, the streams stop after a few frames */
	const char *args[] = { "bench", "--base-url", sim.url, "--model", "latscope-sim", "--num-prompts", "8",
			       "--max-concurrency", "4", "--random-input-len", "16", "--random-output-len", "16",
			       "--random-vocab-size", "300", "--ignore-eos", "--request-timeout", "0.5",
			       "--probes", "off", "--disable-tqdm", "--record", record,
			       /* every request is faulted: no setup test, and no certificate to trust */
			       "--skip-initial-test", tls ? "--insecure" : NULL, NULL };
	struct t_proc p;
	t_spawn(&p, t_bin(), args);
	int rc = t_wait(&p, 30);
	char *err = t_stderr(&p);
	t_done(&p);
	cr_assert_eq(rc, 3, "%s over %s: bench exited %d, want 3 (no request succeeded); stderr: %.1500s", kind,
		     tls ? "TLS" : "HTTP", rc, err);
	free(err);
	t_records_read(record, rec);
	cr_assert(!rec->torn && rec->header && rec->run_end, "%s: record file whole, header and run end", kind);
	cr_assert_eq(rec->requests, N_REQ, "%s: %zu requests recorded", kind, rec->requests);

	struct t_truth truth;
	cr_assert_eq(t_truth_load(sim.truth, rec->run_tag, N_REQ, &truth), 0, "%s: a truth line per request", kind);
	for (size_t i = 0; i < N_REQ; i++) {
		char id[64];
		snprintf(id, sizeof(id), "%s-%zu", rec->run_tag, i);
		long k = t_truth_find(&truth, id);
		cr_assert_geq(k, 0, "no truth for %s", id);
		snprintf(truth_faults[i], 32, "%s", truth.faults[k]);
	}
	t_truth_free(&truth);
	t_sim_stop_checked(&sim);
	unlink(record);
}

Test(behaviour_tls, fault_kinds_fail_as_over_plain_http)
{
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		struct t_records over[2];
		char faults[2][N_REQ][32];
		for (int tls = 0; tls < 2; tls++)
			bench_faulted(kinds[k].kind, tls, &over[tls], faults[tls]);
		for (int tls = 0; tls < 2; tls++) {
			const struct t_records *rec = &over[tls];
			for (size_t i = 0; i < rec->requests; i++) {
				uint64_t id = rec->ids[i];
				cr_assert_lt(id, N_REQ);
				cr_expect_str_eq(faults[tls][id], kinds[k].kind, "request %llu drew %s",
						 (unsigned long long)id, faults[tls][id]);
				cr_expect_str_eq(rec->fails[i], kinds[k].fail, "%s over %s: request %llu failed as %s, want %s",
						 kinds[k].kind, tls ? "TLS" : "HTTP", (unsigned long long)id, rec->fails[i],
						 kinds[k].fail);
			}
		}
		cr_log_info("%s: %zu requests over HTTP and %zu over TLS, all %s", kinds[k].kind, over[0].requests,
			    over[1].requests, kinds[k].fail);
		t_records_free(&over[0]);
		t_records_free(&over[1]);
	}
}

/* A forked peer on 127.0.0.1: every connection it accepts goes to serve(fd), then is closed. */
struct peer {
	pid_t pid;
	int   port;
	char  url[128];
};

static void peer_start(struct peer *p, void (*serve)(int fd))
{
	memset(p, 0, sizeof(*p));
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	cr_assert(lfd >= 0 && !bind(lfd, (struct sockaddr *)&a, sizeof(a)) && !listen(lfd, 64) &&
		  !getsockname(lfd, (struct sockaddr *)&a, &alen), "listen on 127.0.0.1");
	p->port = ntohs(a.sin_port);
	snprintf(p->url, sizeof(p->url), "https://127.0.0.1:%d", p->port);
	p->pid = fork();
	cr_assert_geq(p->pid, 0);
	if (p->pid == 0) {
		alarm(30); /* never outlive a broken test */
		for (;;) {
			int fd = accept(lfd, NULL, NULL);
			if (fd < 0)
				_exit(0);
			serve(fd);
		}
	}
	close(lfd);
}

static void peer_stop(struct peer *p)
{
	if (p->pid > 0) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, NULL, 0);
	}
	p->pid = 0;
}

/* Reads the ClientHello, then resets the connection (SO_LINGER 0): RST mid-handshake. */
static void serve_rst_after_hello(int fd)
{
	char hello[4096];
	ssize_t r = read(fd, hello, sizeof(hello));
	(void)r;
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

/* The stream serve_tls_stream sends: whole (a finish_reason frame, then [DONE]), or cut after
 * two token frames. */
static int stream_whole = 1;

/* A full TLS handshake (the simulator's self-signed certificate), the request read, an event
 * stream that ends at EOF (Connection: close, no chunking), then close(2) without SSL_shutdown:
 * no close_notify, as a server that exits or a proxy that drops the connection sends. */
static void serve_tls_stream(int fd)
{
	static SSL_CTX *ctx;
	struct sim_config cfg = { 0 };
	if (!ctx && !(ctx = sim_tls_ctx(&cfg)))
		_exit(2);
	SSL *ssl = SSL_new(ctx);
	if (!ssl || SSL_set_fd(ssl, fd) != 1 || SSL_accept(ssl) != 1) {
		SSL_free(ssl);
		close(fd);
		return;
	}
	char req[8192];
	size_t len = 0;
	while (len < sizeof(req) - 1) { /* head, then the Content-Length body */
		int r = SSL_read(ssl, req + len, (int)(sizeof(req) - 1 - len));
		if (r <= 0)
			break;
		len += (size_t)r;
		req[len] = 0;
		char *end = strstr(req, "\r\n\r\n"), *cl = strcasestr(req, "content-length:");
		if (end && (!cl || len - (size_t)(end + 4 - req) >= strtoul(cl + 15, NULL, 10)))
			break;
	}
	static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
	static const char frame[] = "data: {\"choices\":[{\"index\":0,\"text\":\" x\",\"finish_reason\":null}]}\n\n";
	static const char last[] = "data: {\"choices\":[{\"index\":0,\"text\":\" y\",\"finish_reason\":\"length\"}]}\n\n";
	static const char done[] = "data: [DONE]\n\n";
	char body[1024];
	int n = snprintf(body, sizeof(body), "%s%s%s%s%s", head, frame, frame, stream_whole ? last : "",
			 stream_whole ? done : "");
	SSL_write(ssl, body, n);
	usleep(20000); /* the frames arrive before the close, in their own reads */
	close(fd);     /* no SSL_shutdown: the stream ends without close_notify */
	SSL_free(ssl);
}

/* Two requests through the driver to a peer, over https (no verification: self-signed). */
static void drive(const struct peer *p, struct t_batch *b)
{
	t_batch_init(b, LS_BACKEND_OPENAI, 2, 3);
	struct ls_driver_opts o;
	char url[256];
	struct t_sim fake = { .port = p->port };
	snprintf(fake.url, sizeof(fake.url), "%s", p->url);
	t_opts(&o, b, &fake, LS_BACKEND_OPENAI, url, sizeof(url));
	o.insecure = 1;
	o.per_request_conn = 1;
	o.max_concurrency = 1;
	o.request_timeout_ns = 10000000000ull;
	uint64_t t0 = ls_now_ns();
	cr_assert_eq(t_driver_run(&o, b), 0);
	cr_assert_lt(ls_now_ns() - t0, 8000000000ull, "no stall");
	cr_assert_eq(b->finished, b->n, "every request finished once");
}

Test(behaviour_tls, reset_during_handshake_fails_as_tls, .timeout = 30)
{
	struct peer p;
	peer_start(&p, serve_rst_after_hello);
	struct t_batch b;
	drive(&p, &b);
	peer_stop(&p);
	for (size_t i = 0; i < b.n; i++) {
		const struct ls_request *r = &b.recs[i];
		cr_expect_eq(r->fail, LS_FAIL_TLS, "request %zu: %s (%s), want tls", i, ls_fail_name(r->fail), r->error);
		cr_expect(strstr(r->error, "TLS") || strstr(r->error, "SSL"), "the message names TLS: '%s'", r->error);
		cr_expect_eq(r->headers_ns, 0, "no response head");
		cr_expect_eq(r->tls_ns, 0, "the handshake never completed");
		cr_log_info("reset during the handshake: %s: %s", ls_fail_name(r->fail), r->error);
	}
	t_batch_free(&b);
}

Test(behaviour_tls, no_close_notify_after_done_is_ok, .timeout = 30)
{
	struct peer p;
	stream_whole = 1;
	peer_start(&p, serve_tls_stream);
	struct t_batch b;
	drive(&p, &b);
	peer_stop(&p);
	for (size_t i = 0; i < b.n; i++) {
		const struct ls_request *r = &b.recs[i];
		cr_expect_eq(r->fail, LS_OK, "request %zu: %s (%s): [DONE] came, only close_notify was missing", i,
			     ls_fail_name(r->fail), r->error);
		cr_expect_neq(r->tls_ns, 0, "request %zu went over TLS", i);
		cr_expect_neq(r->done_frame_ns, 0, "request %zu saw [DONE]", i);
		cr_expect_eq(r->n_frames, 4, "3 token frames and [DONE], got %u", r->n_frames);
	}
	t_batch_free(&b);

	/* The same close after two token frames (no finish_reason, no [DONE]) is a stream cut
	 * short, not a success. */
	stream_whole = 0;
	peer_start(&p, serve_tls_stream);
	drive(&p, &b);
	peer_stop(&p);
	for (size_t i = 0; i < b.n; i++) {
		const struct ls_request *r = &b.recs[i];
		cr_expect_neq(r->fail, LS_OK, "request %zu: no finish, no [DONE], no close_notify, yet ok", i);
		cr_log_info("closed mid-stream without close_notify: %s: %s", ls_fail_name(r->fail), r->error);
	}
	t_batch_free(&b);
}
