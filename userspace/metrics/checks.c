/* checks.c — see checks.h. Each check reads the records under the metrics' own rules, so a
 * line explains the numbers printed just above it. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "metrics/checks.h"

#define NS 1e9

static const char *const check_names[] = { "failures", "tokens", "itl/tpot", "prefix cache", "rate", "client", "engine" };

const char *ls_check_name(enum ls_check_kind kind)
{
	return (unsigned)kind < LS_CHECK__COUNT ? check_names[kind] : "?";
}

/* Appends to a check's text (truncating, never overflowing). */
static void add(struct ls_check *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct ls_check *c, const char *fmt, ...)
{
	size_t len = strlen(c->text);
	if (len + 1 >= sizeof(c->text))
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->text + len, sizeof(c->text) - len, fmt, ap);
	va_end(ap);
}

/* min / median / max of n values (sorted in place). */
static void spread(double *v, size_t n, double *lo, double *mid, double *hi)
{
	*lo = *mid = *hi = 0;
	if (!n)
		return;
	ls_sort_doubles(v, n);
	*lo = v[0];
	*mid = ls_percentile(v, n, 50);
	*hi = v[n - 1];
}

static double ms(uint64_t from, uint64_t to)
{
	return to > from ? (double)(to - from) / 1e6 : 0.0;
}

/* ---- failures ---- */

static void check_failures(const struct ls_run *run, const struct ls_metrics *m, struct ls_check *c)
{
	size_t raw_failed = 0, tokenless = 0, n_elapsed = 0;
	double *elapsed = calloc(m->n_measured ? m->n_measured : 1, sizeof(double));
	for (size_t i = 0; i < run->n_requests; i++) {
		const struct ls_request *r = &run->requests[i];
		if (r->warmup)
			continue;
		if (r->fail != LS_OK) {
			raw_failed++;
			uint64_t end = r->finished_ns ? r->finished_ns : r->done_frame_ns;
			if (elapsed && r->started_ns && end > r->started_ns)
				elapsed[n_elapsed++] = ms(r->started_ns, end);
		}
		struct ls_req_view v;
		if (ls_request_view(r, &m->rules, &v) && v.first_frame < 0)
			tokenless++;
	}
	c->ok = !m->failed && !tokenless && !raw_failed;
	if (c->ok) {
		add(c, "ok: all %zu requests succeeded", m->n_measured);
		free(elapsed);
		return;
	}
	if (m->failed) {
		char reasons[LS_CHECK_TEXT];
		ls_metrics_fail_list(m, reasons, sizeof(reasons));
		add(c, "%zu of %zu requests failed (%s", m->failed, m->n_measured, reasons);
		add(c, "): every latency above is conditioned on the %zu that survived", m->completed);
		if (!m->rules.failures_in_headline)
			add(c, ", and these rules do not print the failures");
		double lo, mid, hi;
		spread(elapsed, n_elapsed, &lo, &mid, &hi);
		if (n_elapsed)
			add(c, "; the failed ones had run %.1f ms (median) when they failed", mid);
	}
	if (raw_failed > m->failed)
		add(c, "%s%zu streams ended without [DONE] and count as successes under these rules",
		    m->failed ? "; " : "", raw_failed - m->failed);
	if (tokenless)
		add(c, "%s%zu streams never carried text and count as successes with TTFT 0 (SGLang's rule), "
		       "pulling mean TTFT down", m->failed || raw_failed > m->failed ? "; " : "", tokenless);
	free(elapsed);
}

/* ---- token counts ---- */

/* The four counts of a run's output tokens, over its ok requests. */
struct token_counts {
	uint64_t requested, usage, cumulative, counted;
	size_t   n_ok;
	size_t   n_usage;    /* requests with a usage frame */
	size_t   n_cum;      /* with cumulative counts in the stream */
	size_t   n_counted;  /* with a known count on every choices frame */
	size_t   n_short;    /* usage below the requested length */
};

/* One ok request's stream counts: the last cumulative count (not a usage-only frame's), and
 * the per-frame counts when every choices frame had one. */
