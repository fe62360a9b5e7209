/* Unit tests of the lab's pure parts: the delay FIFO (order, jitter, rate, drops), the
 * TIME_WAIT count, the ephemeral-port arithmetic, namespace-name ownership, argv words. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "lab/lab.h"

static void push(struct lab_fifo *q, const struct lab_shape *sh, uint64_t sent, uint32_t len,
		 uint64_t *rng)
{
	struct lab_pkt *p = lab_fifo_tail(q);
	cr_assert(p, "queue full too early");
	p->sent_ns = sent;
	p->len = len;
	lab_fifo_push(q, sh, rng);
}

Test(lab_fifo, delay_is_one_way_from_the_send_stamp)
{
	struct lab_fifo q;
	struct lab_shape sh = { .one_way_ns = 250000 };
	uint64_t rng = 1;
	cr_assert_eq(lab_fifo_init(&q, 8), 0);
	push(&q, &sh, 1000, 100, &rng);
	push(&q, &sh, 5000, 100, &rng);
	cr_expect_eq(lab_fifo_head(&q)->due_ns, 251000);
	lab_fifo_pop(&q);
	cr_expect_eq(lab_fifo_head(&q)->due_ns, 255000);
	lab_fifo_pop(&q);
	cr_expect_null(lab_fifo_head(&q));
	lab_fifo_free(&q);
}

Test(lab_fifo, jitter_never_reorders_and_is_seeded)
{
	struct lab_fifo a, b;
	struct lab_shape sh = { .one_way_ns = 250000, .jitter_ns = 200000 };
	uint64_t ra = 42, rb = 42;
	cr_assert_eq(lab_fifo_init(&a, 1000), 0);
	cr_assert_eq(lab_fifo_init(&b, 1000), 0);
	uint64_t min_d = UINT64_MAX, max_d = 0;
	for (int i = 0; i < 1000; i++) {
		push(&a, &sh, (uint64_t)i * 1000, 60, &ra);
		push(&b, &sh, (uint64_t)i * 1000, 60, &rb);
	}
	uint64_t prev = 0;
	for (int i = 0; i < 1000; i++) {
		struct lab_pkt *p = lab_fifo_head(&a), *r = lab_fifo_head(&b);
		cr_assert(p && r);
		cr_expect_geq(p->due_ns, prev, "packet %d due before the one ahead of it", i);
		cr_expect_eq(p->due_ns, r->due_ns, "same seed, different delay at %d", i);
		uint64_t d = p->due_ns - p->sent_ns;
		min_d = d < min_d ? d : min_d;
		max_d = d > max_d ? d : max_d;
		prev = p->due_ns;
		lab_fifo_pop(&a);
		lab_fifo_pop(&b);
	}
	cr_expect_geq(min_d, 50000);
	cr_expect_gt(max_d, 400000, "jitter of +-200 us never reached +150 us");
	lab_fifo_free(&a);
	lab_fifo_free(&b);
}

Test(lab_fifo, rate_limit_serialises_packets)
{
	struct lab_fifo q;
	struct lab_shape sh = { .one_way_ns = 0, .rate_mbit = 8 }; /* 1 byte per us */
	uint64_t rng = 1;
	cr_assert_eq(lab_fifo_init(&q, 8), 0);
	push(&q, &sh, 0, 1000, &rng); /* 1000 us on the wire */
	push(&q, &sh, 0, 500, &rng);  /* waits for the first */
	cr_expect_eq(lab_fifo_head(&q)->due_ns, 1000000);
	lab_fifo_pop(&q);
	cr_expect_eq(lab_fifo_head(&q)->due_ns, 1500000);
	lab_fifo_free(&q);
}

