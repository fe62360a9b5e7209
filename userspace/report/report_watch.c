/* report_watch.c — `latscope watch`'s text: what the harness hid, first; then the figures per
 * connection and per request. All times in ms. */
#include <stdlib.h>
#include <string.h>
#include "base/stats.h"
#include "report/watch_report.h"

static void dist_row(FILE *out, const char *label, const struct ls_watch_dist *d)
{
	if (!d->n) {
		fprintf(out, "  %-44s %6s   (not seen)\n", label, "0");
		return;
	}
	fprintf(out, "  %-44s %6zu %8.3f %8.3f %8.3f %8.3f %8.3f\n", label, d->n, d->mean_ns / 1e6, d->p50_ns / 1e6,
		d->p90_ns / 1e6, d->p99_ns / 1e6, d->max_ns / 1e6);
}

static void dist_head(FILE *out, const char *title)
{
	fprintf(out, "%s\n  %-44s %6s %8s %8s %8s %8s %8s\n", title, "(ms)", "n", "mean", "P50", "P90", "P99", "max");
}

static void summary_lines(FILE *out, const struct ls_watch *w, const struct ls_watch_summary *s,
			  const struct ls_watch_report_ctx *ctx)
{
	fprintf(out, "watched: %zu connection(s)%s, %zu request(s) (HTTP/1.1 exchanges), %.2f connection(s) per "
		"request, %zu TLS handshake(s) on %zu connection(s)\n", s->n_conns,
		ctx->port ? " to the port given" : "", s->n_ex, s->conns_per_request, s->n_handshakes, s->n_conns_tls);
	if (w->n_conns_no_ex)
		fprintf(out, "  (%zu more connection(s) carried no request: left out)\n", w->n_conns_no_ex);
	dist_head(out, "\nTime this harness held bytes the kernel already had (kernel arrival -> the harness's read):");
	dist_row(out, "per read (oldest byte it delivered)", &s->held_read);
	dist_row(out, "per first frame of a response", &s->held_first);
	dist_head(out, "\nTime between opening a connection and sending the request:");
	dist_row(out, "connect() -> request sent (1st on a conn)", &s->connect_to_sent);
	dist_row(out, "  connect() -> ESTABLISHED", &s->connect_to_est);
	dist_row(out, "  ESTABLISHED (or TLS done) -> request sent", &s->est_to_sent);
	dist_row(out, "  TLS handshake (libssl: first call -> done)", &s->tls);
	dist_head(out, "\nKernel-level latency (the harness's kernel, no harness in it):");
	dist_row(out, "TTFT: request sent -> first frame arrived", &s->ttft_kernel);
	dist_row(out, "ITL: arrival-to-arrival gaps", &s->itl_kernel);
	if (s->n_head_apart)
		fprintf(out, "  (%zu of %zu responses sent their head ahead of the first frame: TTFT is to the frame "
			"after it)\n", s->n_head_apart, s->n_ex);
	if (s->n_server) {
		dist_head(out, "\nWith the server watched: request's first send -> first frame read, in parts:");
		dist_row(out, "client (before the send + arrival -> read)", &s->part_client);
		dist_row(out, "network (request and frame on the wire)", &s->part_network);
		dist_row(out, "server (read request -> write first frame)", &s->part_server);
		dist_row(out, "unattributed", &s->part_unattributed);
	}
}

/* mean, P50, P99 of v (sorted in place), ms. */
static void mpp(uint64_t *v, size_t n, double o[3])
{
	double sum = 0;

	ls_sort_u64(v, n);
	for (size_t i = 0; i < n; i++)
		sum += (double)v[i];
	o[0] = n ? sum / (double)n / 1e6 : 0;
	o[1] = ls_percentile_u64(v, n, 50) / 1e6;
	o[2] = ls_percentile_u64(v, n, 99) / 1e6;
}

