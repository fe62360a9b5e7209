/* stats.c — see stats.h. */
#include <math.h>
#include <stdlib.h>
#include "base/stats.h"

/* Where percentile p falls among n > 0 ascending values: index lo, and frac of the way to
 * lo + 1 (frac 0 at an end, where there is no lo + 1 to read). */
static size_t position(size_t n, double p, double *frac)
{
	*frac = 0.0;
	if (n == 1 || !(p > 0.0))
		return 0;
	if (p >= 100.0)
		return n - 1;
	double rank = p / 100.0 * (double)(n - 1);
	size_t lo = (size_t)floor(rank);
	if (lo + 1 >= n)
		return n - 1;
	*frac = rank - (double)lo;
	return lo;
}

double ls_percentile(const double *sorted, size_t n, double p)
{
	if (!n)
		return 0.0;
	double frac;
	size_t lo = position(n, p, &frac);
	return frac > 0.0 ? sorted[lo] + (sorted[lo + 1] - sorted[lo]) * frac : sorted[lo];
}

double ls_percentile_u64(const uint64_t *sorted, size_t n, double p)
{
	if (!n)
		return 0.0;
	double frac;
	size_t lo = position(n, p, &frac);
	double at = (double)sorted[lo];
	return frac > 0.0 ? at + ((double)sorted[lo + 1] - at) * frac : at;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

void ls_sort_doubles(double *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_double);
}

void ls_sort_u64(uint64_t *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_u64);
}

size_t ls_sort_unique_u64(uint64_t *v, size_t n)
{
	size_t kept = 0;
	ls_sort_u64(v, n);
	for (size_t i = 0; i < n; i++)
		if (!kept || v[kept - 1] != v[i])
			v[kept++] = v[i];
	return kept;
}
