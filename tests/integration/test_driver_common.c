/* test_driver_common.c — see test_driver_common.h. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "test_driver_common.h"

/* Copies, not pointers: a failed assertion leaves the test's stack before .fini runs. */
static struct t_sim live_sims[8];

void t_sim_start_checked(struct t_sim *sim, int tls, const char *const *extra)
{
	if (t_sim_start(sim, tls, extra))
		cr_assert_fail("latscope sim did not start (%s): see %s", t_bin(), sim->log);
	for (size_t i = 0; i < sizeof(live_sims) / sizeof(live_sims[0]); i++)
		if (!live_sims[i].pid) {
			live_sims[i] = *sim;
			break;
		}
}

void t_sim_stop_checked(struct t_sim *sim)
{
	for (size_t i = 0; i < sizeof(live_sims) / sizeof(live_sims[0]); i++)
		if (live_sims[i].pid == sim->pid)
			live_sims[i].pid = 0;
	t_sim_stop(sim);
}

void t_sim_fini(void)
{
	for (size_t i = 0; i < sizeof(live_sims) / sizeof(live_sims[0]); i++)
		if (live_sims[i].pid)
			t_sim_stop(&live_sims[i]);
}

void t_batch_init(struct t_batch *b, enum ls_backend backend, size_t n, uint32_t max_tokens)
{
	memset(b, 0, sizeof(*b));
	b->n = n;
	b->jobs = calloc(n ? n : 1, sizeof(*b->jobs));
	b->recs = calloc(n ? n : 1, sizeof(*b->recs));
	b->seen = calloc(n ? n : 1, 1);
	cr_assert(b->jobs && b->recs && b->seen);
	snprintf(b->run.run_tag, sizeof(b->run.run_tag), "td%d", (int)getpid());
	for (size_t i = 0; i < n; i++) {
		struct ls_prompt p = { .text = "The quick brown fox jumps over the lazy dog",
				       .prompt_len = 9, .output_len = max_tokens };
		size_t len = 0;
		char *body = ls_backend_body(backend, "latscope-sim", &p, 1, &len);
		cr_assert_not_null(body);
		ls_request_reset(&b->recs[i], i);
		b->recs[i].output_len = max_tokens;
		b->recs[i].prompt_len = p.prompt_len;
		b->jobs[i] = (struct ls_driver_job){ .body = body, .body_len = len, .rec = &b->recs[i] };
	}
	b->run.requests = b->recs;
	b->run.n_requests = n;
}

void t_batch_free(struct t_batch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		free((char *)b->jobs[i].body);
		ls_request_free(&b->recs[i]);
	}
	free(b->jobs);
	free(b->recs);
	free(b->seen);
	memset(b, 0, sizeof(*b));
}

static void on_finish(void *ctx, const struct ls_request *req)
{
	struct t_batch *b = ctx;
	b->finished++;
	if (req->id < b->n) {
		if (b->seen[req->id])
			b->finish_dup++;
		b->seen[req->id] = 1;
	}
}

void t_opts(struct ls_driver_opts *o, struct t_batch *b, const struct t_sim *sim,
	     enum ls_backend backend, char *url_buf, size_t url_cap)
{
	memset(o, 0, sizeof(*o));
	snprintf(url_buf, url_cap, "%s%s", sim->url, ls_backend_default_endpoint(backend));
	o->url = url_buf;
	o->backend = backend;
	o->request_timeout_ns = 20ull * 1000000000ull;
	o->run_tag = b->run.run_tag;
	o->on_finish = on_finish;
	o->on_finish_ctx = b;
	o->grace_ns = 5ull * 1000000000ull;
}

int t_driver_run(const struct ls_driver_opts *o, struct t_batch *b)
{
	b->finished = b->finish_dup = 0;
	memset(b->seen, 0, b->n ? b->n : 1);
	return ls_driver_run(o, b->jobs, b->n, &b->run);
}

static size_t count_lines(const char *s)
{
	size_t n = 0;
	for (; s && *s; s++)
		n += *s == '\n';
	return n;
}

static int parse_truth(const char *text, struct t_truth *t)
{
	size_t n = count_lines(text);
	char *copy = strdup(text);
	t->ids = calloc(n + 1, sizeof(*t->ids));
	t->reasons = calloc(n + 1, sizeof(*t->reasons));
	t->faults = calloc(n + 1, sizeof(*t->faults));
	t->conns = calloc(n + 1, sizeof(*t->conns));
	t->n_frames = calloc(n + 1, sizeof(*t->n_frames));
	t->frame_t = calloc(n + 1, sizeof(*t->frame_t));
	t->failed = calloc(n + 1, sizeof(*t->failed));
	if (!copy || !t->ids || !t->reasons || !t->faults || !t->conns || !t->n_frames || !t->failed || !t->frame_t) {
		free(copy);
		return -1;
	}
	char *save = NULL;
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		cJSON *j = cJSON_Parse(line);
		if (!j)
			continue;
		const cJSON *id = cJSON_GetObjectItem(j, "id"), *conn = cJSON_GetObjectItem(j, "conn");
		const cJSON *frames = cJSON_GetObjectItem(j, "frames"), *reason = cJSON_GetObjectItem(j, "reason");
		const cJSON *fault = cJSON_GetObjectItem(j, "fault");
		const char *ids = cJSON_IsString(id) ? id->valuestring : "";
		if (t_truth_find(t, ids) >= 0)
			t->dups++;
		t->ids[t->n] = strdup(ids);
		t->reasons[t->n] = strdup(cJSON_IsString(reason) ? reason->valuestring : "");
		t->faults[t->n] = strdup(cJSON_IsString(fault) ? fault->valuestring : "");
		t->conns[t->n] = cJSON_IsNumber(conn) ? (uint64_t)conn->valuedouble : 0;
		t->n_frames[t->n] = (uint32_t)cJSON_GetArraySize(frames);
		t->frame_t[t->n] = calloc(t->n_frames[t->n] + 1, sizeof(uint64_t));
		for (uint32_t k = 0; t->frame_t[t->n] && k < t->n_frames[t->n]; k++) {
			const cJSON *ft = cJSON_GetObjectItem(cJSON_GetArrayItem(frames, (int)k), "t");
			t->frame_t[t->n][k] = cJSON_IsNumber(ft) ? (uint64_t)ft->valuedouble : 0;
		}
		t->failed[t->n] = cJSON_GetObjectItem(j, "failed") != NULL;
		t->n++;
		cJSON_Delete(j);
	}
	free(copy);
	return 0;
}

