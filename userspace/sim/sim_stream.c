/* sim/sim_stream.c — the generation endpoints' response side: one SSE message per engine step
 * per request (the text of exactly the tokens it carries), in the OpenAI or SGLang shape, one
 * HTTP chunk per message; the mid-stream faults; the end of a request (usage, [DONE], truth). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/clock.h"
#include "sim/sim.h"

struct pending_frame {
	uint32_t bytes, tokens, text_len;
	enum sim_frame_kind kind;
};

/* What one emit builds before it writes. Its buffers keep their capacity from one emit to the
 * next (sim_stream_emit owns the one instance: the sim has one thread), so a frame allocates
 * nothing once they have grown. */
struct wire {
	struct ls_strbuf buf;            /* chunked bytes to send */
	struct ls_strbuf msg;            /* the SSE message being built */
	struct ls_strbuf text;           /* this step's tokens as text (and a fault's extra bytes) */
	struct pending_frame frames[8];
	int n;
	int rc;
	int chunked;                   /* frame as HTTP chunks (else HTTP/1.0: raw until close) */
	size_t raw_tail;               /* bad-utf8: the text's last bytes, sent unescaped */
	int last_id;                   /* the step's last token id (TGI's frames name it) */
};

/* How the mid-stream fault due at this step shapes its frames; framing only reads it. */
struct frame_cut {
	int malformed;                  /* the JSON is cut in half */
	int truncated;                  /* the chunk (or body) carries half of what it announces, then FIN */
	enum sim_frame_kind token_kind; /* the token frame's kind in the truth */
	const char *event_end;          /* "\n\n", or "\n" from the no-blank-line fault on */
};

#define OVERSIZE_TEXT_BYTES ((1u << 20) + (64u << 10)) /* past latscope's 1 MiB frame cap */
#define ENDLESS_BURST       512u                       /* extra frames per step */
#define ENDLESS_MARGIN      4096u                      /* frames past 4 x max_tokens, then silence */
#define ENDLESS_MAX         (1u << 23)
#define TRUTH_FRAMES_MAX    4096u                      /* an endless stream's truth stops growing */

/* What a faulty frame adds after its tokens' text (static, built once): for bad-utf8 a lone
 * continuation byte, an overlong '/' and 0xff, invalid to any UTF-8 decoder; for
 * oversize-frame 1 MiB + 64 KiB of 'x'. */
static const char *fault_extra(struct wire *w, enum sim_fault f, size_t *len)
{
	static char *pad;
	if (f == SIM_FAULT_BAD_UTF8) {
		*len = 4;
		return "\x80\xc0\xaf\xff";
	}
	if (!pad && (pad = malloc(OVERSIZE_TEXT_BYTES)))
		memset(pad, 'x', OVERSIZE_TEXT_BYTES);
	*len = pad ? OVERSIZE_TEXT_BYTES : 0;
	w->rc |= pad ? 0 : -1;
	return pad ? pad : "";
}

/* Frames past every token: copies of the message just pushed (bytes [from, w->buf.len)), up to
 * ENDLESS_BURST a step; at the bound the request goes silent (stalled) until the client leaves. */
static int endless_more(struct sim_server *srv, struct sim_req *r, struct wire *w, size_t from)
{
	uint64_t limit = (uint64_t)r->max_tokens * 4 + ENDLESS_MARGIN;
	if (limit > ENDLESS_MAX)
		limit = ENDLESS_MAX;
	size_t one = w->buf.len - from;
	uint32_t n = 0;
	while (n < ENDLESS_BURST && (uint64_t)r->token_frames + r->endless_frames + n < limit && one) {
		if (ls_strbuf_reserve(&w->buf, one)) {
			w->rc = -1;
			break;
		}
		memcpy(w->buf.data + w->buf.len, w->buf.data + from, one);
		w->buf.len += one;
		n++;
	}
	if (n && w->n < 8) /* one truth frame for the burst: bytes and copies */
		w->frames[w->n++] = (struct pending_frame){ (uint32_t)(one * n), n, 0, SIM_FRAME_TOKENS };
	r->endless_frames += n;
	if ((uint64_t)r->token_frames + r->endless_frames >= limit) {
		sim_engine_detach(srv, r);
		r->state = SIM_REQ_STALLED;
		return 1;
	}
	return 0;
}

