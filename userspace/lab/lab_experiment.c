/* lab/lab_experiment.c — TCP and TLS in TTFT. With the sim's step time fixed and one request in
 * flight, a request on a reused connection waits one RTT plus the server's time; a request on a
 * fresh connection adds the TCP handshake (1 RTT), plus the TLS handshake (1 RTT for TLS 1.3,
 * 2 for TLS 1.2), plus time that is not round trips: the handshake's CPU (as large as the RTT
 * here, docs/delay-line.md) and the wake-ups between its flights. That part does not
 * change with the RTT, so the runs are made at two RTTs and the round trips are the slope:
 * (extra(RTT2) - extra(RTT)) / (RTT2 - RTT). The part that is not round trips is what is left,
 * extra(RTT) - slope x RTT; of it, the handshake CPU is measured directly (bench's rusage plus
 * the sim's schedstat, per-request minus reuse, per connection). At RTT -> 0 the wake-ups
 * vanish too (the machine never idles), which is why the low-RTT point is not used. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lab/lab.h"

#define STEP_MS      "2"
#define TOL_MS       0.2   /* per-request extra vs k RTTs, at the median */
#define RTT_TOL_US   100.0

enum { AT = 0, AT2 = 1 };  /* --rtt-us, --second-rtt-us */
enum { REUSE = 0, PER_REQUEST = 1 };

static const struct {
	const char *name, *tag, *tls_max;
	int tls, rtts; /* round trips a fresh connection adds */
} configs[] = {
	{ "plain", "plain", NULL, 0, 1 },
	{ "TLS 1.3", "tls13", "1.3", 1, 2 },
	{ "TLS 1.2", "tls12", "1.2", 1, 3 },
};
#define N_CONFIGS (sizeof(configs) / sizeof(configs[0]))

struct result {
	struct lab_rtt rtt[2];
	struct lab_run_fig fig[2][N_CONFIGS][2]; /* [AT/AT2][config][REUSE/PER_REQUEST] */
	double cpu_s[2][N_CONFIGS][2];           /* bench + sim CPU of the run */
};

#define MAX_ROUNDS 5

struct result_files {
	char path[2][N_CONFIGS][2][MAX_ROUNDS][200]; /* the record file of each round */
};

static const char *rtt_tag(int r)
{
	return r == AT ? "rtt" : "rtt2";
}

static int run_one(struct lab_ctx *c, pid_t sim, int r, size_t k, int mode, int round, int requests,
		   struct result *res, struct result_files *files)
{
	const struct lab_opts *o = c->o;
	char out_path[200];
	char *record = files->path[r][k][mode][round];
	const char *dir = o->keep_dir ? o->keep_dir : c->tmp_dir;
	const char *mode_name = mode == REUSE ? "reuse" : "per-request";
	snprintf(record, sizeof(files->path[0][0][0][0]), "%s/rec-%s-%s-%s-%d.jsonl", dir, rtt_tag(r),
		 configs[k].tag, mode_name, round);
	snprintf(out_path, sizeof(out_path), "%s/bench-%s-%s-%s-%d.txt", dir, rtt_tag(r), configs[k].tag,
		 mode_name, round);
	unlink(record);
	struct lab_argv f = { .n = 0 };
	lab_argv_add(&f, "--base-url");
	lab_argv_addf(&f, "%s://%s:%d", configs[k].tls ? "https" : "http", LAB_SERVER_ADDR, o->port);
	if (configs[k].tls)
		lab_argv_add(&f, "--insecure");
	/* Token ids below 256 are in any tokenizer the sim has: no vocabulary probing, which would
	 * cost a dozen requests (at 10 ms RTT) before every run. */
	lab_argv_add_words(&f, "--backend openai --dataset-name random --random-input-len 32 "
			       "--random-vocab-size 256 --random-output-len 2 --ignore-eos --max-concurrency 1 "
			       "--request-rate inf --num-warmups 1 --ready-check-timeout-sec 20 --disable-tqdm "
			       "--probes off");
	lab_argv_add(&f, "--num-prompts");
	lab_argv_addf(&f, "%d", requests);
	lab_argv_add(&f, "--seed");
	lab_argv_addf(&f, "%d", round + 1);
	lab_argv_add(&f, "--connection");
	lab_argv_add(&f, mode_name);
	lab_argv_add(&f, "--record");
	lab_argv_add(&f, record);
	int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	double sim0 = lab_proc_cpu_s(sim), bench_cpu = 0;
	if (f.overflow)
		fprintf(stderr, "lab: internal: too many bench flags\n");
	int rc = f.overflow || fd < 0 ? -1 : lab_bench_run(c, f.v, f.n, fd, NULL, NULL, &bench_cpu);
	double sim1 = lab_proc_cpu_s(sim);
	if (fd >= 0)
		close(fd);
	lab_argv_free(&f);
	if (rc != 0) {
		if (!lab_interrupted)
			fprintf(stderr, "lab: bench (%s, %s, RTT %s) exited %d; its output: %s\n", configs[k].name,
				mode_name, r == AT ? "1" : "2", rc, out_path);
		return -1;
	}
	res->cpu_s[r][k][mode] += bench_cpu + (sim0 >= 0 && sim1 >= sim0 ? sim1 - sim0 : 0);
	return 0;
}