static void count_stream(const struct ls_request *r, struct token_counts *t)
{
	int64_t last_cum = -1;
	uint64_t sum = 0;
	int all_known = 1, any = 0;
	for (uint32_t f = 0; f < r->n_frames; f++) {
		const struct ls_frame *fr = &r->frames[f];
		if (fr->cum_tokens >= 0 && !(fr->flags & LS_FRAME_USAGE && !(fr->flags & LS_FRAME_CHOICES)))
			last_cum = fr->cum_tokens;
		if (!(fr->flags & LS_FRAME_CHOICES))
			continue;
		any = 1;
		if (fr->tokens < 0)
			all_known = 0;
		else
			sum += (uint64_t)fr->tokens;
	}
	if (last_cum >= 0) {
		t->cumulative += (uint64_t)last_cum;
		t->n_cum++;
	}
	if (any && all_known) {
		t->counted += sum;
		t->n_counted++;
	}
}

static void count_tokens(const struct ls_run *run, const struct ls_metrics *m, struct token_counts *t)
{
	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < run->n_requests; i++) {
		const struct ls_request *r = &run->requests[i];
		struct ls_req_view v;
		if (r->warmup || !ls_request_view(r, &m->rules, &v))
			continue;
		t->n_ok++;
		t->requested += r->output_len;
		if (r->usage_completion_tokens >= 0) {
			t->usage += (uint64_t)r->usage_completion_tokens;
			t->n_usage++;
			t->n_short += (uint32_t)r->usage_completion_tokens < r->output_len;
		}
		count_stream(r, t);
	}
}

/* a is off b by more than the tolerance (any a is off a b of 0, but 0). */
static int tokens_off(uint64_t a, uint64_t b)
{
	return b ? fabs((double)a / (double)b - 1.0) > LS_CHECK_TOKENS_TOLERANCE : a != 0;
}

static void check_tokens(const struct ls_run *run, const struct ls_metrics *m, struct ls_check *c)
{
	struct token_counts t;
	count_tokens(run, m, &t);
	if (!t.n_ok) {
		c->ok = 1;
		add(c, "ok: no successful request to count");
		return;
	}
	int usage_all = t.n_usage == t.n_ok, cum_all = t.n_cum == t.n_ok, count_all = t.n_counted == t.n_ok;
	int bad_req = usage_all && tokens_off(t.usage, t.requested);
	int bad_cum = usage_all && cum_all && tokens_off(t.cumulative, t.usage);
	int bad_count = usage_all && count_all && !cum_all && tokens_off(t.counted, t.usage);
	int bad_used = tokens_off(m->total_output, usage_all ? t.usage : t.requested);
	c->ok = usage_all && !bad_req && !bad_cum && !bad_count && !bad_used;
	if (c->ok) {
		add(c, "ok: the usage frame, %s and the requested length agree: %llu tokens in %zu requests",
		    cum_all ? "the cumulative counts" : count_all ? "the per-frame counts" : "the headline count",
		    (unsigned long long)t.usage, t.n_ok);
		return;
	}
	const char *sep = "";
	if (!usage_all) {
		add(c, "%zu of %zu requests had no usage frame: output tokens come from %s", t.n_ok - t.n_usage,
		    t.n_ok, m->rules.out_tokens == LS_OUT_USAGE ? "counted frames" : "the rule's source");
		sep = "; ";
	}
	if (bad_req) {
		add(c, "%susage says %llu tokens, the requests asked for %llu (ratio %.3f)", sep,
		    (unsigned long long)t.usage, (unsigned long long)t.requested, (double)t.usage / (double)t.requested);
		if (t.n_short)
			add(c, ": %zu of %zu requests stopped before max_tokens (EOS or a stop string; "
			       "--ignore-eos asks the server to go on)", t.n_short, t.n_ok);
		sep = "; ";
	}
	if (bad_cum) {
		add(c, "%sthe stream's cumulative counts say %llu, the usage frame %llu (ratio %.3f): "
		       "the server's two counts disagree", sep, (unsigned long long)t.cumulative,
		    (unsigned long long)t.usage, (double)t.cumulative / (double)t.usage);
		sep = "; ";
	}
	if (bad_count) {
		add(c, "%sthe per-frame counts add to %llu, the usage frame says %llu (ratio %.3f): a tokenizer "
		       "or counting mismatch", sep, (unsigned long long)t.counted, (unsigned long long)t.usage,
		    (double)t.counted / (double)t.usage);
		sep = "; ";
	}
	if (bad_used && usage_all)
		add(c, "%sthese rules take %s (%llu tokens, ratio %.3f to usage): TPOT and output throughput move "
		       "by that ratio", sep, ls_out_tokens_name(m->rules.out_tokens), (unsigned long long)m->total_output,
		    (double)m->total_output / (double)t.usage);
}

