/* report_cmd.c — `latscope report RECORDS.jsonl`: re-derive a profile's metrics (or several
 * profiles' side by side) from a saved --record file, without running anything (ARCHITECTURE.md
 * principle 1: metrics are pure functions of the records plus a profile). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/clock.h"
#include "cmd/cmd.h"
#include "commands.h"
#include "report/wrap.h"
#include "report/compare.h"
#include "config/config.h"
#include "report/record_file.h"
#include "report/report.h"
#include "report/html.h"
#include "cmd/bench_probes.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: latscope report RECORDS.jsonl [--rules NAME | --rules LIST] [flags]\n"
		"       latscope report RECORDS.jsonl.rank0 RECORDS.jsonl.rank1 ... [flags]\n"
		"\n"
		"Reads a `latscope bench --record` file and prints the metrics a profile would report\n"
		"for it, then the checks; with --rules LIST, the comparison table of `latscope compare`.\n"
		"Several files are the rank files of one MPI run (mpirun -n N latscope bench --record F):\n"
		"merged into one run in rank 0's clock, each request once.\n"
		"\n"
		"  --rules NAME|PATH          read the records by these rules: vllm, sglang, sglang-oai,\n"
		"                             honest or a JSON profile [the rules the run was made with]\n"
		"  --rules LIST               several side by side, e.g. vllm,sglang,honest\n"
		"                             (--profile NAME and --profiles LIST: the older spellings)\n"
		"  --metric-percentiles LIST  percentiles to print, e.g. 50,90,99 [the profile's]\n"
		"  --percentile-metrics LIST  metrics that get a block: ttft,tpot,itl,e2el [all]\n"
		"  --goodput KEY:MS ...       SLOs for goodput (ttft, tpot, e2el in ms)\n"
		"  --accept-length A          the server's speculative accept length for rules that\n"
		"                             depend on it (sglang-oai) [estimated from the records]\n"
		"  --save-result FILE         also write the result JSON (vLLM's keys + \"latscope\")\n"
		"  --html FILE                also write one self-contained HTML page (with --profiles: the\n"
		"                             compare page); the attribution file beside the records\n"
		"                             (RECORDS.attribution.jsonl) is drawn when it is there\n"
		"  --markdown                 with --profiles: the table as GitHub markdown\n"
		"  --help                     this help\n"
		"\n"
		"example:\n"
		"  latscope bench --base-url http://127.0.0.1:8000 --num-prompts 100 --record rec.jsonl\n"
		"  latscope report rec.jsonl --rules sglang\n"
		"  latscope report rec.jsonl --rules vllm,sglang,sglang-oai,honest\n");
}

#define MAX_FILES 4096

struct report_args {
	const char *paths[MAX_FILES];
	size_t      n_paths;
	const char *path, *profile, *profiles, *percentiles, *save, *html;
	int         argc;             /* the command line, for the HTML page */
	char      **argv;
	unsigned    percentile_metrics;
	int         has_pm, has_goodput; /* given: else the run's own */
	struct ls_goodput goodput;
	double      accept_len;      /* < 0: estimate */
	int         markdown;
};

/* The value of flag f at argv[*i + 1] (--goodput takes every value up to the next flag);
 * *i is left at the last one. 0, or 2 with the message printed. */
