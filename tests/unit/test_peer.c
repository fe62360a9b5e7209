/* The peers' flags: vLLM's ramp-up rate formula and schedule, request bodies and headers as
 * vLLM and SGLang build them, and their command lines as config reads them (--harness, the
 * bare --profile, SGLang's prefixes and defaults, out-of-scope flags). */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/json_file.h"
#include "base/rng.h"
#include "cmd/bench_peer.h"
#include "config/config.h"
#include "driver/request_extra.h"
#include "workload/ramp.h"
#include "t_unit.h"

Test(ramp, linear_and_exponential_follow_vllm_formula)
{
	/* vllm/benchmarks/serve.py _get_current_request_rate: progress = i / max(n - 1, 1) */
	cr_expect_float_eq(ls_ramp_rate(LS_RAMP_LINEAR, 1, 10, 0, 10), 1.0, 1e-12);
	cr_expect_float_eq(ls_ramp_rate(LS_RAMP_LINEAR, 1, 10, 3, 10), 4.0, 1e-12);
	cr_expect_float_eq(ls_ramp_rate(LS_RAMP_LINEAR, 1, 10, 9, 10), 10.0, 1e-12);
	cr_expect_float_eq(ls_ramp_rate(LS_RAMP_EXPONENTIAL, 2, 32, 0, 5), 2.0, 1e-12);
	cr_expect_float_eq(ls_ramp_rate(LS_RAMP_EXPONENTIAL, 2, 32, 2, 5), 8.0, 1e-9); /* 2 * 16^(1/2) */
	cr_expect_float_eq(ls_ramp_rate(LS_RAMP_EXPONENTIAL, 2, 32, 4, 5), 32.0, 1e-9);
	cr_expect_float_eq(ls_ramp_rate(LS_RAMP_EXPONENTIAL, 1, 10, 3, 10), pow(10.0, 3.0 / 9.0), 1e-12);
	/* one request: progress 0 / max(0, 1) = 0 */
	cr_expect_float_eq(ls_ramp_rate(LS_RAMP_LINEAR, 3, 7, 0, 1), 3.0, 1e-12);
}

Test(ramp, checks_are_vllms)
{
	cr_expect_null(ls_ramp_check(LS_RAMP_LINEAR, 0, 10, 1, 1));
	cr_expect_not_null(ls_ramp_check(LS_RAMP_LINEAR, 5, 1, 1, 1));      /* start > end */
	cr_expect_not_null(ls_ramp_check(LS_RAMP_EXPONENTIAL, 0, 10, 1, 1)); /* start 0 */
	cr_expect_not_null(ls_ramp_check(LS_RAMP_LINEAR, 1, 10, 1, 0));     /* end missing */
	cr_expect_not_null(ls_ramp_check(LS_RAMP_NONE, 1, 10, 1, 1));       /* rps without strategy */
	cr_expect_null(ls_ramp_check(LS_RAMP_NONE, 0, 0, 0, 0));
}

Test(ramp, schedule_sums_gaps_at_each_requests_rate, .init = cr_redirect_stderr)
{
	/* burstiness inf: every gap is exactly 1 / rate_i, no rescaling (vLLM rescales only without
	 * a ramp) */
	struct ls_arrival a;
	size_t n = 10;
	cr_assert_eq(ls_arrival_init_ramp(&a, LS_RAMP_LINEAR, 1, 10, INFINITY, 0, n), 0);
	double t = 0;
	for (size_t i = 0; i < n; i++) {
		t += 1.0 / (1.0 + 9.0 * (double)i / 9.0);
		cr_expect_eq(a.offsets_ns[i], (uint64_t)llround(t * 1e9), "request %zu", i);
	}
	cr_expect_eq(a.kind, LS_ARRIVAL_GAMMA);
	ls_arrival_free(&a);
	/* Poisson: the mean gap of each stretch follows that stretch's rate */
	n = 40000;
	cr_assert_eq(ls_arrival_init_ramp(&a, LS_RAMP_LINEAR, 10, 1000, 1.0, 7, n), 0);
	double first = (double)a.offsets_ns[999] / 1e9 / 1000;                              /* ~1/10..1/34 */
	double last = (double)(a.offsets_ns[n - 1] - a.offsets_ns[n - 1001]) / 1e9 / 1000; /* ~1/975..1/1000 */
	cr_expect(first > 0.02 && first < 0.08, "first stretch mean gap %g s", first);
	cr_expect(last > 0.00095 && last < 0.00108, "last stretch mean gap %g s", last);
	ls_arrival_free(&a);
	/* linear from 0: request 0's rate is 0, which vLLM's get_request asserts against */
	cr_expect_neq(ls_arrival_init_ramp(&a, LS_RAMP_LINEAR, 0, 10, 1.0, 0, 5), 0);
}

static cJSON *applied(const struct ls_request_extra *x, enum ls_backend be, const char *body, const char *lora)
{
	char *out = NULL;
	size_t len = 0;
	cr_assert_eq(ls_request_extra_apply(x, be, body, lora, &out, &len), 0);
	cr_assert_eq(len, strlen(out));
	cJSON *j = cJSON_Parse(out);
	free(out);
	cr_assert_not_null(j);
	return j;
}

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	cr_assert(cJSON_IsNumber(v), "no number %s", k);
	return v->valuedouble;
}

