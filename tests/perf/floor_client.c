/* floor_client.c — the floor of `make bench` (issue 17): the least a client can add to a
 * streaming request on this machine. No library: non-blocking connect() for every request that
 * may start, one write() of the whole request on its socket's EPOLLOUT, epoll for everything,
 * and a scan of the response bytes for the first token frame ("choices":[{ in a data: line,
 * the frame vLLM's client starts TTFT on) and the end of the chunked body. It is a measuring
 * stick for tests/perf/run.sh, not a client: it speaks only the HTTP/1.1 the simulator answers
 * (chunked SSE) on loopback.
 *
 * Arrivals: --rate 0 (default) starts min(N, C) requests at once and each finished one starts
 * the next on its kept-alive connection (a closed loop of C); --rate R draws Poisson gaps
 * (seeded), starting each on an idle kept-alive connection or a new one.
 *
 * Output (--out FILE, and a summary line on stdout): a header line {"floor_client":1,
 * "start_ns":...} then one JSON line per request: id (its X-Request-Id), start_ns (when it may
 * start: the run's start for the first burst, its deadline under --rate, the previous request's
 * end on a closed-loop connection), sent_ns (write() returned), first_ns (the read that brought
 * the first token frame), done_ns (the end of the body), all CLOCK_MONOTONIC ns, 0 = never;
 * new_conn; error. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUF_MAX 65536
#define TAIL 16 /* bytes kept across reads so a pattern split by a read boundary is found */

struct req {
	uint64_t start_ns, sent_ns, first_ns, done_ns;
	int new_conn;
	const char *error;
};

struct conn {
	int fd;
	long req;          /* request on it, -1 idle */
	int connecting;
	int in_body;       /* headers seen */
	char tail[TAIL];   /* last bytes of the previous read */
	size_t tail_len;
	struct conn *next_idle;
};

static struct {
	const char *host, *path, *model, *prefix, *out;
	int port, num, conc, words, out_len, ignore_eos;
	double rate;
	unsigned long long seed;
} opt = { "127.0.0.1", "/v1/completions", "latscope-sim", "fl-", NULL, 8000, 16, 0, 32, 64, 0, 0, 1 };