/* ---- mean ITL / mean TPOT ---- */

static void check_itl_tpot(const struct ls_run *run, const struct ls_metrics *m, struct ls_check *c)
{
	if (!m->tpot.n || !m->itl.n || m->tpot.mean_ms <= 0) {
		c->ok = 1;
		add(c, "ok: nothing to compare (no request produced two tokens)");
		return;
	}
	size_t cap = m->completed ? m->completed : 1, n = 0;
	double *frames = calloc(cap, sizeof(double)), *tokens = calloc(cap, sizeof(double));
	double *req_itl = calloc(cap, sizeof(double));
	double gaps_total = 0, tokens_after_first = 0, tail_ms = 0;
	if (!frames || !tokens || !req_itl) {
		c->ok = 1;
		add(c, "ok: not checked (out of memory)");
		goto out;
	}
	for (size_t i = 0; i < run->n_requests && n < cap; i++) {
		const struct ls_request *r = &run->requests[i];
		struct ls_req_view v;
		if (r->warmup || !ls_request_view(r, &m->rules, &v) || !v.has_tpot)
			continue;
		size_t nitl = ls_request_itls(r, &m->rules, m->rules.itl_mode, NULL, 0);
		double *buf = nitl ? malloc(nitl * sizeof(double)) : NULL;
		if (nitl && !buf)
			continue;
		ls_request_itls(r, &m->rules, m->rules.itl_mode, buf, nitl);
		double sum = 0;
		for (size_t k = 0; k < nitl; k++)
			sum += buf[k];
		free(buf);
		frames[n] = v.token_frames;
		tokens[n] = v.output_tokens;
		req_itl[n] = nitl ? sum / (double)nitl * 1e3 : 0;
		gaps_total += v.token_frames > 0 ? v.token_frames - 1 : 0;
		tokens_after_first += v.output_tokens - 1;
		if (v.last_frame >= 0)
			tail_ms += ms(r->frames[v.last_frame].arrived_ns, v.end_ns);
		n++;
	}
	double ratio = m->itl.mean_ms / m->tpot.mean_ms, per_req = 0;
	for (size_t k = 0; k < n; k++)
		per_req += req_itl[k];
	per_req = n ? per_req / (double)n : 0;
	double tpf = gaps_total > 0 ? tokens_after_first / gaps_total : 0;
	double tail = n ? tail_ms / (double)n : 0;
	double f_lo, f_mid, f_hi, t_lo, t_mid, t_hi;
	spread(frames, n, &f_lo, &f_mid, &f_hi);
	spread(tokens, n, &t_lo, &t_mid, &t_hi);
	c->ok = fabs(ratio - 1.0) <= LS_CHECK_RATIO_TOLERANCE;
	add(c, "%smean ITL %.2f ms / mean TPOT %.2f ms = %.2f", c->ok ? "ok: " : "", m->itl.mean_ms, m->tpot.mean_ms,
	    ratio);
	if (!c->ok) {
		const char *sep = ": ";
		if (m->rules.itl_mode == LS_ITL_FRAME && tpf > 1.05) {
			add(c, "%sITL is per frame and a frame carries %.2f tokens after the first (speculative "
			       "decoding or batched detokenization), so ITL ~ TPOT x %.2f", sep, tpf, tpf);
			sep = "; ";
		}
		if (per_req > 0 && fabs(per_req / m->itl.mean_ms - 1.0) > LS_CHECK_RATIO_TOLERANCE) {
			add(c, "%sITL pools every gap (long requests weigh more) while TPOT averages requests: the "
			       "per-request mean ITL is %.2f ms", sep, per_req);
			sep = "; ";
		}
		if (m->rules.e2el_end != LS_END_LAST_CONTENT && t_mid > 1 && tail / (t_mid - 1) > 0.02 * m->tpot.mean_ms) {
			add(c, "%sTPOT's E2EL ends %.2f ms after the last token frame (%s), %.3f ms per token", sep, tail,
			    ls_e2el_end_name(m->rules.e2el_end), tail / (t_mid - 1));
			sep = "; ";
		}
		if (!strcmp(sep, ": "))
			add(c, ": TPOT divides by the %s token count (see tokens)", ls_out_tokens_name(m->rules.out_tokens));
	}
	add(c, "; per request: %.0f/%.0f/%.0f token frames, %.0f/%.0f/%.0f tokens (min/median/max), %.2f tokens "
	       "per frame after the first", f_lo, f_mid, f_hi, t_lo, t_mid, t_hi, tpf);
out:
	free(frames);
	free(tokens);
	free(req_itl);
}

