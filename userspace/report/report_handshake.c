/* report_handshake.c — the report's connect/TLS lines: what fresh connections' handshakes cost,
 * split into network (the flights between the two kernels), client CPU and server CPU (or
 * network+server where the server is not watched), P50/P99 per part over measured requests. */
#include <stdlib.h>
#include "base/stats.h"
#include "report/report.h"

enum span { SPAN_BOTH, SPAN_TLS };

static const enum ls_part shown[] = {
	LS_PART_NETWORK, LS_PART_CLIENT, LS_PART_SERVER, LS_PART_NETWORK_SERVER, LS_PART_UNATTRIBUTED,
};

/* One value per request with the span (ms): a part, or the span when part == LS_PART__COUNT.
 * SPAN_BOTH is connect() -> handshake done: the connect parts plus the TLS ones. */
static size_t collect(const struct ls_attribution *a, enum span s, int part, double *out, int *tls)
{
	size_t n = 0;

	for (size_t i = 0; i < a->n; i++) {
		const struct ls_req_attr *r = &a->req[i];
		uint64_t v;
		if (r->flags & (LS_ATTR_WARMUP | LS_ATTR_NOT_OK))
			continue;
		if (s == SPAN_TLS ? !r->tls_span_ns : !r->connect_span_ns)
			continue;
		if (part == LS_PART__COUNT)
			v = (s == SPAN_TLS ? 0 : r->connect_span_ns) + r->tls_span_ns;
		else
			v = (s == SPAN_TLS ? 0 : r->connect.ns[part]) + r->tls.ns[part];
		*tls |= r->tls_span_ns != 0;
		out[n++] = v / 1e6;
	}
	ls_sort_doubles(out, n);
	return n;
}

static void print_span(FILE *out, const struct ls_attribution *a, enum span s, double *buf)
{
	int tls = 0;
	size_t n = collect(a, s, LS_PART__COUNT, buf, &tls);

	if (!n)
		return;
	if (s == SPAN_TLS)
		fprintf(out, "  TLS alone (ESTABLISHED -> SSL_connect done, n=%zu): total %.3f/%.3f", n,
			ls_percentile(buf, n, 50), ls_percentile(buf, n, 99));
	else
		fprintf(out, "%s (connect() -> %s, n=%zu, ms P50/P99): total %.3f/%.3f", tls ? "connect+TLS" : "connect",
			tls ? "handshake done" : "ESTABLISHED", n, ls_percentile(buf, n, 50), ls_percentile(buf, n, 99));
	for (size_t k = 0; k < sizeof(shown) / sizeof(shown[0]); k++) {
		enum ls_part p = shown[k];
		collect(a, s, (int)p, buf, &tls);
		int always = p == LS_PART_NETWORK || p == LS_PART_CLIENT || (p == LS_PART_SERVER && a->have_server);
		if (!always && buf[n - 1] <= 0)
			continue; /* sorted: the last is the largest */
		fprintf(out, ", %s %.3f/%.3f", ls_part_name(p), ls_percentile(buf, n, 50), ls_percentile(buf, n, 99));
	}
	fprintf(out, "\n");
}

void ls_handshake_print(FILE *out, const struct ls_attribution *a)
{
	double *buf = malloc((a->n + 1) * sizeof(*buf));
	int tls = 0;

	if (!buf)
		return;
	print_span(out, a, SPAN_BOTH, buf);
	if (collect(a, SPAN_TLS, LS_PART__COUNT, buf, &tls))
		print_span(out, a, SPAN_TLS, buf);
	free(buf);
}
