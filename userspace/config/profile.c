/* profile.c — built-in profiles and profile JSON files (see profile.h).
 *
 * Every rule below was read off the harnesses' own code (public sources, 2025-2026):
 *   vLLM  vllm/benchmarks/lib/endpoint_request_func.py (async_request_openai_completions,
 *         async_request_openai_chat_completions) and vllm/benchmarks/serve.py (get_request,
 *         calculate_metrics, benchmark, add_cli_args), vllm/benchmarks/datasets/random.py;
 *   SGLang python/sglang/bench_serving.py, the monolithic 2025 revision with
 *         `use_retokenized_itl` (async_request_openai_completions, async_request_sglang_generate,
 *         get_request, calculate_metrics, benchmark, compute_random_lens); its 2026 split into
 *         python/sglang/benchmark/{metrics.py,backends/oai_client.py} keeps the same client rules.
 *
 * vLLM: st = perf_counter() inside the request function, after `async with semaphore`
 *   (clock: started); every message whose `choices` is non-empty is a token frame, "text
 *   could be empty here e.g. for special tokens" (gate: choices); ITL appends each gap
 *   (itl: frame); latency = most_recent_timestamp - st, updated only on choices frames (E2EL
 *   ends at the last content frame); output_tokens = usage.completion_tokens, else the
 *   tokenizer on the text (out_tokens: usage); success = a first chunk arrived, [DONE] or not
 *   (no_token_ok 0, no_done_ok 1); "Failed requests:" is printed; --metric-percentiles
 *   default "99"; --num-warmups default 0; one aiohttp connector with limit=max_concurrency and
 *   keepalive (connection: reuse); get_request precomputes gamma(shape=burstiness,
 *   scale=1/(rate*burstiness)) gaps, rescales them so the last lands at N/rate and sleeps to
 *   absolute deadlines (arrival: gamma); random lengths in [floor(L(1-r)), ceil(L(1+r))], r < 1;
 *   ignore_eos off unless asked.
 * SGLang: each request opens `async with _create_bench_client_session()`, a new aiohttp
 *   session, so a new TCP (and TLS) connection, inside st (connection: per-request); st after
 *   the semaphore (clock: started); OpenAI client: `if data["choices"][0]["text"]:` gates TTFT
 *   and ITL on non-empty text, a skipped frame's gap carries into the next (gate: text);
 *   native client: `if "text" in data and data["text"]` on cumulative text, ITL spread over
 *   num_new_tokens = meta_info.completion_tokens - last, `continue` when 0 (gate: cum_text,
 *   itl: token); latency = perf_counter() - st at every line, [DONE] included (E2EL: done);
 *   output_len starts at the requested length and is replaced by meta_info.completion_tokens
 *   (native: cumulative) or by usage.completion_tokens only inside a text frame (OpenAI:
 *   requested); success = HTTP 200 and no exception, with ttft left 0.0 when no text came
 *   (no_token_ok 1); failures are never printed; TTFT/TPOT/E2E print mean, median, P99, ITL
 *   mean, median, P95, P99 and max; warmup: warmup_requests (1) copies of the first prompt with
 *   output min(len, 32), sent without the semaphore, then time.sleep(1.0); get_request yields,
 *   then sleeps np.random.exponential(1/rate) (arrival: poisson-yield, not normalised);
 *   compute_random_lens draws from [max(int(L r), 1), L]; ignore_eos = not --disable-ignore-eos
 *   (on). calculate_metrics: when /get_server_info reports avg_spec_accept_length and the
 *   backend is sglang-oai, each chunk ITL is divided by the token count of the chunk's text
 *   re-tokenized and repeated that many times (itl_token_when_spec; latscope has no chunk
 *   text, so it uses the frame's count or its share of the text bytes, metrics.h). SGLang
 *   reports that field only with speculation on; latscope's simulator always reports it (1.0
 *   without speculation), so the switch needs an accept length above 1. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "config/profile.h"
#include "base/json_file.h"

#ifndef LATSCOPE_PREFIX
#define LATSCOPE_PREFIX "/usr/local"
#endif

int ls_warmup_shape_parse(const char *s, enum ls_warmup_shape *out)
{
	if (s && !strcmp(s, "vllm"))
		*out = LS_WARMUP_VLLM;
	else if (s && !strcmp(s, "sglang"))
		*out = LS_WARMUP_SGLANG;
	else
		return -EINVAL;
	return 0;
}

const char *ls_warmup_shape_name(enum ls_warmup_shape shape)
{
	return shape == LS_WARMUP_SGLANG ? "sglang" : "vllm";
}

int ls_layout_parse(const char *s, enum ls_report_layout *out)
{
	if (s && !strcmp(s, "vllm"))
		*out = LS_LAYOUT_VLLM;
	else if (s && !strcmp(s, "sglang"))
		*out = LS_LAYOUT_SGLANG;
	else
		return -EINVAL;
	return 0;
}

const char *ls_layout_name(enum ls_report_layout layout)
{
	return layout == LS_LAYOUT_SGLANG ? "sglang" : "vllm";
}

static void set_pcts(double *dst, size_t *n_dst, const double *p, size_t n)
{
	memcpy(dst, p, n * sizeof(*p));
	*n_dst = n;
}

int ls_profile_builtin(const char *name, struct ls_profile *out)
{
	static const double vllm_pcts[] = { 99 };
	static const double sglang_itl_pcts[] = { 95, 99 };
	static const double honest_pcts[] = { 50, 90, 99, 99.9 };
	struct ls_profile p;
	memset(&p, 0, sizeof(p));
	snprintf(p.source, sizeof(p.source), "built-in");
	if (!name)
		return -ENOENT;
	if (!strcmp(name, "vllm")) {
		snprintf(p.description, sizeof(p.description), "vllm bench serve (vllm/benchmarks/serve.py)");
		p.read = (struct ls_read_rules){ .origin = LS_ORIGIN_STARTED, .ttft_gate = LS_GATE_CHOICES,
						 .itl_mode = LS_ITL_FRAME, .e2el_end = LS_END_LAST_CONTENT,
						 .out_tokens = LS_OUT_USAGE, .failures_in_headline = 1,
						 .no_done_ok = 1 };
		set_pcts(p.read.percentiles, &p.read.n_percentiles, vllm_pcts, 1);
		p.send.backend = LS_BACKEND_OPENAI;
		p.send.arrival = LS_ARRIVAL_GAMMA;
		p.send.range_semantics = LS_RANGE_VLLM;
		p.send.warmup_shape = LS_WARMUP_VLLM;
		p.layout = LS_LAYOUT_VLLM;
		p.show_client_queue = 1; /* vLLM prints client queue time since its PR #54136 */
	} else if (!strcmp(name, "sglang") || !strcmp(name, "sglang-oai")) {
		int oai = !strcmp(name, "sglang-oai");
		snprintf(p.description, sizeof(p.description), "sglang.bench_serving --backend %s",
			 oai ? "sglang-oai (/v1/completions)" : "sglang (/generate)");
		p.read = (struct ls_read_rules){ .origin = LS_ORIGIN_STARTED,
						 .ttft_gate = oai ? LS_GATE_TEXT : LS_GATE_CUM_TEXT,
						 .itl_mode = oai ? LS_ITL_FRAME : LS_ITL_TOKEN,
						 .e2el_end = LS_END_DONE,
						 .out_tokens = oai ? LS_OUT_REQUESTED : LS_OUT_CUMULATIVE,
						 .failures_in_headline = 0, .no_token_ok = 1, .no_done_ok = 1,
						 .itl_max = 1 };
		set_pcts(p.read.percentiles, &p.read.n_percentiles, vllm_pcts, 1);
		set_pcts(p.read.itl_percentiles, &p.read.n_itl_percentiles, sglang_itl_pcts, 2);
		p.send.backend = oai ? LS_BACKEND_OPENAI : LS_BACKEND_SGLANG;
		p.send.arrival = LS_ARRIVAL_POISSON_YIELD;
		p.send.per_request_conn = 1;
		p.send.range_semantics = LS_RANGE_SGLANG;
		p.send.warmup_shape = LS_WARMUP_SGLANG;
		p.send.num_warmups = 1;
		p.send.ignore_eos = 1;
		p.layout = LS_LAYOUT_SGLANG;
		p.itl_token_when_spec = oai;
	} else if (!strcmp(name, "honest")) {
		snprintf(p.description, sizeof(p.description),
			 "latscope: clock from the schedule, both ITLs, E2EL to the last byte");
		p.read = (struct ls_read_rules){ .origin = LS_ORIGIN_SCHEDULED, .ttft_gate = LS_GATE_CHOICES,
						 .itl_mode = LS_ITL_FRAME, .e2el_end = LS_END_LAST_BYTE,
						 .out_tokens = LS_OUT_USAGE, .failures_in_headline = 1,
						 .itl_max = 1 };
		set_pcts(p.read.percentiles, &p.read.n_percentiles, honest_pcts, 4);
		p.send.backend = LS_BACKEND_OPENAI;
		p.send.arrival = LS_ARRIVAL_GAMMA;
		p.send.range_semantics = LS_RANGE_VLLM;
		p.send.warmup_shape = LS_WARMUP_VLLM;
		p.layout = LS_LAYOUT_VLLM;
		p.show_both_itl = 1;
		p.show_client_queue = 1;
	} else {
		return -ENOENT;
	}
	snprintf(p.name, sizeof(p.name), "%s", name);
	*out = p;
	return 0;
}

