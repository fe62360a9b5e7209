/* lab/lab_main.c — placeholder until its stage lands (lab). */
#include <stdio.h>
#include "../commands.h"

int cmd_lab(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "latscope: '%s' is not built yet\n", "lab");
	return 1;
}
