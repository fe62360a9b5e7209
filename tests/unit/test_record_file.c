/* The record file writer (record_file.c): a request with many frames round-trips exactly
 * through ls_record_write -> ls_record_load, and each line is byte-for-byte the documented
 * format (checked against the same fields formatted with snprintf), extreme values included. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "report/record_file.h"

#define BASE 5000000000000ull /* a CLOCK_MONOTONIC-sized base */

static char *tmp_path(void)
{
	static char path[64];
	snprintf(path, sizeof(path), "/tmp/latscope-recfile-XXXXXX");
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	return path;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *text = malloc((size_t)n + 1);
	cr_assert_not_null(text);
	cr_assert_eq(fread(text, 1, (size_t)n, f), (size_t)n);
	text[n] = 0;
	fclose(f);
	return text;
}

/* Line `which` (0 = header) of text, without its newline, in a malloc'd string. */
static char *line_of(const char *text, int which)
{
	for (int i = 0; i < which; i++) {
		text = strchr(text, '\n');
		cr_assert_not_null(text);
		text++;
	}
	const char *end = strchr(text, '\n');
	cr_assert_not_null(end, "line %d has no newline", which);
	return strndup(text, (size_t)(end - text));
}

static int64_t rel(uint64_t stamp)
{
	if (!stamp)
		return 0;
	return stamp >= BASE ? (int64_t)(stamp - BASE) : -(int64_t)(BASE - stamp);
}

/* The line as record_file.h documents it, formatted with snprintf (the format before the
 * writer formatted by hand): the writer must produce exactly this. error is plain ASCII. */
static char *reference_line(const struct ls_request *r)
{
	size_t cap = 4096 + (size_t)r->n_frames * 128, len = 0;
	char *b = malloc(cap);
	cr_assert_not_null(b);
	len += (size_t)snprintf(b + len, cap - len,
		"{\"id\":%" PRIu64 ",\"warmup\":%d,\"prompt_len\":%u,\"output_len\":%u,\"scheduled_ns\":%" PRId64
		",\"admitted_ns\":%" PRId64 ",\"started_ns\":%" PRId64 ",\"connect_ns\":%" PRId64 ",\"tls_ns\":%" PRId64
		",\"sent_ns\":%" PRId64 ",\"headers_ns\":%" PRId64 ",\"done_frame_ns\":%" PRId64 ",\"finished_ns\":%" PRId64
		",\"new_connection\":%d,\"fd\":%d,\"socket_cookie\":\"%" PRIu64 "\",\"conn_seq\":%u,\"http_status\":%d"
		",\"fail\":\"%s\",\"error\":\"%s\",\"usage_prompt_tokens\":%d,\"usage_completion_tokens\":%d"
		",\"body_bytes\":%" PRIu64 ",\"text_bytes\":%" PRIu64 ",\"engine_prompt_n\":%d,\"engine_prompt_ns\":%" PRIu64
		",\"engine_predicted_n\":%d,\"engine_predicted_ns\":%" PRIu64 ",\"engine_cache_n\":%d"
		",\"engine_source\":%d,\"engine_known\":%u,\"engine_queue_ns\":%" PRIu64 ",\"engine_e2e_ns\":%" PRIu64
		",\"engine_bad\":%u,\"frames\":[",
		r->id, r->warmup, r->prompt_len, r->output_len, rel(r->scheduled_ns), rel(r->admitted_ns),
		rel(r->started_ns), rel(r->connect_ns), rel(r->tls_ns), rel(r->sent_ns), rel(r->headers_ns),
		rel(r->done_frame_ns), rel(r->finished_ns), r->new_connection, r->fd, r->socket_cookie, r->conn_seq,
		r->http_status, ls_fail_name(r->fail), r->error, r->usage_prompt_tokens, r->usage_completion_tokens,
		r->body_bytes, r->text_bytes, r->engine_prompt_n, r->engine_prompt_ns, r->engine_predicted_n,
		r->engine_predicted_ns, r->engine_cache_n, r->engine_source, r->engine_known, r->engine_queue_ns,
		r->engine_e2e_ns, r->engine_bad);
	for (uint32_t i = 0; i < r->n_frames; i++) {
		const struct ls_frame *f = &r->frames[i];
		len += (size_t)snprintf(b + len, cap - len, "%s[%" PRId64 ",%" PRIu64 ",%u,%u,%d,%d,%u]", i ? "," : "",
					rel(f->arrived_ns), f->stream_off, f->bytes, f->text_len, f->tokens,
					f->cum_tokens, f->flags);
	}
	snprintf(b + len, cap - len, "]}");
	return b;
}