Test(body, vllm_puts_sampling_logprobs_model_and_extra_body_top_level)
{
	struct ls_request_extra x;
	ls_request_extra_init(&x);
	x.sampling[LS_SAMP_TEMPERATURE] = 0.7;
	x.sampling[LS_SAMP_TOP_K] = 20;
	x.sampling_set = 1u << LS_SAMP_TEMPERATURE | 1u << LS_SAMP_TOP_K;
	x.logprobs = 3;
	x.served_model_name = strdup("served");
	x.extra_body = strdup("{\"max_tokens\": 5, \"chat_template_kwargs\": {\"enable_thinking\": false}}");
	const char *body = "{\"model\":\"m\",\"prompt\":\"hi\",\"max_tokens\":16,\"stream\":true}";
	cr_assert(ls_request_extra_touches_body(&x));
	cJSON *j = applied(&x, LS_BACKEND_OPENAI, body, NULL);
	cr_expect_float_eq(num(j, "temperature"), 0.7, 1e-12);
	cr_expect_float_eq(num(j, "top_k"), 20, 1e-12);
	cr_expect_eq(num(j, "logprobs"), 3);
	cr_expect_eq(num(j, "max_tokens"), 5); /* extra body wins: payload.update(extra_body) */
	cr_expect_str_eq(cJSON_GetObjectItem(j, "model")->valuestring, "served");
	cr_expect_not_null(cJSON_GetObjectItem(j, "chat_template_kwargs"));
	cr_expect_null(cJSON_GetObjectItem(j, "top_p")); /* not given, not sent */
	cJSON_Delete(j);
	/* a LoRA adapter is the model (vLLM); chat gets no logprobs */
	j = applied(&x, LS_BACKEND_OPENAI_CHAT, "{\"model\":\"m\",\"messages\":[]}", "lora-a");
	cr_expect_str_eq(cJSON_GetObjectItem(j, "model")->valuestring, "lora-a");
	cr_expect_null(cJSON_GetObjectItem(j, "logprobs"));
	cr_expect_null(cJSON_GetObjectItem(j, "lora_path"));
	cJSON_Delete(j);
	ls_request_extra_free(&x);
}

Test(body, sglang_rules_send_sglangs_defaults)
{
	struct ls_request_extra x;
	ls_request_extra_init(&x);
	x.rules = LS_BODY_SGLANG;
	const char *gen = "{\"input_ids\":[1,2],\"sampling_params\":{\"max_new_tokens\":8,\"ignore_eos\":true},"
			  "\"stream\":true}";
	cJSON *j = applied(&x, LS_BACKEND_SGLANG, gen, NULL);
	cJSON *sp = cJSON_GetObjectItem(j, "sampling_params");
	cr_expect_float_eq(num(sp, "temperature"), 0.0, 0);
	cr_expect_eq(num(sp, "max_new_tokens"), 8);
	cr_expect_null(cJSON_GetObjectItem(sp, "top_p")); /* only when below 1 */
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(j, "return_logprob")));
	cr_expect_eq(num(j, "logprob_start_len"), -1);
	cr_expect(cJSON_IsNull(cJSON_GetObjectItem(j, "lora_path")));
	cJSON_Delete(j);
	x.sampling[LS_SAMP_TOP_P] = 0.9;
	x.sampling_set = 1u << LS_SAMP_TOP_P;
	x.return_logprob = 1;
	x.top_logprobs_num = 5;
	x.prompt_suffix = strdup(" Answer:");
	j = applied(&x, LS_BACKEND_OPENAI, "{\"model\":\"m\",\"prompt\":\"Q\",\"max_tokens\":8}", "ad1");
	cr_expect_float_eq(num(j, "top_p"), 0.9, 1e-12);
	cr_expect_eq(num(j, "best_of"), 1);
	cr_expect_eq(num(j, "logprobs"), 5);
	cr_expect_str_eq(cJSON_GetObjectItem(j, "model")->valuestring, "ad1"); /* SGLang's LoRA hack */
	cr_expect_str_eq(cJSON_GetObjectItem(j, "lora_path")->valuestring, "ad1");
	cr_expect_str_eq(cJSON_GetObjectItem(j, "prompt")->valuestring, "Q Answer:");
	cJSON_Delete(j);
	ls_request_extra_free(&x);
}

Test(body, nothing_given_touches_nothing_and_bad_extra_body_is_refused)
{
	struct ls_request_extra x;
	ls_request_extra_init(&x);
	cr_expect_not(ls_request_extra_touches_body(&x));
	cr_expect_not_null(ls_request_extra_check_object("[1, 2]"));
	cr_expect_not_null(ls_request_extra_check_object("{bad"));
	cr_expect_null(ls_request_extra_check_object("{\"a\": 1}"));
	/* LoRA picks: vLLM none for warmups, round-robin by index; SGLang the first for warmups */
	ls_request_extra_add_str(&x.lora, &x.n_lora, "a");
	ls_request_extra_add_str(&x.lora, &x.n_lora, "b");
	uint64_t rng[2] = { 1, 2 };
	x.lora_round_robin = 1;
	cr_expect_null(ls_request_extra_lora(&x, 0, 1, rng));
	cr_expect_str_eq(ls_request_extra_lora(&x, 3, 0, rng), "b");
	x.rules = LS_BODY_SGLANG;
	cr_expect_str_eq(ls_request_extra_lora(&x, 0, 1, rng), "a");
	ls_request_extra_free(&x);
}

