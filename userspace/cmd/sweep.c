/* sweep.c — `latscope sweep`: the capacity at an SLO, by every clock (docs/sweep.md). Runs one
 * whole `latscope bench` per point (cmd/sweep_run.c), over a list of rates or concurrencies or
 * searching for the largest one that meets the SLO, and reports each point under the three
 * clocks (scheduled, admitted, started) side by side: how much capacity a harness that starts
 * its clock after the concurrency slot overstates. The decisions are metrics/sweep_slo.h's, the
 * output report/sweep_report.h's; this file walks the points. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "commands.h"
#include "base/opts.h"
#include "base/outfile.h"
#include "cmd/sweep_int.h"
#include "config/profile.h"
#include "report/sweep_report.h"

#define MAX_POINTS 256 /* runs in one sweep, repeats included */

/* Exit codes beyond commands.h's 0/1/2. */
#define SWEEP_EXIT_NONE_MET 3 /* no point met the SLO under the scheduled clock */
#define SWEEP_EXIT_ALL_MET  4 /* every point met it: the capacity is above what was run */
#define SWEEP_EXIT_EARLY    5 /* stopped early (time budget, interrupt): the answer is a bracket */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: latscope sweep (--rates LIST | --concurrency LIST | --search rate|concurrency) [--slo SPEC]\n"
		"                      [sweep flags] [bench flags]\n"
		"\n"
		"Runs one whole `latscope bench` per point (each a saved run: DIR/point-K.jsonl, point-K.json,\n"
		"point-K.log) and reads every point under the three clocks a request's latency can start\n"
		"from: scheduled (the arrival said go), admitted (got a --max-concurrency slot), started\n"
		"(handed to the HTTP client, where vLLM and SGLang start theirs). With --slo it gives the\n"
		"capacity at the SLO per clock, and how much a started-clock harness overstates it.\n"
		"\n"
		"points:\n"
		"  --rates LIST           open loop: these --request-rate values, e.g. 2,4,8,16 (req/s)\n"
		"  --concurrency LIST     closed: these --max-concurrency values, e.g. 1,4,16 (users)\n"
		"  --search rate|concurrency\n"
		"                         search (needs --slo): geometric steps from --start by --factor up to\n"
		"                         every clock's first violation (down when the first point fails), then\n"
		"                         bisection of each clock's bracket to --precision\n"
		"  --start X              first point of the search [1]\n"
		"  --factor F             geometric step [2]\n"
		"  --min X, --max X       the search stays within [min, max] [rate: 0.1, 1024; concurrency: 1, 1024]\n"
		"  --precision P          bisect while (failed - met) > P x met [0.05]\n"
		"\n"
		"SLO:\n"
		"  --slo SPEC             e.g. \"ttft:p99<=500ms,itl:p99<=50ms,e2el:p90<=10s\": metric (ttft, itl,\n"
		"                         e2el, tpot), percentile, limit in us, ms (default) or s; each over the\n"
		"                         point's successful requests, under each clock\n"
		"  --profiles LIST        also read the points under these profiles' read rules (e.g.\n"
		"                         vllm,sglang,honest) and give each one's capacity per clock [the run's only]\n"
		"  --goodput-min F        also: at least this fraction of the measured requests meets every\n"
		"                         limit on its own (a failed request never does), e.g. 0.99 [not checked]\n"
		"\n"
		"each point:\n"
		"  --point-seconds S      rate points send rate x S requests (at least --min-requests) instead\n"
		"                         of bench's --num-prompts, so each point lasts about S seconds\n"
		"  --min-requests N       [50]\n"
		"  --warmup-frac F        the first F of each point's requests (by schedule) are not read [0.1]\n"
		"  --cooldown-frac F      nor the last F (the drain) [0.1]\n"
		"  --repeat N             run each point N times; the verdict reads the mean [1]\n"
		"  --no-oversat-stop      run over-saturated rate points to their end (by default a point whose\n"
		"                         requests finish below 80%% of its rate while their wait keeps growing\n"
		"                         is stopped, and fails the scheduled clock)\n"
		"\n"
		"the sweep:\n"
		"  --time-budget S        stop starting points (and stop a running one) past S seconds\n"
		"  --dir DIR              the points' runs [sweep-YYYYmmdd-HHMMSS]\n"
		"  --output FILE          the sweep as JSON: \"points\", \"capacity\" {scheduled, admitted, started}\n"
		"                         (null where no point met the SLO), rewritten whole after each point\n"
		"  --html FILE            a page: capacity per clock, and per SLO each clock's throughput-latency\n"
		"                         curve with the SLO's limit (inline SVG, no script)\n"
		"  -h, --help             this help\n"
		"\n"
		"Every other flag is a `latscope bench` flag, given to each point (latscope bench --help);\n"
		"sweep sets --request-rate (or --max-concurrency), --record, --save-result, --result-dir and\n"
		"--result-filename itself (and refuses --trace, --append-result and --harness). Under --rates,\n"
		"--max-concurrency C is the slot limit of every point: that is where the started clock hides\n"
		"the wait. Concurrency points are a closed loop (--arrival closed: each user sends when its\n"
		"last request ends) unless --arrival or --request-rate is given: then they are the slot limit\n"
		"under that arrival.\n"
		"\n"
		"exit: 0 done; 1 a point could not run (the server went away, bench failed): the points done are\n"
		"kept; 2 usage; 3 no point met the SLO (scheduled clock; admitted in a closed loop); 4 every point\n"
		"met it (raise --max);\n"
		"5 stopped early by --time-budget or a signal (the capacity is a bracket).\n"
		"\n"
		"example:\n"
		"  latscope sweep --search rate --start 4 --max 256 --slo 'ttft:p99<=200ms' --point-seconds 10 \\\n"
		"    --base-url http://127.0.0.1:8000 --random-input-len 128 --random-output-len 64 \\\n"
		"    --max-concurrency 16 --output sweep.json\n");
}

