/* http_easy.h — small blocking HTTP calls outside the measured run (libcurl easy): the ready
 * check, GET /v1/models, POST /tokenize, the spec-decode counters before and after. Never used
 * while the driver's loop runs. */
#ifndef LATSCOPE_HTTP_EASY_H
#define LATSCOPE_HTTP_EASY_H

#include <stddef.h>
#include <stdint.h>
#include <curl/curl.h>

struct ls_http_opts {
	int         insecure;
	const char *cacert;
	double      timeout_s;   /* whole call; 0 = 10 s */
	char *const *headers;    /* --header lines ("Name: value") sent too; one named Authorization
				  * replaces the API key's */
	size_t      n_headers;
	size_t      max_body;    /* a longer answer fails the call (CURLE_WRITE_ERROR, too_big set);
				  * 0 = 64 MiB */
};

struct ls_http_resp {
	long   status;           /* 0 when no HTTP response came */
	char  *body;             /* malloc'd, NUL-terminated (NULL when none) */
	size_t len;
	char   error[256];       /* libcurl's message when status is 0 */
	int    curl_code;        /* CURLcode of the call (0 = an HTTP response came) */
	char   content_type[96]; /* the response's Content-Type, "" when none */
	int    too_big;          /* the body passed max_body: the call was cut */
	size_t max_body;         /* the call's cap (set by ls_http_call) */
};

/* 1 when retrying the call cannot help: a malformed URL, an unsupported scheme, a TLS
 * certificate not trusted, TLS spoken to a server that does not (curl_code of a failed call). */
int ls_http_hopeless(const struct ls_http_resp *resp);
/* The fix for a hopeless failure, in words ("pass --insecure or --cacert FILE", ...). */
const char *ls_http_fix(const struct ls_http_resp *resp);

/* GET url (body == NULL) or POST body as application/json, with the Authorization header of
 * base/auth.h. 0 when an HTTP response came (any status), -1 otherwise (resp->error says why).
 * Bodies are capped at o->max_body (64 MiB when 0). */
int ls_http_call(const char *url, const char *body, const struct ls_http_opts *o, struct ls_http_resp *resp);
void ls_http_resp_free(struct ls_http_resp *resp);
/* What ls_http_call sets on its handle: url, timeouts, no proxy, TLS, the request headers
 * (*hdrs: the caller frees it after the transfer). For a handle the caller drives itself (the
 * /metrics poll, metrics_poll.h). 0, or -1 with error set. */
int ls_http_easy_prepare(CURL *easy, const char *url, int has_body, const struct ls_http_opts *o,
			 struct curl_slist **hdrs, char *error, size_t error_cap);

#endif
