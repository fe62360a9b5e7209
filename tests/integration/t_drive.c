/* t_drive.c — see t_drive.h. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "driver/backend.h"
#include "workload/arrival.h"
#include "t_drive.h"

void t_drive(struct t_drive *d, const char *run_tag, const char *url_base, size_t n, uint32_t max_tokens,
	     uint32_t conc, int fresh_conn, const struct ls_loop_hook *hook)
{
	char url[256];
	struct ls_arrival arr;
	struct ls_prompt prompt = { .text = "the quick brown fox", .prompt_len = 4, .output_len = max_tokens,
				    .timestamp_s = -1 };

	memset(d, 0, sizeof(*d));
	d->n = n;
	d->recs = calloc(n, sizeof(*d->recs));
	d->jobs = calloc(n, sizeof(*d->jobs));
	d->bodies = calloc(n, sizeof(*d->bodies));
	cr_assert(d->recs && d->jobs && d->bodies);
	for (size_t i = 0; i < n; i++) {
		size_t len;
		ls_request_reset(&d->recs[i], i);
		d->recs[i].output_len = max_tokens;
		d->bodies[i] = ls_backend_body(LS_BACKEND_OPENAI, "latscope-sim", &prompt, 1, &len);
		cr_assert_not_null(d->bodies[i]);
		d->jobs[i] = (struct ls_driver_job){ .body = d->bodies[i], .body_len = len, .rec = &d->recs[i] };
	}
	cr_assert_eq(ls_arrival_init(&arr, LS_ARRIVAL_INF, 0, 1, 1, n, NULL), 0);
	snprintf(url, sizeof(url), "%s/v1/completions", url_base);
	struct ls_driver_opts o = {
		.url = url, .backend = LS_BACKEND_OPENAI, .per_request_conn = fresh_conn, .insecure = 1,
		.request_timeout_ns = 20000000000ull, .max_concurrency = conc, .arrival = &arr,
		.run_tag = run_tag, .hooks = hook, .n_hooks = hook ? 1 : 0,
	};
	int rc = ls_driver_run(&o, d->jobs, n, &d->run);
	cr_assert_eq(rc, 0, "driver run failed: %d", rc);
	d->run.requests = d->recs;
	d->run.n_requests = n;
	ls_arrival_free(&arr);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(d->recs[i].fail, LS_OK, "request %zu failed: %s", i, d->recs[i].error);
}

void t_drive_free(struct t_drive *d)
{
	for (size_t i = 0; d->recs && i < d->n; i++) {
		ls_request_free(&d->recs[i]);
		free(d->bodies[i]);
	}
	free(d->recs);
	free(d->jobs);
	free(d->bodies);
}
