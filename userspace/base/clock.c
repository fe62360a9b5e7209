/* clock.c — see clock.h: the time namespace's offset, read once. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "base/clock.h"

static int64_t read_offset(void)
{
	FILE *f = fopen("/proc/self/timens_offsets", "r");
	char line[128];
	long long s = 0, ns = 0;
	int found = 0;
	if (!f) /* no file: a kernel without time namespaces, so no offset */
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "monotonic %lld %lld", &s, &ns) == 2;
	fclose(f);
	return found ? (int64_t)s * 1000000000ll + ns : 0;
}

int64_t ls_clock_timens_offset_ns(void)
{
	static int64_t offset;
	static int known;
	if (!known) { /* a process's namespace is fixed once it runs: read it once */
		offset = read_offset();
		known = 1;
	}
	return offset;
}

int ls_proc_stat_steal_ms(const char *stat_text, long user_hz, uint64_t *steal_ms)
{
	unsigned long long f[8];

	if (!stat_text || strncmp(stat_text, "cpu ", 4) || user_hz <= 0 ||
	    sscanf(stat_text + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &f[0], &f[1], &f[2], &f[3], &f[4],
		   &f[5], &f[6], &f[7]) != 8)
		return -1;
	*steal_ms = f[7] * 1000ull / (unsigned long long)user_hz;
	return 0;
}

int ls_clock_steal_ms(uint64_t *steal_ms)
{
	char line[512];
	FILE *f = fopen("/proc/stat", "r");
	int rc = -1;

	if (!f)
		return -1;
	if (fgets(line, sizeof(line), f))
		rc = ls_proc_stat_steal_ms(line, sysconf(_SC_CLK_TCK), steal_ms);
	fclose(f);
	return rc;
}
