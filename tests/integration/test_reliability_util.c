/* test_reliability_util.c — see test_reliability.h. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "t_helpers.h"
#include "test_reliability.h"

const char *t_san_bin(void)
{
	const char *bin = getenv("LATSCOPE_SAN_BIN");
	if (!bin)
		bin = "build/san/latscope";
	cr_assert(access(bin, X_OK) == 0, "%s was not built: make SAN=1 san-bins (LATSCOPE_SAN_BIN)", bin);
	return bin;
}

void t_tmp(char *out, size_t len, const char *tag)
{
	snprintf(out, len, "/tmp/latscope-rel-%d-%s", (int)getpid(), tag);
}

void t_spawn(struct t_proc *p, const char *bin, const char *const *args)
{
	static int seq;
	const char *argv[128];
	size_t n = 0;
	argv[n++] = bin;
	for (size_t i = 0; args && args[i] && n < 127; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	seq++;
	snprintf(p->out, sizeof(p->out), "/tmp/latscope-rel-%d-%d.out", (int)getpid(), seq);
	snprintf(p->err, sizeof(p->err), "/tmp/latscope-rel-%d-%d.err", (int)getpid(), seq);
	p->pid = fork();
	cr_assert_geq(p->pid, 0, "fork: %s", strerror(errno));
	if (p->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* a crashed test leaves nothing running */
		int o = open(p->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(p->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (o < 0 || e < 0)
			_exit(127);
		dup2(o, 1);
		dup2(e, 2);
		/* LeakSanitizer runs at exit of a normal process; a report fails the test by text. */
		setenv("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0:allocator_may_return_null=0", 1);
		setenv("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1", 1);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
}

int t_wait(struct t_proc *p, double timeout_s)
{
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int status;
		pid_t r = waitpid(p->pid, &status, WNOHANG);
		if (r == p->pid) {
			p->pid = 0;
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9 > timeout_s) {
			kill(p->pid, SIGKILL);
			waitpid(p->pid, NULL, 0);
			p->pid = 0;
			return -1;
		}
		usleep(5000);
	}
}

char *t_stderr(const struct t_proc *p)
{
	char *s = t_read_file(p->err, NULL);
	return s ? s : strdup("");
}

char *t_stdout(const struct t_proc *p)
{
	char *s = t_read_file(p->out, NULL);
	return s ? s : strdup("");
}

void t_done(struct t_proc *p)
{
	if (p->pid > 0) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, NULL, 0);
		p->pid = 0;
	}
	if (!getenv("T_KEEP")) {
		unlink(p->out);
		unlink(p->err);
	}
}

void t_assert_clean(const char *err, const char *what)
{
	static const char *const marks[] = { "ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
					     "SUMMARY: UndefinedBehaviorSanitizer" };
	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++) {
		const char *at = strstr(err, marks[i]);
		cr_assert_null(at, "%s: sanitizer report:\n%.3000s", what, at);
	}
}

static enum ls_fail fail_by_name(const char *name)
{
	for (int f = 0; f < LS_FAIL__COUNT; f++)
		if (!strcmp(name, ls_fail_name((enum ls_fail)f)))
			return (enum ls_fail)f;
	return LS_FAIL__COUNT;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

void t_records_read(const char *path, struct t_records *r)
{
	memset(r, 0, sizeof(*r));
	size_t len;
	char *text = t_read_file(path, &len);
	cr_assert_not_null(text, "no record file %s", path);
	size_t cap = 0;
	char *line = text, *end = text + len;
	while (line < end) {
		char *nl = memchr(line, '\n', (size_t)(end - line));
		r->lines++;
		if (!nl) { /* a line cut short: a reader would see half a line */
			r->torn = 1;
			break;
		}
		cJSON *o = cJSON_ParseWithLength(line, (size_t)(nl - line));
		if (!cJSON_IsObject(o)) {
			r->torn = 1;
			cJSON_Delete(o);
			break;
		}
		if (r->lines == 1) {
			r->header = cJSON_GetObjectItem(o, "latscope_record") != NULL;
			const cJSON *tag = cJSON_GetObjectItem(o, "run_tag");
			if (cJSON_IsString(tag))
				snprintf(r->run_tag, sizeof(r->run_tag), "%s", tag->valuestring);
		} else if (cJSON_GetObjectItem(o, "latscope_run_end")) {
			r->run_end = 1;
			r->interrupted = (int)cJSON_GetObjectItem(o, "interrupted")->valuedouble;
		} else {
			cr_assert(!r->run_end, "%s: a request line after the run_end line", path);
			const cJSON *id = cJSON_GetObjectItem(o, "id"), *fail = cJSON_GetObjectItem(o, "fail");
			cr_assert(cJSON_IsNumber(id) && cJSON_IsString(fail), "%s:%zu: request line without id/fail", path,
				  r->lines);
			if (r->requests == cap) {
				cap = cap ? cap * 2 : 1024;
				r->ids = realloc(r->ids, cap * sizeof(*r->ids));
				r->fails = realloc(r->fails, cap * sizeof(*r->fails));
				cr_assert(r->ids && r->fails);
			}
			enum ls_fail f = fail_by_name(fail->valuestring);
			cr_assert_lt(f, LS_FAIL__COUNT, "%s:%zu: unknown fail \"%s\"", path, r->lines, fail->valuestring);
			r->by_fail[f]++;
			r->ids[r->requests] = (uint64_t)id->valuedouble;
			r->fails[r->requests] = strdup(fail->valuestring);
			r->requests++;
		}
		cJSON_Delete(o);
		line = nl + 1;
	}
	free(text);
	if (r->requests) {
		uint64_t *sorted = malloc(r->requests * sizeof(*sorted));
		cr_assert_not_null(sorted);
		memcpy(sorted, r->ids, r->requests * sizeof(*sorted));
		qsort(sorted, r->requests, sizeof(*sorted), cmp_u64);
		for (size_t i = 1; i < r->requests; i++)
			r->dup_ids += sorted[i] == sorted[i - 1];
		free(sorted);
	}
}

void t_records_free(struct t_records *r)
{
	for (size_t i = 0; i < r->requests; i++)
		free(r->fails[i]);
	free(r->fails);
	free(r->ids);
	memset(r, 0, sizeof(*r));
}

cJSON *t_json_file(const char *path)
{
	size_t len;
	char *text = t_read_file(path, &len);
	if (!text)
		return NULL;
	cJSON *o = cJSON_ParseWithLength(text, len);
	free(text);
	return o;
}

long t_json_count(const cJSON *result, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(result, key);
	cr_assert(cJSON_IsNumber(v), "result JSON has no number \"%s\"", key);
	return (long)v->valuedouble;
}

long t_json_failures(const cJSON *result, const char *reason)
{
	const cJSON *l = cJSON_GetObjectItem(result, "latscope");
	const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(l, "failures"), reason);
	return cJSON_IsNumber(v) ? (long)v->valuedouble : 0;
}
