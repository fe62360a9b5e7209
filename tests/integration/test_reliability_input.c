/* test_reliability_input.c — bad input gets one clear line and the right exit code: 2 for a
 * usage error (flags, config and profile files), 1 for a runtime failure (dataset files, an
 * unreachable server, a port in use, an unwritable output, probes that cannot run). Each case
 * names what the message must contain: what is wrong (the file and line) and what to do. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "probes/probes.h"
#include "t_helpers.h"
#include "test_reliability.h"

struct input_case {
	const char *name;
	const char *argv[24];   /* "$URL", "$PORT", "$DIR" are replaced */
	int         exit_code;
	const char *must[3];    /* substrings of stderr, NULL-terminated */
};

static char dir[128];

static void write_file(const char *name, const char *text)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

static void setup_files(void)
{
	t_tmp(dir, sizeof(dir), "input");
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s && mkdir -p %s", dir, dir);
	cr_assert_eq(system(cmd), 0);
	write_file("bad.jsonl", "{\"prompt\": \"a\", \"output_len\": 4}\n\n{\"prompt\": 5}\n");
	write_file("bad_sharegpt.json", "[{\"conversations\": [\n{\"from\": \"human\", \"value\": \"x\"},\n oops]}]\n");
	write_file("bad_config.json", "{\"num-prompts\": 5,\n\"request-rate\": }\n");
	write_file("key_config.json", "{\"num-prompt\": 5}\n");
	write_file("bad_profile.json", "{\"base\": \"vllm\",\n \"ttft_gate\": }\n");
	write_file("not_records.jsonl", "garbage\n");
}

static const char *subst(const char *a, const struct t_sim *sim, char *buf, size_t len)
{
	if (!strcmp(a, "$URL"))
		return sim->url;
	if (!strcmp(a, "$PORT")) {
		snprintf(buf, len, "%d", sim->port);
		return buf;
	}
	if (!strncmp(a, "$DIR/", 5)) {
		snprintf(buf, len, "%s/%s", dir, a + 5);
		return buf;
	}
	return a;
}

static void run_case(const struct input_case *c, const struct t_sim *sim, const char *bin, const char *wrap[])
{
	const char *args[40];
	char bufs[24][256];
	size_t n = 0;
	for (size_t i = 0; wrap && wrap[i]; i++)
		args[n++] = wrap[i];
	if (wrap)
		args[n++] = bin;
	for (size_t i = 0; c->argv[i]; i++)
		args[n++] = subst(c->argv[i], sim, bufs[i], sizeof(bufs[i]));
	args[n] = NULL;
	struct t_proc p;
	t_spawn(&p, wrap ? wrap[0] : bin, wrap ? args + 1 : args);
	int rc = t_wait(&p, 20);
	char *err = t_stderr(&p);
	t_done(&p);
	cr_expect_eq(rc, c->exit_code, "%s: exit %d, want %d (stderr: %.600s)", c->name, rc, c->exit_code, err);
	for (size_t i = 0; c->must[i]; i++) {
		char want[256];
		cr_expect(strstr(err, subst(c->must[i], sim, want, sizeof(want))), "%s: stderr lacks \"%s\":\n%.600s",
			  c->name, c->must[i], err);
	}
	cr_expect(strlen(err) > 0 && strlen(err) < 1500, "%s: one clear message, got %zu bytes", c->name, strlen(err));
	free(err);
}

#define BENCH "bench", "--base-url", "$URL", "--model", "latscope-sim", "--num-prompts", "4", \
	      "--random-vocab-size", "300", "--probes", "off", "--ready-check-timeout-sec", "5"

