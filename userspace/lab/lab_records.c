/* lab/lab_records.c — a `latscope bench --record` file reduced to what the TCP/TLS experiment
 * needs: TTFT, connect and TLS handshake medians, and whether reused connections really
 * skipped both. Each request line is read by base's record tables (base/record_fields.h), the
 * reader `latscope report` uses; only differences of stamps are taken, so base_ns is not needed. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lab/lab.h"
#include "base/record.h"
#include "base/record_fields.h"

struct dvec {
	double *v;
	size_t n, cap;
};

static int dvec_push(struct dvec *d, double x)
{
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 64;
		double *v = realloc(d->v, cap * sizeof(*v));
		if (!v)
			return -1;
		d->v = v;
		d->cap = cap;
	}
	d->v[d->n++] = x;
	return 0;
}

/* When the first token arrived: the first frame with choices (LS_FRAME_CHOICES), even if its
 * text is empty (a special token): a text gate would make TTFT jump by a whole step whenever
 * the sampled first token has no text. Else the first frame. 0 if none. */
static uint64_t first_token_frame(const struct ls_request *r)
{
	for (uint32_t i = 0; i < r->n_frames; i++)
		if (r->frames[i].arrived_ns && (r->frames[i].flags & LS_FRAME_CHOICES))
			return r->frames[i].arrived_ns;
	for (uint32_t i = 0; i < r->n_frames; i++)
		if (r->frames[i].arrived_ns)
			return r->frames[i].arrived_ns;
	return 0;
}

/* One request line, read by base's tables (record_fields.h) with stamps as ns after base 0. */
static int read_request(const cJSON *obj, struct ls_request *r)
{
	ls_request_reset(r, 0);
	ls_fields_get(obj, ls_request_fields, ls_n_request_fields, r, 0);
	const cJSON *frames = cJSON_GetObjectItemCaseSensitive(obj, "frames"), *f;
	cJSON_ArrayForEach(f, frames) {
		struct ls_frame *fr = ls_request_add_frame(r);
		if (!fr)
			return -1;
		if (ls_frame_get(f, fr, 0))
			r->n_frames--; /* not a frame of this version: left out */
	}
	return 0;
}

/* One request's figures into out and the vectors. 0 or -1 (out of memory). */
static int add_request(const struct ls_request *r, struct lab_run_fig *out, struct dvec *ttft, struct dvec *conn,
		       struct dvec *tls)
{
	if (r->fail != LS_OK) {
		out->failed++;
		return 0;
	}
	uint64_t first = first_token_frame(r);
	int bad = 0;
	if (first > r->started_ns && r->started_ns)
		bad |= dvec_push(ttft, (double)(first - r->started_ns) / 1e6);
	if (r->new_connection) {
		out->new_conns++;
		if (r->connect_ns > r->started_ns && r->started_ns)
			bad |= dvec_push(conn, (double)(r->connect_ns - r->started_ns) / 1e6);
		if (r->tls_ns > r->connect_ns && r->connect_ns)
			bad |= dvec_push(tls, (double)(r->tls_ns - r->connect_ns) / 1e6);
	} else if (r->connect_ns || r->tls_ns) {
		out->reused_with_setup++;
	}
	out->n++;
	return bad ? -1 : 0;
}

int lab_records_parse(const char *text, struct lab_run_fig *out)
{
	memset(out, 0, sizeof(*out));
	struct dvec ttft = { 0 }, conn = { 0 }, tls = { 0 };
	struct ls_request r;
	int rc = 0, lineno = 0;
	const char *line = text;
	memset(&r, 0, sizeof(r));
	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		lineno++;
		cJSON *obj = len ? cJSON_ParseWithLength(line, len) : NULL;
		line = end ? end + 1 : NULL;
		if (!obj) {
			if (len && line) { /* only a last, cut-off line may be unreadable */
				fprintf(stderr, "lab: record line %d is not JSON\n", lineno);
				rc = -1;
				break;
			}
			continue;
		}
		int skip = cJSON_GetObjectItemCaseSensitive(obj, "latscope_record") ||
			   cJSON_GetObjectItemCaseSensitive(obj, "latscope_run_end");
		if (!skip && (read_request(obj, &r) || (!r.warmup && add_request(&r, out, &ttft, &conn, &tls)))) {
			fprintf(stderr, "lab: out of memory reading records\n");
			rc = -1;
		}
		cJSON_Delete(obj);
		if (rc)
			break;
	}
	ls_request_free(&r);
	out->ttft_ms = lab_pct_dbl(ttft.v, ttft.n, 50);
	out->connect_ms = lab_pct_dbl(conn.v, conn.n, 50);
	out->tls_ms = lab_pct_dbl(tls.v, tls.n, 50);
	free(ttft.v);
	free(conn.v);
	free(tls.v);
	return rc;
}

/* Appends a whole file to *buf (grown as needed). 0 or -1. */
static int append_file(const char *path, char **buf, size_t *len, size_t *cap)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		fprintf(stderr, "lab: cannot read bench records %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (;;) {
		if (*len + 4096 >= *cap) {
			size_t cap2 = *cap ? *cap * 2 : 1 << 16;
			char *grown = realloc(*buf, cap2);
			if (!grown) {
				fclose(f);
				fprintf(stderr, "lab: out of memory reading %s\n", path);
				return -1;
			}
			*buf = grown;
			*cap = cap2;
		}
		size_t r = fread(*buf + *len, 1, *cap - *len - 2, f);
		if (!r)
			break;
		*len += r;
	}
	fclose(f);
	if (*len && (*buf)[*len - 1] != '\n')
		(*buf)[(*len)++] = '\n'; /* a cut-off last line stays a line of its own */
	(*buf)[*len] = 0;
	return 0;
}

int lab_records_read_many(const char *const *paths, size_t n, struct lab_run_fig *out)
{
	memset(out, 0, sizeof(*out));
	char *buf = NULL;
	size_t len = 0, cap = 0;
	for (size_t i = 0; i < n; i++) {
		if (append_file(paths[i], &buf, &len, &cap) < 0) {
			free(buf);
			return -1;
		}
	}
	int rc = lab_records_parse(buf ? buf : "", out);
	free(buf);
	return rc;
}

int lab_records_read(const char *path, struct lab_run_fig *out)
{
	return lab_records_read_many(&path, 1, out);
}