static void vs_rows(FILE *out, const char *what, uint64_t *rep, size_t n_rep, const struct ls_watch_dist *k)
{
	double r[3], kk[3] = { k->mean_ns / 1e6, k->p50_ns / 1e6, k->p99_ns / 1e6 };

	mpp(rep, n_rep, r);
	fprintf(out, "  %-44s %6zu %8.3f %8.3f %8.3f\n", what, n_rep, r[0], r[1], r[2]);
	fprintf(out, "  %-44s %6zu %8.3f %8.3f %8.3f\n", "  kernel-level", k->n, kk[0], kk[1], kk[2]);
	fprintf(out, "  %-44s %6s %8.3f %8.3f %8.3f\n", "  difference: time inside the harness", "", r[0] - kk[0],
		r[1] - kk[1], r[2] - kk[2]);
}

static void harness_lines(FILE *out, const struct ls_watch_summary *s, const struct ls_harness_result *hr,
			  const struct ls_watch_report_ctx *ctx)
{
	if (!hr) {
		fprintf(out, "\nThe harness's reported TTFT/ITL were not given (--harness-result FILE): the difference "
			"to the kernel-level figures is not shown.\n");
		return;
	}
	fprintf(out, "\nReported by the harness (%s, read as %s) next to the kernel-level figures:\n"
		"  %-44s %6s %8s %8s %8s\n", ctx->harness_path, hr->format, "(ms)", "n", "mean", "P50", "P99");
	vs_rows(out, "TTFT reported", hr->ttfts, hr->n_ttfts, &s->ttft_kernel);
	vs_rows(out, "ITL reported", hr->itls, hr->n_itls, &s->itl_kernel);
	fprintf(out, "  (reported TTFT starts where the harness starts its clock, before connect(); kernel TTFT "
		"starts when the request left: the difference holds the harness's backlog before the send and "
		"its reading after the arrival)\n");
}

static double rel_ms(uint64_t t, uint64_t t0)
{
	return t && t >= t0 ? (double)(t - t0) / 1e6 : -1;
}

static double d_ms(uint64_t a, uint64_t b)
{
	return a && b && b >= a ? (double)(b - a) / 1e6 : -1;
}

static void conn_table(FILE *out, const struct ls_watch *w, const struct ls_watch_report_ctx *ctx)
{
	size_t rows = w->n_conns < ctx->max_rows ? w->n_conns : ctx->max_rows;

	fprintf(out, "\nPer connection (%zu of %zu; -1: not seen; times from the watch's start):\n"
		"  %4s %7s %5s>%-5s %9s %9s %9s %5s %9s %s\n", rows, w->n_conns, "#", "pid", "lport", "rport",
		"connect", "->estab", "tls", "reqs", "close", "closed by");
	for (size_t i = 0; i < rows; i++) {
		const struct ls_watch_conn *c = &w->conns[i];
		fprintf(out, "  %4zu %7u %5u>%-5u %9.3f %9.3f %9.3f %5u %9.3f %s%s\n", i, c->tgid, c->lport, c->rport,
			rel_ms(c->connect_ns, ctx->t0_ns), d_ms(c->connect_ns, c->established_ns),
			d_ms(c->tls_start_ns, c->tls_end_ns), c->n_ex, rel_ms(c->close_ns, ctx->t0_ns),
			c->closed_by == 1 ? "harness" : c->closed_by == 2 ? "server" : "-",
			c->time_wait ? " (TIME_WAIT)" : "");
	}
}

/* P50 and max of the exchange's read delays. */
static void ex_reads(const struct ls_watch *w, size_t ix, double *p50, double *max)
{
	uint64_t *v = malloc((w->n_reads + 1) * sizeof(*v));
	size_t n = 0;

	*p50 = *max = -1;
	if (!v)
		return;
	for (size_t i = 0; i < w->n_reads; i++)
		if (w->reads[i].ex == ix)
			v[n++] = w->reads[i].read_ns - w->reads[i].arrived_ns;
	if (n) {
		ls_sort_u64(v, n);
		*p50 = ls_percentile_u64(v, n, 50) / 1e6;
		*max = (double)v[n - 1] / 1e6;
	}
	free(v);
}