/* Values a JSON double holds exactly (the reader's path), varied per frame. */
static void fill_many(struct ls_request *r, uint64_t id, uint32_t n_frames)
{
	ls_request_reset(r, id);
	r->prompt_len = 4096;
	r->output_len = n_frames;
	r->scheduled_ns = BASE - 123456789; /* before base: negative in the file */
	r->admitted_ns = BASE + 1;
	r->started_ns = BASE + 999999999999ull;
	r->connect_ns = 0; /* did not happen */
	r->tls_ns = BASE + 7;
	r->sent_ns = BASE + 10;
	r->headers_ns = BASE + 1000000;
	r->done_frame_ns = BASE + 3000000000ull;
	r->finished_ns = BASE + 3000000001ull;
	r->new_connection = 1;
	r->fd = 1023;
	r->socket_cookie = UINT64_MAX - 5; /* a string in the file: all 64 bits */
	r->conn_seq = UINT32_MAX;
	r->http_status = 200;
	r->usage_prompt_tokens = -1;
	r->usage_completion_tokens = INT32_MAX;
	r->body_bytes = (1ull << 53) - 1;
	r->text_bytes = 0;
	for (uint32_t i = 0; i < n_frames; i++) {
		struct ls_frame *f = ls_request_add_frame(r);
		cr_assert_not_null(f);
		f->arrived_ns = i % 97 == 5 ? 0 : BASE + 1000000 + (uint64_t)i * 1234567 + i % 10;
		f->stream_off = (uint64_t)i * 211 + (i == n_frames - 1 ? (1ull << 52) : 0);
		f->bytes = i == 3 ? UINT32_MAX : 200 + i % 13;
		f->text_len = i % 9;
		f->tokens = i % 7 == 0 ? -1 : (i == 11 ? INT32_MIN + 1 : (int32_t)(i % 5));
		f->cum_tokens = i == 12 ? INT32_MAX : (int32_t)i - 1;
		f->flags = (uint32_t)(i % 32) | (i == 13 ? 0x80000000u : 0);
	}
}

static void expect_same(const struct ls_request *a, const struct ls_request *b)
{
	cr_expect_eq(a->id, b->id);
	cr_expect_eq(a->warmup, b->warmup);
	cr_expect_eq(a->prompt_len, b->prompt_len);
	cr_expect_eq(a->output_len, b->output_len);
	cr_expect_eq(a->scheduled_ns, b->scheduled_ns);
	cr_expect_eq(a->admitted_ns, b->admitted_ns);
	cr_expect_eq(a->started_ns, b->started_ns);
	cr_expect_eq(a->connect_ns, b->connect_ns);
	cr_expect_eq(a->tls_ns, b->tls_ns);
	cr_expect_eq(a->sent_ns, b->sent_ns);
	cr_expect_eq(a->headers_ns, b->headers_ns);
	cr_expect_eq(a->done_frame_ns, b->done_frame_ns);
	cr_expect_eq(a->finished_ns, b->finished_ns);
	cr_expect_eq(a->new_connection, b->new_connection);
	cr_expect_eq(a->fd, b->fd);
	cr_expect_eq(a->socket_cookie, b->socket_cookie);
	cr_expect_eq(a->conn_seq, b->conn_seq);
	cr_expect_eq(a->http_status, b->http_status);
	cr_expect_eq(a->fail, b->fail);
	cr_expect_str_eq(a->error, b->error);
	cr_expect_eq(a->usage_prompt_tokens, b->usage_prompt_tokens);
	cr_expect_eq(a->usage_completion_tokens, b->usage_completion_tokens);
	cr_expect_eq(a->body_bytes, b->body_bytes);
	cr_expect_eq(a->text_bytes, b->text_bytes);
	cr_assert_eq(a->n_frames, b->n_frames);
	for (uint32_t i = 0; i < a->n_frames; i++) {
		const struct ls_frame *x = &a->frames[i], *y = &b->frames[i];
		cr_expect(x->arrived_ns == y->arrived_ns && x->stream_off == y->stream_off && x->bytes == y->bytes &&
			  x->text_len == y->text_len && x->tokens == y->tokens && x->cum_tokens == y->cum_tokens &&
			  x->flags == y->flags, "frame %u differs", i);
	}
}