/* ---- prefix cache ---- */

/* When request r's first token arrived under the rules (UINT64_MAX when unknown). */
static uint64_t first_token_of(const struct ls_request *r, const struct ls_read_rules *rules)
{
	struct ls_req_view v;
	return r && ls_request_view(r, rules, &v) && v.first_ns ? v.first_ns : UINT64_MAX;
}

static void check_prefix_cache(const struct ls_run *run, const struct ls_metrics *m, const struct ls_checks_ctx *ctx,
			       struct ls_check *c)
{
	c->ok = 1;
	if (!run->n_warmup && !(ctx && ctx->repeated_run)) {
		add(c, "ok: no prompt was sent twice in this run (no warmups)");
		return;
	}
	const char *sep = "";
	if (run->n_warmup) {
		/* Warmups send prompt 0 (vLLM: N copies; SGLang: one, capped): measured request 0
		 * repeats it. Compare its TTFT with the rest of similar prompt length. */
		const struct ls_request *first = NULL;
		for (size_t i = 0; i < run->n_requests && !first; i++)
			if (!run->requests[i].warmup && run->requests[i].id == 0)
				first = &run->requests[i];
		size_t n = 0, in_burst = 0;
		double *rest = calloc(m->n_measured ? m->n_measured : 1, sizeof(double)), first_ttft = -1;
		uint64_t first_token_ns = first_token_of(first, &m->rules);
		for (size_t i = 0; rest && i < run->n_requests; i++) {
			const struct ls_request *r = &run->requests[i];
			struct ls_req_view v;
			if (r->warmup || !ls_request_view(r, &m->rules, &v) || !v.first_ns)
				continue;
			if (r == first) {
				first_ttft = v.ttft_s[LS_ORIGIN_STARTED] * 1e3;
			} else if (first && r->prompt_len * 5 >= first->prompt_len * 4 &&
				   r->prompt_len * 4 <= first->prompt_len * 5) {
				rest[n++] = v.ttft_s[LS_ORIGIN_STARTED] * 1e3;
				in_burst += r->started_ns && r->started_ns < first_token_ns;
			}
		}
		double lo, mid, hi;
		spread(rest, n, &lo, &mid, &hi);
		free(rest);
		add(c, "%zu warmup request%s repeat%s prompt 0", run->n_warmup, run->n_warmup == 1 ? "" : "s",
		    run->n_warmup == 1 ? "s" : "");
		if (first_ttft >= 0 && n && in_burst) {
			/* Those that started before its first token queued behind it: being first is
			 * enough to be fastest, with or without a cache. */
			add(c, "; measured request 0 (the same prompt) led a burst (%zu similar requests started "
			       "before its first token), so its TTFT cannot show a prefix cache", in_burst);
		} else if (first_ttft >= 0 && n) {
			add(c, "; measured request 0 (the same prompt) had TTFT %.2f ms vs median %.2f ms for the rest",
			    first_ttft, mid);
			/* An idle server alone halves TTFT (no step to wait out); a cache does more. */
			if (first_ttft < LS_CHECK_PREFIX_RATIO * mid) {
				c->ok = 0;
				add(c, ": likely served from the server's prefix cache, nearly free of prefill (repeated "
				       "prompts look fast on a server with prefix caching)");
			} else {
				add(c, ": no sign of a prefix cache");
			}
		}
		sep = "; ";
	}
	if (ctx && ctx->repeated_run) {
		add(c, "%sthis run repeats the prompts of an earlier run against the same server", sep);
		if (ctx->cache_flushed) {
			add(c, ", and POST /flush_cache emptied its prefix cache first");
		} else {
			c->ok = 0;
			add(c, " and its prefix cache could not be flushed (no /flush_cache): prefill may be missing "
			       "from TTFT");
		}
	}
	if (c->ok) {
		memmove(c->text + 4, c->text, strnlen(c->text, sizeof(c->text) - 5) + 1);
		memcpy(c->text, "ok: ", 4);
	}
}

/* ---- realised rate ---- */

