/* test_reliability_probes.c — probes on a shared host (root): two benches with probes at once,
 * each against its own simulator, do not disturb each other (each attributes every request of
 * its own, nothing lost or out of order, its server part matching its simulator's truth); the
 * BPF programs a bench loaded are gone after it exits, normally or by kill -9. */
#include <bpf/bpf.h>
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/clock.h"
#include "t_helpers.h"
#include "test_reliability.h"

/* BPF program ids a process holds (its bpf-prog and bpf_link fds, from fdinfo). */
static size_t prog_ids(pid_t pid, uint32_t *ids, size_t cap)
{
	char path[128];
	snprintf(path, sizeof(path), "/proc/%d/fdinfo", (int)pid);
	DIR *d = opendir(path);
	size_t n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)) && n < cap) {
		char file[300], line[256];
		snprintf(file, sizeof(file), "/proc/%d/fdinfo/%s", (int)pid, de->d_name);
		FILE *f = fopen(file, "r");
		while (f && fgets(line, sizeof(line), f) && n < cap) {
			unsigned id;
			if (sscanf(line, "prog_id: %u", &id) == 1) {
				int seen = 0;
				for (size_t i = 0; i < n; i++)
					seen |= ids[i] == id;
				if (!seen)
					ids[n++] = id;
			}
		}
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

/* How many of ids still exist in the kernel, after waiting up to 3 s for them to go. */
static size_t progs_alive(const uint32_t *ids, size_t n)
{
	size_t alive = n;
	for (int tries = 0; tries < 300 && alive; tries++) {
		alive = 0;
		for (size_t i = 0; i < n; i++) {
			int fd = bpf_prog_get_fd_by_id(ids[i]);
			if (fd >= 0) {
				close(fd);
				alive++;
			}
		}
		if (alive)
			usleep(10000);
	}
	return alive;
}

struct side {
	struct t_sim sim;
	struct t_proc p;
	char record[128], attribution[160], pid[16];
};

static void start_side(struct side *s, const char *tag, const char *n, const char *rate)
{
	const char *extra[] = { "--step-ms", "4", "--quiet", NULL };
	cr_assert_eq(t_sim_start(&s->sim, 0, extra), 0, "sim did not start");
	t_tmp(s->record, sizeof(s->record), tag);
	snprintf(s->attribution, sizeof(s->attribution), "%.*s.attribution.jsonl", (int)strlen(s->record) - 6,
		 s->record);
	snprintf(s->pid, sizeof(s->pid), "%d", (int)s->sim.pid);
	const char *args[] = { "bench", "--base-url", s->sim.url, "--model", "latscope-sim", "--num-prompts", n,
			       "--request-rate", rate, "--max-concurrency", "8", "--random-input-len", "16",
			       "--random-output-len", "12", "--random-vocab-size", "300", "--ignore-eos",
			       "--connection", "per-request", "--probes", "on", "--server-pid", s->pid,
			       "--ready-check-timeout-sec", "10", "--disable-tqdm", "--record", s->record, NULL };
	t_spawn(&s->p, t_bin(), args);
}

static void wait_running(const struct side *s, uint32_t *ids, size_t *n_ids)
{
	for (int i = 0; i < 1000; i++) {
		if (access(s->record, F_OK) == 0) {
			*n_ids = prog_ids(s->p.pid, ids, 64);
			if (*n_ids)
				return;
		}
		usleep(10000);
	}
	cr_assert_fail("the bench did not start with its probes loaded");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Median of truth received -> first tokens frame, ms. */
static double truth_server_ttft_ms(const char *truth)
{
	char *text = t_read_file(truth, NULL), *save = NULL;
	cr_assert_not_null(text);
	double v[4096];
	size_t n = 0;
	for (char *line = strtok_r(text, "\n", &save); line && n < 4096; line = strtok_r(NULL, "\n", &save)) {
		cJSON *o = cJSON_Parse(line), *f;
		double received = cJSON_GetObjectItem(o, "received")->valuedouble;
		cJSON_ArrayForEach(f, cJSON_GetObjectItem(o, "frames")) {
			if (!strcmp(cJSON_GetObjectItem(f, "kind")->valuestring, "tokens")) {
				v[n++] = (cJSON_GetObjectItem(f, "t")->valuedouble - received) / 1e6;
				break;
			}
		}
		cJSON_Delete(o);
	}
	free(text);
	cr_assert_gt(n, 0);
	qsort(v, n, sizeof(v[0]), cmp_double);
	return v[n / 2];
}

/* Every request attributed from its own events; returns the median server part of TTFT, ms. */
static double check_attribution(const struct side *s, size_t want)
{
	char *text = t_read_file(s->attribution, NULL), *save = NULL;
	cr_assert_not_null(text, "no attribution file %s", s->attribution);
	double v[4096];
	size_t n = 0, lines = 0;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		cJSON *o = cJSON_Parse(line), *flag;
		cr_assert_not_null(o);
		if (lines++ == 0) {
			cr_expect_eq(cJSON_GetObjectItem(o, "lost_events")->valuedouble, 0, "%s: events lost",
				     s->attribution);
			cJSON_Delete(o);
			continue;
		}
		cJSON_ArrayForEach(flag, cJSON_GetObjectItem(o, "flags")) {
			const char *f = flag->valuestring;
			cr_expect(strcmp(f, "no_events") && strcmp(f, "no_server") && strcmp(f, "lost_events") &&
				  strcmp(f, "disorder") && strcmp(f, "not_ok"),
				  "%s: request %g flagged %s", s->attribution, cJSON_GetObjectItem(o, "id")->valuedouble, f);
		}
		cJSON *server = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "ttft"), "server_ns");
		cr_expect(cJSON_IsNumber(server), "%s: request %g has no server part", s->attribution,
			  cJSON_GetObjectItem(o, "id")->valuedouble);
		if (cJSON_IsNumber(server) && n < 4096)
			v[n++] = server->valuedouble / 1e6;
		cJSON_Delete(o);
	}
	free(text);
	cr_expect_eq(lines - 1, want, "%s: %zu requests attributed, want %zu", s->attribution, lines - 1, want);
	cr_assert_gt(n, 0);
	qsort(v, n, sizeof(v[0]), cmp_double);
	return v[n / 2];
}

