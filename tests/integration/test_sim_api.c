/* test_sim_api.c — `latscope sim` endpoints over real sockets: stream shapes (OpenAI completions
 * and chat, SGLang /generate), usage frame, [DONE], token-id prompts, tokenize round trip,
 * /metrics, /server_info, /v1/models, /health, errors (400/404/413/431), keep-alive, truth. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "base/opts.h"
#include "sim/sim.h"
#include "t_helpers.h"
#include "test_sim_client.h"

static struct t_sim sim;

static void start(const char *const *extra)
{
	cr_assert_eq(t_sim_start(&sim, 0, extra), 0, "latscope sim did not start");
}

static void stop(void)
{
	t_sim_stop(&sim);
}

static cJSON *event_json(const struct t_resp *r, size_t i)
{
	cr_assert_lt(i, r->n_events);
	cJSON *o = cJSON_Parse(r->events[i].data);
	cr_assert(o, "frame %zu is not JSON: %s", i, r->events[i].data);
	return o;
}

static cJSON *post_json(const char *path, const char *body)
{
	struct t_resp r;
	t_request(sim.port, "POST", path, NULL, body, &r, 5000);
	cr_assert_eq(r.status, 200, "%s -> %d: %s", path, r.status, r.body ? r.body : "");
	cJSON *o = cJSON_Parse(r.body);
	cr_assert(o, "%s answered non-JSON: %s", path, r.body);
	t_resp_free(&r);
	return o;
}

static double metric(const char *text, const char *name)
{
	char key[128];
	snprintf(key, sizeof(key), "\n%s{", name);
	const char *p = strstr(text, key);
	cr_assert(p, "metric %s missing", name);
	p = strchr(p + 1, '}');
	return strtod(p + 1, NULL);
}

TestSuite(sim_api, .init = NULL, .fini = stop, .timeout = 60);

Test(sim_api, completions_stream_shape_usage_and_done)
{
	start(NULL);
	struct t_resp r;
	t_request(sim.port, "POST", "/v1/completions", "X-Request-Id: shape-1\r\n",
		    "{\"model\":\"m\",\"prompt\":\"the quick brown fox\",\"max_tokens\":5,\"ignore_eos\":true,"
		    "\"stream\":true,\"stream_options\":{\"include_usage\":true}}", &r, 5000);
	cr_assert_eq(r.status, 200);
	cr_assert(strstr(r.head, "text/event-stream"));
	cr_assert(r.chunked && r.saw_last_chunk);
	cr_assert_eq(r.n_events, 7, "5 token frames + usage + [DONE], got %zu", r.n_events);
	for (int i = 0; i < 5; i++) {
		cJSON *o = event_json(&r, (size_t)i);
		cJSON *ch = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0);
		cr_assert(cJSON_IsString(cJSON_GetObjectItem(ch, "text")));
		cJSON *fr = cJSON_GetObjectItem(ch, "finish_reason");
		if (i < 4)
			cr_expect(cJSON_IsNull(fr));
		else
			cr_expect_str_eq(fr->valuestring, "length");
		cr_expect_str_eq(cJSON_GetObjectItem(o, "id")->valuestring, "cmpl-shape-1");
		cJSON_Delete(o);
	}
	cJSON *u = event_json(&r, 5);
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(u, "choices")), 0);
	cJSON *usage = cJSON_GetObjectItem(u, "usage");
	cr_expect_eq(cJSON_GetObjectItem(usage, "completion_tokens")->valueint, 5);
	cJSON *tok = post_json("/tokenize", "{\"prompt\":\"the quick brown fox\"}");
	cr_expect_eq(cJSON_GetObjectItem(usage, "prompt_tokens")->valueint, cJSON_GetObjectItem(tok, "count")->valueint);
	cJSON_Delete(tok);
	cJSON_Delete(u);
	cr_expect_str_eq(r.events[6].data, "[DONE]");
	t_resp_free(&r);
}

Test(sim_api, truth_line_matches_the_stream)
{
	const char *extra[] = { "--step-ms", "2", NULL };
	start(extra);
	struct t_resp r;
	t_request(sim.port, "POST", "/v1/completions", "X-Request-Id: truth-1\r\n",
		    "{\"prompt\":\"hello\",\"max_tokens\":6,\"ignore_eos\":true,\"stream\":true}", &r, 5000);
	cr_assert_eq(r.status, 200);
	size_t frames = r.n_events;
	t_resp_free(&r);
	setenv("T_KEEP", "1", 1);
	t_sim_stop(&sim);
	unsetenv("T_KEEP");
	cJSON **lines;
	int n = t_truth_lines(sim.truth, &lines);
	unlink(sim.truth);
	cr_assert_eq(n, 1);
	cJSON *l = lines[0];
	cr_expect_str_eq(cJSON_GetObjectItem(l, "id")->valuestring, "truth-1");
	cr_expect_gt(cJSON_GetObjectItem(l, "conn")->valuedouble, 0);
	double received = cJSON_GetObjectItem(l, "received")->valuedouble;
	double admitted = cJSON_GetObjectItem(l, "admitted")->valuedouble;
	double finished = cJSON_GetObjectItem(l, "finished")->valuedouble;
	cr_expect(received > 0 && admitted >= received && finished >= admitted);
	cr_expect_str_eq(cJSON_GetObjectItem(l, "reason")->valuestring, "length");
	cr_expect_eq(cJSON_GetObjectItem(l, "completion_tokens")->valueint, 6);
	cJSON *steps = cJSON_GetObjectItem(l, "steps");
	cr_expect_eq(cJSON_GetArraySize(steps), 6);
	int sum = 0;
	cJSON *s;
	cJSON_ArrayForEach(s, steps) {
		cr_expect_leq(cJSON_GetObjectItem(s, "start")->valuedouble, cJSON_GetObjectItem(s, "end")->valuedouble);
		sum += cJSON_GetObjectItem(s, "tokens")->valueint;
	}
	cr_expect_eq(sum, 6);
	cr_expect_gt(cJSON_GetObjectItem(cJSON_GetArrayItem(steps, 0), "prefill_tokens")->valueint, 0);
	cJSON *fr = cJSON_GetObjectItem(l, "frames");
	cr_expect_eq((size_t)cJSON_GetArraySize(fr), frames, "truth frames = client frames");
	cJSON *f = cJSON_GetArrayItem(fr, 0);
	cr_expect_gt(cJSON_GetObjectItem(f, "bytes")->valueint, 0);
	cr_expect_eq(cJSON_GetObjectItem(f, "tokens")->valueint, 1);
	cr_expect_gt(cJSON_GetObjectItem(f, "t")->valuedouble, admitted);
	t_truth_lines_free(lines, n);
}

Test(sim_api, chat_stream_shape)
{
	start(NULL);
	struct t_resp r;
	t_request(sim.port, "POST", "/v1/chat/completions", NULL,
		    "{\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},{\"role\":\"user\",\"content\":\"hi\"}],"
		    "\"max_tokens\":4,\"ignore_eos\":true,\"stream\":true,\"stream_options\":{\"include_usage\":true}}",
		    &r, 5000);
	cr_assert_eq(r.status, 200);
	cr_assert_eq(r.n_events, 7, "role + 4 content + usage + [DONE], got %zu", r.n_events);
	cJSON *o = event_json(&r, 0);
	cJSON *delta = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0), "delta");
	cr_expect_str_eq(cJSON_GetObjectItem(delta, "role")->valuestring, "assistant");
	cr_expect_str_eq(cJSON_GetObjectItem(o, "object")->valuestring, "chat.completion.chunk");
	cJSON_Delete(o);
	for (int i = 1; i <= 4; i++) {
		o = event_json(&r, (size_t)i);
		cJSON *ch = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0);
		cr_expect(cJSON_IsString(cJSON_GetObjectItem(cJSON_GetObjectItem(ch, "delta"), "content")));
		cJSON *fr = cJSON_GetObjectItem(ch, "finish_reason");
		cr_expect(i < 4 ? cJSON_IsNull(fr) : cJSON_IsString(fr));
		cJSON_Delete(o);
	}
	o = event_json(&r, 5);
	cr_expect_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "usage"), "completion_tokens")->valueint, 4);
	cJSON_Delete(o);
	cr_expect_str_eq(r.events[6].data, "[DONE]");
	t_resp_free(&r);
}

static void check_generate(const char *body, int want_tokens, int want_prompt)
{
	struct t_resp r;
	t_request(sim.port, "POST", "/generate", NULL, body, &r, 5000);
	cr_assert_eq(r.status, 200, "%s", r.body ? r.body : "");
	cr_assert_eq(r.n_events, (size_t)want_tokens + 1, "one frame per token + [DONE], got %zu", r.n_events);
	char prev[4096] = "";
	for (int i = 0; i < want_tokens; i++) {
		cJSON *o = event_json(&r, (size_t)i);
		const char *text = cJSON_GetObjectItem(o, "text")->valuestring;
		cr_expect(!strncmp(text, prev, strlen(prev)), "text is cumulative");
		snprintf(prev, sizeof(prev), "%s", text);
		cJSON *mi = cJSON_GetObjectItem(o, "meta_info");
		cr_expect_eq(cJSON_GetObjectItem(mi, "completion_tokens")->valueint, i + 1);
		if (want_prompt > 0)
			cr_expect_eq(cJSON_GetObjectItem(mi, "prompt_tokens")->valueint, want_prompt);
		cJSON *fr = cJSON_GetObjectItem(mi, "finish_reason");
		if (i < want_tokens - 1) {
			cr_expect(cJSON_IsNull(fr));
		} else {
			cr_expect_str_eq(cJSON_GetObjectItem(fr, "type")->valuestring, "length");
		}
		cJSON_Delete(o);
	}
	cr_expect_str_eq(r.events[want_tokens].data, "[DONE]");
	t_resp_free(&r);
}

Test(sim_api, generate_stream_shape_text_and_input_ids)
{
	start(NULL);
	check_generate("{\"text\":\"hello there\",\"sampling_params\":{\"max_new_tokens\":5,\"ignore_eos\":true},"
		       "\"stream\":true}", 5, -1);
	check_generate("{\"input_ids\":[258,259,260,261],\"sampling_params\":{\"max_new_tokens\":3,\"ignore_eos\":true},"
		       "\"stream\":true}", 3, 4);
}

Test(sim_api, token_id_prompt_and_non_streaming)
{
	start(NULL);
	cJSON *o = post_json("/v1/completions", "{\"prompt\":[258,259,260,261,262,263,264],\"max_tokens\":3,\"ignore_eos\":true}");
	cJSON *usage = cJSON_GetObjectItem(o, "usage");
	cr_expect_eq(cJSON_GetObjectItem(usage, "prompt_tokens")->valueint, 7);
	cr_expect_eq(cJSON_GetObjectItem(usage, "completion_tokens")->valueint, 3);
	cJSON *ch = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0);
	cr_expect(cJSON_IsString(cJSON_GetObjectItem(ch, "text")));
	cr_expect_str_eq(cJSON_GetObjectItem(ch, "finish_reason")->valuestring, "length");
	cJSON_Delete(o);
	o = post_json("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":2,\"ignore_eos\":true}");
	cr_expect_str_eq(cJSON_GetObjectItem(o, "object")->valuestring, "chat.completion");
	cJSON_Delete(o);
}

Test(sim_api, tokenize_round_trip)
{
	start(NULL);
	const char *text = "The quick brown fox jumps over the lazy dog. 123 \\u00e9t\\u00e9!";
	char body[256];
	snprintf(body, sizeof(body), "{\"prompt\":\"%s\"}", text);
	cJSON *tok = post_json("/tokenize", body);
	cJSON *ids = cJSON_GetObjectItem(tok, "tokens");
	cr_assert(cJSON_IsArray(ids));
	cr_expect_eq(cJSON_GetArraySize(ids), cJSON_GetObjectItem(tok, "count")->valueint);
	cr_expect_lt(cJSON_GetArraySize(ids), 30, "words are single tokens");
	cJSON *req = cJSON_CreateObject();
	cJSON_AddItemToObject(req, "tokens", cJSON_Duplicate(ids, 1));
	char *s = cJSON_PrintUnformatted(req);
	cJSON *detok = post_json("/detokenize", s);
	cr_expect_str_eq(cJSON_GetObjectItem(detok, "prompt")->valuestring,
			 "The quick brown fox jumps over the lazy dog. 123 \xc3\xa9t\xc3\xa9!");
	free(s);
	cJSON_Delete(req);
	cJSON_Delete(detok);
	cJSON_Delete(tok);
}

Test(sim_api, metrics_count_tokens_and_requests)
{
	const char *extra[] = { "--step-ms", "1", NULL };
	start(extra);
	struct t_resp r;
	for (int i = 0; i < 3; i++) {
		t_request(sim.port, "POST", "/v1/completions", NULL,
			    "{\"prompt\":[258,259,260,261,262],\"max_tokens\":4,\"ignore_eos\":true,\"stream\":true}", &r, 5000);
		cr_assert_eq(r.status, 200);
		t_resp_free(&r);
	}
	t_request(sim.port, "GET", "/metrics", NULL, NULL, &r, 5000);
	cr_assert_eq(r.status, 200);
	cr_expect_eq(metric(r.body, "vllm:generation_tokens_total"), 12);
	cr_expect_eq(metric(r.body, "vllm:prompt_tokens_total"), 15);
	cr_expect_eq(metric(r.body, "vllm:num_requests_running"), 0);
	cr_expect_eq(metric(r.body, "vllm:num_requests_waiting"), 0);
	cr_expect_eq(metric(r.body, "vllm:spec_decode_num_drafts_total"), 0);
	cr_expect_eq(metric(r.body, "vllm:spec_decode_num_draft_tokens_total"), 0);
	cr_expect_eq(metric(r.body, "vllm:spec_decode_num_accepted_tokens_total"), 0);
	t_resp_free(&r);
}

Test(sim_api, server_info_models_health)
{
	const char *extra[] = { "--model", "my-model", NULL };
	start(extra);
	struct t_resp r;
	t_request(sim.port, "GET", "/server_info", NULL, NULL, &r, 5000);
	cr_assert_eq(r.status, 200);
	cJSON *o = cJSON_Parse(r.body);
	cJSON *st = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "internal_states"), 0);
	cr_expect(cJSON_IsNumber(cJSON_GetObjectItem(st, "avg_spec_accept_length")));
	cJSON_Delete(o);
	t_resp_free(&r);
	t_request(sim.port, "GET", "/v1/models", NULL, NULL, &r, 5000);
	o = cJSON_Parse(r.body);
	cr_expect_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "data"), 0), "id")->valuestring,
			 "my-model");
	cJSON_Delete(o);
	t_resp_free(&r);
	t_request(sim.port, "GET", "/health", NULL, NULL, &r, 5000);
	cr_expect_eq(r.status, 200);
	t_resp_free(&r);
	t_request(sim.port, "POST", "/flush_cache", NULL, "", &r, 5000);
	cr_expect_eq(r.status, 200);
	t_resp_free(&r);
}

static void expect_error(const struct t_resp *r, int status)
{
	cr_expect_eq(r->status, status, "want %d, got %d (%s)", status, r->status, r->head ? r->head : "no head");
	cJSON *o = cJSON_Parse(r->body ? r->body : "");
	cr_expect(o && cJSON_IsString(cJSON_GetObjectItem(o, "message")), "error body is JSON with a message");
	cJSON_Delete(o);
}

Test(sim_api, errors_400_404_413_431)
{
	const char *extra[] = { "--max-body-bytes", "1000", NULL };
	start(extra);
	struct t_resp r;
	t_request(sim.port, "POST", "/v1/completions", NULL, "{not json", &r, 5000);
	expect_error(&r, 400);
	t_resp_free(&r);
	t_request(sim.port, "POST", "/v1/completions", NULL, "{\"prompt\":\"x\",\"max_tokens\":0}", &r, 5000);
	expect_error(&r, 400);
	t_resp_free(&r);
	t_request(sim.port, "POST", "/v1/completions", NULL, "{\"prompt\":[99999]}", &r, 5000);
	expect_error(&r, 400);
	t_resp_free(&r);
	/* numbers no integer holds: 400, not a cast out of range */
	const char *huge[] = { "{\"prompt\":\"x\",\"max_tokens\":1e300}", "{\"prompt\":\"x\",\"max_tokens\":-1e300}",
			       "{\"prompt\":\"x\",\"max_tokens\":1e999}", "{\"prompt\":[1e300]}" };
	for (size_t i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
		t_request(sim.port, "POST", "/v1/completions", NULL, huge[i], &r, 5000);
		expect_error(&r, 400);
		t_resp_free(&r);
	}
	t_request(sim.port, "POST", "/detokenize", NULL, "{\"tokens\":[1e300,-1e999]}", &r, 5000);
	expect_error(&r, 400);
	t_resp_free(&r);
	t_request(sim.port, "GET", "/nope", NULL, NULL, &r, 5000);
	expect_error(&r, 404);
	t_resp_free(&r);
	char *big = malloc(2001);
	memset(big, 'a', 2000);
	big[2000] = 0;
	t_request(sim.port, "POST", "/v1/completions", NULL, big, &r, 5000);
	expect_error(&r, 413);
	t_resp_free(&r);
	free(big);
	size_t hn = 20000;
	char *hdr = malloc(hn + 32);
	strcpy(hdr, "X-Big: ");
	memset(hdr + 7, 'b', hn);
	strcpy(hdr + 7 + hn, "\r\n");
	t_request(sim.port, "GET", "/health", hdr, NULL, &r, 5000);
	expect_error(&r, 431);
	t_resp_free(&r);
	free(hdr);
	const char bad_line[] = "GARBAGE\r\n\r\n";
	t_raw(sim.port, bad_line, sizeof(bad_line) - 1, &r, 5000);
	expect_error(&r, 400);
	t_resp_free(&r);
	const char nul[] = "GET /he\0lth HTTP/1.1\r\n\r\n";
	t_raw(sim.port, nul, sizeof(nul) - 1, &r, 5000);
	expect_error(&r, 400);
	t_resp_free(&r);
	t_request(sim.port, "GET", "/health", NULL, NULL, &r, 5000);
	cr_expect_eq(r.status, 200, "still serving after bad input");
	t_resp_free(&r);
}

