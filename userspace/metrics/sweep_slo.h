/* sweep_slo.h — what `latscope sweep` decides, as pure functions (no I/O, no clock): the SLO
 * ("ttft:p99<=500ms,itl:p99<=50ms,e2el:p90<=10s") and whether one run meets it under one
 * clock, the capacity a set of points shows per clock, the next point a search runs, whether a
 * run is over-saturated, and the knee. cmd/sweep.c runs the points and calls these; keeping the
 * decisions here lets unit tests check them on hand-made records (ARCHITECTURE.md principle 1:
 * every verdict is a function of the records plus rules). */
#ifndef LATSCOPE_SWEEP_SLO_H
#define LATSCOPE_SWEEP_SLO_H

#include <stddef.h>
#include "base/record.h"
#include "metrics/metrics.h"

enum ls_slo_metric { LS_SLO_TTFT, LS_SLO_ITL, LS_SLO_E2EL, LS_SLO_TPOT, LS_SLO__COUNT };

#define LS_SLO_MAX 8

struct ls_slo {
	enum ls_slo_metric metric;
	double pct;      /* (0, 100] */
	double limit_ms; /* >= 0 */
};

struct ls_slo_set {
	size_t n;
	struct ls_slo slo[LS_SLO_MAX];
	double goodput_min; /* fraction of measured requests meeting every SLO, in [0, 1]; < 0: not checked */
};

const char *ls_slo_metric_name(enum ls_slo_metric m); /* "ttft" | "itl" | "e2el" | "tpot" */

/* "ttft:p99<=500ms,itl:p99<=50ms,e2el:p90<=10s" into set (goodput_min left as it is). Units:
 * us, ms (the default when none), s. Each metric at most once per percentile. 0, or -EINVAL
 * with err naming the bad item and what was expected. */
int ls_slo_parse(const char *s, struct ls_slo_set *set, char *err, size_t errcap);

/* One run read under one clock against the SLO. */
struct ls_slo_eval {
	double value_ms[LS_SLO_MAX]; /* each SLO's percentile, over the requests that succeeded */
	int    met[LS_SLO_MAX];
	size_t n_measured, n_ok, n_good;
	double goodput;              /* n_good / n_measured: failed requests are never good */
	int    pass;                 /* every SLO met (with at least one success) and goodput >= min */
};

/* Evaluates run under rules (rules->origin is the clock; ITL under rules->itl_mode). A request
 * is good when it succeeded and its own TTFT, E2EL and TPOT are within every limit given for
 * them and its own ITLs at each ITL SLO's percentile are within that limit. 0 or -ENOMEM. */
int ls_slo_evaluate(const struct ls_run *run, const struct ls_read_rules *rules, const struct ls_slo_set *set,
		    struct ls_slo_eval *out);

/* Marks as warmup (out of every metric) the first warm and the last cool fractions of the
 * measured requests, by scheduled time: the ramp up and the drain of a point are not its load.
 * Keeps at least one request. Returns how many it marked. */
size_t ls_sweep_trim(struct ls_run *run, double warm, double cool);

/* --- the search --- */

/* One point: its x (req/s, or users) and whether it met the SLO under each clock. */
struct ls_sweep_obs {
	double x;
	int    pass[LS_ORIGIN__COUNT];
};

struct ls_sweep_search {
	double start;     /* first x */
	double factor;    /* geometric step (> 1) */
	double min, max;  /* x stays in [min, max] */
	double precision; /* bisect while (hi - lo) > precision * lo */
	int    integer;   /* x are whole numbers (concurrency) */
};

/* One clock's answer from the points so far: capacity = the largest passing x below the
 * smallest failing x (fail); has_cap 0 when no point below fail passed, has_fail 0 when no
 * point failed. */
struct ls_sweep_cap {
	int    has_cap, has_fail;
	double cap, fail;
};
void ls_sweep_capacity(const struct ls_sweep_obs *obs, size_t n, enum ls_origin clock, struct ls_sweep_cap *out);

/* The next x to run: geometric steps from start up to every clock's first failure (down, when
 * the lowest point failed), then bisection of the widest bracket to precision. 1 and *next, or
 * 0 when every clock is settled (or can go no further within [min, max]). */
int ls_sweep_next(const struct ls_sweep_search *s, const struct ls_sweep_obs *obs, size_t n, double *next);

/* How many more points the search may run, at most (for the ETA): the bisections still open,
 * plus the geometric steps left to max for a clock that has not failed. */
size_t ls_sweep_points_left(const struct ls_sweep_search *s, const struct ls_sweep_obs *obs, size_t n);

/* --- over-saturation --- */

/* A run (possibly still going: the requests finished so far) at target_rate req/s is
 * over-saturated when, over at least LS_OVERSAT_MIN_DONE finished measured requests, the rate
 * they finished at is below LS_OVERSAT_RATE of the target and the backlog grows: the last
 * quarter's wait from schedule to first token is above LS_OVERSAT_GROWTH times the first
 * quarter's and over LS_OVERSAT_MIN_WAIT_S. */
