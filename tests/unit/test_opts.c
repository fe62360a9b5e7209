/* Unit tests of base/opts: finding flags, walking argv (--name value, --name=value, switches,
 * short forms, "--", values of a repeatable flag), --help's layout and the number parsers. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/opts.h"
#include "t_unit.h"

enum { T_PORT, T_QUIET, T_GOODPUT, T_HELP, T_VERBOSE, T_LONGNAME };

static const struct ls_opt tab[] = {
	{ "port", T_PORT, LS_ARG_ONE, "N", "listen port", "server" },
	{ "quiet", T_QUIET, LS_ARG_NONE, NULL, "no lines", NULL },
	{ "goodput", T_GOODPUT, LS_ARG_MANY, "KEY:MS ...", "SLOs", "results" },
	{ "a-rather-long-flag-name", T_LONGNAME, LS_ARG_ONE, "VALUE", "first line\nsecond line", NULL },
	{ "verbose", T_VERBOSE, LS_ARG_NONE, NULL, "say more", "other" },
	{ "v", T_VERBOSE, LS_ARG_NONE, NULL, NULL, NULL },
	{ "help", T_HELP, LS_ARG_NONE, NULL, "this help", NULL },
	{ "h", T_HELP, LS_ARG_NONE, NULL, NULL, NULL },
};
#define N_TAB (sizeof(tab) / sizeof(tab[0]))

static void walk(struct ls_opt_walk *w, char **argv)
{
	int argc = 0;
	while (argv[argc])
		argc++;
	ls_opt_walk_init(w, "t", tab, N_TAB, argc, argv);
}

Test(opts, find_matches_underscore_as_dash)
{
	cr_expect_eq(ls_opt_find(tab, N_TAB, "a_rather_long_flag_name", 23), &tab[3]);
	cr_expect_eq(ls_opt_find(tab, N_TAB, "port=80", 4), &tab[0]);
	cr_expect_null(ls_opt_find(tab, N_TAB, "por", 3));
	cr_expect_null(ls_opt_find(tab, N_TAB, "ports", 5));
}

Test(opts, walk_values_switches_and_dashdash)
{
	char *argv[] = { "x", "--port", "80", "--port=81", "--quiet", "--quiet=false", "-v", "--", "--port", NULL };
	struct ls_opt_walk w;
	walk(&w, argv);
	const struct ls_opt *o;
	const char *v;
	cr_assert_eq(ls_opt_next(&w, &o, &v), LS_OPT_FLAG);
	cr_expect(o->id == T_PORT && !strcmp(v, "80"));
	cr_assert_eq(ls_opt_next(&w, &o, &v), LS_OPT_FLAG);
	cr_expect(o->id == T_PORT && !strcmp(v, "81"));
	cr_assert_eq(ls_opt_next(&w, &o, &v), LS_OPT_FLAG);
	cr_expect(o->id == T_QUIET && v == NULL, "a bare switch has no value");
	cr_assert_eq(ls_opt_next(&w, &o, &v), LS_OPT_FLAG);
	cr_expect(o->id == T_QUIET && !strcmp(v, "false"));
	cr_assert_eq(ls_opt_next(&w, &o, &v), LS_OPT_FLAG);
	cr_expect_eq(o, &tab[4], "-v is --verbose");
	cr_expect_eq(ls_opt_next(&w, &o, &v), LS_OPT_END);
	cr_expect(w.dashdash && w.i == 8, "stops past --, at %d", w.i);
}

Test(opts, value_may_start_with_dashes)
{
	char *argv[] = { "x", "--port", "--quiet", NULL };
	struct ls_opt_walk w;
	walk(&w, argv);
	const struct ls_opt *o;
	const char *v;
	cr_assert_eq(ls_opt_next(&w, &o, &v), LS_OPT_FLAG);
	cr_expect_str_eq(v, "--quiet");
	cr_expect_eq(ls_opt_next(&w, &o, &v), LS_OPT_END);
	cr_expect(!w.dashdash);
}

Test(opts, many_values_until_the_next_flag)
{
	char *argv[] = { "x", "--goodput", "ttft:1", "e2el:2", "--quiet", NULL };
	struct ls_opt_walk w;
	walk(&w, argv);
	const struct ls_opt *o;
	const char *v;
	cr_assert_eq(ls_opt_next(&w, &o, &v), LS_OPT_FLAG);
	cr_expect_str_eq(v, "ttft:1");
	cr_assert_eq(ls_opt_more(&w, &v), 1);
	cr_expect_str_eq(v, "e2el:2");
	cr_expect_eq(ls_opt_more(&w, &v), 0);
	cr_assert_eq(ls_opt_next(&w, &o, &v), LS_OPT_FLAG);
	cr_expect_eq(o->id, T_QUIET);
}

Test(opts, plain_argument_is_returned)
{
	char *argv[] = { "x", "file.jsonl", "-", NULL };
	struct ls_opt_walk w;
	walk(&w, argv);
	const struct ls_opt *o;
	const char *v;
	cr_expect_eq(ls_opt_next(&w, &o, &v), LS_OPT_ARG);
	cr_expect_str_eq(v, "file.jsonl");
	cr_expect_eq(ls_opt_next(&w, &o, &v), LS_OPT_ARG);
	cr_expect_str_eq(v, "-");
}

Test(opts, errors_are_one_line_naming_the_flag, .init = cr_redirect_stderr)
{
	char *unknown[] = { "x", "--bogus=3", NULL }, *missing[] = { "x", "--port", NULL };
	char *underscore[] = { "x", "--a_rather_long_flag_name", "1", NULL }, *letter[] = { "x", "--v", NULL };
	char *short_bad[] = { "x", "-q", NULL };
	char **cases[] = { unknown, missing, underscore, letter, short_bad };
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ls_opt_walk w;
		walk(&w, cases[i]);
		const struct ls_opt *o;
		const char *v;
		cr_expect_eq(ls_opt_next(&w, &o, &v), -EINVAL, "case %zu", i);
	}
	fflush(stderr);
	cr_expect_stderr_eq_str("t: unknown flag '--bogus' (see t --help)\n"
				"t: --port needs a value (N)\n"
				"t: unknown flag '--a_rather_long_flag_name' (see t --help)\n"
				"t: unknown flag '--v' (see t --help)\n"
				"t: unknown flag '-q' (see t --help)\n");
}

Test(opts, bad_value_names_flag_and_value, .init = cr_redirect_stderr)
{
	ls_opt_bad_value("t", &tab[0], "99999", "must be a port");
	ls_opt_bad_value("t", &tab[1], NULL, "takes no value");
	fflush(stderr);
	cr_expect_stderr_eq_str("t: --port '99999' must be a port\nt: --quiet takes no value\n");
}

Test(opts, help_layout)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	cr_assert_not_null(f);
	ls_opt_help(f, tab, N_TAB);
	fclose(f);
	cr_expect_str_eq(text,
			 "\nserver:\n"
			 "  --port N                       listen port\n"
			 "  --quiet                        no lines\n"
			 "\nresults:\n"
			 "  --goodput KEY:MS ...           SLOs\n"
			 "  --a-rather-long-flag-name VALUE\n"
			 "                                 first line\n"
			 "                                 second line\n"
			 "\nother:\n"
			 "  -v, --verbose                  say more\n"
			 "  -h, --help                     this help\n");
	free(text);
}

Test(opts, parse_u64)
{
	uint64_t u = 7;
	cr_expect_eq(ls_opt_parse_u64("65535", 1, 65535, &u), 0);
	cr_expect_eq(u, 65535);
	cr_expect_eq(ls_opt_parse_u64("+5", 0, 10, &u), 0);
	cr_expect_eq(u, 5);
	const char *bad[] = { "", "0", "65536", "-1", " -1", "1.5", "abc", "12x", "0x10", "99999999999999999999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		u = 7;
		cr_expect_eq(ls_opt_parse_u64(bad[i], 1, 65535, &u), -EINVAL, "'%s'", bad[i]);
		cr_expect_eq(u, 7, "'%s' left *out alone", bad[i]);
	}
	cr_expect_eq(ls_opt_parse_u64("18446744073709551615", 0, UINT64_MAX, &u), 0);
	cr_expect_eq(u, UINT64_MAX);
	cr_expect_eq(ls_opt_parse_u64(NULL, 0, 1, &u), -EINVAL);
}

Test(opts, parse_seed_takes_c_notation)
{
	uint64_t u;
	cr_expect_eq(ls_opt_parse_seed("0x10", &u), 0);
	cr_expect_eq(u, 16);
	cr_expect_eq(ls_opt_parse_seed("42", &u), 0);
	cr_expect_eq(u, 42);
	cr_expect_eq(ls_opt_parse_seed("-1", &u), -EINVAL);
	cr_expect_eq(ls_opt_parse_seed("0x", &u), -EINVAL);
}

Test(opts, parse_double_whole_duration_bool)
{
	double d = 0;
	cr_expect_eq(ls_opt_parse_double("0.5", 0, 1, &d), 0);
	cr_expect_eq(d, 0.5);
	cr_expect_eq(ls_opt_parse_double("inf", 0, INFINITY, &d), 0);
	cr_expect(isinf(d));
	cr_expect_eq(ls_opt_parse_double("inf", 0, 1e6, &d), -EINVAL);
	cr_expect_eq(ls_opt_parse_double("nan", -INFINITY, INFINITY, &d), -EINVAL);
	cr_expect_eq(ls_opt_parse_double("1e-400", 0, 1, &d), -EINVAL, "underflow is not a number we can keep");
	cr_expect_eq(ls_opt_parse_double("2", 0, 1, &d), -EINVAL);
	cr_expect_eq(ls_opt_parse_double("", 0, 1, &d), -EINVAL);
	cr_expect_eq(ls_opt_parse_whole("1e3", 0, 1e4, &d), 0);
	cr_expect_eq(d, 1000);
	cr_expect_eq(ls_opt_parse_whole("80.5", 1, 65535, &d), -EINVAL);
	uint64_t ns = 0;
	cr_expect_eq(ls_opt_parse_duration_ns("2.5", 1e3, 10, &ns), 0);
	cr_expect_eq(ns, 2500);
	cr_expect_eq(ls_opt_parse_duration_ns("11", 1e3, 10, &ns), -EINVAL);
	cr_expect_eq(ls_opt_parse_duration_ns("-1", 1e3, 10, &ns), -EINVAL);
	int on = -1;
	cr_expect_eq(ls_opt_parse_bool("true", &on), 0);
	cr_expect_eq(on, 1);
	cr_expect_eq(ls_opt_parse_bool("0", &on), 0);
	cr_expect_eq(on, 0);
	cr_expect_eq(ls_opt_parse_bool("yes", &on), -EINVAL);
}

/* ls_opt_flags' apply: records the port, refuses "0". */
static const char *apply_port(void *ctx, const struct ls_opt *o, const char *v)
{
	if (o->id == T_PORT && !strcmp(v, "0"))
		return "must be a port";
	if (o->id == T_PORT)
		*(int *)ctx = atoi(v);
	if (o->id == T_QUIET)
		cr_expect_str_eq(v, "true", "a bare switch's value is true");
	return NULL;
}

