/* A burst's order (issue 17): N transfers that may start at once are each connected and
 * written before the loop first waits, not N connects first and the writes a loop turn later.
 * Not timed: a server socket in this process is looked at from a loop hook, which the driver
 * calls on every turn before it waits; on the first call every request must already be in the
 * server's kernel buffers (loopback delivers a write before write() returns). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "test_driver_common.h"

TestSuite(driver_burst);

#define BURST_MAX 256

struct burst_server {
	int    listen_fd;
	int    fds[BURST_MAX];
	size_t n_fds;
	int    turns;
	long   complete_at_first; /* whole requests in the kernel at the hook's first call */
	long   accepted_at_first;
};

/* 1 when fd holds a whole request (head and Content-Length body), peeked, not consumed. */
static int whole_request(int fd)
{
	char buf[8192];
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_PEEK | MSG_DONTWAIT);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *end = strstr(buf, "\r\n\r\n");
	char *cl = strcasestr(buf, "Content-Length:");
	if (!end || !cl)
		return 0;
	long want = strtol(cl + 15, NULL, 10);
	return n - (end + 4 - buf) >= want;
}

/* A minimal stream (one token frame and [DONE]), then close. */
static void answer(int fd)
{
	static const char body[] = "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"text\":\"a\",\"finish_reason\":\"length\"}]}\n\n"
				   "data: [DONE]\n\n";
	char resp[512];
	int n = snprintf(resp, sizeof(resp), "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n\r\n%s", sizeof(body) - 1, body);
	if (write(fd, resp, (size_t)n) != n)
		perror("burst server write");
	close(fd);
}

/* The hook: counts at its first call, then answers every whole request (a connection whose
 * request is not in yet waits for a later turn). */
static int on_turn(void *ctx, uint64_t now_ns)
{
	struct burst_server *s = ctx;
	(void)now_ns;
	int fd;
	while (s->n_fds < BURST_MAX && (fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK)) >= 0)
		s->fds[s->n_fds++] = fd;
	if (s->turns++ == 0) {
		s->accepted_at_first = (long)s->n_fds;
		for (size_t i = 0; i < s->n_fds; i++)
			s->complete_at_first += whole_request(s->fds[i]);
	}
	size_t keep = 0;
	for (size_t i = 0; i < s->n_fds; i++) {
		if (whole_request(s->fds[i]))
			answer(s->fds[i]);
		else
			s->fds[keep++] = s->fds[i];
	}
	s->n_fds = keep;
	return 0;
}

static int listen_local(int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	cr_assert(fd >= 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(fd, 4096), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* n jobs, at most conc at once (0: all), against the in-process server. */
static void burst(size_t n, uint32_t conc, int per_request, long want_first)
{
	struct burst_server s = { 0 };
	int port;
	s.listen_fd = listen_local(&port);
	struct t_batch b;
	t_batch_init(&b, LS_BACKEND_OPENAI, n, 1);
	struct ls_driver_opts o;
	struct t_sim fake = { 0 };
	snprintf(fake.url, sizeof(fake.url), "http://127.0.0.1:%d", port);
	char url[256];
	t_opts(&o, &b, &fake, LS_BACKEND_OPENAI, url, sizeof(url));
	o.max_concurrency = conc;
	o.per_request_conn = per_request;
	/* Called on every turn before the loop waits; the period only satisfies the hook's rule. */
	struct ls_loop_hook hook = { .fd = -1, .period_ns = 1000000000ull, .on_ready = on_turn, .ctx = &s,
				     .each_turn = 1 };
	o.hooks = &hook;
	o.n_hooks = 1;
	cr_assert_eq(t_driver_run(&o, &b), 0);
	ls_driver_pool_close();
	cr_assert_eq(t_count_fail(&b, LS_OK), n, "all ok (first: %s)", b.recs[0].error);
	cr_assert_eq(s.accepted_at_first, want_first, "connections up when the loop first waits: %ld of %ld",
		     s.accepted_at_first, want_first);
	cr_assert_eq(s.complete_at_first, want_first,
		     "requests written before the loop first waits: %ld of %ld (connected: %ld)",
		     s.complete_at_first, want_first, s.accepted_at_first);
	for (size_t i = 0; i < n; i++) {
		cr_assert(b.recs[i].sent_ns && b.recs[i].connect_ns, "request %zu has connect and sent stamps", i);
		cr_assert_geq(b.recs[i].sent_ns, b.recs[i].connect_ns);
	}
	close(s.listen_fd);
	t_batch_free(&b);
}

Test(driver_burst, all_written_before_first_wait_reuse, .timeout = 60) { burst(128, 128, 0, 128); }
Test(driver_burst, all_written_before_first_wait_fresh, .timeout = 60) { burst(128, 0, 1, 128); }
Test(driver_burst, slots_bound_the_first_burst, .timeout = 60) { burst(48, 16, 0, 16); }