static int run_all(struct lab_ctx *c, struct result *res, struct result_files *files)
{
	const struct lab_opts *o = c->o;
	uint64_t rtt_ns[2] = { o->rtt_ns, (uint64_t)(o->second_rtt_us * 1e3) };
	for (int r = 0; r < 2; r++) {
		lab_delay_set_rtt(&c->delay, rtt_ns[r]);
		lab_sleep_ms(5); /* packets already held keep their old delay */
		if (lab_ping(&c->ns, 100, &res->rtt[r]) < 0)
			return -1;
	}
	/* The four cells of a configuration (two RTTs x reuse / per-request) take turns in rounds:
	 * a burst of the neighbours' load then lands in all four, and cancels in the slope. */
	int rounds = o->requests >= 10 * MAX_ROUNDS ? MAX_ROUNDS : o->requests >= 20 ? 2 : 1;
	for (size_t k = 0; k < N_CONFIGS && !lab_interrupted; k++) {
		pid_t sim = lab_sim_start(c, configs[k].tls, configs[k].tls_max, STEP_MS, configs[k].tag);
		if (sim < 0)
			return -1;
		int rc = 0;
		for (int round = 0; round < rounds && !rc; round++) {
			int n = o->requests / rounds + (round == rounds - 1 ? o->requests % rounds : 0);
			for (int r = 0; r < 2 && !rc; r++) {
				lab_delay_set_rtt(&c->delay, rtt_ns[r]);
				for (int mode = REUSE; mode <= PER_REQUEST && !rc && !lab_interrupted; mode++)
					rc = run_one(c, sim, r, k, mode, round, n, res, files);
			}
		}
		lab_sim_stop(c, sim);
		for (int r = 0; r < 2 && !rc; r++) {
			for (int mode = 0; mode < 2 && !rc; mode++) {
				const char *paths[MAX_ROUNDS];
				for (int round = 0; round < rounds; round++)
					paths[round] = files->path[r][k][mode][round];
				rc = lab_records_read_many(paths, (size_t)rounds, &res->fig[r][k][mode]);
			}
		}
		if (rc < 0)
			return -1;
	}
	lab_delay_set_rtt(&c->delay, o->rtt_ns);
	return lab_interrupted ? -1 : 0;
}

struct derived {
	double extra[2];      /* per-request TTFT - reuse TTFT, ms, [AT/AT2] */
	double rtts;          /* round trips in the extra: the slope between the two RTTs */
	double connect_rtts, tls_rtts;
	double not_rtt_ms;    /* extra - slope x RTT: what a fresh connection costs besides RTTs */
	double cpu_ms;        /* of which handshake CPU (client + server), measured */
	double off_ms;        /* extra(RTT) - not_rtt - expected x RTT = (slope - expected) x RTT */
	int reuse_ok, ok;
};