Test(lab_fifo, full_queue_refuses)
{
	struct lab_fifo q;
	struct lab_shape sh = { .one_way_ns = 10 };
	uint64_t rng = 1;
	cr_assert_eq(lab_fifo_init(&q, 4), 0);
	for (int i = 0; i < 4; i++)
		push(&q, &sh, (uint64_t)i, 10, &rng);
	cr_expect_null(lab_fifo_tail(&q));
	lab_fifo_pop(&q);
	cr_expect_not_null(lab_fifo_tail(&q));
	lab_fifo_free(&q);
	struct lab_fifo empty;
	cr_expect_eq(lab_fifo_init(&empty, 0), -EINVAL);
}

Test(lab_proc, counts_time_wait_lines)
{
	const char *text =
		"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
		"   0: 0100D50A:9C40 0200D50A:1F40 06 00000000:00000000 03:00001770 00000000     0        0 0 3\n"
		"   1: 0100D50A:9C41 0200D50A:1F40 01 00000000:00000000 00:00000000 00000000     0        0 123 1\n"
		"   2: 0100D50A:9C42 0200D50A:1F40 06 00000000:00000000 03:00001770 00000000     0        0 0 3\n"
		"   3: 00000000:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 99 1\n";
	cr_expect_eq(lab_count_time_wait(text), 2);
	cr_expect_eq(lab_count_time_wait("  sl  local_address\n"), 0);
	cr_expect_eq(lab_count_time_wait(""), 0);
}

Test(lab_proc, time_wait_from_sockstat)
{
	cr_expect_eq(lab_sockstat_tw("sockets: used 48\nTCP: inuse 32 orphan 0 tw 19975 alloc 32 mem 3\n"
				     "UDP: inuse 0 mem 0\n"), 19975);
	cr_expect_eq(lab_sockstat_tw("sockets: used 1\nTCP: inuse 0 orphan 0\nUDP: inuse 0 tw 5\n"), -1);
	cr_expect_eq(lab_sockstat_tw(""), -1);
}

Test(lab_proc, port_warning_arithmetic)
{
	char msg[512];
	int lo, hi;
	cr_assert_eq(lab_parse_port_range("32768\t60999\n", &lo, &hi), 0);
	cr_expect_eq(hi - lo + 1, 28232);
	/* 1,000 req/s x 60 s = 60,000 > 28,232 */
	cr_expect_eq(lab_port_warning(1000, 1, lo, hi, msg, sizeof(msg)), 1);
	cr_expect(strstr(msg, "60000"), "%s", msg);
	cr_expect(strstr(msg, "reuse connections"), "%s", msg);
	cr_expect(strstr(msg, "28232"), "%s", msg);
	cr_expect_eq(lab_port_warning(1000, 0, lo, hi, msg, sizeof(msg)), 0, "reuse needs no warning");
	cr_expect_eq(lab_port_warning(400, 1, lo, hi, msg, sizeof(msg)), 0, "24,000 fits");
	cr_expect_eq(lab_port_warning(0, 1, lo, hi, msg, sizeof(msg)), 0);
	cr_expect_eq(lab_parse_port_range("abc", &lo, &hi), -1);
	cr_expect_eq(lab_parse_port_range("60000 100", &lo, &hi), -1);
}

Test(lab_netns, owner_from_name)
{
	cr_expect_eq(lab_ns_owner("lsc-123"), 123);
	cr_expect_eq(lab_ns_owner("lss-7"), 7);
	cr_expect_eq(lab_ns_owner("lsc-"), -1);
	cr_expect_eq(lab_ns_owner("lsc-12x"), -1);
	cr_expect_eq(lab_ns_owner("lsc-0"), -1);
	cr_expect_eq(lab_ns_owner("lsx-12"), -1);
	cr_expect_eq(lab_ns_owner("other"), -1);
	cr_expect_eq(lab_ns_owner("lsc-99999999999999999999"), -1);
}

