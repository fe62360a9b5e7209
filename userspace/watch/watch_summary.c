/* watch_summary.c — the figures `latscope watch` prints first, from struct ls_watch. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "base/stats.h"
#include "watch/watch.h"

void ls_watch_dist_of(uint64_t *v, size_t n, struct ls_watch_dist *d)
{
	double sum = 0;

	memset(d, 0, sizeof(*d));
	d->n = n;
	if (!n)
		return;
	ls_sort_u64(v, n);
	for (size_t i = 0; i < n; i++)
		sum += (double)v[i];
	d->mean_ns = sum / (double)n;
	d->p50_ns = ls_percentile_u64(v, n, 50);
	d->p90_ns = ls_percentile_u64(v, n, 90);
	d->p99_ns = ls_percentile_u64(v, n, 99);
	d->max_ns = (double)v[n - 1];
}

/* b - a when both happened in that order. */
static int span(uint64_t a, uint64_t b, uint64_t *out)
{
	if (!a || !b || b < a)
		return 0;
	*out = b - a;
	return 1;
}

static void conn_figures(const struct ls_watch *w, uint64_t *v, struct ls_watch_summary *s)
{
	size_t n;

	n = 0;
	for (size_t i = 0; i < w->n_conns; i++) {
		const struct ls_watch_conn *c = &w->conns[i];
		s->n_conns_connect_seen += c->connect_ns != 0;
		if (span(c->connect_ns, w->ex[c->first_ex].sent_ns, &v[n]))
			n++;
	}
	ls_watch_dist_of(v, n, &s->connect_to_sent);
	n = 0;
	for (size_t i = 0; i < w->n_conns; i++)
		if (span(w->conns[i].connect_ns, w->conns[i].established_ns, &v[n]))
			n++;
	ls_watch_dist_of(v, n, &s->connect_to_est);
	n = 0;
	for (size_t i = 0; i < w->n_conns; i++) {
		const struct ls_watch_conn *c = &w->conns[i];
		uint64_t up = c->tls_end_ns ? c->tls_end_ns : c->established_ns;
		if (span(up, w->ex[c->first_ex].sent_ns, &v[n]))
			n++;
	}
	ls_watch_dist_of(v, n, &s->est_to_sent);
	n = 0;
	for (size_t i = 0; i < w->n_conns; i++) {
		const struct ls_watch_conn *c = &w->conns[i];
		s->n_handshakes += c->n_handshakes;
		s->n_conns_tls += c->n_handshakes > 0;
		if (span(c->tls_start_ns, c->tls_end_ns, &v[n]))
			n++;
	}
	ls_watch_dist_of(v, n, &s->tls);
}

/* The four parts of sent_first -> first frame read, with the server's read and write. */
static int parts(const struct ls_watch_exchange *x, uint64_t p[4])
{
	uint64_t total, before, net_in, srv, net_out, after;

	if (!span(x->send_first_ns, x->first_data_read_ns, &total) || !span(x->send_first_ns, x->sent_ns, &before) ||
	    !span(x->sent_ns, x->srv_read_ns, &net_in) || !span(x->srv_read_ns, x->srv_write_ns, &srv) ||
	    !span(x->srv_write_ns, x->first_data_ns, &net_out) || !span(x->first_data_ns, x->first_data_read_ns, &after))
		return 0;
	p[0] = before + after;
	p[1] = net_in + net_out;
	p[2] = srv;
	p[3] = total - (p[0] + p[1] + p[2]);
	return 1;
}

static void exchange_figures(const struct ls_watch *w, uint64_t *v, struct ls_watch_summary *s)
{
	size_t n = 0;

	for (size_t i = 0; i < w->n_ex; i++)
		if (span(w->ex[i].first_data_ns, w->ex[i].first_data_read_ns, &v[n]))
			n++;
	ls_watch_dist_of(v, n, &s->held_first);
	n = 0;
	for (size_t i = 0; i < w->n_ex; i++) {
		s->n_head_apart += w->ex[i].head_apart;
		if (span(w->ex[i].sent_ns, w->ex[i].first_data_ns, &v[n]))
			n++;
	}
	ls_watch_dist_of(v, n, &s->ttft_kernel);
	struct ls_watch_dist *d[4] = { &s->part_client, &s->part_network, &s->part_server, &s->part_unattributed };
	for (int k = 0; k < 4; k++) {
		n = 0;
		for (size_t i = 0; i < w->n_ex; i++) {
			uint64_t p[4];
			if (parts(&w->ex[i], p))
				v[n++] = p[k];
		}
		ls_watch_dist_of(v, n, d[k]);
		s->n_server = n;
	}
}

int ls_watch_summarise(const struct ls_watch *w, struct ls_watch_summary *s)
{
	size_t cap = w->n_conns + w->n_ex + w->n_reads + w->n_gaps + 1;
	uint64_t *v = malloc(cap * sizeof(*v));

	memset(s, 0, sizeof(*s));
	if (!v)
		return -ENOMEM;
	s->n_conns = w->n_conns;
	s->n_ex = w->n_ex;
	s->conns_per_request = w->n_ex ? (double)w->n_conns / (double)w->n_ex : 0;
	for (size_t i = 0; i < w->n_reads; i++)
		v[i] = w->reads[i].read_ns - w->reads[i].arrived_ns;
	ls_watch_dist_of(v, w->n_reads, &s->held_read);
	if (w->n_gaps)
		memcpy(v, w->gaps, w->n_gaps * sizeof(*v));
	ls_watch_dist_of(v, w->n_gaps, &s->itl_kernel);
	conn_figures(w, v, s);
	exchange_figures(w, v, s);
	free(v);
	return 0;
}
