/* server_ctl.c — POSTs to the server's control endpoints (see server_ctl.h). */
#include <stdio.h>
#include <stdlib.h>
#include "server/server_ctl.h"
#include "server/http_easy.h"

long ls_server_post(const struct ls_server *s, const char *path, const char *body, char *why, size_t cap)
{
	char *url = NULL;
	if (asprintf(&url, "%s%s", s->base, path) < 0) {
		snprintf(why, cap, "out of memory");
		return 0;
	}
	struct ls_http_resp resp;
	int rc = ls_http_call(url, body ? body : "", &s->http, &resp);
	long status = rc ? 0 : resp.status;
	if (rc)
		snprintf(why, cap, "%s", resp.error);
	else if (status != 200)
		snprintf(why, cap, "HTTP %ld", status);
	ls_http_resp_free(&resp);
	free(url);
	return status;
}