static struct req *reqs;
static char *body;
static size_t body_len;
static int ep;
static struct sockaddr_in addr;
static struct conn *idle;
static long next_req, n_done;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double rng_uniform(void) /* splitmix64 -> (0, 1) */
{
	uint64_t z = (opt.seed += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

static int usage(void)
{
	fprintf(stderr, "usage: floor_client [--host A] [--port P] [--path /v1/completions] [--model M] [--num N]\n"
		"  [--concurrency C] [--rate R] [--seed S] [--input-words W] [--output-len L] [--ignore-eos]\n"
		"  [--id-prefix P] [--out FILE]\n");
	return 2;
}

static int parse(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--ignore-eos")) { opt.ignore_eos = 1; continue; }
		if (!v)
			return usage();
		i++;
		if (!strcmp(a, "--host")) opt.host = v;
		else if (!strcmp(a, "--port")) opt.port = atoi(v);
		else if (!strcmp(a, "--path")) opt.path = v;
		else if (!strcmp(a, "--model")) opt.model = v;
		else if (!strcmp(a, "--num")) opt.num = atoi(v);
		else if (!strcmp(a, "--concurrency")) opt.conc = atoi(v);
		else if (!strcmp(a, "--rate")) opt.rate = strcmp(v, "inf") ? atof(v) : 0;
		else if (!strcmp(a, "--seed")) opt.seed = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--input-words")) opt.words = atoi(v);
		else if (!strcmp(a, "--output-len")) opt.out_len = atoi(v);
		else if (!strcmp(a, "--id-prefix")) opt.prefix = v;
		else if (!strcmp(a, "--out")) opt.out = v;
		else return usage();
	}
	if (opt.num <= 0 || opt.port <= 0 || opt.words < 0 || opt.rate < 0)
		return usage();
	if (opt.conc <= 0 || opt.conc > opt.num)
		opt.conc = opt.num;
	return 0;
}

/* The JSON body Python's client sends (vLLM's async_request_openai_completions). */
static int make_body(void)
{
	size_t cap = 256 + strlen(opt.model) + (size_t)opt.words * 6;
	body = malloc(cap);
	if (!body)
		return -1;
	int n = snprintf(body, cap, "{\"model\":\"%s\",\"prompt\":\"", opt.model);
	for (int w = 0; w < opt.words; w++)
		n += snprintf(body + n, cap - (size_t)n, "%shello", w ? " " : "");
	n += snprintf(body + n, cap - (size_t)n, "\",\"temperature\":0.0,\"max_tokens\":%d,\"stream\":true,"
		      "\"stream_options\":{\"include_usage\":true}%s}", opt.out_len,
		      opt.ignore_eos ? ",\"ignore_eos\":true" : "");
	body_len = (size_t)n;
	return 0;
}

static void finish(struct conn *c, const char *error)
{
	struct req *r = &reqs[c->req];
	r->done_ns = now_ns();
	r->error = error;
	c->req = -1;
	n_done++;
}

/* One write() of the whole request; the stamp is the floor's "sent". */
static void send_req(struct conn *c)
{
	char head[512];
	int n = snprintf(head, sizeof(head), "POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
			 "X-Request-Id: %s%ld\r\nContent-Length: %zu\r\n\r\n", opt.path, opt.host, opt.port,
			 opt.prefix, c->req, body_len);
	static char *msg;
	static size_t msg_cap;
	if ((size_t)n + body_len > msg_cap) {
		free(msg);
		msg_cap = (size_t)n + body_len;
		msg = malloc(msg_cap);
	}
	if (!msg) {
		finish(c, "out of memory");
		return;
	}
	memcpy(msg, head, (size_t)n);
	memcpy(msg + n, body, body_len);
	ssize_t w = write(c->fd, msg, (size_t)n + body_len);
	reqs[c->req].sent_ns = now_ns();
	if (w != (ssize_t)((size_t)n + body_len)) {
		finish(c, w < 0 ? "write failed" : "short write");
		return;
	}
	c->in_body = 0;
	c->tail_len = 0;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
	epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Starts request i on an idle connection, else on a new one (its write waits for EPOLLOUT). */
static void start_req(long i, uint64_t start_ns)
{
	struct req *r = &reqs[i];
	r->start_ns = start_ns;
	struct conn *c = idle;
	if (c) {
		idle = c->next_idle;
		c->req = i;
		send_req(c);
		return;
	}
	c = calloc(1, sizeof(*c));
	int fd = c ? socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0) : -1;
	if (fd < 0) {
		free(c);
		r->error = "socket failed";
		r->done_ns = now_ns();
		n_done++;
		return;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->fd = fd;
	c->req = i;
	c->connecting = 1;
	r->new_conn = 1;
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) && errno != EINPROGRESS) {
		finish(c, "connect failed");
		close(fd);
		free(c);
		return;
	}
	struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = c };
	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

static int has(const char *hay, size_t n, const char *needle)
{
	return memmem(hay, n, needle, strlen(needle)) != NULL;
}

/* Scans what arrived (with the previous read's tail) for the headers' end, the first token
 * frame and the chunked body's last chunk. 1 when the response is complete. */
static int scan(struct conn *c, const char *buf, size_t n, uint64_t t)
{
	static char win[TAIL + BUF_MAX];
	memcpy(win, c->tail, c->tail_len);
	memcpy(win + c->tail_len, buf, n);
	size_t len = c->tail_len + n;
	const char *from = win;
	if (!c->in_body) {
		const char *e = memmem(win, len, "\r\n\r\n", 4);
		if (e) {
			c->in_body = 1;
			from = e + 4;
		}
	}
	int done = 0;
	if (c->in_body) {
		size_t rest = len - (size_t)(from - win);
		struct req *r = &reqs[c->req];
		if (!r->first_ns && has(from, rest, "\"choices\":[{"))
			r->first_ns = t;
		done = has(from, rest, "\r\n0\r\n\r\n");
	}
	c->tail_len = len < TAIL ? len : TAIL;
	memcpy(c->tail, win + len - c->tail_len, c->tail_len);
	return done;
}

