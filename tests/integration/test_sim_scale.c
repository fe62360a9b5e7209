/* test_sim_scale.c — 2,000 concurrent streams against one simulator thread: every stream
 * completes without error, all 2,000 were in the running batch at once (truth), and the CPU
 * the simulator spent per frame and its peak RSS stay within generous bounds. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include "base/clock.h"
#include "t_helpers.h"
#include "test_sim_client.h"

static struct t_sim sim;

static void fini(void)
{
	t_sim_stop(&sim);
}

TestSuite(sim_scale, .fini = fini, .timeout = 120);

enum { N_TOKENS = 16 };
static int N_STREAMS = 2000; /* LATSCOPE_SIM_SCALE_N overrides it for a manual measurement */

struct stream {
	int    fd;
	int    sent;
	int    done;
	char  *buf;
	size_t len, cap;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

Test(sim_scale, two_thousand_concurrent_streams)
{
	if (getenv("LATSCOPE_SIM_SCALE_N"))
		N_STREAMS = atoi(getenv("LATSCOPE_SIM_SCALE_N"));
	cr_assert_gt(N_STREAMS, 0);
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_max < (rlim_t)N_STREAMS + 64)
		cr_skip_test("open-file hard limit %llu is below %d", (unsigned long long)rl.rlim_max, N_STREAMS + 64);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);

	const char *extra[] = { "--step-ms", "10", "--max-batch", "8192", "--prefill-token-us", "0", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, extra), 0);
	usleep(100000); /* let the start-up CPU settle out of the measurement */
	double cpu0 = t_cpu_seconds(sim.pid);

	char req[512];
	const char *body = "{\"prompt\":\"hello\",\"max_tokens\":16,\"ignore_eos\":true,\"stream\":true}";
	int req_len = snprintf(req, sizeof(req),
			       "POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
			       "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s", strlen(body), body);
	int ep = epoll_create1(0);
	struct stream *st = calloc(N_STREAMS, sizeof(*st));
	cr_assert(st && ep >= 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)sim.port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	for (int i = 0; i < N_STREAMS; i++) {
		st[i].fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		cr_assert_geq(st[i].fd, 0, "socket %d: %s", i, strerror(errno));
		int rc = connect(st[i].fd, (struct sockaddr *)&a, sizeof(a));
		cr_assert(rc == 0 || errno == EINPROGRESS, "connect %d: %s", i, strerror(errno));
		struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.u32 = (uint32_t)i };
		epoll_ctl(ep, EPOLL_CTL_ADD, st[i].fd, &ev);
	}
	uint64_t t0 = ls_now_ns();
	int done = 0, errors = 0;
	struct epoll_event evs[256];
	while (done < N_STREAMS && ls_now_ns() - t0 < 60ull * 1000000000ull) {
		int n = epoll_wait(ep, evs, 256, 1000);
		for (int k = 0; k < n; k++) {
			struct stream *s = &st[evs[k].data.u32];
			if (s->done)
				continue;
			if (!s->sent && (evs[k].events & EPOLLOUT)) {
				if (send(s->fd, req, (size_t)req_len, MSG_NOSIGNAL) != req_len) {
					errors++;
					s->done = 1;
					done++;
					close(s->fd);
					continue;
				}
				s->sent = 1;
				struct epoll_event ev = { .events = EPOLLIN, .data.u32 = evs[k].data.u32 };
				epoll_ctl(ep, EPOLL_CTL_MOD, s->fd, &ev);
			}
			if (!(evs[k].events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
				continue;
			for (;;) {
				if (s->len + 8192 > s->cap) {
					s->cap = s->cap ? s->cap * 2 : 16384;
					s->buf = realloc(s->buf, s->cap);
				}
				ssize_t r = recv(s->fd, s->buf + s->len, s->cap - s->len - 1, 0);
				if (r > 0) {
					s->len += (size_t)r;
					continue;
				}
				if (r < 0 && (errno == EAGAIN || errno == EINTR))
					break;
				/* EOF (Connection: close) or error: the stream is over */
				s->buf[s->len] = 0;
				int ok = r == 0 && !strncmp(s->buf, "HTTP/1.1 200", 12) &&
					 s->len > 40 && strstr(s->buf, "data: [DONE]\n\n") &&
					 !strcmp(s->buf + s->len - 5, "0\r\n\r\n");
				errors += !ok;
				s->done = 1;
				done++;
				close(s->fd);
				break;
			}
		}
	}
	double wall = (double)(ls_now_ns() - t0) / 1e9;
	double cpu = t_cpu_seconds(sim.pid) - cpu0;
	long hwm_kb = 0;
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)sim.pid);
	FILE *pf = fopen(path, "r");
	while (pf && fgets(line, sizeof(line), pf))
		if (!strncmp(line, "VmHWM:", 6))
			hwm_kb = atol(line + 6);
	if (pf)
		fclose(pf);
	close(ep);
	for (int i = 0; i < N_STREAMS; i++) {
		if (!st[i].done)
			close(st[i].fd);
		free(st[i].buf);
	}
	free(st);
	cr_expect_eq(done, N_STREAMS, "streams finished: %d", done);
	cr_expect_eq(errors, 0, "streams with an error: %d", errors);

	setenv("T_KEEP", "1", 1);
	t_sim_stop(&sim);
	unsetenv("T_KEEP");
	cJSON **lines;
	int n = t_truth_lines(sim.truth, &lines);
	unlink(sim.truth);
	cr_expect_eq(n, N_STREAMS);
	/* peak overlap of [admitted, finished]: how many streams the engine ran at once */
	uint64_t *ev = malloc(sizeof(uint64_t) * 2 * (size_t)(n > 0 ? n : 1));
	long frames = 0;
	for (int i = 0; i < n; i++) {
		ev[2 * i] = ((uint64_t)cJSON_GetObjectItem(lines[i], "admitted")->valuedouble) << 1 | 1;
		ev[2 * i + 1] = ((uint64_t)cJSON_GetObjectItem(lines[i], "finished")->valuedouble) << 1;
		frames += cJSON_GetArraySize(cJSON_GetObjectItem(lines[i], "frames"));
		cr_expect_str_eq(cJSON_GetObjectItem(lines[i], "reason")->valuestring, "length");
	}
	qsort(ev, (size_t)n * 2, sizeof(uint64_t), cmp_u64);
	int cur = 0, peak = 0;
	for (int i = 0; i < 2 * n; i++) {
		cur += (ev[i] & 1) ? 1 : -1;
		if (cur > peak)
			peak = cur;
	}
	free(ev);
	t_truth_lines_free(lines, n);
	fprintf(stderr, "sim scale: %d streams x %d tokens in %.2f s wall, peak %d running at once, %ld frames, "
		"sim CPU %.3f s (%.2f us per frame), sim peak RSS %.1f MiB\n", N_STREAMS, N_TOKENS, wall, peak, frames,
		cpu, frames ? cpu * 1e6 / (double)frames : 0, (double)hwm_kb / 1024);
	cr_expect_geq(peak, N_STREAMS * 9 / 10, "streams running at once: %d", peak);
	/* Generous bounds (about 10x what one thread needs here; tests/perf measures the figures):
	 * CPU time, not wall, so a busy host does not move them much. They catch a sim that went
	 * quadratic in its streams or holds a big buffer per stream. */
	cr_expect(frames > 0 && cpu * 1e6 / (double)frames < 250.0, "sim CPU %.2f us per frame",
		  frames ? cpu * 1e6 / (double)frames : 0);
	cr_expect_gt(hwm_kb, 0, "the sim's peak RSS was read");
	cr_expect_lt(hwm_kb, 32 * 1024 + 32L * N_STREAMS, "sim peak RSS %.1f MiB for %d streams",
		     (double)hwm_kb / 1024, N_STREAMS);
}
