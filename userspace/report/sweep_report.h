/* sweep_report.h — `latscope sweep`'s output: the table of points, the capacity per clock with
 * the started clock's overstatement and the knee, and the --output JSON. It formats what
 * metrics/sweep_slo.h computed; nothing here computes a metric or a verdict. */
#ifndef LATSCOPE_SWEEP_REPORT_H
#define LATSCOPE_SWEEP_REPORT_H

#include <stdio.h>
#include "metrics/sweep_slo.h"

struct cJSON;

/* What the sweep was, for labels and the JSON's "sweep" object. */
struct ls_sweep_desc {
	const char *mode;      /* "rate" | "concurrency" */
	const char *unit;      /* "req/s" | "users" */
	const char *slo_text;  /* --slo as given, NULL none */
	const char *dir;       /* where the points' runs are */
	const struct ls_slo_set *slo;
	int    search;         /* 1: searched; 0: the list given */
	double precision;
	unsigned repeat;
	double warmup_frac, cooldown_frac;
	const char *stop_reason; /* why the sweep ended early, NULL when it finished */
	const char *run_profile;  /* the read rules of the table and the search */
	/* --profiles: the same points read under each of these profiles' rules */
	size_t n_profiles;
	const char *const *profile_names;
	const struct ls_sweep_summary *profile_sums;
};

/* The table's header (its SLO columns follow d->slo). */
void ls_sweep_print_header(FILE *out, const struct ls_sweep_desc *d);
/* One row: point index i. */
void ls_sweep_print_point(FILE *out, const struct ls_sweep_desc *d, const struct ls_sweep_point *p, size_t i);
/* Capacity per clock, the overstatement, the knee, and the verdict line. */
void ls_sweep_print_summary(FILE *out, const struct ls_sweep_desc *d, const struct ls_sweep_point *pts, size_t n,
			    const struct ls_sweep_summary *s);

/* {"sweep": {...}, "points": [...], "capacity": {"scheduled": R|null, ...}, "bracket",
 * "overstatement_pct", "knee"}; NULL on ENOMEM. */
struct cJSON *ls_sweep_json(const struct ls_sweep_desc *d, const struct ls_sweep_point *pts, size_t n,
			    const struct ls_sweep_summary *s);

/* --html: one self-contained page (inline SVG): capacity per clock, and per SLO the
 * throughput-latency curve of each clock with the SLO's limit. 0 or -errno (said). */
int ls_sweep_html_write(const char *path, const struct ls_sweep_desc *d, const struct ls_sweep_point *pts, size_t n,
			const struct ls_sweep_summary *s);

#endif
