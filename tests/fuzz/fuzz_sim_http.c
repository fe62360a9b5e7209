/* fuzz_sim_http.c — the simulator's HTTP request-head parser: never reads past the buffer, and
 * what it returns is consistent (a head length within the input, an error with 400 or 431). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "sim/sim_http.h"

static void check(const char *buf, size_t len, size_t max)
{
	struct sim_http_req req;
	int rc = sim_http_parse(buf, len, max, &req);
	if (rc == SIM_HTTP_ERROR) {
		if ((req.status != 400 && req.status != 431) || !req.error)
			abort();
		return;
	}
	if (rc == SIM_HTTP_INCOMPLETE)
		return;
	if (rc <= 0 || (size_t)rc > len || (size_t)rc > max)
		abort();
	if (req.method < buf || req.method + req.method_len > buf + rc || req.path < buf ||
	    req.path + req.path_len > buf + rc || req.n_headers > SIM_HTTP_MAX_HEADERS)
		abort();
	for (size_t i = 0; i < req.n_headers; i++) {
		const struct sim_http_header *h = &req.headers[i];
		if (h->name < buf || h->value + h->value_len > buf + rc)
			abort();
	}
	(void)sim_http_find(&req, "content-type");
	(void)sim_http_reason(req.status);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check((const char *)data, size, 16384);
	check((const char *)data, size, 256); /* small limit: the 431 paths */
	for (size_t cut = 1; cut < size && cut < 64; cut += 7)
		check((const char *)data, cut, 16384); /* every prefix is incomplete or an error */
	return 0;
}
