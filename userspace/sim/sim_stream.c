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

struct wire {
	struct sim_buf buf;            /* chunked bytes to send */
	struct sim_buf msg;            /* the SSE message being built */
	struct pending_frame frames[8];
	int n;
	int rc;
	int chunked;                   /* frame as HTTP chunks (else HTTP/1.0: raw until close) */
};

static struct wire W; /* single-threaded scratch, reused */

#define OVERSIZE_TEXT_BYTES ((1u << 20) + (64u << 10)) /* past latscope's 1 MiB frame cap */
#define ENDLESS_BURST       512u                       /* extra frames per step */
#define ENDLESS_MARGIN      4096u                      /* frames past 4 x max_tokens, then silence */
#define ENDLESS_MAX         (1u << 23)
#define TRUTH_FRAMES_MAX    4096u                      /* an endless stream's truth stops growing */

/* What a faulty frame adds after its tokens' text (static, built once): for bad-utf8 a lone
 * continuation byte, an overlong '/' and 0xff, invalid to any UTF-8 decoder; for
 * oversize-frame 1 MiB + 64 KiB of 'x'. */
static const char *fault_extra(enum sim_fault f, size_t *len)
{
	static char *pad;
	if (f == SIM_FAULT_BAD_UTF8) {
		*len = 4;
		return "\x80\xc0\xaf\xff";
	}
	if (!pad && (pad = malloc(OVERSIZE_TEXT_BYTES)))
		memset(pad, 'x', OVERSIZE_TEXT_BYTES);
	*len = pad ? OVERSIZE_TEXT_BYTES : 0;
	W.rc |= pad ? 0 : -1;
	return pad ? pad : "";
}

/* Frames past every token: copies of the message just pushed (bytes [from, W.buf.len)), up to
 * ENDLESS_BURST a step; at the bound the request goes silent (stalled) until the client leaves. */
static int endless_more(struct sim_server *srv, struct sim_req *r, size_t from)
{
	uint64_t limit = (uint64_t)r->max_tokens * 4 + ENDLESS_MARGIN;
	if (limit > ENDLESS_MAX)
		limit = ENDLESS_MAX;
	size_t one = W.buf.len - from;
	uint32_t n = 0;
	while (n < ENDLESS_BURST && (uint64_t)r->token_frames + r->endless_frames + n < limit && one) {
		if (sim_buf_reserve(&W.buf, one)) {
			W.rc = -1;
			break;
		}
		memcpy(W.buf.data + W.buf.len, W.buf.data + from, one);
		W.buf.len += one;
		n++;
	}
	if (n && W.n < 8) /* one truth frame for the burst: bytes and copies */
		W.frames[W.n++] = (struct pending_frame){ (uint32_t)(one * n), n, 0, SIM_FRAME_TOKENS };
	r->endless_frames += n;
	if ((uint64_t)r->token_frames + r->endless_frames >= limit) {
		sim_engine_detach(srv, r);
		r->state = SIM_REQ_STALLED;
		return 1;
	}
	return 0;
}

static void model_str(struct sim_server *srv, struct sim_buf *b)
{
	W.rc |= sim_buf_json_str(b, srv->cfg->model, strlen(srv->cfg->model));
}

static const char *oai_object(const struct sim_req *r)
{
	if (r->ep == SIM_EP_CHAT)
		return r->stream ? "chat.completion.chunk" : "chat.completion";
	return "text_completion";
}

static void oai_prefix(struct sim_server *srv, const struct sim_req *r, struct sim_buf *b)
{
	W.rc |= sim_buf_printf(b, "{\"id\":\"%s%s\",\"object\":\"%s\",\"created\":%lld,\"model\":",
			       r->ep == SIM_EP_CHAT ? "chatcmpl-" : "cmpl-", r->id, oai_object(r), r->created);
	model_str(srv, b);
}

static void usage_obj(const struct sim_req *r, struct sim_buf *b)
{
	W.rc |= sim_buf_printf(b, "\"usage\":{\"prompt_tokens\":%d,\"total_tokens\":%d,\"completion_tokens\":%d}",
			       r->prompt_len, r->prompt_len + r->generated, r->generated);
}

