/* sim/sim_http.h — the simulator's HTTP/1.x request-head parser: a pure function over a buffer
 * (like picohttpparser) so it can be fuzzed on its own. It never reads past buf + len and never
 * allocates; the pointers it fills point into buf. */
#ifndef LATSCOPE_SIM_HTTP_H
#define LATSCOPE_SIM_HTTP_H

#include <stddef.h>
#include <stdint.h>

#define SIM_HTTP_MAX_HEADERS 64

struct sim_http_header {
	const char *name;
	size_t      name_len;
	const char *value;
	size_t      value_len;
};

struct sim_http_req {
	const char *method;
	size_t      method_len;
	const char *path;           /* request-target as sent (query string included) */
	size_t      path_len;
	int         minor_version;  /* HTTP/1.<minor> */
	struct sim_http_header headers[SIM_HTTP_MAX_HEADERS];
	size_t      n_headers;
	int64_t     content_length; /* -1 when absent */
	int         chunked;        /* Transfer-Encoding present (bodies must use Content-Length) */
	int         keep_alive;     /* after Connection: and the version's default */
	int         expect_continue;
	const char *request_id;     /* X-Request-Id value, NULL when absent */
	size_t      request_id_len;
	int         status;         /* on -1: the HTTP status to answer (400 or 431) */
	const char *error;          /* on -1: why, for the error body */
};

#define SIM_HTTP_INCOMPLETE (-2)
#define SIM_HTTP_ERROR      (-1)

/* Parses the request head in buf[0, len). Returns the bytes of the head (request line through
 * the blank line), SIM_HTTP_INCOMPLETE (-2) when more bytes are needed, or SIM_HTTP_ERROR (-1)
 * with req->status/req->error set. A head longer than max_header_bytes, or with more than
 * SIM_HTTP_MAX_HEADERS headers, is an error with status 431 (even while still incomplete). */
int sim_http_parse(const char *buf, size_t len, size_t max_header_bytes, struct sim_http_req *req);

/* Case-insensitive header lookup; NULL when absent. */
const struct sim_http_header *sim_http_find(const struct sim_http_req *req, const char *name);

/* The reason phrase of a status code ("OK", "Bad Request", ...). */
const char *sim_http_reason(int status);
/* 1 when the request's path, without its query string, is exactly path. */
int sim_http_path_is(const struct sim_http_req *req, const char *path);

#endif