Test(headers, key_value_as_vllm_and_no_injection)
{
	struct ls_request_extra x;
	ls_request_extra_init(&x);
	cr_expect_null(ls_request_extra_add_header(&x, " x-additional-info = 0.3.3 "));
	cr_expect_null(ls_request_extra_add_header(&x, "Authorization=Bearer s3cret=x"));
	cr_assert_eq(x.n_headers, 2);
	cr_expect_str_eq(x.headers[0], "x-additional-info: 0.3.3");
	cr_expect_str_eq(x.headers[1], "Authorization: Bearer s3cret=x"); /* split at the first '=' */
	cr_expect_not_null(ls_request_extra_add_header(&x, "no-equals"));
	cr_expect_not_null(ls_request_extra_add_header(&x, "bad name=1"));
	cr_expect_not_null(ls_request_extra_add_header(&x, "x=1\r\nEvil: 2"));
	cr_expect_eq(x.n_headers, 2);
	/* the summary names headers, never their values */
	x.sampling[LS_SAMP_TEMPERATURE] = 0.5;
	x.sampling_set = 1u << LS_SAMP_TEMPERATURE;
	char *s = ls_request_extra_summary(&x, LS_BACKEND_OPENAI, 1);
	cr_assert_not_null(s);
	cr_expect_null(strstr(s, "s3cret"));
	cr_expect_null(strstr(s, "0.3.3"));
	cJSON *j = cJSON_Parse(s);
	cJSON *h = cJSON_GetObjectItem(j, "headers");
	cr_expect_str_eq(cJSON_GetObjectItem(h, "x-additional-info")->valuestring, "<redacted>");
	cr_expect_str_eq(cJSON_GetObjectItem(h, "Authorization")->valuestring, "<redacted>");
	cr_expect_float_eq(num(cJSON_GetObjectItem(j, "sampling"), "temperature"), 0.5, 1e-12);
	cJSON_Delete(j);
	free(s);
	ls_request_extra_free(&x);
}

Test(peer_cli, bare_profile_is_vllms_and_named_profile_is_latscopes, .init = cr_redirect_stderr)
{
	struct ls_config c;
	const char *a1[] = { "--profile", "--num-prompts", "5", NULL };
	cr_assert_eq(t_config_parse(&c, a1), 0);
	cr_expect_eq(c.peer.server_profile, 1);
	cr_expect_str_eq(c.profile.name, "vllm");
	ls_config_free(&c);
	const char *a2[] = { "--profile", "sglang", NULL };
	cr_assert_eq(t_config_parse(&c, a2), 0);
	cr_expect_eq(c.peer.server_profile, 0);
	cr_expect_str_eq(c.profile.name, "sglang");
	ls_config_free(&c);
	const char *a3[] = { "--rules", "honest", "--profile", NULL };
	cr_assert_eq(t_config_parse(&c, a3), 0);
	cr_expect_eq(c.peer.server_profile, 1);
	cr_expect_str_eq(c.profile.name, "honest");
	ls_config_free(&c);
	const char *a4[] = { "--profile=sglang-oai", NULL };
	cr_assert_eq(t_config_parse(&c, a4), 0);
	cr_expect_str_eq(c.profile.name, "sglang-oai");
	ls_config_free(&c);
}

Test(peer_cli, vllm_flags_fill_the_request, .init = cr_redirect_stderr)
{
	struct ls_config c;
	const char *a[] = { "--temperature", "0.6", "--top-p", "0.95", "--top-k", "20", "--min-p", "0",
			    "--header", "x-a=1", "x-b=2", "--metadata", "v=1", "tp=2", "--lora-modules", "l1", "l2",
			    "--lora-assignment", "round-robin", "--logprobs", "2", "--served-model-name", "sm",
			    "--request-id-prefix", "bench-1-", "--extra-body", "{\"k\": 1}", "--append-result",
			    "--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1", "--ramp-up-end-rps", "8",
			    "--tokenizer", "meta/x", "--skip-chat-template", NULL };
	cr_assert_eq(t_config_parse(&c, a), 0, "%s", t_stderr_text());
	const struct ls_request_extra *x = &c.peer.req;
	cr_expect_eq(x->sampling_set, 1u << LS_SAMP_TEMPERATURE | 1u << LS_SAMP_TOP_P | 1u << LS_SAMP_TOP_K |
				       1u << LS_SAMP_MIN_P);
	cr_expect_float_eq(x->sampling[LS_SAMP_TOP_P], 0.95, 1e-12);
	cr_expect_eq(x->n_headers, 2);
	cr_expect_eq(c.peer.n_metadata, 2);
	cr_expect_eq(x->n_lora, 2);
	cr_expect(x->lora_round_robin);
	cr_expect_eq(x->logprobs, 2);
	cr_expect_str_eq(x->served_model_name, "sm");
	cr_expect_str_eq(x->request_id_prefix, "bench-1-");
	cr_expect(c.save_result, "--append-result writes the file, as vLLM does");
	cr_expect_eq(c.peer.ramp, LS_RAMP_LINEAR);
	char *err = t_stderr_text();
	cr_expect(strstr(err, "--tokenizer: latscope counts tokens with the server's /tokenize"), "%s", err);
	cr_expect(strstr(err, "--skip-chat-template:"), "%s", err);
	ls_config_free(&c);
}

Test(peer_cli, ramp_up_refuses_a_request_rate, .init = cr_redirect_stderr)
{
	struct ls_config c;
	const char *a[] = { "--ramp-up-strategy", "exponential", "--ramp-up-start-rps", "0", "--ramp-up-end-rps",
			    "8", NULL };
	cr_expect_eq(t_config_parse(&c, a), 2);
	ls_config_free(&c);
	const char *b[] = { "--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1", "--ramp-up-end-rps", "8",
			    "--request-rate", "5", NULL };
	cr_expect_eq(t_config_parse(&c, b), 2);
	ls_config_free(&c);
	cr_expect(strstr(t_stderr_text(), "do not give --request-rate"));
}

