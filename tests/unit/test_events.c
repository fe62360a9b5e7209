/* The kernel/user ABI (bpf/events.h) and the per-socket event store. */
#include <criterion/criterion.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include "events.h"
#include "probes/evstore.h"
#include "probes/probes.h"

Test(events, layout_is_pinned)
{
	cr_assert_eq(sizeof(struct ls_event), 40);
	cr_assert_eq(offsetof(struct ls_event, ts_ns), 0);
	cr_assert_eq(offsetof(struct ls_event, cookie), 8);
	cr_assert_eq(offsetof(struct ls_event, tgid), 16);
	cr_assert_eq(offsetof(struct ls_event, kind), 20);
	cr_assert_eq(offsetof(struct ls_event, role), 22);
	cr_assert_eq(offsetof(struct ls_event, flags), 23);
	cr_assert_eq(offsetof(struct ls_event, seq), 24);
	cr_assert_eq(offsetof(struct ls_event, len), 28);
	cr_assert_eq(offsetof(struct ls_event, lport), 32);
	cr_assert_eq(offsetof(struct ls_event, rport), 34);
	cr_assert_eq(offsetof(struct ls_event, aux), 36);
	cr_assert_eq(sizeof(struct ls_tgid_info), 4);
	cr_assert_eq(sizeof(struct ls_listen_info), 4);
}

Test(events, every_kind_has_a_distinct_name)
{
	for (unsigned k = 0; k < LS_EV__COUNT; k++) {
		cr_assert_not_null(ls_event_kind_name(k));
		cr_assert_str_neq(ls_event_kind_name(k), "unknown", "kind %u", k);
		for (unsigned j = 0; j < k; j++)
			cr_assert_str_neq(ls_event_kind_name(k), ls_event_kind_name(j));
	}
	cr_assert_str_eq(ls_event_kind_name(LS_EV__COUNT), "unknown");
}

Test(events, store_keeps_each_socket_in_time_order)
{
	struct ls_evstore *st = ls_evstore_new();
	uint64_t ts[] = { 50, 10, 30, 30, 20, 60, 5 };

	cr_assert_not_null(st);
	for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
		struct ls_event e = { .ts_ns = ts[i], .cookie = 7, .kind = LS_EV_READ, .seq = (uint32_t)i };
		cr_assert_eq(ls_evstore_add(st, &e), 0);
	}
	for (uint64_t c = 1000; c < 3000; c++) { /* many sockets: the table grows */
		struct ls_event e = { .ts_ns = c, .cookie = c, .kind = LS_EV_ARRIVED };
		cr_assert_eq(ls_evstore_add(st, &e), 0);
	}
	const struct ls_sock_events *s = ls_evstore_find(st, 7);
	cr_assert_not_null(s);
	cr_assert_eq(s->n, 7);
	for (size_t i = 1; i < s->n; i++)
		cr_assert_leq(s->ev[i - 1].ts_ns, s->ev[i].ts_ns);
	/* Equal stamps keep their arrival order (seq 2 before 3). */
	cr_assert_eq(s->ev[3].seq, 2);
	cr_assert_eq(s->ev[4].seq, 3);
	cr_assert_eq(ls_sock_events_from(s, 30), 3);
	cr_assert_eq(ls_sock_events_from(s, 61), 7);
	cr_assert_eq(ls_evstore_sockets(st), 2001);
	cr_assert_eq(ls_evstore_find(st, 2999)->n, 1);
	cr_assert_null(ls_evstore_find(st, 99));
	cr_assert_eq(ls_evstore_count(st, LS_EV_READ), 7);
	cr_assert_eq(ls_evstore_count(st, LS_EV_ARRIVED), 2000);
	cr_assert_eq(ls_evstore_set_lost(st, 7, 4), 0);
	cr_assert_eq(ls_evstore_set_lost(st, 7, 2), 0); /* a running total: keeps the larger */
	cr_assert_eq(ls_evstore_find(st, 7)->lost, 4);
	uint64_t lost[LS_EV__COUNT] = { [LS_EV_READ] = 4, [LS_EV_ARRIVED] = 1 };
	ls_evstore_set_lost_by_kind(st, lost);
	cr_assert_eq(ls_evstore_lost_total(st), 5);
	cr_assert_eq(ls_evstore_lost(st, LS_EV_READ), 4);
	ls_evstore_free(st);
}

/* Bad options fail before anything is loaded, with a reason naming the problem. */
/* The hint sizes each new socket's first array, so a burst's sockets do not all double in step
 * (the holes each doubling leaves were 3 MB of 1,400 streams' RSS); growth past it still works. */
Test(events, store_sizes_sockets_by_the_expected_events)
{
	struct ls_evstore *st = ls_evstore_new();
	cr_assert_not_null(st);
	ls_evstore_expect(st, 232);
	for (uint32_t i = 0; i < 300; i++) {
		struct ls_event e = { .ts_ns = 1000 + i, .cookie = 1, .kind = LS_EV_READ, .seq = i };
		cr_assert_eq(ls_evstore_add(st, &e), 0);
		if (i == 0)
			cr_assert_eq(ls_evstore_find(st, 1)->cap, 232, "the first array holds the hint");
	}
	const struct ls_sock_events *s = ls_evstore_find(st, 1);
	cr_assert_eq(s->n, 300);
	cr_assert_eq(s->cap, 464, "then it doubles");
	for (size_t i = 0; i < s->n; i++)
		cr_assert_eq(s->ev[i].seq, i);
	ls_evstore_expect(st, 3); /* below the floor: 32 */
	struct ls_event e = { .ts_ns = 1, .cookie = 2, .kind = LS_EV_READ };
	cr_assert_eq(ls_evstore_add(st, &e), 0);
	cr_assert_eq(ls_evstore_find(st, 2)->cap, 32);
	ls_evstore_free(st);
}

Test(events, probes_open_rejects_bad_options)
{
	char why[256];
	pid_t self = getpid();
	struct ls_probes_opts none = { 0 };
	struct ls_probes_opts ring = { .client_pids = &self, .n_client_pids = 1, .ringbuf_bytes = 5000 };

	cr_assert_null(ls_probes_open(&none, why, sizeof(why)));
	cr_assert(strstr(why, "no process to watch"), "%s", why);
	cr_assert_null(ls_probes_open(&ring, why, sizeof(why)));
	cr_assert(strstr(why, "5000"), "%s", why);
	cr_assert_eq(ls_probes_fd(NULL), -1);
	ls_probes_drain(NULL);
	ls_probes_close(NULL);
	cr_assert_str_eq(ls_probes_notes(NULL), "");
	cr_assert_eq(ls_socket_cookie(-1), 0);
}

/* A --server-pid that is no process is refused by name (checked once the kernel's BTF is
 * there to load against; without it the open fails earlier, for that reason). */
Test(events, probes_open_rejects_a_server_pid_that_is_gone)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK))
		cr_skip_test("no kernel BTF (/sys/kernel/btf/vmlinux): the probes stop before the pids");
	char why[256];
	pid_t self = getpid(), gone = 0x3ffffff0;
	struct ls_probes_opts server = { .client_pids = &self, .n_client_pids = 1, .server_pids = &gone,
					 .n_server_pids = 1 };
	cr_assert_null(ls_probes_open(&server, why, sizeof(why)));
	cr_assert(strstr(why, "--server-pid"), "%s", why);
}
