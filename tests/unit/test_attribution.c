/* Attribution on synthetic records and probe events: exact parts on a hand-computed timeline,
 * missing-event paths, reuse, overflow marking, GPU split, and the sum property at random. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "attribution/attribution.h"
#include "config/profile.h"
#include "report/report.h"
#include "t_unit.h"

#define US 1000ull
#define C_COOKIE 100
#define S_COOKIE 200

/* Added to every sequence number the scenarios stamp (the kernel's start at random: a stream
 * can wrap 2^32 anywhere). */
static uint32_t g_seq0;

static void ev(struct ls_evstore *st, uint64_t cookie, uint8_t role, uint16_t kind, uint64_t ts_us,
	       uint32_t seq, uint32_t len)
{
	struct ls_event e = t_ev(cookie, role, kind, ts_us, seq ? seq + g_seq0 : 0, len, 0);

	if (kind == LS_EV_CONNECT) /* these cases' connects carry no ports */
		e.lport = e.rport = 0;
	t_ev_add(st, e);
}

#define CEV(kind, ts, seq, len) ev(st, C_COOKIE, LS_ROLE_CLIENT, kind, ts, seq, len)
#define SEV(kind, ts, seq, len) ev(st, S_COOKIE, LS_ROLE_SERVER, kind, ts, seq, len)

static void add_frame(struct ls_request *r, uint64_t stamp_us, uint64_t stream_off)
{
	struct ls_frame *f = ls_request_add_frame(r);

	cr_assert_not_null(f);
	f->arrived_ns = stamp_us * US;
	f->stream_off = stream_off;
	f->bytes = 50;
	f->text_len = 5;
	f->tokens = 1;
	f->flags = LS_FRAME_CHOICES;
}

/* The timeline worked out by hand in the comments of each test (times in us). */
static void scenario_run(struct ls_run *run, struct ls_request *r)
{
	memset(run, 0, sizeof(*run));
	ls_request_reset(r, 0);
	r->scheduled_ns = 1000 * US;
	r->admitted_ns = 1500 * US;
	r->started_ns = 1600 * US;
	r->connect_ns = 1800 * US;
	r->new_connection = 1;
	r->socket_cookie = C_COOKIE;
	r->finished_ns = 5400 * US;
	add_frame(r, 3030, 49);
	add_frame(r, 4030, 99);
	add_frame(r, 5210, 149);
	add_frame(r, 5211, 199);
	run->requests = r;
	run->n_requests = 1;
}

static uint64_t g_arrived0_us = 3010; /* kernel arrival of frame 0 */

static void scenario_client(struct ls_evstore *st)
{
	CEV(LS_EV_CONNECT, 1700, 0, 0);
	CEV(LS_EV_ESTABLISHED, 1750, 0, 0);
	CEV(LS_EV_SEND_START, 1900, 1000, 200);
	CEV(LS_EV_SEND_END, 1910, 1200, 200);
	CEV(LS_EV_ARRIVED, 2005, 5100, 0); /* response headers */
	CEV(LS_EV_READ, 2010, 5100, 100);
	CEV(LS_EV_ARRIVED, g_arrived0_us, 5160, 0); /* frame 0: 60 bytes on the wire */
	CEV(LS_EV_READ, 3020, 5160, 60);
	CEV(LS_EV_ARRIVED, 4010, 5220, 0); /* frame 1 */
	CEV(LS_EV_READ, 4020, 5220, 60);
	CEV(LS_EV_ARRIVED, 5010, 5280, 0); /* frame 2 */
	CEV(LS_EV_ARRIVED, 5110, 5340, 0); /* frame 3 */
	CEV(LS_EV_READ, 5200, 5340, 120);  /* frames 2 and 3 read at once */
	CEV(LS_EV_ARRIVED, 5310, 5345, 0); /* chunked terminator */
	CEV(LS_EV_READ, 5320, 5345, 5);
}

/* The server's side, its request read by thread tid of process tgid (0: unknown). */
static void scenario_server_on(struct ls_evstore *st, uint32_t tgid, uint32_t tid)
{
	struct ls_event rd = t_ev(S_COOKIE, LS_ROLE_SERVER, LS_EV_READ, 1950, 1200 + g_seq0, 200, tid);

	rd.tgid = tgid;
	SEV(LS_EV_ESTABLISHED, 1760, 0, 0);
	SEV(LS_EV_ARRIVED, 1905, 1200, 0);
	t_ev_add(st, rd);
	SEV(LS_EV_SEND_START, 2000, 5000, 100);
	SEV(LS_EV_SEND_START, 3000, 5100, 60);
	SEV(LS_EV_SEND_START, 4000, 5160, 60);
	SEV(LS_EV_SEND_START, 5000, 5220, 60);
	SEV(LS_EV_SEND_START, 5100, 5280, 60);
	SEV(LS_EV_SEND_START, 5300, 5340, 5);
}

static void scenario_server(struct ls_evstore *st)
{
	scenario_server_on(st, 0, 0);
}

static void assert_sums(const struct ls_attribution *a)
{
	for (size_t i = 0; i < a->n; i++) {
		const struct ls_req_attr *r = &a->req[i];
		if (r->flags & LS_ATTR_NOT_OK)
			continue;
		cr_assert_eq(ls_parts_sum(&r->ttft), r->ttft_ns, "request %zu TTFT parts", i);
		cr_assert_eq(ls_parts_sum(&r->e2el), r->e2el_ns, "request %zu E2EL parts", i);
		for (uint32_t g = 0; g < r->n_gaps; g++)
			cr_assert_eq(ls_parts_sum(&r->gaps[g]), r->gap_ns[g], "request %zu gap %u", i, g);
	}
}