Test(peer_cli, sglang_harness_reads_sglangs_command_line, .init = cr_redirect_stderr)
{
	struct ls_config c;
	const char *a[] = { "--harness", "sglang", "--backend", "sglang", "--dataset-name", "random", "--num-prompt",
			    "30", "--random-input", "64", "--random-output", "16", "--random-range-ratio", "1.0",
			    "--profile", "--warmup-requests", "2", "--disable-ignore-eos", "--extra-request-body",
			    "{\"top_k\": 3}", "--output-file", "o.jsonl", "--output-details", NULL };
	cr_assert_eq(t_config_parse(&c, a), 0, "%s", t_stderr_text());
	cr_expect_eq(c.peer.harness, LS_HARNESS_SGLANG);
	cr_expect_eq(c.num_prompts, 30);
	cr_expect_eq(c.random_input_len, 64);
	cr_expect_eq(c.random_output_len, 16);
	cr_expect_float_eq(c.random_range_ratio, 1.0, 0);
	cr_expect_eq(c.peer.server_profile, 1, "SGLang's --profile is a switch");
	cr_expect_str_eq(c.profile.name, "sglang");
	cr_expect_eq(c.profile.send.num_warmups, 2);
	cr_expect_eq(c.profile.send.ignore_eos, 0);
	cr_expect_eq(c.port, 30000, "SGLang's default port for its backend");
	cr_expect_eq(c.seed, 42);
	cr_expect_eq(c.peer.req.rules, LS_BODY_SGLANG);
	cr_expect_str_eq(c.peer.output_file, "o.jsonl");
	ls_config_free(&c);
	/* SGLang's defaults: sharegpt, which it downloads; latscope asks for the file */
	const char *b[] = { "--harness", "sglang", "--backend", "sglang-oai", NULL };
	cr_expect_eq(t_config_parse(&c, b), 2);
	cr_expect(strstr(t_stderr_text(), "does not download"));
	ls_config_free(&c);
	const char *d[] = { "--harness=sglang", "--backend", "vllm-chat", "--dataset-name", "random", NULL };
	cr_assert_eq(t_config_parse(&c, d), 0);
	cr_expect_str_eq(c.profile.name, "sglang-oai");
	cr_expect_eq(c.port, 30000); /* SGLang maps only "vllm" to 8000, not vllm-chat */
	cr_expect_eq(c.random_output_len, 1024);
	ls_config_free(&c);
}

Test(peer_cli, out_of_scope_flags_are_named_so, .init = cr_redirect_stderr)
{
	struct ls_config c;
	const char *a[] = { "--random-mm-base-items-per-request", "2", NULL };
	cr_expect_eq(t_config_parse(&c, a), 2);
	ls_config_free(&c);
	const char *b[] = { "--backend", "openai-embeddings", NULL };
	cr_expect_eq(t_config_parse(&c, b), 2);
	ls_config_free(&c);
	const char *d[] = { "--harness", "sglang", "--image-count", "3", NULL };
	cr_expect_eq(t_config_parse(&c, d), 2);
	ls_config_free(&c);
	char *err = t_stderr_text();
	cr_expect(strstr(err, "--random-mm-base-items-per-request is a multimodal flag of vLLM: out of scope"), "%s", err);
	cr_expect(strstr(err, "--backend openai-embeddings is an audio, pooling, embedding or multimodal backend"), "%s", err);
	cr_expect(strstr(err, "--image-count is a multimodal flag of SGLang"), "%s", err);
	cr_expect_null(strstr(err, "unknown flag"), "%s", err);
}

/* ---- The peers' output files ---- */
#include "report/report.h"

/* Three measured requests: TTFT 0.1/0.2/0.3 s, E2EL 1/2/3 s, 11/1/21 output tokens. */
static void three(struct ls_metrics *m, double *ttft, double *e2el, uint32_t *in, uint32_t *out, int *ok,
		  size_t *off, double *pool)
{
	memset(m, 0, sizeof(*m));
	m->n = 3;
	m->completed = 3;
	m->duration_s = 4;
	m->total_input = 30;
	m->total_output = 33;
	for (size_t i = 0; i < 3; i++) {
		ttft[i] = 0.1 * (double)(i + 1);
		e2el[i] = (double)(i + 1);
		in[i] = 10;
		ok[i] = 1;
	}
	out[0] = 11, out[1] = 1, out[2] = 21;
	off[0] = 0, off[1] = 2, off[2] = 2, off[3] = 3; /* ITLs: 0.05, 0.07 | - | 0.5 */
	pool[0] = 0.05, pool[1] = 0.07, pool[2] = 0.5;
	m->ttfts_s = ttft, m->e2els_s = e2el, m->input_lens = in, m->output_lens = out, m->ok = ok;
	m->itl_off = off, m->itl_pool = pool;
}

static cJSON *read_lines(const char *path, int *n_lines)
{
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f);
	static char line[65536];
	cJSON *last = NULL;
	*n_lines = 0;
	while (fgets(line, sizeof(line), f)) {
		cJSON_Delete(last);
		cr_assert_not_null(last = cJSON_Parse(line), "line %d is not JSON: %s", *n_lines + 1, line);
		(*n_lines)++;
	}
	fclose(f);
	return last;
}

