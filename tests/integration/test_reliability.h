/* test_reliability.h — helpers of the reliability tests (test_reliability_*.c): run a latscope
 * binary (the normal or the ASan build) in the background with its output in files, stop it
 * with a signal, and read back what it left: the --record file line by line, the result JSON,
 * the simulator's truth. */
#ifndef LATSCOPE_TEST_RELIABILITY_H
#define LATSCOPE_TEST_RELIABILITY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "base/record.h"

struct cJSON;

/* build/san/latscope (LATSCOPE_SAN_BIN); fails the test when it was not built. */
const char *t_san_bin(void);

struct t_proc {
	pid_t pid;
	char  out[128], err[128]; /* files holding its stdout and stderr */
};

/* Starts bin with args (NULL-terminated, without argv[0]); ASan/LSan on, reports to stderr. */
void t_spawn(struct t_proc *p, const char *bin, const char *const *args);
/* Waits up to timeout_s; returns the exit code, 128 + signal when killed by one, or -1 after
 * killing it for running too long. */
int t_wait(struct t_proc *p, double timeout_s);
/* Its stderr (malloc'd) for messages and sanitizer reports; removes both files with t_done. */
char *t_stderr(const struct t_proc *p);
char *t_stdout(const struct t_proc *p);
void t_done(struct t_proc *p);
/* Fails the test when stderr holds a sanitizer report. */
void t_assert_clean(const char *err, const char *what);

/* A --record file read line by line: every line must end in '\n' and parse as JSON. */
struct t_records {
	size_t   lines;          /* all lines */
	size_t   requests;       /* request lines */
	size_t   by_fail[LS_FAIL__COUNT];
	int      header;         /* line 1 is the latscope_record header */
	int      run_end;        /* a latscope_run_end line (last) */
	int      interrupted;    /* its "interrupted" */
	int      torn;           /* a line without its '\n' or that is not JSON */
	size_t   dup_ids;        /* request ids seen twice */
	char     run_tag[32];
	uint64_t *ids;           /* request ids in file order */
	char    **fails;         /* their fail names (parallel to ids) */
};
void t_records_read(const char *path, struct t_records *r);
void t_records_free(struct t_records *r);

/* A whole JSON file (NULL when missing or not JSON). */
struct cJSON *t_json_file(const char *path);
/* completed and failed of a result JSON, and its latscope.failures count of a reason (0 when
 * absent). */
long t_json_count(const struct cJSON *result, const char *key);
long t_json_failures(const struct cJSON *result, const char *reason);

/* Temporary path /tmp/latscope-rel-<pid>-<tag> (not created). */
void t_tmp(char *out, size_t len, const char *tag);

#endif