#define P(parts, part) ((parts).ns[LS_PART_##part] / US)

Test(attribution, exact_parts_fresh_connection_server_watched)
{
	struct ls_run run;
	struct ls_request r = { 0 };
	struct ls_evstore *st = ls_evstore_new();

	scenario_run(&run, &r);
	scenario_client(st);
	scenario_server(st);
	struct ls_attribution *a = ls_attribute(&run, st, NULL, 0, t_honest_rules(), NULL);
	cr_assert_not_null(a);
	const struct ls_req_attr *q = &a->req[0];
	cr_assert_eq(q->flags, 0, "flags %#x", q->flags);
	cr_assert_eq(q->server_cookie, S_COOKIE);
	cr_assert_eq(q->server_read_ns, 1950 * US);
	cr_assert_eq(q->server_arrived_ns, 1905 * US);
	/* TTFT 1000 -> 3030: client 500+100+100 (slot, dispatch, curl setup) + 150 (curl notices)
	 * + 20 (kernel wait, parse) = 870; network 50 connect + 50 request + 10 frame = 110; server
	 * 1950 -> 3000 = 1050. */
	cr_assert_eq(q->ttft_ns, 2030 * US);
	cr_assert_eq(P(q->ttft, CLIENT), 870);
	cr_assert_eq(P(q->ttft, NETWORK), 110);
	cr_assert_eq(P(q->ttft, SERVER), 1050);
	cr_assert_eq(P(q->ttft, UNATTRIBUTED), 0);
	cr_assert_eq(q->n_gaps, 3);
	cr_assert_eq(P(q->gaps[0], SERVER), 970);
	cr_assert_eq(P(q->gaps[0], NETWORK), 10);
	cr_assert_eq(P(q->gaps[0], CLIENT), 20);
	/* Frame 2 shares its read with frame 3: placed back by 50 body bytes + 10 overhead. */
	cr_assert_eq(q->frames[2].seq_end, 5280);
	cr_assert_eq(q->frames[2].exact, 0);
	cr_assert_eq(q->frames[2].kernel_ns, 5010 * US);
	cr_assert_eq(q->frames[2].server_write_ns, 5000 * US);
	cr_assert_eq(P(q->gaps[1], SERVER), 970);
	cr_assert_eq(P(q->gaps[1], NETWORK), 10);
	cr_assert_eq(P(q->gaps[1], CLIENT), 200);
	cr_assert_eq(P(q->gaps[2], CLIENT), 1);
	/* E2EL 1000 -> 5400 with the terminator's tail: server 3079, network 140, client 1181. */
	cr_assert_eq(q->e2el_ns, 4400 * US);
	cr_assert_eq(P(q->e2el, SERVER), 3079);
	cr_assert_eq(P(q->e2el, NETWORK), 140);
	cr_assert_eq(P(q->e2el, CLIENT), 1181);
	assert_sums(a);
	ls_attribution_free(a);
	ls_evstore_free(st);
	ls_request_free(&r);
}

/* The same stream with its sequence numbers wrapping 2^32 between the response head and the
 * first frame (both directions): every part and every frame's stamps as without the wrap. */
Test(attribution, sequence_numbers_that_wrap_give_the_same_parts)
{
	struct ls_attribution *a[2];
	struct ls_request r[2];
	struct ls_run run[2];
	const uint32_t shifts[2] = { 0, 0u - 5130u }; /* 5100 -> 2^32 - 30, 5160 -> 30 */

	for (int k = 0; k < 2; k++) {
		struct ls_evstore *st = ls_evstore_new();
		memset(&r[k], 0, sizeof(r[k]));
		g_seq0 = shifts[k];
		scenario_run(&run[k], &r[k]);
		scenario_client(st);
		scenario_server(st);
		g_seq0 = 0;
		a[k] = ls_attribute(&run[k], st, NULL, 0, t_honest_rules(), NULL);
		cr_assert_not_null(a[k]);
		ls_evstore_free(st);
	}
	const struct ls_req_attr *q = &a[0]->req[0], *w = &a[1]->req[0];
	cr_expect_eq(w->flags, q->flags, "flags %#x, unwrapped %#x", w->flags, q->flags);
	cr_expect_eq(w->server_read_ns, q->server_read_ns);
	cr_expect_eq(w->ttft_ns, q->ttft_ns);
	cr_assert_eq(w->n_gaps, q->n_gaps);
	for (int part = 0; part < LS_PART__COUNT; part++) {
		cr_expect_eq(w->ttft.ns[part], q->ttft.ns[part], "TTFT %s", ls_part_name((enum ls_part)part));
		cr_expect_eq(w->e2el.ns[part], q->e2el.ns[part], "E2EL %s", ls_part_name((enum ls_part)part));
		for (uint32_t g = 0; g < q->n_gaps; g++)
			cr_expect_eq(w->gaps[g].ns[part], q->gaps[g].ns[part], "gap %u %s", g,
				     ls_part_name((enum ls_part)part));
	}
	for (size_t f = 0; f < r[0].n_frames; f++) {
		cr_expect_eq(w->frames[f].kernel_ns, q->frames[f].kernel_ns, "frame %zu", f);
		cr_expect_eq(w->frames[f].server_write_ns, q->frames[f].server_write_ns, "frame %zu", f);
	}
	for (int k = 0; k < 2; k++) {
		ls_attribution_free(a[k]);
		ls_request_free(&r[k]);
	}
}