Test(peer_files, sglang_jsonl_has_its_statistics_and_appends, .init = cr_redirect_stderr)
{
	double ttft[3], e2el[3], pool[3];
	uint32_t in[3], out[3];
	int ok[3];
	size_t off[4];
	struct ls_metrics m;
	three(&m, ttft, e2el, in, out, ok, off, pool);
	struct ls_peer_report pr = { .tag = "t1", .dataset_name = "random", .random_input_len = 10,
				     .random_output_len = 21, .output_details = 1 };
	struct ls_report_ctx ctx = { .backend = "sglang", .request_rate = 8, .peer = &pr };
	char path[] = "/tmp/latscope-peer-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(ls_report_sglang_write(path, &m, NULL, &ctx), 0);
	cr_assert_eq(ls_report_sglang_write(path, &m, NULL, &ctx), 0); /* appended, as SGLang's "a" */
	int lines;
	cJSON *j = read_lines(path, &lines);
	unlink(path);
	cr_expect_eq(lines, 2);
	cr_expect_str_eq(cJSON_GetObjectItem(j, "tag")->valuestring, "t1");
	cr_expect_float_eq(num(j, "mean_ttft_ms"), 200, 1e-9);
	cr_expect_float_eq(num(j, "median_ttft_ms"), 200, 1e-9);
	cr_expect_float_eq(num(j, "std_ttft_ms"), sqrt(20000.0 / 3), 1e-9); /* np.std: population */
	cr_expect_float_eq(num(j, "p99_ttft_ms"), 298, 1e-9);             /* numpy's linear rule */
	cr_expect_float_eq(num(j, "mean_e2e_latency_ms"), 2000, 1e-9);
	/* TPOT only where output_len > 1: (1 - 0.1) / 10 and (3 - 0.3) / 20 */
	cr_expect_float_eq(num(j, "mean_tpot_ms"), (90.0 + 135.0) / 2, 1e-9);
	cr_expect_float_eq(num(j, "max_itl_ms"), 500, 1e-9);
	cr_expect_float_eq(num(j, "input_throughput"), 7.5, 1e-12);
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "itls")), 3);
	cr_expect_float_eq(num(j, "request_rate"), 8, 0);
	cJSON_Delete(j);
}

Test(peer_files, vllm_append_result_adds_a_line, .init = cr_redirect_stderr)
{
	char path[] = "/tmp/latscope-peer-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(ls_report_append_line("--append-result", path, "{\"a\":1}"), 0);
	cr_assert_eq(ls_report_append_line("--append-result", path, "{\"a\":2}"), 0);
	int lines;
	cJSON *j = read_lines(path, &lines);
	unlink(path);
	cr_expect_eq(lines, 2);
	cr_expect_eq(num(j, "a"), 2);
	cJSON_Delete(j);
}

Test(peer_files, ramp_up_result_has_vllms_rps_change_events)
{
	struct ls_request reqs[5];
	memset(reqs, 0, sizeof(reqs));
	for (int i = 0; i < 5; i++) {
		reqs[i].id = (uint64_t)i;
		reqs[i].started_ns = 1000000000ull * (uint64_t)(i + 1);
	}
	struct ls_run run = { .requests = reqs, .n_requests = 5, .start_ns = 500000000ull };
	/* linear 1 -> 9 over 5 requests: rates 1, 3, 5, 7, 9; vLLM adds every integer passed */
	struct ls_peer_report pr = { .ramp = "linear", .ramp_kind = LS_RAMP_LINEAR, .ramp_start_rps = 1,
				     .ramp_end_rps = 9 };
	struct ls_report_ctx ctx = { .peer = &pr };
	cJSON *root = cJSON_CreateObject();
	ls_peer_json_ramp_events(root, &run, &ctx);
	cJSON *ev = cJSON_GetObjectItem(root, "rps_change_events");
	cr_assert_eq(cJSON_GetArraySize(ev), 9);
	for (int k = 0; k < 9; k++)
		cr_expect_eq(num(cJSON_GetArrayItem(ev, k), "rps"), k + 1);
	cr_expect_not_null(strchr(cJSON_GetObjectItem(cJSON_GetArrayItem(ev, 0), "timestamp")->valuestring, 'T'));
	cJSON_Delete(root);
}

