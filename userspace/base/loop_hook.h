/* loop_hook.h — how a stage asks the driver's one loop to wait on something for it (the probes'
 * ring buffer fd, a periodic drain) without knowing the driver: the probes fill one, the
 * command hands it to the driver. */
#ifndef LATSCOPE_LOOP_HOOK_H
#define LATSCOPE_LOOP_HOOK_H

#include <stdint.h>

/* Something else the loop must wait on: the probes' ring buffer fd, a periodic drain. */
struct ls_loop_hook {
	int       fd;                 /* polled for POLLIN, or -1 for timer only */
	uint64_t  period_ns;          /* also called every period (0 = only on fd readiness) */
	/* Returns 1 to be called again on the loop's next turn (work left, done in slices so
	 * that frames are not held behind it), else 0. */
	int     (*on_ready)(void *ctx, uint64_t now_ns);
	void     *ctx;
	int       each_turn;          /* also called on every turn of the loop (cheap when idle) */
};

#endif