static void derive(const struct result *res, size_t k, struct derived *d)
{
	double rtt = res->rtt[AT].median_us / 1e3;
	double drtt = (res->rtt[AT2].median_us - res->rtt[AT].median_us) / 1e3;
	const struct lab_run_fig *a = res->fig[AT][k], *b = res->fig[AT2][k];
	for (int r = 0; r < 2; r++)
		d->extra[r] = res->fig[r][k][PER_REQUEST].ttft_ms - res->fig[r][k][REUSE].ttft_ms;
	d->rtts = drtt > 0 ? (d->extra[AT2] - d->extra[AT]) / drtt : 0;
	d->connect_rtts = drtt > 0 ? (b[PER_REQUEST].connect_ms - a[PER_REQUEST].connect_ms) / drtt : 0;
	d->tls_rtts = drtt > 0 ? (b[PER_REQUEST].tls_ms - a[PER_REQUEST].tls_ms) / drtt : 0;
	d->not_rtt_ms = d->extra[AT] - d->rtts * rtt;
	d->off_ms = d->extra[AT] - d->not_rtt_ms - configs[k].rtts * rtt;
	double cpu = 0;
	int n = 0;
	for (int r = 0; r < 2; r++) {
		int reqs = res->fig[r][k][PER_REQUEST].n;
		if (reqs > 0) {
			cpu += (res->cpu_s[r][k][PER_REQUEST] - res->cpu_s[r][k][REUSE]) * 1e3 / reqs;
			n++;
		}
	}
	d->cpu_ms = n && cpu > 0 ? cpu / n : 0; /* a TCP connect's is within the runs' noise: >= 0 */
	/* reuse: one connection for the whole run, and no connect/TLS on any request after it */
	d->reuse_ok = 1;
	for (int r = 0; r < 2; r++)
		d->reuse_ok &= res->fig[r][k][REUSE].reused_with_setup == 0 &&
				res->fig[r][k][REUSE].new_conns <= 1 && res->fig[r][k][REUSE].n > 0;
	d->ok = fabs(d->off_ms) <= TOL_MS && d->reuse_ok && a[PER_REQUEST].failed == 0 && a[REUSE].failed == 0 &&
		a[PER_REQUEST].n > 0 && a[PER_REQUEST].new_conns == a[PER_REQUEST].n;
}

