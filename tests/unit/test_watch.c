/* watch/ on hand-made probe events: exchanges cut per connection (send burst, response until
 * the next send), the response head told apart by timing, reads against the oldest byte they
 * delivered, TLS's own bytes left out (handshake, unasked sends, close_notify), the server's
 * side joined by port pair, the summary, and the harness-result formats. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "report/watch_report.h"
#include "watch/watch.h"
#include "t_unit.h"

#define US 1000ull
#define C 100
#define S 200
#define TGID 4242

static void ev(struct ls_evstore *st, uint64_t cookie, uint8_t role, uint16_t kind, uint64_t ts_us,
	       uint32_t seq, uint32_t len, uint32_t aux)
{
	struct ls_event e = t_ev(cookie, role, kind, ts_us, seq, len, aux);

	e.tgid = TGID;
	t_ev_add(st, e);
}
#define CEV(kind, ts, seq, len, aux) ev(st, C, LS_ROLE_CLIENT, kind, ts, seq, len, aux)
#define SEV(kind, ts, seq, len) ev(st, S, LS_ROLE_SERVER, kind, ts, seq, len, 0)

/* One plain HTTP/1.1 stream: connect at 0, request sent at 100 (100 bytes, seq 1000 -> 1100),
 * head arrives at 150 (bytes 5000..5100), frames at 10,000 / 20,000 / 30,000 us (100 bytes each),
 * read 20 / 50 / 10 / 30 us after. Then a second request on the same connection. */
static void one_stream(struct ls_evstore *st)
{
	CEV(LS_EV_CONNECT, 10, 0, 0, 3);
	CEV(LS_EV_ESTABLISHED, 40, 0, 0, 0);
	CEV(LS_EV_SEND_START, 90, 1000, 100, 0);
	CEV(LS_EV_SEND_END, 100, 1100, 100, 0);
	CEV(LS_EV_ARRIVED, 150, 5100, 0, 5000);
	CEV(LS_EV_READ, 170, 5100, 100, 0);
	uint32_t seq = 5100;
	uint64_t at[3] = { 10000, 20000, 30000 }, lag[3] = { 50, 10, 30 };
	for (int i = 0; i < 3; i++) {
		CEV(LS_EV_ARRIVED, at[i], seq + 100, 0, seq);
		CEV(LS_EV_READ, at[i] + lag[i], seq + 100, 100, 0);
		seq += 100;
	}
	CEV(LS_EV_SEND_START, 40000, 1100, 50, 0); /* the next request, same connection */
	CEV(LS_EV_SEND_END, 40010, 1150, 50, 0);
	CEV(LS_EV_ARRIVED, 45000, seq + 200, 0, seq);
	CEV(LS_EV_READ, 45100, seq + 200, 200, 0);
	CEV(LS_EV_STATE, 50000, 0, 0, 1 << 8 | 4); /* ESTABLISHED -> FIN_WAIT1: the harness closed */
	CEV(LS_EV_CLOSE, 50100, 0, 0, 5 << 8 | 7);
}

/* d is n values with this mean, P50, P90, P99 and max, all in us. */
static void expect_dist(const struct ls_watch_dist *d, size_t n, double mean, double p50, double p90, double p99,
			double max)
{
	cr_expect_eq(d->n, n);
	cr_expect_float_eq(d->mean_ns, mean * US, 1, "mean %.0f ns", d->mean_ns);
	cr_expect_float_eq(d->p50_ns, p50 * US, 1, "P50 %.0f ns", d->p50_ns);
	cr_expect_float_eq(d->p90_ns, p90 * US, 1, "P90 %.0f ns", d->p90_ns);
	cr_expect_float_eq(d->p99_ns, p99 * US, 1, "P99 %.0f ns", d->p99_ns);
	cr_expect_float_eq(d->max_ns, max * US, 1, "max %.0f ns", d->max_ns);
}