Test(record_file, many_frames_round_trip_exactly)
{
	const char *path = tmp_path();
	struct ls_record_meta meta = { .base_ns = BASE, .target_rate = 1000.5, .max_concurrency = 10000 };
	snprintf(meta.run_tag, sizeof(meta.run_tag), "lsT-\"q\"");
	snprintf(meta.arrival, sizeof(meta.arrival), "poisson");
	snprintf(meta.profile, sizeof(meta.profile), "sglang");
	snprintf(meta.backend, sizeof(meta.backend), "openai");
	struct ls_record_writer *w = ls_record_open(path, &meta);
	cr_assert_not_null(w);
	/* Line lengths around the writer's buffer growth, up to one of ~5,000 frames. */
	static const uint32_t n_frames[] = { 0, 1, 2, 9, 10, 11, 40, 41, 255, 5000, 3 };
	enum { N = sizeof(n_frames) / sizeof(n_frames[0]) };
	struct ls_request reqs[N];
	memset(reqs, 0, sizeof(reqs));
	for (size_t i = 0; i < N; i++) {
		fill_many(&reqs[i], i, n_frames[i]);
		reqs[i].warmup = i == 0;
		if (i == 4) {
			reqs[i].fail = LS_FAIL_TIMEOUT;
			snprintf(reqs[i].error, sizeof(reqs[i].error), "timed out after 5000 ms: all ASCII");
		}
		cr_assert_eq(ls_record_write(w, &reqs[i]), 0);
	}
	struct ls_run run = { .requests = reqs, .n_requests = N, .n_warmup = 1, .start_ns = BASE + 5,
			      .end_ns = BASE + 4000000000ull };
	cr_assert_eq(ls_record_close(w, &run), 0);

	char *text = slurp(path);
	char *header = line_of(text, 0);
	char want_header[2048];
	snprintf(want_header, sizeof(want_header),
		 "{\"latscope_record\":1,\"base_ns\":\"%llu\",\"stamps\":\"ns after base_ns, 0 = did not happen\","
		 "\"frame_fields\":[\"arrived_ns\",\"stream_off\",\"bytes\",\"text_len\",\"tokens\",\"cum_tokens\","
		 "\"flags\"],\"run_tag\":\"lsT-\\\"q\\\"\",\"target_rate\":1000.5,\"max_concurrency\":10000,"
		 "\"arrival\":\"poisson\",\"profile\":\"sglang\",\"backend\":\"openai\",\"arrival_desc\":\"\","
		 "\"profile_source\":\"\",\"model\":\"\",\"base_url\":\"\",\"endpoint\":\"\",\"dataset\":\"\","
		 "\"date\":\"\",\"connection\":\"\",\"request_rate\":0,\"burstiness\":0,\"percentile_metrics\":0,"
		 "\"percentiles\":\"\",\"goodput_has_ttft\":0,\"goodput_has_tpot\":0,\"goodput_has_e2el\":0,"
		 "\"goodput_ttft_ms\":0,\"goodput_tpot_ms\":0,\"goodput_e2el_ms\":0}", BASE);
	cr_expect_str_eq(header, want_header);
	free(header);
	for (size_t i = 0; i < N; i++) {
		char *got = line_of(text, (int)i + 1), *want = reference_line(&reqs[i]);
		cr_expect_str_eq(got, want, "line %zu (%u frames) differs from the format", i + 1, n_frames[i]);
		free(got);
		free(want);
	}
	char *end = line_of(text, N + 1);
	cr_expect_str_eq(end, "{\"latscope_run_end\":1,\"start_ns\":5,\"end_ns\":4000000000,\"interrupted\":0,"
			      "\"n_requests\":11,\"n_warmup\":1,\"spin_stalls\":0,\"spin_stall_max_ns\":0,"
			      "\"spin_stall_sum_ns\":0,\"server_gone_ns\":0,\"n_connect_failed_gone\":0,"
			      "\"n_preconnected\":0,\"preconnect_ns\":0,\"client_cpu_ns\":0,\"n_client_procs\":0,"
			      "\"loop_spins\":0,\"client_delay_p99_ns\":0,\"loop_lag_p99_ns\":0,\"loop_lag_ticks\":0,"
		"\"spec_has\":0,\"spec_drafts\":0,"
			      "\"spec_draft_tokens\":0,\"spec_accepted\":0,\"spec_acceptance_rate_pct\":0,"
			      "\"spec_acceptance_length\":0,\"spec_n_pos\":0,\"spec_has_avg\":0,"
			      "\"spec_avg_accept_len\":0,\"spec_per_pos_rate\":[]}");
	free(end);
	free(text);

	struct ls_run back;
	struct ls_record_meta m;
	cr_assert_eq(ls_record_load(path, &back, &m), 0);
	cr_expect(m.complete);
	cr_expect_eq(m.base_ns, BASE);
	cr_expect_str_eq(m.run_tag, "lsT-\"q\"");
	cr_assert_eq(back.n_requests, N);
	/* Back in run order: the warmup (id 0) first, then by id: the same order as written. */
	for (size_t i = 0; i < N; i++)
		expect_same(&back.requests[i], &reqs[i]);
	ls_run_free(&back);
	for (size_t i = 0; i < N; i++)
		ls_request_free(&reqs[i]);
	unlink(path);
}