static const struct input_case cases[] = {
	{ "bench unknown flag", { "bench", "--bogus", NULL }, 2, { "unknown flag '--bogus'", "--help", NULL } },
	{ "bench bad number", { "bench", "--num-prompts", "abc", NULL }, 2, { "--num-prompts", "'abc'", NULL } },
	{ "sim unknown flag", { "sim", "--bogus", NULL }, 2, { "unknown flag '--bogus'", "--help", NULL } },
	{ "sim bad port", { "sim", "--port", "99999", NULL }, 2, { "--port", "1-65535", NULL } },
	{ "sim bad fault kind", { "sim", "--fail-kind", "boom", NULL }, 2, { "--fail-kind", "boom", NULL } },
	{ "unknown command", { "benchh", NULL }, 2, { "unknown command 'benchh'", "--help", NULL } },
	{ "config missing", { "bench", "--config", "$DIR/none.json", NULL }, 2,
	  { "cannot open config", "$DIR/none.json", NULL } },
	{ "config malformed", { "bench", "--config", "$DIR/bad_config.json", NULL }, 2,
	  { "$DIR/bad_config.json:2:", "malformed JSON", NULL } },
	{ "config unknown key", { "bench", "--config", "$DIR/key_config.json", NULL }, 2,
	  { "unknown key \"num-prompt\"", "--help", NULL } },
	{ "profile missing", { "bench", "--profile", "$DIR/none.json", NULL }, 2, { "$DIR/none.json", NULL } },
	{ "profile malformed", { "bench", "--profile", "$DIR/bad_profile.json", NULL }, 2,
	  { "$DIR/bad_profile.json:2", NULL } },
	{ "report missing file", { "report", "$DIR/none.jsonl", NULL }, 1,
	  { "cannot open record file", "$DIR/none.jsonl", NULL } },
	{ "report not a record file", { "report", "$DIR/not_records.jsonl", NULL }, 1,
	  { "$DIR/not_records.jsonl:1:", "--record file", NULL } },
	{ "dataset missing", { BENCH, "--dataset-name", "jsonl", "--dataset-path", "$DIR/none.jsonl", NULL }, 1,
	  { "cannot open dataset", "$DIR/none.jsonl", NULL } },
	{ "jsonl malformed line", { BENCH, "--dataset-name", "jsonl", "--dataset-path", "$DIR/bad.jsonl", NULL }, 1,
	  { "$DIR/bad.jsonl:3:", "\"prompt\"", NULL } },
	{ "sharegpt malformed", { BENCH, "--dataset-name", "sharegpt", "--dataset-path", "$DIR/bad_sharegpt.json",
				  NULL }, 1, { "$DIR/bad_sharegpt.json:3:", "malformed JSON", NULL } },
	{ "record unwritable", { BENCH, "--record", "$DIR/no/such/dir/r.jsonl", NULL }, 1,
	  { "cannot create record file", "$DIR/no/such/dir/r.jsonl", NULL } },
	{ "unreachable server", { "bench", "--base-url", "http://127.0.0.1:1", "--ready-check-timeout-sec", "1",
				  "--probes", "off", NULL }, 1, { "http://127.0.0.1:1", "is it running?", NULL } },
	{ "sim port in use", { "sim", "--port", "$PORT", "--quiet", NULL }, 1,
	  { "Address already in use", "--port", NULL } },
	{ "sim GPU library missing", { "sim", "--port", "1", "--gpu", "--gpu-lib", "$DIR/none.so", NULL }, 1,
	  { "$DIR/none.so", "--gpu-lib", NULL } },
};

Test(reliability_input, table_of_bad_inputs, .timeout = 90)
{
	setup_files();
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "1", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, extra), 0, "sim did not start");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i], &sim, t_bin(), NULL);
	t_sim_stop(&sim);
	t_remove_tree(dir);
}

/* Probes that cannot run: --probes on fails (exit 1) naming why and what to do; auto runs
 * without them and says why in the report. No BTF is made by hiding /sys/kernel/btf in a
 * private mount namespace; no root by dropping to uid 65534. */
