/* Probes + attribution end to end (root): the driver sends requests to `latscope sim` on
 * loopback with the probes open on this process and the simulator; every frame and window is
 * checked against the kernel's causal order and the simulator's ground truth. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <cjson/cJSON.h>
#include "t_drive.h"
#include "t_helpers.h"
#include "attribution/attribution.h"
#include "config/profile.h"
#include "workload/arrival.h"
#include "driver/backend.h"
#include "driver/driver.h"
#include "probes/evstore.h"
#include "probes/probes.h"
#include "report/report.h"


static struct ls_probes *open_probes(pid_t server, uint32_t ring)
{
	char why[256];
	pid_t self = getpid();
	struct ls_probes_opts po = {
		.client_pids = &self, .n_client_pids = 1,
		.server_pids = server > 0 ? &server : NULL, .n_server_pids = server > 0,
		.ringbuf_bytes = ring,
	};
	struct ls_probes *p = ls_probes_open(&po, why, sizeof(why));

	cr_assert_not_null(p, "ls_probes_open: %s", why);
	return p;
}

static void assert_sums(const struct ls_attribution *a)
{
	for (size_t i = 0; i < a->n; i++) {
		const struct ls_req_attr *r = &a->req[i];
		cr_assert(!(r->flags & LS_ATTR_NOT_OK), "request %zu has no windows", i);
		cr_assert_eq(ls_parts_sum(&r->ttft), r->ttft_ns, "request %zu TTFT", i);
		cr_assert_eq(ls_parts_sum(&r->e2el), r->e2el_ns, "request %zu E2EL", i);
		for (uint32_t g = 0; g < r->n_gaps; g++)
			cr_assert_eq(ls_parts_sum(&r->gaps[g]), r->gap_ns[g], "request %zu gap %u", i, g);
	}
}

/* kernel arrival <= user read <= harness stamp for every frame; server wrote it before. */
static void assert_frames(const struct t_drive *d, const struct ls_attribution *a, int server)
{
	size_t frames = 0;

	for (size_t i = 0; i < d->n; i++) {
		const struct ls_request *r = &d->recs[i];
		const struct ls_req_attr *q = &a->req[i];
		cr_assert(r->n_frames > 0);
		for (uint32_t f = 0; f < r->n_frames; f++, frames++) {
			const struct ls_frame_attr *fa = &q->frames[f];
			cr_assert(fa->kernel_ns && fa->read_ns, "request %zu frame %u: kernel %llu read %llu", i, f,
				  (unsigned long long)fa->kernel_ns, (unsigned long long)fa->read_ns);
			cr_assert_leq(fa->kernel_ns, fa->read_ns, "request %zu frame %u", i, f);
			cr_assert_leq(fa->read_ns, r->frames[f].arrived_ns, "request %zu frame %u", i, f);
			if (server) {
				cr_assert(fa->server_write_ns, "request %zu frame %u: no server write", i, f);
				cr_assert_leq(fa->server_write_ns, fa->kernel_ns, "request %zu frame %u", i, f);
			}
		}
		cr_assert(!(q->flags & LS_ATTR_DISORDER), "request %zu out of order", i);
	}
	cr_assert_gt(frames, 0);
}