static const char *oai_object(const struct sim_req *r)
{
	if (r->ep == SIM_EP_CHAT)
		return r->stream ? "chat.completion.chunk" : "chat.completion";
	return "text_completion";
}

/* The JSON helpers below append to w->msg, the message being built. */
static void oai_prefix(struct sim_server *srv, const struct sim_req *r, struct wire *w)
{
	w->rc |= ls_strbuf_printf(&w->msg, "{\"id\":\"%s%s\",\"object\":\"%s\",\"created\":%lld,\"model\":",
				r->ep == SIM_EP_CHAT ? "chatcmpl-" : "cmpl-", r->id, oai_object(r), r->created);
	w->rc |= ls_strbuf_json_str(&w->msg, srv->cfg->model, strlen(srv->cfg->model));
}

static void usage_obj(const struct sim_req *r, struct wire *w)
{
	w->rc |= ls_strbuf_printf(&w->msg,
				"\"usage\":{\"prompt_tokens\":%d,\"total_tokens\":%d,\"completion_tokens\":%d}",
				r->prompt_len, r->prompt_len + r->generated, r->generated);
}

static void finish_json(const char *reason, struct wire *w)
{
	if (reason)
		w->rc |= ls_strbuf_printf(&w->msg, "\"%s\"", reason);
	else
		w->rc |= ls_strbuf_puts(&w->msg, "null");
}

static void meta_info(struct sim_server *srv, const struct sim_req *r, const char *reason, struct wire *w)
{
	struct ls_strbuf *m = &w->msg;
	w->rc |= ls_strbuf_printf(m, "\"meta_info\":{\"id\":\"%s\",\"finish_reason\":", r->id);
	if (!reason)
		w->rc |= ls_strbuf_puts(m, "null");
	else if (!strcmp(reason, "stop"))
		w->rc |= ls_strbuf_printf(m, "{\"type\":\"stop\",\"matched\":%d}", SIM_TOK_EOS);
	else
		w->rc |= ls_strbuf_printf(m, "{\"type\":\"length\",\"length\":%d}", r->generated);
	w->rc |= ls_strbuf_printf(m, ",\"prompt_tokens\":%d,\"completion_tokens\":%d,\"cached_tokens\":%d",
				r->prompt_len, r->generated, r->cached_tokens);
	if (srv->cfg->accept_len > 1.0)
		w->rc |= ls_strbuf_printf(m, ",\"spec_verify_ct\":%u", r->spec_verify_ct);
	if (srv->cfg->engine_fields == SIM_EF_SGLANG) /* --enable-metrics: on every frame, e2e on the last */
		w->rc |= sim_engine_fields_sglang(m, r, reason != NULL);
	w->rc |= ls_strbuf_puts(m, "}");
}

/* Wraps w->msg as one chunk (cut to keep bytes of it when keep < len: truncated-chunk). */
static void push_message(struct wire *w, uint32_t tokens, uint32_t text_len, enum sim_frame_kind kind,
			 size_t keep)
{
	size_t len = w->msg.len;
	if (w->chunked)
		w->rc |= ls_strbuf_printf(&w->buf, "%zx\r\n", len);
	if (keep < len) {
		w->rc |= ls_strbuf_append(&w->buf, w->msg.data, keep);
		len = keep;
	} else {
		w->rc |= ls_strbuf_append(&w->buf, w->msg.data, len);
		if (w->chunked)
			w->rc |= ls_strbuf_puts(&w->buf, "\r\n");
	}
	if (w->n < 8)
		w->frames[w->n++] = (struct pending_frame){ (uint32_t)len, tokens, text_len, kind };
	w->msg.len = 0;
}

/* s as a JSON string into w->msg, but for its last w->raw_tail bytes: the bad-utf8 fault's,
 * written as they are, since the escaper would turn them into valid JSON. */
