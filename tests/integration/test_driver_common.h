/* test_driver_common.h — helpers of the driver's integration tests: a batch of jobs with
 * their bodies and records, run through ls_driver_run against `latscope sim`, and the sim's
 * ground truth read back per request. */
#ifndef LATSCOPE_TEST_DRIVER_COMMON_H
#define LATSCOPE_TEST_DRIVER_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include "driver/driver.h"
#include "t_helpers.h"

struct td_batch {
	struct ls_driver_job *jobs;
	struct ls_request    *recs;
	struct ls_run         run;
	size_t                n;
	size_t                finished;  /* on_finish calls */
	size_t                finish_dup; /* on_finish calls for a record already finished */
	uint8_t              *seen;
};

/* Starts `latscope sim` (t_sim_start) or fails the test; the suite's .fini = td_fini stops
 * every sim still running when an assertion ends a test early. */
void td_sim_start(struct t_sim *sim, int tls, const char *const *extra);
void td_sim_stop(struct t_sim *sim);
void td_fini(void);

/* n jobs for backend, each asking max_tokens tokens (ignore_eos) of a short prompt. */
void td_batch_init(struct td_batch *b, enum ls_backend backend, size_t n, uint32_t max_tokens);
void td_batch_free(struct td_batch *b);

/* Default opts against url + the backend's endpoint (buffer must live as long as opts). */
void td_opts(struct ls_driver_opts *o, struct td_batch *b, const struct t_sim *sim,
	     enum ls_backend backend, char *url_buf, size_t url_cap);

int td_run(const struct ls_driver_opts *o, struct td_batch *b);

/* The sim's truth, per request id "<tag>-<i>": its connection id, frames, reason. */
struct td_truth {
	size_t    n;
	char    **ids;
	uint64_t *conns;
	uint32_t *n_frames;
	uint64_t **frame_t;  /* when the sim wrote each frame (CLOCK_MONOTONIC ns) */
	char    **reasons;
	char    **faults;    /* fault the sim injected ("none" when none) */
	int      *failed;
	size_t    dups;      /* lines whose id came before: a request the server saw twice */
};

/* Parses the truth file, waiting (up to 3 s) until it has a line for every id "<tag>-<i>",
 * i < n. 0, or -1 when some never came. */
int td_truth_load(const char *path, const char *tag, size_t n, struct td_truth *t);
void td_truth_free(struct td_truth *t);
/* Index of id in t, or -1. */
long td_truth_find(const struct td_truth *t, const char *id);
size_t td_truth_distinct_conns(const struct td_truth *t);

/* Counts records with fail == why. */
size_t td_count_fail(const struct td_batch *b, enum ls_fail why);


/* A hostile or broken server for cases the sim does not produce: a forked child that answers
 * every connection on 127.0.0.1 with the same canned bytes (after reading the request), then
 * closes it (or, with hold, keeps each one open and silent until stopped). */
struct td_canned {
	int   pid;
	int   port;
	char  url[128];
};
int td_canned_start(struct td_canned *c, const char *resp, size_t len, int hold);
void td_canned_stop(struct td_canned *c);

#endif
