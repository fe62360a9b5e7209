/* lab/lab_records.c — a `latscope bench --record` file reduced to what the TCP/TLS experiment
 * needs: TTFT, connect and TLS handshake medians, and whether reused connections really
 * skipped both. Lines: a header {"latscope_record":..}, one object per request (stamps in ns
 * after base_ns, 0 = did not happen; frames as [arrived_ns, stream_off, bytes, text_len, ...]
 * arrays), an optional {"latscope_run_end":..}. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lab/lab.h"
#include "base/record.h"

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

static double num(const cJSON *obj, const char *key)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (cJSON_IsNumber(item))
		return item->valuedouble;
	if (cJSON_IsString(item) && item->valuestring)
		return strtod(item->valuestring, NULL);
	return 0;
}

/* When the first token arrived: the first frame with choices (LS_FRAME_CHOICES), even if its
 * text is empty (a special token): a text gate would make TTFT jump by a whole step whenever
 * the sampled first token has no text. Else the first frame. 0 if none. */
static double first_token_frame(const cJSON *frames)
{
	double first_any = 0;
	const cJSON *f;
	cJSON_ArrayForEach(f, frames) {
		double arrived, flags;
		if (cJSON_IsArray(f)) {
			const cJSON *a = cJSON_GetArrayItem(f, 0), *fl = cJSON_GetArrayItem(f, 6);
			arrived = cJSON_IsNumber(a) ? a->valuedouble : 0;
			flags = cJSON_IsNumber(fl) ? fl->valuedouble : 0;
		} else {
			arrived = num(f, "arrived_ns");
			flags = num(f, "flags");
		}
		if (arrived <= 0)
			continue;
		if (flags > 0 && flags < 4294967296.0 && ((uint32_t)flags & LS_FRAME_CHOICES))
			return arrived;
		if (!first_any)
			first_any = arrived;
	}
	return first_any;
}

int lab_records_parse(const char *text, struct lab_run_fig *out)
{
	memset(out, 0, sizeof(*out));
	struct dvec ttft = { 0 }, conn = { 0 }, tls = { 0 };
	int rc = 0, lineno = 0;
	const char *line = text;
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
		if (cJSON_GetObjectItemCaseSensitive(obj, "latscope_record") ||
		    cJSON_GetObjectItemCaseSensitive(obj, "latscope_run_end") || num(obj, "warmup") != 0) {
			cJSON_Delete(obj);
			continue;
		}
		const cJSON *fail = cJSON_GetObjectItemCaseSensitive(obj, "fail");
		if (cJSON_IsString(fail) && strcmp(fail->valuestring, "ok")) {
			out->failed++;
			cJSON_Delete(obj);
			continue;
		}
		double started = num(obj, "started_ns"), connect = num(obj, "connect_ns");
		double tls_done = num(obj, "tls_ns");
		int fresh = num(obj, "new_connection") != 0;
		double first = first_token_frame(cJSON_GetObjectItemCaseSensitive(obj, "frames"));
		int bad = 0;
		if (first > started && started > 0)
			bad |= dvec_push(&ttft, (first - started) / 1e6);
		if (fresh) {
			out->new_conns++;
			if (connect > started && started > 0)
				bad |= dvec_push(&conn, (connect - started) / 1e6);
			if (tls_done > connect && connect > 0)
				bad |= dvec_push(&tls, (tls_done - connect) / 1e6);
		} else if (connect > 0 || tls_done > 0) {
			out->reused_with_setup++;
		}
		out->n++;
		cJSON_Delete(obj);
		if (bad) {
			fprintf(stderr, "lab: out of memory reading records\n");
			rc = -1;
			break;
		}
	}
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