static void print_table(const struct lab_opts *o, const struct result *res, const struct derived *d,
			int rtt_ok)
{
	double rtt = res->rtt[AT].median_us / 1e3, rtt2 = res->rtt[AT2].median_us / 1e3;
	printf("TCP and TLS in TTFT at RTT %.2f ms: delivered %.3f ms (median; p99 %.3f; %s) %s; second RTT "
	       "%.3f ms for the slope; sim step %s ms fixed; %d requests per row, one in flight\n\n",
	       (double)o->rtt_ns / 1e6, rtt, res->rtt[AT].p99_us / 1e3,
	       res->rtt[AT].kernel ? "kernel RTT samples" : "connect() times", rtt_ok ? "ok" : "OFF TARGET",
	       rtt2, STEP_MS, o->requests);
	printf("%-8s %-12s %8s %15s %15s %15s %9s %7s  %s\n", "config", "connection", "TTFT p50", "vs reuse",
	       "connect p50", "TLS hs p50", "not RTT", "hs CPU", "check");
	printf("%-8s %-12s %8s %15s %15s %15s %9s %7s\n", "", "", "ms", "ms (RTTs)", "ms (RTTs)", "ms (RTTs)",
	       "ms", "ms");
	for (size_t k = 0; k < N_CONFIGS; k++) {
		const struct lab_run_fig *reuse = &res->fig[AT][k][REUSE], *per = &res->fig[AT][k][PER_REQUEST];
		const char *zero = reuse->reused_with_setup ? "NOT ZERO" : "0 after 1st";
		printf("%-8s %-12s %8.2f %15s %15s %15s %9s %7s  %s\n", configs[k].name, "reuse", reuse->ttft_ms,
		       "-", zero, configs[k].tls ? zero : "-", "-", "-",
		       d[k].reuse_ok ? "ok" : "FAIL: setup on reused connections");
		char vs[32], conn[32], tls[32], rest[16], cpu[16], check[64];
		snprintf(vs, sizeof(vs), "%+.2f (%.1f)", d[k].extra[AT], d[k].rtts);
		snprintf(conn, sizeof(conn), "%.2f (%.1f)", per->connect_ms, d[k].connect_rtts);
		if (configs[k].tls)
			snprintf(tls, sizeof(tls), "%.2f (%.1f)", per->tls_ms, d[k].tls_rtts);
		else
			snprintf(tls, sizeof(tls), "-");
		snprintf(rest, sizeof(rest), "%.2f", d[k].not_rtt_ms);
		snprintf(cpu, sizeof(cpu), "%.2f", d[k].cpu_ms);
		snprintf(check, sizeof(check), "%s: %d RTT expected, %+.2f ms off", d[k].ok ? "ok" : "FAIL",
			 configs[k].rtts, d[k].off_ms);
		printf("%-8s %-12s %8.2f %15s %15s %15s %9s %7s  %s\n", "", "per-request", per->ttft_ms, vs, conn,
		       tls, rest, cpu, check);
	}
	printf("\nvs reuse: per-request TTFT minus reuse TTFT (medians). RTTs: round trips in it, the slope "
	       "between RTT %.3f and %.3f ms. not RTT: the rest (handshake CPU + wake-ups between flights); "
	       "hs CPU: CPU per fresh connection, bench + sim, measured. Check: the extra minus the part "
	       "that is not RTT is 1 RTT (plain), 2 (TLS 1.3), 3 (TLS 1.2), within %.1f ms.\n",
	       rtt, rtt2, TOL_MS);
}

