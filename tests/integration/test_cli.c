#include <criterion/criterion.h>
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