static void text_json(struct wire *w, const char *s, size_t n)
{
	size_t raw = w->raw_tail < n ? w->raw_tail : n;
	int rc = ls_strbuf_json_str(&w->msg, s, n - raw);
	w->rc |= rc;
	if (raw && !rc) {
		w->msg.len--; /* reopen the string: the raw bytes, then its quote */
		w->rc |= ls_strbuf_append(&w->msg, s + n - raw, raw);
		w->rc |= ls_strbuf_puts(&w->msg, "\"");
	}
}

/* The text generated so far, as a JSON string. */
static void whole_text_json(const struct sim_req *r, struct wire *w)
{
	text_json(w, r->text.data ? r->text.data : "", r->text.len);
}

/* SGLang's /generate object: the cumulative text, then meta_info (its streams resend it whole). */
static void generate_json(struct sim_server *srv, struct sim_req *r, const char *reason, struct wire *w)
{
	w->rc |= ls_strbuf_puts(&w->msg, "{\"text\":");
	whole_text_json(r, w);
	w->rc |= ls_strbuf_puts(&w->msg, ",");
	meta_info(srv, r, reason, w);
	w->rc |= ls_strbuf_puts(&w->msg, "}");
}

/* From the no-blank-line fault on, every data: line ends in one newline: no event ever ends. */
static int no_blank_line(const struct sim_req *r)
{
	return r->fault == SIM_FAULT_NO_BLANK_LINE && r->malformed_done;
}

/* The data: message of a token frame (w->text); a malformed one is cut in the middle of its JSON. */
static void token_message(struct sim_server *srv, struct sim_req *r, struct wire *w, const char *reason,
			  const struct frame_cut *cut)
{
	struct ls_strbuf *m = &w->msg;
	w->rc |= ls_strbuf_puts(m, "data: ");
	size_t json_start = m->len;
	if (sim_api_is_peer(r->ep)) {
		m->len -= 6; /* the peer JSON writes its own "data:" */
		w->rc |= sim_stream_peer_json(m, r, w->text.data ? w->text.data : "", w->text.len, w->last_id, reason);
	} else if (r->ep == SIM_EP_GENERATE) {
		generate_json(srv, r, reason, w);
	} else {
		oai_prefix(srv, r, w);
		w->rc |= ls_strbuf_puts(m, ",\"choices\":[{\"index\":0,");
		w->rc |= ls_strbuf_puts(m, r->ep == SIM_EP_CHAT ? "\"delta\":{\"content\":" : "\"text\":");
		text_json(w, w->text.data ? w->text.data : "", w->text.len);
		w->rc |= ls_strbuf_puts(m, r->ep == SIM_EP_CHAT ? "}," : ",");
		w->rc |= ls_strbuf_puts(m, "\"logprobs\":null,\"finish_reason\":");
		finish_json(reason, w);
		w->rc |= ls_strbuf_puts(m, r->ep == SIM_EP_CHAT ? "}]" : ",\"stop_reason\":null}]");
		if (reason && srv->cfg->engine_fields == SIM_EF_LLAMACPP) /* its last frame carries them */
			w->rc |= sim_engine_fields_llamacpp(m, r);
		w->rc |= ls_strbuf_puts(m, "}");
	}
	if (cut->malformed && m->len > json_start + 2)
		m->len = json_start + (m->len - json_start) / 2;
	w->rc |= ls_strbuf_puts(m, cut->event_end);
}

/* --api-frame-us: a Python API server spends tens of microseconds serialising and detokenising
 * each frame, so one step's frames leave that far apart; the sim's one thread is that server. */
static void api_frame_work(const struct sim_config *cfg)
{
	if (cfg->api_frame_us <= 0)
		return;
	uint64_t until = ls_now_ns() + (uint64_t)(cfg->api_frame_us * 1e3);
	while (ls_now_ns() < until)
		;
}

static void send_wire(struct sim_req *r, struct wire *w)
{
	api_frame_work(r->conn->srv->cfg);
	uint64_t t = ls_now_ns(); /* just before the write */
	for (int i = 0; i < w->n && (r->fault != SIM_FAULT_ENDLESS_STREAM || r->n_frames < TRUTH_FRAMES_MAX); i++)
		sim_req_add_frame(r, t, w->frames[i].bytes, w->frames[i].tokens, w->frames[i].text_len,
				  w->frames[i].kind);
	if (!w->rc)
		sim_conn_send(r->conn, w->buf.data, w->buf.len);
	else
		sim_conn_kill(r->conn, 0);
}

