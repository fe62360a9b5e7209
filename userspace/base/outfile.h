/* outfile.h — output files that are whole or absent. A result, trace or attribution file is
 * written under a temporary name beside its target and renamed over it only when every byte
 * was written and the file closed cleanly, so a full disk never leaves half a JSON. Before a
 * run, ls_outfile_check creates the file's directory and proves it writable, so a bad path is
 * found before the benchmark, not after it. */
#ifndef LATSCOPE_OUTFILE_H
#define LATSCOPE_OUTFILE_H

#include <stdio.h>

struct ls_outfile {
	FILE *f;        /* write here */
	char *path;     /* the target */
	char *tmp;      /* where it is written; NULL when written in place (not a regular file) */
	const char *what; /* the flag that named it, for messages ("--save-result") */
};

/* Checks a file can be created at path, creating its directory (and parents) first when
 * make_dirs. 0, or -errno after one line naming what, the path and the cause. */
int ls_outfile_check(const char *what, const char *path, int make_dirs);

/* Opens the temporary file (or path itself when it exists and is not a regular file, e.g. a
 * FIFO or /dev/stdout) in path's directory, which must exist. 0, or -errno after a message. */
int ls_outfile_open(struct ls_outfile *o, const char *what, const char *path);

/* Flushes, closes and renames over the target. 0, or -errno after one line naming the path
 * and the cause; the target is then untouched and the temporary file removed. */
int ls_outfile_commit(struct ls_outfile *o);

/* Drops a file that will not be completed (after an error while building its content). */
void ls_outfile_abort(struct ls_outfile *o);

#endif