static void request_table(FILE *out, const struct ls_watch *w, const struct ls_watch_report_ctx *ctx)
{
	size_t rows = w->n_ex < ctx->max_rows ? w->n_ex : ctx->max_rows;

	fprintf(out, "\nPer request (%zu of %zu; ms; held: arrival -> read):\n  %4s %4s %9s %9s %9s %9s %9s %5s "
		"%8s %8s %9s%s\n", rows, w->n_ex, "#", "conn", "sent", "conn>sent", "sent>1stB", "sent>1stF",
		"held 1stF", "reads", "held P50", "held max", "last byte", w->have_server ? "  srv read  srv write" : "");
	for (size_t i = 0; i < rows; i++) {
		const struct ls_watch_exchange *x = &w->ex[i];
		const struct ls_watch_conn *c = &w->conns[x->conn];
		double p50, max;
		ex_reads(w, i, &p50, &max);
		fprintf(out, "  %4zu %4u %9.3f %9.3f %9.3f %9.3f %9.3f %5u %8.3f %8.3f %9.3f", i, x->conn,
			rel_ms(x->sent_ns, ctx->t0_ns), x->nth ? -1 : d_ms(c->connect_ns, x->sent_ns),
			d_ms(x->sent_ns, x->first_byte_ns), d_ms(x->sent_ns, x->first_data_ns),
			d_ms(x->first_data_ns, x->first_data_read_ns), x->n_reads, p50, max,
			rel_ms(x->last_byte_ns, ctx->t0_ns));
		if (w->have_server)
			fprintf(out, " %9.3f %9.3f", rel_ms(x->srv_read_ns, ctx->t0_ns), rel_ms(x->srv_write_ns, ctx->t0_ns));
		fprintf(out, "\n");
	}
}

void ls_watch_report_text(FILE *out, const struct ls_watch *w, const struct ls_watch_summary *s,
			  const struct ls_harness_result *hr, const struct ls_watch_report_ctx *ctx)
{
	fprintf(out, "\nlatscope watch: %s: %zu process(es) watched, %.2f s", ctx->what, ctx->n_pids, ctx->watched_s);
	if (ctx->exit_known)
		fprintf(out, ", exit status %d", ctx->exit_code);
	fprintf(out, "\n");
	summary_lines(out, w, s, ctx);
	harness_lines(out, s, hr, ctx);
	if (ctx->probe_events && w->n_reads)
		fprintf(out, "\nprobes: %llu events, %.2f per read of response bytes\n",
			(unsigned long long)ctx->probe_events, (double)ctx->probe_events / (double)w->n_reads);
	if (ctx->lost_events)
		fprintf(out, "probes: %llu events LOST (ring buffer full): the requests on those sockets are "
			"incomplete\n", (unsigned long long)ctx->lost_events);
	conn_table(out, w, ctx);
	request_table(out, w, ctx);
	if (w->n_ex > ctx->max_rows || w->n_conns > ctx->max_rows)
		fprintf(out, "  (every connection, request and read: --record FILE)\n");
	fprintf(out, "\nHow requests are split: per connection, as HTTP/1.1 (a send burst, then the response "
		"until the next send or the close). With HTTP/2 (several requests on one connection at once) an "
		"exchange is not a request: the kernel shows the connection's bytes, not which stream they carry.\n");
	if (w->tls_unlinked)
		fprintf(out, "note: %d TLS handshake(s) could not be tied to a socket: their connections' first "
			"exchange may hold handshake bytes\n", w->tls_unlinked);
	for (const char *p = ctx->notes; p && *p;) {
		size_t len = strcspn(p, "\n");
		if (len)
			fprintf(out, "note: %.*s\n", (int)len, p);
		p += len + (p[len] == '\n');
	}
	fflush(out);
}
