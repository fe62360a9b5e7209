/* --preconnect (driver_preconnect.c): N connections opened before the clock starts, from the
 * sim's point of view: with --preconnect 8 and --max-concurrency 8 the sim accepted exactly 8
 * connections, every measured request came on one of them, and the driver opened none during
 * the run. Not timed. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "test_driver_common.h"

TestSuite(driver_preconnect, .fini = t_sim_fini);

struct text {
	char   buf[16384];
	size_t len;
};

static size_t on_text(char *p, size_t size, size_t n, void *ctx)
{
	struct text *t = ctx;
	size_t len = size * n, room = sizeof(t->buf) - 1 - t->len;
	memcpy(t->buf + t->len, p, len < room ? len : room);
	t->len += len < room ? len : room;
	t->buf[t->len] = 0;
	return len;
}

/* The sim's latscope_sim_connections_total (its /metrics, on a connection of its own), or -1. */
static long connections_accepted(const struct t_sim *sim)
{
	char url[256];
	struct text t = { .len = 0 };
	snprintf(url, sizeof(url), "%s/metrics", sim->url);
	CURL *e = curl_easy_init();
	if (!e)
		return -1;
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_text);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
	CURLcode rc = curl_easy_perform(e);
	curl_easy_cleanup(e);
	const char *at = rc == CURLE_OK ? strstr(t.buf, "\nlatscope_sim_connections_total") : NULL;
	at = at ? strchr(at, '}') : NULL;
	return at ? strtol(at + 1, NULL, 10) : -1;
}

Test(driver_preconnect, eight_connections_before_the_run_none_during, .timeout = 60)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "2", "--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	struct t_batch b;
	t_batch_init(&b, LS_BACKEND_OPENAI, 24, 3);
	struct ls_driver_opts o;
	char url[256];
	t_opts(&o, &b, &sim, LS_BACKEND_OPENAI, url, sizeof(url));
	o.max_concurrency = 8;
	o.preconnect = 8;
	long before = connections_accepted(&sim); /* the start's probe, and this question's own */
	cr_assert_gt(before, 0);
	cr_assert_eq(t_driver_run(&o, &b), 0);
	ls_driver_pool_close();
	cr_assert_eq(t_count_fail(&b, LS_OK), b.n, "all ok (first: %s)", b.recs[0].error);
	cr_expect_eq(b.run.n_preconnected, 8, "the run says 8 connections were opened first (%u)", b.run.n_preconnected);
	cr_expect_gt(b.run.preconnect_ns, 0);
	for (size_t i = 0; i < b.n; i++) {
		cr_expect_eq(b.recs[i].new_connection, 0, "request %zu opened no connection", i);
		cr_expect_eq(b.recs[i].connect_ns, 0);
		cr_expect(b.recs[i].conn_seq >= 1 && b.recs[i].conn_seq <= 8, "request %zu on connection %u", i,
			  b.recs[i].conn_seq);
	}
	struct t_truth t;
	cr_assert_eq(t_truth_load(sim.truth, b.run.run_tag, b.n, &t), 0);
	cr_expect_eq(t_truth_distinct_conns(&t), 8, "the run's requests came on 8 connections (%zu)",
		     t_truth_distinct_conns(&t));
	for (size_t i = 0; i < t.n; i++)
		cr_expect(t.conns[i] > (uint64_t)before && t.conns[i] <= (uint64_t)before + 8,
			  "%s on sim connection %llu (the 8 after %ld)", t.ids[i], (unsigned long long)t.conns[i], before);
	/* Those 8 were all it accepted between the two questions: the GETs opened them, before the
	 * first measured request, which came on one of them. */
	cr_expect_eq(connections_accepted(&sim), before + 8 + 1, "the sim accepted 8 connections, then this one");
	t_truth_free(&t);
	t_batch_free(&b);
	t_sim_stop_checked(&sim);
}

Test(driver_preconnect, off_by_default_opens_lazily, .timeout = 60)
{
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "2", "--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	struct t_batch b;
	t_batch_init(&b, LS_BACKEND_OPENAI, 8, 2);
	struct ls_driver_opts o;
	char url[256];
	t_opts(&o, &b, &sim, LS_BACKEND_OPENAI, url, sizeof(url));
	o.max_concurrency = 4;
	cr_assert_eq(t_driver_run(&o, &b), 0);
	ls_driver_pool_close();
	cr_assert_eq(b.run.n_preconnected, 0);
	size_t opened = 0;
	for (size_t i = 0; i < b.n; i++)
		opened += b.recs[i].new_connection;
	cr_expect_gt(opened, 0, "without --preconnect the run's first requests open the connections");
	t_batch_free(&b);
	t_sim_stop_checked(&sim);
}

Test(driver_preconnect, refused_with_a_connection_per_request, .timeout = 30)
{
	struct t_sim sim;
	const char *extra[] = { "--quiet", NULL };
	t_sim_start_checked(&sim, 0, extra);
	struct t_batch b;
	t_batch_init(&b, LS_BACKEND_OPENAI, 2, 2);
	struct ls_driver_opts o;
	char url[256];
	t_opts(&o, &b, &sim, LS_BACKEND_OPENAI, url, sizeof(url));
	o.per_request_conn = 1;
	o.preconnect = 2;
	cr_expect_lt(t_driver_run(&o, &b), 0);
	t_batch_free(&b);
	t_sim_stop_checked(&sim);
}