/* Flags sweep sets per point: a user's copy would fight it. */
static const char *const owned[] = { "--record", "--save-result", "--result-dir",
				     "--result-filename", "--append-result", "--trace" };

/* "1,2,4" into a->list. */
static int parse_list(struct sweep_args *a, const char *flag, const char *v)
{
	const char *p = v;
	a->n_list = 0;
	for (;;) {
		char *end;
		errno = 0;
		double x = strtod(p, &end);
		if (end == p || errno || !(x > 0) || isinf(x) || (a->concurrency && x != floor(x)) ||
		    a->n_list == SWEEP_MAX_LIST || (*end && *end != ',')) {
			fprintf(stderr, "latscope sweep: %s '%s': expected up to %d %s above 0, comma separated\n", flag, v,
				SWEEP_MAX_LIST, a->concurrency ? "whole numbers" : "numbers");
			return -EINVAL;
		}
		a->list[a->n_list++] = x;
		if (!*end)
			return 0;
		p = end + 1;
	}
}

/* --profiles vllm,sglang,honest: each must load now, not after the sweep's hour. */
static int parse_profiles(struct sweep_args *a, const char *v)
{
	if (!v || !*v || strlen(v) >= sizeof(a->profiles_buf)) {
		fprintf(stderr, "latscope sweep: --profiles needs a list of profiles, e.g. vllm,sglang,honest\n");
		return -EINVAL;
	}
	snprintf(a->profiles_buf, sizeof(a->profiles_buf), "%s", v);
	a->n_profiles = 0;
	char *save = NULL;
	for (char *t = strtok_r(a->profiles_buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		struct ls_profile prof;
		if (a->n_profiles == SWEEP_MAX_PROFILES) {
			fprintf(stderr, "latscope sweep: --profiles: at most %d\n", SWEEP_MAX_PROFILES);
			return -EINVAL;
		}
		if (ls_profile_load(t, &prof)) {
			fprintf(stderr, "latscope sweep: --profiles '%s': no such profile\n", t);
			return -EINVAL;
		}
		a->profiles[a->n_profiles++] = t;
	}
	return a->n_profiles ? 0 : -EINVAL;
}

static int num_arg(const char *flag, const char *v, double lo, double hi, double *out)
{
	if (v && !ls_opt_parse_double(v, lo, hi, out))
		return 0;
	fprintf(stderr, "latscope sweep: %s '%s': expected a number in [%g, %g]\n", flag, v ? v : "", lo, hi);
	return -EINVAL;
}

/* One sweep flag with value v. 1: taken; 0: not a sweep flag; -EINVAL: said why. */
static int sweep_flag(struct sweep_args *a, const char *f, const char *v)
{
	double d;
	if (!strcmp(f, "--rates") || !strcmp(f, "--concurrency")) {
		if (a->n_list || a->search)
			return fprintf(stderr, "latscope sweep: give one of --rates, --concurrency, --search\n"), -EINVAL;
		a->concurrency = f[2] == 'c';
		if (!v)
			return fprintf(stderr, "latscope sweep: %s needs a list, e.g. 1,2,4\n", f), -EINVAL;
		return parse_list(a, f, v) ? -EINVAL : 1;
	}
	if (!strcmp(f, "--search")) {
		if (a->n_list || !v || (strcmp(v, "rate") && strcmp(v, "concurrency")))
			return fprintf(stderr, "latscope sweep: --search '%s': expected rate or concurrency, and no "
				       "--rates/--concurrency list\n", v ? v : ""), -EINVAL;
		a->search = 1;
		a->concurrency = v[0] == 'c';
		return 1;
	}
	if (!strcmp(f, "--slo")) {
		char err[256];
		a->slo_text = v;
		if (v && !ls_slo_parse(v, &a->slo, err, sizeof(err)))
			return 1;
		fprintf(stderr, "latscope sweep: --slo %s\n", v ? err : "needs a value");
		return -EINVAL;
	}
	struct {
		const char *name;
		double lo, hi, *out;
	} nums[] = {
		{ "--start", 1e-6, 1e9, &a->s.start }, { "--factor", 1.01, 100, &a->s.factor },
		{ "--min", 1e-6, 1e9, &a->s.min }, { "--max", 1e-6, 1e9, &a->s.max },
		{ "--precision", 1e-4, 10, &a->s.precision }, { "--goodput-min", 0, 1, &a->slo.goodput_min },
		{ "--point-seconds", 0.1, 1e6, &a->point_s }, { "--warmup-frac", 0, 0.45, &a->warm },
		{ "--cooldown-frac", 0, 0.45, &a->cool }, { "--time-budget", 1, 1e7, &a->budget_s },
	};
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
		if (!strcmp(f, nums[i].name))
			return num_arg(f, v, nums[i].lo, nums[i].hi, nums[i].out) ? -EINVAL : 1;
	if (!strcmp(f, "--repeat") || !strcmp(f, "--min-requests")) {
		if (num_arg(f, v, 1, 1e6, &d) || d != floor(d))
			return fprintf(stderr, "latscope sweep: %s: a whole number\n", f), -EINVAL;
		*(f[2] == 'r' ? &a->repeat : &a->min_requests) = (unsigned)d;
		return 1;
	}
	if (!strcmp(f, "--profiles"))
		return parse_profiles(a, v) ? -EINVAL : 1;
	if (!strcmp(f, "--dir") || !strcmp(f, "--output") || !strcmp(f, "--html")) {
		if (!v || !*v)
			return fprintf(stderr, "latscope sweep: %s needs a path\n", f), -EINVAL;
		*(f[2] == 'd' ? &a->dir : f[2] == 'o' ? &a->output : &a->html) = v;
		return 1;
	}
	return 0;
}

/* A bench flag: refused when sweep owns it, else kept for every point. */
static int bench_flag(struct sweep_args *a, const char *arg)
{
	size_t n = strcspn(arg, "=");
	for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++)
		if (strlen(owned[i]) == n && !strncmp(arg, owned[i], n)) {
			fprintf(stderr, "latscope sweep: %.*s is set by sweep for each point; leave it out\n", (int)n, arg);
			return -EINVAL;
		}
	if (n == strlen("--harness") && !strncmp(arg, "--harness", n)) {
		fprintf(stderr, "latscope sweep: --harness: each point is given vLLM's flag names; for SGLang's reading "
			"give --rules sglang\n");
		return -EINVAL;
	}
	if (n == strlen("--ready-check-timeout-sec") && !strncmp(arg, "--ready-check-timeout-sec", n))
		a->user_ready_timeout = 1;
	if (n == strlen("--max-concurrency") && !strncmp(arg, "--max-concurrency", n))
		a->user_max_conc = 1;
	if (n == strlen("--num-prompts") && !strncmp(arg, "--num-prompts", n))
		a->user_num_prompts = 1;
	if (n == strlen("--request-rate") && !strncmp(arg, "--request-rate", n))
		a->user_rate = 1;
	if (n == strlen("--arrival") && !strncmp(arg, "--arrival", n))
		a->user_arrival = 1;
	a->bench[a->n_bench++] = (char *)arg;
	return 0;
}

