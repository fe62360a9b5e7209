/* rng.h — the seeded generator behind datasets and arrival schedules: xoroshiro128++ seeded
 * through splitmix64, so one --seed gives the same run on every machine. (numpy's streams are
 * not reproduced: the *distributions* and formulas are vLLM's and SGLang's, the draws are ours.) */
#ifndef LATSCOPE_RNG_H
#define LATSCOPE_RNG_H

#include <stddef.h>
#include <stdint.h>

/* splitmix64: one 64-bit word of state, a well-mixed draw per step. It seeds the generator
 * below and is the whole generator where a stream per object must be cheap (the simulator's
 * per-request fates, the lab's jitter): inline, as those draw per token and per packet. */
static inline uint64_t ls_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A draw's top 53 bits as a double in [0, 1). */
static inline double ls_rng_to_unit(uint64_t draw)
{
	return (double)(draw >> 11) * 0x1.0p-53;
}

/* s[2] is the whole state; any seed (0 included) gives a valid non-zero state. */
void     ls_rng_seed(uint64_t s[2], uint64_t seed);
uint64_t ls_rng_next(uint64_t s[2]);
double   ls_rng_uniform(uint64_t s[2]);              /* [0, 1), 53 bits */
uint64_t ls_rng_below(uint64_t s[2], uint64_t n);    /* uniform integer in [0, n), unbiased; 0 if n == 0 */
double   ls_rng_exponential(uint64_t s[2], double mean);
double   ls_rng_normal(uint64_t s[2]);
double   ls_rng_gamma(uint64_t s[2], double shape, double scale); /* Marsaglia-Tsang */
/* Fisher-Yates over n elements of size bytes at base, last first (as Python's random.shuffle
 * walks): every dataset's shuffle, so one seed orders the same everywhere. */
void     ls_rng_shuffle(uint64_t s[2], void *base, size_t n, size_t size);

#endif