static void write_json(const char *path, const struct lab_opts *o, const struct result *res,
		       const struct derived *d, int rtt_ok, int all_ok)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddNumberToObject(root, "rtt_target_us", (double)o->rtt_ns / 1e3);
	cJSON_AddNumberToObject(root, "rtt_us", res->rtt[AT].median_us);
	cJSON_AddNumberToObject(root, "rtt_p99_us", res->rtt[AT].p99_us);
	cJSON_AddNumberToObject(root, "rtt_connect_us", res->rtt[AT].connect_median_us);
	cJSON_AddNumberToObject(root, "second_rtt_us", res->rtt[AT2].median_us);
	cJSON_AddBoolToObject(root, "rtt_ok", rtt_ok);
	cJSON_AddNumberToObject(root, "requests", o->requests);
	cJSON_AddNumberToObject(root, "step_ms", atof(STEP_MS));
	cJSON *arr = cJSON_AddArrayToObject(root, "configs");
	for (size_t k = 0; arr && k < N_CONFIGS; k++) {
		cJSON *c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "name", configs[k].name);
		cJSON_AddNumberToObject(c, "expected_rtts", configs[k].rtts);
		for (int r = 0; r < 2; r++) {
			cJSON *at = cJSON_AddObjectToObject(c, r == AT ? "rtt" : "second_rtt");
			for (int mode = 0; at && mode < 2; mode++) {
				const struct lab_run_fig *f = &res->fig[r][k][mode];
				cJSON *m = cJSON_AddObjectToObject(at, mode == REUSE ? "reuse" : "per_request");
				cJSON_AddNumberToObject(m, "n", f->n);
				cJSON_AddNumberToObject(m, "failed", f->failed);
				cJSON_AddNumberToObject(m, "new_connections", f->new_conns);
				cJSON_AddNumberToObject(m, "reused_with_setup", f->reused_with_setup);
				cJSON_AddNumberToObject(m, "ttft_ms", f->ttft_ms);
				cJSON_AddNumberToObject(m, "connect_ms", f->connect_ms);
				cJSON_AddNumberToObject(m, "tls_ms", f->tls_ms);
				cJSON_AddNumberToObject(m, "cpu_ms", res->cpu_s[r][k][mode] * 1e3);
			}
		}
		cJSON_AddNumberToObject(c, "extra_ms", d[k].extra[AT]);
		cJSON_AddNumberToObject(c, "extra2_ms", d[k].extra[AT2]);
		cJSON_AddNumberToObject(c, "not_rtt_ms", d[k].not_rtt_ms);
		cJSON_AddNumberToObject(c, "handshake_cpu_ms", d[k].cpu_ms);
		cJSON_AddNumberToObject(c, "rtts", d[k].rtts);
		cJSON_AddNumberToObject(c, "connect_rtts", d[k].connect_rtts);
		cJSON_AddNumberToObject(c, "tls_rtts", d[k].tls_rtts);
		cJSON_AddNumberToObject(c, "off_ms", d[k].off_ms);
		cJSON_AddBoolToObject(c, "reuse_ok", d[k].reuse_ok);
		cJSON_AddBoolToObject(c, "ok", d[k].ok);
		cJSON_AddItemToArray(arr, c);
	}
	cJSON_AddBoolToObject(root, "ok", all_ok);
	char *text = cJSON_Print(root);
	FILE *f = text ? fopen(path, "we") : NULL;
	int failed = !f || fprintf(f, "%s\n", text) < 0;
	if (f && fclose(f)) /* a full disk shows up here, not at fprintf */
		failed = 1;
	if (failed)
		fprintf(stderr, "lab: cannot write --json %s: %s\n", path, text ? strerror(errno) : "out of memory");
	free(text);
	cJSON_Delete(root);
}

int lab_experiment(struct lab_ctx *c)
{
	const struct lab_opts *o = c->o;
	struct result *res = calloc(1, sizeof(*res));
	if (!res) {
		fprintf(stderr, "lab: out of memory\n");
		return 1;
	}
	int rc = 1;
	if (o->keep_dir && mkdir(o->keep_dir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "lab: --keep %s: %s\n", o->keep_dir, strerror(errno));
		free(res);
		return 1;
	}
	fprintf(stderr, "lab: experiment: %zu configs x reuse/per-request x %d requests, at RTT %.0f us "
		"and %.0f us\n", N_CONFIGS, o->requests, (double)o->rtt_ns / 1e3, o->second_rtt_us);
	/* bench and sim inherit a higher priority than the neighbours' jobs: on a shared 2-core
	 * machine their scheduling delays would otherwise land in the medians as "RTTs". */
	errno = 0;
	int nice_was = getpriority(PRIO_PROCESS, 0);
	int reniced = errno == 0 && setpriority(PRIO_PROCESS, 0, -10) == 0;
	struct result_files *files = calloc(1, sizeof(*files));
	int ran = files ? run_all(c, res, files) : -1;
	free(files);
	if (reniced)
		setpriority(PRIO_PROCESS, 0, nice_was);
	if (ran < 0)
		goto out;
	struct derived d[N_CONFIGS];
	memset(d, 0, sizeof(d));
	int rtt_ok = fabs(res->rtt[AT].median_us - (double)o->rtt_ns / 1e3) <= RTT_TOL_US;
	int all_ok = rtt_ok;
	for (size_t k = 0; k < N_CONFIGS; k++) {
		derive(res, k, &d[k]);
		all_ok &= d[k].ok;
	}
	print_table(o, res, d, rtt_ok);
	if (o->json_path)
		write_json(o->json_path, o, res, d, rtt_ok, all_ok);
	rc = 0;
out:
	free(res);
	return rc;
}