static int parse_value(struct report_args *a, const char *f, int argc, char **argv, int *i)
{
	const char *v = argv[++*i];
	if (!strcmp(f, "--rules")) /* one name: that reading; a list: side by side */
		f = strchr(v, ',') ? "--profiles" : "--profile";
	if (!strcmp(f, "--profile")) {
		a->profile = v;
	} else if (!strcmp(f, "--profiles")) {
		a->profiles = v;
	} else if (!strcmp(f, "--metric-percentiles")) {
		struct ls_read_rules probe = { 0 };
		if (ls_percentiles_parse(v, &probe)) {
			fprintf(stderr, "latscope report: --metric-percentiles '%s' must be a comma list of "
					"percentiles in (0, 100], e.g. 50,90,99\n", v);
			return 2;
		}
		a->percentiles = v;
	} else if (!strcmp(f, "--percentile-metrics")) {
		a->has_pm = 1;
		if (ls_parse_percentile_metrics(v, &a->percentile_metrics)) {
			fprintf(stderr, "latscope report: --percentile-metrics '%s' must be a comma list of "
					"ttft, tpot, itl, e2el\n", v);
			return 2;
		}
	} else if (!strcmp(f, "--goodput")) {
		a->has_goodput = 1;
		for (;;) {
			if (ls_goodput_parse(v, &a->goodput)) {
				fprintf(stderr, "latscope report: --goodput '%s' must be KEY:MS with KEY ttft, tpot "
						"or e2el, e.g. ttft:900\n", v);
				return 2;
			}
			if (*i + 1 >= argc || !strncmp(argv[*i + 1], "--", 2))
				break;
			v = argv[++*i];
		}
	} else if (!strcmp(f, "--accept-length")) {
		char *end;
		errno = 0;
		a->accept_len = strtod(v, &end);
		if (*end || errno || !(a->accept_len >= 0) || isinf(a->accept_len)) {
			fprintf(stderr, "latscope report: --accept-length '%s' must be a number >= 0\n", v);
			return 2;
		}
	} else if (!strcmp(f, "--html")) {
		a->html = v;
	} else {
		a->save = v;
	}
	return 0;
}

/* 0 ok, -1 help printed, 2 usage error (message printed). */
static int parse_args(struct report_args *a, int argc, char **argv)
{
	memset(a, 0, sizeof(*a));
	a->argc = argc;
	a->argv = argv;
	a->accept_len = -1;
	a->percentile_metrics = LS_PM_TTFT | LS_PM_TPOT | LS_PM_ITL | LS_PM_E2EL;
	for (int i = 1; i < argc; i++) {
		const char *f = argv[i];
		if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
			usage(stdout);
			return -1;
		}
		if (strncmp(f, "--", 2)) {
			if (a->n_paths == MAX_FILES) {
				fprintf(stderr, "latscope report: at most %d record files at once\n", MAX_FILES);
				return 2;
			}
			if (!a->path)
				a->path = f;
			a->paths[a->n_paths++] = f;
			continue;
		}
		if (!strcmp(f, "--markdown")) {
			a->markdown = 1;
			continue;
		}
		static const char *const with_value[] = { "--rules", "--profile", "--profiles", "--metric-percentiles",
							  "--percentile-metrics", "--goodput", "--accept-length",
							  "--save-result", "--html" };
		int known = 0;
		for (size_t k = 0; k < sizeof(with_value) / sizeof(with_value[0]); k++)
			known |= !strcmp(f, with_value[k]);
		if (!known) {
			fprintf(stderr, "latscope report: unknown flag '%s' (see latscope report --help)\n", f);
			return 2;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "latscope report: %s needs a value\n", f);
			return 2;
		}
		if (parse_value(a, f, argc, argv, &i))
			return 2;
	}
	if (!a->path) {
		fprintf(stderr, "latscope report: which record file? (latscope report RECORDS.jsonl --rules NAME)\n");
		return 2;
	}
	if (a->profile && a->profiles) {
		fprintf(stderr, "latscope report: give one --rules (a name, or a comma list), not both a name and a list\n");
		return 2;
	}
	return 0;
}

/* Tokens per token frame over successful requests, from counts or usage: what the server's
 * accept length would be under speculative decoding (1 without it). */
static double estimate_accept_len(const struct ls_run *run)
{
	uint64_t tokens = 0, frames = 0;
	for (size_t i = 0; i < run->n_requests; i++) {
		const struct ls_request *r = &run->requests[i];
		if (r->warmup || r->fail != LS_OK || r->usage_completion_tokens < 0)
			continue;
		uint32_t f = 0;
		for (uint32_t k = 0; k < r->n_frames; k++)
			f += (r->frames[k].flags & LS_FRAME_CHOICES) != 0;
		if (!f)
			continue;
		tokens += (uint64_t)r->usage_completion_tokens;
		frames += f;
	}
	return frames ? (double)tokens / (double)frames : 0;
}

/* Connections the records opened, in words (the record file does not keep the policy). */
static void connections(const struct ls_run *run, char *buf, size_t cap)
{
	size_t opened = 0, n = 0;
	for (size_t i = 0; i < run->n_requests; i++)
		if (!run->requests[i].warmup) {
			n++;
			opened += run->requests[i].new_connection != 0;
		}
	snprintf(buf, cap, "%zu connections opened for %zu requests (%s)", opened, n,
		 opened >= n && n ? "a new one per request" : "connections reused");
}

