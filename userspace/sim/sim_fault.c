/* sim/sim_fault.c — seeded per-request fault injection: which kind, from the request's own
 * random stream, so a run with the same seed and request ids fails the same requests. */
#include <string.h>
#include "sim.h"

static const char *const names[SIM_FAULT__COUNT] = {
	[SIM_FAULT_NONE] = "none",
	[SIM_FAULT_HTTP500] = "http500",
	[SIM_FAULT_HTTP429] = "http429",
	[SIM_FAULT_RESET_BEFORE_HEADERS] = "reset-before-headers",
	[SIM_FAULT_RESET_MID_STREAM] = "reset-mid-stream",
	[SIM_FAULT_STALL] = "stall",
	[SIM_FAULT_MALFORMED_FRAME] = "malformed-frame",
	[SIM_FAULT_TRUNCATED_CHUNK] = "truncated-chunk",
};

const char *sim_fault_name(enum sim_fault f)
{
	return (unsigned)f < SIM_FAULT__COUNT ? names[f] : "unknown";
}

int sim_fault_parse_kinds(const char *list, unsigned *mask)
{
	*mask = 0;
	const char *p = list;
	while (*p) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		int found = 0;
		if (n == 5 && !strncmp(p, "mixed", 5)) {
			for (int k = 1; k < SIM_FAULT__COUNT; k++)
				*mask |= 1u << k;
			found = 1;
		}
		for (int k = 1; k < SIM_FAULT__COUNT && !found; k++) {
			if (strlen(names[k]) == n && !strncmp(p, names[k], n)) {
				*mask |= 1u << k;
				found = 1;
			}
		}
		if (!found)
			return -1;
		if (!e)
			break;
		p = e + 1;
	}
	return *mask ? 0 : -1;
}

enum sim_fault sim_fault_pick(double rate, unsigned mask, uint64_t *rng)
{
	if (rate <= 0 || !mask)
		return SIM_FAULT_NONE;
	if (sim_rng_unit(rng) >= rate)
		return SIM_FAULT_NONE;
	int kinds[SIM_FAULT__COUNT], n = 0;
	for (int k = 1; k < SIM_FAULT__COUNT; k++)
		if (mask & (1u << k))
			kinds[n++] = k;
	return (enum sim_fault)kinds[sim_rng_next(rng) % (uint64_t)n];
}
