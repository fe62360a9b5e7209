/* bench flags, --config JSON, profile defaults and their precedence. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "config/config.h"
#include "t_unit.h"

Test(config, defaults_follow_vllm)
{
	struct ls_config c;
	const char *args[] = { NULL };
	cr_assert_eq(t_config_parse(&c, args), 0);
	cr_expect_eq(c.profile.send.backend, LS_BACKEND_OPENAI);
	cr_expect_eq(c.num_prompts, 1000);
	cr_expect(isinf(c.request_rate));
	cr_expect_eq(c.random_input_len, 1024);
	cr_expect_eq(c.random_output_len, 128);
	cr_expect_eq(c.profile.send.arrival, LS_ARRIVAL_GAMMA);
	cr_expect_eq(c.profile.send.range_semantics, LS_RANGE_VLLM);
	cr_expect_str_eq(c.profile.name, "vllm");
	cr_expect_eq(c.profile.read.n_percentiles, 1);
	cr_expect(c.profile.read.percentiles[0] == 99);
	char *url = ls_config_url(&c);
	cr_expect_str_eq(url, "http://127.0.0.1:8000/v1/completions");
	free(url);
	ls_config_free(&c);
}

Test(config, flags_with_vllm_names)
{
	struct ls_config c;
	const char *args[] = { "--backend", "sglang", "--base-url", "http://h:9/", "--model=m", "--num-prompts", "500",
			       "--request-rate", "20", "--burstiness", "0.5", "--max-concurrency", "4", "--seed", "7",
			       "--ignore-eos", "--metric-percentiles", "50,90,99", "--percentile-metrics", "ttft,itl",
			       "--goodput", "ttft:900", "e2el:14100", "--random-range-ratio", "0.25",
			       "--connection", "per-request", "--record", "/tmp/r.jsonl", "--server-pid", "123",
			       "--probes", "off", "--gpu-dir", "/tmp/g", "--trace", "t.json", "--server-comm", "vllm",
			       "--test-loop-delay-us", "50", "--disable-tqdm", "--save-result", "--busy-poll", "--spin-us", "40",
			       "--preconnect", "8", NULL };
	cr_assert_eq(t_config_parse(&c, args), 0);
	cr_expect_eq(c.profile.send.backend, LS_BACKEND_SGLANG);
	char *url = ls_config_url(&c);
	cr_expect_str_eq(url, "http://h:9/generate");
	free(url);
	cr_expect_str_eq(c.model, "m");
	cr_expect_eq(c.num_prompts, 500);
	cr_expect(c.request_rate == 20 && c.burstiness == 0.5);
	cr_expect_eq(c.max_concurrency, 4);
	cr_expect_eq(c.seed, 7);
	cr_expect(c.profile.send.ignore_eos && c.disable_tqdm && c.save_result && c.busy_poll);
	cr_expect_eq(c.spin_us, 40);
	cr_expect_eq(c.preconnect, 8);
	cr_expect_eq(c.profile.read.n_percentiles, 3);
	cr_expect_eq(c.percentile_metrics, LS_PM_TTFT | LS_PM_ITL);
	cr_expect(c.goodput.has_ttft && c.goodput.ttft_ms == 900 && c.goodput.has_e2el && c.goodput.e2el_ms == 14100);
	cr_expect(c.random_range_ratio == 0.25);
	cr_expect(c.profile.send.per_request_conn);
	cr_expect_str_eq(c.record_path, "/tmp/r.jsonl");
	cr_expect_eq(c.n_server_pids, 1);
	cr_expect_eq(c.server_pids[0], 123);
	cr_expect_eq(c.probes, LS_PROBES_OFF);
	cr_expect_str_eq(c.gpu_dir, "/tmp/g");
	cr_expect_str_eq(c.trace_path, "t.json");
	cr_expect_str_eq(c.server_comm, "vllm");
	cr_expect_eq(c.loop_delay_ns, 50000);
	ls_config_free(&c);
}

Test(config, profile_sets_send_defaults_flags_win)
{
	struct ls_config c;
	const char *sg[] = { "--profile", "sglang", NULL };
	cr_assert_eq(t_config_parse(&c, sg), 0);
	cr_expect_eq(c.profile.send.arrival, LS_ARRIVAL_POISSON_YIELD);
	cr_expect(c.profile.send.per_request_conn);
	cr_expect_eq(c.profile.send.range_semantics, LS_RANGE_SGLANG);
	cr_expect_eq(c.profile.send.warmup_shape, LS_WARMUP_SGLANG);
	cr_expect_eq(c.profile.send.num_warmups, 1);
	cr_expect_eq(c.profile.read.itl_mode, LS_ITL_TOKEN);
	ls_config_free(&c);

	const char *over[] = { "--arrival", "gamma", "--profile", "sglang", "--connection", "reuse",
			       "--num-warmups", "0", "--random-range-semantics", "vllm", NULL };
	cr_assert_eq(t_config_parse(&c, over), 0);
	cr_expect_eq(c.profile.send.arrival, LS_ARRIVAL_GAMMA, "a flag beats the profile wherever it stands");
	cr_expect(!c.profile.send.per_request_conn);
	cr_expect_eq(c.profile.send.num_warmups, 0);
	cr_expect_eq(c.profile.send.range_semantics, LS_RANGE_VLLM);
	ls_config_free(&c);

	const char *honest[] = { "--profile", "honest", NULL };
	cr_assert_eq(t_config_parse(&c, honest), 0);
	cr_expect_eq(c.profile.read.origin, LS_ORIGIN_SCHEDULED);
	ls_config_free(&c);
}

/* `latscope compare` parses its flags once, under its first profile, and sends each other
 * profile's rules with the flags (and the config file) over them. */
