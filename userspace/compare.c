/* compare.c — placeholder until its stage lands (profiles). */
#include <stdio.h>
#include "commands.h"

int cmd_compare(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "latscope: '%s' is not built yet\n", "compare");
	return 1;
}
