/* base/rng's shuffle: the Fisher-Yates every dataset used to write out, over any element size,
 * draw for draw (so a seed orders prompts as before). */
#include <criterion/criterion.h>
#include <string.h>
#include "base/rng.h"

Test(rng, shuffle_is_the_written_out_fisher_yates)
{
	uint64_t a[2], b[2];
	uint32_t got[37], want[37];
	for (uint32_t i = 0; i < 37; i++)
		got[i] = want[i] = i * 7 + 1;
	ls_rng_seed(a, 42);
	ls_rng_seed(b, 42);
	ls_rng_shuffle(a, got, 37, sizeof(got[0]));
	for (size_t i = 37; i > 1; i--) { /* the loop dataset.c had */
		size_t j = (size_t)ls_rng_below(b, i);
		uint32_t t = want[i - 1];
		want[i - 1] = want[j];
		want[j] = t;
	}
	cr_expect_arr_eq(got, want, sizeof(got));
	cr_expect_eq(ls_rng_next(a), ls_rng_next(b), "as many draws as the loop");
	uint32_t seen[37] = { 0 };
	for (size_t i = 0; i < 37; i++)
		seen[(got[i] - 1) / 7]++;
	for (size_t i = 0; i < 37; i++)
		cr_expect_eq(seen[i], 1, "a permutation");
}

Test(rng, shuffle_of_none_or_one_draws_nothing)
{
	uint64_t a[2], b[2];
	char one[3] = "ab";
	ls_rng_seed(a, 7);
	ls_rng_seed(b, 7);
	ls_rng_shuffle(a, NULL, 0, 8);
	ls_rng_shuffle(a, one, 1, 2);
	cr_expect_str_eq(one, "ab");
	cr_expect_eq(ls_rng_next(a), ls_rng_next(b));
}
