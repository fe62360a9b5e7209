/* base/opts.h — command-line flags from a table. A command lists its flags as struct ls_opt
 * (name, what it takes, --help text and section) and writes one apply(ctx, opt, value) that
 * returns NULL or why the value is wrong; this module walks argv, finds flags by name, prints
 * --help and parses the numbers, so every command reads "--name value", "--name=value" and its
 * numbers the same way. */
#ifndef LATSCOPE_OPTS_H
#define LATSCOPE_OPTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum ls_opt_arg {
	LS_ARG_NONE, /* a switch: bare means "true"; --name=false also works */
	LS_ARG_ONE,  /* --name VALUE or --name=VALUE */
	LS_ARG_MANY, /* --name V1 V2 ...: the first like LS_ARG_ONE, the rest through ls_opt_more */
};

struct ls_opt {
	const char *name;    /* without the leading "--" */
	int         id;      /* the command's own enum */
	int         arg;     /* enum ls_opt_arg */
	const char *metavar; /* what the value is, in --help and "needs a value" (NULL for LS_ARG_NONE) */
	const char *help;    /* one line, or lines split by '\n' (indented under the first) */
	const char *group;   /* starts a --help section with this title */
};
/* An entry whose name is one letter is the short form "-X" of the entry with the same id
 * (--help shows "-X, --name"); its other fields are not used. */

/* The flag named by name[0..len) ('_' matches '-', for config file keys), or NULL. */
const struct ls_opt *ls_opt_find(const struct ls_opt *opts, size_t n, const char *name, size_t len);

/* Prints the flags as "  --name METAVAR   help", a "\ngroup:" line before each section; a left
 * column of 30 characters or more gets its own line. */
void ls_opt_help(FILE *out, const struct ls_opt *opts, size_t n);

/* Walks argv[1..argc) over one table. */
struct ls_opt_walk {
	const char          *prog;    /* "latscope sim": starts every message */
	const struct ls_opt *opts;
	size_t               n_opts;
	int                  argc;
	char               **argv;
	int                  i;       /* the next argument; after LS_OPT_END past a "--" */
	int                  dashdash; /* the walk ended at "--" */
};
enum {
	LS_OPT_END  = 0, /* no more flags: argv ran out, or "--" (w->dashdash) */
	LS_OPT_FLAG = 1, /* *o is a flag; *value its value, NULL for a bare switch */
	LS_OPT_ARG  = 2, /* argv[w->i - 1] is not a flag (*value points to it) */
	LS_OPT_HELP = 3, /* ls_opt_flags met the help flag: the caller prints its usage */
};
void ls_opt_walk_init(struct ls_opt_walk *w, const char *prog, const struct ls_opt *opts, size_t n,
		      int argc, char **argv);
/* The next flag. LS_OPT_END, LS_OPT_FLAG or LS_OPT_ARG; -EINVAL after printing one line
 * (unknown flag, or a value missing). Names with '_' are not flags (only config keys). */
int ls_opt_next(struct ls_opt_walk *w, const struct ls_opt **o, const char **value);
/* The next value of an LS_ARG_MANY flag: 1 and *value while the next argument does not start
 * with "--", else 0. */
int ls_opt_more(struct ls_opt_walk *w, const char **value);
/* Prints "PROG: --name 'value' why" (just "--name why" when value is NULL). */
void ls_opt_bad_value(const char *prog, const struct ls_opt *o, const char *value, const char *why);
/* One flag's value into ctx (a bare switch's value is "true"): NULL, or why it is wrong. */
typedef const char *(*ls_opt_apply_fn)(void *ctx, const struct ls_opt *o, const char *value);
/* The walk of a command whose flags all take one value: each through apply until one is not a
 * flag. LS_OPT_END, LS_OPT_ARG (*value: the argument), LS_OPT_HELP at the flag help_id, or
 * -EINVAL after one line (ls_opt_next's, or ls_opt_bad_value's for a value apply refused). */
int ls_opt_flags(struct ls_opt_walk *w, int help_id, ls_opt_apply_fn apply, void *ctx, const char **value);

/* Values. Each returns 0 and sets *out, or -EINVAL and leaves *out alone: the whole of v must be
 * the number (leading blanks and '+' are allowed, as strto* allow them). */
int ls_opt_parse_u64(const char *v, uint64_t lo, uint64_t hi, uint64_t *out); /* decimal, no '-' */
/* A seed: any uint64_t, in C notation too (0x1f, 017 octal). */
int ls_opt_parse_seed(const char *v, uint64_t *out);
/* A number in [lo, hi]; never NaN; inf only when a bound is (request-rate inf). */
int ls_opt_parse_double(const char *v, double lo, double hi, double *out);
/* A number in [lo, hi] without a fraction, in any notation ("1e3", "80.0"): counts, ports. */
int ls_opt_parse_whole(const char *v, double lo, double hi, double *out);
/* A duration of 0..max_units units, fractions allowed, as nanoseconds: "2.5" with unit_ns 1000
 * (microseconds) is 2500 ns. */
int ls_opt_parse_duration_ns(const char *v, double unit_ns, double max_units, uint64_t *ns);
/* true/1 or false/0. */
int ls_opt_parse_bool(const char *v, int *on);

#endif