Test(peer_cli, config_file_takes_rules_and_lists, .init = cr_redirect_stderr)
{
	char path[] = "/tmp/latscope-peercfg-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	const char *text = "{\"rules\": \"honest\", \"temperature\": 0.2, \"header\": [\"x-a=1\", \"x-b=2\"],"
			   " \"metadata\": [\"v=1\"]}";
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	struct ls_config c;
	const char *a[] = { "--config", path, NULL };
	int rc = t_config_parse(&c, a);
	unlink(path);
	cr_assert_eq(rc, 0, "%s", t_stderr_text());
	cr_expect_str_eq(c.profile.name, "honest");
	cr_expect_float_eq(c.peer.req.sampling[LS_SAMP_TEMPERATURE], 0.2, 1e-12);
	cr_expect_eq(c.peer.req.n_headers, 2);
	cr_expect_str_eq(c.peer.req.headers[1], "x-b: 2");
	cr_expect_eq(c.peer.n_metadata, 1);
	ls_config_free(&c);
}

/* Every sampling parameter at its zero or boundary value (temperature 0 is the most common in
 * benchmarks; top_p 1, top_k -1, penalties 0, repetition_penalty 1): given is sent, whatever the
 * value, on the command line and in a --config file, in every body that carries sampling, and
 * named in the record's summary. A value of 0 is not "not given". */
static const double boundary[LS_SAMP__COUNT] = {
	[LS_SAMP_TEMPERATURE] = 0, [LS_SAMP_TOP_P] = 1, [LS_SAMP_TOP_K] = -1, [LS_SAMP_MIN_P] = 0,
	[LS_SAMP_FREQUENCY_PENALTY] = 0, [LS_SAMP_PRESENCE_PENALTY] = 0, [LS_SAMP_REPETITION_PENALTY] = 1,
};

static void expect_boundary_sent(const struct ls_request_extra *x, const char *where)
{
	cr_expect_eq(x->sampling_set, (1u << LS_SAMP__COUNT) - 1, "%s: sampling_set %#x", where, x->sampling_set);
	const struct { enum ls_backend be; const char *body, *in; } bodies[] = {
		{ LS_BACKEND_OPENAI, "{\"model\":\"m\",\"prompt\":\"hi\",\"max_tokens\":1}", NULL },
		{ LS_BACKEND_OPENAI_CHAT, "{\"model\":\"m\",\"messages\":[],\"max_tokens\":1}", NULL },
		{ LS_BACKEND_SGLANG, "{\"text\":\"hi\",\"sampling_params\":{\"max_new_tokens\":1}}", "sampling_params" },
	};
	for (size_t b = 0; b < sizeof(bodies) / sizeof(bodies[0]); b++) {
		cJSON *j = applied(x, bodies[b].be, bodies[b].body, NULL);
		const cJSON *o = bodies[b].in ? cJSON_GetObjectItem(j, bodies[b].in) : j;
		for (int k = 0; k < LS_SAMP__COUNT; k++) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, ls_sampling_keys[k]);
			cr_expect(cJSON_IsNumber(v), "%s: backend %d: %s = %g not sent", where, bodies[b].be,
				  ls_sampling_keys[k], boundary[k]);
			if (cJSON_IsNumber(v))
				cr_expect_float_eq(v->valuedouble, boundary[k], 0, "%s: %s", where, ls_sampling_keys[k]);
		}
		cJSON_Delete(j);
	}
	char *sum = ls_request_extra_summary(x, LS_BACKEND_OPENAI, 0);
	cJSON *j = cJSON_Parse(sum);
	const cJSON *s = cJSON_GetObjectItem(j, "sampling");
	for (int k = 0; k < LS_SAMP__COUNT; k++)
		cr_expect(cJSON_IsNumber(cJSON_GetObjectItem(s, ls_sampling_keys[k])), "%s: summary lacks %s: %s", where,
			  ls_sampling_keys[k], sum);
	cJSON_Delete(j);
	free(sum);
}

Test(peer_cli, sampling_at_zero_and_boundaries_is_sent, .init = cr_redirect_stderr)
{
	struct ls_config c;
	const char *a[] = { "--temperature", "0", "--top-p", "1", "--top-k", "-1", "--min-p", "0",
			    "--frequency-penalty", "0", "--presence-penalty", "0", "--repetition-penalty", "1", NULL };
	cr_assert_eq(t_config_parse(&c, a), 0, "%s", t_stderr_text());
	expect_boundary_sent(&c.peer.req, "argv");
	ls_config_free(&c);

	char path[] = "/tmp/latscope-peercfg-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	const char *text = "{\"temperature\": 0, \"top-p\": 1, \"top-k\": -1, \"min-p\": 0.0, \"frequency-penalty\": 0,"
			   " \"presence-penalty\": -0.0, \"repetition-penalty\": 1}";
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	const char *b[] = { "--config", path, NULL };
	int rc = t_config_parse(&c, b);
	unlink(path);
	cr_assert_eq(rc, 0, "%s", t_stderr_text());
	expect_boundary_sent(&c.peer.req, "--config");
	ls_config_free(&c);
}

/* Python's repr(float): what vLLM's f"{request_rate}qps" and json.dump write. */
Test(peer_files, python_float_repr)
{
	static const struct { double x; const char *py; } cases[] = {
		{ 20, "20.0" }, { 1, "1.0" }, { 0.5, "0.5" }, { 2.25, "2.25" }, { 0.1, "0.1" }, { 1e-4, "0.0001" },
		{ 1e-5, "1e-05" }, { 1.5e-7, "1.5e-07" }, { 1e16, "1e+16" }, { 123456789012345.0, "123456789012345.0" },
		{ 1.0 / 3, "0.3333333333333333" }, { 100, "100.0" }, { 0, "0.0" }, { -3.5, "-3.5" },
		{ INFINITY, "inf" }, { 1e22, "1e+22" }, { 12.5e3, "12500.0" },
	};
	char buf[64];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ls_py_float(cases[i].x, buf, sizeof(buf));
		cr_expect_str_eq(buf, cases[i].py, "%.17g", cases[i].x);
	}
}

/* vLLM's compute_result_filename: f"{label}-{args.request_rate}qps{concurrency}-{model}-{date}.json" */
Test(peer_files, vllm_result_name_has_the_rate_as_python_writes_it, .init = cr_redirect_stderr)
{
	struct ls_config c;
	char name[256];
	const char *a[] = { "--request-rate", "20", "--max-concurrency", "4", NULL };
	cr_assert_eq(t_config_parse(&c, a), 0, "%s", t_stderr_text());
	ls_bench_peer_result_name(&c, "org/m", "20260101-000000", name, sizeof(name));
	cr_expect_str_eq(name, "openai-20.0qps-concurrency4-m-20260101-000000.json");
	char *line = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&line, &len);
	ls_bench_peer_traffic_lines(f, &c);
	fclose(f);
	cr_expect_str_eq(line, "Traffic request rate: 20.0\n");
	free(line);
	ls_config_free(&c);
	const char *b[] = { "--backend", "vllm", "--request-rate", "0.5", NULL };
	cr_assert_eq(t_config_parse(&c, b), 0);
	ls_bench_peer_result_name(&c, "m", "D", name, sizeof(name));
	cr_expect_str_eq(name, "vllm-0.5qps-m-D.json");
	ls_config_free(&c);
	const char *d[] = { "--label", "x", NULL };
	cr_assert_eq(t_config_parse(&c, d), 0);
	ls_bench_peer_result_name(&c, "m", "D", name, sizeof(name));
	cr_expect_str_eq(name, "x-infqps-m-D.json");
	ls_config_free(&c);
}