/* A flag's name and value: "--name=value", or "--name" and the next argument when it is not a
 * flag itself. *used: arguments the value took (0 or 1). */
static const char *split_flag(int argc, char **argv, int i, char *name, size_t cap, int *used)
{
	const char *eq = strchr(argv[i], '=');
	*used = 0;
	if (eq) {
		snprintf(name, cap, "%.*s", (int)(eq - argv[i]), argv[i]);
		return eq + 1;
	}
	snprintf(name, cap, "%s", argv[i]);
	if (i + 1 < argc && strncmp(argv[i + 1], "--", 2)) {
		*used = 1;
		return argv[i + 1];
	}
	return NULL;
}

/* The flags that do not go together, and the defaults that follow the mode. */
static int check_args(struct sweep_args *a)
{
	const char *why = NULL;
	if (!a->search && !a->n_list)
		why = "give the points: --rates LIST, --concurrency LIST or --search rate|concurrency";
	else if (a->search && !a->slo.n && a->slo.goodput_min < 0)
		why = "--search needs an SLO to search for (--slo, --goodput-min)";
	else if (!a->concurrency && a->user_rate)
		why = "--request-rate is what a rate sweep sets per point; leave it out";
	else if (a->concurrency && a->user_max_conc)
		why = "--max-concurrency is what a concurrency sweep sets per point; leave it out";
	else if (a->concurrency && a->point_s > 0)
		why = "--point-seconds is for rate points (a concurrency point sends bench's --num-prompts)";
	else if (a->point_s > 0 && a->user_num_prompts)
		why = "--point-seconds sets each point's --num-prompts; give one of them";
	if (!a->s.min)
		a->s.min = a->concurrency ? 1 : 0.1;
	if (!why && (a->s.min > a->s.max || a->s.start < a->s.min || a->s.start > a->s.max))
		why = "--start must lie within [--min, --max]";
	if (why) {
		fprintf(stderr, "latscope sweep: %s (latscope sweep --help)\n", why);
		return -EINVAL;
	}
	a->s.integer = a->concurrency;
	return 0;
}

