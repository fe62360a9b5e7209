/* test_sim_client.c — see test_sim_client.h. */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "base/clock.h"
#include "test_sim_client.h"

int t_connect(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

struct reader {
	char  *raw;
	size_t raw_len, raw_cap, pos;   /* pos: parsed up to */
	int    head_done;
	long long content_length;
	enum { CH_SIZE, CH_DATA, CH_DATA_CRLF, CH_TRAILER, CH_DONE } ch;
	size_t ch_left;
	size_t sse_scan;                 /* body offset up to which SSE boundaries were found */
	size_t sse_start;
	size_t body_cap;
};

static int grow(char **buf, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 4096;
	while (c < need)
		c *= 2;
	char *n = realloc(*buf, c);
	if (!n)
		return -1;
	*buf = n;
	*cap = c;
	return 0;
}

static void body_add(struct reader *rd, struct t_resp *resp, const char *p, size_t n)
{
	if (grow(&resp->body, &rd->body_cap, resp->body_len + n + 1))
		return;
	memcpy(resp->body + resp->body_len, p, n);
	resp->body_len += n;
	resp->body[resp->body_len] = 0;
}

static void add_events(struct reader *rd, struct t_resp *resp, uint64_t t)
{
	while (resp->body && rd->sse_scan < resp->body_len) {
		char *hit = memmem(resp->body + rd->sse_scan, resp->body_len - rd->sse_scan, "\n\n", 2);
		if (!hit) {
			rd->sse_scan = resp->body_len > 0 ? resp->body_len - 1 : 0;
			if (rd->sse_scan < rd->sse_start)
				rd->sse_scan = rd->sse_start;
			return;
		}
		size_t end = (size_t)(hit - resp->body);
		const char *msg = resp->body + rd->sse_start;
		size_t len = end - rd->sse_start;
		if (len >= 6 && !strncmp(msg, "data: ", 6)) {
			struct t_event *ev = realloc(resp->events, (resp->n_events + 1) * sizeof(*ev));
			if (ev) {
				resp->events = ev;
				ev[resp->n_events].t_ns = t;
				ev[resp->n_events].data = strndup(msg + 6, len - 6);
				resp->n_events++;
			}
		}
		rd->sse_start = rd->sse_scan = end + 2;
	}
}

/* Parses what has arrived; 1 when the response is complete. */
static int parse(struct reader *rd, struct t_resp *resp, uint64_t t)
{
	if (!rd->head_done) {
		char *e = memmem(rd->raw, rd->raw_len, "\r\n\r\n", 4);
		if (!e)
			return 0;
		size_t hl = (size_t)(e - rd->raw) + 4;
		resp->head = strndup(rd->raw, hl);
		sscanf(rd->raw, "HTTP/1.%*d %d", &resp->status);
		if (resp->status == 100) { /* skip an interim response */
			memmove(rd->raw, rd->raw + hl, rd->raw_len - hl);
			rd->raw_len -= hl;
			free(resp->head);
			resp->head = NULL;
			resp->status = 0;
			return parse(rd, resp, t);
		}
		rd->head_done = 1;
		rd->pos = hl;
		rd->content_length = -1;
		for (char *l = strstr(resp->head, "\r\n"); l && l[2] != '\r'; l = strstr(l + 2, "\r\n")) {
			if (!strncasecmp(l + 2, "content-length:", 15))
				rd->content_length = atoll(l + 17);
			if (!strncasecmp(l + 2, "transfer-encoding: chunked", 26))
				resp->chunked = 1;
		}
	}
	if (!resp->chunked) {
		body_add(rd, resp, rd->raw + rd->pos, rd->raw_len - rd->pos);
		rd->pos = rd->raw_len;
		return rd->content_length >= 0 && (long long)resp->body_len >= rd->content_length;
	}
	while (rd->pos < rd->raw_len && rd->ch != CH_DONE) {
		char *p = rd->raw + rd->pos;
		size_t left = rd->raw_len - rd->pos;
		if (rd->ch == CH_SIZE || rd->ch == CH_TRAILER) {
			char *e = memmem(p, left, "\r\n", 2);
			if (!e)
				break;
			if (rd->ch == CH_SIZE) {
				rd->ch_left = strtoul(p, NULL, 16);
				rd->ch = rd->ch_left ? CH_DATA : CH_TRAILER;
				if (!rd->ch_left)
					resp->saw_last_chunk = 1;
			} else if (e == p) {
				rd->ch = CH_DONE;
			}
			rd->pos += (size_t)(e - p) + 2;
		} else if (rd->ch == CH_DATA) {
			size_t n = left < rd->ch_left ? left : rd->ch_left;
			body_add(rd, resp, p, n);
			rd->ch_left -= n;
			rd->pos += n;
			if (!rd->ch_left)
				rd->ch = CH_DATA_CRLF;
		} else { /* CH_DATA_CRLF */
			if (left < 2)
				break;
			rd->pos += 2;
			rd->ch = CH_SIZE;
		}
	}
	add_events(rd, resp, t);
	return rd->ch == CH_DONE;
}

static int read_response(int fd, struct t_resp *resp, int timeout_ms)
{
	struct reader rd = { 0 };
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int pr = poll(&pfd, 1, timeout_ms);
		if (pr == 0) {
			resp->end = T_TIMEOUT;
			break;
		}
		if (pr < 0 && errno == EINTR)
			continue;
		if (grow(&rd.raw, &rd.raw_cap, rd.raw_len + 65536))
			break;
		ssize_t n = recv(fd, rd.raw + rd.raw_len, 65536, 0);
		uint64_t t = ls_now_ns();
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			resp->end = errno == ECONNRESET ? T_RESET : T_EOF;
			break;
		}
		if (n == 0) {
			resp->end = T_EOF;
			if (rd.head_done && !resp->chunked && rd.content_length < 0)
				parse(&rd, resp, t);
			break;
		}
		rd.raw_len += (size_t)n;
		if (parse(&rd, resp, t)) {
			resp->end = T_COMPLETE;
			break;
		}
	}
	if (resp->chunked && (rd.ch == CH_DATA || rd.ch == CH_DATA_CRLF))
		resp->chunk_incomplete = 1;
	if (!rd.head_done && rd.raw_len) {
		resp->head = strndup(rd.raw, rd.raw_len);
		sscanf(rd.raw, "HTTP/1.%*d %d", &resp->status);
	}
	free(rd.raw);
	return 0;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int t_exchange(int fd, const char *method, const char *path, const char *extra_headers,
		 const char *body, struct t_resp *resp, int timeout_ms)
{
	memset(resp, 0, sizeof(*resp));
	size_t blen = body ? strlen(body) : 0;
	size_t cap = strlen(path) + (extra_headers ? strlen(extra_headers) : 0) + blen + 256;
	char *req = malloc(cap);
	if (!req)
		return -1;
	int n = snprintf(req, cap, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s%s%zu\r\n\r\n", method, path,
			 extra_headers ? extra_headers : "", body ? "Content-Type: application/json\r\nContent-Length: " : "Content-Length: ",
			 blen);
	if (body)
		memcpy(req + n, body, blen);
	resp->sent_ns = ls_now_ns();
	int rc = send_all(fd, req, (size_t)n + blen);
	free(req);
	if (rc) {
		resp->end = T_RESET;
		return 0;
	}
	return read_response(fd, resp, timeout_ms);
}