Test(attribution, no_server_events_is_network_plus_server)
{
	struct ls_run run;
	struct ls_request r = { 0 };
	struct ls_evstore *st = ls_evstore_new();

	scenario_run(&run, &r);
	scenario_client(st);
	struct ls_attribution *a = ls_attribute(&run, st, NULL, 0, t_honest_rules(), NULL);
	const struct ls_req_attr *q = &a->req[0];
	cr_assert(q->flags & LS_ATTR_NO_SERVER);
	cr_assert_eq(P(q->ttft, SERVER), 0);
	cr_assert_eq(P(q->ttft, NETWORK), 50); /* connect only */
	cr_assert_eq(P(q->ttft, NETWORK_SERVER), 3010 - 1900);
	cr_assert_eq(P(q->gaps[0], NETWORK_SERVER), 4010 - 3030);
	cr_assert(strstr(a->why, "network"), "why: %s", a->why);
	assert_sums(a);
	ls_attribution_free(a);
	ls_evstore_free(st);
	ls_request_free(&r);
}

Test(attribution, probes_off_is_unattributed_but_slot_wait_is_client)
{
	struct ls_run run;
	struct ls_request r = { 0 };

	scenario_run(&run, &r);
	struct ls_attribution *a = ls_attribute(&run, NULL, NULL, 0, t_honest_rules(), "not root");
	const struct ls_req_attr *q = &a->req[0];
	cr_assert(q->flags & LS_ATTR_NO_EVENTS);
	cr_assert_eq(P(q->ttft, CLIENT), 600);
	cr_assert_eq(P(q->ttft, UNATTRIBUTED), 3030 - 1600);
	cr_assert(strstr(a->why, "probes off: not root"), "why: %s", a->why);
	cr_assert_eq(a->have_client, 0);
	assert_sums(a);
	ls_attribution_free(a);
	ls_request_free(&r);
}

Test(attribution, reused_connection_has_zero_connect_and_tls)
{
	struct ls_run run;
	struct ls_request rr[2] = { 0 };
	struct ls_evstore *st = ls_evstore_new();

	scenario_run(&run, &rr[0]);
	scenario_client(st);
	scenario_server(st);
	/* Second request on the same socket, from 6000 us. */
	ls_request_reset(&rr[1], 1);
	rr[1].scheduled_ns = 6000 * US;
	rr[1].admitted_ns = 6000 * US;
	rr[1].started_ns = 6010 * US;
	rr[1].socket_cookie = C_COOKIE;
	rr[1].finished_ns = 7100 * US;
	add_frame(&rr[1], 7050, 49);
	CEV(LS_EV_SEND_START, 6040, 1200, 200);
	CEV(LS_EV_SEND_END, 6045, 1400, 200);
	SEV(LS_EV_READ, 6060, 1400, 200);
	SEV(LS_EV_SEND_START, 7000, 5345, 160);
	CEV(LS_EV_ARRIVED, 7010, 5505, 0);
	CEV(LS_EV_READ, 7040, 5505, 160);
	run.requests = rr;
	run.n_requests = 2;
	struct ls_attribution *a = ls_attribute(&run, st, NULL, 0, t_honest_rules(), NULL);
	const struct ls_req_attr *q = &a->req[1];
	cr_assert(q->flags & LS_ATTR_REUSED);
	cr_assert_eq(q->connect_call_ns, 0);
	cr_assert_eq(q->tls_start_ns, 0);
	cr_assert_eq(q->request_send_ns, 6040 * US);
	/* 6000 -> 7050: client 10 + 30 + 30 + 10, network 20 + 10, server 940. */
	cr_assert_eq(P(q->ttft, CLIENT), 80);
	cr_assert_eq(P(q->ttft, NETWORK), 30);
	cr_assert_eq(P(q->ttft, SERVER), 940);
	cr_assert_eq(q->flags & ~LS_ATTR_REUSED, 0, "flags %#x", q->flags);
	assert_sums(a);
	ls_attribution_free(a);
	ls_evstore_free(st);
	for (int i = 0; i < 2; i++)
		ls_request_free(&rr[i]);
}

Test(attribution, tls_handshake_is_network_and_curl_notice_is_client)
{
	struct ls_run run;
	struct ls_request r = { 0 };
	struct ls_evstore *st = ls_evstore_new();

	scenario_run(&run, &r);
	r.tls_ns = 1890 * US;
	scenario_client(st);
	scenario_server(st);
	CEV(LS_EV_TLS_START, 1760, 0, 0);
	CEV(LS_EV_TLS_END, 1850, 0, 0);
	struct ls_attribution *a = ls_attribute(&run, st, NULL, 0, t_honest_rules(), NULL);
	const struct ls_req_attr *q = &a->req[0];
	cr_assert_eq(q->tls_end_ns, 1850 * US);
	cr_assert_eq(P(q->ttft, NETWORK), 110 + 90);
	cr_assert_eq(P(q->ttft, CLIENT), 870 - 90);
	assert_sums(a);
	ls_attribution_free(a);

	/* Without the TLS events (no libssl uprobes): the handshake span is unattributed. */
	ls_evstore_free(st);
	st = ls_evstore_new();
	scenario_client(st);
	scenario_server(st);
	a = ls_attribute(&run, st, NULL, 0, t_honest_rules(), NULL);
	q = &a->req[0];
	cr_assert(q->flags & LS_ATTR_NO_TLS_EVENTS);
	cr_assert_eq(P(q->ttft, UNATTRIBUTED), 1900 - 1750);
	assert_sums(a);
	ls_attribution_free(a);
	ls_evstore_free(st);
	ls_request_free(&r);
}