/* --html for one profile's reading, with the attribution file beside the records when there. */
static int html_page(const struct report_args *a, const struct ls_run_report *rr, const struct ls_run *run,
		     const struct ls_report_ctx *ctx, const struct ls_record_meta *meta)
{
	char *attr_path = ls_bench_attribution_path(a->path), why[700], conn[160], watched[700];
	char *cmdline = ls_html_command_line("latscope", a->argc, a->argv);
	struct ls_attribution *attr = NULL;
	struct ls_profile honest;
	if (attr_path && !ls_profile_builtin("honest", &honest)) /* as bench attributes: the honest way */
		attr = ls_attribution_load(attr_path, run, &honest.read);
	if (!attr)
		snprintf(why, sizeof(why), "%s %s beside the records (bench writes it with --record when the probes "
			 "run: as root, with kernel BTF)", errno == ENOENT ? "no attribution file" : "could not read",
			 attr_path ? attr_path : "?");
	snprintf(watched, sizeof(watched), "read back from %s%s%s", a->path, attr ? " and " : "", attr ? attr_path : "");
	if (meta->connection[0]) /* the policy, as the run's page said it */
		snprintf(conn, sizeof(conn), "%s", meta->connection);
	else
		connections(run, conn, sizeof(conn));
	struct ls_html_run page = { .attr = attr, .attr_why = attr ? NULL : why, .command_line = cmdline,
				    .connection = conn, .watched = watched };
	int err = ls_run_report_html(a->html, rr, run, ctx, &page);
	if (!err)
		fprintf(stderr, "latscope report: HTML report written to %s\n", a->html);
	ls_attribution_free(attr);
	free(attr_path);
	free(cmdline);
	return err;
}

/* The run's accept length for rules that depend on it: --accept-length, else the server's
 * own (as bench read it), else, for a file that does not say, estimated from its records. */
static double accept_len_of(const struct report_args *a, const struct ls_run *run, const struct ls_record_meta *meta)
{
	if (a->accept_len >= 0)
		return a->accept_len;
	if (meta->spec.has_avg)
		return meta->spec.avg_accept_len;
	return meta->percentile_metrics ? 0 : estimate_accept_len(run); /* a file of this version knows */
}

/* The profile as the run was read: --metric-percentiles, else the run's own percentiles. */
static int load_profile(const struct report_args *a, const struct ls_record_meta *meta, struct ls_profile *prof)
{
	const char *name = a->profile ? a->profile : meta->profile[0] ? meta->profile : "vllm";
	if (ls_profile_load(name, prof))
		return -1;
	if (a->percentiles)
		ls_percentiles_parse(a->percentiles, &prof->read);
	else if (!a->profile && meta->percentiles[0])
		ls_percentiles_parse(meta->percentiles, &prof->read);
	return 0;
}

static int one_profile(const struct report_args *a, struct ls_run *run, struct ls_record_meta *meta)
{
	struct ls_profile prof;
	if (load_profile(a, meta, &prof))
		return 2;
	double accept = accept_len_of(a, run, meta);
	struct ls_read_rules rules;
	int switched = ls_profile_read_rules(&prof, accept, &rules);
	const struct ls_goodput *goodput = a->has_goodput ? &a->goodput : &meta->goodput;
	struct ls_run_report rr;
	if (ls_run_report_compute(&rr, "report", run, &rules, goodput, meta->arrival[0] ? meta->arrival : NULL))
		return 1;
	if (a->accept_len >= 0) /* printed as the server's only when given on the command line */
		meta->spec = (struct ls_spec_stats){ .has_avg = a->accept_len > 0, .avg_accept_len = a->accept_len };
	struct ls_report_ctx ctx;
	ls_run_report_ctx(meta, &ctx); /* as bench labelled the run */
	ctx.profile = prof.name;
	ctx.profile_source = prof.source;
	ctx.profile_description = prof.description;
	ctx.record_path = a->path;
	if (a->has_pm)
		ctx.percentile_metrics = a->percentile_metrics;
	ctx.show_client_queue = prof.show_client_queue;
	ctx.interrupted = run->interrupted;
	ctx.layout = prof.layout;
	struct ls_peer_report peer = { .request_json = meta->request[0] ? meta->request : NULL };
	ctx.peer = &peer;
	if (a->n_paths > 1)
		printf("Records: %zu files of one run merged (%s ...; every stamp in rank 0's clock)\n", a->n_paths,
		       a->path);
	printf("Records: %s (%zu requests, %zu warmups; sent by profile %s, backend %s, arrival %s)\n", a->path,
	       run->n_requests - run->n_warmup, run->n_warmup, meta->profile[0] ? meta->profile : "?",
	       meta->backend[0] ? meta->backend : "?", meta->arrival[0] ? meta->arrival : "?");
	if (!meta->complete)
		printf("Run end: none in the file: the run was cut (killed, or still writing); the numbers cover "
		       "the %zu requests on disk\n", run->n_requests - run->n_warmup);
	if (switched)
		printf("Accept length %.2f (%s): %s reads ITL per token\n", accept,
		       a->accept_len >= 0 ? "--accept-length" : "estimated from the records' tokens per frame", prof.name);
	struct ls_wrap wrap;
	FILE *out = ls_wrap_open(&wrap, stdout);
	int rc = ls_run_report_print(out, &rr, run, &ctx, a->save) ? 1 : 0;
	ls_checks_print(out, &rr.checks);
	ls_wrap_close(&wrap);
	if (a->html && html_page(a, &rr, run, &ctx, meta))
		rc = 1;
	ls_run_report_free(&rr);
	return rc;
}