Test(watch, exchanges_head_reads_and_gaps)
{
	struct ls_evstore *st = ls_evstore_new();
	struct ls_watch w;
	uint32_t tgid = TGID;
	struct ls_watch_opts o = { .tgids = &tgid, .n_tgids = 1 };

	one_stream(st);
	cr_assert_eq(ls_watch_build(st, &o, &w), 0);
	cr_assert_eq(w.n_conns, 1);
	cr_assert_eq(w.n_ex, 2);
	const struct ls_watch_conn *c = &w.conns[0];
	cr_expect_eq(c->connect_ns, 10 * US);
	cr_expect_eq(c->established_ns, 40 * US);
	cr_expect_eq(c->closed_by, 1);
	cr_expect_eq(c->n_ex, 2);
	const struct ls_watch_exchange *x = &w.ex[0];
	cr_expect_eq(x->send_first_ns, 90 * US);
	cr_expect_eq(x->sent_ns, 100 * US);
	cr_expect_eq(x->req_bytes, 100);
	cr_expect_eq(x->first_byte_ns, 150 * US);
	cr_expect_eq(x->head_apart, 1, "the head came 50 us after the send, the frame 10 ms later");
	cr_expect_eq(x->first_data_ns, 10000 * US);
	cr_expect_eq(x->first_data_read_ns, 10050 * US);
	cr_expect_eq(x->n_reads, 4);
	cr_expect_eq(x->n_gaps, 2);
	cr_expect_eq(w.gaps[x->first_gap], 10000 * US);
	cr_expect_eq(x->last_byte_ns, 30000 * US);
	cr_expect_eq(w.ex[1].sent_ns, 40010 * US);
	cr_expect_eq(w.ex[1].head_apart, 0, "a single burst is the whole response");
	cr_expect_eq(w.ex[1].first_data_ns, 45000 * US);

	/* Every figure of the summary, each worked out by hand from one_stream's stamps. */
	struct ls_watch_summary s;
	cr_assert_eq(ls_watch_summarise(&w, &s), 0);
	cr_expect_eq(s.n_conns, 1);
	cr_expect_eq(s.n_ex, 2);
	cr_expect_eq(s.n_conns_connect_seen, 1);
	cr_expect_float_eq(s.conns_per_request, 0.5, 1e-9);
	/* reads held 20 (head), 50, 10, 30 (frames), 100 us (second response) */
	expect_dist(&s.held_read, 5, 42, 30, 80, 98, 100);
	/* first frames: 10,000 -> 10,050 and 45,000 -> 45,100 (not the head's 150 -> 170) */
	expect_dist(&s.held_first, 2, 75, 75, 95, 99.5, 100);
	expect_dist(&s.connect_to_sent, 1, 90, 90, 90, 90, 90);
	expect_dist(&s.connect_to_est, 1, 30, 30, 30, 30, 30);
	expect_dist(&s.est_to_sent, 1, 60, 60, 60, 60, 60);
	cr_expect_eq(s.tls.n, 0);
	cr_expect_eq(s.n_handshakes, 0);
	cr_expect_eq(s.n_conns_tls, 0);
	/* sent 100 -> first frame 10,000; sent 40,010 -> 45,000 (the head at 150 is not the frame) */
	expect_dist(&s.ttft_kernel, 2, 7445, 7445, 9409, 9850.9, 9900);
	/* frames 10 ms apart; the head is no data burst, the second response one burst */
	expect_dist(&s.itl_kernel, 2, 10000, 10000, 10000, 10000, 10000);
	cr_expect_eq(s.n_head_apart, 1);
	cr_expect_eq(s.n_server, 0, "no server events: no parts");
	ls_watch_free(&w);
	ls_evstore_free(st);
}

/* The numbers after label on the line of text that holds it; how many were read. */
static int row_numbers(const char *text, const char *label, double *v, int max)
{
	const char *p = strstr(text, label);
	int n = 0, used;

	cr_assert_not_null(p, "no line \"%s\" in:\n%s", label, text);
	p += strlen(label);
	while (n < max && *p != '\n' && sscanf(p, " %lf%n", &v[n], &used) == 1) {
		p += used;
		n++;
	}
	return n;
}

