/* The handshake split end to end (root): the driver sends HTTPS requests over fresh connections
 * to `latscope sim --tls` (TLS 1.3 and 1.2) on loopback with the probes on this process and the
 * simulator. Per request the TLS handshake's network + client + server is its span exactly, with
 * 1 (1.3) or 2 (1.2) round trips, network is within tens of microseconds of the flights'
 * kernel-to-kernel times and server of the server's kernel arrival -> reply leaving, both
 * computed here from the raw events (client the span's rest: each part checked, not only their
 * sum); without the server watched the round trips are network+server. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "t_drive.h"
#include "t_helpers.h"
#include "attribution/attribution.h"
#include "config/profile.h"
#include "workload/arrival.h"
#include "driver/backend.h"
#include "driver/driver.h"
#include "probes/evstore.h"
#include "probes/probes.h"
#include "report/report.h"

#define N_REQ 40
#define K2K_TOL_NS 30000ull /* network vs the flights' kernel-to-kernel sum, per request */

struct write {
	int server;
	uint64_t ts;
	uint32_t end;
};

/* First ARRIVED of s at or after t whose rcv_nxt reaches seq (0: none). */
static uint64_t arrived(const struct ls_sock_events *s, uint64_t t, uint32_t seq)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (s->ev[i].kind == LS_EV_ARRIVED && s->ev[i].ts_ns >= t && (int32_t)(s->ev[i].seq - seq) >= 0)
			return s->ev[i].ts_ns;
	return 0;
}

/* A READ of s in [from, to] whose copied_seq reaches seq. */
static int read_by(const struct ls_sock_events *s, uint64_t from, uint64_t to, uint32_t seq)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->ev[i].kind == LS_EV_READ && s->ev[i].ts_ns >= from && s->ev[i].ts_ns <= to &&
		    (int32_t)(s->ev[i].seq - seq) >= 0)
			return 1;
	return 0;
}

/* The flights' kernel-to-kernel times in [from, to], from the raw events of both sockets: the
 * writes of both sides in time order, a flight being the writes up to a change of side, timed
 * from its last write's send start to the other kernel's arrival of its last byte. A last client
 * flight (TLS 1.3's Finished) is answered by nothing and not counted. *srv_ns: the server's own
 * time, each answered client flight's arrival in the server's kernel -> the server's answering
 * flight leaving (its last write's send start). */
static uint64_t flights_k2k(const struct ls_sock_events *cs, const struct ls_sock_events *ss, uint64_t from,
			    uint64_t to, int *n_flights, uint64_t *srv_ns)
{
	struct write w[64];
	size_t n = 0, ci = 0, si = 0;
	uint64_t sum = 0;

	while (n < 64) { /* merge the two sockets' send starts by time */
		while (ci < cs->n && (cs->ev[ci].kind != LS_EV_SEND_START || cs->ev[ci].ts_ns < from))
			ci++;
		while (si < ss->n && (ss->ev[si].kind != LS_EV_SEND_START || ss->ev[si].ts_ns < from))
			si++;
		const struct ls_event *c = ci < cs->n && cs->ev[ci].ts_ns <= to ? &cs->ev[ci] : NULL;
		const struct ls_event *s = si < ss->n && ss->ev[si].ts_ns <= to ? &ss->ev[si] : NULL;
		if (!c && !s)
			break;
		int server = !c || (s && s->ts_ns < c->ts_ns);
		const struct ls_event *e = server ? s : c;
		w[n++] = (struct write){ server, e->ts_ns, e->seq + e->len };
		server ? si++ : ci++;
	}
	size_t f[64], nf = 0; /* each flight's last write */
	for (size_t i = 0; i < n; i++)
		if (i + 1 == n || w[i + 1].server != w[i].server)
			f[nf++] = i;
	*n_flights = 0;
	*srv_ns = 0;
	for (size_t k = 0; k < nf; k++) {
		size_t i = f[k];
		/* Waited for: a server flight the client read to its end before SSL_connect returned,
		 * or a client flight such a server flight answered. */
		size_t srv_k = w[i].server ? k : k + 1;
		if (srv_k >= nf || !read_by(cs, w[f[srv_k]].ts, to, w[f[srv_k]].end))
			continue;
		uint64_t at = arrived(w[i].server ? cs : ss, w[i].ts, w[i].end);
		cr_assert(at, "flight at %llu never arrived", (unsigned long long)w[i].ts);
		sum += at - w[i].ts;
		if (!w[i].server && w[f[srv_k]].ts >= at)
			*srv_ns += w[f[srv_k]].ts - at;
		(*n_flights)++;
	}
	return sum;
}