/* Every byte of an error message stays valid JSON and reads back (base/strbuf.h's escaper);
 * extreme integers are written exactly. */
Test(record_file, escapes_and_extremes)
{
	const char *path = tmp_path();
	struct ls_record_meta meta = { .base_ns = BASE };
	struct ls_record_writer *w = ls_record_open(path, &meta);
	cr_assert_not_null(w);
	struct ls_request r = { 0 };
	fill_many(&r, UINT64_MAX, 3);
	r.warmup = INT_MIN;
	r.fd = INT_MIN;
	r.http_status = INT_MAX;
	r.scheduled_ns = 1; /* as far before base as a stamp goes */
	r.finished_ns = UINT64_MAX;
	r.frames[0].stream_off = UINT64_MAX;
	r.frames[1].tokens = INT32_MIN;
	r.frames[2].arrived_ns = UINT64_MAX;
	for (int c = 1; c < 128; c++) /* every ASCII byte but NUL, control bytes included */
		r.error[c - 1] = (char)c;
	r.error[127] = 0;
	cr_assert_eq(ls_record_write(w, &r), 0);
	cr_assert_eq(ls_record_close(w, NULL), 0);
	char *text = slurp(path), *line = line_of(text, 1);
	char want[64];
	snprintf(want, sizeof(want), "{\"id\":%llu,\"warmup\":%d,", (unsigned long long)UINT64_MAX, INT_MIN);
	cr_expect(!strncmp(line, want, strlen(want)), "%s", line);
	snprintf(want, sizeof(want), "\"scheduled_ns\":%lld,", -(long long)(BASE - 1));
	cr_expect(strstr(line, want), "%s", want);
	snprintf(want, sizeof(want), "\"finished_ns\":%lld,", (long long)(UINT64_MAX - BASE));
	cr_expect(strstr(line, want), "%s", want);
	snprintf(want, sizeof(want), "\"fd\":%d,", INT_MIN);
	cr_expect(strstr(line, want), "%s", want);
	snprintf(want, sizeof(want), "\"http_status\":%d,", INT_MAX);
	cr_expect(strstr(line, want), "%s", want);
	snprintf(want, sizeof(want), ",%llu,", (unsigned long long)UINT64_MAX);
	cr_expect(strstr(line, want), "%s", want);
	snprintf(want, sizeof(want), ",%d,", INT32_MIN);
	cr_expect(strstr(line, want), "%s", want);
	cr_expect(strstr(line, "\"error\":\"\\u0001\\u0002"), "%s", line);
	cr_expect(strstr(line, "\\u001f !\\\"#"), "%s", line);
	cr_expect(strstr(line, "[\\\\]^_`"), "%s", line);
	cr_expect(strstr(line, "xyz{|}~\\u007f\""), "%s", line);
	free(line);
	free(text);
	struct ls_run back;
	cr_assert_eq(ls_record_load(path, &back, NULL), 0);
	cr_assert_eq(back.n_requests, 1);
	cr_expect_str_eq(back.requests[0].error, r.error);
	ls_run_free(&back);
	ls_request_free(&r);
	unlink(path);
}

