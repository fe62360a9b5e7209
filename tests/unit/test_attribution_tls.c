/* The handshake split on synthetic event sequences: a fresh connection's connect() -> ESTABLISHED
 * and TLS handshake (1.3: one round trip, 1.2: two) into network (flights between the kernels),
 * client CPU and server CPU; network+server without server events; flights the client does not
 * wait for; a lost arrival; too many rounds; the sums under jitter; the report line and JSON. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "attribution/attribution.h"
#include "config/profile.h"
#include "report/report.h"
#include "t_unit.h"

#define US 1000ull
#define C_COOKIE 100
#define S_COOKIE 200

#define CEV(kind, ts, seq, len) t_ev_add(st, t_ev(C_COOKIE, LS_ROLE_CLIENT, LS_EV_##kind, ts, seq, len, 0))
#define SEV(kind, ts, seq, len) t_ev_add(st, t_ev(S_COOKIE, LS_ROLE_SERVER, LS_EV_##kind, ts, seq, len, 0))

/* One HTTPS request over a fresh connection; its first token frame stamped at 5000 us. */
static void one_request(struct ls_run *run, struct ls_request *r)
{
	memset(run, 0, sizeof(*run));
	ls_request_reset(r, 0);
	r->scheduled_ns = r->admitted_ns = r->started_ns = 1000 * US;
	r->connect_ns = 1200 * US;
	r->tls_ns = 3000 * US;
	r->new_connection = 1;
	r->socket_cookie = C_COOKIE;
	r->finished_ns = 5100 * US;
	struct ls_frame *f = ls_request_add_frame(r);
	cr_assert_not_null(f);
	f->arrived_ns = 5000 * US;
	f->stream_off = 49;
	f->bytes = 50;
	f->text_len = 5;
	f->tokens = 1;
	f->flags = LS_FRAME_CHOICES;
	run->requests = r;
	run->n_requests = 1;
}

/* connect() at 1010, SYN left 20 us later, ESTABLISHED 1080; SSL_connect entered at 1300. */
static void connect_events(struct ls_evstore *st, int server)
{
	t_ev_add(st, t_ev(C_COOKIE, LS_ROLE_CLIENT, LS_EV_CONNECT, 1010, 0, 20 * US, 3));
	CEV(ESTABLISHED, 1080, 0, 0);
	CEV(TLS_START, 1300, 0, 0);
	if (server)
		SEV(ESTABLISHED, 1085, 0, 0);
}

/* The request (client seq from req_seq, 200 bytes) after the handshake and its first frame. */
static void request_events(struct ls_evstore *st, int server, uint64_t send_us, uint32_t req_seq, uint32_t resp_seq)
{
	CEV(SEND_START, send_us, req_seq, 200);
	CEV(SEND_END, send_us + 5, req_seq + 200, 200);
	CEV(ARRIVED, 4990, resp_seq + 500, 0);
	CEV(READ, 4995, resp_seq + 500, 500);
	if (server) {
		SEV(ARRIVED, send_us + 10, req_seq + 200, 0);
		SEV(READ, send_us + 20, req_seq + 200, 200);
		SEV(SEND_START, 4980, resp_seq, 500);
	}
}

/* TLS 1.3: ClientHello 1400 -> server kernel 1410 -> server's flight 2000 -> client kernel
 * 2020 (read in two records) -> client Finished 2800, SSL_connect returns 2850. The server's
 * session ticket (2815) reaches the client kernel at 2830 and is not read before the return. */
static void tls13(struct ls_evstore *st, int server)
{
	connect_events(st, server);
	CEV(SEND_START, 1400, 1000, 300);
	CEV(SEND_END, 1402, 1300, 300);
	CEV(ARRIVED, 2020, 11000, 0);
	CEV(READ, 2050, 9005, 5);
	CEV(READ, 2060, 11000, 1995);
	CEV(SEND_START, 2800, 1300, 80);
	CEV(ARRIVED, 2830, 11500, 0);
	CEV(TLS_END, 2850, 0, 0);
	if (server) {
		SEV(ARRIVED, 1410, 1300, 0);
		SEV(READ, 1500, 1300, 300);
		SEV(SEND_START, 2000, 9000, 2000);
		SEV(ARRIVED, 2810, 1380, 0);
		SEV(SEND_START, 2815, 11000, 500);
	}
	request_events(st, server, 2900, 1380, 11500);
}

