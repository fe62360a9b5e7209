/* lab/lab_ping.c — the RTT the lab really delivers: TCP connects from the client namespace to
 * a listener in the server namespace. A blocking connect() returns when the SYN-ACK is back:
 * one round trip through the delay line. The RTT reported is the kernel's sample of it
 * (TCP_INFO); the time connect() took, wake-up included, is reported beside it. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include "base/clock.h"
#include "base/stats.h"
#include "lab/lab.h"

double lab_pct_u64(uint64_t *v, size_t n, double pct)
{
	ls_sort_u64(v, n);
	return ls_percentile_u64(v, n, pct);
}

double lab_pct_dbl(double *v, size_t n, double pct)
{
	ls_sort_doubles(v, n);
	return ls_percentile(v, n, pct);
}

static void drain_accepts(int lfd)
{
	for (;;) {
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			return;
		close(c);
	}
}

int lab_ping(const struct lab_ns *ns, int n, struct lab_rtt *out)
{
	memset(out, 0, sizeof(*out));
	if (n <= 0)
		return -1;
	struct sockaddr_in srv = { .sin_family = AF_INET };
	inet_pton(AF_INET, LAB_SERVER_ADDR, &srv.sin_addr);
	socklen_t len = sizeof(srv);
	int one = 1, rc = -1, cfd = -1;
	uint64_t *samples = calloc((size_t)n, sizeof(*samples));
	uint64_t *kernel = calloc((size_t)n, sizeof(*kernel));
	int kgot = 0;
	int lfd = lab_socket_in(ns, LAB_SERVER, AF_INET, SOCK_STREAM | SOCK_NONBLOCK);
	if (!samples || !kernel || lfd < 0)
		goto out;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&srv, sizeof(srv)) < 0 || listen(lfd, 256) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&srv, &len) < 0) {
		fprintf(stderr, "lab: ping listener on %s: %s\n", LAB_SERVER_ADDR, strerror(errno));
		goto out;
	}
	/* The loop's sockets are made in the client namespace: stay there, come back after. */
	if (lab_ns_enter(ns, LAB_CLIENT) < 0)
		goto out;
	int got = 0;
	for (int i = 0; i < n && !lab_interrupted && !(i % 64 == 63 && lab_sleep_ms(0)); i++) {
		cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (cfd < 0)
			break;
		/* RST on close: measuring leaves nothing in TIME_WAIT. A lost SYN gives up in 2 s. */
		struct linger lin = { .l_onoff = 1, .l_linger = 0 };
		struct timeval tv = { .tv_sec = 2 };
		setsockopt(cfd, SOL_SOCKET, SO_LINGER, &lin, sizeof(lin));
		setsockopt(cfd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		uint64_t t0 = ls_now_ns();
		int c = connect(cfd, (struct sockaddr *)&srv, sizeof(srv));
		uint64_t t1 = ls_now_ns();
		int err = errno;
		/* The kernel's own RTT sample of the SYN / SYN-ACK exchange (srtt after one sample):
		 * the network alone, without our wake-up after it (50-90 us on this VM when idle). */
		struct tcp_info ti;
		socklen_t tlen = sizeof(ti);
		memset(&ti, 0, sizeof(ti));
		if (c == 0 && getsockopt(cfd, IPPROTO_TCP, TCP_INFO, &ti, &tlen) == 0 && ti.tcpi_rtt)
			kernel[kgot++] = (uint64_t)ti.tcpi_rtt * 1000;
		close(cfd);
		cfd = -1;
		drain_accepts(lfd);
		if (c < 0) {
			fprintf(stderr, "lab: ping connect %s:%d: %s\n", LAB_SERVER_ADDR, ntohs(srv.sin_port),
				strerror(err));
			continue;
		}
		samples[got++] = t1 - t0;
	}
	if (lab_ns_enter(ns, -1) < 0)
		goto out;
	if (got < n / 2 + 1) {
		fprintf(stderr, "lab: only %d of %d round trips through the delay line completed\n", got, n);
		goto out;
	}
	out->n = got;
	out->connect_median_us = lab_pct_u64(samples, (size_t)got, 50) / 1e3;
	out->connect_p99_us = lab_pct_u64(samples, (size_t)got, 99) / 1e3;
	/* Without TCP_INFO (never seen) the connect() times stand in. */
	uint64_t *best = kgot > got / 2 ? kernel : samples;
	size_t nb = kgot > got / 2 ? (size_t)kgot : (size_t)got;
	out->kernel = best == kernel;
	out->median_us = lab_pct_u64(best, nb, 50) / 1e3;
	out->min_us = (double)best[0] / 1e3; /* sorted by lab_pct_u64 */
	out->p99_us = lab_pct_u64(best, nb, 99) / 1e3;
	out->max_us = (double)best[nb - 1] / 1e3;
	rc = 0;
out:
	if (lfd >= 0)
		close(lfd);
	free(samples);
	free(kernel);
	return rc;
}
