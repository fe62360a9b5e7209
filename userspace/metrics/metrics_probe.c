/* metrics_probe.c — see metrics_probe.h. vLLM's probe_stats: probe_completed (successful),
 * probe_failed, median / p99 / max of their latency (E2EL) in ms; latscope adds their TTFT, read
 * by the same rules as the run's requests. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "metrics/metrics_probe.h"

int ls_probe_stats_compute(struct ls_request *const *recs, size_t n, const struct ls_read_rules *rules,
			   struct ls_probe_stats *out)
{
	static const double pcts[] = { 50, 99 };
	memset(out, 0, sizeof(*out));
	out->n = n;
	out->ttft_s = malloc((n + 1) * sizeof(double));
	out->e2el_s = malloc((n + 1) * sizeof(double));
	double *ttft = malloc((n + 1) * sizeof(double)), *e2el = malloc((n + 1) * sizeof(double));
	if (!out->ttft_s || !out->e2el_s || !ttft || !e2el) {
		free(ttft);
		free(e2el);
		ls_probe_stats_free(out);
		return -ENOMEM;
	}
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		struct ls_req_view v;
		out->ttft_s[i] = out->e2el_s[i] = NAN;
		if (!ls_request_view(recs[i], rules, &v))
			continue;
		out->ttft_s[i] = ttft[k] = v.ttft_s[rules->origin];
		out->e2el_s[i] = e2el[k] = v.e2el_s[rules->origin];
		k++;
	}
	out->completed = k;
	out->failed = n - k;
	ls_stat_compute_at(ttft, k, pcts, 2, &out->ttft);
	ls_stat_compute_at(e2el, k, pcts, 2, &out->e2el);
	free(ttft);
	free(e2el);
	return 0;
}

void ls_probe_stats_free(struct ls_probe_stats *ps)
{
	free(ps->ttft_s);
	free(ps->e2el_s);
	ps->ttft_s = ps->e2el_s = NULL;
}