/* 0, 2 (usage, said), or -1 for --help (printed). */
static int parse_args(struct sweep_args *a, int argc, char **argv)
{
	*a = (struct sweep_args){ .s = { .start = 1, .factor = 2, .max = 1024, .precision = 0.05 },
				  .slo = { .goodput_min = -1 }, .repeat = 1, .min_requests = 50,
				  .warm = 0.1, .cool = 0.1, .oversat_stop = 1 };
	a->bench = calloc((size_t)argc + 1, sizeof(*a->bench));
	if (!a->bench)
		return fprintf(stderr, "latscope sweep: out of memory\n"), 1;
	for (int i = 1; i < argc; i++) {
		char name[64];
		int used;
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return -1;
		}
		if (!strcmp(argv[i], "--no-oversat-stop")) {
			a->oversat_stop = 0;
			continue;
		}
		const char *v = split_flag(argc, argv, i, name, sizeof(name), &used);
		int rc = sweep_flag(a, name, v);
		if (rc < 0)
			return 2;
		if (rc > 0) {
			i += used;
			continue;
		}
		if (bench_flag(a, argv[i]))
			return 2;
	}
	return check_args(a) ? 2 : 0;
}

struct sweep {
	struct sweep_args     a;
	struct ls_sweep_point pts[MAX_POINTS];
	size_t                n;
	struct ls_sweep_obs   obs[MAX_POINTS];
	struct ls_sweep_summary sum;
	struct ls_sweep_desc  desc;
	double                start_s;
	char                  dir[256];
	char                  stop[512];  /* why the sweep stopped early, "" when it did not */
	int                   rc;         /* 1 or SWEEP_EXIT_EARLY once stopped early */
	const char           *profile_names[SWEEP_MAX_PROFILES];
	struct ls_sweep_summary profile_sums[SWEEP_MAX_PROFILES];
};

