/* sim/sim_server.c — the one event loop: epoll over the listening socket, the connections, a
 * timerfd armed at each step's absolute deadline, and a signalfd for SIGINT/SIGTERM. Nothing
 * polls: epoll_wait sleeps until a socket, the step deadline or a signal needs the thread. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include "base/clock.h"
#include "sim/sim.h"

/* epoll tags for the non-connection fds (connections carry their pointer) */
#define TAG_LISTEN 1
#define TAG_TIMER  2
#define TAG_SIGNAL 3

int sim_server_watch(struct sim_server *srv, struct sim_conn *c, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = c };
	int op = c->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	if (epoll_ctl(srv->epfd, op, c->fd, &ev)) {
		fprintf(stderr, "latscope sim: epoll_ctl: %s\n", strerror(errno));
		return -1;
	}
	c->events = events;
	return 0;
}

void sim_server_set_timer(struct sim_server *srv, uint64_t deadline_ns)
{
	if (!deadline_ns)
		deadline_ns = 1; /* 0 would disarm */
	struct itimerspec its = { .it_value = { .tv_sec = (time_t)(deadline_ns / 1000000000ull),
						.tv_nsec = (long)(deadline_ns % 1000000000ull) } };
	if (timerfd_settime(srv->timer_fd, TFD_TIMER_ABSTIME, &its, NULL))
		fprintf(stderr, "latscope sim: timerfd_settime: %s\n", strerror(errno));
}

static int add_fd(struct sim_server *srv, int fd, uint64_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = tag };
	return epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev);
}

static int open_listener(const struct sim_config *cfg)
{
	char port[16];
	snprintf(port, sizeof(port), "%d", cfg->port);
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV }, *res = NULL;
	int rc = getaddrinfo(cfg->host, port, &hints, &res);
	if (rc) {
		fprintf(stderr, "latscope sim: --host %s: %s\n", cfg->host, gai_strerror(rc));
		return -1;
	}
	int fd = -1;
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 4096) == 0)
			break;
		int err = errno;
		fprintf(stderr, "latscope sim: cannot listen on %s:%d: %s%s\n", cfg->host, cfg->port, strerror(err),
			err == EADDRINUSE ? " (another process holds the port: stop it or pick another with --port)"
			: err == EACCES ? " (a port below 1024 needs root: pick another with --port)"
			: err == EADDRNOTAVAIL ? " (--host is not an address of this machine)" : "");
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

/* Raises the open-file limit to the hard limit; returns the connections that fit. */
static size_t raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 1000;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			fprintf(stderr, "latscope sim: cannot raise the open-file limit: %s\n", strerror(errno));
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (1u << 24))
		return 1u << 24;
	return rl.rlim_cur > 128 ? (size_t)rl.rlim_cur - 64 : 64;
}

/* Accepts every pending connection. A spare fd is kept so that at EMFILE the pending
 * connection can still be taken and closed instead of spinning on a readable listener. */
static void accept_all(struct sim_server *srv, int *spare_fd)
{
	for (;;) {
		int fd = accept4(srv->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if ((errno == EMFILE || errno == ENFILE) && *spare_fd >= 0) {
				close(*spare_fd);
				fd = accept(srv->listen_fd, NULL, NULL);
				if (fd >= 0)
					close(fd);
				*spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
				fprintf(stderr, "latscope sim: out of file descriptors: refused a connection\n");
				continue;
			}
			return;
		}
		if (srv->n_conns >= srv->max_conns) {
			close(fd); /* over --max-conns */
			continue;
		}
		sim_conn_accept(srv, fd);
	}
}

