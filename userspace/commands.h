/* commands.h — the subcommands main.c dispatches to. Each returns the process exit code:
 * 0 ok, 1 runtime failure, 2 usage error, 3 (bench) the run finished but no request
 * succeeded. None of them calls exit(). */
#ifndef LATSCOPE_COMMANDS_H
#define LATSCOPE_COMMANDS_H

#ifndef LATSCOPE_VERSION
#define LATSCOPE_VERSION "0.1.0" /* in main.c's --version and the HTML report */
#endif

#define LS_EXIT_NONE_OK 3 /* bench: every measured request failed */

int cmd_bench(int argc, char **argv);   /* cmd/bench.c */
int cmd_sim(int argc, char **argv);     /* sim/sim_main.c */
int cmd_lab(int argc, char **argv);     /* lab/lab_main.c */
int cmd_compare(int argc, char **argv); /* cmd/compare.c */
int cmd_report(int argc, char **argv);  /* cmd/report_cmd.c */
int cmd_watch(int argc, char **argv);   /* cmd/watch_cmd.c */
int cmd_sweep(int argc, char **argv);   /* cmd/sweep.c */

#endif