/* LATSCOPE_TEST_VERBOSE=1 prints the report section and the probes' notes. */
static void maybe_print(const struct ls_attribution *a, struct ls_probes *p)
{
	if (!getenv("LATSCOPE_TEST_VERBOSE"))
		return;
	ls_attribution_print(stderr, a);
	fprintf(stderr, "notes: %s\n", ls_probes_notes(p));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Ground truth: received -> first tokens frame written, per request id. */
static uint64_t truth_server_ttft(const char *truth, uint64_t id)
{
	char *text = t_read_file(truth, NULL), *line, *save = NULL, want[64];
	uint64_t out = 0;

	cr_assert_not_null(text, "no truth file %s", truth);
	snprintf(want, sizeof(want), "probes-%llu", (unsigned long long)id);
	for (line = strtok_r(text, "\n", &save); line && !out; line = strtok_r(NULL, "\n", &save)) {
		cJSON *j = cJSON_Parse(line);
		cJSON *jid = cJSON_GetObjectItem(j, "id");
		if (cJSON_IsString(jid) && strcmp(jid->valuestring, want) == 0) {
			uint64_t received = (uint64_t)cJSON_GetObjectItem(j, "received")->valuedouble;
			cJSON *f;
			cJSON_ArrayForEach(f, cJSON_GetObjectItem(j, "frames")) {
				if (strcmp(cJSON_GetObjectItem(f, "kind")->valuestring, "tokens") == 0) {
					out = (uint64_t)cJSON_GetObjectItem(f, "t")->valuedouble - received;
					break;
				}
			}
		}
		cJSON_Delete(j);
	}
	free(text);
	return out;
}

Test(probes, http_fresh_connections_sim_watched, .timeout = 120)
{
	struct t_sim sim;
	struct t_drive d;
	struct ls_loop_hook hook;
	const char *extra[] = { "--step-ms", "4", "--quiet", NULL };

	t_need_root_and_btf();
	cr_assert_eq(t_sim_start(&sim, 0, extra), 0, "sim did not start");
	struct ls_probes *p = open_probes(sim.pid, 0);
	ls_probes_loop_hook(p, &hook);
	t_drive(&d, "probes", sim.url, 24, 12, 4, 1, &hook);
	ls_probes_drain(p);
	struct ls_attribution *a = ls_attribute(&d.run, ls_probes_events(p), NULL, 0, t_honest_rules(), NULL);
	cr_assert_not_null(a);
	cr_assert_eq(a->lost_events, 0);
	assert_sums(a);
	assert_frames(&d, a, 1);
	/* srtt comes from client sockets only: a few samples a connection, not one per frame's ACK */
	uint64_t rtt_events = ls_evstore_count(ls_probes_events(p), LS_EV_RTT);
	cr_assert_leq(rtt_events, 4 * d.n, "%llu RTT events for %zu connections", (unsigned long long)rtt_events, d.n);

	uint64_t srv[24], truth[24];
	for (size_t i = 0; i < d.n; i++) {
		const struct ls_request *r = &d.recs[i];
		const struct ls_req_attr *q = &a->req[i];
		cr_assert(r->new_connection);
		cr_assert_eq(q->flags, 0, "request %zu flags %#x", i, q->flags);
		cr_assert(q->connect_call_ns && q->established_ns > q->connect_call_ns, "request %zu: no connect", i);
		cr_assert_gt(q->ttft.ns[LS_PART_NETWORK], 0);
		cr_assert_gt(q->srtt_us, 0, "request %zu: no srtt of its socket", i);
		/* The kernel's connect (connect() -> ESTABLISHED) is never longer than curl's
		 * CONNECT_TIME (its own start -> noticed), which the record keeps as connect - started. */
		cr_assert_leq(q->established_ns - q->connect_call_ns, r->connect_ns - r->started_ns,
			      "request %zu: kernel connect longer than curl's CONNECT_TIME", i);
		/* The client part is exactly: slot wait + dispatch + curl before connect() + its kernel
		 * up to the SYN + curl noticing the connection up to the send + the first frame's wait
		 * in the kernel and parse. */
		cr_assert(q->syn_sent_ns > q->connect_call_ns && q->syn_sent_ns < q->established_ns, "request %zu", i);
		uint64_t client = (r->admitted_ns - r->scheduled_ns) + (r->started_ns - r->admitted_ns) +
				  (q->connect_call_ns - r->started_ns) + (q->syn_sent_ns - q->connect_call_ns) +
				  (q->request_send_ns - q->established_ns) +
				  (r->frames[0].arrived_ns - q->frames[0].kernel_ns);
		cr_assert_eq(q->ttft.ns[LS_PART_CLIENT], client, "request %zu client part", i);
		srv[i] = q->ttft.ns[LS_PART_SERVER];
		truth[i] = truth_server_ttft(sim.truth, r->id);
		cr_assert_gt(truth[i], 0, "request %zu not in the truth file", i);
	}
	/* Requests waited for a slot (4 at a time): some client part is slot wait. */
	cr_assert_gt(d.recs[d.n - 1].admitted_ns - d.recs[d.n - 1].scheduled_ns, 0);
	qsort(srv, d.n, sizeof(srv[0]), cmp_u64);
	qsort(truth, d.n, sizeof(truth[0]), cmp_u64);
	uint64_t s50 = srv[d.n / 2], t50 = truth[d.n / 2];
	uint64_t diff = s50 > t50 ? s50 - t50 : t50 - s50, tol = t50 / 50 > 50000 ? t50 / 50 : 50000;
	maybe_print(a, p);
	fprintf(stderr, "server TTFT p50 %llu ns, truth %llu ns\n", (unsigned long long)s50, (unsigned long long)t50);
	cr_assert_leq(diff, tol, "server TTFT p50 %llu ns vs truth %llu ns", (unsigned long long)s50,
		      (unsigned long long)t50);
	ls_attribution_free(a);
	ls_probes_close(p);
	t_drive_free(&d);
	t_sim_stop(&sim);
}

Test(probes, https_handshake_and_keepalive_reuse, .timeout = 120)
{
	struct t_sim sim;
	struct t_drive d;
	struct ls_loop_hook hook;
	const char *extra[] = { "--tls", "--step-ms", "4", "--quiet", NULL };

	t_need_root_and_btf();
	cr_assert_eq(t_sim_start(&sim, 1, extra), 0, "sim did not start");
	struct ls_probes *p = open_probes(sim.pid, 0);
	cr_assert(!strstr(ls_probes_notes(p), "TLS"), "notes: %s", ls_probes_notes(p));
	ls_probes_loop_hook(p, &hook);
	t_drive(&d, "probes", sim.url, 12, 8, 2, 0, &hook); /* keep-alive: 2 connections, then reused */
	ls_probes_drain(p);
	struct ls_attribution *a = ls_attribute(&d.run, ls_probes_events(p), NULL, 0, t_honest_rules(), NULL);
	cr_assert_not_null(a);
	assert_sums(a);
	assert_frames(&d, a, 1);
	size_t fresh = 0, reused = 0;
	for (size_t i = 0; i < d.n; i++) {
		const struct ls_request *r = &d.recs[i];
		const struct ls_req_attr *q = &a->req[i];
		if (r->new_connection) {
			fresh++;
			cr_assert(q->established_ns > q->connect_call_ns && q->connect_call_ns);
			cr_assert(q->tls_end_ns > q->tls_start_ns && q->tls_start_ns, "request %zu: no handshake", i);
			cr_assert_geq(q->tls_start_ns, q->established_ns);
			cr_assert_geq(q->request_send_ns, q->tls_end_ns);
			cr_assert_leq(q->established_ns - q->connect_call_ns, r->connect_ns - r->started_ns);
			cr_assert_leq(q->tls_end_ns - q->connect_call_ns, r->tls_ns - r->started_ns,
				      "request %zu: kernel connect + handshake longer than curl's APPCONNECT_TIME", i);
		} else {
			reused++;
			cr_assert(q->flags & LS_ATTR_REUSED);
			cr_assert_eq(q->connect_call_ns, 0);
			cr_assert_eq(q->tls_end_ns, 0);
		}
		cr_assert(!(q->flags & (LS_ATTR_NO_SERVER | LS_ATTR_NO_TLS_EVENTS | LS_ATTR_NO_EVENTS)),
			  "request %zu flags %#x", i, q->flags);
	}
	maybe_print(a, p);
	cr_assert_geq(fresh, 1);
	cr_assert_geq(reused, 1);
	/* At most the pool's open connections are tracked (their SSL* live on after the run). */
	cr_assert_leq(ls_probes_tls_sessions(p), 2, "%zu sessions tracked", ls_probes_tls_sessions(p));
	ls_attribution_free(a);
	ls_probes_close(p);
	t_drive_free(&d);
	t_sim_stop(&sim);
}

Test(probes, client_only_reports_network_plus_server, .timeout = 120)
{
	struct t_sim sim;
	struct t_drive d;
	struct ls_loop_hook hook;
	const char *extra[] = { "--step-ms", "2", "--quiet", NULL };

	t_need_root_and_btf();
	cr_assert_eq(t_sim_start(&sim, 0, extra), 0, "sim did not start");
	struct ls_probes *p = open_probes(0, 0);
	cr_assert(strstr(ls_probes_notes(p), "network+server"), "notes: %s", ls_probes_notes(p));
	ls_probes_loop_hook(p, &hook);
	t_drive(&d, "probes", sim.url, 6, 6, 2, 1, &hook);
	ls_probes_drain(p);
	struct ls_attribution *a = ls_attribute(&d.run, ls_probes_events(p), NULL, 0, t_honest_rules(), NULL);
	assert_sums(a);
	assert_frames(&d, a, 0);
	for (size_t i = 0; i < d.n; i++) {
		cr_assert(a->req[i].flags & LS_ATTR_NO_SERVER);
		cr_assert_gt(a->req[i].ttft.ns[LS_PART_NETWORK_SERVER], 0);
		cr_assert_eq(a->req[i].ttft.ns[LS_PART_SERVER], 0);
	}
	ls_attribution_free(a);
	ls_probes_close(p);
	t_drive_free(&d);
	t_sim_stop(&sim);
}

Test(probes, tiny_ring_buffer_overflows_and_marks_requests, .timeout = 120)
{
	struct t_sim sim;
	struct t_drive d;
	const char *extra[] = { "--step-ms", "1", "--quiet", NULL };

	t_need_root_and_btf();
	cr_assert_eq(t_sim_start(&sim, 0, extra), 0, "sim did not start");
	struct ls_probes *p = open_probes(sim.pid, (uint32_t)sysconf(_SC_PAGESIZE));
	t_drive(&d, "probes", sim.url, 8, 40, 8, 1, NULL); /* no drain during the run: the ring must fill */
	ls_probes_drain(p);
	struct ls_attribution *a = ls_attribute(&d.run, ls_probes_events(p), NULL, 0, t_honest_rules(), NULL);
	cr_assert_gt(a->lost_events, 0);
	cr_assert_gt(a->n_lost_requests, 0);
	cr_assert(strstr(a->why, "lost"), "why: %s", a->why);
	assert_sums(a); /* lost events make parts coarse, never wrong in sum */
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	ls_attribution_print(f, a);
	fclose(f);
	cr_assert(strstr(text, "probe events lost"), "%s", text);
	free(text);
	ls_attribution_free(a);
	ls_probes_close(p);
	t_drive_free(&d);
	t_sim_stop(&sim);
}

Test(probes, server_comm_finds_the_simulator, .timeout = 60)
{
	struct t_sim sim;
	char why[256];
	pid_t self = getpid();
	const pid_t *pids;
	int found = 0;

	t_need_root_and_btf();
	cr_assert_eq(t_sim_start(&sim, 0, NULL), 0, "sim did not start");
	struct ls_probes_opts po = { .client_pids = &self, .n_client_pids = 1, .server_comm = "latscope" };
	struct ls_probes *p = ls_probes_open(&po, why, sizeof(why));
	cr_assert_not_null(p, "%s", why);
	size_t n = ls_probes_server_pids(p, &pids);
	for (size_t i = 0; i < n; i++)
		found |= pids[i] == sim.pid;
	cr_assert(found, "sim pid %d not among %zu server pids", (int)sim.pid, n);
	ls_probes_close(p);
	po.server_comm = "no-such-process-xyz";
	p = ls_probes_open(&po, why, sizeof(why));
	cr_assert_not_null(p, "%s", why);
	cr_assert(strstr(ls_probes_notes(p), "no such process"), "%s", ls_probes_notes(p));
	cr_assert(strstr(ls_probes_notes(p), "matched as 'no-such-process'"),
		  "a name past 15 characters is matched as the kernel keeps it: %s", ls_probes_notes(p));
	ls_probes_close(p);
	t_sim_stop(&sim);
}

/* Without root the probes do not open, and say why. */
Test(probes, unprivileged_open_fails_with_reason, .timeout = 60)
{
	int fds[2];
	char why[512] = "";

	t_need_root_and_btf();
	cr_assert_eq(pipe(fds), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char w[256] = "";
		pid_t self = getpid();
		struct ls_probes_opts po = { .client_pids = &self, .n_client_pids = 1 };
		close(fds[0]);
		if (setgid(65534) || setuid(65534))
			_exit(3);
		struct ls_probes *p = ls_probes_open(&po, w, sizeof(w));
		if (write(fds[1], w, strlen(w)) < 0)
			_exit(4);
		_exit(p ? 1 : 0);
	}
	close(fds[1]);
	ssize_t n = read(fds[0], why, sizeof(why) - 1);
	close(fds[0]);
	why[n > 0 ? n : 0] = '\0';
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "unprivileged open: exit %d, why '%s'",
		  WEXITSTATUS(status), why);
	cr_assert(strstr(why, "root"), "reason does not say root: '%s'", why);
	cr_assert(strstr(why, "65534"), "reason does not name the uid: '%s'", why);
}

