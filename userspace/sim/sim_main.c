/* sim/sim_main.c — placeholder until its stage lands (simulator). */
#include <stdio.h>
#include "../commands.h"

int cmd_sim(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "latscope: '%s' is not built yet\n", "sim");
	return 1;
}
