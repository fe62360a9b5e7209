/* mpi_clock.c — see mpi.h: a rank's stamps in rank 0's clock, from the two ping-pong samples.
 * Plain arithmetic, in every build (latscope report merges rank files without MPI). */
#include "base/record_fields.h"
#include "mpi/mpi.h"

int64_t ls_clock_offset_at(const struct ls_clock_fit *f, uint64_t t0)
{
	if (!f->have_after || f->after_at_ns == f->at_ns)
		return f->offset_ns;
	/* Linear between the samples: the two clocks run at slightly different rates (NTP slews
	 * each host's CLOCK_MONOTONIC on its own). Doubles: a drift term is far below 2^53 ns. */
	double span = (double)f->after_at_ns - (double)f->at_ns;
	double into = (double)t0 - (double)f->at_ns;
	double step = (double)f->offset_after_ns - (double)f->offset_ns;
	double off = (double)f->offset_ns + step * into / span;
	/* A fit read from a file may be anything: keep the cast defined. */
	if (!(off > -9.2e18 && off < 9.2e18))
		return f->offset_ns;
	return (int64_t)off;
}

uint64_t ls_clock_to_root(const struct ls_clock_fit *f, uint64_t t_local)
{
	if (!t_local)
		return 0;
	/* The offset is a function of rank 0's time; t_local - offset is that time to within the
	 * drift over the offset itself (ns for a clock ms apart). */
	uint64_t t0 = t_local - (uint64_t)f->offset_ns; /* unsigned: wraps, never overflows */
	uint64_t root = t_local - (uint64_t)ls_clock_offset_at(f, t0);
	/* A stamp stays a stamp (0 is "did not happen"); one that would land before the clock's
	 * zero (or past 2^63: an offset larger than the stamp) is 1. */
	return root && root < (1ull << 63) ? root : 1;
}

static uint64_t to_root(void *fit, uint64_t t)
{
	return ls_clock_to_root(fit, t);
}

void ls_clock_request_to_root(const struct ls_clock_fit *f, struct ls_request *r)
{
	ls_request_map_stamps(r, to_root, (void *)f);
}

void ls_clock_run_to_root(const struct ls_clock_fit *f, struct ls_run *run)
{
	ls_run_map_stamps(run, to_root, (void *)f);
}

double ls_clock_drift_ppm(const struct ls_clock_fit *f)
{
	if (!f->have_after || f->after_at_ns == f->at_ns)
		return 0;
	return (double)(f->offset_after_ns - f->offset_ns) * 1e6 / ((double)f->after_at_ns - (double)f->at_ns);
}