/* The distinct x run so far with their verdicts, into sw->obs; how many. */
static size_t sweep_obs(struct sweep *sw)
{
	ls_sweep_summarise(sw->pts, sw->n, &sw->a.slo, sw->obs, &sw->sum);
	return sw->sum.n_x;
}

/* The next x: the list's next, or the search's. 0 when done. */
static int next_x(struct sweep *sw, size_t *list_i, double *x)
{
	if (!sw->a.search) {
		if (*list_i >= sw->a.n_list)
			return 0;
		*x = sw->a.list[(*list_i)++];
		return 1;
	}
	size_t m = sweep_obs(sw);
	return ls_sweep_next(&sw->a.s, sw->obs, m, x);
}

/* Points left after this one, at most (for the ETA). */
static size_t points_left(struct sweep *sw, size_t list_i)
{
	if (!sw->a.search)
		return (sw->a.n_list - list_i) * sw->a.repeat;
	return ls_sweep_points_left(&sw->a.s, sw->obs, sweep_obs(sw)) * sw->a.repeat;
}

static double mean_wall(const struct sweep *sw)
{
	double sum = 0;
	for (size_t i = 0; i < sw->n; i++)
		sum += sw->pts[i].wall_s;
	return sw->n ? sum / (double)sw->n : 0;
}

/* The --output file, whole: rewritten after every point so a sweep cut short keeps each one. */
static int write_output(struct sweep *sw)
{
	if (!sw->a.output)
		return 0;
	sweep_obs(sw);
	sw->desc.stop_reason = sw->stop[0] ? sw->stop : NULL;
	cJSON *root = ls_sweep_json(&sw->desc, sw->pts, sw->n, &sw->sum);
	char *text = root ? cJSON_Print(root) : NULL;
	cJSON_Delete(root);
	struct ls_outfile f;
	int err = text ? ls_outfile_open(&f, "--output", sw->a.output) : -ENOMEM;
	if (!text)
		fprintf(stderr, "latscope sweep: out of memory writing %s\n", sw->a.output);
	if (!err) {
		fputs(text, f.f);
		fputc('\n', f.f);
		err = ls_outfile_commit(&f);
	}
	free(text);
	return err;
}

/* Stops the sweep with a reason; rc is the exit code it will end with. */
static void stop_sweep(struct sweep *sw, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void stop_sweep(struct sweep *sw, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sw->stop, sizeof(sw->stop), fmt, ap);
	va_end(ap);
	sw->rc = rc;
}

/* What one point's end says about going on. */
static void after_point(struct sweep *sw, const struct ls_sweep_point *p, int server_gone)
{
	size_t k = sw->n - 1;
	if (server_gone)
		stop_sweep(sw, 1, "the server went away during point %zu (%s); the points before it stand", k, p->log);
	else if (!strcmp(p->stopped, "budget"))
		stop_sweep(sw, SWEEP_EXIT_EARLY, "--time-budget %.0f s ran out during point %zu", sw->a.budget_s, k);
	else if (!strcmp(p->stopped, "interrupted"))
		stop_sweep(sw, SWEEP_EXIT_EARLY, "interrupted during point %zu", k);
	else if (!p->stopped[0] && p->bench_rc != 0 && p->bench_rc != LS_EXIT_NONE_OK)
		stop_sweep(sw, 1, "bench exited %d at point %zu (its output: %s)", p->bench_rc, k, p->log);
}

