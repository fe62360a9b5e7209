/* sim/sim_truth.c — the ground-truth JSONL: one line per generation request, appended as the
 * request ends, with one write(2) on an O_APPEND fd so every line lands whole and is on disk
 * (in the page cache) before the next event is handled. Keys: docs/sim.md. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "sim/sim.h"

static const char *const frame_kinds[] = {
	[SIM_FRAME_TOKENS] = "tokens", [SIM_FRAME_ROLE] = "role", [SIM_FRAME_USAGE] = "usage",
	[SIM_FRAME_DONE] = "done", [SIM_FRAME_MALFORMED] = "malformed",
	[SIM_FRAME_TRUNCATED] = "truncated", [SIM_FRAME_BODY] = "body", [SIM_FRAME_ERROR] = "error",
};
static const char *const endpoints[] = { "completions", "chat", "generate", "tgi", "trt", "responses" };

int sim_truth_open(struct sim_truth *t, const char *path)
{
	memset(t, 0, sizeof(*t));
	t->fd = -1;
	if (!path)
		return 0;
	t->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (t->fd < 0) {
		fprintf(stderr, "latscope sim: --truth %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

int sim_req_add_frame(struct sim_req *r, uint64_t t_ns, uint32_t bytes, uint32_t tokens,
		      uint32_t text_len, enum sim_frame_kind kind)
{
	if (r->n_frames == r->cap_frames) {
		size_t cap = r->cap_frames ? r->cap_frames * 2 : 16;
		struct sim_frame_rec *f = realloc(r->frames, cap * sizeof(*f));
		if (!f)
			return -1;
		r->frames = f;
		r->cap_frames = cap;
	}
	r->frames[r->n_frames++] = (struct sim_frame_rec){ t_ns, bytes, tokens, text_len, kind };
	return 0;
}

int sim_req_add_step(struct sim_req *r, const struct sim_step_rec *s)
{
	if (r->n_steps == r->cap_steps) {
		size_t cap = r->cap_steps ? r->cap_steps * 2 : 16;
		struct sim_step_rec *n = realloc(r->steps, cap * sizeof(*n));
		if (!n)
			return -1;
		r->steps = n;
		r->cap_steps = cap;
	}
	r->steps[r->n_steps++] = *s;
	return 0;
}

static int format_line(struct ls_strbuf *b, const struct sim_req *r, uint64_t end_ns, int failed,
		       const char *reason)
{
	int rc = 0;
	b->len = 0;
	rc |= ls_strbuf_puts(b, "{\"id\":");
	rc |= ls_strbuf_json_str(b, r->id, strlen(r->id));
	rc |= ls_strbuf_printf(b, ",\"conn\":%llu,\"seq\":%llu,\"endpoint\":\"%s\",\"stream\":%s",
			     (unsigned long long)(r->conn ? r->conn->id : 0),
			     (unsigned long long)r->seq, endpoints[r->ep], r->stream ? "true" : "false");
	rc |= ls_strbuf_printf(b, ",\"received\":%llu,\"admitted\":%llu,\"headers\":%llu",
			     (unsigned long long)r->received_ns, (unsigned long long)r->admitted_ns,
			     (unsigned long long)r->headers_ns);
	rc |= ls_strbuf_printf(b, ",\"prompt_tokens\":%d,\"cached_tokens\":%d,\"max_tokens\":%d,"
			     "\"completion_tokens\":%d,\"fault\":\"%s\",",
			     r->prompt_len, r->cached_tokens, r->max_tokens, r->generated,
			     sim_fault_name(r->fault));
	if (r->engine_bad)
		rc |= ls_strbuf_printf(b, "\"engine_bad\":\"%s\",", sim_engine_fields_bad_name(r->engine_bad));
	rc |= ls_strbuf_puts(b, "\"steps\":[");
	for (size_t i = 0; i < r->n_steps && !rc; i++) {
		const struct sim_step_rec *s = &r->steps[i];
		rc |= ls_strbuf_printf(b, "%s{\"start\":%llu,\"end\":%llu,\"tokens\":%u,\"prefill_tokens\":%u",
				     i ? "," : "", (unsigned long long)s->start_ns,
				     (unsigned long long)s->end_ns, s->tokens, s->prefill_tokens);
		if (s->gpu_end_ns)
			rc |= ls_strbuf_printf(b, ",\"gpu_start\":%llu,\"gpu_end\":%llu",
					     (unsigned long long)s->gpu_start_ns,
					     (unsigned long long)s->gpu_end_ns);
		rc |= ls_strbuf_puts(b, "}");
	}
	rc |= ls_strbuf_puts(b, "],\"frames\":[");
	for (size_t i = 0; i < r->n_frames && !rc; i++) {
		const struct sim_frame_rec *f = &r->frames[i];
		rc |= ls_strbuf_printf(b, "%s{\"t\":%llu,\"bytes\":%u,\"tokens\":%u,\"text_len\":%u,\"kind\":\"%s\"}",
				     i ? "," : "", (unsigned long long)f->t_ns, f->bytes, f->tokens,
				     f->text_len, frame_kinds[f->kind]);
	}
	rc |= ls_strbuf_printf(b, "],\"%s\":%llu,\"reason\":", failed ? "failed" : "finished",
			     (unsigned long long)end_ns);
	rc |= ls_strbuf_json_str(b, reason, strlen(reason));
	rc |= ls_strbuf_puts(b, "}\n");
	return rc;
}

void sim_truth_write(struct sim_truth *t, const struct sim_req *r, uint64_t end_ns, int failed,
		     const char *reason)
{
	if (t->fd < 0)
		return;
	if (format_line(&t->line, r, end_ns, failed, reason)) {
		t->write_errors++;
		return;
	}
	size_t off = 0;
	while (off < t->line.len) {
		ssize_t n = write(t->fd, t->line.data + off, t->line.len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (!t->write_errors++)
				fprintf(stderr, "latscope sim: writing the truth file: %s\n", strerror(errno));
			return;
		}
		off += (size_t)n;
	}
	t->lines++;
}

void sim_truth_close(struct sim_truth *t)
{
	if (t->fd >= 0) {
		fsync(t->fd);
		close(t->fd);
	}
	t->fd = -1;
	ls_strbuf_free(&t->line);
}