/* label's row: n, then the ms figures want (mean, P50, ...) to the printed 3 decimals. */
static void expect_row(const char *text, const char *label, double n, const double *want, int k)
{
	double v[8];

	cr_assert_eq(row_numbers(text, label, v, 8), k + 1, "%s: %d numbers wanted", label, k + 1);
	cr_expect_float_eq(v[0], n, 1e-9, "%s: n", label);
	for (int i = 0; i < k; i++)
		cr_expect_float_eq(v[i + 1], want[i], 6e-4, "%s: figure %d is %.3f, want %.4f", label, i, v[i + 1],
				   want[i]);
}

/* The text watch prints for one_stream, with a harness result whose TTFTs and ITLs differ:
 * every row shows its own figure (the summary's, the harness's arrays), not a neighbour's. */
Test(watch, report_prints_each_figure_from_its_own_source)
{
	struct ls_evstore *st = ls_evstore_new();
	struct ls_watch w;
	struct ls_watch_summary s;
	struct ls_watch_opts o = { 0 };
	uint64_t ttfts[2] = { 100000000, 300000000 }, itls[3] = { 10000000, 20000000, 30000000 };
	struct ls_harness_result hr = { .ttfts = ttfts, .n_ttfts = 2, .itls = itls, .n_itls = 3, .format = "generic" };
	struct ls_watch_report_ctx ctx = { .what = "test", .notes = "", .harness_path = "r.json", .max_rows = 10 };
	char *text = NULL;
	size_t len = 0;

	one_stream(st);
	cr_assert_eq(ls_watch_build(st, &o, &w), 0);
	cr_assert_eq(ls_watch_summarise(&w, &s), 0);
	FILE *out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	ls_watch_report_text(out, &w, &s, &hr, &ctx);
	fclose(out);
	expect_row(text, "per read (oldest byte it delivered)", 5, (double[]){ .042, .030, .080, .098, .100 }, 5);
	expect_row(text, "per first frame of a response", 2, (double[]){ .075, .075, .095, .0995, .100 }, 5);
	expect_row(text, "connect() -> request sent (1st on a conn)", 1, (double[]){ .09, .09, .09, .09, .09 }, 5);
	expect_row(text, "  connect() -> ESTABLISHED", 1, (double[]){ .03, .03, .03, .03, .03 }, 5);
	expect_row(text, "ESTABLISHED (or TLS done) -> request sent", 1, (double[]){ .06, .06, .06, .06, .06 }, 5);
	expect_row(text, "TTFT: request sent -> first frame arrived", 2,
		   (double[]){ 7.445, 7.445, 9.409, 9.8509, 9.9 }, 5);
	expect_row(text, "ITL: arrival-to-arrival gaps", 2, (double[]){ 10, 10, 10, 10, 10 }, 5);
	/* the harness's block: mean, P50, P99 of its own arrays, then the kernel's beside them */
	expect_row(text, "TTFT reported", 2, (double[]){ 200, 200, 298 }, 3);
	expect_row(strstr(text, "TTFT reported"), "  kernel-level", 2, (double[]){ 7.445, 7.445, 9.8509 }, 3);
	expect_row(text, "ITL reported", 3, (double[]){ 20, 20, 29.8 }, 3);
	expect_row(strstr(text, "ITL reported"), "  kernel-level", 2, (double[]){ 10, 10, 10 }, 3);
	/* per request: sent, conn>sent, sent>1stB, sent>1stF, held 1stF, reads, held P50, held max, last */
	double v[12];
	const char *req = strstr(text, "Per request");
	cr_assert_not_null(req);
	req = strchr(strchr(req, '\n') + 1, '\n'); /* past the title and the column names */
	cr_assert_eq(row_numbers(req, "\n", v, 11), 11, "%s", req);
	const double want0[11] = { 0, 0, .1, .09, .05, 9.9, .05, 4, .025, .05, 30 };
	for (int i = 0; i < 11; i++)
		cr_expect_float_eq(v[i], want0[i], 6e-4, "request 0 column %d: %.3f, want %.3f", i, v[i], want0[i]);
	free(text);
	ls_watch_free(&w);
	ls_evstore_free(st);
}

