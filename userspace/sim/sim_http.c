/* sim/sim_http.c — see sim_http.h. Every read is bounds-checked against len: the parser is
 * fuzzed and must never crash or over-read, whatever the input. */
#include <string.h>
#include <strings.h>
#include "sim/sim_http.h"

static int is_tchar(unsigned char ch)
{
	/* RFC 9110 token characters */
	if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))
		return 1;
	return ch && strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

static int fail(struct sim_http_req *req, int status, const char *why)
{
	req->status = status;
	req->error = why;
	return SIM_HTTP_ERROR;
}

static int eq_ci(const char *s, size_t n, const char *lit)
{
	size_t l = strlen(lit);
	return n == l && strncasecmp(s, lit, l) == 0;
}

/* Does the comma-separated header value contain token (case-insensitive)? */
static int has_token(const char *v, size_t n, const char *token)
{
	size_t i = 0;
	while (i < n) {
		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		size_t s = i;
		while (i < n && v[i] != ',')
			i++;
		size_t e = i;
		while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (eq_ci(v + s, e - s, token))
			return 1;
	}
	return 0;
}

/* Finds the end of the line starting at *pos: sets *eol (index of CR or LF) and moves *pos past
 * the terminator. 0 when no terminator within len. Bare LF is accepted (as picohttpparser). */
static int next_line(const char *buf, size_t len, size_t *pos, size_t *eol)
{
	for (size_t i = *pos; i < len; i++) {
		if (buf[i] == '\n') {
			*eol = (i > *pos && buf[i - 1] == '\r') ? i - 1 : i;
			*pos = i + 1;
			return 1;
		}
	}
	return 0;
}

static int parse_request_line(const char *buf, size_t end, struct sim_http_req *req)
{
	size_t i = 0;
	while (i < end && is_tchar((unsigned char)buf[i]))
		i++;
	if (i == 0 || i >= end || buf[i] != ' ')
		return fail(req, 400, "malformed request line: bad method");
	req->method = buf;
	req->method_len = i;
	size_t p = ++i;
	while (i < end && (unsigned char)buf[i] > 0x20 && (unsigned char)buf[i] < 0x7f)
		i++;
	if (i == p || i >= end || buf[i] != ' ')
		return fail(req, 400, "malformed request line: bad request-target");
	req->path = buf + p;
	req->path_len = i - p;
	i++;
	if (end - i != 8 || memcmp(buf + i, "HTTP/1.", 7) != 0)
		return fail(req, 400, "malformed request line: expected HTTP/1.0 or HTTP/1.1");
	char minor = buf[i + 7];
	if (minor != '0' && minor != '1')
		return fail(req, 400, "unsupported HTTP version (HTTP/1.0 and HTTP/1.1 only)");
	req->minor_version = minor - '0';
	return 0;
}

static int parse_content_length(const char *v, size_t n, int64_t *out)
{
	if (n == 0)
		return -1;
	int64_t x = 0;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		if (x > (INT64_MAX - 9) / 10)
			return -1;
		x = x * 10 + (v[i] - '0');
	}
	*out = x;
	return 0;
}

