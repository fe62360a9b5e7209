/* rng.c — see rng.h. */
#include <math.h>
#include "base/rng.h"

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void ls_rng_seed(uint64_t s[2], uint64_t seed)
{
	uint64_t x = seed;
	s[0] = ls_splitmix64(&x);
	s[1] = ls_splitmix64(&x);
	if (!s[0] && !s[1])
		s[1] = 1;
}

uint64_t ls_rng_next(uint64_t s[2])
{
	uint64_t s0 = s[0], s1 = s[1];
	uint64_t result = rotl(s0 + s1, 17) + s0;
	s1 ^= s0;
	s[0] = rotl(s0, 49) ^ s1 ^ (s1 << 21);
	s[1] = rotl(s1, 28);
	return result;
}

double ls_rng_uniform(uint64_t s[2])
{
	return ls_rng_to_unit(ls_rng_next(s));
}

uint64_t ls_rng_below(uint64_t s[2], uint64_t n)
{
	if (n == 0)
		return 0;
	/* Lemire's multiply-shift with rejection of the biased low zone. */
	unsigned __int128 m = (unsigned __int128)ls_rng_next(s) * n;
	uint64_t low = (uint64_t)m;
	if (low < n) {
		uint64_t threshold = -n % n;
		while (low < threshold) {
			m = (unsigned __int128)ls_rng_next(s) * n;
			low = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}

void ls_rng_shuffle(uint64_t s[2], void *base, size_t n, size_t size)
{
	unsigned char *b = base;
	for (size_t i = n; i > 1; i--) {
		unsigned char *x = b + (i - 1) * size, *y = b + (size_t)ls_rng_below(s, i) * size;
		for (size_t k = 0; k < size; k++) {
			unsigned char t = x[k];
			x[k] = y[k];
			y[k] = t;
		}
	}
}

double ls_rng_exponential(uint64_t s[2], double mean)
{
	/* 1 - u is in (0, 1]: log never sees 0. */
	return -log(1.0 - ls_rng_uniform(s)) * mean;
}

double ls_rng_normal(uint64_t s[2])
{
	/* Marsaglia polar method; the second value is dropped to keep the state simple. */
	for (;;) {
		double u = 2.0 * ls_rng_uniform(s) - 1.0, v = 2.0 * ls_rng_uniform(s) - 1.0;
		double q = u * u + v * v;
		if (q > 0.0 && q < 1.0)
			return u * sqrt(-2.0 * log(q) / q);
	}
}

double ls_rng_gamma(uint64_t s[2], double shape, double scale)
{
	if (!(shape > 0.0) || !(scale > 0.0))
		return 0.0;
	if (shape < 1.0) {
		/* Boost: G(a) = G(a + 1) * U^(1/a). */
		double u = ls_rng_uniform(s);
		return ls_rng_gamma(s, shape + 1.0, scale) * pow(u > 0.0 ? u : 0x1.0p-53, 1.0 / shape);
	}
	double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
	for (;;) {
		double x = ls_rng_normal(s), v = 1.0 + c * x;
		if (v <= 0.0)
			continue;
		v = v * v * v;
		double u = ls_rng_uniform(s);
		if (u < 1.0 - 0.0331 * x * x * x * x)
			return d * v * scale;
		if (u > 0.0 && log(u) < 0.5 * x * x + d * (1.0 - v + log(v)))
			return d * v * scale;
	}
}