/* A read that delivers two frames at once is held from the older one's arrival. */
Test(watch, read_of_two_frames_counts_from_the_older)
{
	struct ls_evstore *st = ls_evstore_new();
	struct ls_watch w;
	struct ls_watch_opts o = { 0 };

	CEV(LS_EV_SEND_START, 0, 0, 10, 0);
	CEV(LS_EV_SEND_END, 5, 10, 10, 0);
	CEV(LS_EV_ARRIVED, 1000, 100, 0, 0);
	CEV(LS_EV_ARRIVED, 2000, 200, 0, 0);
	CEV(LS_EV_READ, 7000, 200, 200, 0);
	cr_assert_eq(ls_watch_build(st, &o, &w), 0);
	cr_assert_eq(w.n_reads, 1);
	cr_expect_eq(w.reads[0].read_ns - w.reads[0].arrived_ns, 6000 * US);
	ls_watch_free(&w);
	ls_evstore_free(st);
}

/* TLS: the handshake's sends and arrivals, a send no SSL_write asked for (asyncio's Finished)
 * and session tickets before the request are no request; the peer's close_notify next to the
 * close is no response byte. */
Test(watch, tls_bytes_are_not_requests)
{
	struct ls_evstore *st = ls_evstore_new();
	struct ls_watch w;
	struct ls_watch_opts o = { 0 };

	CEV(LS_EV_CONNECT, 0, 0, 0, 3);
	CEV(LS_EV_ESTABLISHED, 20, 0, 0, 0);
	CEV(LS_EV_TLS_START, 30, 0, 0, 0);
	CEV(LS_EV_SEND_START, 40, 0, 300, 0); /* ClientHello */
	CEV(LS_EV_SEND_END, 41, 300, 300, 0);
	CEV(LS_EV_ARRIVED, 500, 1000, 0, 0); /* ServerHello .. Finished */
	CEV(LS_EV_READ, 510, 1000, 1000, 0);
	CEV(LS_EV_TLS_END, 600, 0, 0, 0);
	CEV(LS_EV_SEND_START, 610, 300, 80, 0); /* client Finished, after the call returned */
	CEV(LS_EV_SEND_END, 611, 380, 80, 0);
	CEV(LS_EV_ARRIVED, 700, 1500, 0, 1000); /* session tickets */
	CEV(LS_EV_READ, 705, 1500, 500, 0);
	CEV(LS_EV_TLS_WRITE, 900, 0, 200, 0);
	CEV(LS_EV_SEND_START, 901, 380, 230, 0);
	CEV(LS_EV_SEND_END, 902, 610, 230, 0);
	CEV(LS_EV_ARRIVED, 2000, 1700, 0, 1500); /* head */
	CEV(LS_EV_READ, 2010, 1700, 200, 0);
	CEV(LS_EV_ARRIVED, 11000, 1900, 0, 1700); /* frame */
	CEV(LS_EV_READ, 11010, 1900, 200, 0);
	CEV(LS_EV_SEND_START, 20000, 610, 24, 0); /* our close_notify: no SSL_write */
	CEV(LS_EV_SEND_END, 20001, 634, 24, 0);
	CEV(LS_EV_STATE, 20002, 0, 0, 1 << 8 | 4);
	CEV(LS_EV_ARRIVED, 20100, 1924, 0, 1900); /* the server's close_notify */
	CEV(LS_EV_READ, 20110, 1924, 24, 0);
	CEV(LS_EV_CLOSE, 20200, 0, 0, 4 << 8 | 7);
	cr_assert_eq(ls_watch_build(st, &o, &w), 0);
	cr_assert_eq(w.n_ex, 1, "one request: %zu", w.n_ex);
	const struct ls_watch_exchange *x = &w.ex[0];
	cr_expect_eq(x->sent_ns, 902 * US);
	cr_expect_eq(x->first_byte_ns, 2000 * US);
	cr_expect_eq(x->head_apart, 1);
	cr_expect_eq(x->first_data_ns, 11000 * US);
	cr_expect_eq(x->last_byte_ns, 11000 * US, "close_notify is not the last response byte");
	cr_expect_eq(x->n_reads, 2);
	cr_expect_eq(w.conns[0].n_handshakes, 1);
	cr_expect_eq(w.conns[0].tls_end_ns - w.conns[0].tls_start_ns, 570 * US);
	ls_watch_free(&w);
	ls_evstore_free(st);
}