Test(lab_run, argv_words)
{
	struct lab_argv a = { .n = 0 };
	lab_argv_add(&a, "sim");
	cr_assert_eq(lab_argv_add_words(&a, "--step-ms 5 --name 'two words'"), 0);
	cr_assert_eq(a.n, 5);
	cr_expect_str_eq(a.v[2], "5");
	cr_expect_str_eq(a.v[4], "two words");
	cr_expect_null(a.v[5]);
	cr_expect_eq(lab_argv_add_words(&a, "--x $(rm -rf /)"), -1);
	cr_expect_eq(lab_argv_add_words(&a, "'unbalanced"), -1);
	lab_argv_free(&a);
}

Test(lab_ping, percentiles)
{
	uint64_t v[] = { 5, 1, 4, 2, 3 };
	cr_expect_float_eq(lab_pct_u64(v, 5, 50), 3.0, 1e-9);
	cr_expect_float_eq(lab_pct_u64(v, 5, 100), 5.0, 1e-9);
	cr_expect_float_eq(lab_pct_u64(v, 5, 0), 1.0, 1e-9);
	double d[] = { 2.0, 1.0 };
	cr_expect_float_eq(lab_pct_dbl(d, 2, 50), 1.5, 1e-9);
	cr_expect_float_eq(lab_pct_dbl(NULL, 0, 50), 0.0, 1e-9);
}

Test(lab_records, figures_from_a_record_file)
{
	const char *text =
		"{\"latscope_record\":1,\"base_ns\":\"1000\",\"frame_fields\":[\"arrived_ns\"]}\n"
		/* warmup: never counted */
		"{\"id\":0,\"warmup\":1,\"started_ns\":1,\"connect_ns\":2,\"tls_ns\":3,\"new_connection\":1,"
		"\"fail\":\"ok\",\"frames\":[[9000000,0,10,3,-1,-1,1]]}\n"
		/* fresh TLS connection: connect 1 ms, TLS 2 ms; first token frame has empty text */
		"{\"id\":1,\"warmup\":0,\"started_ns\":1000000,\"connect_ns\":2000000,\"tls_ns\":4000000,"
		"\"new_connection\":1,\"fail\":\"ok\",\"frames\":[[9000000,0,10,0,-1,-1,3],[11000000,0,10,4,-1,-1,1]]}\n"
		/* reused connection: no setup */
		"{\"id\":2,\"warmup\":0,\"started_ns\":20000000,\"connect_ns\":0,\"tls_ns\":0,"
		"\"new_connection\":0,\"fail\":\"ok\",\"frames\":[[24000000,0,10,4,-1,-1,1]]}\n"
		/* reused but with a connect stamp: counted as setup on a reused connection */
		"{\"id\":3,\"warmup\":0,\"started_ns\":30000000,\"connect_ns\":30500000,\"tls_ns\":0,"
		"\"new_connection\":0,\"fail\":\"ok\",\"frames\":[[35000000,0,10,4,-1,-1,1]]}\n"
		"{\"id\":4,\"warmup\":0,\"started_ns\":40000000,\"new_connection\":1,\"fail\":\"http_status\",\"frames\":[]}\n"
		"{\"latscope_run_end\":1}\n"
		"{\"id\":5,\"warm"; /* cut off by a crash */
	struct lab_run_fig f;
	cr_assert_eq(lab_records_parse(text, &f), 0);
	cr_expect_eq(f.n, 3);
	cr_expect_eq(f.failed, 1);
	cr_expect_eq(f.new_conns, 1);
	cr_expect_eq(f.reused_with_setup, 1);
	cr_expect_float_eq(f.connect_ms, 1.0, 1e-9);
	cr_expect_float_eq(f.tls_ms, 2.0, 1e-9);
	/* TTFTs 8 (first token frame, empty text), 4, 5 ms: median 5 */
	cr_expect_float_eq(f.ttft_ms, 5.0, 1e-9, "ttft %f", f.ttft_ms);
	cr_expect_eq(lab_records_parse("{\"id\":1}\nnot json\n{\"id\":2}\n", &f), -1);
	cr_expect_eq(lab_records_read("/nonexistent/records.jsonl", &f), -1);
}