static int many_profiles(const struct report_args *a, struct ls_run *run, struct ls_record_meta *meta)
{
	struct ls_cmp_col cols[LS_CMP_MAX_PROFILES];
	struct ls_cmp_run one;
	memset(&one, 0, sizeof(one));
	int n = ls_cmp_parse_profiles(a->profiles, cols, LS_CMP_MAX_PROFILES);
	if (n <= 0)
		return 2;
	one.run = *run;
	one.meta = *meta;
	one.accept_len = a->accept_len >= 0 ? a->accept_len : estimate_accept_len(run);
	snprintf(one.record_path, sizeof(one.record_path), "%s", a->path);
	for (int i = 0; i < n; i++) {
		size_t len = strlen(one.profiles);
		snprintf(one.profiles + len, sizeof(one.profiles) - len, "%s%s", len ? ", " : "", cols[i].prof.name);
		cols[i].run = 0;
		if (a->percentiles)
			ls_percentiles_parse(a->percentiles, &cols[i].prof.read);
	}
	int rc = 0;
	if (ls_cmp_compute(&one, 1, cols, (size_t)n)) {
		fprintf(stderr, "latscope report: out of memory computing metrics\n");
		rc = 1;
	} else {
		struct ls_wrap wrap;
		FILE *out = a->markdown ? stdout : ls_wrap_open(&wrap, stdout);
		ls_cmp_print(out, &one, 1, cols, (size_t)n, a->markdown);
		if (!a->markdown)
			ls_wrap_close(&wrap);
		char *cmdline = a->html ? ls_html_command_line("latscope", a->argc, a->argv) : NULL;
		if (a->html && ls_html_write_compare(a->html, &one, 1, cols, (size_t)n, cmdline, LATSCOPE_VERSION))
			rc = 1;
		else if (a->html)
			fprintf(stderr, "latscope report: HTML report written to %s\n", a->html);
		free(cmdline);
	}
	ls_cmp_free(NULL, 0, cols, (size_t)n); /* the run is the caller's */
	return rc;
}

int cmd_report(int argc, char **argv)
{
	struct report_args a;
	int rc = parse_args(&a, argc, argv);
	if (rc)
		return rc < 0 ? 0 : rc;
	struct ls_run run;
	struct ls_record_meta meta;
	memset(&run, 0, sizeof(run));
	if (a.html && ls_html_check("--html", a.html))
		return 1;
	uint64_t t0 = ls_now_ns();
	if (ls_record_load_many(a.paths, a.n_paths, &run, &meta))
		return 1;
	if (a.n_paths > 1)
		fprintf(stderr, "latscope report: %zu files merged in %.1f ms\n", a.n_paths, (ls_now_ns() - t0) / 1e6);
	rc = a.profiles ? many_profiles(&a, &run, &meta) : one_profile(&a, &run, &meta);
	ls_run_free(&run);
	ls_record_meta_free(&meta);
	return rc;
}
