/* test_wrap.c — the report folded for a terminal (report/wrap.h). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include "report/wrap.h"

static char *fold(const char *text, int width)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	cr_assert(f);
	ls_wrap_text(f, text, strlen(text), width);
	fclose(f);
	return buf;
}

Test(wrap, long_lines_fold_under_their_value_column)
{
	char *out = fold("Arrivals:     gamma, burstiness 1 (Poisson process), normalised to N/rate\nshort\n", 40);
	cr_expect_str_eq(out, "Arrivals:     gamma, burstiness 1\n"
			      "              (Poisson process),\n"
			      "              normalised to N/rate\nshort\n");
	free(out);
}

Test(wrap, every_line_fits_and_no_word_is_lost)
{
	const char *text = "prefix cache  ok: 1 warmup request repeats prompt 0; measured request 0 had TTFT "
			   "10.95 ms vs median 16.97 ms for the rest: no sign of a prefix cache\n";
	char *out = fold(text, 60);
	for (char *line = out, *nl; (nl = strchr(line, '\n')); line = nl + 1)
		cr_expect_leq(nl - line, 60, "%.*s", (int)(nl - line), line);
	char words_in[512], words_out[512];
	size_t a = 0, b = 0;
	for (const char *p = text; *p && a < sizeof(words_in) - 1; p++)
		if (*p != ' ' && *p != '\n')
			words_in[a++] = *p;
	for (const char *p = out; *p && b < sizeof(words_out) - 1; p++)
		if (*p != ' ' && *p != '\n')
			words_out[b++] = *p;
	words_in[a] = words_out[b] = 0;
	cr_expect_str_eq(words_out, words_in);
	free(out);
}

Test(wrap, no_width_no_folding_and_a_long_word_stays_whole)
{
	char *out = fold("a line that is long enough to fold\n", 0);
	cr_expect_str_eq(out, "a line that is long enough to fold\n");
	free(out);
	out = fold("path: /a/very/long/path/without/any/space/in/it/at/all/x.jsonl\n", 40);
	cr_expect(strstr(out, "/a/very/long/path/without/any/space/in/it/at/all/x.jsonl"), "%s", out);
	free(out);
}
