/* wrap.h — the report as a person reads it: on a terminal, lines longer than its width (at
 * most LS_WRAP_MAX columns) are folded at a space and go on under the line's value column
 * ("Label:      value" or "check   text"). Into a file or a pipe lines stay whole, one fact a
 * line, for grep and scripts; LATSCOPE_WRAP=N folds at N there too. */
#ifndef LATSCOPE_WRAP_H
#define LATSCOPE_WRAP_H

#include <stdio.h>

#define LS_WRAP_MAX 100

struct ls_wrap {
	FILE  *out;   /* where the folded text goes */
	FILE  *f;     /* write the report here: out itself when nothing is folded */
	char  *buf;
	size_t len;
	int    width; /* 0: no folding */
};

/* The width to fold out at: 0 (none), LATSCOPE_WRAP, or the terminal's up to LS_WRAP_MAX. */
int ls_wrap_width(FILE *out);

/* Starts a report to out; write it to w->f. Falls back to out itself when memory is short. */
FILE *ls_wrap_open(struct ls_wrap *w, FILE *out);
/* Writes what was written to w->f, folded, to out. */
void ls_wrap_close(struct ls_wrap *w);

/* Folds text (len bytes) at width into out (the mechanism, for tests). */
void ls_wrap_text(FILE *out, const char *text, size_t len, int width);

#endif
