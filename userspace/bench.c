/* bench.c — placeholder until its stage lands (harness). */
#include <stdio.h>
#include "commands.h"

int cmd_bench(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "latscope: '%s' is not built yet\n", "bench");
	return 1;
}
