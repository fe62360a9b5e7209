/* plan.h — a run's plan: everything decided before the clock starts (ARCHITECTURE.md "A run is a
 * value"): each job's body and route key, its record's id, warmup flag and lengths, the measured
 * jobs' schedule, the model and the run tag. The driver runs a plan's jobs into a struct ls_run;
 * an MPI run splits one plan into shares (rank k: every warmup and measured job i with
 * i % N == k, with its offset in the schedule) that travel as bytes, and rank 0 keeps its own.
 * Takes: jobs built by cmd/ (bodies from driver/backend.h, offsets from workload/arrival.h).
 * Gives: the plan, its share k of N (bytes, or kept in place), and the run it fills. */
#ifndef LATSCOPE_PLAN_H
#define LATSCOPE_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include "base/record.h"
#include "base/strbuf.h"
#include "driver/driver.h"
#include "workload/arrival.h"

struct ls_plan {
	struct ls_driver_job *jobs;  /* warmups first, then measured, in schedule order; bodies owned */
	size_t   n_warmup, n_measured;
	struct ls_arrival arrival;   /* the measured jobs' schedule (its offsets owned when have_arrival) */
	int      have_arrival;
	char    *model;              /* NULL: the backend sends none */
	char     run_tag[32];        /* X-Request-Id prefix */
};

/* n_warmup + n_measured jobs with no body yet, and run's requests for them (job i's record is
 * run->requests[i], reset with its id). 0 or -ENOMEM. */
int ls_plan_alloc(struct ls_plan *p, size_t n_warmup, size_t n_measured, struct ls_run *run);
/* Frees the jobs' bodies and route keys, the schedule and the model (not the run). */
void ls_plan_free(struct ls_plan *p);

/* Share k of n ranks as one message: the head (model, run tag, schedule kind and rate), every
 * warmup, and measured job i for each i % n == k with its schedule offset. 0 or -ENOMEM. */
int ls_plan_pack_share(const struct ls_plan *p, int k, int n, struct ls_strbuf *out);
/* A share into an empty plan and run (as ls_plan_alloc made them). 0, -EPROTO (cut or bad
 * bytes) or -ENOMEM. */
int ls_plan_unpack_share(const char *buf, size_t len, struct ls_plan *p, struct ls_run *run);
/* Keeps share k of n in place: the other measured jobs and their records are freed, the schedule
 * keeps their offsets only. 0 or -ENOMEM (the plan is as it was). */
int ls_plan_keep_share(struct ls_plan *p, struct ls_run *run, int k, int n);

#endif