static void finish_json(const char *reason, struct sim_buf *b)
{
	if (reason)
		W.rc |= sim_buf_printf(b, "\"%s\"", reason);
	else
		W.rc |= sim_buf_puts(b, "null");
}

static void meta_info(struct sim_server *srv, const struct sim_req *r, const char *reason, struct sim_buf *b)
{
	W.rc |= sim_buf_printf(b, "\"meta_info\":{\"id\":\"%s\",\"finish_reason\":", r->id);
	if (!reason)
		W.rc |= sim_buf_puts(b, "null");
	else if (!strcmp(reason, "stop"))
		W.rc |= sim_buf_printf(b, "{\"type\":\"stop\",\"matched\":%d}", SIM_TOK_EOS);
	else
		W.rc |= sim_buf_printf(b, "{\"type\":\"length\",\"length\":%d}", r->generated);
	W.rc |= sim_buf_printf(b, ",\"prompt_tokens\":%d,\"completion_tokens\":%d,\"cached_tokens\":%d",
			       r->prompt_len, r->generated, r->cached_tokens);
	if (srv->cfg->accept_len > 1.0)
		W.rc |= sim_buf_printf(b, ",\"spec_verify_ct\":%u", r->spec_verify_ct);
	W.rc |= sim_buf_puts(b, "}");
}

/* Wraps W.msg as one chunk (cut to keep bytes of it when keep < len: truncated-chunk). */
static void push_message(uint32_t tokens, uint32_t text_len, enum sim_frame_kind kind, size_t keep)
{
	size_t len = W.msg.len;
	if (W.chunked)
		W.rc |= sim_buf_printf(&W.buf, "%zx\r\n", len);
	if (keep < len) {
		W.rc |= sim_buf_append(&W.buf, W.msg.data, keep);
		len = keep;
	} else {
		W.rc |= sim_buf_append(&W.buf, W.msg.data, len);
		if (W.chunked)
			W.rc |= sim_buf_puts(&W.buf, "\r\n");
	}
	if (W.n < 8)
		W.frames[W.n++] = (struct pending_frame){ (uint32_t)len, tokens, text_len, kind };
	W.msg.len = 0;
}

/* The text generated so far, as a JSON string. */
static void whole_text_json(const struct sim_req *r, struct sim_buf *m)
{
	W.rc |= sim_buf_json_str(m, r->text.data ? r->text.data : "", r->text.len);
}

/* SGLang's /generate object: the cumulative text, then meta_info (its streams resend it whole). */
static void generate_json(struct sim_server *srv, struct sim_req *r, const char *reason, struct sim_buf *m)
{
	W.rc |= sim_buf_puts(m, "{\"text\":");
	whole_text_json(r, m);
	W.rc |= sim_buf_puts(m, ",");
	meta_info(srv, r, reason, m);
	W.rc |= sim_buf_puts(m, "}");
}

/* From the no-blank-line fault on, every data: line ends in one newline: no event ever ends. */
static int no_blank_line(const struct sim_req *r)
{
	return r->fault == SIM_FAULT_NO_BLANK_LINE && r->malformed_done;
}

