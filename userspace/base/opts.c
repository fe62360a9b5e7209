/* base/opts.c — the flag walker, --help printer and number parsers of base/opts.h. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "base/opts.h"
#include "base/numconv.h"

#define HELP_LEFT 30 /* width of the "--name METAVAR" column */

const struct ls_opt *ls_opt_find(const struct ls_opt *opts, size_t n, const char *name, size_t len)
{
	for (size_t i = 0; i < n; i++) {
		if (strlen(opts[i].name) != len)
			continue;
		size_t k = 0;
		for (; k < len; k++) {
			char a = name[k] == '_' ? '-' : name[k];
			if (a != opts[i].name[k])
				break;
		}
		if (k == len)
			return &opts[i];
	}
	return NULL;
}

static int is_letter(const struct ls_opt *o)
{
	return o->name[0] && !o->name[1];
}

void ls_opt_help(FILE *out, const struct ls_opt *opts, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct ls_opt *o = &opts[i];
		if (is_letter(o))
			continue;
		if (o->group && *o->group)
			fprintf(out, "\n%s:\n", o->group);
		char left[80], letter[8] = "";
		for (size_t k = 0; k < n; k++)
			if (is_letter(&opts[k]) && opts[k].id == o->id)
				snprintf(letter, sizeof(letter), "-%s, ", opts[k].name);
		snprintf(left, sizeof(left), "%s--%s%s%s", letter, o->name, o->metavar ? " " : "",
			 o->metavar ? o->metavar : "");
		if (strlen(left) >= HELP_LEFT)
			fprintf(out, "  %s\n  %-*s", left, HELP_LEFT, "");
		else
			fprintf(out, "  %-*s", HELP_LEFT, left);
		/* Lines after the first line up under it. */
		for (const char *h = o->help ? o->help : "";;) {
			size_t len = strcspn(h, "\n");
			fprintf(out, " %.*s\n", (int)len, h);
			if (!h[len])
				break;
			h += len + 1;
			fprintf(out, "  %-*s", HELP_LEFT, "");
		}
	}
}

void ls_opt_walk_init(struct ls_opt_walk *w, const char *prog, const struct ls_opt *opts, size_t n,
		      int argc, char **argv)
{
	*w = (struct ls_opt_walk){ .prog = prog, .opts = opts, .n_opts = n, .argc = argc, .argv = argv, .i = 1 };
}

/* The long entry that "-X" stands for. */
static const struct ls_opt *find_letter(const struct ls_opt_walk *w, char c)
{
	for (size_t i = 0; i < w->n_opts; i++) {
		if (!is_letter(&w->opts[i]) || w->opts[i].name[0] != c)
			continue;
		for (size_t k = 0; k < w->n_opts; k++)
			if (!is_letter(&w->opts[k]) && w->opts[k].id == w->opts[i].id)
				return &w->opts[k];
	}
	return NULL;
}

/* The value of o from the next argument: a flag's value may start with "--" (--sim-args). */
static int take_value(struct ls_opt_walk *w, const struct ls_opt *o, const char **value)
{
	if (w->i >= w->argc) {
		fprintf(stderr, "%s: --%s needs a value (%s)\n", w->prog, o->name, o->metavar ? o->metavar : "VALUE");
		return -EINVAL;
	}
	*value = w->argv[w->i++];
	return LS_OPT_FLAG;
}