Test(sim_api, keep_alive_serves_requests_in_turn)
{
	const char *extra[] = { "--step-ms", "1", NULL };
	start(extra);
	int fd = t_connect(sim.port);
	cr_assert_geq(fd, 0);
	struct t_resp r;
	const char *body = "{\"prompt\":\"a\",\"max_tokens\":3,\"ignore_eos\":true,\"stream\":true}";
	for (int i = 0; i < 3; i++) {
		t_exchange(fd, "POST", "/v1/completions", NULL, body, &r, 5000);
		cr_assert_eq(r.status, 200);
		cr_expect_eq(r.end, T_COMPLETE, "the connection stays open");
		cr_expect_eq(r.n_events, 4);
		t_resp_free(&r);
	}
	t_exchange(fd, "POST", "/tokenize", NULL, "{oops", &r, 5000);
	cr_expect_eq(r.status, 400);
	t_resp_free(&r);
	t_exchange(fd, "GET", "/health", NULL, NULL, &r, 5000);
	cr_expect_eq(r.status, 200, "a JSON error keeps the connection");
	t_resp_free(&r);
	close(fd);
	/* pipelined: two requests in one write */
	char raw[512];
	int n = snprintf(raw, sizeof(raw),
			 "POST /v1/completions HTTP/1.1\r\nContent-Length: %zu\r\n\r\n%s"
			 "POST /v1/completions HTTP/1.1\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n%s",
			 strlen(body), body, strlen(body), body);
	t_raw(sim.port, raw, (size_t)n, &r, 5000);
	cr_expect_eq(r.status, 200);
	t_resp_free(&r);
	setenv("T_KEEP", "1", 1);
	t_sim_stop(&sim);
	unsetenv("T_KEEP");
	cJSON **lines;
	int nl = t_truth_lines(sim.truth, &lines);
	unlink(sim.truth);
	cr_assert_eq(nl, 5, "3 kept-alive + 2 pipelined requests, got %d", nl);
	int conn0 = cJSON_GetObjectItem(lines[0], "conn")->valueint;
	cr_expect_eq(cJSON_GetObjectItem(lines[2], "conn")->valueint, conn0, "same connection id");
	cr_expect_eq(cJSON_GetObjectItem(lines[3], "conn")->valueint, cJSON_GetObjectItem(lines[4], "conn")->valueint);
	cr_expect_neq(cJSON_GetObjectItem(lines[3], "conn")->valueint, conn0);
	t_truth_lines_free(lines, nl);
}

