/* test_driver_common.h — helpers of the driver's integration tests: a batch of jobs with
 * their bodies and records, run through ls_driver_run against `latscope sim`, and the sim's
 * ground truth read back per request. */
#ifndef LATSCOPE_TEST_DRIVER_COMMON_H
#define LATSCOPE_TEST_DRIVER_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include "driver/driver.h"
#include "t_helpers.h"

struct t_batch {
	struct ls_driver_job *jobs;
	struct ls_request    *recs;
	struct ls_run         run;
	size_t                n;
	size_t                finished;  /* on_finish calls */
	size_t                finish_dup; /* on_finish calls for a record already finished */
	uint8_t              *seen;
};

/* Starts `latscope sim` (t_sim_start) or fails the test; the suite's .fini = t_sim_fini stops
 * every sim still running when an assertion ends a test early. */
void t_sim_start_checked(struct t_sim *sim, int tls, const char *const *extra);
void t_sim_stop_checked(struct t_sim *sim);
void t_sim_fini(void);

/* n jobs for backend, each asking max_tokens tokens (ignore_eos) of a short prompt. */
void t_batch_init(struct t_batch *b, enum ls_backend backend, size_t n, uint32_t max_tokens);
void t_batch_free(struct t_batch *b);

/* Default opts against url + the backend's endpoint (buffer must live as long as opts). */
void t_opts(struct ls_driver_opts *o, struct t_batch *b, const struct t_sim *sim,
	     enum ls_backend backend, char *url_buf, size_t url_cap);

int t_driver_run(const struct ls_driver_opts *o, struct t_batch *b);

/* The sim's truth, per request id "<tag>-<i>": its connection id, frames, reason. */
struct t_truth {
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
int t_truth_load(const char *path, const char *tag, size_t n, struct t_truth *t);
void t_truth_free(struct t_truth *t);
/* Index of id in t, or -1. */
long t_truth_find(const struct t_truth *t, const char *id);
size_t t_truth_distinct_conns(const struct t_truth *t);

/* Counts records with fail == why. */
size_t t_count_fail(const struct t_batch *b, enum ls_fail why);


/* A hostile or broken server for cases the sim does not produce: a forked child that answers
 * every connection on 127.0.0.1 with the same canned bytes (after reading the request), then
 * closes it (or, with hold, keeps each one open and silent until stopped). */
struct t_canned {
	int   pid;
	int   port;
	char  url[128];
};
/* A T_CANNED_PAUSE byte in resp is not sent: the bytes after it go 50 ms after those before. */
#define T_CANNED_PAUSE '\x01'
int t_canned_start(struct t_canned *c, const char *resp, size_t len, int hold);
void t_canned_stop(struct t_canned *c);

#endif
