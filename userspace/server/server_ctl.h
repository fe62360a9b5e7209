/* server_ctl.h — the server controls a benchmark may ask for around its run: vLLM's and SGLang's
 * --profile (POST /start_profile before, /stop_profile after) and SGLang's --flush-cache (POST
 * /flush_cache before). Blocking, outside the measured run. */
#ifndef LATSCOPE_SERVER_CTL_H
#define LATSCOPE_SERVER_CTL_H

#include "server/bench_server.h"

/* POST base + path with body (NULL: an empty POST, as aiohttp's session.post(url) sends).
 * Returns the HTTP status (200 ok), or 0 with why (cap bytes) filled when no answer came. */
long ls_server_post(const struct ls_server *s, const char *path, const char *body, char *why, size_t cap);

#endif