/* Runs one point (x, repeat r); 0 to go on, 1 when the sweep stops. */
static int one_point(struct sweep *sw, double x, unsigned r, size_t left)
{
	double now = sweep_now_s(), each = mean_wall(sw);
	if (sw->a.budget_s > 0 && sw->n && now - sw->start_s + each > sw->a.budget_s) {
		stop_sweep(sw, SWEEP_EXIT_EARLY, "--time-budget %.0f s leaves no room for another point (%.0f s each)",
			   sw->a.budget_s, each);
		return 1;
	}
	fprintf(stderr, "sweep: point %zu: %s %.6g %s, repeat %u/%u; %.0f s so far", sw->n, sw->desc.mode, x,
		sw->desc.unit, r + 1, sw->a.repeat, now - sw->start_s);
	if (sw->n)
		fprintf(stderr, ", ETA ~%.0f s (%zu more points at most, %.0f s each)", each * (double)(left + 1), left, each);
	fputc('\n', stderr);
	struct sweep_job job = { .x = x, .index = sw->n, .first = !sw->n, .deadline_s = sw->a.budget_s };
	struct ls_sweep_point *p = &sw->pts[sw->n];
	int gone = 0;
	if (sweep_run_point(&sw->a, &job, sw->start_s, p, &gone)) {
		/* bench's usage error is the sweep's: a flag it passed on was wrong. */
		stop_sweep(sw, p->bench_rc == 2 ? 2 : 1, "point %zu (%s %.6g) could not run; see %s", sw->n,
			   sw->desc.mode, x, p->log);
		return 1;
	}
	p->repeat = r;
	sw->n++;
	if (sw->n == 1) {
		sw->desc.run_profile = p->rules;
		ls_sweep_print_header(stdout, &sw->desc);
	}
	ls_sweep_print_point(stdout, &sw->desc, p, sw->n - 1);
	fflush(stdout);
	after_point(sw, p, gone);
	write_output(sw);
	return sw->stop[0] != 0;
}

static int run_points(struct sweep *sw)
{
	size_t list_i = 0;
	double x;
	while (next_x(sw, &list_i, &x)) {
		for (unsigned r = 0; r < sw->a.repeat; r++) {
			if (sw->n == MAX_POINTS) {
				stop_sweep(sw, SWEEP_EXIT_EARLY, "%d runs is the most one sweep holds", MAX_POINTS);
				return 0;
			}
			if (sweep_interrupted) {
				stop_sweep(sw, SWEEP_EXIT_EARLY, "interrupted");
				return 0;
			}
			if (one_point(sw, x, r, points_left(sw, list_i) + (sw->a.repeat - r - 1)))
				return 0;
		}
	}
	return 0;
}

static void on_signal(int sig)
{
	(void)sig;
	sweep_interrupted = 1;
}

/* --profiles: the points read again under each; a profile that cannot read them is left out
 * with its reason said (the sweep's own answer stands). */
static void read_profiles(struct sweep *sw)
{
	struct ls_sweep_point *tmp = sw->a.n_profiles ? malloc(sw->n * sizeof(*tmp)) : NULL;
	struct ls_sweep_obs *obs = tmp ? malloc(sw->n * sizeof(*obs)) : NULL;
	size_t k = 0;
	if (sw->a.n_profiles && !obs)
		fprintf(stderr, "latscope sweep: out of memory reading the points under --profiles\n");
	for (size_t i = 0; obs && i < sw->a.n_profiles; i++) {
		if (sweep_read_as(&sw->a, sw->a.profiles[i], sw->pts, sw->n, tmp))
			continue;
		ls_sweep_summarise(tmp, sw->n, &sw->a.slo, obs, &sw->profile_sums[k]);
		sw->profile_names[k++] = sw->a.profiles[i];
	}
	sw->desc.n_profiles = k;
	sw->desc.profile_names = sw->profile_names;
	sw->desc.profile_sums = sw->profile_sums;
	free(obs);
	free(tmp);
}