Test(probes, ssl_read_opt_in_reports_plaintext_lengths, .timeout = 60)
{
	struct t_sim sim;
	struct t_drive d;
	char why[256];
	pid_t self = getpid();
	const char *extra[] = { "--tls", "--step-ms", "1", "--quiet", NULL };

	t_need_root_and_btf();
	cr_assert_eq(t_sim_start(&sim, 1, extra), 0, "sim did not start");
	struct ls_probes_opts po = { .client_pids = &self, .n_client_pids = 1, .ssl_read = 1 };
	struct ls_probes *p = ls_probes_open(&po, why, sizeof(why));
	cr_assert_not_null(p, "%s", why);
	t_drive(&d, "probes", sim.url, 2, 4, 1, 1, NULL);
	ls_probes_drain(p);
	const struct ls_evstore *st = ls_probes_events(p);
	cr_assert_gt(ls_evstore_count(st, LS_EV_TLS_READ), 0);
	cr_assert_gt(ls_evstore_count(st, LS_EV_TLS_WRITE), 0);
	const struct ls_sock_events *s = ls_evstore_find(st, d.recs[0].socket_cookie);
	size_t reads = 0;
	for (size_t i = 0; s && i < s->n; i++)
		reads += s->ev[i].kind == LS_EV_TLS_READ && s->ev[i].len > 0;
	cr_assert_gt(reads, 0, "no SSL_read linked to the request's socket");
	ls_probes_close(p);
	t_drive_free(&d);
	t_sim_stop(&sim);
}