static int setup(struct sim_server *srv)
{
	const struct sim_config *cfg = srv->cfg;
	if (sim_truth_open(&srv->truth, cfg->truth_path))
		return 1;
	if (cfg->gpu) {
		char path[4096];
		const char *lib = cfg->gpu_lib;
		if (!lib) {
			if (sim_gpu_default_path(path, sizeof(path)))
				return 1;
			lib = path;
		}
		if (sim_gpu_open(&srv->gpu, lib, cfg->gpu_device))
			return 1;
	}
	if (cfg->tls && !(srv->ssl_ctx = sim_tls_ctx(cfg)))
		return 1;
	if (sim_engine_init(srv))
		return 1;
	srv->listen_fd = open_listener(cfg);
	if (srv->listen_fd < 0)
		return 1;
	srv->epfd = epoll_create1(EPOLL_CLOEXEC);
	srv->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	srv->signal_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (srv->epfd < 0 || srv->timer_fd < 0 || srv->signal_fd < 0 ||
	    add_fd(srv, srv->listen_fd, TAG_LISTEN) || add_fd(srv, srv->timer_fd, TAG_TIMER) ||
	    add_fd(srv, srv->signal_fd, TAG_SIGNAL)) {
		fprintf(stderr, "latscope sim: event loop setup failed: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}

static void teardown(struct sim_server *srv)
{
	srv->stop = 1;
	sim_conn_close_all(srv);
	sim_engine_fini(srv);
	sim_truth_close(&srv->truth);
	sim_perf_free(&srv->perf);
	sim_gpu_close(&srv->gpu);
	if (srv->ssl_ctx)
		SSL_CTX_free(srv->ssl_ctx);
	int fds[] = { srv->epfd, srv->listen_fd, srv->timer_fd, srv->signal_fd };
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

int sim_server_run(const struct sim_config *cfg)
{
	struct sim_server srv = { .cfg = cfg, .epfd = -1, .listen_fd = -1, .timer_fd = -1, .signal_fd = -1 };
	srv.start_ns = ls_now_ns();
	srv.truth.fd = -1;
	signal(SIGPIPE, SIG_IGN); /* OpenSSL writes through write(2): a closed peer must not kill us */
	size_t fit = raise_nofile();
	srv.max_conns = cfg->max_conns > 0 ? (size_t)cfg->max_conns : fit;
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* step deadlines: no 50 us of default slack */

	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, &old);

	int rc = setup(&srv);
	int spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (!rc && !cfg->quiet)
		fprintf(stderr, "latscope sim: listening on %s://%s:%d (step %.3g ms, max batch %d, accept len %.3g%s)\n",
			cfg->tls ? "https" : "http", cfg->host, cfg->port, cfg->step_ms, cfg->max_batch,
			cfg->accept_len, cfg->truth_path ? ", truth on" : "");
	struct epoll_event events[512];
	while (!rc && !srv.stop) {
		int n = epoll_wait(srv.epfd, events, 512, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "latscope sim: epoll_wait: %s\n", strerror(errno));
			rc = 1;
			break;
		}
		for (int i = 0; i < n; i++) {
			uint64_t tag = events[i].data.u64;
			if (tag == TAG_LISTEN) {
				accept_all(&srv, &spare_fd);
			} else if (tag == TAG_TIMER) {
				uint64_t expirations;
				if (read(srv.timer_fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
					fprintf(stderr, "latscope sim: timerfd read: %s\n", strerror(errno));
				sim_engine_on_timer(&srv);
			} else if (tag == TAG_SIGNAL) {
				struct signalfd_siginfo si;
				if (read(srv.signal_fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
					srv.stop = 1;
			} else {
				sim_conn_on_event(events[i].data.ptr, events[i].events);
			}
		}
		sim_conn_reap(&srv);
		sim_engine_kick(&srv);
	}
	if (spare_fd >= 0)
		close(spare_fd);
	teardown(&srv);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (!rc && !cfg->quiet)
		fprintf(stderr, "latscope sim: stopped: %llu connections, %llu requests, %llu truth lines\n",
			(unsigned long long)srv.accepted_total, (unsigned long long)srv.requests_total,
			(unsigned long long)srv.truth.lines);
	return rc;
}
