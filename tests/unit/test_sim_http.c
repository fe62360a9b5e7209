/* test_sim_http.c — the simulator's request parser: fields, every split point, every error,
 * and inputs placed right before a PROT_NONE page so any over-read crashes (picohttpparser's
 * trick), including a seeded random sweep. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "sim/sim_http.h"

static char *guard_base;
static size_t page;

/* Copies s to the end of a readable page followed by an inaccessible one. */
static const char *guarded(const char *s, size_t len)
{
	if (!guard_base) {
		page = (size_t)sysconf(_SC_PAGESIZE);
		guard_base = mmap(NULL, page * 17, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		cr_assert(guard_base != MAP_FAILED);
		cr_assert_eq(mprotect(guard_base + page * 16, page, PROT_NONE), 0);
	}
	cr_assert_leq(len, page * 16);
	char *dst = guard_base + page * 16 - len;
	memcpy(dst, s, len);
	return dst;
}

static int parse(const char *s, size_t len, struct sim_http_req *req)
{
	return sim_http_parse(guarded(s, len), len, 16384, req);
}

static const char GOOD[] = "POST /v1/completions?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 12\r\n"
			   "X-Request-Id:  abc-1 \r\nConnection: keep-alive\r\n\r\n{\"prompt\":1}";

Test(sim_http, parses_a_request_head)
{
	struct sim_http_req req;
	size_t head = strlen(GOOD) - 12;
	cr_assert_eq(parse(GOOD, strlen(GOOD), &req), (int)head);
	cr_expect_eq(req.method_len, 4);
	cr_expect_eq(memcmp(req.method, "POST", 4), 0);
	cr_expect_eq(req.path_len, strlen("/v1/completions?x=1"));
	cr_expect_eq(req.minor_version, 1);
	cr_expect_eq(req.content_length, 12);
	cr_expect_eq(req.n_headers, 4);
	cr_expect_eq(req.request_id_len, 5, "value trimmed");
	cr_expect_eq(memcmp(req.request_id, "abc-1", 5), 0);
	cr_expect(req.keep_alive);
	const struct sim_http_header *h = sim_http_find(&req, "HOST");
	cr_assert(h);
	cr_expect_eq(h->value_len, 1);
}

Test(sim_http, every_split_point_is_incomplete)
{
	struct sim_http_req req;
	size_t head = strlen(GOOD) - 12;
	for (size_t k = 0; k < head; k++)
		cr_expect_eq(parse(GOOD, k, &req), SIM_HTTP_INCOMPLETE, "prefix of %zu bytes", k);
	for (size_t k = head; k <= strlen(GOOD); k++)
		cr_expect_eq(parse(GOOD, k, &req), (int)head);
}

Test(sim_http, bare_lf_and_versions)
{
	struct sim_http_req req;
	const char lf[] = "GET /health HTTP/1.0\nHost: x\n\n";
	cr_expect_eq(parse(lf, strlen(lf), &req), (int)strlen(lf));
	cr_expect_eq(req.keep_alive, 0, "HTTP/1.0 closes by default");
	const char ka[] = "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n";
	cr_expect_gt(parse(ka, strlen(ka), &req), 0);
	cr_expect_eq(req.keep_alive, 1);
	const char cl[] = "GET / HTTP/1.1\r\nConnection: foo, close\r\n\r\n";
	cr_expect_gt(parse(cl, strlen(cl), &req), 0);
	cr_expect_eq(req.keep_alive, 0);
	const char ex[] = "POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n";
	cr_expect_gt(parse(ex, strlen(ex), &req), 0);
	cr_expect(req.expect_continue);
}

static void expect_error(const char *s, size_t len, int status)
{
	struct sim_http_req req;
	cr_expect_eq(parse(s, len, &req), SIM_HTTP_ERROR, "accepted: %.*s", (int)len, s);
	cr_expect_eq(req.status, status, "status for %.*s", (int)len, s);
	cr_expect(req.error && *req.error);
}

#define ERR(lit, status) expect_error(lit, sizeof(lit) - 1, status)

Test(sim_http, malformed_requests_are_400)
{
	ERR("GARBAGE\r\n\r\n", 400);
	ERR(" GET / HTTP/1.1\r\n\r\n", 400);
	ERR("GET  / HTTP/1.1\r\n\r\n", 400);
	ERR("GET / HTTP/2.0\r\n\r\n", 400);
	ERR("GET / HTTP/1.2\r\n\r\n", 400);
	ERR("GET / HTTP/1.1 \r\n\r\n", 400);
	ERR("GET /a\x01 HTTP/1.1\r\n\r\n", 400);
	ERR("GET /\0 HTTP/1.1\r\n\r\n", 400);
	ERR("G(T / HTTP/1.1\r\n\r\n", 400);
	ERR("GET / HTTP/1.1\r\nNoColon\r\n\r\n", 400);
	ERR("GET / HTTP/1.1\r\n: empty-name\r\n\r\n", 400);
	ERR("GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", 400);
	ERR("GET / HTTP/1.1\r\nA: b\x01\r\n\r\n", 400);
	ERR("GET / HTTP/1.1\r\nA: b\rc\r\n\r\n", 400);
	ERR("GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400);
	ERR("GET / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", 400);
	ERR("GET / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", 400);
	ERR("GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400);
	ERR("GET / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400);
	ERR("GET / HTTP/1.1\r\nExpect: something\r\n\r\n", 400);
}

Test(sim_http, oversize_heads_are_431)
{
	static char big[20000];
	memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
	memset(big + 19, 'a', sizeof(big) - 19);
	expect_error(big, sizeof(big), 431); /* incomplete but already over the limit */
	static char many[8192];
	size_t n = (size_t)snprintf(many, sizeof(many), "GET / HTTP/1.1\r\n");
	for (int i = 0; i < SIM_HTTP_MAX_HEADERS + 1; i++)
		n += (size_t)snprintf(many + n, sizeof(many) - n, "H%d: v\r\n", i);
	n += (size_t)snprintf(many + n, sizeof(many) - n, "\r\n");
	expect_error(many, n, 431);
}

Test(sim_http, random_bytes_never_crash)
{
	uint64_t x = 12345;
	static char buf[1024];
	static const char alphabet[] = "GET POST / HTTP/1.1\r\n:Content-Length: 0123456789\r\n\r\nabc\t \x01\x7f\xff";
	for (int round = 0; round < 20000; round++) {
		size_t len = 0;
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		size_t want = (size_t)(x >> 33) % sizeof(buf);
		for (; len < want; len++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			buf[len] = (x >> 60) < 12 ? alphabet[(x >> 20) % (sizeof(alphabet) - 1)] : (char)(x >> 40);
		}
		struct sim_http_req req;
		int rc = sim_http_parse(guarded(buf, len), len, 512, &req);
		cr_assert(rc == SIM_HTTP_ERROR || rc == SIM_HTTP_INCOMPLETE || (rc > 0 && (size_t)rc <= len));
		if (rc == SIM_HTTP_ERROR)
			cr_assert(req.status == 400 || req.status == 431);
	}
}
