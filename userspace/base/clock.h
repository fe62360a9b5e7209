/* clock.h — the one clock (ARCHITECTURE.md principle 2): CLOCK_MONOTONIC nanoseconds. */
#ifndef LATSCOPE_CLOCK_H
#define LATSCOPE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t ls_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