static void check_rate(const struct ls_run *run, const struct ls_metrics *m, const struct ls_checks_ctx *ctx,
		       struct ls_check *c)
{
	double target = run->target_rate;
	if (!(target > 0) || isinf(target)) {
		c->ok = 1;
		add(c, "ok: no target rate (sent at once or by a closed loop)");
		return;
	}
	uint64_t start = run->start_ns, last_sched = 0;
	size_t n = 0, n_lag = 0;
	double lag_sum = 0, lag_max = 0;
	for (size_t i = 0; i < run->n_requests; i++) {
		const struct ls_request *r = &run->requests[i];
		if (r->warmup || !r->scheduled_ns)
			continue;
		n++;
		if (!run->start_ns && (!start || r->scheduled_ns < start))
			start = r->scheduled_ns;
		if (r->scheduled_ns > last_sched)
			last_sched = r->scheduled_ns;
		if (r->started_ns) {
			double lag = ms(r->scheduled_ns, r->started_ns);
			lag_sum += lag;
			lag_max = lag > lag_max ? lag : lag_max;
			n_lag++;
		}
	}
	double realised = m->realised_rate, off = realised / target - 1.0;
	c->ok = fabs(off) <= LS_CHECK_RATE_TOLERANCE;
	add(c, "%srealised %.2f req/s vs target %.2f (%+.1f%%)", c->ok ? "ok: " : "", realised, target, off * 100);
	if (c->ok || !n)
		return;
	double span = last_sched > start ? (double)(last_sched - start) / NS : 0, ideal = (double)n / target;
	const char *arrival = ctx && ctx->arrival ? ctx->arrival : NULL;
	const char *sep = ": ";
	if (span > 0 && fabs(span / ideal - 1.0) > LS_CHECK_RATE_TOLERANCE) {
		add(c, "%sthe schedule itself ends at %.2f s for %zu requests instead of N/rate = %.2f s", sep, span, n,
		    ideal);
		if (arrival && !strcmp(arrival, "poisson-yield"))
			add(c, " (poisson-yield is not normalised: +-%.0f%% is chance at N = %zu, and each "
			       "iteration's own time adds to the next sleep)", 100.0 / sqrt((double)n), n);
		sep = "; ";
	}
	double lag = n_lag ? lag_sum / (double)n_lag : 0;
	if (lag > 1.0) {
		add(c, "%srequests went out %.2f ms after their scheduled time on average (max %.2f ms)", sep, lag, lag_max);
		if (run->max_concurrency && m->slot_wait.mean_ms > 0.5 * lag)
			add(c, ": the concurrency limit of %u held them (the server is saturated)", run->max_concurrency);
		else
			add(c, ": the client fell behind its schedule (arrival drift)");
	}
}

/* P99 of started - admitted (ms) over the measured requests admitted once the first one had
 * finished: an opening burst leaves one connect+write after another by design (ARCHITECTURE.md
 * "How a burst starts"); later, a late request is a loop that fell behind. 0 when none. */
static double dispatch_p99_ms(const struct ls_run *run)
{
	double *lag = malloc((run->n_requests ? run->n_requests : 1) * sizeof(*lag));
	uint64_t first_finish = UINT64_MAX;
	size_t n = 0;
	if (!lag)
		return 0;
	for (size_t i = 0; i < run->n_requests; i++) {
		const struct ls_request *r = &run->requests[i];
		if (!r->warmup && r->finished_ns && r->finished_ns < first_finish)
			first_finish = r->finished_ns;
	}
	for (size_t i = 0; i < run->n_requests; i++) {
		const struct ls_request *r = &run->requests[i];
		if (!r->warmup && r->started_ns && r->admitted_ns && r->admitted_ns >= first_finish)
			lag[n++] = ms(r->admitted_ns, r->started_ns);
	}
	ls_sort_doubles(lag, n);
	double p99 = n ? ls_percentile(lag, n, 99) : 0;
	free(lag);
	return p99;
}

/* A client's own delay (ms) that sets the reported tails: over 1 ms and over LS_CHECK_CLIENT_LAG
 * of the median ITL. The one rule for the probes' delay, the loop's lag and late slot starts. */
static int sets_tails(double delay_ms, double itl_ms)
{
	return delay_ms > 1.0 && itl_ms > 0 && delay_ms > LS_CHECK_CLIENT_LAG * itl_ms;
}

