/* http_easy.c — see http_easy.h. */
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "server/http_easy.h"
#include "base/auth.h"

#define BODY_CAP (64u * 1024 * 1024)

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	struct ls_http_resp *r = ctx;
	size_t len = size * n;
	if (r->len + len > r->max_body) {
		r->too_big = 1;
		return 0; /* curl reports a write error */
	}
	char *grown = realloc(r->body, r->len + len + 1);
	if (!grown)
		return 0;
	r->body = grown;
	memcpy(r->body + r->len, p, len);
	r->len += len;
	r->body[r->len] = 0;
	return len;
}

/* Whether the user's headers name Authorization. */
static int auth_replaced(const struct ls_http_opts *o)
{
	for (size_t i = 0; o && i < o->n_headers; i++)
		if (!strncasecmp(o->headers[i], "Authorization:", 14))
			return 1;
	return 0;
}

/* Content-Type for a body, the Authorization header, the user's --header lines. 0, or -1 with
 * error set. */
static int request_headers(struct curl_slist **hdrs, int has_body, const struct ls_http_opts *o,
			   char *error, size_t error_cap)
{
	char auth[1024];
	int has_auth = ls_auth_header(auth, sizeof(auth));
	if (has_auth < 0) {
		snprintf(error, error_cap, "OPENAI_API_KEY is longer than %zu bytes", sizeof(auth) - 23);
		return -1;
	}
	size_t n_user = o ? o->n_headers : 0;
	for (size_t i = 0; i < 2 + n_user; i++) {
		const char *line = i == 0 ? (has_body ? "Content-Type: application/json" : NULL)
				   : i == 1 ? (has_auth && !auth_replaced(o) ? auth : NULL) : o->headers[i - 2];
		if (!line)
			continue;
		struct curl_slist *grown = curl_slist_append(*hdrs, line);
		if (!grown) {
			snprintf(error, error_cap, "out of memory for the request headers");
			return -1;
		}
		*hdrs = grown;
	}
	return 0;
}

int ls_http_easy_prepare(CURL *easy, const char *url, int has_body, const struct ls_http_opts *o,
			 struct curl_slist **hdrs, char *error, size_t error_cap)
{
	double timeout = o && o->timeout_s > 0 ? o->timeout_s : 10.0;
	curl_easy_setopt(easy, CURLOPT_URL, url);
	curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, (long)(timeout * 1000));
	curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout * 1000));
	curl_easy_setopt(easy, CURLOPT_PROXY, ""); /* loopback benchmarks never go through a proxy */
	if (o && o->insecure) {
		curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (o && o->cacert)
		curl_easy_setopt(easy, CURLOPT_CAINFO, o->cacert);
	if (request_headers(hdrs, has_body, o, error, error_cap))
		return -1;
	curl_easy_setopt(easy, CURLOPT_HTTPHEADER, *hdrs);
	return 0;
}

int ls_http_call(const char *url, const char *body, const struct ls_http_opts *o, struct ls_http_resp *resp)
{
	memset(resp, 0, sizeof(*resp));
	resp->max_body = o && o->max_body ? o->max_body : BODY_CAP;
	CURL *easy = curl_easy_init();
	if (!easy) {
		snprintf(resp->error, sizeof(resp->error), "curl_easy_init failed");
		return -1;
	}
	struct curl_slist *hdrs = NULL;
	curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(easy, CURLOPT_WRITEDATA, resp);
	curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, resp->error);
	if (ls_http_easy_prepare(easy, url, body != NULL, o, &hdrs, resp->error, sizeof(resp->error))) {
		curl_slist_free_all(hdrs);
		curl_easy_cleanup(easy);
		return -1;
	}
	if (body) {
		curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	}
	CURLcode rc = curl_easy_perform(easy);
	resp->curl_code = (int)rc;
	if (rc == CURLE_OK) {
		const char *ctype = NULL;
		curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &resp->status);
		if (curl_easy_getinfo(easy, CURLINFO_CONTENT_TYPE, &ctype) == CURLE_OK && ctype)
			snprintf(resp->content_type, sizeof(resp->content_type), "%s", ctype);
	} else if (!resp->error[0])
		snprintf(resp->error, sizeof(resp->error), "%s", curl_easy_strerror(rc));
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(easy);
	return rc == CURLE_OK ? 0 : -1;
}

void ls_http_resp_free(struct ls_http_resp *resp)
{
	free(resp->body);
	resp->body = NULL;
	resp->len = 0;
}

int ls_http_hopeless(const struct ls_http_resp *resp)
{
	switch ((CURLcode)resp->curl_code) {
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CONNECT_ERROR: /* a handshake that failed against a server that answered */
		return 1;
	default:
		return 0;
	}
}

const char *ls_http_fix(const struct ls_http_resp *resp)
{
	switch ((CURLcode)resp->curl_code) {
	case CURLE_UNSUPPORTED_PROTOCOL:
		return "the URL must start with http:// or https://";
	case CURLE_URL_MALFORMAT:
		return "give --base-url as http://HOST:PORT (a port from 1 to 65535)";
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
		return "the server's certificate is not trusted: pass --cacert FILE (its CA) or --insecure";
	case CURLE_SSL_CONNECT_ERROR:
		return strstr(resp->error, "wrong version number")
			       ? "the server does not speak TLS there: use http://"
			       : "the TLS handshake failed: check the server's TLS setup, --cacert or --insecure";
	default:
		return "";
	}
}