Test(config, send_rules_of_another_profile, .init = cr_redirect_stderr)
{
	struct ls_profile vllm, sglang;
	cr_assert_eq(ls_profile_builtin("vllm", &vllm), 0);
	cr_assert_eq(ls_profile_builtin("sglang", &sglang), 0);
	char *argv[] = { "bench", "--profile", "nosuch", "--arrival", "gamma", "--num-warmups", "0",
			 "--ignore-eos=false", NULL };
	struct ls_config c;
	cr_assert_eq(ls_config_parse_with(&c, 8, argv, &vllm), 0, "the given profile, not --profile's");
	cr_expect_str_eq(c.profile.name, "vllm");
	cr_expect_eq(c.profile.send.arrival, LS_ARRIVAL_GAMMA);
	struct ls_send_rules s;
	ls_config_send_rules(&c, &sglang, &s);
	cr_expect_eq(s.arrival, LS_ARRIVAL_GAMMA, "the flag");
	cr_expect_eq(s.num_warmups, 0);
	cr_expect(!s.ignore_eos);
	cr_expect(s.per_request_conn, "sglang's own");
	cr_expect_eq(s.backend, LS_BACKEND_SGLANG);
	cr_expect_eq(s.range_semantics, LS_RANGE_SGLANG);
	cr_expect_eq(s.warmup_shape, LS_WARMUP_SGLANG);
	cr_expect_eq(ls_config_check(&c, &s), 0);
	ls_config_free(&c);

	/* A ratio of 1 (SGLang's "exact length") is accepted under either profile: under vLLM's
	 * semantics the dataset reads it as SGLang's and says so (cmd/bench_dataset.c). */
	char *ratio[] = { "bench", "--random-range-ratio", "1", NULL };
	cr_assert_eq(ls_config_parse_with(&c, 3, ratio, &sglang), 0);
	ls_config_send_rules(&c, &vllm, &s);
	cr_expect_eq(s.range_semantics, LS_RANGE_VLLM);
	cr_expect_eq(ls_config_check(&c, &s), 0, "accepted without --random-range-semantics");
	ls_config_free(&c);
}