Test(attribution, overflow_marks_the_request_and_says_so)
{
	struct ls_run run;
	struct ls_request r = { 0 };
	struct ls_evstore *st = ls_evstore_new();
	uint64_t lost[LS_EV__COUNT] = { 0 };

	scenario_run(&run, &r);
	scenario_client(st);
	scenario_server(st);
	lost[LS_EV_ARRIVED] = 3;
	ls_evstore_set_lost_by_kind(st, lost);
	cr_assert_eq(ls_evstore_set_lost(st, S_COOKIE, 3), 0);
	struct ls_attribution *a = ls_attribute(&run, st, NULL, 0, t_honest_rules(), NULL);
	cr_assert(a->req[0].flags & LS_ATTR_LOST_EVENTS);
	cr_assert_eq(a->n_lost_requests, 1);
	cr_assert_eq(a->lost_events, 3);
	cr_assert(strstr(a->why, "3 probe events lost"), "why: %s", a->why);
	char per_kind[64];
	snprintf(per_kind, sizeof(per_kind), "%s 3): 1 requests marked", ls_event_kind_name(LS_EV_ARRIVED));
	cr_assert(strstr(a->why, per_kind), "losses are named per event kind: %s", a->why);
	ls_attribution_free(a);
	ls_evstore_free(st);
	ls_request_free(&r);
}

Test(attribution, gpu_steps_split_server_into_queue_and_gpu)
{
	struct ls_run run;
	struct ls_request r = { 0 };
	struct ls_evstore *st = ls_evstore_new();
	struct ls_gpu_step steps[2] = {
		{ .start_ns = 2500 * US, .end_ns = 2800 * US },
		{ .start_ns = 2700 * US, .end_ns = 2900 * US }, /* overlaps: union 2500..2900 */
	};

	scenario_run(&run, &r);
	scenario_client(st);
	scenario_server(st);
	struct ls_attribution *a = ls_attribute(&run, st, steps, 2, t_honest_rules(), NULL);
	const struct ls_req_attr *q = &a->req[0];
	cr_assert(a->have_gpu);
	cr_assert_eq(P(q->ttft, SERVER), 0);
	cr_assert_eq(P(q->ttft, GPU), 400);
	cr_assert_eq(P(q->ttft, QUEUE), 1050 - 400);
	assert_sums(a);
	ls_attribution_free(a);
	ls_evstore_free(st);
	ls_request_free(&r);
}

/* llama_decode's uprobe steps of slot 3: a 32-token prompt step 2200..2800, then 1-token decode
 * steps 3100..3900 and 4100..4900 (the engine counted 32 prompt and 3 predicted tokens). TTFT's
 * server time 1950 -> 3000: queue 250 (before its first step), prefill 600, server 200 (after
 * the step, before the write); gap 0's server time 3030 -> 4000: decode 800, server 170.
 * Catches: queue taken after the step, decode steps counted as prefill, the split applied to
 * network time, parts that no longer sum. */
static struct ls_step_event upstep(uint64_t start_us, uint64_t end_us, int32_t seq, uint32_t tokens)
{
	struct ls_step_event e = { .start_ns = start_us * US, .end_ns = end_us * US, .tgid = 7, .tid = 7,
				   .n_tokens = tokens, .n_seqs = 1, .flags = LS_STEP_POS_UNREAD };
	e.seq_id[0] = seq;
	e.seq_tokens[0] = tokens;
	return e;
}

