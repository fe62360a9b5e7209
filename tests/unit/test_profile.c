/* Profiles: the built-in rule sets and JSON overlays. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include "config/profile.h"

Test(profile, builtins_fix_the_rules)
{
	struct ls_profile p;
	cr_assert_eq(ls_profile_builtin("vllm", &p), 0);
	cr_expect_eq(p.read.origin, LS_ORIGIN_STARTED);
	cr_expect_eq(p.read.ttft_gate, LS_GATE_CHOICES);
	cr_expect_eq(p.read.itl_mode, LS_ITL_FRAME);
	cr_expect_eq(p.read.e2el_end, LS_END_LAST_CONTENT);
	cr_expect(p.read.failures_in_headline);
	cr_expect_eq(p.send.arrival, LS_ARRIVAL_GAMMA);
	cr_expect(!p.send.per_request_conn);
	cr_expect_eq(p.send.num_warmups, 0);

	cr_assert_eq(ls_profile_builtin("sglang", &p), 0);
	cr_expect_eq(p.read.itl_mode, LS_ITL_TOKEN);
	cr_expect_eq(p.read.e2el_end, LS_END_DONE);
	cr_expect(!p.read.failures_in_headline);
	cr_expect_eq(p.send.arrival, LS_ARRIVAL_POISSON_YIELD);
	cr_expect(p.send.per_request_conn);
	cr_expect_eq(p.send.range_semantics, LS_RANGE_SGLANG);
	cr_expect_eq(p.send.warmup_shape, LS_WARMUP_SGLANG);
	cr_expect_eq(p.send.num_warmups, 1);

	cr_expect_eq(p.read.ttft_gate, LS_GATE_CUM_TEXT);
	cr_expect_eq(p.read.out_tokens, LS_OUT_CUMULATIVE);
	cr_expect_eq(p.send.backend, LS_BACKEND_SGLANG);
	cr_expect(p.send.ignore_eos && p.read.no_token_ok && p.read.itl_max);
	cr_expect_eq(p.read.n_itl_percentiles, 2);

	cr_assert_eq(ls_profile_builtin("sglang-oai", &p), 0);
	cr_expect_eq(p.read.ttft_gate, LS_GATE_TEXT);
	cr_expect_eq(p.read.itl_mode, LS_ITL_FRAME, "per token only when the server reports speculation");
	cr_expect_eq(p.read.out_tokens, LS_OUT_REQUESTED);
	cr_expect_eq(p.send.backend, LS_BACKEND_OPENAI);
	cr_expect(p.itl_token_when_spec);

	cr_assert_eq(ls_profile_builtin("honest", &p), 0);
	cr_expect_eq(p.read.origin, LS_ORIGIN_SCHEDULED);
	cr_expect_eq(p.read.e2el_end, LS_END_LAST_BYTE);
	cr_expect(p.show_both_itl);

	cr_expect_neq(ls_profile_builtin("tgi", &p), 0);
}

static char *write_tmp(const char *content)
{
	char *path = strdup("/tmp/latscope-prof-XXXXXX.json");
	int fd = mkstemps(path, 5);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
	return path;
}

Test(profile, json_file_overlays_a_base)
{
	char *path = write_tmp("{\"name\": \"mine\", \"base\": \"sglang\", \"clock\": \"scheduled\", "
			       "\"percentiles\": [50, 99.9], \"connection\": \"reuse\", \"failures_in_headline\": true}");
	struct ls_profile p;
	cr_assert_eq(ls_profile_load(path, &p), 0);
	cr_expect_str_eq(p.name, "mine");
	cr_expect_str_eq(p.source, path);
	cr_expect_eq(p.read.origin, LS_ORIGIN_SCHEDULED);
	cr_expect_eq(p.read.itl_mode, LS_ITL_TOKEN, "kept from the sglang base");
	cr_expect_eq(p.read.n_percentiles, 2);
	cr_expect(!p.send.per_request_conn);
	cr_expect(p.read.failures_in_headline);
	unlink(path);
	free(path);
}

Test(profile, bad_files_are_errors, .init = cr_redirect_stderr)
{
	struct ls_profile p;
	char *typo = write_tmp("{\"clok\": \"scheduled\"}");
	cr_expect_neq(ls_profile_load(typo, &p), 0, "a typo must not silently keep a default");
	char *bad = write_tmp("{\"itl\": \"sometimes\"}");
	cr_expect_neq(ls_profile_load(bad, &p), 0);
	char *junk = write_tmp("{not json");
	cr_expect_neq(ls_profile_load(junk, &p), 0);
	cr_expect_neq(ls_profile_load("/nonexistent/p.json", &p), 0);
	cr_expect_neq(ls_profile_load("nosuch", &p), 0);
	unlink(typo);
	unlink(bad);
	unlink(junk);
	free(typo);
	free(bad);
	free(junk);
}

Test(profile, named_profile_overlaid_by_config_dir)
{
	char dir[] = "/tmp/latscope-cfgdir-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof(path), "%s/honest.json", dir);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("{\"percentiles\": [75]}", f);
	fclose(f);
	setenv("LATSCOPE_CONFIG_DIR", dir, 1);
	struct ls_profile p;
	cr_assert_eq(ls_profile_load("honest", &p), 0);
	unsetenv("LATSCOPE_CONFIG_DIR");
	cr_expect_eq(p.read.origin, LS_ORIGIN_SCHEDULED, "the built-in stays the base");
	cr_expect_eq(p.read.n_percentiles, 1);
	cr_expect(p.read.percentiles[0] == 75);
	unlink(path);
	rmdir(dir);
}

Test(profile, accept_length_switches_sglang_oai_to_token_itl)
{
	struct ls_profile p;
	struct ls_read_rules r;
	cr_assert_eq(ls_profile_builtin("sglang-oai", &p), 0);
	cr_expect_eq(ls_profile_read_rules(&p, 0, &r), 0, "no accept length reported");
	cr_expect_eq(r.itl_mode, LS_ITL_FRAME);
	cr_expect_eq(ls_profile_read_rules(&p, 1.0, &r), 0, "1.0 = no speculation (the simulator always reports it)");
	cr_expect_eq(ls_profile_read_rules(&p, 3.5, &r), 1);
	cr_expect_eq(r.itl_mode, LS_ITL_TOKEN);
	cr_assert_eq(ls_profile_builtin("vllm", &p), 0);
	cr_expect_eq(ls_profile_read_rules(&p, 3.5, &r), 0, "vLLM's ITL stays per frame");
	cr_expect_eq(r.itl_mode, LS_ITL_FRAME);
}

/* configs/NAME.json ship next to the built-ins; they must say exactly what the built-in
 * says, key for key, so a profile does not depend on the directory latscope runs in. */
