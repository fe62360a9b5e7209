/* compare.c — `latscope compare`: one workload under several harness profiles. Profiles that
 * send alike share one run (`latscope bench --record`, a child process, so each run gets a
 * fresh driver); the records of each run are then read under every profile that uses it
 * (compare_table.c). The server's prefix cache is flushed before each run when it offers
 * POST /flush_cache, because the runs repeat the same prompts. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "commands.h"
#include "report/wrap.h"
#include "report/compare.h"
#include "report/html.h"
#include "config/config.h"
#include "server/http_easy.h"
#include "server/specdecode.h"

#define DEFAULT_PROFILES "vllm,sglang,sglang-oai,honest"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: latscope compare [--rules LIST] [--records-dir DIR] [--markdown] [--no-flush] [bench flags]\n"
		"\n"
		"Runs one workload as several harnesses would and shows, row by row, which rule moved which\n"
		"number. Profiles that differ only in how records are read share ONE run's records; profiles\n"
		"that send differently (arrivals, connections, warmup, backend, ignore_eos) get a run each,\n"
		"one after the other against the same server. Bench flags given here apply to every run and\n"
		"override the profiles' sending rules, so pinning them (e.g. --arrival gamma --connection\n"
		"reuse --num-warmups 0) puts every profile on one run.\n"
		"\n"
		"  --rules LIST         the rule sets (profiles) to compare, names or JSON paths\n"
		"                       [" DEFAULT_PROFILES "] (--profiles LIST: the same)\n"
		"  --records-dir DIR    keep each run's records (run-N.jsonl) and bench output (run-N.txt) there\n"
		"                       [a temporary directory, removed at the end]\n"
		"  --markdown           print the table as GitHub markdown\n"
		"  --no-flush           do not POST /flush_cache before each run\n"
		"  --html FILE          also write the comparison as one self-contained HTML page\n"
		"  --help               this help\n"
		"\n"
		"Every other flag is a `latscope bench` flag (latscope bench --help), except --profile and\n"
		"--record, which compare sets per run.\n"
		"\n"
		"example:\n"
		"  latscope compare --rules vllm,sglang,honest --base-url http://127.0.0.1:8000 \\\n"
		"    --num-prompts 200 --request-rate 20 --max-concurrency 8 --random-output-len 64\n");
}

struct compare {
	const char *profiles;
	const char *html;            /* --html FILE: the compare page */
	int         argc;            /* the command line, for the page */
	char      **argv;
	char        dir[400];  /* records and outputs; fits record_path with the run name */
	int         keep_dir, markdown, no_flush;
	char      **bench_argv;      /* "bench", user flags..., then per run: --profile P --record F --disable-tqdm */
	int         bench_argc;
	const char *names[LS_CMP_MAX_PROFILES]; /* as given in --profiles, passed on to bench */
	char       *names_buf;
	struct ls_cmp_col cols[LS_CMP_MAX_PROFILES];
	int         n_cols;
	struct ls_cmp_run runs[LS_CMP_MAX_PROFILES];
	size_t      sender[LS_CMP_MAX_PROFILES]; /* run k is sent with profile names[sender[k]] */
	size_t      n_runs;
	char       *base;
	struct ls_http_opts http;
};

static int parse_args(struct compare *c, int argc, char **argv)
{
	c->profiles = DEFAULT_PROFILES;
	c->bench_argv = calloc((size_t)argc + 8, sizeof(char *));
	if (!c->bench_argv)
		return 1;
	c->bench_argv[c->bench_argc++] = "bench";
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *eq = strchr(a, '=');
		size_t len = eq ? (size_t)(eq - a) : strlen(a);
#define IS(name) (len == strlen(name) && !strncmp(a, name, len))
		if (IS("--help") || IS("-h")) {
			usage(stdout);
			return -1;
		} else if (IS("--html")) {
			c->html = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
			if (!c->html || !*c->html) {
				fprintf(stderr, "latscope compare: --html needs a file name\n");
				return 2;
			}
		} else if (IS("--rules") || IS("--profiles") || IS("--records-dir")) {
			const char *v = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
			if (!v) {
				fprintf(stderr, "latscope compare: %.*s needs a value\n", (int)len, a);
				return 2;
			}
			if (IS("--rules") || IS("--profiles")) { /* --profiles: the older spelling */
				c->profiles = v;
			} else {
				if (strlen(v) + 1 > sizeof(c->dir) || !*v) {
					fprintf(stderr, "latscope compare: --records-dir: give a directory path of 1 to %zu "
							"bytes\n", sizeof(c->dir) - 1);
					return 2;
				}
				snprintf(c->dir, sizeof(c->dir), "%s", v);
				c->keep_dir = 1;
			}
		} else if (IS("--markdown")) {
			c->markdown = 1;
		} else if (IS("--no-flush")) {
			c->no_flush = 1;
		} else if (IS("--profile") || IS("--record")) {
			fprintf(stderr, "latscope compare: %.*s is set per run by compare (use --rules LIST%s)\n", (int)len, a,
				IS("--record") ? " and --records-dir" : "");
			return 2;
		} else {
			c->bench_argv[c->bench_argc++] = argv[i];
		}
#undef IS
	}
	return 0;
}