int ls_profile_read_rules(const struct ls_profile *p, double accept_len, struct ls_read_rules *out)
{
	*out = p->read;
	if (p->itl_token_when_spec && accept_len > 1.0 + 1e-9 && out->itl_mode != LS_ITL_TOKEN) {
		out->itl_mode = LS_ITL_TOKEN;
		return 1;
	}
	return 0;
}

static int bad(const char *where, const char *key, const char *want)
{
	fprintf(stderr, "latscope: %s: profile key \"%s\" %s\n", where, key, want);
	return -EINVAL;
}

/* The boolean keys and the fields they set. */
static int *bool_field(struct ls_profile *p, const char *k)
{
	static const struct {
		const char *key;
		size_t off;
		int in_read;
	} keys[] = {
		{ "failures_in_headline", offsetof(struct ls_read_rules, failures_in_headline), 1 },
		{ "no_token_ok", offsetof(struct ls_read_rules, no_token_ok), 1 },
		{ "no_done_ok", offsetof(struct ls_read_rules, no_done_ok), 1 },
		{ "itl_max", offsetof(struct ls_read_rules, itl_max), 1 },
		{ "ignore_eos", offsetof(struct ls_profile, send.ignore_eos), 0 },
		{ "show_both_itl", offsetof(struct ls_profile, show_both_itl), 0 },
		{ "show_client_queue", offsetof(struct ls_profile, show_client_queue), 0 },
		{ "itl_token_when_spec", offsetof(struct ls_profile, itl_token_when_spec), 0 },
	};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(k, keys[i].key))
			return (int *)((char *)(keys[i].in_read ? (void *)&p->read : (void *)p) + keys[i].off);
	return NULL;
}