/* TLS 1.2: ClientHello 1400 -> 1410 -> server hello..done 1800 -> 1815; client key exchange +
 * Finished in two writes 2300 and 2340 -> server kernel 2350 -> server Finished 2500 -> client
 * kernel 2512, read 2530; SSL_connect returns 2700. */
static void tls12(struct ls_evstore *st, int server)
{
	connect_events(st, server);
	CEV(SEND_START, 1400, 1000, 300);
	CEV(ARRIVED, 1815, 10500, 0);
	CEV(READ, 1830, 10500, 1500);
	CEV(SEND_START, 2300, 1300, 100);
	CEV(SEND_START, 2340, 1400, 50);
	CEV(ARRIVED, 2512, 10800, 0);
	CEV(READ, 2530, 10800, 300);
	CEV(TLS_END, 2700, 0, 0);
	if (server) {
		SEV(ARRIVED, 1410, 1300, 0);
		SEV(READ, 1420, 1300, 300);
		SEV(SEND_START, 1800, 9000, 1500);
		SEV(ARRIVED, 2310, 1400, 0); /* the first write only: the flight is not all there */
		SEV(ARRIVED, 2350, 1450, 0);
		SEV(READ, 2360, 1450, 150);
		SEV(SEND_START, 2500, 10500, 300);
	}
	request_events(st, server, 2750, 1450, 10800);
}

#define P(parts, part) ((parts).ns[LS_PART_##part] / US)

static void assert_sums(const struct ls_req_attr *q)
{
	cr_assert_eq(ls_parts_sum(&q->ttft), q->ttft_ns);
	cr_assert_eq(ls_parts_sum(&q->connect), q->connect_span_ns);
	cr_assert_eq(ls_parts_sum(&q->tls), q->tls_span_ns);
}

static struct ls_attribution *attribute(void (*scenario)(struct ls_evstore *, int), int server,
					struct ls_request *r, struct ls_evstore **st)
{
	struct ls_run run;

	one_request(&run, r);
	*st = ls_evstore_new();
	scenario(*st, server);
	struct ls_attribution *a = ls_attribute(&run, *st, NULL, 0, t_honest_rules(), NULL);
	cr_assert_not_null(a);
	return a;
}

static void done(struct ls_attribution *a, struct ls_evstore *st, struct ls_request *r)
{
	ls_attribution_free(a);
	ls_evstore_free(st);
	ls_request_free(r);
}

Test(attribution_tls, tls13_server_watched_one_round_trip)
{
	struct ls_request r = { 0 };
	struct ls_evstore *st;
	struct ls_attribution *a = attribute(tls13, 1, &r, &st);
	const struct ls_req_attr *q = &a->req[0];

	cr_assert_eq(q->flags, 0, "flags %#x", q->flags);
	cr_assert_eq(q->syn_sent_ns, 1030 * US);
	cr_assert_eq(q->n_tls_rounds, 1);
	cr_assert_eq(q->tls_rounds[0].client_sent_ns, 1400 * US);
	cr_assert_eq(q->tls_rounds[0].server_arrived_ns, 1410 * US);
	cr_assert_eq(q->tls_rounds[0].server_sent_ns, 2000 * US);
	cr_assert_eq(q->tls_rounds[0].client_arrived_ns, 2020 * US);
	/* connect() 1010 -> 1080: client 20 (to the SYN), network 50. */
	cr_assert_eq(q->connect_span_ns, 70 * US);
	cr_assert_eq(P(q->connect, CLIENT), 20);
	cr_assert_eq(P(q->connect, NETWORK), 50);
	/* ESTABLISHED 1080 -> 2850: client 220 + 100 + 830, network 10 + 20, server 590. */
	cr_assert_eq(q->tls_span_ns, 1770 * US);
	cr_assert_eq(P(q->tls, CLIENT), 1150);
	cr_assert_eq(P(q->tls, NETWORK), 30);
	cr_assert_eq(P(q->tls, SERVER), 590);
	/* TTFT 1000 -> 5000: the handshake's intervals are TTFT's. */
	cr_assert_eq(P(q->ttft, CLIENT), 10 + 20 + 1150 + 50 + 5 + 5);
	cr_assert_eq(P(q->ttft, NETWORK), 50 + 30 + 20 + 10);
	cr_assert_eq(P(q->ttft, SERVER), 590 + 2060);
	assert_sums(q);
	done(a, st, &r);
}

