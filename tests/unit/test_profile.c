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
	cr_expect_eq(p.read.out_tokens, LS_OUT_USAGE, "vLLM counts the usage frame");
	cr_expect(p.read.no_done_ok && !p.read.no_token_ok, "a first chunk is enough; no [DONE] needed");
	cr_expect(p.read.n_percentiles == 1 && p.read.percentiles[0] == 99 && !p.read.itl_max);

	cr_assert_eq(ls_profile_builtin("sglang", &p), 0);
	cr_expect_eq(p.read.origin, LS_ORIGIN_STARTED, "SGLang's clock starts after the semaphore too");
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
	cr_expect_eq(p.read.origin, LS_ORIGIN_STARTED);
	cr_expect_eq(p.read.e2el_end, LS_END_DONE, "sglang-oai's E2EL ends at [DONE] as sglang's");
	cr_expect(p.send.per_request_conn, "a new connection per request");
	cr_expect(p.send.warmup_shape == LS_WARMUP_SGLANG && p.send.num_warmups == 1);
	cr_expect(p.send.ignore_eos && !p.read.failures_in_headline);

	cr_assert_eq(ls_profile_builtin("honest", &p), 0);
	cr_expect_eq(p.read.origin, LS_ORIGIN_SCHEDULED);
	cr_expect_eq(p.read.e2el_end, LS_END_LAST_BYTE);
	cr_expect(p.show_both_itl);
	static const double honest_pcts[] = { 50, 90, 99, 99.9 };
	cr_expect_eq(p.read.n_percentiles, 4);
	for (size_t i = 0; i < 4 && i < p.read.n_percentiles; i++)
		cr_expect_eq(p.read.percentiles[i], honest_pcts[i], "honest percentile %zu", i);
	cr_expect(!p.read.no_done_ok, "honest wants [DONE]");
	cr_expect(!p.send.per_request_conn && p.send.num_warmups == 0);

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

/* ---- The profile table of docs/compare.md, cell by cell, against the built-ins ----
 * Each row's cells are read in the words of docs/compare.md: every wording a cell may have is listed
 * with what it says of the profile. A cell in words the test does not know fails (docs/compare.md
 * says a rule the test does not check); "same" is the cell to its left, "as vllm" vllm's. */

typedef int (*cell_check)(const struct ls_profile *p);

struct cell_word {
	const char *text;
	cell_check  holds;
};

static int clock_started(const struct ls_profile *p) { return p->read.origin == LS_ORIGIN_STARTED; }
static int clock_scheduled(const struct ls_profile *p) { return p->read.origin == LS_ORIGIN_SCHEDULED; }
static int gate_choices(const struct ls_profile *p) { return p->read.ttft_gate == LS_GATE_CHOICES; }
static int gate_cum_text(const struct ls_profile *p) { return p->read.ttft_gate == LS_GATE_CUM_TEXT; }
static int gate_text(const struct ls_profile *p) { return p->read.ttft_gate == LS_GATE_TEXT; }
static int itl_frame(const struct ls_profile *p)
{
	return p->read.itl_mode == LS_ITL_FRAME && !p->show_both_itl && !p->itl_token_when_spec;
}
static int itl_token(const struct ls_profile *p)
{
	return p->read.itl_mode == LS_ITL_TOKEN && !p->itl_token_when_spec;
}
static int itl_frame_token_when_spec(const struct ls_profile *p)
{
	return p->read.itl_mode == LS_ITL_FRAME && p->itl_token_when_spec;
}
static int itl_frame_both(const struct ls_profile *p)
{
	return p->read.itl_mode == LS_ITL_FRAME && p->show_both_itl && !p->itl_token_when_spec;
}
static int end_content(const struct ls_profile *p) { return p->read.e2el_end == LS_END_LAST_CONTENT; }
static int end_done(const struct ls_profile *p) { return p->read.e2el_end == LS_END_DONE; }
static int end_byte(const struct ls_profile *p) { return p->read.e2el_end == LS_END_LAST_BYTE; }
static int out_usage(const struct ls_profile *p) { return p->read.out_tokens == LS_OUT_USAGE; }
static int out_cumulative(const struct ls_profile *p) { return p->read.out_tokens == LS_OUT_CUMULATIVE; }
static int out_requested(const struct ls_profile *p) { return p->read.out_tokens == LS_OUT_REQUESTED; }
static int ok_first_chunk(const struct ls_profile *p) { return !p->read.no_token_ok && p->read.no_done_ok; }
static int ok_no_exception(const struct ls_profile *p) { return p->read.no_token_ok && p->read.no_done_ok; }
static int ok_chunk_and_done(const struct ls_profile *p) { return !p->read.no_token_ok && !p->read.no_done_ok; }
static int headline_failures(const struct ls_profile *p) { return p->read.failures_in_headline; }
static int headline_no_failures(const struct ls_profile *p) { return !p->read.failures_in_headline; }