Test(opts, flags_apply_each_then_stop_at_help_arg_or_bad_value, .init = cr_redirect_stderr)
{
	struct ls_opt_walk w;
	const char *v = NULL;
	int port = 0;
	char *a1[] = { "t", "--port", "80", "--quiet", "file", NULL };
	walk(&w, a1);
	cr_expect_eq(ls_opt_flags(&w, T_HELP, apply_port, &port, &v), LS_OPT_ARG);
	cr_expect_str_eq(v, "file");
	cr_expect_eq(port, 80);
	char *a2[] = { "t", "--quiet", "--help", "--port", "81", NULL };
	walk(&w, a2);
	cr_expect_eq(ls_opt_flags(&w, T_HELP, apply_port, &port, &v), LS_OPT_HELP);
	cr_expect_eq(port, 80, "nothing after --help is applied");
	char *a3[] = { "t", "--port=0", NULL };
	walk(&w, a3);
	cr_expect_eq(ls_opt_flags(&w, T_HELP, apply_port, &port, &v), -EINVAL);
	char *a4[] = { "t", "--port", "82", NULL };
	walk(&w, a4);
	cr_expect_eq(ls_opt_flags(&w, T_HELP, apply_port, &port, &v), LS_OPT_END);
	cr_expect_eq(port, 82);
	cr_expect(strstr(t_stderr_text(), "t: --port '0' must be a port"));
}