Test(attribution_tls, tls12_server_watched_two_round_trips)
{
	struct ls_request r = { 0 };
	struct ls_evstore *st;
	struct ls_attribution *a = attribute(tls12, 1, &r, &st);
	const struct ls_req_attr *q = &a->req[0];

	cr_assert_eq(q->flags, 0, "flags %#x", q->flags);
	cr_assert_eq(q->n_tls_rounds, 2);
	/* The second flight left with its last write, and arrived when all of it had. */
	cr_assert_eq(q->tls_rounds[1].client_sent_ns, 2340 * US);
	cr_assert_eq(q->tls_rounds[1].server_arrived_ns, 2350 * US);
	cr_assert_eq(q->tls_rounds[1].server_sent_ns, 2500 * US);
	cr_assert_eq(q->tls_rounds[1].client_arrived_ns, 2512 * US);
	/* 1080 -> 2700: client 220 + 100 + 525 + 188, network 10 + 15 + 10 + 12, server 390 + 150. */
	cr_assert_eq(q->tls_span_ns, 1620 * US);
	cr_assert_eq(P(q->tls, CLIENT), 1033);
	cr_assert_eq(P(q->tls, NETWORK), 47);
	cr_assert_eq(P(q->tls, SERVER), 540);
	assert_sums(q);
	done(a, st, &r);
}

Test(attribution_tls, client_only_round_trips_are_network_plus_server)
{
	struct ls_request r = { 0 };
	struct ls_evstore *st;
	struct ls_attribution *a = attribute(tls12, 0, &r, &st);
	const struct ls_req_attr *q = &a->req[0];

	cr_assert(q->flags & LS_ATTR_NO_SERVER);
	cr_assert_eq(q->n_tls_rounds, 2);
	cr_assert_eq(q->tls_rounds[0].server_arrived_ns, 0);
	cr_assert_eq(q->tls_rounds[0].server_sent_ns, 0);
	/* Client CPU as with the server watched; the round trips 415 + 172 are network+server. */
	cr_assert_eq(P(q->tls, CLIENT), 1033);
	cr_assert_eq(P(q->tls, NETWORK_SERVER), 415 + 172);
	cr_assert_eq(P(q->tls, NETWORK), 0);
	cr_assert_eq(P(q->tls, SERVER), 0);
	cr_assert_eq(P(q->connect, NETWORK), 50); /* TCP's handshake has no server process in it */
	assert_sums(q);
	done(a, st, &r);

	a = attribute(tls13, 0, &r, &st);
	q = &a->req[0];
	cr_assert_eq(q->n_tls_rounds, 1);
	cr_assert_eq(P(q->tls, CLIENT), 1150);
	cr_assert_eq(P(q->tls, NETWORK_SERVER), 620);
	assert_sums(q);
	done(a, st, &r);
}

/* The server's kernel arrival of the ClientHello was lost: that leg and the server's CPU merge. */
static void tls13_lost_arrival(struct ls_evstore *st, int server)
{
	struct ls_evstore *full = ls_evstore_new();

	tls13(full, server);
	for (size_t i = 0; i < ls_evstore_sockets(full); i++) {
		const struct ls_sock_events *s = ls_evstore_at(full, i);
		for (size_t j = 0; j < s->n; j++)
			if (!(s->ev[j].cookie == S_COOKIE && s->ev[j].kind == LS_EV_ARRIVED && s->ev[j].ts_ns == 1410 * US))
				cr_assert_eq(ls_evstore_add(st, &s->ev[j]), 0);
	}
	ls_evstore_free(full);
}