/* On a machine without tracefs mounted, opening the probes mounts it (in a private mount
 * namespace here, so the host is untouched). */
Test(probes, mounts_tracefs_when_missing, .timeout = 60)
{
	t_need_root_and_btf();
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char why[256];
		pid_t self = getpid();
		struct ls_probes_opts po = { .client_pids = &self, .n_client_pids = 1, .no_tls = 1 };
		if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
			_exit(77);
		while (umount2("/sys/kernel/tracing", MNT_DETACH) == 0)
			;
		umount2("/sys/kernel/debug", MNT_DETACH);
		if (access("/sys/kernel/tracing/events/syscalls", F_OK) == 0)
			_exit(78);
		struct ls_probes *p = ls_probes_open(&po, why, sizeof(why));
		if (!p) {
			fprintf(stderr, "open: %s\n", why);
			_exit(1);
		}
		ls_probes_close(p);
		_exit(0);
	}
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		cr_skip_test("cannot make a private mount namespace here");
	if (WEXITSTATUS(status) == 78)
		cr_skip_test("tracefs could not be unmounted in the namespace");
	cr_assert_eq(WEXITSTATUS(status), 0, "probes did not open without tracefs mounted");
}

/* The loop drains the ring in slices (a frame waits behind one slice, not a period's worth): a
 * run without the hook leaves thousands of events in the ring; the first call takes
 * LS_PROBES_DRAIN_SLICE events and says "more", each further one twice the last (up to
 * LS_PROBES_DRAIN_SLICE_MAX) while the ring still holds more, the last what was left; nothing
 * is lost. */