/* Ends r: truth line, frees it, lets its connection go on with the next request. */
static void finish(struct sim_server *srv, struct sim_req *r, int failed, const char *reason)
{
	struct sim_conn *c = r->conn;
	sim_engine_detach(srv, r);
	if (!failed && r->generated >= r->target_tokens)
		srv->finished_total[!strcmp(reason, "stop")]++;
	/* trtllm-serve appends its entry before the stream's last chunk: in the list by its end */
	if (!failed && srv->cfg->engine_fields == SIM_EF_TRTLLM && sim_perf_add(srv, r))
		fprintf(stderr, "latscope sim: out of memory for /perf_metrics; request %s left out\n", r->id);
	sim_truth_write(&srv->truth, r, ls_now_ns(), failed, reason);
	if (c && c->req == r)
		c->req = NULL;
	int keep_alive = r->keep_alive;
	sim_api_req_free(r);
	if (!c || c->dead)
		return;
	if (!keep_alive) {
		c->close_after_flush = 1;
		sim_conn_flush(c);
	} else {
		sim_conn_process_input(c);
	}
}

void sim_stream_abort(struct sim_server *srv, struct sim_req *r, const char *reason)
{
	/* A silent request (stall, no-headers, the end of an endless stream), or one whose fault
	 * already fired (the client left because of it): the fault is why it ended. */
	if (r->state == SIM_REQ_STALLED || (r->malformed_done && r->fault != SIM_FAULT_NONE))
		reason = sim_fault_name(r->fault);
	sim_engine_detach(srv, r);
	sim_truth_write(&srv->truth, r, ls_now_ns(), 1, reason);
	if (r->conn && r->conn->req == r)
		r->conn->req = NULL;
	sim_api_req_free(r);
}

/* A non-streaming response: head and the whole JSON body, cut as the fault says. */
static void frame_whole_body(struct sim_server *srv, struct sim_req *r, struct wire *w, const char *reason,
			     const struct frame_cut *cut)
{
	struct ls_strbuf *m = &w->msg;
	if (r->ep == SIM_EP_GENERATE) {
		generate_json(srv, r, reason, w);
	} else {
		oai_prefix(srv, r, w);
		w->rc |= ls_strbuf_puts(m, ",\"choices\":[{\"index\":0,");
		w->rc |= ls_strbuf_puts(m, r->ep == SIM_EP_CHAT ? "\"message\":{\"role\":\"assistant\",\"content\":"
							      : "\"text\":");
		whole_text_json(r, w);
		w->rc |= ls_strbuf_puts(m, r->ep == SIM_EP_CHAT ? "}," : ",");
		w->rc |= ls_strbuf_puts(m, "\"logprobs\":null,\"finish_reason\":");
		finish_json(reason, w);
		w->rc |= ls_strbuf_puts(m, "}],");
		usage_obj(r, w);
		w->rc |= ls_strbuf_puts(m, "}");
	}
	size_t len = m->len, send_len = len;
	if (cut->malformed)
		len = send_len = m->len / 2;
	if (cut->truncated)
		send_len = len / 2; /* announce len, send half, close */
	w->rc |= ls_strbuf_printf(&w->buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
				"Content-Length: %zu\r\nX-Request-Id: %s\r\n%s\r\n", len, r->id,
				r->keep_alive && !cut->truncated ? "" : "Connection: close\r\n");
	r->headers_ns = ls_now_ns();
	w->rc |= ls_strbuf_append(&w->buf, m->data, send_len);
	enum sim_frame_kind kind = cut->truncated ? SIM_FRAME_TRUNCATED
			      : cut->malformed ? SIM_FRAME_MALFORMED : SIM_FRAME_BODY;
	w->frames[w->n++] = (struct pending_frame){ (uint32_t)send_len, (uint32_t)r->generated,
						    (uint32_t)r->text.len, kind };
	m->len = 0;
}

/* A streamed step's frames up to its tokens: the role alone first (chat, as vLLM does), then
 * the token frame, cut as the fault says. Returns where the token frame starts in w->buf. */