Test(attribution_tls, lost_arrival_merges_into_network_plus_server)
{
	struct ls_request r = { 0 };
	struct ls_evstore *st;
	struct ls_attribution *a = attribute(tls13_lost_arrival, 1, &r, &st);
	const struct ls_req_attr *q = &a->req[0];

	cr_assert_eq(q->tls_rounds[0].server_arrived_ns, 0);
	cr_assert_eq(q->tls_rounds[0].server_sent_ns, 2000 * US);
	cr_assert_eq(P(q->tls, NETWORK_SERVER), 600);
	cr_assert_eq(P(q->tls, NETWORK), 20);
	cr_assert_eq(P(q->tls, CLIENT), 1150);
	assert_sums(q);
	done(a, st, &r);
}

/* More ping-pongs than any handshake has: not taken for flights, the span stays network. */
static void ping_pong(struct ls_evstore *st, int server)
{
	connect_events(st, server);
	for (uint32_t k = 0; k < LS_TLS_ROUNDS_MAX + 1; k++) {
		CEV(SEND_START, 1400 + 100 * k, 1000 + 10 * k, 10);
		CEV(ARRIVED, 1440 + 100 * k, 9000 + 10 * k + 10, 0);
		CEV(READ, 1450 + 100 * k, 9000 + 10 * k + 10, 10);
	}
	CEV(TLS_END, 2200, 0, 0);
	request_events(st, server, 2300, 1000 + 10 * (LS_TLS_ROUNDS_MAX + 1), 9000 + 10 * (LS_TLS_ROUNDS_MAX + 1));
}

Test(attribution_tls, too_many_rounds_keep_the_span_network)
{
	struct ls_request r = { 0 };
	struct ls_evstore *st;
	struct ls_attribution *a = attribute(ping_pong, 0, &r, &st);
	const struct ls_req_attr *q = &a->req[0];

	cr_assert_eq(q->n_tls_rounds, 0);
	cr_assert_eq(P(q->tls, CLIENT), 220);
	cr_assert_eq(P(q->tls, NETWORK), 2200 - 1300);
	assert_sums(q);
	done(a, st, &r);
}

Test(attribution_tls, parts_sum_exactly_under_jitter_and_loss)
{
	unsigned seed = 2121;

	for (int iter = 0; iter < 400; iter++) {
		struct ls_run run;
		struct ls_request r = { 0 };
		struct ls_evstore *st = ls_evstore_new(), *full = ls_evstore_new();

		one_request(&run, &r);
		(iter % 2 ? tls12 : tls13)(full, iter % 3 != 0);
		for (size_t i = 0; i < ls_evstore_sockets(full); i++) {
			const struct ls_sock_events *s = ls_evstore_at(full, i);
			for (size_t j = 0; j < s->n; j++) {
				struct ls_event e = s->ev[j];
				if (rand_r(&seed) % 6 == 0)
					continue;
				e.ts_ns += (uint64_t)(rand_r(&seed) % 300) * US;
				if (rand_r(&seed) % 10 == 0)
					e.seq += (uint32_t)rand_r(&seed) % 600;
				cr_assert_eq(ls_evstore_add(st, &e), 0);
			}
		}
		struct ls_attribution *a = ls_attribute(&run, st, NULL, 0, t_honest_rules(), NULL);
		cr_assert_not_null(a);
		const struct ls_req_attr *q = &a->req[0];
		if (!(q->flags & LS_ATTR_NOT_OK))
			cr_assert_eq(ls_parts_sum(&q->ttft), q->ttft_ns, "iteration %d TTFT", iter);
		cr_assert_eq(ls_parts_sum(&q->connect), q->connect_span_ns, "iteration %d connect", iter);
		cr_assert_eq(ls_parts_sum(&q->tls), q->tls_span_ns, "iteration %d TLS", iter);
		cr_assert_leq(q->n_tls_rounds, LS_TLS_ROUNDS_MAX);
		done(a, st, &r);
		ls_evstore_free(full);
	}
}