/* What a run under profile p sends with these bench settings. */
static void sent_by(const struct ls_config *cfg, const struct ls_profile *p, struct ls_cmp_send *out)
{
	int random = cfg->dataset == LS_DATASET_RANDOM;
	*out = (struct ls_cmp_send){
		.random = random, .range_ratio = random ? cfg->random_range_ratio : 0.0,
		.input_len = cfg->random_input_len, .output_len = cfg->random_output_len,
		.max_concurrency = cfg->max_concurrency,
	};
	ls_config_send_rules(cfg, p, &out->rules);
}

/* Column i reads the run that sends as it would, a new one when none does yet. */
static void assign_run(struct compare *c, int i, const struct ls_cmp_send *s)
{
	size_t r = 0;
	while (r < c->n_runs && !ls_cmp_send_same(&c->runs[r].send, s))
		r++;
	if (r == c->n_runs) {
		c->runs[r].send = *s;
		c->runs[r].send_known = 1;
		c->sender[r] = (size_t)i;
		c->n_runs++;
	}
	c->cols[i].run = r;
	struct ls_cmp_run *run = &c->runs[r];
	char name[sizeof(c->cols[i].prof.name)];
	memcpy(name, c->cols[i].prof.name, sizeof(name)); /* a copy: snprintf must not see overlap */
	size_t len = strlen(run->profiles);
	snprintf(run->profiles + len, sizeof(run->profiles) - len, "%s%s", len ? ", " : "", name);
}

/* The profiles (each loaded once), the bench flags (parsed once, under the first profile) and
 * the runs they need: each column sends by its profile's rules with the flags over them. */
static int plan_runs(struct compare *c)
{
	c->names_buf = strdup(c->profiles);
	if (!c->names_buf)
		return 1;
	c->n_cols = ls_cmp_parse_profiles(c->profiles, c->cols, LS_CMP_MAX_PROFILES);
	if (c->n_cols <= 0)
		return 2;
	char *save = NULL;
	int k = 0;
	for (char *t = strtok_r(c->names_buf, ",", &save); t && k < c->n_cols; t = strtok_r(NULL, ",", &save))
		c->names[k++] = t;
	struct ls_config cfg;
	int rc = ls_config_parse_with(&cfg, c->bench_argc, c->bench_argv, &c->cols[0].prof);
	for (int i = 0; !rc && i < c->n_cols; i++) {
		struct ls_cmp_send s;
		sent_by(&cfg, &c->cols[i].prof, &s);
		rc = i ? ls_config_check(&cfg, &s.rules) : 0; /* the first was checked by the parse */
		if (!rc)
			assign_run(c, i, &s);
	}
	if (rc) {
		ls_config_free(&cfg);
		return rc == 1 ? -1 : 2; /* bench --help printed, or its one-line error */
	}
	c->base = ls_config_base(&cfg);
	c->http = (struct ls_http_opts){ .insecure = cfg.insecure, .timeout_s = 10 };
	if (cfg.cacert)
		c->http.cacert = strdup(cfg.cacert);
	ls_config_free(&cfg);
	return c->base ? 0 : 1;
}

/* POST /flush_cache (SGLang's, and the simulator's). 1 when the server emptied its cache. */
static int flush_cache(const struct compare *c)
{
	char *url = NULL;
	if (asprintf(&url, "%s/flush_cache", c->base) < 0)
		return 0;
	struct ls_http_resp resp;
	int ok = ls_http_call(url, "{}", &c->http, &resp) == 0 && resp.status >= 200 && resp.status < 300;
	ls_http_resp_free(&resp);
	free(url);
	return ok;
}