static int percentiles_are(const double *got, size_t n, const double *want, size_t n_want)
{
	if (n != n_want)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (got[i] != want[i])
			return 0;
	return 1;
}
static int pct_99(const struct ls_profile *p)
{
	static const double w[] = { 99 };
	return percentiles_are(p->read.percentiles, p->read.n_percentiles, w, 1) && !p->read.n_itl_percentiles &&
	       !p->read.itl_max;
}
static int pct_sglang(const struct ls_profile *p)
{
	static const double w[] = { 99 }, itl[] = { 95, 99 };
	return percentiles_are(p->read.percentiles, p->read.n_percentiles, w, 1) &&
	       percentiles_are(p->read.itl_percentiles, p->read.n_itl_percentiles, itl, 2) && p->read.itl_max;
}
static int pct_honest(const struct ls_profile *p)
{
	static const double w[] = { 50, 90, 99, 99.9 };
	return percentiles_are(p->read.percentiles, p->read.n_percentiles, w, 4) && !p->read.n_itl_percentiles &&
	       !p->read.itl_max;
}
static int pct_honest_itl_max(const struct ls_profile *p)
{
	static const double w[] = { 50, 90, 99, 99.9 };
	return percentiles_are(p->read.percentiles, p->read.n_percentiles, w, 4) && !p->read.n_itl_percentiles &&
	       p->read.itl_max;
}
static int arrival_gamma(const struct ls_profile *p) { return p->send.arrival == LS_ARRIVAL_GAMMA; }
static int arrival_yield(const struct ls_profile *p) { return p->send.arrival == LS_ARRIVAL_POISSON_YIELD; }
static int conn_pool(const struct ls_profile *p) { return !p->send.per_request_conn; }
static int conn_per_request(const struct ls_profile *p) { return p->send.per_request_conn; }
static int warmup_none(const struct ls_profile *p) { return p->send.num_warmups == 0; }
static int warmup_sglang(const struct ls_profile *p)
{
	return p->send.num_warmups == 1 && p->send.warmup_shape == LS_WARMUP_SGLANG && LS_WARMUP_SGLANG_OUTPUT_CAP == 32 &&
	       LS_WARMUP_SGLANG_PAUSE_NS == 1000000000ull;
}
static int range_vllm(const struct ls_profile *p) { return p->send.range_semantics == LS_RANGE_VLLM; }
static int range_sglang(const struct ls_profile *p) { return p->send.range_semantics == LS_RANGE_SGLANG; }
static int backend_is(const struct ls_profile *p, int eos, enum ls_backend b, const char *path)
{
	return !!p->send.ignore_eos == eos && p->send.backend == b && !strcmp(ls_backend_default_endpoint(b), path);
}
static int eos_off_completions(const struct ls_profile *p)
{
	return backend_is(p, 0, LS_BACKEND_OPENAI, "/v1/completions");
}
static int eos_on_completions(const struct ls_profile *p)
{
	return backend_is(p, 1, LS_BACKEND_OPENAI, "/v1/completions");
}
static int eos_on_generate(const struct ls_profile *p) { return backend_is(p, 1, LS_BACKEND_SGLANG, "/generate"); }

static const struct {
	const char      *rule;
	struct cell_word words[6];
} readme_rows[] = {
	{ "clock (TTFT, E2EL from)",
	  { { "after the semaphore", clock_started }, { "the scheduled arrival", clock_scheduled } } },
	{ "first token / ITL frames",
	  { { "every frame with `choices`, empty text too", gate_choices },
	    { "every frame with `choices`", gate_choices },
	    { "once the cumulative `text` is non-empty", gate_cum_text },
	    { "frames with non-empty text", gate_text } } },
	{ "headline ITL",
	  { { "per frame", itl_frame },
	    { "per token (`meta_info.completion_tokens` growth; 0 new: gap carries on)", itl_token },
	    { "per frame; per token when the server reports an accept length > 1", itl_frame_token_when_spec },
	    { "per frame (per token shown beside)", itl_frame_both } } },
	{ "E2EL ends at",
	  { { "last content frame", end_content }, { "last line (`[DONE]`)", end_done }, { "last byte", end_byte } } },
	{ "output tokens",
	  { { "usage frame", out_usage },
	    { "cumulative count, else requested", out_cumulative },
	    { "usage inside a text frame, else requested", out_requested } } },
	{ "success",
	  { { "a first chunk (no `[DONE]` needed)", ok_first_chunk },
	    { "HTTP 200 and no exception; no text = TTFT 0", ok_no_exception },
	    { "first chunk and `[DONE]`", ok_chunk_and_done } } },
	{ "failures in the headline", { { "yes", headline_failures }, { "no", headline_no_failures } } },
	{ "percentiles",
	  { { "P99", pct_99 }, { "P99; ITL P95, P99, max", pct_sglang }, { "P50, P90, P99, P99.9", pct_honest },
	    { "P50, P90, P99, P99.9; ITL max", pct_honest_itl_max } } },
	{ "arrivals",
	  { { "gamma, normalised to N/rate, absolute deadlines", arrival_gamma },
	    { "exponential sleep after each yield", arrival_yield },
	    { "gamma", arrival_gamma } } },
	{ "connections",
	  { { "one keep-alive pool", conn_pool },
	    { "a new one (and TLS) per request", conn_per_request },
	    { "pool", conn_pool } } },
	{ "warmup", { { "none", warmup_none }, { "1, output capped at 32, then 1 s", warmup_sglang } } },
	{ "random lengths, ratio r",
	  { { "[L(1-r), L(1+r)]", range_vllm }, { "[max(L r, 1), L] (default r = 0: [1, L])", range_sglang } } },
	{ "ignore_eos / backend",
	  { { "off / `/v1/completions`", eos_off_completions },
	    { "on / `/generate`", eos_on_generate },
	    { "on / `/v1/completions`", eos_on_completions } } },
};