Test(attribution, uprobe_steps_split_server_into_queue_prefill_decode)
{
	struct ls_run run;
	struct ls_request r = { 0 };
	struct ls_evstore *st = ls_evstore_new();
	struct ls_step_event up[3] = { upstep(4100, 4900, 3, 1), upstep(2200, 2800, 3, 32), upstep(3100, 3900, 3, 1) };

	scenario_run(&run, &r);
	r.engine_prompt_n = 32;
	r.engine_predicted_n = 3;
	scenario_client(st);
	scenario_server(st);
	struct ls_attr_steps steps = { .uprobe = up, .n_uprobe = 3 };
	const struct ls_evstore *stores[1] = { st };
	struct ls_attribution *a = ls_attribute_steps(&run, stores, 1, NULL, &steps, t_honest_rules(), NULL);
	cr_assert_not_null(a);
	const struct ls_req_attr *q = &a->req[0];
	cr_assert(a->have_engine);
	cr_assert_eq(a->engine.sessions, 1);
	cr_assert_eq(a->engine.mapped, 1);
	cr_assert_eq(q->engine.flags, LS_ENG_MAPPED | LS_ENG_NO_FRONTEND, "flags %#x", q->engine.flags);
	cr_assert_eq(q->engine.seq, 3);
	cr_assert_eq(q->engine.prompt_tokens, 32);
	cr_assert_eq(q->engine.decode_steps, 2);
	cr_assert_eq(q->engine.queue_ns, 250 * US);
	cr_assert_eq(q->engine.prefill_ns, 600 * US);
	cr_assert_eq(q->engine.decode_ns, 2100 * US);
	cr_assert_eq(q->engine.decode_steps_ns, 1600 * US);
	cr_assert_eq(P(q->ttft, QUEUE), 250);
	cr_assert_eq(P(q->ttft, PREFILL), 600);
	cr_assert_eq(P(q->ttft, SERVER), 200);
	cr_assert_eq(P(q->ttft, DECODE), 0);
	cr_assert_eq(P(q->ttft, NETWORK), 110);
	cr_assert_eq(P(q->gaps[0], DECODE), 800);
	cr_assert_eq(P(q->gaps[0], SERVER), 170);
	cr_assert_eq(P(q->e2el, QUEUE) + P(q->e2el, PREFILL), 850);
	assert_sums(a);
	cJSON *j = ls_attribution_request_json(a, 0);
	cr_assert_eq(t_json_get(j, "engine.prefill_ns")->valuedouble, 600.0 * US);
	cr_assert_str_eq(t_json_get(j, "engine.source")->valuestring, "uprobe");
	cr_assert_eq(t_json_get(j, "ttft.prefill_ns")->valuedouble, 600.0 * US);
	/* The attribution file read back (latscope report): the session and the parts. */
	char path[] = "/tmp/latscope-engattr.XXXXXX", *line = cJSON_PrintUnformatted(j);
	int fd = mkstemp(path);
	cr_assert(fd >= 0 && line);
	FILE *f = fdopen(fd, "w");
	fprintf(f, "{\"latscope_attribution\":1}\n%s\n", line);
	fclose(f);
	struct ls_attribution *back = ls_attribution_load(path, &run, t_honest_rules());
	unlink(path);
	cr_assert_not_null(back);
	cr_assert(back->have_engine);
	cr_assert_eq(back->req[0].engine.flags, LS_ENG_MAPPED | LS_ENG_NO_FRONTEND);
	cr_assert_eq(back->req[0].engine.seq, 3);
	cr_assert_eq(back->req[0].engine.decode_ns, 2100 * US);
	cr_assert_eq(P(back->req[0].ttft, PREFILL), 600);
	ls_attribution_free(back);
	cJSON_free(line);
	cJSON_Delete(j);
	ls_attribution_free(a);
	ls_evstore_free(st);
	ls_request_free(&r);
}

/* The same run with the server's read of the request by thread 21 of process 7 (the READ
 * event's aux), and llama_tokenize calls: thread 21 tokenizes it twice (1990-2010, the buffer too
 * small; 2020-2060), thread 22 another request's prompt (2100-2150), the engine's thread 7 a stop
 * word (2150-2160), thread 21 a /tokenize request before the read (1800-1900). TTFT's server
 * time 1950 -> 3000: frontend 1950 -> 2060 = 110, queue 2060 -> 2200 = 140, prefill 600, server
 * 200. Catches: the read's thread not carried from the kernel's event to the join, frontend not
 * taken out of queue, the parts no longer summing. */
Test(attribution, uprobe_tokenize_splits_frontend_out_of_queue)
{
	struct ls_run run;
	struct ls_request r = { 0 };
	struct ls_evstore *st = ls_evstore_new();
	struct ls_step_event up[8] = { upstep(4100, 4900, 3, 1), upstep(2200, 2800, 3, 32), upstep(3100, 3900, 3, 1) };
	const uint64_t calls[5][3] = { { 21, 1990, 2010 }, { 21, 2020, 2060 }, { 22, 2100, 2150 }, { 7, 2150, 2160 },
				       { 21, 1800, 1900 } };
	for (int k = 0; k < 5; k++)
		up[3 + k] = (struct ls_step_event){ .start_ns = calls[k][1] * US, .end_ns = calls[k][2] * US, .tgid = 7,
						    .tid = (uint32_t)calls[k][0], .flags = LS_STEP_TOKENIZE, .ret = 32 };
	scenario_run(&run, &r);
	r.engine_prompt_n = 32;
	r.engine_predicted_n = 3;
	scenario_client(st);
	scenario_server_on(st, 7, 21);
	struct ls_attr_steps steps = { .uprobe = up, .n_uprobe = 8 };
	const struct ls_evstore *stores[1] = { st };
	struct ls_attribution *a = ls_attribute_steps(&run, stores, 1, NULL, &steps, t_honest_rules(), NULL);
	cr_assert_not_null(a);
	const struct ls_req_attr *q = &a->req[0];
	cr_assert_eq(a->engine.uprobe_steps, 3);
	cr_assert_eq(a->engine.tokenize_calls, 5);
	cr_assert_eq(a->engine.marks_joined, 2);
	cr_assert_eq(a->engine.frontend, 1);
	cr_assert_eq(q->server_read_tid, 21);
	cr_assert_eq(q->engine.flags, LS_ENG_MAPPED, "flags %#x", q->engine.flags);
	cr_assert_eq(q->engine.tokenize_calls, 2);
	cr_assert_eq(q->engine.frontend_ns, 110 * US);
	cr_assert_eq(q->engine.queue_ns, 140 * US);
	cr_assert_eq(P(q->ttft, FRONTEND), 110);
	cr_assert_eq(P(q->ttft, QUEUE), 140);
	cr_assert_eq(P(q->ttft, PREFILL), 600);
	cr_assert_eq(P(q->ttft, SERVER), 200);
	cr_assert_eq(P(q->e2el, FRONTEND), 110);
	cr_assert_eq(P(q->gaps[0], FRONTEND), 0);
	assert_sums(a);
	cJSON *j = ls_attribution_request_json(a, 0);
	cr_assert_eq(t_json_get(j, "engine.frontend_ns")->valuedouble, 110.0 * US);
	cr_assert_eq(t_json_get(j, "ttft.frontend_ns")->valuedouble, 110.0 * US);
	cJSON_Delete(j);
	ls_attribution_free(a);
	ls_evstore_free(st);
	ls_request_free(&r);
}