static char *write_tmp(const char *content)
{
	char *path = strdup("/tmp/latscope-cfg-XXXXXX");
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
	return path;
}

Test(config, config_file_same_keys_flags_override)
{
	char *path = write_tmp("{\"request-rate\": 15, \"num_prompts\": 200, \"max-concurrency\": 8,\n"
			       " \"metric-percentiles\": [50, 99], \"goodput\": {\"ttft\": 500},\n"
			       " \"ignore-eos\": true, \"profile\": \"sglang\", \"dataset-name\": \"random\"}\n");
	struct ls_config c;
	const char *args[] = { "--config", path, "--num-prompts", "300", NULL };
	cr_assert_eq(t_config_parse(&c, args), 0);
	cr_expect(c.request_rate == 15);
	cr_expect_eq(c.num_prompts, 300, "the flag overrides the file");
	cr_expect_eq(c.max_concurrency, 8);
	cr_expect_eq(c.profile.read.n_percentiles, 2, "the file's percentiles beat the profile's");
	cr_expect(c.goodput.has_ttft && c.goodput.ttft_ms == 500);
	cr_expect(c.profile.send.ignore_eos);
	cr_expect_str_eq(c.profile.name, "sglang");
	cr_expect_eq(c.profile.send.arrival, LS_ARRIVAL_POISSON_YIELD);
	ls_config_free(&c);

	const char *flag_profile[] = { "--config", path, "--profile", "vllm", "--goodput", "tpot:40", NULL };
	cr_assert_eq(t_config_parse(&c, flag_profile), 0);
	cr_expect_str_eq(c.profile.name, "vllm");
	cr_expect(!c.goodput.has_ttft && c.goodput.has_tpot, "flag SLOs replace the file's");
	ls_config_free(&c);
	unlink(path);
	free(path);
}