/* The server's end, by mirrored ports: its read of the whole request, its write of the frame. */
Test(watch, server_side_joined)
{
	struct ls_evstore *st = ls_evstore_new();
	struct ls_watch w;
	struct ls_watch_opts o = { 0 };

	one_stream(st);
	SEV(LS_EV_READ, 120, 1100, 100);
	SEV(LS_EV_SEND_START, 130, 5000, 100);
	SEV(LS_EV_SEND_START, 9980, 5100, 100);
	cr_assert_eq(ls_watch_build(st, &o, &w), 0);
	cr_assert(w.have_server);
	cr_assert_eq(w.n_conns, 1, "the server socket is not a connection of the harness");
	cr_expect_eq(w.ex[0].srv_read_ns, 120 * US);
	cr_expect_eq(w.ex[0].srv_write_ns, 9980 * US);
	struct ls_watch_summary s;
	cr_assert_eq(ls_watch_summarise(&w, &s), 0);
	cr_expect_eq(s.n_server, 1);
	cr_expect_float_eq(s.part_server.p50_ns, 9860 * US, 1);
	cr_expect_float_eq(s.part_network.p50_ns, (20 + 20) * US, 1);
	cr_expect_float_eq(s.part_client.p50_ns, (10 + 50) * US, 1);
	cr_expect_float_eq(s.part_unattributed.p50_ns, 0, 1);
	ls_watch_free(&w);
	ls_evstore_free(st);
}

Test(watch, port_and_tgid_filters)
{
	struct ls_evstore *st = ls_evstore_new();
	struct ls_watch w;
	uint32_t other = 1;
	struct ls_watch_opts by_port = { .port = 9999 }, by_tgid = { .tgids = &other, .n_tgids = 1 };

	one_stream(st);
	cr_assert_eq(ls_watch_build(st, &by_port, &w), 0);
	cr_expect_eq(w.n_conns, 0);
	ls_watch_free(&w);
	cr_assert_eq(ls_watch_build(st, &by_tgid, &w), 0);
	cr_expect_eq(w.n_conns, 0);
	ls_watch_free(&w);
	ls_evstore_free(st);
}