Test(attribution, out_of_order_stamps_are_flagged_and_still_sum)
{
	struct ls_run run;
	struct ls_request r = { 0 };
	struct ls_evstore *st = ls_evstore_new();

	scenario_run(&run, &r);
	g_arrived0_us = 3025; /* the kernel had it after the read at 3020: impossible */
	scenario_client(st);
	g_arrived0_us = 3010;
	scenario_server(st);
	struct ls_attribution *a = ls_attribute(&run, st, NULL, 0, t_honest_rules(), NULL);
	cr_assert(a->req[0].flags & LS_ATTR_DISORDER);
	assert_sums(a);
	ls_attribution_free(a);
	ls_evstore_free(st);
	ls_request_free(&r);
}

Test(attribution, clock_started_excludes_the_slot_wait)
{
	struct ls_run run;
	struct ls_request r = { 0 };
	struct ls_evstore *st = ls_evstore_new();
	struct ls_read_rules rules;

	rules = *t_honest_rules();
	rules.origin = LS_ORIGIN_STARTED;
	rules.e2el_end = LS_END_LAST_CONTENT;
	scenario_run(&run, &r);
	scenario_client(st);
	scenario_server(st);
	struct ls_attribution *a = ls_attribute(&run, st, NULL, 0, &rules, NULL);
	const struct ls_req_attr *q = &a->req[0];
	cr_assert_eq(q->ttft_ns, (3030 - 1600) * US);
	cr_assert_eq(P(q->ttft, CLIENT), 870 - 600);
	cr_assert_eq(q->e2el_ns, (5211 - 1600) * US);
	assert_sums(a);
	ls_attribution_free(a);
	ls_evstore_free(st);
	ls_request_free(&r);
}

Test(attribution, failed_request_has_no_windows)
{
	struct ls_run run;
	struct ls_request r = { 0 };

	scenario_run(&run, &r);
	r.fail = LS_FAIL_RESET_MID_STREAM;
	struct ls_attribution *a = ls_attribute(&run, NULL, NULL, 0, t_honest_rules(), NULL);
	cr_assert(a->req[0].flags & LS_ATTR_NOT_OK);
	cr_assert_eq(a->req[0].n_gaps, 0);
	ls_attribution_free(a);
	ls_request_free(&r);
}

/* No default rules below config/: the caller must say how to read the records. */
Test(attribution, rules_are_required)
{
	struct ls_run run;
	struct ls_request r = { 0 };

	scenario_run(&run, &r);
	errno = 0;
	cr_assert_null(ls_attribute(&run, NULL, NULL, 0, NULL, NULL));
	cr_assert_eq(errno, EINVAL);
	ls_request_free(&r);
}

/* Random timelines with events dropped, jittered and garbage added: never a crash, and every
 * window's parts add up exactly. */
Test(attribution, parts_always_sum_exactly)
{
	unsigned seed = 12345;

	for (int iter = 0; iter < 300; iter++) {
		struct ls_run run;
		struct ls_request r = { 0 };
		struct ls_evstore *st = ls_evstore_new();
		struct ls_evstore *full = ls_evstore_new();

		scenario_run(&run, &r);
		scenario_client(full);
		scenario_server(full);
		for (size_t i = 0; i < ls_evstore_sockets(full); i++) {
			const struct ls_sock_events *s = ls_evstore_at(full, i);
			for (size_t j = 0; j < s->n; j++) {
				struct ls_event e = s->ev[j];
				if (rand_r(&seed) % 4 == 0)
					continue; /* dropped */
				e.ts_ns += (uint64_t)(rand_r(&seed) % 2000) * US; /* jittered, even past stamps */
				cr_assert_eq(ls_evstore_add(st, &e), 0);
			}
		}
		for (int k = 0; k < 8; k++) { /* and some garbage: any kind, sequence, time, socket */
			struct ls_event e = { 0 };
			e.ts_ns = (uint64_t)(rand_r(&seed) % 8000) * US;
			e.cookie = rand_r(&seed) % 2 ? C_COOKIE : S_COOKIE;
			e.kind = (uint16_t)(rand_r(&seed) % (LS_EV__COUNT + 2));
			e.role = (uint8_t)(rand_r(&seed) % 3);
			e.seq = (uint32_t)rand_r(&seed);
			e.len = (uint32_t)rand_r(&seed) % 100000;
			e.lport = (uint16_t)(rand_r(&seed) % 2 ? 40000 : 8000);
			e.rport = (uint16_t)(e.lport == 8000 ? 40000 : 8000);
			cr_assert_eq(ls_evstore_add(st, &e), 0);
		}
		for (uint32_t f = 0; f < r.n_frames; f++)
			r.frames[f].arrived_ns += (uint64_t)(rand_r(&seed) % 500) * US;
		if (rand_r(&seed) % 2)
			r.new_connection = 0;
		struct ls_attribution *a = ls_attribute(&run, st, NULL, 0, t_honest_rules(), NULL);
		cr_assert_not_null(a);
		assert_sums(a);
		ls_attribution_free(a);
		ls_evstore_free(st);
		ls_evstore_free(full);
		ls_request_free(&r);
	}
}