/* A server's error message in UTF-8 is kept as it is, so it reads back unchanged; a byte
 * that is not UTF-8 (a message cut mid-character) is written \u00XX and the line still
 * parses. */
Test(record_file, utf8_errors_round_trip_and_cut_ones_stay_valid)
{
	const char *path = tmp_path();
	struct ls_record_meta meta = { .base_ns = BASE };
	snprintf(meta.run_tag, sizeof(meta.run_tag), "caf\xc3\xa9");
	struct ls_record_writer *w = ls_record_open(path, &meta);
	cr_assert_not_null(w);
	struct ls_request r[2] = { 0 };
	ls_request_reset(&r[0], 1);
	ls_request_reset(&r[1], 2);
	r[0].scheduled_ns = r[1].scheduled_ns = BASE + 1;
	snprintf(r[0].error, sizeof(r[0].error), "HTTP 400: mod\xc3\xa8le inconnu \xe2\x82\xac \xf0\x9f\x98\x80");
	snprintf(r[1].error, sizeof(r[1].error), "cut here: \xe2\x82");
	cr_assert_eq(ls_record_write(w, &r[0]), 0);
	cr_assert_eq(ls_record_write(w, &r[1]), 0);
	cr_assert_eq(ls_record_close(w, NULL), 0);
	char *text = slurp(path), *line = line_of(text, 2);
	cr_expect(strstr(line, "\"error\":\"cut here: \\u00e2\\u0082\""), "%s", line);
	free(line);
	line = line_of(text, 0);
	cr_expect(strstr(line, "\"run_tag\":\"caf\xc3\xa9\""), "%s", line);
	free(line);
	free(text);
	struct ls_run back;
	struct ls_record_meta mback;
	cr_assert_eq(ls_record_load(path, &back, &mback), 0);
	cr_assert_eq(back.n_requests, 2);
	cr_expect_str_eq(back.requests[0].error, r[0].error);
	cr_expect_str_eq(back.requests[1].error, "cut here: \xc3\xa2\xc2\x82", "each stray byte reads back as its Latin-1 character");
	cr_expect_str_eq(mback.run_tag, "caf\xc3\xa9");
	ls_run_free(&back);
	ls_request_free(&r[0]);
	ls_request_free(&r[1]);
	unlink(path);
}

/* A hand-edited or hostile record file can hold any JSON number: out-of-range values are
 * clamped, not cast (under UBSan an out-of-range cast aborts this test). */
Test(record_file, out_of_range_numbers_are_clamped)
{
	char *path = tmp_path();
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f, "{\"latscope_record\":1,\"base_ns\":\"1000\",\"max_concurrency\":1e300,\"interrupted\":-1e300}\n");
	fprintf(f, "{\"id\":1e300,\"warmup\":0,\"prompt_len\":1e300,\"output_len\":-5,\"scheduled_ns\":-1e300,"
		   "\"started_ns\":1e999,\"fd\":-1e300,\"conn_seq\":1e20,\"http_status\":1e10,"
		   "\"usage_prompt_tokens\":-1e300,\"usage_completion_tokens\":1e300,\"body_bytes\":1e999,"
		   "\"text_bytes\":-1,\"socket_cookie\":1e300,"
		   "\"frames\":[[1e999,-1e999,1e300,-1e300,1e300,-1e300,1e300]]}\n");
	fclose(f);
	struct ls_run run;
	struct ls_record_meta meta;
	cr_assert_eq(ls_record_load(path, &run, &meta), 0);
	cr_assert_eq(run.n_requests, 1);
	const struct ls_request *r = &run.requests[0];
	cr_expect_eq(r->id, UINT64_MAX);
	cr_expect_eq(r->prompt_len, UINT32_MAX);
	cr_expect_eq(r->output_len, 0);
	cr_expect_eq(r->scheduled_ns, 1, "a stamp before the base stays non-zero (it happened)");
	cr_expect_eq(r->started_ns, UINT64_MAX);
	cr_expect_eq(r->fd, -1);
	cr_expect_eq(r->conn_seq, UINT32_MAX);
	cr_expect_eq(r->usage_prompt_tokens, -1);
	cr_expect_eq(r->usage_completion_tokens, INT32_MAX);
	cr_expect_eq(r->body_bytes, UINT64_MAX);
	cr_expect_eq(r->text_bytes, 0);
	cr_expect_eq(r->socket_cookie, UINT64_MAX);
	cr_assert_eq(r->n_frames, 1);
	cr_expect_eq(r->frames[0].arrived_ns, UINT64_MAX);
	cr_expect_eq(r->frames[0].stream_off, 0);
	cr_expect_eq(r->frames[0].bytes, UINT32_MAX);
	cr_expect_eq(r->frames[0].text_len, 0);
	cr_expect_eq(r->frames[0].tokens, INT32_MAX);
	cr_expect_eq(r->frames[0].cum_tokens, INT32_MIN);
	cr_expect_eq(r->frames[0].flags, UINT32_MAX);
	cr_expect_eq(meta.max_concurrency, UINT32_MAX);
	ls_run_free(&run);
	unlink(path);
}

