/* sim/sim_engine_fields.c — --engine-fields: the engine's own per-request account, written in
 * one engine's shape from the sim's own steps (the truth file has the same steps, so a reader
 * of these fields can be checked against it): llama.cpp's "timings" on the last token frame,
 * SGLang's meta_info timings (the finishing frame has them all), vLLM's "metrics" on the usage
 * frame, TensorRT-LLM's GET /perf_metrics list (seconds of CLOCK_MONOTONIC, its steady clock,
 * filled as requests finish, drained per read). --engine-fields-bad P: that share of requests
 * (seeded by their number) get every time value malformed, one kind per request: a string, a
 * negative, NaN (as Python's json writes it) or a huge number. docs/sim.md has each value's definition. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base/clock.h"
#include "sim/sim.h"

static const char *const formats[SIM_EF__COUNT] = {
	[SIM_EF_NONE] = "none", [SIM_EF_LLAMACPP] = "llama.cpp", [SIM_EF_SGLANG] = "sglang", [SIM_EF_VLLM] = "vllm",
	[SIM_EF_TRTLLM] = "trtllm",
};
static const char *const bad_kinds[SIM_EF_BAD__COUNT] = {
	[SIM_EF_BAD_NONE] = "none", [SIM_EF_BAD_STRING] = "string", [SIM_EF_BAD_NEGATIVE] = "negative",
	[SIM_EF_BAD_NAN] = "nan", [SIM_EF_BAD_HUGE] = "huge",
};

int sim_engine_fields_parse(const char *v, int *out)
{
	for (int k = 0; k < SIM_EF__COUNT; k++)
		if (!strcmp(v, formats[k])) {
			*out = k;
			return 0;
		}
	return -1;
}

const char *sim_engine_fields_bad_name(int kind)
{
	return kind >= 0 && kind < SIM_EF_BAD__COUNT ? bad_kinds[kind] : "none";
}

int sim_engine_fields_bad_pick(const struct sim_config *cfg, uint64_t seq)
{
	if (cfg->engine_fields == SIM_EF_NONE || cfg->engine_fields_bad <= 0)
		return SIM_EF_BAD_NONE;
	uint64_t h = sim_hash64(&seq, sizeof(seq), cfg->seed ^ 0xe9f1e1dull); /* apart from r->rng */
	if (ls_rng_to_unit(h) >= cfg->engine_fields_bad)
		return SIM_EF_BAD_NONE;
	return 1 + (int)((h >> 7) % (SIM_EF_BAD__COUNT - 1));
}

int sim_engine_account(const struct sim_req *r, struct sim_account *a)
{
	const struct sim_step_rec *first_prefill = NULL, *first_token = NULL;
	for (size_t i = 0; i < r->n_steps; i++) {
		const struct sim_step_rec *s = &r->steps[i];
		if (!first_prefill && s->prefill_tokens)
			first_prefill = s;
		if (!first_token && s->tokens)
			first_token = s;
	}
	if (!first_prefill || !first_token || first_prefill->start_ns < r->received_ns)
		return 0;
	const struct sim_step_rec *last = &r->steps[r->n_steps - 1];
	a->queue_ns = first_prefill->start_ns - r->received_ns;
	a->prefill_ns = first_token->end_ns - first_prefill->start_ns;
	a->decode_ns = last->end_ns - first_token->end_ns;
	a->e2e_ns = last->end_ns - r->received_ns;
	a->first_token_ns = first_token->end_ns;
	a->last_token_ns = last->end_ns;
	return 1;
}

/* One time value, in unit (ns per unit), as the request's bad kind says. */
static int value(struct ls_strbuf *b, int bad, uint64_t ns, double ns_per_unit)
{
	double v = (double)ns / ns_per_unit;
	switch (bad) {
	case SIM_EF_BAD_STRING: return ls_strbuf_printf(b, "\"%.6f\"", v);
	case SIM_EF_BAD_NEGATIVE: return ls_strbuf_printf(b, "%.6f", -v - 1.0);
	case SIM_EF_BAD_NAN: return ls_strbuf_puts(b, "NaN");
	case SIM_EF_BAD_HUGE: return ls_strbuf_puts(b, "1e300");
	}
	return ls_strbuf_printf(b, "%.9f", v);
}

/* A CLOCK_MONOTONIC stamp as wall-clock seconds (SGLang's *_ts are time.time()). */
static double wall_s(uint64_t mono_ns)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	double now_wall = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	return now_wall - ((double)ls_now_ns() - (double)mono_ns) / 1e9;
}

int sim_engine_fields_llamacpp(struct ls_strbuf *b, const struct sim_req *r)
{
	struct sim_account a;
	if (!sim_engine_account(r, &a))
		return 0;
	int rc = ls_strbuf_printf(b, ",\"timings\":{\"cache_n\":%d,\"prompt_n\":%d,\"prompt_ms\":", r->cached_tokens,
				  r->prompt_len - r->cached_tokens);
	rc |= value(b, r->engine_bad, a.prefill_ns, 1e6);
	rc |= ls_strbuf_printf(b, ",\"predicted_n\":%d,\"predicted_ms\":", r->generated);
	rc |= value(b, r->engine_bad, a.decode_ns, 1e6);
	return rc | ls_strbuf_puts(b, "}");
}

