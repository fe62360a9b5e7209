/* sweep_int.h — inside `latscope sweep` (cmd/sweep.c: flags and the loop over points;
 * cmd/sweep_run.c: one point, a `latscope bench` process of its own, watched and read). */
#ifndef LATSCOPE_SWEEP_INT_H
#define LATSCOPE_SWEEP_INT_H

#include <stddef.h>
#include <stdint.h>
#include "metrics/sweep_slo.h"

#define SWEEP_MAX_LIST 64
#define SWEEP_MAX_PROFILES 8

struct sweep_args {
	int      concurrency;     /* 1: points are --max-concurrency; 0: --request-rate */
	int      search;          /* 1: --search; 0: the list given */
	double   list[SWEEP_MAX_LIST];
	size_t   n_list;
	struct ls_sweep_search s; /* --start, --factor, --min, --max, --precision */
	const char *slo_text;
	struct ls_slo_set slo;
	unsigned repeat;
	double   point_s;         /* --point-seconds: rate x this requests per point; 0: bench's --num-prompts */
	unsigned min_requests;
	double   warm, cool;
	double   budget_s;        /* 0: none */
	int      oversat_stop;
	const char *dir, *output, *html;
	int      user_ready_timeout; /* the user gave --ready-check-timeout-sec */
	int      user_max_conc, user_num_prompts; /* ... --max-concurrency, --num-prompts */
	int      user_rate, user_arrival;     /* ... --request-rate, --arrival */
	/* --profiles: read rules the points are read under again, after the sweep */
	const char *profiles[SWEEP_MAX_PROFILES];
	size_t   n_profiles;
	char     profiles_buf[512];
	/* bench's flags, in the user's order (argv pointers) */
	char   **bench;
	size_t   n_bench;
};

/* One point to run and where its files go. */
struct sweep_job {
	double   x;
	size_t   index;           /* the point's number in the sweep: point-<index>.* */
	int      first;           /* the sweep's first point (the server may still be starting) */
	double   deadline_s;      /* seconds from the sweep's start past which it is stopped; 0 none */
};

/* Runs job as a bench process, watches it (over-saturation, the budget), loads its record and
 * reads it into p. 0: p is a point; -errno: no point (the message says why: bench could not
 * start, or left no record). start_s is the sweep's start on the monotonic clock. */
int sweep_run_point(const struct sweep_args *a, const struct sweep_job *job, double start_s,
		    struct ls_sweep_point *p, int *server_gone);

/* The points' records read again under another profile's read rules (--profiles): out[i] is
 * pts[i] as that profile reads it. 0 or -errno (said). */
int sweep_read_as(const struct sweep_args *a, const char *profile, const struct ls_sweep_point *pts, size_t n,
		  struct ls_sweep_point *out);

/* Set by SIGINT/SIGTERM: the sweep ends after the point that is running (bench gets the
 * signal too, from the terminal, and ends that point the way it ends a run). */
extern volatile int sweep_interrupted;

double sweep_now_s(void);

#endif