/* One run against a sim capped at tls_max; server watched or not. */
static void handshakes(const char *tls_max, int watch_server)
{
	struct t_sim sim;
	struct t_drive d;
	struct ls_loop_hook hook;
	char why[256];
	const char *extra[] = { "--tls", "--tls-max", tls_max, "--step-ms", "1", "--quiet", NULL };
	int rounds_want = strcmp(tls_max, "1.2") ? 1 : 2;

	t_need_root_and_btf();
	cr_assert_eq(t_sim_start(&sim, 1, extra), 0, "sim did not start");
	pid_t self = getpid(), srv = sim.pid;
	struct ls_probes_opts po = { .client_pids = &self, .n_client_pids = 1,
				     .server_pids = watch_server ? &srv : NULL, .n_server_pids = watch_server };
	struct ls_probes *p = ls_probes_open(&po, why, sizeof(why));
	cr_assert_not_null(p, "ls_probes_open: %s", why);
	ls_probes_loop_hook(p, &hook);
	t_drive(&d, "tls", sim.url, N_REQ, 4, 1, 1, &hook); /* one at a time, each a fresh TLS connection */
	ls_probes_drain(p);
	const struct ls_evstore *st = ls_probes_events(p);
	struct ls_attribution *a = ls_attribute(&d.run, st, NULL, 0, t_honest_rules(), NULL);
	cr_assert_not_null(a);
	cr_assert_eq(a->lost_events, 0);
	for (size_t i = 0; i < N_REQ; i++) {
		const struct ls_req_attr *q = &a->req[i];
		const struct ls_parts *t = &q->tls;
		cr_assert(d.recs[i].new_connection && q->tls_span_ns, "request %zu: no handshake (flags %#x)", i, q->flags);
		cr_assert_eq(q->n_tls_rounds, rounds_want, "request %zu: %u round trips, TLS %s", i, q->n_tls_rounds,
			     tls_max);
		cr_assert_eq(ls_parts_sum(t), q->tls_span_ns, "request %zu", i);
		cr_assert_eq(ls_parts_sum(&q->connect), q->connect_span_ns, "request %zu", i);
		cr_assert_eq(ls_parts_sum(&q->ttft), q->ttft_ns, "request %zu", i);
		cr_assert_gt(t->ns[LS_PART_CLIENT], 0, "request %zu", i);
		cr_assert_eq(t->ns[LS_PART_UNATTRIBUTED], 0, "request %zu", i);
		if (!watch_server) {
			cr_assert_eq(t->ns[LS_PART_NETWORK] + t->ns[LS_PART_SERVER], 0, "request %zu", i);
			cr_assert_gt(t->ns[LS_PART_NETWORK_SERVER], 0, "request %zu", i);
			continue;
		}
		cr_assert_eq(q->flags, 0, "request %zu flags %#x", i, q->flags);
		cr_assert_eq(t->ns[LS_PART_NETWORK] + t->ns[LS_PART_CLIENT] + t->ns[LS_PART_SERVER], q->tls_span_ns,
			     "request %zu: network+client+server is not the handshake", i);
		cr_assert_gt(t->ns[LS_PART_SERVER], 0, "request %zu", i);
		int flights = 0;
		uint64_t srv_k = 0;
		uint64_t k2k = flights_k2k(ls_evstore_find(st, q->client_cookie), ls_evstore_find(st, q->server_cookie),
					   q->tls_start_ns, q->tls_end_ns, &flights, &srv_k);
		uint64_t net = t->ns[LS_PART_NETWORK], diff = net > k2k ? net - k2k : k2k - net;
		cr_assert_geq(flights, 2 * rounds_want, "request %zu: %d flights", i, flights);
		cr_assert_leq(diff, K2K_TOL_NS, "request %zu: network %llu ns, flights kernel to kernel %llu ns", i,
			      (unsigned long long)net, (unsigned long long)k2k);
		/* Each part against its own stamps, not only the sum: a split that swapped client and
		 * server would keep the sum and the network part. Client is the span's rest. */
		uint64_t srv = t->ns[LS_PART_SERVER], cli = t->ns[LS_PART_CLIENT];
		uint64_t cli_k = q->tls_span_ns > k2k + srv_k ? q->tls_span_ns - k2k - srv_k : 0;
		diff = srv > srv_k ? srv - srv_k : srv_k - srv;
		cr_assert_leq(diff, K2K_TOL_NS, "request %zu: server %llu ns, its kernel's arrival -> reply leaving "
			      "%llu ns (client %llu ns, by the stamps %llu ns)", i, (unsigned long long)srv,
			      (unsigned long long)srv_k, (unsigned long long)cli, (unsigned long long)cli_k);
		diff = cli > cli_k ? cli - cli_k : cli_k - cli;
		cr_assert_leq(diff, 2 * K2K_TOL_NS, "request %zu: client %llu ns, by the stamps %llu ns", i,
			      (unsigned long long)cli, (unsigned long long)cli_k);
	}
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	ls_attribution_print(f, a);
	fclose(f);
	const char *line = strstr(text, "connect+TLS");
	cr_assert(line, "%s", text);
	fprintf(stderr, "TLS %s, server %swatched: %.*s", tls_max, watch_server ? "" : "not ",
		(int)(strstr(strstr(line, "TLS alone"), "\n") - line + 1), line);
	cr_assert(strstr(line, watch_server ? ", server " : ", network+server "), "%s", line);
	free(text);
	ls_attribution_free(a);
	ls_probes_close(p);
	t_drive_free(&d);
	t_sim_stop(&sim);
}

Test(probes_tls, tls13_handshake_split_server_watched, .timeout = 90)
{
	handshakes("1.3", 1);
}

Test(probes_tls, tls12_handshake_split_server_watched, .timeout = 90)
{
	handshakes("1.2", 1);
}

Test(probes_tls, tls13_client_only_is_network_plus_server, .timeout = 90)
{
	handshakes("1.3", 0);
}