int sim_engine_fields_sglang(struct ls_strbuf *b, const struct sim_req *r, int final)
{
	struct sim_account a;
	if (!sim_engine_account(r, &a))
		return 0;
	int bad = final ? r->engine_bad : SIM_EF_BAD_NONE;
	int rc = ls_strbuf_puts(b, ",\"queue_time\":");
	rc |= value(b, bad, a.queue_ns, 1e9);
	rc |= ls_strbuf_puts(b, ",\"prefill_launch_delay\":0.0,\"prefill_launch_latency\":");
	rc |= value(b, bad, a.prefill_ns, 1e9);
	if (!final)
		return rc;
	rc |= ls_strbuf_puts(b, ",\"e2e_latency\":");
	rc |= value(b, bad, a.e2e_ns, 1e9);
	double first = wall_s(a.first_token_ns), last = first + (double)a.decode_ns / 1e9;
	return rc | ls_strbuf_printf(b, ",\"prefill_finished_ts\":%.9f,\"decode_finished_ts\":%.9f", first, last);
}

int sim_engine_fields_vllm(struct ls_strbuf *b, const struct sim_req *r)
{
	struct sim_account a;
	if (!sim_engine_account(r, &a))
		return 0;
	int rc = ls_strbuf_puts(b, ",\"metrics\":{\"time_to_first_token_ms\":");
	rc |= value(b, r->engine_bad, a.prefill_ns, 1e6);
	rc |= ls_strbuf_puts(b, ",\"generation_time_ms\":");
	rc |= value(b, r->engine_bad, a.decode_ns, 1e6);
	rc |= ls_strbuf_puts(b, ",\"queue_time_ms\":");
	rc |= value(b, r->engine_bad, a.queue_ns, 1e6);
	if (r->generated > 1)
		rc |= ls_strbuf_printf(b, ",\"mean_itl_ms\":%.6f", (double)a.decode_ns / 1e6 / (r->generated - 1));
	else
		rc |= ls_strbuf_puts(b, ",\"mean_itl_ms\":null");
	uint64_t gen_ns = a.prefill_ns + a.decode_ns;
	return rc | ls_strbuf_printf(b, ",\"tokens_per_second\":%.3f}", gen_ns ? r->generated / ((double)gen_ns / 1e9) : 0.0);
}

int sim_perf_add(struct sim_server *srv, const struct sim_req *r)
{
	struct sim_perf_list *l = &srv->perf;
	struct sim_account a;
	if (!sim_engine_account(r, &a))
		return 0;
	if (!l->e) {
		l->cap = srv->cfg->perf_metrics_max > 0 ? (size_t)srv->cfg->perf_metrics_max : 1;
		if (!(l->e = calloc(l->cap, sizeof(*l->e))))
			return -ENOMEM;
	}
	if (l->n == l->cap) { /* a deque with maxlen: the oldest goes */
		l->head = (l->head + 1) % l->cap;
		l->n--;
		l->dropped++;
	}
	l->e[(l->head + l->n++) % l->cap] = (struct sim_perf_entry){
		.seq = r->seq, .received_ns = r->received_ns, .scheduled_ns = r->received_ns + a.queue_ns,
		.first_token_ns = a.first_token_ns, .last_token_ns = a.last_token_ns, .bad = r->engine_bad,
	};
	return 0;
}

/* One entry in get_perf_metrics' shape; the HTTP server's arrival and the executor's are the
 * same instant here (the sim has no frontend), and --engine-fields-bad spoils the engine's three
 * stamps, leaving the arrivals to join by. */
static int perf_entry(struct ls_strbuf *b, const struct sim_perf_entry *e)
{
	double arrival = (double)e->received_ns / 1e9;
	int rc = ls_strbuf_printf(b, "{\"request_id\":%llu,\"perf_metrics\":{\"first_iter\":0,\"last_iter\":0,"
				  "\"timing_metrics\":{\"server_arrival_time\":%.9f,\"arrival_time\":%.9f,"
				  "\"first_scheduled_time\":", (unsigned long long)e->seq, arrival, arrival);
	rc |= value(b, e->bad, e->scheduled_ns, 1e9);
	rc |= ls_strbuf_puts(b, ",\"first_token_time\":");
	rc |= value(b, e->bad, e->first_token_ns, 1e9);
	rc |= ls_strbuf_printf(b, ",\"server_first_token_time\":%.9f,\"last_token_time\":", (double)e->first_token_ns / 1e9);
	rc |= value(b, e->bad, e->last_token_ns, 1e9);
	return rc | ls_strbuf_puts(b, "},\"kv_cache_metrics\":{\"num_total_allocated_blocks\":0,"
				     "\"num_new_allocated_blocks\":0,\"num_reused_blocks\":0,\"num_missed_blocks\":0}}}");
}

int sim_perf_drain(struct sim_server *srv, struct ls_strbuf *b)
{
	struct sim_perf_list *l = &srv->perf;
	int rc = ls_strbuf_puts(b, "[");
	for (size_t i = 0; i < l->n && !rc; i++)
		rc = (i && ls_strbuf_puts(b, ",")) || perf_entry(b, &l->e[(l->head + i) % l->cap]) ? -ENOMEM : 0;
	rc |= ls_strbuf_puts(b, "]");
	if (!rc)
		l->head = l->n = 0;
	return rc ? -ENOMEM : 0;
}

void sim_perf_free(struct sim_perf_list *l)
{
	free(l->e);
	memset(l, 0, sizeof(*l));
}
