/* cmd/ — the subcommands that wire the stages together (bench, compare, report).
 * Takes: argv, through config/.
 * Gives: a run driven, attributed, measured and reported; exit codes as in commands.h. The
 * pieces the commands share live here (the probes around a bench run: bench_probes.h). */
#ifndef LATSCOPE_CMD_H
#define LATSCOPE_CMD_H

#include "cmd/bench_probes.h"

#endif