Test(probes, loop_drain_goes_in_slices, .timeout = 120)
{
	struct t_sim sim;
	struct t_drive d;
	struct ls_loop_hook hook;
	const char *extra[] = { "--step-ms", "1", "--quiet", NULL };

	t_need_root_and_btf();
	cr_assert_eq(t_sim_start(&sim, 0, extra), 0, "sim did not start");
	struct ls_probes *p = open_probes(sim.pid, 0);
	ls_probes_loop_hook(p, &hook);
	t_drive(&d, "probes", sim.url, 16, 60, 16, 0, NULL);
	uint64_t before = 0, after = 0, calls = 0, drain_ns, slice = LS_PROBES_DRAIN_SLICE;
	int more = 1;
	ls_probes_cost(p, NULL, 0, &drain_ns, &before);
	after = before;
	while (more) {
		uint64_t prev = after;
		more = hook.on_ready(hook.ctx, 0);
		ls_probes_cost(p, NULL, 0, &drain_ns, &after);
		calls++;
		cr_assert_leq(after - prev, slice, "call %llu took %llu events, its slice is %llu", (unsigned long long)calls,
			      (unsigned long long)(after - prev), (unsigned long long)slice);
		if (more)
			cr_assert_eq(after - prev, slice, "\"more\" after a short slice");
		slice = slice * 2 < LS_PROBES_DRAIN_SLICE_MAX ? slice * 2 : LS_PROBES_DRAIN_SLICE_MAX;
	}
	fprintf(stderr, "loop drain: %llu events in %llu calls\n", (unsigned long long)(after - before),
		(unsigned long long)calls);
	cr_assert_gt(calls, 2, "the run left more than a few slices (%llu events)", (unsigned long long)(after - before));
	struct ls_attribution *a = ls_attribute(&d.run, ls_probes_events(p), NULL, 0, t_honest_rules(), NULL);
	cr_assert_not_null(a);
	cr_assert_eq(a->lost_events, 0);
	assert_frames(&d, a, 1);
	ls_attribution_free(a);
	ls_probes_close(p);
	t_drive_free(&d);
	t_sim_stop(&sim);
}