#define LS_OVERSAT_MIN_DONE   20
#define LS_OVERSAT_RATE       0.8
#define LS_OVERSAT_GROWTH     2.0
#define LS_OVERSAT_MIN_WAIT_S 0.25
struct ls_oversat {
	int    oversat;
	double done_rate;        /* finished measured requests per second, first schedule -> last finish */
	double early_wait_s, late_wait_s;
};
void ls_sweep_oversat(const struct ls_run *run, double target_rate, struct ls_oversat *out);

/* The knee: the point of the largest power (realised throughput / median latency, Kleinrock's
 * optimum operating point), among points with both above 0. -1 when none. */
long ls_sweep_knee(const double *throughput, const double *latency_s, size_t n);

/* --- one point, read --- */

/* What a point's run showed under one clock. */
struct ls_sweep_clock {
	struct ls_slo_eval eval;
	double ttft_p50_ms, ttft_p99_ms, e2el_p50_ms, e2el_p99_ms;
};

/* One run of the sweep: what was asked, how it ended, what its records say per clock. */
struct ls_sweep_point {
	double   x;               /* req/s (rate sweep) or users (concurrency sweep) */
	unsigned repeat;          /* 0 .. --repeat - 1 */
	int      bench_rc;        /* bench's exit status; -1 did not exit normally */
	char     stopped[32];     /* "" ran to its end, "oversaturated", "budget" */
	char     record[512], result[512], log[512];
	char     rules[64];       /* the profile whose read rules read it */
	double   wall_s;          /* the bench process, start to exit */
	double   target_rate;     /* 0: closed loop / inf */
	double   realised_rate;   /* requests started per second */
	double   throughput;      /* requests completed per second */
	size_t   n_measured, failed, trimmed;
	char     fail_list[160];
	double   slot_wait_p50_ms, slot_wait_p99_ms;
	double   itl_p50_ms, itl_p99_ms;
	struct ls_sweep_clock clock[LS_ORIGIN__COUNT];
	int      pass[LS_ORIGIN__COUNT]; /* the verdict: eval.pass, and an over-saturated point fails
					  * the scheduled clock (its backlog grows without bound) */
};

/* Reads one loaded run into p (p->x, repeat, paths, rc and stopped are the caller's): trims
 * warm/cool (ls_sweep_trim), computes metrics under rules with each clock as the origin, and
 * the SLO per clock. 0 or -ENOMEM. */
int ls_sweep_point_read(struct ls_run *run, const struct ls_read_rules *rules, const struct ls_slo_set *slo,
			double warm, double cool, struct ls_sweep_point *p);

/* The verdict at x over its repeats: a clock passes when the mean of each SLO's value over
 * the repeats is within its limit, the mean goodput reaches the minimum, every repeat had a
 * success, and (scheduled clock) none was over-saturated. 0 when no point has x. */
int ls_sweep_obs_at(const struct ls_sweep_point *pts, size_t n, const struct ls_slo_set *slo, double x,
		    struct ls_sweep_obs *obs);

/* The sweep's answer from its points. */
struct ls_sweep_summary {
	struct ls_sweep_cap cap[LS_ORIGIN__COUNT];
	int    above_all[LS_ORIGIN__COUNT]; /* no point failed: capacity is at least the highest x run */
	int    has_overstatement;
	double overstatement_pct;           /* started capacity / scheduled capacity - 1, in % */
	long   knee;                        /* index into the points (scheduled clock's median E2EL), -1 none */
	size_t n_x;                         /* distinct x run */
};
/* The sweep's answer in one word, from the clock that decides it (scheduled; admitted in a
 * closed loop, which has no schedule). */
enum ls_sweep_verdict {
	LS_SWEEP_FOUND,    /* a capacity below a failing point */
	LS_SWEEP_NONE_MET, /* no point met the SLO */
	LS_SWEEP_ALL_MET,  /* no point failed: the capacity is above what was run */
};
enum ls_sweep_verdict ls_sweep_verdict_of(const struct ls_sweep_summary *s, enum ls_origin clock);

/* Fills s from pts; obs_buf holds at least n entries (scratch). */
void ls_sweep_summarise(const struct ls_sweep_point *pts, size_t n, const struct ls_slo_set *slo,
			struct ls_sweep_obs *obs_buf, struct ls_sweep_summary *s);

/* One x over its repeats: mean and spread (population standard deviation) of each SLO value
 * per clock, of goodput and of the completed throughput. */
struct ls_sweep_spread {
	double x;
	size_t n;
	double mean_ms[LS_ORIGIN__COUNT][LS_SLO_MAX], sd_ms[LS_ORIGIN__COUNT][LS_SLO_MAX];
	double goodput_mean[LS_ORIGIN__COUNT], goodput_sd[LS_ORIGIN__COUNT];
	double throughput_mean, throughput_sd;
};
/* One entry per distinct x of pts, in first-run order, up to cap; returns how many. */
size_t ls_sweep_spreads(const struct ls_sweep_point *pts, size_t n, const struct ls_slo_set *slo,
			struct ls_sweep_spread *out, size_t cap);

#endif