Test(attribution_tls, handshake_server_cpu_is_not_gpu_or_queue)
{
	struct ls_run run;
	struct ls_request r = { 0 };
	struct ls_evstore *st = ls_evstore_new();
	struct ls_gpu_step steps[1] = { { .start_ns = 1500 * US, .end_ns = 4000 * US } }; /* other requests' */

	one_request(&run, &r);
	tls13(st, 1);
	struct ls_attribution *a = ls_attribute(&run, st, steps, 1, t_honest_rules(), NULL);
	const struct ls_req_attr *q = &a->req[0];
	cr_assert(a->have_gpu);
	cr_assert_eq(P(q->ttft, SERVER), 590, "the handshake's server CPU");
	cr_assert_eq(P(q->ttft, GPU), 4000 - 2920);
	cr_assert_eq(P(q->ttft, QUEUE), 2060 - (4000 - 2920));
	cr_assert_eq(P(q->tls, SERVER), 590);
	assert_sums(q);
	done(a, st, &r);
}

Test(attribution_tls, report_line_and_json)
{
	struct ls_request r = { 0 };
	struct ls_evstore *st;
	struct ls_attribution *a = attribute(tls12, 1, &r, &st);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	ls_attribution_print(f, a);
	fclose(f);
	cr_assert(strstr(text, "connect+TLS (connect() -> handshake done, n=1, ms P50/P99): total 1.690/1.690, "
			       "network 0.097/0.097, client 1.053/1.053, server 0.540/0.540\n"), "%s", text);
	cr_assert(strstr(text, "TLS alone (ESTABLISHED -> SSL_connect done, n=1): total 1.620/1.620, network "
			       "0.047/0.047, client 1.033/1.033, server 0.540/0.540\n"), "%s", text);
	free(text);
	cJSON *j = ls_attribution_request_json(a, 0);
	cr_assert_not_null(j);
	cJSON *tls = cJSON_GetObjectItem(j, "tls"), *conn = cJSON_GetObjectItem(j, "connect");
	cr_assert_eq(cJSON_GetObjectItem(tls, "total_ns")->valuedouble, 1620.0 * US);
	cr_assert_eq(cJSON_GetObjectItem(tls, "server_ns")->valuedouble, 540.0 * US);
	cr_assert_eq(cJSON_GetObjectItem(conn, "client_ns")->valuedouble, 20.0 * US);
	cJSON *rounds = cJSON_GetObjectItem(tls, "rounds");
	cr_assert_eq(cJSON_GetArraySize(rounds), 2);
	cr_assert_eq(cJSON_GetArrayItem(cJSON_GetArrayItem(rounds, 1), 3)->valuedouble, 2512.0 * US);
	/* Printed and parsed back, as the JSONL is read. */
	char *line = cJSON_PrintUnformatted(j);
	cJSON *back = cJSON_Parse(line);
	cr_assert_not_null(back, "%s", line);
	cr_assert_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(back, "kernel"), "syn_sent_ns")->valuedouble, 1030.0 * US);
	cJSON_Delete(back);
	free(line);
	cJSON_Delete(j);

	/* The trace nests the round trips inside the handshake. */
	struct ls_run run = { .requests = &r, .n_requests = 1 };
	char path[] = "/tmp/latscope-trace-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(ls_trace_write(path, &run, a, st, NULL, 0), 0);
	char *trace = NULL;
	FILE *tf = fopen(path, "r");
	cr_assert_not_null(tf);
	size_t tlen = 0;
	cr_assert_geq(getdelim(&trace, &tlen, '\0', tf), 0);
	fclose(tf);
	unlink(path);
	cr_assert(strstr(trace, "\"TLS flight to server\"") && strstr(trace, "\"server TLS CPU\"") &&
		  strstr(trace, "\"TLS flight to client\""), "%s", trace);
	free(trace);
	done(a, st, &r);
}