/* The data: message of a token frame; a malformed one is cut in the middle of its JSON. */
static void token_message(struct sim_server *srv, struct sim_req *r, const char *text, size_t text_len,
			  const char *reason, int malformed)
{
	struct sim_buf *m = &W.msg;
	W.rc |= sim_buf_puts(m, "data: ");
	size_t json_start = m->len;
	if (r->ep == SIM_EP_GENERATE) {
		generate_json(srv, r, reason, m);
	} else {
		oai_prefix(srv, r, m);
		W.rc |= sim_buf_puts(m, ",\"choices\":[{\"index\":0,");
		W.rc |= sim_buf_puts(m, r->ep == SIM_EP_CHAT ? "\"delta\":{\"content\":" : "\"text\":");
		W.rc |= sim_buf_json_str(m, text, text_len);
		W.rc |= sim_buf_puts(m, r->ep == SIM_EP_CHAT ? "}," : ",");
		W.rc |= sim_buf_puts(m, "\"logprobs\":null,\"finish_reason\":");
		finish_json(reason, m);
		W.rc |= sim_buf_puts(m, r->ep == SIM_EP_CHAT ? "}]}" : ",\"stop_reason\":null}]}");
	}
	if (malformed && m->len > json_start + 2)
		m->len = json_start + (m->len - json_start) / 2;
	W.rc |= sim_buf_puts(m, no_blank_line(r) ? "\n" : "\n\n");
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

static void send_wire(struct sim_req *r)
{
	api_frame_work(r->conn->srv->cfg);
	uint64_t t = ls_now_ns(); /* just before the write */
	for (int i = 0; i < W.n && (r->fault != SIM_FAULT_ENDLESS_STREAM || r->n_frames < TRUTH_FRAMES_MAX); i++)
		sim_req_add_frame(r, t, W.frames[i].bytes, W.frames[i].tokens, W.frames[i].text_len,
				  W.frames[i].kind);
	if (!W.rc)
		sim_conn_send(r->conn, W.buf.data, W.buf.len);
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

static void whole_body(struct sim_server *srv, struct sim_req *r, const char *reason, int malformed,
		       int truncated)
{
	struct sim_buf *m = &W.msg;
	if (r->ep == SIM_EP_GENERATE) {
		generate_json(srv, r, reason, m);
	} else {
		oai_prefix(srv, r, m);
		W.rc |= sim_buf_puts(m, ",\"choices\":[{\"index\":0,");
		W.rc |= sim_buf_puts(m, r->ep == SIM_EP_CHAT ? "\"message\":{\"role\":\"assistant\",\"content\":"
							     : "\"text\":");
		whole_text_json(r, m);
		W.rc |= sim_buf_puts(m, r->ep == SIM_EP_CHAT ? "}," : ",");
		W.rc |= sim_buf_puts(m, "\"logprobs\":null,\"finish_reason\":");
		finish_json(reason, m);
		W.rc |= sim_buf_puts(m, "}],");
		usage_obj(r, m);
		W.rc |= sim_buf_puts(m, "}");
	}
	size_t len = m->len, send_len = len;
	if (malformed)
		len = send_len = m->len / 2;
	if (truncated)
		send_len = len / 2; /* announce len, send half, close */
	W.rc |= sim_buf_printf(&W.buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
			       "Content-Length: %zu\r\nX-Request-Id: %s\r\n%s\r\n", len, r->id,
			       r->keep_alive && !truncated ? "" : "Connection: close\r\n");
	r->headers_ns = ls_now_ns();
	W.rc |= sim_buf_append(&W.buf, m->data, send_len);
	enum sim_frame_kind kind = truncated ? SIM_FRAME_TRUNCATED : malformed ? SIM_FRAME_MALFORMED : SIM_FRAME_BODY;
	W.frames[W.n++] = (struct pending_frame){ (uint32_t)send_len, (uint32_t)r->generated,
						   (uint32_t)r->text.len, kind };
	m->len = 0;
}

void sim_stream_emit(struct sim_server *srv, struct sim_req *r, const int *ids, int n, const char *reason)
{
	struct sim_conn *c = r->conn;
	if (c->dead)
		return; /* the client left in this event batch: reaping fails r as client_closed */
	W.buf.len = W.msg.len = 0;
	W.n = 0;
	W.rc = 0;
	W.chunked = r->chunked;
	static struct sim_buf text;
	text.len = 0;
	if (sim_tok_decode(ids, (size_t)n, &text) < 0) {
		sim_stream_abort(srv, r, "internal_error");
		sim_conn_kill(c, 0);
		return;
	}
	r->generated += n;
	if (r->ep == SIM_EP_GENERATE || !r->stream)
		W.rc |= sim_buf_append(&r->text, text.data, text.len);
	int frame_no = ++r->token_frames;

	int malformed = 0, truncated = 0;
	enum sim_frame_kind token_kind = SIM_FRAME_TOKENS;
	/* Streams fault at their seeded frame (or the last, if sooner); whole bodies at the end. */
	int due = r->stream ? frame_no >= r->fault_frame || reason : reason != NULL;
	if (sim_fault_mid_stream(r->fault) && !r->malformed_done && due) {
		switch (r->fault) {
		case SIM_FAULT_RESET_MID_STREAM:
			sim_conn_kill(c, 1); /* first, so finish() does not serve a pipelined request */
			finish(srv, r, 1, sim_fault_name(r->fault));
			return;
		case SIM_FAULT_STALL:
			/* The request leaves the batch; the connection stays open and silent. */
			sim_engine_detach(srv, r);
			r->state = SIM_REQ_STALLED;
			return;
		case SIM_FAULT_MALFORMED_FRAME:
			malformed = r->malformed_done = 1;
			break;
		case SIM_FAULT_TRUNCATED_CHUNK:
			truncated = 1;
			break;
		case SIM_FAULT_OVERSIZE_FRAME:
		case SIM_FAULT_BAD_UTF8:
		{
			size_t extra_len;
			const char *extra = fault_extra(r->fault, &extra_len);
			r->malformed_done = 1;
			token_kind = SIM_FRAME_MALFORMED;
			W.rc |= sim_buf_append(&text, extra, extra_len);
			if (r->ep == SIM_EP_GENERATE || !r->stream) /* the cumulative text carries it too */
				W.rc |= sim_buf_append(&r->text, extra, extra_len);
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
		token_kind = SIM_FRAME_MALFORMED;

	if (!r->stream) {
		if (!reason && !truncated)
			return;
		whole_body(srv, r, reason ? reason : "length", malformed, truncated);
		send_wire(r);
	} else {
		if (r->ep == SIM_EP_CHAT && frame_no == 1) { /* vLLM sends the role alone first */
			W.rc |= sim_buf_puts(&W.msg, "data: ");
			oai_prefix(srv, r, &W.msg);
			W.rc |= sim_buf_puts(&W.msg, ",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
						     "\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n");
			push_message(0, 0, SIM_FRAME_ROLE, (size_t)-1);
		}
		token_message(srv, r, text.data ? text.data : "", text.len, truncated ? NULL : reason, malformed);
		size_t keep = truncated ? W.msg.len / 2 : (size_t)-1, token_from = W.buf.len;
		push_message((uint32_t)n, (uint32_t)text.len,
			     truncated ? SIM_FRAME_TRUNCATED : malformed ? SIM_FRAME_MALFORMED : token_kind, keep);
		if (r->fault == SIM_FAULT_ENDLESS_STREAM && r->malformed_done && endless_more(srv, r, token_from)) {
			send_wire(r);
			return; /* silent now, until the client leaves (sim_stream_abort) */
		}
		const char *end = no_blank_line(r) ? "\n" : "\n\n";
		if (reason && !truncated) {
			if (r->include_usage && r->ep != SIM_EP_GENERATE) {
				W.rc |= sim_buf_puts(&W.msg, "data: ");
				oai_prefix(srv, r, &W.msg);
				W.rc |= sim_buf_puts(&W.msg, ",\"choices\":[],");
				usage_obj(r, &W.msg);
				W.rc |= sim_buf_puts(&W.msg, "}");
				W.rc |= sim_buf_puts(&W.msg, end);
				push_message(0, 0, SIM_FRAME_USAGE, (size_t)-1);
			}
			W.rc |= sim_buf_puts(&W.msg, "data: [DONE]");
			W.rc |= sim_buf_puts(&W.msg, end);
			push_message(0, 0, SIM_FRAME_DONE, (size_t)-1);
			if (W.chunked)
				W.rc |= sim_buf_puts(&W.buf, "0\r\n\r\n");
		}
		send_wire(r);
	}
	if (truncated) {
		/* The chunk promised more bytes than it carried: end the connection (FIN). */
		c->close_after_flush = 1;
		finish(srv, r, 1, sim_fault_name(SIM_FAULT_TRUNCATED_CHUNK));
		if (!c->dead)
			sim_conn_flush(c);
		return;
	}
	if (reason)
		finish(srv, r, r->malformed_done, r->malformed_done ? sim_fault_name(r->fault) : reason);
}