static int has_all(const struct t_truth *t, const char *tag, size_t n)
{
	char id[64];
	for (size_t i = 0; i < n; i++) {
		snprintf(id, sizeof(id), "%s-%zu", tag, i);
		if (t_truth_find(t, id) < 0)
			return 0;
	}
	return 1;
}

int t_truth_load(const char *path, const char *tag, size_t n, struct t_truth *t)
{
	memset(t, 0, sizeof(*t));
	for (int i = 0; i < 300; i++) {
		char *text = t_read_file(path, NULL);
		if (text && parse_truth(text, t) == 0 && has_all(t, tag, n)) {
			free(text);
			return 0;
		}
		free(text);
		t_truth_free(t);
		usleep(10000);
	}
	char *text = t_read_file(path, NULL);
	if (text)
		parse_truth(text, t);
	free(text);
	return -1;
}

void t_truth_free(struct t_truth *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->ids[i]);
		free(t->reasons[i]);
		free(t->faults[i]);
		if (t->frame_t)
			free(t->frame_t[i]);
	}
	free(t->frame_t);
	free(t->faults);
	free(t->ids);
	free(t->reasons);
	free(t->conns);
	free(t->n_frames);
	free(t->failed);
	memset(t, 0, sizeof(*t));
}

long t_truth_find(const struct t_truth *t, const char *id)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->ids[i], id))
			return (long)i;
	return -1;
}

size_t t_truth_distinct_conns(const struct t_truth *t)
{
	size_t distinct = 0;
	for (size_t i = 0; i < t->n; i++) {
		int dup = 0;
		for (size_t j = 0; j < i && !dup; j++)
			dup = t->conns[j] == t->conns[i];
		distinct += !dup;
	}
	return distinct;
}

size_t t_count_fail(const struct t_batch *b, enum ls_fail why)
{
	size_t n = 0;
	for (size_t i = 0; i < b->n; i++)
		n += b->recs[i].fail == why;
	return n;
}

/* Reads one request: head, then Content-Length bytes of body. */
static void read_request(int fd)
{
	char buf[65536];
	size_t have = 0;
	char *end = NULL;
	while (!end && have < sizeof(buf) - 1) {
		ssize_t r = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (r <= 0)
			return;
		have += (size_t)r;
		buf[have] = 0;
		end = strstr(buf, "\r\n\r\n");
	}
	if (!end)
		return;
	size_t body = 0;
	const char *cl = strcasestr(buf, "Content-Length:");
	if (cl)
		body = strtoul(cl + 15, NULL, 10);
	size_t got = have - (size_t)(end + 4 - buf);
	while (got < body) {
		ssize_t r = read(fd, buf, sizeof(buf));
		if (r <= 0)
			return;
		got += (size_t)r;
	}
}

int t_canned_start(struct t_canned *c, const char *resp, size_t len, int hold)
{
	memset(c, 0, sizeof(*c));
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 64) ||
	    getsockname(lfd, (struct sockaddr *)&a, &alen)) {
		if (lfd >= 0)
			close(lfd);
		return -1;
	}
	c->port = ntohs(a.sin_port);
	snprintf(c->url, sizeof(c->url), "http://127.0.0.1:%d", c->port);
	pid_t pid = fork();
	if (pid < 0) {
		close(lfd);
		return -1;
	}
	if (pid == 0) {
		alarm(30); /* never outlive a broken test */
		for (;;) {
			int fd = accept(lfd, NULL, NULL);
			if (fd < 0)
				_exit(0);
			read_request(fd);
			const char *pause = memchr(resp, T_CANNED_PAUSE, len);
			size_t off = 0;
			while (off < len) {
				size_t upto = pause && off <= (size_t)(pause - resp) ? (size_t)(pause - resp) : len;
				if (off == upto) { /* the pause mark: not sent, the rest 50 ms later */
					usleep(50000);
					off++;
					continue;
				}
				ssize_t w = write(fd, resp + off, upto - off);
				if (w <= 0)
					break;
				off += (size_t)w;
			}
			/* hold: leave this connection open and silent (killed with the child) and
			 * answer the next one the same way, so every request sees headers first. */
			if (hold)
				continue;
			shutdown(fd, SHUT_WR);
			close(fd);
		}
	}
	close(lfd);
	c->pid = pid;
	return 0;
}

void t_canned_stop(struct t_canned *c)
{
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
	}
	c->pid = 0;
}
