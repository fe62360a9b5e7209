/* test_sim_tls.c — HTTPS: --tls (self-signed ECDSA P-256 made at start) with --tls-max 1.2 and
 * 1.3, checked through the SSL* libcurl negotiated (CURLINFO_TLS_SSL_PTR); --tls-cert/--tls-key;
 * a stream and a kept-alive second request over the same TLS connection. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "t_helpers.h"
#include "test_sim_client.h"

static struct t_sim sim;

static void fini(void)
{
	t_sim_stop(&sim);
}

TestSuite(sim_tls, .fini = fini, .timeout = 60);

struct got {
	CURL  *curl;
	char   body[65536];
	size_t len;
	int    version;   /* SSL_version() of the live connection */
	char   cipher[64];
};

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct got *g = arg;
	size_t len = size * n;
	if (g->len + len < sizeof(g->body)) {
		memcpy(g->body + g->len, p, len);
		g->len += len;
		g->body[g->len] = 0;
	}
	struct curl_tlssessioninfo *info = NULL;
	if (!g->version && curl_easy_getinfo(g->curl, CURLINFO_TLS_SSL_PTR, &info) == CURLE_OK && info &&
	    info->backend == CURLSSLBACKEND_OPENSSL && info->internals) {
		SSL *ssl = info->internals;
		g->version = SSL_version(ssl);
		snprintf(g->cipher, sizeof(g->cipher), "%s", SSL_get_cipher_name(ssl));
	}
	return len;
}

/* Streams one completion over the handle; returns the HTTP status. */
static long stream_once(CURL *c, struct got *g)
{
	char url[192];
	snprintf(url, sizeof(url), "%s/v1/completions", sim.url);
	g->curl = c;
	g->len = 0;
	g->version = 0;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS,
			 "{\"prompt\":\"hi\",\"max_tokens\":4,\"ignore_eos\":true,\"stream\":true}");
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, g);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
	CURLcode rc = curl_easy_perform(c);
	cr_assert_eq(rc, CURLE_OK, "curl: %s", curl_easy_strerror(rc));
	long status = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	return status;
}

static void check_version(const char *tls_max, int want)
{
	const char *extra[] = { "--tls", "--tls-max", tls_max, "--step-ms", "1", NULL };
	cr_assert_eq(t_sim_start(&sim, 1, extra), 0, "sim with --tls did not start");
	CURL *c = curl_easy_init();
	struct got g = { 0 };
	cr_expect_eq(stream_once(c, &g), 200);
	cr_expect(strstr(g.body, "data: [DONE]"), "stream over TLS: %s", g.body);
	cr_expect_eq(g.version, want, "negotiated 0x%x, want 0x%x", g.version, want);
	fprintf(stderr, "sim tls-max %s: negotiated %s, cipher %s\n", tls_max,
		g.version == TLS1_3_VERSION ? "TLSv1.3" : g.version == TLS1_2_VERSION ? "TLSv1.2" : "?", g.cipher);
	/* a second request reuses the TLS connection (keep-alive) */
	cr_expect_eq(stream_once(c, &g), 200);
	long connects = -1;
	curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &connects);
	cr_expect_eq(connects, 0, "second request on the same connection");
	curl_easy_cleanup(c);
}

Test(sim_tls, tls_1_2)
{
	check_version("1.2", TLS1_2_VERSION);
}

Test(sim_tls, tls_1_3)
{
	check_version("1.3", TLS1_3_VERSION);
}

Test(sim_tls, cert_and_key_files)
{
	char dir[] = "/tmp/latscope-tls-XXXXXX";
	cr_assert(mkdtemp(dir));
	char cmd[512], cert[128], key[128];
	snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
	snprintf(key, sizeof(key), "%s/key.pem", dir);
	snprintf(cmd, sizeof(cmd), "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
		 "-subj /CN=localhost -days 1 -keyout %s -out %s >/dev/null 2>&1", key, cert);
	if (system(cmd) != 0)
		cr_skip_test("the openssl command is not available to make a certificate");
	const char *extra[] = { "--tls-cert", cert, "--tls-key", key, "--step-ms", "1", NULL };
	int started = t_sim_start(&sim, 1, extra);
	if (started == 0) {
		CURL *c = curl_easy_init();
		struct got g = { 0 };
		cr_expect_eq(stream_once(c, &g), 200);
		cr_expect_eq(g.version, TLS1_3_VERSION, "default max is TLS 1.3");
		curl_easy_cleanup(c);
	}
	unlink(cert);
	unlink(key);
	rmdir(dir);
	cr_assert_eq(started, 0, "sim with --tls-cert/--tls-key did not start");
}

Test(sim_tls, garbage_instead_of_a_handshake)
{
	const char *extra[] = { "--tls", NULL };
	cr_assert_eq(t_sim_start(&sim, 1, extra), 0);
	/* A plaintext request where the handshake belongs: the sim drops the connection (at most a
	 * TLS alert comes back, never an HTTP answer) and does not hold it open. */
	static const char plain[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	struct t_resp r;
	cr_assert_eq(t_raw(sim.port, plain, sizeof(plain) - 1, &r, 5000), 0, "connected");
	cr_expect(r.end == T_EOF || r.end == T_RESET, "the sim closed the connection (end %d)", (int)r.end);
	cr_expect_eq(r.status, 0, "no HTTP status came back over a failed handshake");
	cr_expect(!r.head || strncmp(r.head, "HTTP/", 5), "no HTTP answer: %.40s", r.head ? r.head : "");
	t_resp_free(&r);
	CURL *c = curl_easy_init();
	struct got g = { 0 };
	cr_expect_eq(stream_once(c, &g), 200, "still serving TLS after a plaintext client");
	curl_easy_cleanup(c);
}