static int parse_header(const char *line, size_t n, struct sim_http_req *req)
{
	if (n > 0 && (line[0] == ' ' || line[0] == '\t'))
		return fail(req, 400, "obsolete header line folding is not accepted");
	size_t i = 0;
	while (i < n && is_tchar((unsigned char)line[i]))
		i++;
	if (i == 0 || i >= n || line[i] != ':')
		return fail(req, 400, "malformed header line");
	size_t name_len = i++;
	while (i < n && (line[i] == ' ' || line[i] == '\t'))
		i++;
	size_t vs = i, ve = n;
	while (ve > vs && (line[ve - 1] == ' ' || line[ve - 1] == '\t'))
		ve--;
	for (size_t k = vs; k < ve; k++) {
		unsigned char ch = (unsigned char)line[k];
		if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
			return fail(req, 400, "control character in a header value");
	}
	if (req->n_headers >= SIM_HTTP_MAX_HEADERS)
		return fail(req, 431, "too many header fields");
	struct sim_http_header *h = &req->headers[req->n_headers++];
	h->name = line;
	h->name_len = name_len;
	h->value = line + vs;
	h->value_len = ve - vs;

	if (eq_ci(h->name, name_len, "content-length")) {
		int64_t cl;
		if (parse_content_length(h->value, h->value_len, &cl))
			return fail(req, 400, "invalid Content-Length");
		if (req->content_length >= 0 && req->content_length != cl)
			return fail(req, 400, "conflicting Content-Length headers");
		req->content_length = cl;
	} else if (eq_ci(h->name, name_len, "transfer-encoding")) {
		req->chunked = 1;
	} else if (eq_ci(h->name, name_len, "connection")) {
		if (has_token(h->value, h->value_len, "close"))
			req->keep_alive = 0;
		else if (has_token(h->value, h->value_len, "keep-alive"))
			req->keep_alive = 1;
	} else if (eq_ci(h->name, name_len, "expect")) {
		if (!eq_ci(h->value, h->value_len, "100-continue"))
			return fail(req, 400, "unsupported Expect header (only 100-continue)");
		req->expect_continue = 1;
	} else if (eq_ci(h->name, name_len, "x-request-id")) {
		req->request_id = h->value;
		req->request_id_len = h->value_len;
	}
	return 0;
}

int sim_http_parse(const char *buf, size_t len, size_t max_header_bytes, struct sim_http_req *req)
{
	memset(req, 0, sizeof(*req));
	req->content_length = -1;
	if (!buf)
		return SIM_HTTP_INCOMPLETE;
	size_t limit = len < max_header_bytes ? len : max_header_bytes;
	size_t pos = 0, eol;

	/* Tolerate empty lines before the request line (RFC 9112 2.2). */
	while (pos < limit && (buf[pos] == '\r' || buf[pos] == '\n'))
		pos++;
	const char *start = buf + pos;
	size_t line_start = pos;
	if (!next_line(buf, limit, &pos, &eol))
		goto incomplete;
	for (size_t k = line_start; k < eol; k++)
		if (buf[k] == '\0' || buf[k] == '\r' || buf[k] == '\n')
			return fail(req, 400, "control character in the request line");
	if (parse_request_line(start, eol - line_start, req))
		return SIM_HTTP_ERROR;
	req->keep_alive = req->minor_version == 1;

	for (;;) {
		line_start = pos;
		if (!next_line(buf, limit, &pos, &eol))
			goto incomplete;
		if (eol == line_start)
			break; /* blank line: end of head */
		for (size_t k = line_start; k < eol; k++)
			if (buf[k] == '\0' || buf[k] == '\r')
				return fail(req, 400, "control character in a header line");
		if (parse_header(buf + line_start, eol - line_start, req))
			return SIM_HTTP_ERROR;
	}
	if (req->chunked && req->content_length >= 0)
		return fail(req, 400, "both Transfer-Encoding and Content-Length");
	return (int)pos;

incomplete:
	if (len >= max_header_bytes)
		return fail(req, 431, "request header block too large");
	return SIM_HTTP_INCOMPLETE;
}

const struct sim_http_header *sim_http_find(const struct sim_http_req *req, const char *name)
{
	for (size_t i = 0; i < req->n_headers; i++)
		if (eq_ci(req->headers[i].name, req->headers[i].name_len, name))
			return &req->headers[i];
	return NULL;
}

const char *sim_http_reason(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 413: return "Content Too Large";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	default: return "Unknown";
	}
}

int sim_http_path_is(const struct sim_http_req *req, const char *path)
{
	size_t n = req->path_len;
	const char *q = memchr(req->path, '?', n);
	if (q)
		n = (size_t)(q - req->path);
	return n == strlen(path) && !memcmp(req->path, path, n);
}
