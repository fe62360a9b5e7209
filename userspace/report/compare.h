/* compare.h — one workload read under several harness profiles, side by side (`latscope
 * compare`, and `latscope report --profiles`). Profiles that differ only in how records are
 * read share one run's records; profiles that send differently get a run of their own.
 * compare_table.c computes and prints; compare.c runs the workloads. */
#ifndef LATSCOPE_COMPARE_H
#define LATSCOPE_COMPARE_H

#include <stdio.h>
#include "metrics/checks.h"
#include "metrics/metrics.h"
#include "config/profile.h"
#include "base/record.h"
#include "report/record_file.h"

#define LS_CMP_MAX_PROFILES 8

/* What a run sent: its profile's send rules as the run used them (the flags over the
 * profile's, config/profile.h), and the workload settings that decide whether two runs send the
 * same requests. */
struct ls_cmp_send {
	struct ls_send_rules rules;
	int                  random;           /* the random dataset: lengths drawn from a range */
	double               range_ratio;      /* random dataset only, else 0 */
	uint32_t             input_len, output_len; /* its --random-input-len / --random-output-len */
	uint32_t             max_concurrency;
};

/* 1 when two runs would send the same requests the same way (rules that cannot matter for
 * this workload are ignored: warmup shape without warmups; range semantics that give the
 * same length bounds, e.g. vllm at ratio 0 and sglang at ratio 1). */
int ls_cmp_send_same(const struct ls_cmp_send *a, const struct ls_cmp_send *b);

struct ls_cmp_run {
	struct ls_run        run;
	struct ls_record_meta meta;
	struct ls_cmp_send   send;
	int                  send_known;   /* 0: from a record file, only meta is known */
	double               accept_len;   /* the server's avg_spec_accept_length after it, 0 unknown */
	int                  repeated;     /* an earlier run sent these prompts to this server */
	int                  flushed;      /* POST /flush_cache answered 2xx before it */
	char                 profiles[256]; /* the profiles read from it, "vllm, honest" */
	char                 record_path[512];
	struct ls_checks     checks;       /* under its first profile's rules */
	/* Read by the first column's rules at the table's percentiles, for the send rows (what
	 * sending differently did); on every run but the first column's, whose reading is its m. */
	struct ls_metrics    by_first;
	int                  have_by_first;
};

/* The read rules whose effect the table measures one at a time: clock, TTFT gate, ITL, E2EL
 * end, output tokens, success, failures printed (compare_table.c's enum rule). */
#define LS_CMP_MEASURED_RULES 7

struct ls_cmp_col {
	struct ls_profile    prof;
	struct ls_read_rules rules;        /* as applied: the accept length resolved */
	int                  switched;     /* the accept length changed the rules */
	size_t               run;          /* index into the runs */
	struct ls_metrics    m;            /* at the table's percentiles */
	int                  have_m;
	/* What the rule rows print, measured by ls_cmp_compute (the printer computes nothing), at
	 * the table's percentiles. effect[k]: the first column's run and rules with measured rule k
	 * as this column has it, on the first column with each value the first column lacks
	 * (LS_CMP_MEASURED_RULES of them, allocated on the first; NULL on most columns). */
	struct ls_metrics   *effect;
	unsigned             have_effect;  /* bit k: effect[k] is filled */
};

/* Fills every column's metrics (its own, and what the rule rows measure) and each run's
 * checks. 0 or -ENOMEM; ls_cmp_free frees what was filled either way. */
int ls_cmp_compute(struct ls_cmp_run *runs, size_t n_runs, struct ls_cmp_col *cols, size_t n_cols);

/* The table (a column per profile, a row per metric), then a row per rule that differs with
 * its effect, then each run's checks. markdown: the table as GitHub markdown. */
void ls_cmp_print(FILE *out, const struct ls_cmp_run *runs, size_t n_runs, const struct ls_cmp_col *cols,
		  size_t n_cols, int markdown);

/* The table's rows one at a time, for the HTML page: how many, each row's label, and the
 * cell of column c in row as ls_cmp_print prints it. */
size_t ls_cmp_n_rows(void);
const char *ls_cmp_row_label(size_t row);
void ls_cmp_cell(size_t row, const struct ls_cmp_col *c, char *buf, size_t cap);
/* The rows after the table: each rule that differs with its effect, then what sending did. */
void ls_cmp_print_effects(FILE *out, const struct ls_cmp_run *runs, size_t n_runs, const struct ls_cmp_col *cols,
			  size_t n_cols);
/* What run sent, one line ("backend openai, arrival gamma, ..."), as ls_cmp_print says it. */
void ls_cmp_run_desc(const struct ls_cmp_run *run, char *buf, size_t cap);

/* Frees the runs' records and every metric computed. runs NULL: the caller keeps its runs, and
 * then gave only the first column's run (nothing is computed on it that the columns lack). */
void ls_cmp_free(struct ls_cmp_run *runs, size_t n_runs, struct ls_cmp_col *cols, size_t n_cols);

/* Splits "vllm,sglang" into profiles (loaded with ls_profile_load). Returns how many, or -1
 * after a message. */
int ls_cmp_parse_profiles(const char *list, struct ls_cmp_col *cols, size_t cap);

#endif