static size_t frame_tokens(struct sim_server *srv, struct sim_req *r, struct wire *w, int n, int frame_no,
			   const char *reason, const struct frame_cut *cut)
{
	if (r->ep == SIM_EP_RESPONSES && frame_no == 1) { /* created ... content_part.added */
		w->rc |= sim_responses_preamble(&w->msg, r);
		push_message(w, 0, 0, SIM_FRAME_ROLE, (size_t)-1);
	}
	if (r->ep == SIM_EP_CHAT && frame_no == 1) {
		w->rc |= ls_strbuf_puts(&w->msg, "data: ");
		oai_prefix(srv, r, w);
		w->rc |= ls_strbuf_puts(&w->msg, ",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
					       "\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n");
		push_message(w, 0, 0, SIM_FRAME_ROLE, (size_t)-1);
	}
	token_message(srv, r, w, cut->truncated ? NULL : reason, cut);
	size_t keep = cut->truncated ? w->msg.len / 2 : (size_t)-1, token_from = w->buf.len;
	push_message(w, (uint32_t)n, (uint32_t)w->text.len, cut->token_kind, keep);
	return token_from;
}

/* The end of a stream: the usage frame (when asked for), [DONE] and the last chunk. */
static void frame_stream_end(struct sim_server *srv, struct sim_req *r, struct wire *w,
			     const struct frame_cut *cut)
{
	if (r->ep == SIM_EP_RESPONSES) { /* the .done events and response.completed, no [DONE] */
		w->rc |= sim_responses_end(&w->msg, r);
		push_message(w, 0, 0, SIM_FRAME_USAGE, (size_t)-1);
	}
	if (sim_api_is_peer(r->ep)) { /* none sends a usage frame or [DONE] */
		if (w->chunked)
			w->rc |= ls_strbuf_puts(&w->buf, "0\r\n\r\n");
		return;
	}
	if (r->include_usage && r->ep != SIM_EP_GENERATE) {
		w->rc |= ls_strbuf_puts(&w->msg, "data: ");
		oai_prefix(srv, r, w);
		w->rc |= ls_strbuf_puts(&w->msg, ",\"choices\":[],");
		usage_obj(r, w);
		if (srv->cfg->engine_fields == SIM_EF_VLLM) /* the usage frame carries them */
			w->rc |= sim_engine_fields_vllm(&w->msg, r);
		w->rc |= ls_strbuf_puts(&w->msg, "}");
		w->rc |= ls_strbuf_puts(&w->msg, cut->event_end);
		push_message(w, 0, 0, SIM_FRAME_USAGE, (size_t)-1);
	}
	w->rc |= ls_strbuf_puts(&w->msg, "data: [DONE]");
	w->rc |= ls_strbuf_puts(&w->msg, cut->event_end);
	push_message(w, 0, 0, SIM_FRAME_DONE, (size_t)-1);
	if (w->chunked)
		w->rc |= ls_strbuf_puts(&w->buf, "0\r\n\r\n");
}

/* Fires r's mid-stream fault when it is due at this frame (streams at their seeded frame, or the
 * last if sooner; whole bodies at the end) and says in cut how it shapes the frames. 1 when the
 * fault took r (reset: finished; stall: parked, silent), else 0. Faults that corrupt the text
 * append their bytes to w->text (and to r->text where the cumulative text is sent). */
