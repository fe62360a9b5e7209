/* report_cmd.c — placeholder until its stage lands (profiles). */
#include <stdio.h>
#include "commands.h"

int cmd_report(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "latscope: '%s' is not built yet\n", "report");
	return 1;
}
