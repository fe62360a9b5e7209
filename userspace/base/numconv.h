/* numconv.h — JSON numbers (doubles) into integer fields. A C cast of a double outside the
 * target's range (or NaN, or inf) is undefined behaviour, and record files, servers' answers
 * and clients' requests can carry any number: these clamp instead. */
#ifndef LATSCOPE_NUMCONV_H
#define LATSCOPE_NUMCONV_H

#include <stdint.h>

/* v clamped to [lo, hi] and truncated toward zero; NaN gives lo. lo and hi within +-2^53. */
static inline int64_t ls_d2i(double v, int64_t lo, int64_t hi)
{
	if (!(v >= (double)lo))
		return lo;
	if (v >= (double)hi)
		return hi;
	return (int64_t)v;
}

/* v clamped to [0, UINT64_MAX], truncated; NaN and negatives give 0. */
static inline uint64_t ls_d2u64(double v)
{
	if (!(v > 0.0))
		return 0;
	if (v >= 18446744073709551616.0) /* 2^64 */
		return UINT64_MAX;
	return (uint64_t)v;
}

#endif