/* Fresh TLS connections: curl frees each SSL* when its transfer closes the connection, and the
 * probes forget it (SSL_free), so a new SSL* that malloc puts at the same address is not taken
 * for the old one (its handshake start, its socket). */
Test(probes, tls_sessions_are_forgotten_at_ssl_free, .timeout = 120)
{
	struct t_sim sim;
	struct t_drive d;
	struct ls_loop_hook hook;
	const char *extra[] = { "--tls", "--step-ms", "2", "--quiet", NULL };

	t_need_root_and_btf();
	cr_assert_eq(t_sim_start(&sim, 1, extra), 0, "sim did not start");
	struct ls_probes *p = open_probes(sim.pid, 0);
	ls_probes_loop_hook(p, &hook);
	t_drive(&d, "probes", sim.url, 8, 4, 2, 1, &hook);
	ls_probes_drain(p);
	cr_assert_eq(ls_probes_tls_sessions(p), 0, "%zu SSL* still tracked after every connection closed",
		     ls_probes_tls_sessions(p));
	struct ls_attribution *a = ls_attribute(&d.run, ls_probes_events(p), NULL, 0, t_honest_rules(), NULL);
	cr_assert_not_null(a);
	for (size_t i = 0; i < d.n; i++)
		cr_assert(a->req[i].tls_end_ns > a->req[i].tls_start_ns && a->req[i].tls_start_ns,
			  "request %zu: no handshake", i);
	ls_attribution_free(a);
	ls_probes_close(p);
	t_drive_free(&d);
	t_sim_stop(&sim);
}
