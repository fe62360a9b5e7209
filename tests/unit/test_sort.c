/* test_sort.c — base/stats.c's sorts (a radix sort on 64-bit keys) against qsort with a plain
 * comparison: the same ascending order for every size around the insertion/radix boundary, for
 * negative, zero, tiny, huge and repeated doubles, for integers with the top bits set, and for
 * arrays where most digits are the same (the passes that are skipped). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "base/stats.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int cmp_u(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* One of several shapes of double: ITL-like milliseconds, signed, extremes, repeats. */
static double draw_double(unsigned shape)
{
	static const double odd[] = { 0.0, -0.0, 1e-300, -1e-300, 5e-324, 1e300, -1e300, INFINITY, -INFINITY, 1.0, -1.0 };
	switch (shape % 4) {
	case 0: return (double)(next() % 100000) / 1000.0;             /* 0-100 ms, 1 us steps */
	case 1: return ((double)(int64_t)next()) / 1e9;                 /* both signs, wide */
	case 2: return odd[next() % (sizeof(odd) / sizeof(odd[0]))];
	default: return (double)(next() % 3);                           /* few values, many repeats */
	}
}

Test(sort, doubles_match_qsort_at_every_size_and_shape)
{
	static const size_t sizes[] = { 0, 1, 2, 3, 63, 64, 65, 127, 1000, 4097, 140000 };
	for (unsigned shape = 0; shape < 4; shape++)
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			size_t n = sizes[s];
			double *a = malloc((n + 1) * sizeof(*a)), *b = malloc((n + 1) * sizeof(*b));
			cr_assert(a && b);
			for (size_t i = 0; i < n; i++)
				a[i] = b[i] = draw_double(shape);
			ls_sort_doubles(a, n);
			qsort(b, n, sizeof(*b), cmp_d);
			for (size_t i = 0; i < n; i++)
				cr_assert(a[i] == b[i], "shape %u, n %zu: [%zu] %g vs %g", shape, n, i, a[i], b[i]);
			for (size_t i = 1; i < n; i++) /* -0.0 == 0.0, so check the order itself too */
				cr_assert(a[i - 1] <= a[i], "shape %u, n %zu: not ascending at %zu", shape, n, i);
			free(a);
			free(b);
		}
}

/* Integers: nanosecond durations (high bits zero: most passes skipped), full-width values (the
 * top digit decides), and one value with every other key equal. */
Test(sort, integers_match_qsort)
{
	static const size_t sizes[] = { 0, 1, 5, 64, 65, 3000, 100000 };
	for (unsigned shape = 0; shape < 3; shape++)
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			size_t n = sizes[s];
			uint64_t *a = malloc((n + 1) * sizeof(*a)), *b = malloc((n + 1) * sizeof(*b));
			cr_assert(a && b);
			for (size_t i = 0; i < n; i++)
				a[i] = b[i] = shape == 0 ? next() % 50000000 : shape == 1 ? next() : 7;
			if (shape == 2 && n)
				a[n / 2] = b[n / 2] = UINT64_MAX;
			ls_sort_u64(a, n);
			qsort(b, n, sizeof(*b), cmp_u);
			cr_assert(!n || !memcmp(a, b, n * sizeof(*a)), "shape %u, n %zu", shape, n);
			free(a);
			free(b);
		}
}

/* The percentile reads the sorted array: P50 of 1..1001 shuffled is 501, whatever the sort. */
Test(sort, percentile_after_sort)
{
	double v[1001];
	for (int i = 0; i < 1001; i++)
		v[i] = (double)((i * 617) % 1001 + 1);
	ls_sort_doubles(v, 1001);
	cr_expect(ls_percentile(v, 1001, 50) == 501.0);
	cr_expect(fabs(ls_percentile(v, 1001, 99.9) - 1000.0) < 1e-9);
	cr_expect(v[0] == 1.0 && v[1000] == 1001.0);
}