static void on_readable(struct conn *c)
{
	static char buf[BUF_MAX];
	for (;;) {
		ssize_t n = read(c->fd, buf, sizeof(buf));
		uint64_t t = now_ns();
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			if (c->req >= 0)
				finish(c, "closed before the end");
			epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
			close(c->fd);
			free(c);
			return;
		}
		if (c->req < 0)
			continue; /* bytes on an idle connection: ignore */
		if (!scan(c, buf, (size_t)n, t))
			continue;
		finish(c, NULL);
		/* Closed loop: the next request on this connection; else it waits idle. */
		if (opt.rate == 0 && next_req < opt.num) {
			c->req = next_req++;
			reqs[c->req].start_ns = now_ns();
			send_req(c);
		} else {
			c->next_idle = idle;
			idle = c;
		}
	}
}

static void on_event(struct conn *c, uint32_t events)
{
	if (c->connecting) {
		int err = 0;
		socklen_t l = sizeof(err);
		getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
		c->connecting = 0;
		if (err || (events & EPOLLERR)) {
			finish(c, "connect failed");
			epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
			close(c->fd);
			free(c);
			return;
		}
		send_req(c);
		return;
	}
	on_readable(c);
}

static int write_out(uint64_t t0)
{
	FILE *f = opt.out ? fopen(opt.out, "w") : NULL;
	if (opt.out && !f) {
		perror(opt.out);
		return 1;
	}
	double sum = 0;
	long ok = 0, failed = 0;
	if (f)
		fprintf(f, "{\"floor_client\":1,\"start_ns\":%llu,\"num\":%d,\"concurrency\":%d,\"rate\":%g}\n",
			(unsigned long long)t0, opt.num, opt.conc, opt.rate);
	for (long i = 0; i < opt.num; i++) {
		struct req *r = &reqs[i];
		const char *err = r->error ? r->error : (!r->first_ns ? "no token frame" : NULL);
		if (err)
			failed++;
		else {
			ok++;
			sum += (double)(r->first_ns - r->start_ns);
		}
		if (f)
			fprintf(f, "{\"id\":\"%s%ld\",\"start_ns\":%llu,\"sent_ns\":%llu,\"first_ns\":%llu,\"done_ns\":%llu,"
				"\"new_conn\":%d,\"error\":\"%s\"}\n", opt.prefix, i, (unsigned long long)r->start_ns,
				(unsigned long long)r->sent_ns, (unsigned long long)r->first_ns,
				(unsigned long long)r->done_ns, r->new_conn, err ? err : "");
	}
	if (f && fclose(f)) {
		perror(opt.out);
		return 1;
	}
	printf("completed %ld failed %ld mean TTFT %.3f ms\n", ok, failed, ok ? sum / (double)ok / 1e6 : 0.0);
	return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (parse(argc, argv))
		return 2;
	struct rlimit rl;
	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)opt.port);
	reqs = calloc((size_t)opt.num, sizeof(*reqs));
	ep = epoll_create1(0);
	if (!reqs || ep < 0 || make_body() || inet_pton(AF_INET, opt.host, &addr.sin_addr) != 1) {
		fprintf(stderr, "floor_client: setup failed (host must be a numeric IPv4 address)\n");
		return 1;
	}
	uint64_t t0 = now_ns(), next_at = t0;
	struct epoll_event evs[256];
	if (opt.rate == 0)
		while (next_req < opt.conc)
			start_req(next_req++, t0); /* all begun at t0: the first ones' connects delay the rest */
	while (n_done < opt.num) {
		int timeout = -1;
		if (opt.rate > 0 && next_req < opt.num) {
			uint64_t now = now_ns();
			while (next_req < opt.num && next_at <= now) {
				start_req(next_req++, next_at); /* from its deadline, as a schedule lag counts */
				next_at += (uint64_t)(-log(rng_uniform()) / opt.rate * 1e9);
			}
			/* epoll's ms timeout: sleep to within 1-2 ms of the deadline, then poll. */
			if (next_req < opt.num)
				timeout = next_at - now >= 2000000 ? (int)((next_at - now) / 1000000) - 1 : 0;
		}
		int n = epoll_wait(ep, evs, 256, timeout);
		for (int i = 0; i < n; i++)
			on_event(evs[i].data.ptr, evs[i].events);
	}
	return write_out(t0);
}