static int pct_list(const cJSON *it, double *dst, size_t *n_dst)
{
	double vals[LS_MAX_PERCENTILES];
	size_t n = 0;
	if (!cJSON_IsArray(it))
		return -1;
	for (const cJSON *v = it->child; v; v = v->next) {
		if (!cJSON_IsNumber(v) || !(v->valuedouble > 0 && v->valuedouble <= 100) || n == LS_MAX_PERCENTILES)
			return -1;
		vals[n++] = v->valuedouble;
	}
	memcpy(dst, vals, n * sizeof(*vals));
	*n_dst = n;
	return 0;
}

int ls_profile_apply_json(struct ls_profile *p, const cJSON *obj, const char *where)
{
	if (!cJSON_IsObject(obj)) {
		fprintf(stderr, "latscope: %s: a profile is a JSON object\n", where);
		return -EINVAL;
	}
	for (const cJSON *it = obj->child; it; it = it->next) {
		const char *k = it->string, *s = cJSON_IsString(it) ? it->valuestring : NULL;
		int *flag = bool_field(p, k);
		if (!strcmp(k, "base") || !strcmp(k, "comment")) {
			continue; /* base is handled by ls_profile_load */
		} else if (flag) {
			if (!cJSON_IsBool(it))
				return bad(where, k, "must be true or false");
			*flag = cJSON_IsTrue(it);
		} else if (!strcmp(k, "name") || !strcmp(k, "description")) {
			if (!s)
				return bad(where, k, "must be a string");
			if (!strcmp(k, "name"))
				snprintf(p->name, sizeof(p->name), "%s", s);
			else
				snprintf(p->description, sizeof(p->description), "%s", s);
		} else if (!strcmp(k, "clock")) {
			if (ls_origin_parse(s, &p->read.origin))
				return bad(where, k, "must be \"scheduled\", \"admitted\" or \"started\"");
		} else if (!strcmp(k, "ttft_gate")) {
			if (ls_gate_parse(s, &p->read.ttft_gate))
				return bad(where, k, "must be \"choices\", \"text\" or \"cum_text\"");
		} else if (!strcmp(k, "itl")) {
			if (ls_itl_mode_parse(s, &p->read.itl_mode))
				return bad(where, k, "must be \"frame\" or \"token\"");
		} else if (!strcmp(k, "e2el_end")) {
			if (ls_e2el_end_parse(s, &p->read.e2el_end))
				return bad(where, k, "must be \"last_content\", \"done\" or \"last_byte\"");
		} else if (!strcmp(k, "out_tokens")) {
			if (ls_out_tokens_parse(s, &p->read.out_tokens))
				return bad(where, k, "must be \"usage\", \"cumulative\" or \"requested\"");
		} else if (!strcmp(k, "percentiles")) {
			if (pct_list(it, p->read.percentiles, &p->read.n_percentiles) || !p->read.n_percentiles)
				return bad(where, k, "must be a list of 1 to 16 numbers in (0, 100]");
		} else if (!strcmp(k, "itl_percentiles")) {
			if (pct_list(it, p->read.itl_percentiles, &p->read.n_itl_percentiles))
				return bad(where, k, "must be a list of at most 16 numbers in (0, 100] ([] = as percentiles)");
		} else if (!strcmp(k, "backend")) {
			if (ls_backend_parse(s, &p->send.backend))
				return bad(where, k, "must be \"openai\", \"openai-chat\" or \"sglang\"");
		} else if (!strcmp(k, "arrival")) {
			if (ls_arrival_parse_kind(s, &p->send.arrival))
				return bad(where, k, "must be gamma, poisson-yield, constant, closed, trace or inf");
		} else if (!strcmp(k, "connection")) {
			if (s && !strcmp(s, "reuse"))
				p->send.per_request_conn = 0;
			else if (s && !strcmp(s, "per-request"))
				p->send.per_request_conn = 1;
			else
				return bad(where, k, "must be \"reuse\" or \"per-request\"");
		} else if (!strcmp(k, "range_semantics")) {
			if (ls_range_semantics_parse(s, &p->send.range_semantics))
				return bad(where, k, "must be \"vllm\" or \"sglang\"");
		} else if (!strcmp(k, "warmup_shape")) {
			if (ls_warmup_shape_parse(s, &p->send.warmup_shape))
				return bad(where, k, "must be \"vllm\" or \"sglang\"");
		} else if (!strcmp(k, "layout")) {
			if (ls_layout_parse(s, &p->layout))
				return bad(where, k, "must be \"vllm\" or \"sglang\"");
		} else if (!strcmp(k, "num_warmups")) {
			if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > 1e5 ||
			    it->valuedouble != (double)(uint32_t)it->valuedouble)
				return bad(where, k, "must be a whole count 0..100000");
			p->send.num_warmups = (uint32_t)it->valuedouble;
		} else {
			fprintf(stderr, "latscope: %s: unknown profile key \"%s\"\n", where, k);
			return -EINVAL;
		}
	}
	return 0;
}

