/* Profiles: the built-in rule sets and JSON overlays. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "profile.h"

Test(profile, builtins_fix_the_rules)
{
	struct ls_profile p;
	cr_assert_eq(ls_profile_builtin("vllm", &p), 0);
	cr_expect_eq(p.read.clock, LS_CLOCK_STARTED);
	cr_expect_eq(p.read.ttft_gate, LS_GATE_CHOICES);
	cr_expect_eq(p.read.itl_mode, LS_ITL_FRAME);
	cr_expect_eq(p.read.e2el_end, LS_END_LAST_CONTENT);
	cr_expect(p.read.failures_in_headline);
	cr_expect_eq(p.arrival, LS_ARRIVAL_GAMMA);
	cr_expect(!p.per_request_conn);
	cr_expect_eq(p.num_warmups, 0);

	cr_assert_eq(ls_profile_builtin("sglang", &p), 0);
	cr_expect_eq(p.read.itl_mode, LS_ITL_TOKEN);
	cr_expect_eq(p.read.e2el_end, LS_END_DONE);
	cr_expect(!p.read.failures_in_headline);
	cr_expect_eq(p.arrival, LS_ARRIVAL_POISSON_YIELD);
	cr_expect(p.per_request_conn);
	cr_expect_eq(p.range_semantics, LS_RANGE_SGLANG);
	cr_expect_eq(p.warmup_shape, LS_WARMUP_SGLANG);
	cr_expect_eq(p.num_warmups, 1);

	cr_assert_eq(ls_profile_builtin("sglang-oai", &p), 0);
	cr_expect_eq(p.read.ttft_gate, LS_GATE_TEXT);

	cr_assert_eq(ls_profile_builtin("honest", &p), 0);
	cr_expect_eq(p.read.clock, LS_CLOCK_SCHEDULED);
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
	cr_expect_eq(p.read.clock, LS_CLOCK_SCHEDULED);
	cr_expect_eq(p.read.itl_mode, LS_ITL_TOKEN, "kept from the sglang base");
	cr_expect_eq(p.read.n_percentiles, 2);
	cr_expect(!p.per_request_conn);
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
	cr_expect_eq(p.read.clock, LS_CLOCK_SCHEDULED, "the built-in stays the base");
	cr_expect_eq(p.read.n_percentiles, 1);
	cr_expect(p.read.percentiles[0] == 75);
	unlink(path);
	rmdir(dir);
}
