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

/* This process's time namespace offset of CLOCK_MONOTONIC (its clock minus the host's, ns), from
 * /proc/self/timens_offsets; 0 outside one. Stamps the kernel takes or compares are the host's
 * clock even inside a namespace: io_uring's absolute timeouts and bpf_ktime_get_ns(). A stamp
 * of ours in the host's clock is t - offset. */
int64_t ls_clock_timens_offset_ns(void);

#endif
