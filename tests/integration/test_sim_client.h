/* test_sim_client.h — a tiny HTTP/1.1 client over plain sockets for the simulator's tests: it
 * stamps every recv, de-chunks incrementally and records when each SSE message completed, so
 * tests see frames exactly as a client would, and how the connection ended. */
#ifndef LATSCOPE_TEST_SIM_CLIENT_H
#define LATSCOPE_TEST_SIM_CLIENT_H

#include <stddef.h>
#include <stdint.h>

enum t_end {
	T_EOF = 0,      /* orderly close (FIN) */
	T_RESET,        /* ECONNRESET */
	T_TIMEOUT,      /* nothing arrived for timeout_ms */
	T_COMPLETE,     /* response complete (Content-Length or last chunk) on a kept-alive connection */
	T_CONNECT_FAILED,
};

struct t_event {
	uint64_t t_ns;    /* the recv that completed it */
	char    *data;    /* payload after "data: " (NUL-terminated) */
};

struct t_resp {
	int       status;
	char     *head;        /* response head */
	char     *body;        /* de-chunked body (NUL-terminated) */
	size_t    body_len;
	int       chunked;
	int       chunk_incomplete; /* the connection ended inside a chunk */
	int       saw_last_chunk;
	struct t_event *events;
	size_t    n_events;
	enum t_end end;
	uint64_t  sent_ns;
};

/* Connects to 127.0.0.1:port; -1 on error. */
int t_connect(int port);
/* Sends one request on fd and reads its response (until complete, EOF, reset or timeout).
 * extra_headers: full lines with CRLF, or NULL. body may be NULL. */
int t_exchange(int fd, const char *method, const char *path, const char *extra_headers,
		 const char *body, struct t_resp *resp, int timeout_ms);
/* connect + exchange + close. */
int t_request(int port, const char *method, const char *path, const char *extra_headers,
		const char *body, struct t_resp *resp, int timeout_ms);
/* Sends raw bytes and reads whatever comes back until EOF/timeout/complete. */
int t_raw(int port, const char *raw, size_t len, struct t_resp *resp, int timeout_ms);
void t_resp_free(struct t_resp *resp);

/* Reads the truth file into an array of cJSON objects (one per line); returns count. */
struct cJSON;
int t_truth_lines(const char *path, struct cJSON ***lines);
void t_truth_lines_free(struct cJSON **lines, int n);

/* Median of n doubles (sorts in place). */
double t_median(double *v, size_t n);

/* CPU seconds (user + system) a process has used, from /proc/PID/stat; -1 on error. */
double t_cpu_seconds(int pid);

#endif
