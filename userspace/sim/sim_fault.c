/* sim/sim_fault.c — seeded per-request fault injection: which kind, from the request's own
 * random stream, so a run with the same seed and request ids fails the same requests; the
 * faults that act before a response head (HTTP errors, resets, silence); close-after-accept,
 * drawn per connection. The faults inside a stream are in sim_stream.c. */
#include <limits.h>
#include <string.h>
#include "base/clock.h"
#include "sim/sim.h"

static const char *const names[SIM_FAULT__COUNT] = {
	[SIM_FAULT_NONE] = "none",
	[SIM_FAULT_HTTP500] = "http500",
	[SIM_FAULT_HTTP429] = "http429",
	[SIM_FAULT_RESET_BEFORE_HEADERS] = "reset-before-headers",
	[SIM_FAULT_RESET_MID_STREAM] = "reset-mid-stream",
	[SIM_FAULT_STALL] = "stall",
	[SIM_FAULT_MALFORMED_FRAME] = "malformed-frame",
	[SIM_FAULT_TRUNCATED_CHUNK] = "truncated-chunk",
	[SIM_FAULT_HTTP400_EMPTY] = "http400-empty",
	[SIM_FAULT_HTTP503_EMPTY] = "http503-empty",
	[SIM_FAULT_OVERSIZE_FRAME] = "oversize-frame",
	[SIM_FAULT_BAD_UTF8] = "bad-utf8",
	[SIM_FAULT_NO_BLANK_LINE] = "no-blank-line",
	[SIM_FAULT_ENDLESS_STREAM] = "endless-stream",
	[SIM_FAULT_NO_HEADERS] = "no-headers",
	[SIM_FAULT_CLOSE_AFTER_ACCEPT] = "close-after-accept",
};

const char *sim_fault_name(enum sim_fault f)
{
	return (unsigned)f < SIM_FAULT__COUNT ? names[f] : "unknown";
}

int sim_fault_parse_kinds(const char *list, unsigned *mask)
{
	*mask = 0;
	const char *p = list;
	while (*p) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		int found = 0;
		if (n == 5 && !strncmp(p, "mixed", 5)) {
			for (int k = 1; k < SIM_FAULT__COUNT; k++)
				*mask |= 1u << k;
			found = 1;
		}
		for (int k = 1; k < SIM_FAULT__COUNT && !found; k++) {
			if (strlen(names[k]) == n && !strncmp(p, names[k], n)) {
				*mask |= 1u << k;
				found = 1;
			}
		}
		if (!found)
			return -1;
		if (!e)
			break;
		p = e + 1;
	}
	return *mask ? 0 : -1;
}

static int enabled_kinds(unsigned mask)
{
	int n = 0;
	for (int k = 1; k < SIM_FAULT__COUNT; k++)
		n += (mask >> k) & 1u;
	return n;
}

enum sim_fault sim_fault_pick(double rate, unsigned mask, uint64_t *rng)
{
	mask &= ~(1u << SIM_FAULT_CLOSE_AFTER_ACCEPT);
	if (rate <= 0 || !mask)
		return SIM_FAULT_NONE;
	if (sim_rng_unit(rng) >= rate)
		return SIM_FAULT_NONE;
	int kinds[SIM_FAULT__COUNT], n = 0;
	for (int k = 1; k < SIM_FAULT__COUNT; k++)
		if (mask & (1u << k))
			kinds[n++] = k;
	return (enum sim_fault)kinds[sim_rng_next(rng) % (uint64_t)n];
}

int sim_fault_mid_stream(enum sim_fault f)
{
	switch (f) {
	case SIM_FAULT_RESET_MID_STREAM:
	case SIM_FAULT_STALL:
	case SIM_FAULT_MALFORMED_FRAME:
	case SIM_FAULT_TRUNCATED_CHUNK:
	case SIM_FAULT_OVERSIZE_FRAME:
	case SIM_FAULT_BAD_UTF8:
	case SIM_FAULT_NO_BLANK_LINE:
	case SIM_FAULT_ENDLESS_STREAM:
		return 1;
	default:
		return 0;
	}
}

int sim_fault_on_accept(struct sim_server *srv, const struct sim_conn *c)
{
	const struct sim_config *cfg = srv->cfg;
	if (cfg->fail_rate <= 0 || !(cfg->fail_kinds & (1u << SIM_FAULT_CLOSE_AFTER_ACCEPT)))
		return 0;
	/* One kind among the enabled ones, as a request would draw it. */
	uint64_t rng = sim_hash64(&c->id, sizeof(c->id), cfg->seed ^ 0xacce97ull);
	if (sim_rng_unit(&rng) >= cfg->fail_rate / enabled_kinds(cfg->fail_kinds))
		return 0;
	srv->faults_total[SIM_FAULT_CLOSE_AFTER_ACCEPT]++;
	return 1;
}

/* A head and nothing more: no body at all (Content-Length: 0), or one ended by the close. */
static void send_empty_error(struct sim_conn *c, int status, int keep_alive)
{
	struct ls_strbuf out = { 0 };
	int rc;
	if (status == 503) {
		rc = ls_strbuf_printf(&out, "HTTP/1.1 503 %s\r\nConnection: close\r\n\r\n", sim_http_reason(503));
		keep_alive = 0;
	} else {
		rc = ls_strbuf_printf(&out, "HTTP/1.1 %d %s\r\nContent-Length: 0\r\n%s\r\n", status,
				    sim_http_reason(status), keep_alive ? "" : "Connection: close\r\n");
	}
	sim_conn_reply(c, &out, rc, keep_alive);
}

int sim_fault_before_head(struct sim_server *srv, struct sim_conn *c, struct sim_req *r)
{
	/* The stream-shape faults mean nothing for one JSON body: such a request is served whole. */
	if (!r->stream && (r->fault == SIM_FAULT_NO_BLANK_LINE || r->fault == SIM_FAULT_ENDLESS_STREAM))
		r->fault = SIM_FAULT_NONE;
	if (r->fault != SIM_FAULT_NONE)
		srv->faults_total[r->fault]++;
	const char *name = sim_fault_name(r->fault);
	switch (r->fault) {
	case SIM_FAULT_HTTP500:
	case SIM_FAULT_HTTP429: {
		int status = r->fault == SIM_FAULT_HTTP500 ? 500 : 429;
		r->headers_ns = ls_now_ns();
		sim_api_send_error(c, status, status == 500 ? "InternalServerError" : "RateLimitError",
				   status == 500 ? "latscope sim: injected fault http500"
						 : "latscope sim: injected fault http429", r->keep_alive);
		break;
	}
	case SIM_FAULT_HTTP400_EMPTY:
	case SIM_FAULT_HTTP503_EMPTY:
		r->headers_ns = ls_now_ns();
		send_empty_error(c, r->fault == SIM_FAULT_HTTP400_EMPTY ? 400 : 503, r->keep_alive);
		break;
	case SIM_FAULT_RESET_BEFORE_HEADERS:
		sim_conn_kill(c, 1);
		break;
	case SIM_FAULT_NO_HEADERS:
		/* Parked on its connection, silent, until the client leaves (sim_stream_abort). */
		r->state = SIM_REQ_STALLED;
		c->req = r;
		return 1;
	case SIM_FAULT_ENDLESS_STREAM:
		r->target_tokens = INT_MAX / 2; /* the engine never ends it; sim_stream.c bounds it */
		return 0;
	default:
		return 0;
	}
	sim_truth_write(&srv->truth, r, ls_now_ns(), 1, name);
	sim_api_req_free(r);
	return 1;
}
