/* rng.h — the seeded generator behind datasets and arrival schedules: xoroshiro128++ seeded
 * through splitmix64, so one --seed gives the same run on every machine. (numpy's streams are
 * not reproduced: the *distributions* and formulas are vLLM's and SGLang's, the draws are ours.) */
#ifndef LATSCOPE_RNG_H
#define LATSCOPE_RNG_H

#include <stdint.h>

/* s[2] is the whole state; any seed (0 included) gives a valid non-zero state. */
void     ls_rng_seed(uint64_t s[2], uint64_t seed);
uint64_t ls_rng_next(uint64_t s[2]);
double   ls_rng_uniform(uint64_t s[2]);              /* [0, 1), 53 bits */
uint64_t ls_rng_below(uint64_t s[2], uint64_t n);    /* uniform integer in [0, n), unbiased; 0 if n == 0 */
double   ls_rng_exponential(uint64_t s[2], double mean);
double   ls_rng_normal(uint64_t s[2]);
double   ls_rng_gamma(uint64_t s[2], double shape, double scale); /* Marsaglia-Tsang */

#endif
