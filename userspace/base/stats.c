/* stats.c — see stats.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
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

/* Sorting: an LSD radix sort on 64-bit keys, 11 bits a pass. The reports sort every part of
 * every window (a 1,400-stream run: seven arrays of 140,000 ITLs), and qsort's call per
 * comparison made that a third of the run's user instructions after the streams ended
 * (docs/performance.md). A pass whose digit is the same for every key is skipped, so
 * nanosecond values (the high bits mostly zero) take 3-4 passes. Small arrays: insertion. */
#define RADIX_BITS 11
#define RADIX_SIZE (1u << RADIX_BITS)
#define RADIX_PASSES ((64 + RADIX_BITS - 1) / RADIX_BITS)
#define RADIX_MIN 64 /* below this, insertion sort is cheaper than the counts */

static void insertion_u64(uint64_t *v, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		uint64_t x = v[i];
		size_t j = i;
		for (; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
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

/* Ascending keys; tmp holds n. All digits' counts come from one read of the keys. */
static void radix_u64(uint64_t *v, uint64_t *tmp, size_t n)
{
	static __thread size_t count[RADIX_PASSES][RADIX_SIZE];
	memset(count, 0, sizeof(count));
	for (size_t i = 0; i < n; i++)
		for (unsigned p = 0; p < RADIX_PASSES; p++)
			count[p][(v[i] >> (p * RADIX_BITS)) & (RADIX_SIZE - 1)]++;
	uint64_t *src = v, *dst = tmp;
	for (unsigned p = 0; p < RADIX_PASSES; p++) {
		size_t *c = count[p], sum = 0;
		if (c[(src[0] >> (p * RADIX_BITS)) & (RADIX_SIZE - 1)] == n)
			continue; /* one digit for all: this pass would not move anything */
		for (unsigned d = 0; d < RADIX_SIZE; d++) {
			size_t k = c[d];
			c[d] = sum;
			sum += k;
		}
		for (size_t i = 0; i < n; i++)
			dst[c[(src[i] >> (p * RADIX_BITS)) & (RADIX_SIZE - 1)]++] = src[i];
		uint64_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
}

void ls_sort_u64(uint64_t *v, size_t n)
{
	if (n < RADIX_MIN) {
		insertion_u64(v, n);
		return;
	}
	uint64_t *tmp = malloc(n * sizeof(*tmp));
	if (!tmp) { /* no room for the second buffer: the in-place sort, slower, same order */
		qsort(v, n, sizeof(*v), cmp_u64);
		return;
	}
	radix_u64(v, tmp, n);
	free(tmp);
}

/* A double's bits as a key that orders as the double does (negatives reversed below the
 * positives), and back. -0.0 sorts just before 0.0; NaNs (which no caller sorts) at the ends. */
static uint64_t key_of(double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof(u));
	return u >> 63 ? ~u : u | (1ull << 63);
}

static double double_of(uint64_t k)
{
	uint64_t u = k >> 63 ? k & ~(1ull << 63) : ~k;
	double d;
	memcpy(&d, &u, sizeof(d));
	return d;
}

void ls_sort_doubles(double *v, size_t n)
{
	if (n < 2)
		return;
	uint64_t *keys = malloc(2 * n * sizeof(*keys)); /* the keys, then radix_u64's second buffer */
	if (!keys) { /* no room: the in-place sort, slower, same order */
		qsort(v, n, sizeof(*v), cmp_double);
		return;
	}
	for (size_t i = 0; i < n; i++)
		keys[i] = key_of(v[i]);
	if (n < RADIX_MIN)
		insertion_u64(keys, n);
	else
		radix_u64(keys, keys + n, n);
	for (size_t i = 0; i < n; i++)
		v[i] = double_of(keys[i]);
	free(keys);
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