Test(attribution, report_and_json)
{
	struct ls_run run;
	struct ls_request r = { 0 };
	struct ls_evstore *st = ls_evstore_new();
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	scenario_run(&run, &r);
	scenario_client(st);
	scenario_server(st);
	struct ls_attribution *a = ls_attribute(&run, st, NULL, 0, t_honest_rules(), NULL);
	ls_attribution_print(f, a);
	fclose(f);
	cr_assert(strstr(text, "Where the latency went"), "%s", text);
	cr_assert(strstr(text, "TTFT"));
	cr_assert(strstr(text, "server"));
	cr_assert(strstr(text, "E2EL"));
	cJSON *j = ls_attribution_request_json(a, 0);
	cr_assert_not_null(j);
	cJSON *ttft = cJSON_GetObjectItem(j, "ttft");
	cr_assert_eq(cJSON_GetObjectItem(ttft, "server_ns")->valuedouble, 1050.0 * US);
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "itl")), 3);
	cJSON_Delete(j);

	char path[] = "/tmp/latscope-trace-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(ls_trace_write(path, &run, a, st, NULL, 0), 0);
	FILE *tf = fopen(path, "r");
	char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof(buf) - 1, tf);
	fclose(tf);
	unlink(path);
	buf[n] = '\0';
	cJSON *t = cJSON_Parse(buf);
	cr_assert_not_null(t, "trace is not JSON");
	cr_assert(cJSON_GetArraySize(cJSON_GetObjectItem(t, "traceEvents")) > 10);
	cr_assert(strstr(buf, "\"server\""));
	cr_assert(strstr(buf, "server conn 8000<-40000"));
	cJSON_Delete(t);
	free(text);
	ls_attribution_free(a);
	ls_evstore_free(st);
	ls_request_free(&r);
}

/* ---- a run merged from several processes (MPI): one store per process ---- */

#define SHIFT_US 10000ull

static void shift_request(struct ls_request *r, uint64_t us)
{
	uint64_t *stamps[] = { &r->scheduled_ns, &r->admitted_ns, &r->started_ns, &r->connect_ns, &r->finished_ns };
	for (size_t i = 0; i < sizeof(stamps) / sizeof(stamps[0]); i++)
		*stamps[i] += us * US;
	for (uint32_t i = 0; i < r->n_frames; i++)
		r->frames[i].arrived_ns += us * US;
}

/* Two requests on sockets with the same cookies (two hosts), the second SHIFT_US later. */
static void two_process_run(struct ls_run *run, struct ls_request r[2], struct ls_evstore *st[2])
{
	struct ls_run one;
	scenario_run(&one, &r[0]);
	scenario_run(&one, &r[1]);
	r[1].id = 1;
	shift_request(&r[1], SHIFT_US);
	memset(run, 0, sizeof(*run));
	run->requests = r;
	run->n_requests = 2;
	for (int k = 0; k < 2; k++) {
		st[k] = ls_evstore_new();
		cr_assert_not_null(st[k]);
	}
	scenario_client(st[0]);
	scenario_server(st[0]);
	struct ls_evstore *tmp = ls_evstore_new();
	scenario_client(tmp);
	scenario_server(tmp);
	for (size_t i = 0; i < ls_evstore_sockets(tmp); i++) {
		const struct ls_sock_events *s = ls_evstore_at(tmp, i);
		for (size_t j = 0; j < s->n; j++) {
			struct ls_event e = s->ev[j];
			e.ts_ns += SHIFT_US * US;
			cr_assert_eq(ls_evstore_add(st[1], &e), 0);
		}
	}
	ls_evstore_free(tmp);
}

static void expect_exact(const struct ls_req_attr *q)
{
	cr_expect_eq(q->flags, 0, "request %llu flags %#x", (unsigned long long)q->id, q->flags);
	cr_expect_eq(q->ttft_ns, 2030 * US);
	cr_expect_eq(P(q->ttft, CLIENT), 870);
	cr_expect_eq(P(q->ttft, NETWORK), 110);
	cr_expect_eq(P(q->ttft, SERVER), 1050);
	cr_expect_eq(P(q->e2el, SERVER), 3079);
}

Test(attribution_parts, each_request_with_its_own_process_events)
{
	struct ls_run run;
	struct ls_request r[2] = { 0 };
	struct ls_evstore *st[2];
	two_process_run(&run, r, st);
	const struct ls_evstore *const stores[2] = { st[0], st[1] };
	uint32_t part[2] = { 0, 1 };
	struct ls_attribution *a = ls_attribute_parts(&run, stores, 2, part, NULL, 0, t_honest_rules(), NULL);
	cr_assert_not_null(a);
	cr_assert_eq(a->n, 2);
	expect_exact(&a->req[0]);
	expect_exact(&a->req[1]);
	cr_expect(a->have_client && a->have_server);
	cr_expect_str_eq(a->why, "");
	assert_sums(a);
	ls_attribution_free(a);
	/* The wrong store: the first request's window has none of the second process's events. */
	part[0] = 1;
	a = ls_attribute_parts(&run, stores, 2, part, NULL, 0, t_honest_rules(), NULL);
	cr_assert_not_null(a);
	cr_expect(a->req[0].flags & LS_ATTR_NO_EVENTS, "flags %#x", a->req[0].flags);
	expect_exact(&a->req[1]);
	ls_attribution_free(a);
	/* A part out of range is refused. */
	part[0] = 2;
	cr_expect_null(ls_attribute_parts(&run, stores, 2, part, NULL, 0, t_honest_rules(), NULL));
	for (int k = 0; k < 2; k++) {
		ls_evstore_free(st[k]);
		ls_request_free(&r[k]);
	}
}

