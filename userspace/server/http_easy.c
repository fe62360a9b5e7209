/* http_easy.c — see http_easy.h. */
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include "server/http_easy.h"

#define BODY_CAP (64u * 1024 * 1024)

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	struct ls_http_resp *r = ctx;
	size_t len = size * n;
	if (r->len + len > BODY_CAP)
		return 0; /* curl reports a write error */
	char *grown = realloc(r->body, r->len + len + 1);
	if (!grown)
		return 0;
	r->body = grown;
	memcpy(r->body + r->len, p, len);
	r->len += len;
	r->body[r->len] = 0;
	return len;
}

int ls_http_call(const char *url, const char *body, const struct ls_http_opts *o, struct ls_http_resp *resp)
{
	memset(resp, 0, sizeof(*resp));
	CURL *easy = curl_easy_init();
	if (!easy) {
		snprintf(resp->error, sizeof(resp->error), "curl_easy_init failed");
		return -1;
	}
	struct curl_slist *hdrs = NULL;
	double timeout = o && o->timeout_s > 0 ? o->timeout_s : 10.0;
	curl_easy_setopt(easy, CURLOPT_URL, url);
	curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, (long)(timeout * 1000));
	curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout * 1000));
	curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(easy, CURLOPT_WRITEDATA, resp);
	curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, resp->error);
	curl_easy_setopt(easy, CURLOPT_PROXY, ""); /* loopback benchmarks never go through a proxy */
	if (o && o->insecure) {
		curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (o && o->cacert)
		curl_easy_setopt(easy, CURLOPT_CAINFO, o->cacert);
	if (body) {
		hdrs = curl_slist_append(NULL, "Content-Type: application/json");
		if (!hdrs) {
			snprintf(resp->error, sizeof(resp->error), "out of memory for the request headers");
			curl_easy_cleanup(easy);
			return -1;
		}
		curl_easy_setopt(easy, CURLOPT_HTTPHEADER, hdrs);
		curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	}
	CURLcode rc = curl_easy_perform(easy);
	if (rc == CURLE_OK)
		curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &resp->status);
	else if (!resp->error[0])
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