/* Was the client the bottleneck? Its own CPU over the run (a spinning loop's is busy by
 * design), and how late requests left their slot against the median gap between frames. */
static void check_client(const struct ls_run *run, const struct ls_metrics *m, struct ls_check *c)
{
	double wall_ns = run->end_ns > run->start_ns ? (double)(run->end_ns - run->start_ns) : 0;
	double share = wall_ns > 0 && run->n_client_procs ? (double)run->client_cpu_ns / (wall_ns * run->n_client_procs) : -1;
	double lag = dispatch_p99_ms(run), itl = m->itl_frame.median_ms;
	int cpu_bound = share >= LS_CHECK_CLIENT_CPU && !run->loop_spins;
	int late = sets_tails(lag, itl);
	double delay = (double)run->client_delay_p99_ns / 1e6; /* the probes': kernel arrival -> stamp */
	int slow = sets_tails(delay, itl);
	/* Without the probes' account, the loop's own: how late its ticks' turns started. */
	double loop = (double)run->loop_lag_p99_ns / 1e6;
	int stalled = !run->client_delay_p99_ns && sets_tails(loop, itl);
	c->ok = !cpu_bound && !late && !slow && !stalled;
	char cpu[64] = "client CPU unknown (an older record)";
	if (share >= 0)
		snprintf(cpu, sizeof(cpu), "client CPU %.0f%% of %s", share * 100,
			 run->n_client_procs > 1 ? "its cores" : "a core");
	if (c->ok) {
		add(c, "ok: %s%s, requests left their slot within %.2f ms (P99)", cpu,
		    run->loop_spins ? " (a spinning loop)" : "", lag);
		if (run->client_delay_p99_ns)
			add(c, ", frames read %.3f ms after the kernel had them (P99)", delay);
		else if (run->loop_lag_ticks)
			add(c, ", its loop's turns started within %.3f ms of their ticks (P99)", loop);
		return;
	}
	if (slow)
		add(c, "client delay P99 %.2f ms = %.0f%% of the median ITL (%.2f ms): the client set these tails",
		    delay, delay / itl * 100, itl);
	if (stalled)
		add(c, "client loop lag P99 %.2f ms = %.0f%% of the median ITL (%.2f ms): its turns started that "
		       "late, and frames waited for them: the client set these tails", loop, loop / itl * 100, itl);
	if (cpu_bound)
		add(c, "%s%s over the run: the client may have set these tails", slow || stalled ? "; " : "", cpu);
	if (late)
		add(c, "%srequests left their slot %.2f ms late at P99 = %.0f%% of the median ITL (%.2f ms): the "
		       "client's loop fell behind", slow || stalled || cpu_bound ? "; " : "", lag, lag / itl * 100, itl);
	add(c, "; lower --max-concurrency, add client processes (mpirun -n N), or --busy-poll on a core "
	       "the server does not use");
}

/* ---- engine ---- */

/* What the engine's account of r says lies inside its TTFT: its queue (where given) and prefill. */
static uint64_t engine_inside_ttft(const struct ls_request *r)
{
	return (ls_engine_has(r, LS_ENGINE_QUEUE) ? r->engine_queue_ns : 0) +
	       (ls_engine_has(r, LS_ENGINE_PREFILL) ? r->engine_prompt_ns : 0);
}

struct engine_tally {
	size_t n, over_ttft, over_e2e;
	double worst_ttft_ms, worst_e2e_ms;
	double *inside_ms; /* per request, for its median; NULL: none kept */
};

/* One ok request against the engine's account: the server cannot start before the send nor end
 * after the last byte, so an account longer than those windows is another clock or meaning. */
static void engine_one(const struct ls_request *r, const struct ls_read_rules *rules, struct engine_tally *t)
{
	uint64_t first = first_token_of(r, rules);
	if (!r->sent_ns || first == UINT64_MAX || first < r->sent_ns)
		return;
	uint64_t inside = engine_inside_ttft(r), ttft = first - r->sent_ns;
	if (t->inside_ms)
		t->inside_ms[t->n] = (double)inside / 1e6;
	t->n++;
	if (inside > ttft + LS_CHECK_ENGINE_SLACK_NS) {
		t->over_ttft++;
		t->worst_ttft_ms = fmax(t->worst_ttft_ms, ms(ttft, inside));
	}
	uint64_t e2e = r->finished_ns > r->sent_ns ? r->finished_ns - r->sent_ns : 0;
	if (ls_engine_has(r, LS_ENGINE_E2E) && e2e && r->engine_e2e_ns > e2e + LS_CHECK_ENGINE_SLACK_NS) {
		t->over_e2e++;
		t->worst_e2e_ms = fmax(t->worst_e2e_ms, ms(e2e, r->engine_e2e_ns));
	}
}