static const char *write_tmp(const char *text)
{
	static char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/latscope-hr-XXXXXX");
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

Test(watch, harness_result_formats)
{
	struct ls_harness_result r;
	char why[256];
	const char *p;

	p = write_tmp("{\"backend\":\"vllm\",\"ttfts\":[0.1,0.2,null],\"itls\":[[0.01,0.02],[],[0.03]]}");
	cr_assert_eq(ls_harness_result_read(p, &r, why, sizeof(why)), 0, "%s", why);
	cr_expect_eq(r.n_ttfts, 2);
	cr_expect_eq(r.n_itls, 3);
	cr_expect_eq(r.ttfts[1], 200000000ull);
	cr_expect_str_eq(r.format, "vllm --save-result");
	ls_harness_result_free(&r);
	unlink(p);
	p = write_tmp("{\"run\":1}\n{\"ttfts\":[1.0],\"itls\":[[0.5]]}\n{\"ttfts\":[0.25,0.5],\"itls\":[[0.01]]}\n");
	cr_assert_eq(ls_harness_result_read(p, &r, why, sizeof(why)), 0, "%s", why);
	cr_expect_eq(r.n_ttfts, 2, "the last line with ttfts");
	cr_expect_str_eq(r.format, "sglang --output-details");
	ls_harness_result_free(&r);
	unlink(p);
	p = write_tmp("{\"ttfts\":[0.5],\"itls\":[0.1,0.2]}");
	cr_assert_eq(ls_harness_result_read(p, &r, why, sizeof(why)), 0, "%s", why);
	cr_expect_str_eq(r.format, "generic");
	cr_expect_eq(r.n_itls, 2);
	ls_harness_result_free(&r);
	unlink(p);
	/* SGLang's line as Python writes it: its default rate is Infinity, an empty list's mean NaN */
	p = write_tmp("{\"request_rate\": Infinity, \"tag\": \"NaN Infinity\", \"mean_itl_ms\": NaN, "
		      "\"ttfts\": [0.125, 0.25], \"itls\": [[0.01], []]}\n{\"request_rate\": -Infinity}\n");
	cr_assert_eq(ls_harness_result_read(p, &r, why, sizeof(why)), 0, "%s", why);
	cr_expect_eq(r.n_ttfts, 2);
	cr_expect_eq(r.ttfts[0], 125000000ull);
	cr_expect_eq(r.n_itls, 1);
	ls_harness_result_free(&r);
	unlink(p);
	p = write_tmp("{\"completed\":3}");
	cr_expect_neq(ls_harness_result_read(p, &r, why, sizeof(why)), 0);
	cr_expect(strstr(why, "ttfts") != NULL, "%s", why);
	unlink(p);
}

/* TLS 1.3 session tickets that come between the request's two SSL_writes (head, body) are not
 * its response: one exchange, its response the bytes after the body. */
Test(watch, tickets_between_request_writes)
{
	struct ls_evstore *st = ls_evstore_new();
	struct ls_watch w;
	struct ls_watch_opts o = { 0 };

	CEV(LS_EV_CONNECT, 10, 0, 0, 3);
	CEV(LS_EV_TLS_START, 30, 0, 0, 0);
	CEV(LS_EV_TLS_END, 600, 0, 0, 0);
	CEV(LS_EV_SEND_START, 610, 300, 80, 0); /* client Finished (memory BIO): TLS 1.3 */
	CEV(LS_EV_SEND_END, 611, 380, 80, 0);
	CEV(LS_EV_TLS_WRITE, 900, 0, 200, 0);
	CEV(LS_EV_SEND_START, 901, 380, 235, 0);
	CEV(LS_EV_SEND_END, 902, 615, 235, 0);
	CEV(LS_EV_ARRIVED, 2000, 1510, 0, 1000); /* two tickets */
	CEV(LS_EV_READ, 2010, 1510, 510, 0);
	CEV(LS_EV_TLS_WRITE, 8000, 0, 300, 0);
	CEV(LS_EV_SEND_START, 8001, 615, 359, 0);
	CEV(LS_EV_SEND_END, 8002, 974, 359, 0);
	CEV(LS_EV_ARRIVED, 8100, 1700, 0, 1510);
	CEV(LS_EV_READ, 8110, 1700, 190, 0);
	cr_assert_eq(ls_watch_build(st, &o, &w), 0);
	cr_assert_eq(w.n_ex, 1, "%zu exchanges", w.n_ex);
	cr_expect_eq(w.ex[0].req_bytes, 594);
	cr_expect_eq(w.ex[0].first_byte_ns, 8100 * US);
	cr_expect_eq(w.ex[0].n_reads, 1);
	ls_watch_free(&w);
	ls_evstore_free(st);
}

/* A server that writes its head apart does so for every response: when most responses from a
 * port show it by the timing rule, one whose head came late (a busy server) is split the same
 * way, and its head's gap leaves the inter-token gaps. */
Test(watch, head_rule_follows_the_server_majority)
{
	struct ls_evstore *st = ls_evstore_new();
	struct ls_watch w;
	struct ls_watch_opts o = { 0 };
	uint32_t seq = 5000;

	for (int r = 0; r < 3; r++) { /* three requests on one connection */
		uint64_t t0 = 100000 * (uint64_t)(r + 1);
		uint64_t head = r == 2 ? 6000 : 100; /* the last one's head came 6 ms after the send */
		CEV(LS_EV_SEND_START, t0, 1000 + 100 * r, 100, 0);
		CEV(LS_EV_SEND_END, t0 + 5, 1100 + 100 * r, 100, 0);
		CEV(LS_EV_ARRIVED, t0 + head, seq + 100, 0, seq);
		CEV(LS_EV_READ, t0 + head + 10, seq + 100, 100, 0);
		seq += 100;
		for (int f = 1; f <= 3; f++) {
			CEV(LS_EV_ARRIVED, t0 + 10000 * f, seq + 100, 0, seq);
			CEV(LS_EV_READ, t0 + 10000 * f + 10, seq + 100, 100, 0);
			seq += 100;
		}
	}
	cr_assert_eq(ls_watch_build(st, &o, &w), 0);
	cr_assert_eq(w.n_ex, 3);
	for (int r = 0; r < 3; r++) {
		cr_expect_eq(w.ex[r].head_apart, 1, "request %d", r);
		cr_expect_eq(w.ex[r].first_data_ns, (100000ull * (r + 1) + 10000) * US, "request %d", r);
		cr_expect_eq(w.ex[r].n_gaps, 2, "request %d", r);
	}
	cr_expect_eq(w.n_gaps, 6);
	for (size_t g = 0; g < w.n_gaps; g++)
		cr_expect_eq(w.gaps[g], 10000 * US, "gap %zu", g);
	ls_watch_free(&w);
	ls_evstore_free(st);
}

/* One request: head `head_us` after the send, then frames at the given offsets (us). */
static void stream_at(struct ls_evstore *st, uint64_t head_us, const uint64_t *frame_us, int n)
{
	uint32_t seq = 5000;
	CEV(LS_EV_SEND_START, 90, 1000, 100, 0);
	CEV(LS_EV_SEND_END, 100, 1100, 100, 0);
	CEV(LS_EV_ARRIVED, 100 + head_us, seq + 185, 0, seq);
	CEV(LS_EV_READ, 110 + head_us, seq + 185, 185, 0);
	seq += 185;
	for (int f = 0; f < n; f++) {
		CEV(LS_EV_ARRIVED, 100 + frame_us[f], seq + 120, 0, seq);
		CEV(LS_EV_READ, 110 + frame_us[f], seq + 120, 120, 0);
		seq += 120;
	}
}

/* llama.cpp's llama-server (measured, one thread): the head ~3 ms after the request (it has
 * tokenized the prompt), the first token after the prompt step (~11 ms), then ~1 ms apart. The
 * quarter rule misses it (4 x 3 > 8); the first gap standing out of the stream's own tells it. */
Test(watch, head_told_by_a_first_gap_that_stands_out)
{
	struct ls_evstore *st = ls_evstore_new();
	struct ls_watch w;
	struct ls_watch_opts o = { 0 };
	const uint64_t frames[6] = { 11000, 12000, 13000, 14100, 15000, 16000 };

	stream_at(st, 2900, frames, 6);
	cr_assert_eq(ls_watch_build(st, &o, &w), 0);
	cr_assert_eq(w.n_ex, 1);
	cr_expect_eq(w.ex[0].head_apart, 1);
	cr_expect_eq(w.ex[0].first_data_ns, 11100 * US, "TTFT ends at the first token, not the head");
	cr_expect_eq(w.ex[0].n_gaps, 5);
	ls_watch_free(&w);
	ls_evstore_free(st);
}

/* A server that writes its head with the first frame: its first gap is one like the rest, so
 * the first burst stays the first frame (the rule needs the gap to stand out). */
Test(watch, even_gaps_keep_the_first_burst_as_a_frame)
{
	struct ls_evstore *st = ls_evstore_new();
	struct ls_watch w;
	struct ls_watch_opts o = { 0 };
	const uint64_t frames[5] = { 8000, 11000, 14000, 17000, 20000 };

	stream_at(st, 5000, frames, 5);
	cr_assert_eq(ls_watch_build(st, &o, &w), 0);
	cr_assert_eq(w.n_ex, 1);
	cr_expect_eq(w.ex[0].head_apart, 0);
	cr_expect_eq(w.ex[0].first_data_ns, 5100 * US);
	cr_expect_eq(w.ex[0].n_gaps, 5);
	ls_watch_free(&w);
	ls_evstore_free(st);
}

/* Request r of a run on one connection: sent at (r + 1) x 100 ms, its 185-byte head `head` us
 * later, a 120-byte frame at 1.1 ms when frame_in_preamble (inside the 2 ms preamble, in one
 * burst with the head), then four 120-byte frames from `first` us, 2 ms apart. */
static void head_then_frames(struct ls_evstore *st, int r, uint64_t head, uint64_t first, int frame_in_preamble,
			     uint32_t *seq)
{
	uint64_t t0 = 100000 * (uint64_t)(r + 1);
	CEV(LS_EV_SEND_START, t0, 1000 + 100 * (uint32_t)r, 100, 0);
	CEV(LS_EV_SEND_END, t0 + 5, 1100 + 100 * (uint32_t)r, 100, 0);
	CEV(LS_EV_ARRIVED, t0 + head, *seq + 185, 0, *seq);
	CEV(LS_EV_READ, t0 + head + 10, *seq + 185, 185, 0);
	*seq += 185;
	if (frame_in_preamble) {
		CEV(LS_EV_ARRIVED, t0 + 1100, *seq + 120, 0, *seq);
		CEV(LS_EV_READ, t0 + 1110, *seq + 120, 120, 0);
		*seq += 120;
	}
	for (int f = 0; f < 4; f++) {
		uint64_t at = t0 + first + 2000 * (uint64_t)f;
		CEV(LS_EV_ARRIVED, at, *seq + 120, 0, *seq);
		CEV(LS_EV_READ, at + 10, *seq + 120, 120, 0);
		*seq += 120;
	}
}

/* Five requests on one connection to a server whose head is 185 bytes. Two have their head
 * 0.1 ms after the send and the first frame 10 ms later (the timing rule finds the head). Three,
 * as llama-server batching them writes: the head 3 ms in, the first frame 1 ms after it (inside
 * the 2 ms preamble: one burst with the head), then frames 2 ms apart. No majority; the heads
 * the rule found are all 185 bytes, so the three bursts' first 185 bytes, their own arrival,
 * are heads too, and each TTFT ends at its first frame. */
Test(watch, head_of_the_size_the_timing_rule_found)
{
	struct ls_evstore *st = ls_evstore_new();
	struct ls_watch w;
	struct ls_watch_opts o = { 0 };
	uint32_t seq = 5000;

	for (int r = 0; r < 5; r++)
		head_then_frames(st, r, r < 2 ? 100 : 3000, r < 2 ? 10000 : 4000, 0, &seq);
	cr_assert_eq(ls_watch_build(st, &o, &w), 0);
	cr_assert_eq(w.n_ex, 5);
	for (int r = 0; r < 5; r++) {
		uint64_t t0 = 100000ull * (r + 1);
		cr_expect_eq(w.ex[r].head_apart, 1, "request %d", r);
		cr_expect_eq(w.ex[r].first_data_ns, (t0 + (r < 2 ? 10000 : 4000)) * US, "request %d", r);
		cr_expect_eq(w.ex[r].first_data_read_ns, (t0 + (r < 2 ? 10000 : 4000) + 10) * US, "request %d", r);
	}
	ls_watch_free(&w);
	ls_evstore_free(st);
}

/* The size rule goes by the size most timing-found heads share: one first burst that held its
 * head and a first frame 1 ms later (taken for a head by the timing rule: 305 bytes) does not
 * cancel the 185-byte heads of two others, so the four late heads are still told apart (seen on
 * llama-server: 6 of 16 heads then, the check wanting 16). */
Test(watch, head_size_by_most_heads_not_all)
{
	struct ls_evstore *st = ls_evstore_new();
	struct ls_watch w;
	struct ls_watch_opts o = { 0 };
	uint32_t seq = 5000;

	for (int r = 0; r < 7; r++) /* r 2: a frame inside the preamble, a 305-byte first burst */
		head_then_frames(st, r, r < 3 ? 100 : 3000, r < 3 ? 10000 : 4000, r == 2, &seq);
	cr_assert_eq(ls_watch_build(st, &o, &w), 0);
	cr_assert_eq(w.n_ex, 7);
	for (int r = 3; r < 7; r++) {
		uint64_t t0 = 100000ull * (r + 1);
		cr_expect_eq(w.ex[r].head_apart, 1, "request %d", r);
		cr_expect_eq(w.ex[r].first_data_ns, (t0 + 4000) * US, "request %d", r);
	}
	ls_watch_free(&w);
	ls_evstore_free(st);
}
