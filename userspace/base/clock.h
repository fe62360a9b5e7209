/* clock.h — the one clock (ARCHITECTURE.md principle 2): CLOCK_MONOTONIC nanoseconds. */
#ifndef LATSCOPE_CLOCK_H
#define LATSCOPE_CLOCK_H

#include <stdint.h>
#include <sys/time.h>
#include <time.h>

static inline uint64_t ls_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A struct timeval (getrusage's CPU times) in microseconds. */
static inline double ls_tv_us(const struct timeval *tv)
{
	return (double)tv->tv_sec * 1e6 + (double)tv->tv_usec;
}

/* This process's time namespace offset of CLOCK_MONOTONIC (its clock minus the host's, ns), from
 * /proc/self/timens_offsets; 0 outside one. Stamps the kernel takes or compares are the host's
 * clock even inside a namespace: io_uring's absolute timeouts and bpf_ktime_get_ns(). A stamp
 * of ours in the host's clock is t - offset. */
int64_t ls_clock_timens_offset_ns(void);

/* The "steal" column of /proc/stat's first line (all CPUs): CPU time the hypervisor gave to
 * others while this VM's vCPUs wanted it, in ms (USER_HZ ticks, 10 ms each). 0, or -1 when
 * stat_text has no such line. */
int ls_proc_stat_steal_ms(const char *stat_text, long user_hz, uint64_t *steal_ms);
/* The same, read from /proc/stat now. 0 or -1. */
int ls_clock_steal_ms(uint64_t *steal_ms);

#endif