static int mid_stream_fault(struct sim_server *srv, struct sim_req *r, struct wire *w, int frame_no,
			    const char *reason, struct frame_cut *cut)
{
	*cut = (struct frame_cut){ .token_kind = SIM_FRAME_TOKENS };
	int due = r->stream ? frame_no >= r->fault_frame || reason : reason != NULL;
	if (sim_fault_mid_stream(r->fault) && !r->malformed_done && due) {
		switch (r->fault) {
		case SIM_FAULT_RESET_MID_STREAM:
			sim_conn_kill(r->conn, 1); /* first, so finish() does not serve a pipelined request */
			finish(srv, r, 1, sim_fault_name(r->fault));
			return 1;
		case SIM_FAULT_STALL:
			/* The request leaves the batch; the connection stays open and silent. */
			sim_engine_detach(srv, r);
			r->state = SIM_REQ_STALLED;
			return 1;
		case SIM_FAULT_MALFORMED_FRAME:
			cut->malformed = r->malformed_done = 1;
			break;
		case SIM_FAULT_TRUNCATED_CHUNK:
			cut->truncated = 1;
			break;
		case SIM_FAULT_OVERSIZE_FRAME:
		case SIM_FAULT_BAD_UTF8: {
			size_t extra_len;
			const char *extra = fault_extra(w, r->fault, &extra_len);
			r->malformed_done = 1;
			cut->token_kind = SIM_FRAME_MALFORMED;
			if (r->fault == SIM_FAULT_BAD_UTF8)
				w->raw_tail = extra_len;
			w->rc |= ls_strbuf_append(&w->text, extra, extra_len);
			if (r->ep == SIM_EP_GENERATE || r->ep == SIM_EP_TGI || r->ep == SIM_EP_RESPONSES || !r->stream) /* the cumulative text carries it too */
				w->rc |= ls_strbuf_append(&r->text, extra, extra_len);
			break;
		}
		case SIM_FAULT_NO_BLANK_LINE:
		case SIM_FAULT_ENDLESS_STREAM:
			r->malformed_done = 1;
			break;
		default:
			break;
		}
	}
	if (no_blank_line(r))
		cut->token_kind = SIM_FRAME_MALFORMED;
	if (cut->truncated)
		cut->token_kind = SIM_FRAME_TRUNCATED;
	else if (cut->malformed)
		cut->token_kind = SIM_FRAME_MALFORMED;
	cut->event_end = no_blank_line(r) ? "\n" : "\n\n";
	return 0;
}

/* After the write: a truncated chunk ends the connection (it promised more bytes than it
 * carried: FIN); a finished request writes its truth. */
static void end_step(struct sim_server *srv, struct sim_req *r, struct sim_conn *c, const char *reason,
		     const struct frame_cut *cut)
{
	if (cut->truncated) {
		c->close_after_flush = 1;
		finish(srv, r, 1, sim_fault_name(SIM_FAULT_TRUNCATED_CHUNK));
		if (!c->dead)
			sim_conn_flush(c);
		return;
	}
	if (reason)
		finish(srv, r, r->malformed_done, r->malformed_done ? sim_fault_name(r->fault) : reason);
}

void sim_stream_emit(struct sim_server *srv, struct sim_req *r, const int *ids, int n, const char *reason)
{
	static struct wire scratch; /* see struct wire: reused, one thread */
	struct wire *w = &scratch;
	struct sim_conn *c = r->conn;
	if (c->dead)
		return; /* the client left in this event batch: reaping fails r as client_closed */
	w->buf.len = w->msg.len = w->text.len = 0;
	w->n = 0;
	w->rc = 0;
	w->raw_tail = 0;
	w->chunked = r->chunked;
	if (sim_tok_decode(ids, (size_t)n, &w->text) < 0) {
		sim_stream_abort(srv, r, "internal_error");
		sim_conn_kill(c, 0);
		return;
	}
	r->generated += n;
	w->last_id = n ? ids[n - 1] : 0;
	if (r->ep == SIM_EP_GENERATE || r->ep == SIM_EP_TGI || r->ep == SIM_EP_RESPONSES || !r->stream)
		w->rc |= ls_strbuf_append(&r->text, w->text.data, w->text.len);
	int frame_no = ++r->token_frames;

	struct frame_cut cut;
	if (mid_stream_fault(srv, r, w, frame_no, reason, &cut))
		return;
	if (!r->stream) {
		if (!reason && !cut.truncated)
			return;
		frame_whole_body(srv, r, w, reason ? reason : "length", &cut);
	} else {
		size_t token_from = frame_tokens(srv, r, w, n, frame_no, reason, &cut);
		if (r->fault == SIM_FAULT_ENDLESS_STREAM && r->malformed_done &&
		    endless_more(srv, r, w, token_from)) {
			send_wire(r, w);
			return; /* silent now, until the client leaves (sim_stream_abort) */
		}
		if (reason && !cut.truncated)
			frame_stream_end(srv, r, w, &cut);
	}
	send_wire(r, w);
	end_step(srv, r, c, reason, &cut);
}