static void stop_side(struct side *s)
{
	t_done(&s->p);
	t_sim_stop(&s->sim);
	if (!getenv("T_KEEP")) {
		unlink(s->record);
		unlink(s->attribution);
	}
}

Test(reliability_probes, two_benches_at_once_do_not_disturb_each_other, .timeout = 90)
{
	t_need_root_and_btf();
	struct side a, b;
	uint32_t ids_a[64];
	size_t n_ids_a = 0;
	start_side(&a, "probes-a.jsonl", "120", "60");
	start_side(&b, "probes-b.jsonl", "120", "60");
	wait_running(&a, ids_a, &n_ids_a);
	int rc_a = t_wait(&a.p, 40), rc_b = t_wait(&b.p, 40);
	char *err_a = t_stderr(&a.p), *err_b = t_stderr(&b.p);
	cr_assert_eq(rc_a, 0, "bench A exited %d: %.800s", rc_a, err_a);
	cr_assert_eq(rc_b, 0, "bench B exited %d: %.800s", rc_b, err_b);
	cr_expect_eq(progs_alive(ids_a, n_ids_a), 0, "bench A's %zu BPF programs outlived it", n_ids_a);
	setenv("T_KEEP", "1", 1);
	t_sim_stop(&a.sim);
	t_sim_stop(&b.sim);
	unsetenv("T_KEEP");
	struct side *sides[] = { &a, &b };
	for (int i = 0; i < 2; i++) {
		double got = check_attribution(sides[i], 120), want = truth_server_ttft_ms(sides[i]->sim.truth);
		cr_log_info("bench %c: server part of TTFT median %.3f ms, truth %.3f ms", 'A' + i, got, want);
		cr_expect(got > want - 0.5 && got < want * 1.1 + 0.5,
			  "bench %c: server part of TTFT, median %.3f ms; its simulator's truth %.3f ms", 'A' + i, got,
			  want);
		unlink(sides[i]->sim.truth);
		unlink(sides[i]->sim.log);
	}
	free(err_a);
	free(err_b);
	stop_side(&a);
	stop_side(&b);
}

Test(reliability_probes, programs_detached_after_kill9, .timeout = 60)
{
	t_need_root_and_btf();
	struct side c;
	uint32_t ids[64];
	size_t n_ids = 0;
	start_side(&c, "probes-c.jsonl", "2000", "200");
	wait_running(&c, ids, &n_ids);
	cr_assert_gt(n_ids, 5, "the bench holds its programs (%zu)", n_ids);
	usleep(300000);
	kill(c.p.pid, SIGKILL);
	cr_assert_eq(t_wait(&c.p, 10), 128 + SIGKILL);
	cr_expect_eq(progs_alive(ids, n_ids), 0, "BPF programs outlived a kill -9");
	stop_side(&c);
}