int ls_opt_next(struct ls_opt_walk *w, const struct ls_opt **o, const char **value)
{
	*o = NULL;
	*value = NULL;
	if (w->i >= w->argc)
		return LS_OPT_END;
	const char *a = w->argv[w->i++];
	if (!strcmp(a, "--")) {
		w->dashdash = 1;
		return LS_OPT_END;
	}
	if (a[0] != '-' || !a[1]) {
		*value = a;
		return LS_OPT_ARG;
	}
	if (a[1] != '-') { /* a short form: one letter, its value in the next argument */
		if (a[2] || !(*o = find_letter(w, a[1]))) {
			fprintf(stderr, "%s: unknown flag '%s' (see %s --help)\n", w->prog, a, w->prog);
			return -EINVAL;
		}
		return (*o)->arg == LS_ARG_NONE ? LS_OPT_FLAG : take_value(w, *o, value);
	}
	const char *name = a + 2, *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	*o = ls_opt_find(w->opts, w->n_opts, name, len);
	if (!*o || is_letter(*o) || memchr(name, '_', len)) {
		fprintf(stderr, "%s: unknown flag '%.*s' (see %s --help)\n", w->prog, (int)(len + 2), a, w->prog);
		*o = NULL;
		return -EINVAL;
	}
	if (eq) {
		*value = eq + 1;
		return LS_OPT_FLAG;
	}
	return (*o)->arg == LS_ARG_NONE ? LS_OPT_FLAG : take_value(w, *o, value);
}

int ls_opt_more(struct ls_opt_walk *w, const char **value)
{
	if (w->i >= w->argc || !strncmp(w->argv[w->i], "--", 2))
		return 0;
	*value = w->argv[w->i++];
	return 1;
}

void ls_opt_bad_value(const char *prog, const struct ls_opt *o, const char *value, const char *why)
{
	if (value)
		fprintf(stderr, "%s: --%s '%s' %s\n", prog, o->name, value, why);
	else
		fprintf(stderr, "%s: --%s %s\n", prog, o->name, why);
}

int ls_opt_flags(struct ls_opt_walk *w, int help_id, ls_opt_apply_fn apply, void *ctx, const char **value)
{
	const struct ls_opt *o;
	int step;
	while ((step = ls_opt_next(w, &o, value)) == LS_OPT_FLAG) {
		if (o->id == help_id)
			return LS_OPT_HELP;
		const char *why = apply(ctx, o, *value ? *value : "true");
		if (why) {
			ls_opt_bad_value(w->prog, o, *value, why);
			return -EINVAL;
		}
	}
	return step;
}

/* strtoull wraps a '-' around (" -1" is UINT64_MAX): a minus anywhere before the digits is out. */
static int negative(const char *v)
{
	while (isspace((unsigned char)*v))
		v++;
	return *v == '-';
}

static int parse_u64_base(const char *v, int base, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	if (!v || !*v || negative(v))
		return -EINVAL;
	errno = 0;
	unsigned long long x = strtoull(v, &end, base);
	if (end == v || *end || errno || x < lo || x > hi)
		return -EINVAL;
	*out = x;
	return 0;
}

int ls_opt_parse_u64(const char *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
	return parse_u64_base(v, 10, lo, hi, out);
}

int ls_opt_parse_seed(const char *v, uint64_t *out)
{
	return parse_u64_base(v, 0, 0, UINT64_MAX, out);
}

int ls_opt_parse_double(const char *v, double lo, double hi, double *out)
{
	char *end;
	if (!v || !*v)
		return -EINVAL;
	errno = 0;
	double x = strtod(v, &end);
	if (end == v || *end || errno || isnan(x) || x < lo || x > hi)
		return -EINVAL;
	*out = x;
	return 0;
}

int ls_opt_parse_whole(const char *v, double lo, double hi, double *out)
{
	double x;
	if (ls_opt_parse_double(v, lo, hi, &x) || x != floor(x))
		return -EINVAL;
	*out = x;
	return 0;
}

int ls_opt_parse_duration_ns(const char *v, double unit_ns, double max_units, uint64_t *ns)
{
	double x;
	if (ls_opt_parse_double(v, 0, max_units, &x))
		return -EINVAL;
	*ns = ls_d2u64(x * unit_ns);
	return 0;
}

int ls_opt_parse_bool(const char *v, int *on)
{
	if (v && (!strcmp(v, "true") || !strcmp(v, "1")))
		*on = 1;
	else if (v && (!strcmp(v, "false") || !strcmp(v, "0")))
		*on = 0;
	else
		return -EINVAL;
	return 0;
}