Test(sim_api, sigterm_exits_zero_with_truth_flushed)
{
	const char *extra[] = { "--fail-rate", "1", "--fail-kind", "stall", NULL };
	start(extra);
	int fd = t_connect(sim.port);
	struct t_resp r;
	t_exchange(fd, "POST", "/v1/completions", "X-Request-Id: stalled\r\n",
		     "{\"prompt\":\"a\",\"max_tokens\":50,\"ignore_eos\":true,\"stream\":true}", &r, 300);
	cr_expect_eq(r.end, T_TIMEOUT);
	t_resp_free(&r);
	kill(sim.pid, SIGTERM);
	int status = -1;
	cr_assert_eq(waitpid(sim.pid, &status, 0), sim.pid);
	sim.pid = 0;
	close(fd);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "exit 0 on SIGTERM");
	cJSON **lines;
	int n = t_truth_lines(sim.truth, &lines);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(cJSON_GetObjectItem(lines[0], "id")->valuestring, "stalled");
	cr_expect_str_eq(cJSON_GetObjectItem(lines[0], "reason")->valuestring, "stall");
	cr_expect(cJSON_IsNumber(cJSON_GetObjectItem(lines[0], "failed")));
	t_truth_lines_free(lines, n);
}

Test(sim_api, help_and_bad_flags)
{
	char *out = NULL, *err = NULL;
	const char *help[] = { "sim", "--help", NULL };
	cr_assert_eq(t_run(help, &out, NULL, 10), 0);
	const char *flags[] = { "--host", "--port", "--truth", "--seed", "--step-ms", "--decode-token-us",
				"--prefill-token-us", "--max-batch", "--max-batch-tokens", "--prefix-cache",
				"--accept-len", "--num-spec-tokens", "--accept-dist", "--empty-frame-every", "--api-frame-us",
				"--fail-rate", "--fail-kind", "--tls", "--tls-cert", "--tls-key", "--tls-max",
				"--gpu", "--gpu-lib", "--max-header-bytes", "--max-body-bytes", NULL };
	size_t n_opts = 0;
	const struct ls_opt *opts = sim_opts(&n_opts);
	cr_assert_gt(n_opts, 20);
	for (int i = 0; flags[i]; i++) {
		cr_expect(strstr(out, flags[i]), "--help lacks %s", flags[i]);
		size_t k = 0;
		while (k < n_opts && strcmp(opts[k].name, flags[i] + 2))
			k++;
		cr_expect_lt(k, n_opts, "the flag table lacks %s", flags[i]);
	}
	/* Every entry of the real table: "--name METAVAR" and the first line of its help in --help,
	 * each name once, a short form only for a flag that has a long one. */
	for (size_t k = 0; k < n_opts; k++) {
		const struct ls_opt *o = &opts[k];
		for (size_t j = k + 1; j < n_opts; j++)
			cr_expect_neq(strcmp(o->name, opts[j].name), 0, "--%s is in the table twice", o->name);
		if (strlen(o->name) == 1) {
			size_t j = 0;
			while (j < n_opts && (strlen(opts[j].name) == 1 || opts[j].id != o->id))
				j++;
			cr_expect_lt(j, n_opts, "-%s is the short form of no flag", o->name);
			char shown[16];
			snprintf(shown, sizeof(shown), "-%s, --", o->name);
			cr_expect(strstr(out, shown), "--help lacks %s", shown);
			continue;
		}
		char shown[96], first[256];
		snprintf(shown, sizeof(shown), "--%s%s%s", o->name, o->metavar ? " " : "", o->metavar ? o->metavar : "");
		const char *at = strstr(out, shown);
		cr_expect(at && (at[strlen(shown)] == ' ' || at[strlen(shown)] == '\n'), "--help lacks \"%s\"", shown);
		cr_assert(o->help && o->help[0], "--%s has no help text", o->name);
		snprintf(first, sizeof(first), "%.*s", (int)strcspn(o->help, "\n"), o->help);
		cr_expect(at && strstr(at, first), "--help lacks the help of --%s: %s", o->name, first);
	}
	free(out);
	const char *bad[][4] = { { "sim", "--bogus", NULL }, { "sim", "--step-ms", "abc", NULL },
				 { "sim", "--fail-kind", "explode", NULL }, { "sim", "--tls-max", "1.1", NULL },
				 { "sim", "--port", NULL } };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err = NULL;
		cr_expect_eq(t_run(bad[i], NULL, &err, 10), 2, "%s %s", bad[i][1], bad[i][2] ? bad[i][2] : "");
		cr_expect(err && strstr(err, bad[i][1]), "the error names %s: %s", bad[i][1], err ? err : "");
		cr_expect(err && strchr(err, '\n') == err + strlen(err) - 1, "one line: %s", err ? err : "");
		free(err);
	}
}