Test(attribution_parts, a_process_without_probes_and_lost_events_summed)
{
	struct ls_run run;
	struct ls_request r[2] = { 0 };
	struct ls_evstore *st[2];
	two_process_run(&run, r, st);
	uint64_t lost[LS_EV__COUNT] = { 0 };
	lost[LS_EV_READ] = 2;
	ls_evstore_set_lost_by_kind(st[0], lost);
	const struct ls_evstore *const stores[3] = { st[0], NULL, st[1] };
	uint32_t part[2] = { 1, 2 };
	struct ls_attribution *a = ls_attribute_parts(&run, stores, 3, part, NULL, 0, t_honest_rules(), NULL);
	cr_assert_not_null(a);
	cr_expect(a->req[0].flags & LS_ATTR_NO_EVENTS, "no probes there: flags %#x", a->req[0].flags);
	cr_expect_gt(P(a->req[0].ttft, UNATTRIBUTED), 0, "no events: the kernel part is unattributed");
	expect_exact(&a->req[1]);
	cr_expect_eq(a->lost_events, 2, "the lost events of every store, even one with no request");
	cr_expect(strstr(a->why, "read 2"), "%s", a->why);
	ls_attribution_free(a);
	for (int k = 0; k < 2; k++) {
		ls_evstore_free(st[k]);
		ls_request_free(&r[k]);
	}
}

struct msgs {
	struct ls_evstore *into;
	size_t n, max_len;
};

static uint64_t plus_shift(void *ctx, uint64_t t)
{
	(void)ctx;
	return t + SHIFT_US * US;
}

static int take_msg(void *ctx, const void *buf, size_t len)
{
	struct msgs *m = ctx;
	m->n++;
	if (len > m->max_len)
		m->max_len = len;
	return ls_evstore_unpack(m->into, buf, len, plus_shift, NULL);
}

/* What a rank sends rank 0: only the sockets asked for, in bounded messages, moved in time. */
Test(attribution_parts, events_packed_in_bounded_messages_and_moved)
{
	struct ls_run run;
	struct ls_request r = { 0 };
	struct ls_evstore *st = ls_evstore_new(), *moved = ls_evstore_new();
	scenario_run(&run, &r);
	scenario_client(st);
	scenario_server(st);
	ev(st, 300, LS_ROLE_SERVER, LS_EV_ESTABLISHED, 1000, 0, 0); /* another rank's server socket */
	cr_assert_eq(ls_evstore_set_lost(st, C_COOKIE, 1), 0);
	size_t max = sizeof(struct ls_evseg_head) + 3 * sizeof(struct ls_event);
	struct msgs m = { .into = moved };
	uint64_t cookies[] = { S_COOKIE, C_COOKIE, 999, C_COOKIE, 0 }, n_events = 0;
	cr_assert_eq(ls_evstore_pack(st, cookies, 5, max, take_msg, &m, &n_events), 0);
	size_t want = ls_evstore_find(st, C_COOKIE)->n + ls_evstore_find(st, S_COOKIE)->n;
	cr_expect_eq(n_events, want);
	cr_expect_leq(m.max_len, max);
	cr_expect_geq(m.n, want / 3, "%zu messages", m.n);
	cr_expect_eq(ls_evstore_sockets(moved), 2, "the socket not asked for stays home");
	cr_expect_null(ls_evstore_find(moved, 300));
	const struct ls_sock_events *c = ls_evstore_find(moved, C_COOKIE), *c0 = ls_evstore_find(st, C_COOKIE);
	cr_assert_not_null(c);
	cr_expect_eq(c->n, c0->n);
	cr_expect_eq(c->lost, 1);
	for (size_t j = 0; j < c->n; j++)
		cr_expect_eq(c->ev[j].ts_ns, c0->ev[j].ts_ns + SHIFT_US * US);
	/* Bytes that are not whole segments are refused. */
	char junk[sizeof(struct ls_evseg_head) + 5] = { 0 };
	struct ls_evseg_head h = { .cookie = 1, .n = 1 };
	memcpy(junk, &h, sizeof(h));
	cr_expect_eq(ls_evstore_unpack(moved, junk, sizeof(junk), NULL, NULL), -EPROTO);
	/* The moved store attributes the moved request as the first did the original. */
	shift_request(&r, SHIFT_US);
	ls_evstore_set_lost(moved, C_COOKIE, 0);
	struct ls_attribution *a = ls_attribute(&run, moved, NULL, 0, t_honest_rules(), NULL);
	cr_assert_not_null(a);
	cr_expect_eq(a->req[0].flags, LS_ATTR_LOST_EVENTS, "flags %#x", a->req[0].flags);
	cr_expect_eq(P(a->req[0].ttft, SERVER), 1050);
	ls_attribution_free(a);
	ls_evstore_free(st);
	ls_evstore_free(moved);
	ls_request_free(&r);
}