Test(reliability_input, probes_without_btf_or_root, .timeout = 90)
{
	if (!t_is_root())
		cr_skip_test("needs root to hide the BTF in a mount namespace and to drop privileges");
	if (access("/usr/bin/unshare", X_OK) || access("/usr/bin/setpriv", X_OK))
		cr_skip_test("needs util-linux unshare and setpriv");
	setup_files();
	struct t_sim sim;
	const char *extra[] = { "--step-ms", "1", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, extra), 0, "sim did not start");
	char bin[512];
	cr_assert(realpath(t_bin(), bin));
	/* The binary must be reachable by uid 65534: a world-readable copy. */
	char copy[256], cmd[1200];
	snprintf(copy, sizeof(copy), "%s/latscope", dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s && chmod 755 %s %s", bin, copy, dir, copy);
	cr_assert_eq(system(cmd), 0);
	char script[900];
	snprintf(script, sizeof(script), "mount -t tmpfs none /sys/kernel/btf && exec \"$@\"");
	const char *no_btf[] = { "/usr/bin/unshare", "-m", "sh", "-c", script, "sh", NULL };
	const char *no_root[] = { "/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", NULL };
	const struct input_case on = { "probes on without BTF",
				       { "bench", "--base-url", "$URL", "--model", "m", "--num-prompts", "2",
					 "--random-vocab-size", "300", "--probes", "on", NULL }, 1,
				       { "no kernel BTF", "CONFIG_DEBUG_INFO_BTF", NULL } };
	run_case(&on, &sim, copy, no_btf);
	const struct input_case root = { "probes on without root",
					 { "bench", "--base-url", "$URL", "--model", "m", "--num-prompts", "2",
					   "--random-vocab-size", "300", "--probes", "on", NULL }, 1,
					 { "needs root", "--probes auto", NULL } };
	run_case(&root, &sim, copy, no_root);
	/* auto: the run goes on without probes and the report says why. */
	const char *args[] = { "-m", "sh", "-c", script, "sh", copy, "bench", "--base-url", sim.url, "--model", "m",
			       "--num-prompts", "2", "--random-vocab-size", "300", "--probes", "auto", NULL };
	struct t_proc p;
	t_spawn(&p, "/usr/bin/unshare", args);
	cr_expect_eq(t_wait(&p, 20), 0, "--probes auto runs without BTF");
	char *out = t_stdout(&p);
	cr_expect(strstr(out, "probes off: no kernel BTF"), "the report says why: %.800s", out);
	free(out);
	t_done(&p);
	t_sim_stop(&sim);
	t_remove_tree(dir);
}

/* A process without libssl: the TLS uprobes are skipped with a note, the rest runs. */
Test(reliability_input, tls_probes_without_libssl_note, .timeout = 30)
{
	if (!t_is_root() || access("/sys/kernel/btf/vmlinux", R_OK))
		cr_skip_test("probes need root and kernel BTF");
	pid_t child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) { /* a process that maps no libssl */
		execl("/bin/sleep", "sleep", "20", (char *)NULL);
		_exit(127);
	}
	usleep(100000);
	char why[256];
	struct ls_probes_opts o = { .client_pids = &child, .n_client_pids = 1 };
	struct ls_probes *p = ls_probes_open(&o, why, sizeof(why));
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	cr_assert_not_null(p, "probes open without libssl in the watched process: %s", why);
	cr_expect(strstr(ls_probes_notes(p), "no libssl mapped"), "notes: %s", ls_probes_notes(p));
	ls_probes_close(p);
}

/* `latscope sim` listens on 127.0.0.1 unless --host says otherwise. */
Test(reliability_input, sim_binds_loopback_by_default, .timeout = 30)
{
	struct t_sim sim;
	const char *extra[] = { "--quiet", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, extra), 0, "sim did not start");
	FILE *f = fopen("/proc/net/tcp", "r");
	cr_assert_not_null(f);
	char line[512];
	int found = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned addr, port, state;
		if (sscanf(line, " %*d: %x:%x %*x:%*x %x", &addr, &port, &state) == 3 && state == 0x0A &&
		    (int)port == sim.port) {
			found = 1;
			cr_expect_eq(addr, 0x0100007Fu, "listening on %08x, not 127.0.0.1", addr);
		}
	}
	fclose(f);
	t_sim_stop(&sim);
	cr_expect(found, "no listening socket on port %d in /proc/net/tcp", sim.port);
}