/* The points' directory: --dir, else sweep-<date>; created. */
static int make_dir(struct sweep *sw)
{
	if (sw->a.dir) {
		snprintf(sw->dir, sizeof(sw->dir), "%s", sw->a.dir);
	} else {
		time_t t = time(NULL);
		struct tm tm;
		localtime_r(&t, &tm);
		strftime(sw->dir, sizeof(sw->dir), "sweep-%Y%m%d-%H%M%S", &tm);
	}
	if (mkdir(sw->dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "latscope sweep: --dir %s: cannot create it: %s\n", sw->dir, strerror(errno));
		return -errno;
	}
	sw->a.dir = sw->dir;
	return 0;
}

/* The exit code the answer gives, when nothing stopped the sweep early. */
static int verdict_rc(const struct sweep *sw)
{
	/* A closed loop has no schedule (every request is due at the start): its users' clock is
	 * admitted. */
	int c = sw->a.concurrency && sw->n && sw->pts[0].target_rate <= 0 ? LS_ORIGIN_ADMITTED : LS_ORIGIN_SCHEDULED;
	if (sw->rc)
		return sw->rc;
	if (!sw->a.slo_text && sw->a.slo.goodput_min < 0)
		return 0; /* a list without an SLO: the table is the answer */
	switch (ls_sweep_verdict_of(&sw->sum, (enum ls_origin)c)) {
	case LS_SWEEP_NONE_MET:
		return SWEEP_EXIT_NONE_MET;
	case LS_SWEEP_ALL_MET:
		return SWEEP_EXIT_ALL_MET;
	case LS_SWEEP_FOUND:
		break;
	}
	return 0;
}

int cmd_sweep(int argc, char **argv)
{
	struct sweep *sw = calloc(1, sizeof(*sw));
	if (!sw)
		return fprintf(stderr, "latscope sweep: out of memory\n"), 1;
	int rc = parse_args(&sw->a, argc, argv);
	if (rc) {
		free(sw->a.bench);
		free(sw);
		return rc < 0 ? 0 : rc;
	}
	if (make_dir(sw) || (sw->a.output && ls_outfile_check("--output", sw->a.output, 1)) ||
	    (sw->a.html && ls_outfile_check("--html", sw->a.html, 1))) {
		free(sw->a.bench);
		free(sw);
		return 1;
	}
	sw->desc = (struct ls_sweep_desc){ .mode = sw->a.concurrency ? "concurrency" : "rate",
					   .unit = sw->a.concurrency ? "users" : "req/s", .slo_text = sw->a.slo_text,
					   .dir = sw->dir, .slo = &sw->a.slo, .search = sw->a.search,
					   .precision = sw->a.s.precision, .repeat = sw->a.repeat,
					   .warmup_frac = sw->a.warm, .cooldown_frac = sw->a.cool };
	struct sigaction sa = { .sa_handler = on_signal }, old_int, old_term;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	sw->start_s = sweep_now_s();
	run_points(sw);
	sweep_obs(sw);
	if (sw->n) {
		sw->desc.run_profile = sw->pts[0].rules;
		read_profiles(sw);
	}
	sw->desc.stop_reason = sw->stop[0] ? sw->stop : NULL;
	if (sw->n && (sw->a.slo_text || sw->a.slo.goodput_min >= 0))
		ls_sweep_print_summary(stdout, &sw->desc, sw->pts, sw->n, &sw->sum);
	else if (sw->stop[0])
		printf("the sweep stopped: %s\n", sw->stop);
	int werr = write_output(sw);
	if (sw->a.html && sw->n && ls_sweep_html_write(sw->a.html, &sw->desc, sw->pts, sw->n, &sw->sum))
		werr = -EIO;
	rc = werr && !sw->rc ? 1 : verdict_rc(sw);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	free(sw->a.bench);
	free(sw);
	return rc;
}