/* One run: latscope bench as a child, stdout into DIR/run-K.txt. 0 or 1 (message printed). */
static int run_bench(struct compare *c, size_t k)
{
	struct ls_cmp_run *run = &c->runs[k];
	char out_path[PATH_MAX + 32];
	snprintf(run->record_path, sizeof(run->record_path), "%s/run-%zu.jsonl", c->dir, k + 1);
	snprintf(out_path, sizeof(out_path), "%s/run-%zu.txt", c->dir, k + 1);
	int argc = c->bench_argc;
	char **argv = c->bench_argv;
	argv[argc++] = "--profile";
	argv[argc++] = (char *)c->names[c->sender[k]];
	argv[argc++] = "--record";
	argv[argc++] = run->record_path;
	argv[argc++] = "--disable-tqdm";
	argv[argc] = NULL;
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		fprintf(stderr, "latscope compare: cannot find its own binary (/proc/self/exe): %s\n", strerror(errno));
		return 1;
	}
	exe[n] = 0;
	fprintf(stderr, "latscope compare: run %zu of %zu (%s), sent as %s ...\n", k + 1, c->n_runs, run->profiles,
		c->names[c->sender[k]]);
	/* Opened here, not in the child, so that a failure is one line naming the file. */
	int out_fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out_fd < 0) {
		fprintf(stderr, "latscope compare: cannot write run %zu's report %s: %s\n", k + 1, out_path,
			strerror(errno));
		return 1;
	}
	fflush(stderr);
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "latscope compare: fork: %s\n", strerror(errno));
		close(out_fd);
		return 1;
	}
	if (pid == 0) {
		if (dup2(out_fd, STDOUT_FILENO) < 0)
			_exit(126);
		char **full = calloc((size_t)argc + 2, sizeof(char *));
		if (!full)
			_exit(126);
		full[0] = exe;
		memcpy(full + 1, argv, (size_t)argc * sizeof(char *));
		/* The running binary itself, even if a rebuild replaced the file since it started. */
		execv("/proc/self/exe", full);
		_exit(127);
	}
	close(out_fd);
	int status = 0;
	pid_t waited;
	while ((waited = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
		;
	if (waited < 0) { /* status was never filled in: do not read it as a clean exit */
		fprintf(stderr, "latscope compare: waiting for run %zu (%s): %s\n", k + 1, run->profiles, strerror(errno));
		return 1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "latscope compare: run %zu (%s) failed (%s %d); its report is in %s\n", k + 1, run->profiles,
			WIFEXITED(status) ? "exit" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
			out_path);
		return 1;
	}
	struct ls_spec_snapshot snap = { 0 };
	ls_spec_snapshot(c->base, &c->http, &snap);
	run->accept_len = snap.has_avg ? snap.avg_accept_len : 0;
	if (ls_record_load(run->record_path, &run->run, &run->meta)) {
		fprintf(stderr, "latscope compare: cannot read the records of run %zu (%s)\n", k + 1, run->record_path);
		return 1;
	}
	return 0;
}

/* Empties and removes the temporary directory compare made (bench may add files of its own
 * next to the records, e.g. attribution). */
static void remove_dir(const struct compare *c)
{
	DIR *d = opendir(c->dir);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d))) {
			char path[sizeof(c->dir) + 300];
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			snprintf(path, sizeof(path), "%s/%s", c->dir, e->d_name);
			unlink(path);
		}
		closedir(d);
	}
	rmdir(c->dir);
}

static int write_html(const struct compare *c)
{
	char *cmdline = ls_html_command_line("latscope", c->argc, c->argv);
	int err = ls_html_write_compare(c->html, c->runs, c->n_runs, c->cols, (size_t)c->n_cols, cmdline,
					LATSCOPE_VERSION);
	if (!err)
		fprintf(stderr, "latscope compare: HTML report written to %s\n", c->html);
	free(cmdline);
	return err;
}

int cmd_compare(int argc, char **argv)
{
	struct compare c;
	memset(&c, 0, sizeof(c));
	c.argc = argc;
	c.argv = argv;
	int rc = parse_args(&c, argc, argv), exit_code = 1, made_dir = 0;
	if (!rc && c.html && ls_html_check("--html", c.html))
		rc = 1;
	if (rc) {
		exit_code = rc < 0 ? 0 : rc;
		goto out;
	}
	rc = plan_runs(&c);
	if (rc) {
		exit_code = rc < 0 ? 0 : rc;
		goto out;
	}
	if (c.keep_dir) {
		if (mkdir(c.dir, 0755) && errno != EEXIST) {
			fprintf(stderr, "latscope compare: --records-dir %s: %s\n", c.dir, strerror(errno));
			goto out;
		}
	} else {
		const char *tmp = getenv("TMPDIR");
		snprintf(c.dir, sizeof(c.dir), "%s/latscope-compare-XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(c.dir)) {
			fprintf(stderr, "latscope compare: cannot make a temporary directory in %s: %s\n",
				tmp && *tmp ? tmp : "/tmp", strerror(errno));
			goto out;
		}
	}
	made_dir = !c.keep_dir;
	for (size_t k = 0; k < c.n_runs; k++) {
		c.runs[k].repeated = k > 0;
		c.runs[k].flushed = !c.no_flush && flush_cache(&c);
		if (run_bench(&c, k)) {
			made_dir = 0; /* keep what the failed run left, for the reader */
			goto out;
		}
	}
	if (ls_cmp_compute(c.runs, c.n_runs, c.cols, (size_t)c.n_cols)) {
		fprintf(stderr, "latscope compare: out of memory computing metrics\n");
		goto out;
	}
	struct ls_wrap wrap;
	FILE *out = c.markdown ? stdout : ls_wrap_open(&wrap, stdout); /* a markdown table stays whole */
	ls_cmp_print(out, c.runs, c.n_runs, c.cols, (size_t)c.n_cols, c.markdown);
	if (!c.markdown)
		ls_wrap_close(&wrap);
	if (c.html && write_html(&c))
		goto out;
	if (c.keep_dir)
		printf("\nRecords and each run's bench report: %s/run-N.{jsonl,txt} (latscope report FILE --profile P "
		       "re-reads them)\n", c.dir);
	exit_code = 0;
out:
	if (made_dir)
		remove_dir(&c);
	ls_cmp_free(c.runs, c.n_runs, c.cols, c.n_cols > 0 ? (size_t)c.n_cols : 0);
	free((char *)c.http.cacert);
	free(c.base);
	free(c.names_buf);
	free(c.bench_argv);
	return exit_code;
}
