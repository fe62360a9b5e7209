/* bench_probes: where the attribution JSONL goes, and --server-pid as a repeatable flag. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdlib.h>
#include "base/clock.h"
#include "cmd/bench_probes.h"
#include "config/config.h"

Test(bench_probes, attribution_path_beside_the_record)
{
	const char *in[][2] = { { "run.jsonl", "run.attribution.jsonl" },
				{ "/tmp/a/r.jsonl", "/tmp/a/r.attribution.jsonl" },
				{ "rec.txt", "rec.txt.attribution.jsonl" },
				{ ".jsonl", ".jsonl.attribution.jsonl" } };
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		char *p = ls_bench_attribution_path(in[i][0]);
		cr_assert_not_null(p);
		cr_expect_str_eq(p, in[i][1]);
		free(p);
	}
}

Test(bench_probes, server_pid_repeats, .init = cr_redirect_stderr)
{
	struct ls_config c;
	char *args[] = { "bench", "--server-pid", "12", "--server-pid", "34,56", "--server-pid", "12",
			 "--probes", "on", NULL };
	cr_assert_eq(ls_config_parse(&c, 9, args), 0);
	cr_expect_eq(c.n_server_pids, 3, "duplicates kept once");
	cr_expect(c.server_pids[0] == 12 && c.server_pids[1] == 34 && c.server_pids[2] == 56);
	cr_expect_eq(c.probes, LS_PROBES_ON);
	ls_config_free(&c);

	char *bad[] = { "bench", "--server-pid", "12,x", NULL };
	cr_expect_eq(ls_config_parse(&c, 3, bad), 2);
	ls_config_free(&c);
	char *zero[] = { "bench", "--server-pid", "0", NULL };
	cr_expect_eq(ls_config_parse(&c, 3, zero), 2);
	ls_config_free(&c);
}

Test(bench_probes, probes_auto_by_default)
{
	struct ls_config c;
	char *args[] = { "bench", NULL };
	cr_assert_eq(ls_config_parse(&c, 1, args), 0);
	cr_expect_eq(c.probes, LS_PROBES_AUTO);
	cr_expect_eq(c.n_server_pids, 0);
	ls_config_free(&c);
}

Test(bench_probes, steal_from_proc_stat)
{
	uint64_t ms = 1;
	cr_assert_eq(ls_proc_stat_steal_ms("cpu  273539 647 138723 1731034 276149 0 17242 295 0 0\n", 100, &ms), 0);
	cr_expect_eq(ms, 2950);
	cr_assert_eq(ls_proc_stat_steal_ms("cpu  1 2 3 4 5 6 7 8\n", 250, &ms), 0);
	cr_expect_eq(ms, 32);
	cr_expect_eq(ls_proc_stat_steal_ms("cpu0 1 2 3 4 5 6 7 8\n", 100, &ms), -1, "the first line is all CPUs");
	cr_expect_eq(ls_proc_stat_steal_ms("cpu  1 2 3\n", 100, &ms), -1, "a kernel without a steal column");
	cr_expect_eq(ls_proc_stat_steal_ms(NULL, 100, &ms), -1);
	cr_expect_eq(ls_proc_stat_steal_ms("cpu  1 2 3 4 5 6 7 8\n", 0, &ms), -1);
}
