/* stats.h — the one percentile: numpy's default ("linear"), what vLLM's and SGLang's benchmark
 * scripts report (np.percentile). Percentile p of n ascending values sits at position
 * p / 100 * (n - 1) and is read between its two neighbours. Every stage and the lab use these,
 * so a p99 means the same thing in every report. */
#ifndef LATSCOPE_STATS_H
#define LATSCOPE_STATS_H

#include <stddef.h>
#include <stdint.h>

/* Percentile p (in [0, 100]; outside it, the end) of an ascending array; 0 when n == 0. */
double ls_percentile(const double *sorted, size_t n, double p);
double ls_percentile_u64(const uint64_t *sorted, size_t n, double p);

/* Ascending, in place (the order the percentiles need). */
void ls_sort_doubles(double *v, size_t n);
void ls_sort_u64(uint64_t *v, size_t n);
/* Sorts v and keeps each value once; returns how many are left (the first ones). */
size_t ls_sort_unique_u64(uint64_t *v, size_t n);

#endif