/* argparse stores an nargs list: a repeated --metadata (--header, --lora-modules) keeps the last. */
Test(peer_cli, a_repeated_list_flag_keeps_the_last, .init = cr_redirect_stderr)
{
	struct ls_config c;
	const char *a[] = { "--metadata", "a=1", "b=2", "--header", "x-a=1", "--metadata", "c=3", "--header", "x-b=2",
			    "x-c=3", "--lora-modules", "l1", "l2", "--lora-modules", "l3", NULL };
	cr_assert_eq(t_config_parse(&c, a), 0, "%s", t_stderr_text());
	cr_assert_eq(c.peer.n_metadata, 1);
	cr_expect_str_eq(c.peer.metadata[0], "c=3");
	cr_expect_eq(c.peer.req.n_headers, 2);
	cr_assert_eq(c.peer.req.n_lora, 1);
	cr_expect_str_eq(c.peer.req.lora[0], "l3");
	ls_config_free(&c);
}

/* vLLM's default --percentile-metrics is ttft,tpot,itl; SGLang's line and latscope's rules keep E2EL. */
Test(peer_cli, default_percentile_metrics_are_the_harness_own, .init = cr_redirect_stderr)
{
	struct ls_config c;
	const char *a[] = { "--num-prompts", "5", NULL };
	cr_assert_eq(t_config_parse(&c, a), 0);
	cr_expect_eq(c.percentile_metrics, LS_PM_TTFT | LS_PM_TPOT | LS_PM_ITL);
	ls_config_free(&c);
	const char *b[] = { "--percentile-metrics", "e2el,ttft", NULL };
	cr_assert_eq(t_config_parse(&c, b), 0);
	cr_expect_eq(c.percentile_metrics, LS_PM_TTFT | LS_PM_E2EL);
	ls_config_free(&c);
	const char *d[] = { "--rules", "honest", NULL };
	cr_assert_eq(t_config_parse(&c, d), 0);
	cr_expect(c.percentile_metrics & LS_PM_E2EL);
	ls_config_free(&c);
	const char *e[] = { "--harness", "sglang", "--dataset-name", "random", NULL };
	cr_assert_eq(t_config_parse(&c, e), 0);
	cr_expect(c.percentile_metrics & LS_PM_E2EL);
	ls_config_free(&c);
}

/* SGLang's --lora-request-distribution: distinct is round robin from adapter 0, skewed draws
 * adapter k with weight alpha^-k (1.5 unless --lora-zipf-alpha), warmups name adapter 0. */
Test(peer_cli, sglang_lora_distributions, .init = cr_redirect_stderr)
{
	struct ls_config c;
	uint64_t rng[2];
	ls_rng_seed(rng, 3);
	const char *a[] = { "--harness", "sglang", "--dataset-name", "random", "--lora-name", "a", "b", "c",
			    "--lora-request-distribution", "distinct", NULL };
	cr_assert_eq(t_config_parse(&c, a), 0, "%s", t_stderr_text());
	for (size_t i = 0; i < 6; i++)
		cr_expect_str_eq(ls_request_extra_lora(&c.peer.req, i, 0, rng), c.peer.req.lora[i % 3]);
	ls_config_free(&c);
	const char *b[] = { "--harness", "sglang", "--dataset-name", "random", "--lora-name", "a", "b", "c",
			    "--lora-request-distribution", "skewed", "--lora-zipf-alpha", "2", NULL };
	cr_assert_eq(t_config_parse(&c, b), 0, "%s", t_stderr_text());
	size_t hits[3] = { 0 }, n = 70000;
	for (size_t i = 0; i < n; i++)
		hits[ls_request_extra_lora(&c.peer.req, i, 0, rng)[0] - 'a']++;
	const double want[3] = { 4.0 / 7, 2.0 / 7, 1.0 / 7 }; /* 1, 1/2, 1/4 normalised */
	for (int k = 0; k < 3; k++)
		cr_expect(fabs((double)hits[k] / (double)n - want[k]) < 0.01, "adapter %d: %zu of %zu, want %.3f", k,
			  hits[k], n, want[k]);
	cr_expect_str_eq(ls_request_extra_lora(&c.peer.req, 0, 1, rng), "a", "warmups use lora_names[0]");
	ls_config_free(&c);
	const char *d[] = { "--harness", "sglang", "--dataset-name", "random", "--lora-name", "a", "b",
			    "--lora-request-distribution", "skewed", NULL };
	cr_assert_eq(t_config_parse(&c, d), 0);
	cr_expect_float_eq(c.peer.req.lora_zipf_alpha, 1.5, 0);
	ls_config_free(&c);
	const char *e[] = { "--harness", "sglang", "--dataset-name", "random", "--lora-zipf-alpha", "1", NULL };
	cr_expect_eq(t_config_parse(&c, e), 2, "SGLang asserts alpha > 1");
	ls_config_free(&c);
	const char *f[] = { "--harness", "sglang", "--dataset-name", "random", "--lora-name", "a",
			    "--lora-request-distribution", "distinct", NULL };
	cr_expect_eq(t_config_parse(&c, f), 2, "SGLang asserts more than one adapter");
	ls_config_free(&c);
}

