#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "t_helpers.h"

Test(cli, help_lists_every_command, .timeout = 10)
{
	char *out = NULL;
	const char *argv[] = { "--help", NULL };
	cr_assert_eq(t_run(argv, &out, NULL, 10), 0);
	for (const char *cmd = "bench\0sim\0compare\0report\0lab\0"; *cmd; cmd += strlen(cmd) + 1)
		cr_expect(strstr(out, cmd), "--help does not mention %s", cmd);
	free(out);
}

Test(cli, unknown_command_is_usage_error, .timeout = 10)
{
	char *err = NULL;
	const char *argv[] = { "frobnicate", NULL };
	cr_assert_eq(t_run(argv, NULL, &err, 10), 2);
	cr_expect(strstr(err, "frobnicate"));
	free(err);
}

/* `latscope help CMD` is CMD's own --help (issue 31: it printed the general usage). */
Test(cli, help_command_prints_that_commands_help, .timeout = 10)
{
	for (const char *cmd = "bench\0sim\0compare\0report\0lab\0watch\0sweep\0"; *cmd; cmd += strlen(cmd) + 1) {
		char *out = NULL, *want = NULL, usage[64];
		const char *help[] = { "help", cmd, NULL }, *flag[] = { cmd, "--help", NULL };
		cr_assert_eq(t_run(help, &out, NULL, 10), 0, "latscope help %s", cmd);
		cr_assert_eq(t_run(flag, &want, NULL, 10), 0, "latscope %s --help", cmd);
		snprintf(usage, sizeof(usage), "usage: latscope %s", cmd);
		cr_expect(!strncmp(out, usage, strlen(usage)), "latscope help %s starts: %.40s", cmd, out);
		cr_expect_str_eq(out, want, "latscope help %s differs from its --help", cmd);
		free(out);
		free(want);
	}
	char *err = NULL;
	const char *bad[] = { "help", "frobnicate", NULL };
	cr_assert_eq(t_run(bad, NULL, &err, 10), 2);
	cr_expect(strstr(err, "frobnicate"));
	free(err);
}