cJSON *ls_profile_to_json(const struct ls_profile *p)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	const struct ls_read_rules *r = &p->read;
	struct ls_profile tmp = *p;
	cJSON_AddStringToObject(o, "name", p->name);
	cJSON_AddStringToObject(o, "description", p->description);
	cJSON_AddStringToObject(o, "clock", ls_origin_name(r->origin));
	cJSON_AddStringToObject(o, "ttft_gate", ls_gate_name(r->ttft_gate));
	cJSON_AddStringToObject(o, "itl", ls_itl_mode_name(r->itl_mode));
	cJSON_AddStringToObject(o, "e2el_end", ls_e2el_end_name(r->e2el_end));
	cJSON_AddStringToObject(o, "out_tokens", ls_out_tokens_name(r->out_tokens));
	static const char *const bools[] = { "failures_in_headline", "no_token_ok", "no_done_ok", "itl_max" };
	for (size_t i = 0; i < sizeof(bools) / sizeof(bools[0]); i++)
		cJSON_AddBoolToObject(o, bools[i], *bool_field(&tmp, bools[i]));
	cJSON_AddItemToObject(o, "percentiles", ls_json_doubles(r->percentiles, r->n_percentiles));
	cJSON_AddItemToObject(o, "itl_percentiles", ls_json_doubles(r->itl_percentiles, r->n_itl_percentiles));
	cJSON_AddStringToObject(o, "backend", ls_backend_name(p->send.backend));
	cJSON_AddStringToObject(o, "arrival", ls_arrival_kind_name(p->send.arrival));
	cJSON_AddStringToObject(o, "connection", p->send.per_request_conn ? "per-request" : "reuse");
	cJSON_AddStringToObject(o, "range_semantics", ls_range_semantics_name(p->send.range_semantics));
	cJSON_AddStringToObject(o, "warmup_shape", ls_warmup_shape_name(p->send.warmup_shape));
	cJSON_AddNumberToObject(o, "num_warmups", p->send.num_warmups);
	static const char *const sbools[] = { "ignore_eos", "show_both_itl", "show_client_queue",
					      "itl_token_when_spec" };
	cJSON_AddStringToObject(o, "layout", ls_layout_name(p->layout));
	for (size_t i = 0; i < sizeof(sbools) / sizeof(sbools[0]); i++)
		cJSON_AddBoolToObject(o, sbools[i], *bool_field(&tmp, sbools[i]));
	return o;
}