/* Splits a "| a | b |" line into its trimmed cells (in place); returns how many. */
static size_t table_cells(char *line, char **cells, size_t max)
{
	size_t n = 0;
	char *p = strchr(line, '|');
	while (p && n < max) {
		char *next = strchr(p + 1, '|');
		if (!next)
			break;
		char *a = p + 1, *b = next;
		while (a < b && *a == ' ')
			a++;
		while (b > a && b[-1] == ' ')
			b--;
		*b = 0;
		cells[n++] = a;
		p = next;
	}
	return n;
}

Test(profile, readme_table_is_what_the_builtins_do)
{
	char path[512];
	const char *root = getenv("LATSCOPE_ROOT");
	snprintf(path, sizeof(path), "%s/docs/compare.md", root ? root : ".");
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f, "cannot read %s", path);
	char line[1024], *cells[8];
	struct ls_profile profiles[4];
	size_t n_profiles = 0, rows_seen = 0;
	int in_section = 0;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (strstr(line, "<!-- section:profiles -->"))
			in_section = 1;
		if (!in_section)
			continue;
		if (line[0] != '|') {
			if (n_profiles)
				break; /* the end of the profile table (the first in the section) */
			continue;
		}
		size_t n = table_cells(line, cells, 8);
		if (!strcmp(cells[0], "rule")) { /* the header: `vllm` | `sglang` | ... */
			cr_assert_eq(n, 5, "the table has a column per built-in");
			for (size_t c = 1; c < n; c++) {
				char name[64];
				cr_assert_eq(sscanf(cells[c], "`%63[^`]`", name), 1, "column %zu: %s", c, cells[c]);
				cr_assert_eq(ls_profile_builtin(name, &profiles[c - 1]), 0, "no built-in %s", name);
			}
			n_profiles = n - 1;
			continue;
		}
		if (!n_profiles || !strncmp(cells[0], "---", 3))
			continue;
		cr_assert_eq(n, n_profiles + 1, "docs/compare.md row \"%s\" has %zu cells", cells[0], n);
		size_t r = 0;
		while (r < sizeof(readme_rows) / sizeof(readme_rows[0]) && strcmp(readme_rows[r].rule, cells[0]))
			r++;
		cr_assert_lt(r, sizeof(readme_rows) / sizeof(readme_rows[0]), "docs/compare.md rule \"%s\" is not checked here",
			     cells[0]);
		rows_seen++;
		for (size_t c = 1; c < n; c++) {
			const char *text = cells[c];
			if (!strcmp(text, "same") && c > 1)
				text = cells[c - 1];
			else if (!strcmp(text, "as vllm"))
				text = cells[1];
			const struct cell_word *w = readme_rows[r].words;
			while (w->text && strcmp(w->text, text))
				w++;
			cr_assert_not_null(w->text, "docs/compare.md %s / %s says \"%s\": wording the test does not know",
					   cells[0], profiles[c - 1].name, text);
			cr_expect(w->holds(&profiles[c - 1]), "docs/compare.md %s / %s says \"%s\"; the built-in does not",
				  cells[0], profiles[c - 1].name, text);
			cells[c] = (char *)text; /* "same" further right means this */
		}
	}
	fclose(f);
	cr_assert_eq(n_profiles, 4, "no profile table in the profiles section of docs/compare.md");
	cr_expect_eq(rows_seen, sizeof(readme_rows) / sizeof(readme_rows[0]), "docs/compare.md rows: %zu", rows_seen);
}