/* Every failure reason is written by its name and read back as the same reason (the names are
 * stable: they are the JSON and JSONL keys), and a name the reader does not know is "other". */
Test(record_file, every_failure_name_round_trips)
{
	const char *path = tmp_path();
	struct ls_record_meta meta = { .base_ns = BASE };
	struct ls_record_writer *w = ls_record_open(path, &meta);
	cr_assert_not_null(w);
	for (int f = 0; f < LS_FAIL__COUNT; f++) {
		struct ls_request r = { 0 };
		ls_request_reset(&r, (uint64_t)f);
		r.scheduled_ns = r.started_ns = BASE + 1000;
		r.finished_ns = BASE + 2000;
		r.fail = (enum ls_fail)f;
		snprintf(r.error, sizeof(r.error), "reason %s", ls_fail_name(r.fail));
		cr_assert_eq(ls_record_write(w, &r), 0);
		ls_request_free(&r);
	}
	cr_assert_eq(ls_record_close(w, NULL), 0);
	char *text = slurp(path);
	for (int f = 0; f < LS_FAIL__COUNT; f++) {
		char want[64];
		snprintf(want, sizeof(want), "\"fail\":\"%s\"", ls_fail_name((enum ls_fail)f));
		cr_expect(strstr(text, want), "no %s in the file", want);
		for (int g = 0; g < f; g++)
			cr_expect_neq(strcmp(ls_fail_name((enum ls_fail)f), ls_fail_name((enum ls_fail)g)), 0,
				      "reasons %d and %d share the name %s", f, g, ls_fail_name((enum ls_fail)f));
	}
	/* A name from a newer latscope: read as "other", not refused. */
	char *bumped = strstr(text, "\"fail\":\"timeout\"");
	cr_assert_not_null(bumped);
	FILE *out = fopen(path, "w");
	cr_assert_not_null(out);
	fprintf(out, "%.*s\"fail\":\"gremlins\"%s", (int)(bumped - text), text, bumped + strlen("\"fail\":\"timeout\""));
	fclose(out);
	free(text);
	struct ls_run back;
	cr_assert_eq(ls_record_load(path, &back, NULL), 0);
	cr_assert_eq(back.n_requests, LS_FAIL__COUNT);
	for (size_t i = 0; i < back.n_requests; i++) {
		const struct ls_request *r = &back.requests[i];
		enum ls_fail want = r->id == LS_FAIL_TIMEOUT ? LS_FAIL_OTHER : (enum ls_fail)r->id;
		cr_expect_eq(r->fail, want, "request %llu: read %s, wrote %s", (unsigned long long)r->id,
			     ls_fail_name(r->fail), ls_fail_name((enum ls_fail)r->id));
		char msg[64];
		snprintf(msg, sizeof(msg), "reason %s", ls_fail_name((enum ls_fail)r->id));
		cr_expect_str_eq(r->error, msg);
	}
	ls_run_free(&back);
	unlink(path);
}
