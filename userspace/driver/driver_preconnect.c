/* driver_preconnect.c — --preconnect N: before the clock starts, N GET /v1/models at once
 * through the run's multi handle, by the loop itself (driver.c: drv_loop), so that libcurl's
 * keep-alive pool holds N connections when the first measured request goes. Each GET is a
 * whole exchange, which is what leaves a connection reusable in the pool (a bare connect
 * does not). Their records are the driver's own: no on_finish, no run stamps. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/clock.h"
#include "driver/driver_int.h"

/* The server's /v1/models beside opts->url (libcurl's URL parser), or NULL. */
static char *models_url(const char *url)
{
	CURLU *u = curl_url();
	char *out = NULL, *s = NULL;
	if (u && !curl_url_set(u, CURLUPART_URL, url, 0) && !curl_url_set(u, CURLUPART_PATH, "/v1/models", 0) &&
	    !curl_url_set(u, CURLUPART_QUERY, NULL, 0) && !curl_url_get(u, CURLUPART_URL, &s, 0))
		out = strdup(s);
	curl_free(s);
	curl_url_cleanup(u);
	return out;
}

void drv_preconnect_turn(struct drv *d)
{
	if (d->pc_released || d->next_admit < d->n_jobs || d->pc_held + d->n_done < d->n_jobs)
		return;
	d->pc_released = 1;
	for (size_t i = 0; i < d->n_xfers; i++)
		if (d->xfers[i]->rec && d->xfers[i]->pc_held)
			curl_easy_pause(d->xfers[i]->easy, CURLPAUSE_CONT);
}

/* Back to a run that has sent nothing: the measured jobs, every transfer on the run's URL. */
static void back_to_the_run(struct drv *d, struct ls_driver_job *jobs, size_t n_jobs)
{
	free(d->preconnect_url);
	d->preconnect_url = NULL;
	d->pc_held = 0;
	d->pc_released = 0;
	d->jobs = jobs;
	d->n_jobs = n_jobs;
	d->next_arrive = d->next_admit = 0;
	d->n_started = d->n_done = d->n_failed = 0;
	d->connect_fail_streak = 0;
	for (size_t i = 0; i < d->n_xfers; i++)
		curl_easy_setopt(d->xfers[i]->easy, CURLOPT_URL, d->opts->url);
}

int drv_preconnect(struct drv *d)
{
	const struct ls_driver_opts *o = d->opts;
	size_t n = o->preconnect;
	if (o->per_request_conn) {
		fprintf(stderr, "latscope: --preconnect needs the keep-alive pool; this run opens a connection "
			"per request (--connection per-request)\n");
		return -EINVAL;
	}
	struct ls_request *recs = calloc(n, sizeof(*recs));
	struct ls_driver_job *jobs = calloc(n, sizeof(*jobs));
	char *url = models_url(o->url);
	if (!recs || !jobs || !url) {
		free(recs);
		free(jobs);
		free(url);
		fprintf(stderr, "latscope: --preconnect: out of memory (or no URL in %s)\n", o->url);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		ls_request_reset(&recs[i], i);
		recs[i].warmup = 1;
		recs[i].output_len = 1; /* a few frames reserved, not thousands */
		jobs[i] = (struct ls_driver_job){ .body = "", .rec = &recs[i] };
	}
	struct ls_driver_job *run_jobs = d->jobs;
	size_t n_run_jobs = d->n_jobs;
	d->preconnect_url = url;
	d->jobs = jobs;
	d->n_jobs = n;
	uint64_t t0 = ls_now_ns();
	d->run_start_ns = t0;
	d->next_deadline_ns = t0;
	int rc = drv_loop(d);
	d->run->preconnect_ns = ls_now_ns() - t0;
	/* Each GET held at once had a connection of its own (HTTP/1.1); none held, none kept. */
	d->run->n_preconnected = (uint32_t)d->pc_held;
	if (!rc && d->pc_held < n) {
		const char *why = "a GET ended before the others had a connection";
		for (size_t i = 0; i < n; i++)
			if (!recs[i].http_status && recs[i].error[0]) {
				why = recs[i].error;
				break;
			}
		fprintf(stderr, "latscope: --preconnect %zu: %zu connections open before the run (%s)\n", n,
			d->pc_held, why);
	}
	back_to_the_run(d, run_jobs, n_run_jobs);
	for (size_t i = 0; i < n; i++)
		ls_request_free(&recs[i]);
	free(recs);
	free(jobs);
	return rc;
}