/* The newer lines: older names are taken, --num-prompts -1 reads the whole file, and what latscope
 * does not do yet is refused with one line saying what to pass instead. */
Test(peer_cli, newer_flags_taken_or_refused_with_what_to_pass, .init = cr_redirect_stderr)
{
	struct ls_config c;
	const char *a[] = { "--endpoint-type", "openai-chat", "--custom-skip-chat-template", "--dataset-name", "custom",
			    "--dataset-path", "x.jsonl", "--num-prompts", "-1", NULL };
	cr_assert_eq(t_config_parse(&c, a), 0, "%s", t_stderr_text());
	cr_expect_eq(c.profile.send.backend, LS_BACKEND_OPENAI_CHAT);
	cr_expect_str_eq(c.backend_name, "openai-chat");
	cr_expect_eq(c.num_prompts, 0, "0: every prompt of the file");
	ls_config_free(&c);
	const char *pr[] = { "--probe-request-rate", "2.5", NULL }; /* vLLM's float, probes per second */
	cr_assert_eq(t_config_parse(&c, pr), 0, "%s", t_stderr_text());
	cr_expect_eq(c.peer.probe_request_rate, 2.5);
	ls_config_free(&c);
	const char *tt[] = { "--dataset-name", "timed_trace", "--dataset-path", "t.jsonl", "--self-timed",
			     "--timed-trace-chunk-hash-size", "32", "--timed-trace-sec-multiplier", "0.001",
			     "--timed-trace-label-hash-ids", "blocks", NULL };
	cr_assert_eq(t_config_parse(&c, tt), 0, "%s", t_stderr_text());
	cr_expect_eq(c.dataset, LS_DATASET_TIMED_TRACE);
	cr_expect_eq(c.profile.send.arrival, LS_ARRIVAL_TRACE, "--self-timed: the trace's times");
	cr_expect_eq(c.profile.send.ignore_eos, 1, "vLLM sets ignore_eos for timed_trace");
	cr_expect_eq(c.datasets.timed_trace.chunk_hash_size, 32);
	cr_expect_eq(c.datasets.timed_trace.sec_multiplier, 0.001);
	cr_expect_str_eq(c.datasets.timed_trace_labels[3], "blocks");
	cr_expect_str_eq(c.datasets.timed_trace_labels[0], "timestamp");
	ls_config_free(&c);
	const char *tn[] = { "--dataset-name", "timed_trace", "--dataset-path", "t.jsonl", "--self-timed", "--no-self-timed",
			     NULL };
	cr_assert_eq(t_config_parse(&c, tn), 0, "%s", t_stderr_text());
	cr_expect_neq(c.profile.send.arrival, LS_ARRIVAL_TRACE, "--no-self-timed: --request-rate paces (vLLM's default)");
	ls_config_free(&c);
	const char *prn[] = { "--probe-request-rate", "-1", NULL };
	cr_expect_eq(t_config_parse(&c, prn), 2, "a negative rate is refused");
	ls_config_free(&c);
	const char *b[] = { "--num-prompts", "-1", NULL }; /* random: nothing to take whole */
	cr_expect_eq(t_config_parse(&c, b), 2);
	ls_config_free(&c);
	const char *d[] = { "--num-prompts", "-2", NULL };
	cr_expect_eq(t_config_parse(&c, d), 2);
	ls_config_free(&c);
	const char *resp[] = { "--backend", "openai-responses", NULL }; /* vLLM's /v1/responses */
	cr_assert_eq(t_config_parse(&c, resp), 0, "%s", t_stderr_text());
	cr_expect_eq(c.profile.send.backend, LS_BACKEND_OPENAI_RESPONSES);
	cr_expect_str_eq(ls_backend_default_endpoint(c.profile.send.backend), "/v1/responses");
	ls_config_free(&c);
	char *err = t_stderr_text();
	cr_expect(!strstr(err, "unknown flag"), "%s", err);
}

Test(peer_cli, sglang_pd_separated_sends_to_the_router_and_skips_the_profiler, .init = cr_redirect_stderr)
{
	struct ls_config c;
	const char *a[] = { "--harness", "sglang", "--dataset-name", "random", "--pd-separated", "--profile", NULL };
	cr_assert_eq(t_config_parse(&c, a), 0, "%s", t_stderr_text());
	cr_expect_eq(c.peer.server_profile, 0, "SGLang skips the profiler without worker URLs");
	ls_config_free(&c);
	cr_expect(strstr(t_stderr_text(), "--pd-separated: requests go to --base-url"));
	const char *b[] = { "--harness", "sglang", "--dataset-name", "random", "--pd-separated", "--profile",
			    "--profile-prefill-url", "http://p0", "http://p1", "--profile-decode-url", "http://d0", NULL };
	cr_assert_eq(t_config_parse(&c, b), 0, "%s", t_stderr_text());
	cr_expect_eq(c.peer.server_profile, 1, "the workers' URLs are profiled");
	cr_expect_eq(c.peer.pd_separated, 1);
	cr_expect_eq(c.peer.n_prefill_urls, 2);
	cr_expect_eq(c.peer.n_decode_urls, 1);
	ls_config_free(&c);
	const char *d[] = { "--harness", "sglang", "--dataset-name", "random", "--profile-decode-url", "d0", NULL };
	cr_expect_eq(t_config_parse(&c, d), 2, "a URL, not a name");
	ls_config_free(&c);
}