Test(profile, shipped_configs_equal_the_builtins)
{
	const char *root = getenv("LATSCOPE_ROOT");
	const char *names[] = { "vllm", "sglang", "sglang-oai", "honest" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char path[512];
		snprintf(path, sizeof(path), "%s/configs/%s.json", root ? root : ".", names[i]);
		FILE *f = fopen(path, "rb");
		cr_assert_not_null(f, "missing %s", path);
		char buf[8192];
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = 0;
		cJSON *file = cJSON_Parse(buf);
		cr_assert_not_null(file, "%s is not JSON", path);
		struct ls_profile builtin, loaded;
		cr_assert_eq(ls_profile_builtin(names[i], &builtin), 0);
		loaded = builtin;
		cr_assert_eq(ls_profile_apply_json(&loaded, file, path), 0);
		cJSON *want = ls_profile_to_json(&builtin), *got = ls_profile_to_json(&loaded);
		cr_expect(cJSON_Compare(want, got, 1), "%s differs from the built-in %s", path, names[i]);
		/* Every key of the built-in is in the file (comment aside). */
		for (const cJSON *k = want->child; k; k = k->next)
			cr_expect_not_null(cJSON_GetObjectItemCaseSensitive(file, k->string), "%s lacks \"%s\"", path,
					   k->string);
		cJSON_Delete(want);
		cJSON_Delete(got);
		cJSON_Delete(file);
	}
}

Test(profile, json_round_trip)
{
	struct ls_profile p, q;
	cr_assert_eq(ls_profile_builtin("sglang", &p), 0);
	cJSON *o = ls_profile_to_json(&p);
	cr_assert_not_null(o);
	memset(&q, 0, sizeof(q));
	cr_assert_eq(ls_profile_apply_json(&q, o, "round trip"), 0);
	cJSON *o2 = ls_profile_to_json(&q);
	cr_expect(cJSON_Compare(o, o2, 1));
	cJSON_Delete(o);
	cJSON_Delete(o2);
}
