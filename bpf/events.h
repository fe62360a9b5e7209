/* events.h — the kernel/user ABI: plain fixed-size structs the probes emit through the ring
 * buffer. Only __u8/__u32/__u64 fields, no pointers; layout pinned by static asserts. */
#ifndef LATSCOPE_EVENTS_H
#define LATSCOPE_EVENTS_H

#ifdef __BPF__
/* vmlinux.h provides __u32/__u64 */
#else
#include <linux/types.h>
#endif

enum ls_event_kind {
	LS_EV_NONE = 0,
};

/* Common header of every event. */
struct ls_event_hdr {
	__u64 ts_ns;     /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u64 cookie;    /* socket cookie (0 when not about a socket) */
	__u32 tgid;
	__u16 kind;      /* enum ls_event_kind */
	__u16 reserved;
};

_Static_assert(sizeof(struct ls_event_hdr) == 24, "ls_event_hdr layout is ABI");

#endif