Test(sim_api, gpu_without_library_is_one_clear_line)
{
	char *err = NULL;
	const char *argv[] = { "sim", "--port", "1", "--gpu", "--gpu-lib", "/nonexistent/libx.so", NULL };
	cr_expect_eq(t_run(argv, NULL, &err, 10), 1);
	cr_expect(err && strstr(err, "/nonexistent/libx.so"), "%s", err ? err : "");
	free(err);
}

Test(sim_api, http_1_0_stream_ends_at_close)
{
	const char *extra[] = { "--step-ms", "1", NULL };
	start(extra);
	const char body[] = "{\"prompt\":\"a\",\"max_tokens\":3,\"ignore_eos\":true,\"stream\":true}";
	char raw[256];
	int n = snprintf(raw, sizeof(raw), "POST /v1/completions HTTP/1.0\r\nContent-Length: %zu\r\n\r\n%s",
			 strlen(body), body);
	struct t_resp r;
	t_raw(sim.port, raw, (size_t)n, &r, 5000);
	cr_expect_eq(r.status, 200);
	cr_expect(!r.chunked, "no chunked encoding for HTTP/1.0");
	cr_expect_eq(r.end, T_EOF);
	cr_expect(r.body && strstr(r.body, "data: [DONE]\n\n"), "%s", r.body ? r.body : "");
	t_resp_free(&r);
}

Test(sim_api, random_bytes_never_kill_the_server)
{
	const char *extra[] = { "--step-ms", "1", NULL };
	start(extra);
	uint64_t x = 99;
	char buf[600];
	const char *seeds[] = { "POST /v1/completions HTTP/1.1\r\nContent-Length: 40\r\n\r\n{\"prompt\":",
				"GET /metrics HTTP/1.1\r\n", "POST /generate HTTP/1.1\r\nContent-Length: 5\r\n\r\n" };
	for (int i = 0; i < 150; i++) {
		size_t len = (size_t)snprintf(buf, sizeof(buf), "%s", seeds[i % 3]);
		size_t want = len + (size_t)(i * 7 % 300);
		for (; len < want; len++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			buf[len] = (char)(x >> 56);
		}
		struct t_resp r;
		t_raw(sim.port, buf, len, &r, 20);
		t_resp_free(&r);
	}
	struct t_resp r;
	t_request(sim.port, "POST", "/v1/completions", NULL, "{\"prompt\":\"a\",\"max_tokens\":2,\"stream\":true}", &r, 5000);
	cr_expect_eq(r.status, 200, "still serving");
	t_resp_free(&r);
	cr_expect_eq(kill(sim.pid, 0), 0, "the simulator is alive");
}