int t_request(int port, const char *method, const char *path, const char *extra_headers,
		const char *body, struct t_resp *resp, int timeout_ms)
{
	int fd = t_connect(port);
	if (fd < 0) {
		memset(resp, 0, sizeof(*resp));
		resp->end = T_CONNECT_FAILED;
		return -1;
	}
	int rc = t_exchange(fd, method, path, extra_headers, body, resp, timeout_ms);
	close(fd);
	return rc;
}

int t_raw(int port, const char *raw, size_t len, struct t_resp *resp, int timeout_ms)
{
	memset(resp, 0, sizeof(*resp));
	int fd = t_connect(port);
	if (fd < 0) {
		resp->end = T_CONNECT_FAILED;
		return -1;
	}
	resp->sent_ns = ls_now_ns();
	if (send_all(fd, raw, len))
		resp->end = T_RESET;
	else
		read_response(fd, resp, timeout_ms);
	close(fd);
	return 0;
}

void t_resp_free(struct t_resp *resp)
{
	free(resp->head);
	free(resp->body);
	for (size_t i = 0; i < resp->n_events; i++)
		free(resp->events[i].data);
	free(resp->events);
	memset(resp, 0, sizeof(*resp));
}

int t_truth_lines(const char *path, cJSON ***lines)
{
	FILE *f = fopen(path, "r");
	*lines = NULL;
	if (!f)
		return 0;
	int n = 0;
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, f) > 0) {
		cJSON *o = cJSON_Parse(line);
		if (!o)
			continue;
		cJSON **g = realloc(*lines, (size_t)(n + 1) * sizeof(*g));
		if (!g) {
			cJSON_Delete(o);
			break;
		}
		*lines = g;
		g[n++] = o;
	}
	free(line);
	fclose(f);
	return n;
}

void t_truth_lines_free(cJSON **lines, int n)
{
	for (int i = 0; i < n; i++)
		cJSON_Delete(lines[i]);
	free(lines);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double t_median(double *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(double), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double t_cpu_seconds(int pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	if (!p)
		return -1;
	unsigned long long ut = 0, st = 0;
	/* fields after ')': state(3) ... utime(14) stime(15) */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}
