/* watch_record.c — `latscope watch --record FILE` (JSONL: a header line, one line per
 * connection, per request, with its reads) and `--trace FILE.json` (Chrome trace events: one
 * track per connection, ui.perfetto.dev opens it). Stamps in CLOCK_MONOTONIC ns, 0 = not seen. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "base/outfile.h"
#include "base/strbuf.h"
#include "report/watch_report.h"

static int conn_line(struct ls_strbuf *b, size_t i, const struct ls_watch_conn *c)
{
	return ls_strbuf_printf(b, "{\"type\":\"connection\",\"conn\":%zu,\"pid\":%u,\"lport\":%u,\"rport\":%u,"
				"\"cookie\":%llu,\"connect_ns\":%llu,\"established_ns\":%llu,\"tls_start_ns\":%llu,"
				"\"tls_end_ns\":%llu,\"handshakes\":%u,\"requests\":%u,\"close_ns\":%llu,"
				"\"closed_by\":\"%s\",\"time_wait\":%d}\n", i, c->tgid, c->lport, c->rport,
				(unsigned long long)c->cookie, (unsigned long long)c->connect_ns,
				(unsigned long long)c->established_ns, (unsigned long long)c->tls_start_ns,
				(unsigned long long)c->tls_end_ns, c->n_handshakes, c->n_ex, (unsigned long long)c->close_ns,
				c->closed_by == 1 ? "harness" : c->closed_by == 2 ? "server" : "", c->time_wait);
}

static int ex_line(struct ls_strbuf *b, const struct ls_watch *w, size_t i)
{
	const struct ls_watch_exchange *x = &w->ex[i];
	int err = ls_strbuf_printf(b, "{\"type\":\"request\",\"request\":%zu,\"conn\":%u,\"nth\":%u,"
		"\"send_first_ns\":%llu,\"sent_ns\":%llu,\"request_bytes\":%u,\"first_byte_ns\":%llu,"
		"\"first_byte_read_ns\":%llu,\"head_apart\":%d,\"first_frame_ns\":%llu,\"first_frame_read_ns\":%llu,"
		"\"last_byte_ns\":%llu,\"last_read_ns\":%llu,\"response_bytes\":%u,\"bursts\":%u,"
		"\"server_read_ns\":%llu,\"server_write_ns\":%llu,\"reads\":[", i, x->conn, x->nth,
		(unsigned long long)x->send_first_ns, (unsigned long long)x->sent_ns, x->req_bytes,
		(unsigned long long)x->first_byte_ns, (unsigned long long)x->first_byte_read_ns, x->head_apart,
		(unsigned long long)x->first_data_ns, (unsigned long long)x->first_data_read_ns,
		(unsigned long long)x->last_byte_ns, (unsigned long long)x->last_read_ns, x->resp_bytes, x->n_bursts,
		(unsigned long long)x->srv_read_ns, (unsigned long long)x->srv_write_ns);
	const char *sep = "";
	for (size_t r = 0; !err && r < w->n_reads; r++) {
		if (w->reads[r].ex != i)
			continue;
		err = ls_strbuf_printf(b, "%s[%llu,%llu,%u]", sep, (unsigned long long)w->reads[r].arrived_ns,
				       (unsigned long long)w->reads[r].read_ns, w->reads[r].bytes);
		sep = ",";
	}
	if (!err)
		err = ls_strbuf_puts(b, "],\"gaps_ns\":[");
	for (uint32_t g = 0; !err && g < x->n_gaps; g++)
		err = ls_strbuf_printf(b, "%s%llu", g ? "," : "", (unsigned long long)w->gaps[x->first_gap + g]);
	return err ? err : ls_strbuf_puts(b, "]}\n");
}

static int write_buf(const char *what, const char *path, const struct ls_strbuf *b)
{
	struct ls_outfile o;
	int err = ls_outfile_open(&o, what, path);

	if (err)
		return err;
	if (b->len && fwrite(b->data, 1, b->len, o.f) != b->len) {
		fprintf(stderr, "latscope watch: writing %s %s failed: %s\n", what, path, strerror(errno));
		ls_outfile_abort(&o);
		return -EIO;
	}
	return ls_outfile_commit(&o);
}

int ls_watch_record_write(const char *path, const struct ls_watch *w, const struct ls_watch_report_ctx *ctx)
{
	struct ls_strbuf b = { 0 };
	int err = ls_strbuf_puts(&b, "{\"latscope_watch\":1,\"what\":");

	if (!err)
		err = ls_strbuf_json_str(&b, ctx->what, strlen(ctx->what));
	if (!err)
		err = ls_strbuf_printf(&b, ",\"units\":\"ns, CLOCK_MONOTONIC; reads: [arrived_ns, read_ns, bytes]\","
				       "\"connections\":%zu,\"requests\":%zu,\"exit_status\":%d}\n", w->n_conns, w->n_ex,
				       ctx->exit_known ? ctx->exit_code : -1);
	for (size_t i = 0; !err && i < w->n_conns; i++)
		err = conn_line(&b, i, &w->conns[i]);
	for (size_t i = 0; !err && i < w->n_ex; i++)
		err = ex_line(&b, w, i);
	if (!err)
		err = write_buf("--record", path, &b);
	else
		fprintf(stderr, "latscope watch: --record %s: out of memory\n", path);
	ls_strbuf_free(&b);
	return err;
}

static int slice(struct ls_strbuf *b, const char *name, size_t tid, uint64_t from, uint64_t to, int *first)
{
	if (!from || !to || to < from)
		return 0;
	int err = ls_strbuf_printf(b, "%s{\"name\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%zu,\"ts\":%.3f,\"dur\":%.3f}",
				   *first ? "" : ",\n", name, tid, from / 1e3, (to - from) / 1e3);
	*first = 0;
	return err;
}

int ls_watch_trace_write(const char *path, const struct ls_watch *w)
{
	struct ls_strbuf b = { 0 };
	int first = 1, err = ls_strbuf_puts(&b, "{\"traceEvents\":[\n");

	for (size_t i = 0; !err && i < w->n_conns; i++) {
		const struct ls_watch_conn *c = &w->conns[i];
		err = ls_strbuf_printf(&b, "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%zu,"
				       "\"args\":{\"name\":\"conn %zu pid %u :%u\"}}", first ? "" : ",\n", i, i, c->tgid, c->lport);
		first = 0;
		if (!err)
			err = slice(&b, "connect", i, c->connect_ns, c->established_ns, &first);
		if (!err)
			err = slice(&b, "TLS handshake", i, c->tls_start_ns, c->tls_end_ns, &first);
		for (uint32_t k = 0; !err && k < c->n_ex; k++) {
			const struct ls_watch_exchange *x = &w->ex[c->first_ex + k];
			err = slice(&b, "request sending", i, x->send_first_ns, x->sent_ns, &first);
			if (!err)
				err = slice(&b, "waiting for the first frame", i, x->sent_ns, x->first_data_ns, &first);
			if (!err)
				err = slice(&b, "first frame held by the harness", i, x->first_data_ns, x->first_data_read_ns, &first);
			if (!err)
				err = slice(&b, "streaming", i, x->first_data_read_ns, x->last_read_ns, &first);
		}
	}
	if (!err)
		err = ls_strbuf_puts(&b, "\n],\"displayTimeUnit\":\"ms\"}\n");
	if (!err)
		err = write_buf("--trace", path, &b);
	else
		fprintf(stderr, "latscope watch: --trace %s: out of memory\n", path);
	ls_strbuf_free(&b);
	return err;
}