/* The engine's own account against latscope's clocks. 0 when no request had one (no line). */
static int check_engine(const struct ls_run *run, const struct ls_metrics *m, struct ls_check *c)
{
	if (!m->engine_n && !m->engine_bad_values)
		return 0;
	struct engine_tally t = { .inside_ms = malloc((run->n_requests ? run->n_requests : 1) * sizeof(double)) };
	for (size_t i = 0; i < run->n_requests; i++) {
		const struct ls_request *r = &run->requests[i];
		if (!r->warmup && r->fail == LS_OK && engine_inside_ttft(r))
			engine_one(r, &m->rules, &t);
	}
	double lo, mid, hi;
	spread(t.inside_ms, t.inside_ms ? t.n : 0, &lo, &mid, &hi);
	free(t.inside_ms);
	c->ok = !t.over_ttft && !t.over_e2e && !m->engine_bad_values;
	if (c->ok) {
		add(c, "ok: the engine's own account fits inside latscope's clocks for %zu requests: its %s P50 %.2f ms "
		       "of a TTFT P50 %.2f ms; TTFT it does not count P50 %.2f ms (its frontend, the network, the client%s)",
		    t.n, m->engine_outside_has_queue ? "queue+prefill" : "prefill", mid, m->ttft.median_ms,
		    m->ttft_outside_prompt.median_ms, m->engine_outside_has_queue ? "" : "; its queue too: it gives none");
		return 1;
	}
	const char *sep = "";
	if (t.over_ttft) {
		add(c, "%zu of %zu requests: the engine's queue+prefill is longer than latscope's send -> first token "
		       "(by up to %.2f ms)", t.over_ttft, t.n, t.worst_ttft_ms);
		sep = "; ";
	}
	if (t.over_e2e) {
		add(c, "%s%zu requests: the engine's end-to-end is longer than send -> last byte (by up to %.2f ms)", sep,
		    t.over_e2e, t.worst_e2e_ms);
		sep = "; ";
	}
	if (t.over_ttft || t.over_e2e)
		add(c, ": its clock, or what its fields measure, is not what latscope measures");
	if (m->engine_bad_values)
		add(c, "%s%zu malformed engine values ignored in %zu requests (their parts are missing)", sep,
		    m->engine_bad_values, m->engine_bad_requests);
	return 1;
}

void ls_checks_compute(const struct ls_run *run, const struct ls_metrics *m, const struct ls_checks_ctx *ctx,
		       struct ls_checks *out)
{
	memset(out, 0, sizeof(*out));
	for (int k = 0; k < LS_CHECK__COUNT; k++)
		out->c[k].kind = (enum ls_check_kind)k;
	check_failures(run, m, &out->c[LS_CHECK_FAILURES]);
	check_tokens(run, m, &out->c[LS_CHECK_TOKENS]);
	check_itl_tpot(run, m, &out->c[LS_CHECK_ITL_TPOT]);
	check_prefix_cache(run, m, ctx, &out->c[LS_CHECK_PREFIX_CACHE]);
	check_rate(run, m, ctx, &out->c[LS_CHECK_RATE]);
	check_client(run, m, &out->c[LS_CHECK_CLIENT]);
	out->n = check_engine(run, m, &out->c[LS_CHECK_ENGINE]) ? LS_CHECK__COUNT : LS_CHECK__COUNT - 1;
	for (size_t k = 0; k < out->n; k++)
		out->n_bad += !out->c[k].ok;
}

cJSON *ls_checks_json(const struct ls_checks *c)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t k = 0; a && k < c->n; k++) {
		cJSON *o = cJSON_CreateObject();
		if (!o || !cJSON_AddItemToArray(a, o)) {
			cJSON_Delete(o);
			cJSON_Delete(a);
			return NULL;
		}
		cJSON_AddStringToObject(o, "check", ls_check_name(c->c[k].kind));
		cJSON_AddBoolToObject(o, "ok", c->c[k].ok);
		cJSON_AddStringToObject(o, "text", c->c[k].text);
	}
	return a;
}
