/* main.c — latscope's entry point: picks the subcommand. The only file that may exit(). */
#include <stdio.h>
#include <string.h>
#include "commands.h"

static void usage(FILE *out)
{
	fprintf(out,
		"latscope %s: where the latency of an LLM serving benchmark really goes\n"
		"\n"
		"usage: latscope <command> [flags]   (latscope help <command>, or latscope <command> --help,\n"
		"                                     for its flags; man latscope-<command> once installed)\n"
		"\n"
		"commands:\n"
		"  bench     drive streaming requests at a server and report TTFT/ITL/E2EL, split into\n"
		"            client, network, queue and GPU time (flags follow `vllm bench serve`)\n"
		"  sim       run the engine simulator: an OpenAI/SGLang-compatible streaming server\n"
		"            with a continuous-batching step model and per-request ground truth\n"
		"  compare   run one workload under several harness profiles (vllm, sglang, ...)\n"
		"            and show which rule moved which number\n"
		"  sweep     one bench run per rate or concurrency: the capacity at an SLO under every clock\n"
		"            (scheduled, admitted, started) and what a started-clock harness overstates\n"
		"  report    re-derive a profile's metrics from a saved record file\n"
		"  lab       put real round-trip time between bench and sim (namespaces + delay line)\n"
		"  watch     attach to another benchmark client (-- COMMAND, or --pid) and show the time it\n"
		"            held bytes the kernel had and spent before sending, next to what it reported\n"
		"  help CMD  print CMD's flags (the same as latscope CMD --help)\n"
		"  version   print the version\n",
		LATSCOPE_VERSION);
}

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} commands[] = {
	{ "bench", cmd_bench },
	{ "sim", cmd_sim },
	{ "compare", cmd_compare },
	{ "report", cmd_report },
	{ "lab", cmd_lab },
	{ "watch", cmd_watch },
	{ "sweep", cmd_sweep },
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

/* `latscope help [CMD]`: the general usage, or CMD's own --help (one text: the command's). */
static int help(int argc, char **argv)
{
	if (argc < 3) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (!strcmp(argv[2], commands[i].name)) {
			char *args[] = { argv[2], "--help", NULL };
			return commands[i].run(2, args);
		}
	fprintf(stderr, "latscope help: unknown command '%s' (try: latscope help)\n", argv[2]);
	return 2;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "help"))
		return help(argc, argv);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
		printf("latscope %s\n", LATSCOPE_VERSION);
		return 0;
	}
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "latscope: unknown command '%s' (try: latscope --help)\n", argv[1]);
	return 2;
}