static int load_file(const char *path, struct ls_profile *out, const char *builtin_name)
{
	cJSON *root = ls_json_read_file(path, "latscope", "profile");
	if (!root)
		return -EINVAL;
	const cJSON *base = cJSON_GetObjectItemCaseSensitive(root, "base");
	const char *base_name = builtin_name ? builtin_name : cJSON_IsString(base) ? base->valuestring : "vllm";
	if (ls_profile_builtin(base_name, out)) {
		/* A file named after no built-in starts from vllm's rules. */
		if (builtin_name || ls_profile_builtin("vllm", out)) {
			fprintf(stderr, "latscope: %s: unknown base profile \"%s\"\n", path, base_name);
			cJSON_Delete(root);
			return -EINVAL;
		}
	}
	int err = ls_profile_apply_json(out, root, path);
	snprintf(out->source, sizeof(out->source), "%s", path);
	cJSON_Delete(root);
	return err;
}

int ls_profile_load(const char *name_or_path, struct ls_profile *out)
{
	if (!name_or_path || !*name_or_path) {
		fprintf(stderr, "latscope: empty profile name\n");
		return -EINVAL;
	}
	size_t len = strlen(name_or_path);
	if (strchr(name_or_path, '/') || (len > 5 && !strcmp(name_or_path + len - 5, ".json")))
		return load_file(name_or_path, out, NULL);
	if (ls_profile_builtin(name_or_path, out)) {
		fprintf(stderr, "latscope: unknown profile '%s' (built in: vllm, sglang, sglang-oai, honest; "
				"or a path to a JSON profile)\n", name_or_path);
		return -ENOENT;
	}
	/* Overlay the shipped configs/NAME.json when there is one (the profiles stage fills them). */
	const char *dirs[] = { getenv("LATSCOPE_CONFIG_DIR"), "configs", LATSCOPE_PREFIX "/share/latscope/configs" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char path[512];
		if (!dirs[i] || !*dirs[i])
			continue;
		snprintf(path, sizeof(path), "%s/%s.json", dirs[i], name_or_path);
		if (access(path, R_OK) == 0)
			return load_file(path, out, name_or_path);
	}
	return 0;
}