Test(config, usage_errors_are_one_line, .init = cr_redirect_stderr)
{
	struct ls_config c;
	const char *const cases[][5] = {
		{ "--frobnicate", NULL },
		{ "--request-rate", "fast", NULL },
		{ "--request-rate", NULL },
		{ "--num-prompts", "0", NULL },
		{ "--backend", "nosuch", NULL },
		{ "--arrival", "closed", NULL },
		{ "--dataset-name", "sharegpt", NULL },
		{ "--goodput", "ttfb:3", NULL },
		{ "--random-range-ratio", "1.5", NULL },
		{ "--profile", "nosuch", NULL },
		{ "positional", NULL },
		{ "--ignore-eos=maybe", NULL },
		{ "--config", "/nonexistent/latscope.json", NULL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_expect_eq(t_config_parse(&c, cases[i]), 2, "case %zu (%s) should be a usage error", i, cases[i][0]);
		ls_config_free(&c);
	}
	char *err = t_stderr_text();
	size_t lines = 0;
	for (char *p = err; *p; p++)
		lines += *p == '\n';
	cr_expect_eq(lines, sizeof(cases) / sizeof(cases[0]), "one line per error:\n%s", err);
	cr_expect(strstr(err, "--frobnicate"));
	cr_expect(strstr(err, "fast"));
}

Test(config, config_file_errors, .init = cr_redirect_stderr)
{
	struct ls_config c;
	char *bad_key = write_tmp("{\"request-rate\": 1, \"no-such-key\": 2}");
	const char *a1[] = { "--config", bad_key, NULL };
	cr_expect_eq(t_config_parse(&c, a1), 2);
	ls_config_free(&c);
	char *bad_json = write_tmp("{\n\"request-rate\": 1,\n\"seed\": }\n");
	const char *a2[] = { "--config", bad_json, NULL };
	cr_expect_eq(t_config_parse(&c, a2), 2);
	ls_config_free(&c);
	char *err = t_stderr_text();
	cr_expect(strstr(err, "no-such-key"), "%s", err);
	char want[128];
	snprintf(want, sizeof(want), "%s:3:", bad_json);
	cr_expect(strstr(err, want), "malformed JSON names its line: %s", err);
	unlink(bad_key);
	unlink(bad_json);
	free(bad_key);
	free(bad_json);
}

Test(config, help_documents_every_flag, .init = cr_redirect_stdout)
{
	struct ls_config c;
	const char *args[] = { "--help", NULL };
	cr_assert_eq(t_config_parse(&c, args), 1);
	ls_config_free(&c);
	fflush(stdout);
	static char out[32768];
	size_t n = fread(out, 1, sizeof(out) - 1, cr_get_redirected_stdout());
	out[n] = 0;
	const char *flags[] = { "--backend", "--base-url", "--host", "--port", "--endpoint", "--model",
				"--dataset-name", "--dataset-path", "--random-input-len", "--random-output-len",
				"--random-range-ratio", "--num-prompts", "--request-rate", "--burstiness",
				"--max-concurrency", "--num-warmups", "--seed", "--ignore-eos", "--percentile-metrics",
				"--metric-percentiles", "--goodput", "--save-result", "--result-dir", "--result-filename",
				"--insecure", "--cacert", "--request-timeout", "--ready-check-timeout-sec",
				"--disable-tqdm", "--arrival", "--connection", "--http2", "--record", "--config",
				"--profile", "--probes", "--server-pid", "--server-comm", "--trace", "--gpu-dir",
				"--random-range-semantics", "--test-loop-delay-us", "--warmup-shape", "--busy-poll", "--spin-us",
				"--preconnect" };
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		cr_expect(strstr(out, flags[i]), "--help lacks %s", flags[i]);

	/* The real table, as --help prints it ("  --name ..." or "  -X, --name ..."): the parser
	 * knows every flag shown (a bare flag is taken, or wants its value; never "unknown"). */
	static char shown[128][48];
	size_t n_shown = 0;
	for (const char *line = out; line && *line && n_shown < 128; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		const char *f = NULL;
		if (!strncmp(line, "  --", 4))
			f = line + 2;
		else if (!strncmp(line, "  -", 3) && line[4] == ',' && !strncmp(line + 5, " --", 3))
			f = line + 6;
		if (!f)
			continue;
		size_t len = strcspn(f, " \n=");
		snprintf(shown[n_shown++], sizeof(shown[0]), "%.*s", (int)len, f);
	}
	cr_assert_geq(n_shown, sizeof(flags) / sizeof(flags[0]), "--help shows %zu flags", n_shown);
	for (size_t i = 0; i < n_shown; i++)
		for (size_t j = i + 1; j < n_shown; j++)
			cr_expect_neq(strcmp(shown[i], shown[j]), 0, "--help shows %s twice", shown[i]);
	for (size_t i = 0; i < n_shown; i++) {
		if (!strcmp(shown[i], "--help"))
			continue;
		char err_path[] = "/tmp/latscope-cfgflag-XXXXXX";
		int fd = mkstemp(err_path);
		cr_assert_geq(fd, 0);
		fflush(stderr);
		int saved = dup(2);
		dup2(fd, 2);
		const char *one[] = { shown[i], NULL };
		struct ls_config c1;
		int rc = t_config_parse(&c1, one);
		ls_config_free(&c1);
		fflush(stderr);
		dup2(saved, 2);
		close(saved);
		char err[1024] = "";
		ssize_t got = pread(fd, err, sizeof(err) - 1, 0);
		err[got > 0 ? got : 0] = 0;
		close(fd);
		unlink(err_path);
		cr_expect(!strstr(err, "unknown flag"), "--help shows %s, the parser does not know it: %s", shown[i], err);
		cr_expect(rc == 0 || rc == 2, "%s alone: %d (%s)", shown[i], rc, err);
	}
}
