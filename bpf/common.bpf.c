// SPDX-License-Identifier: GPL-2.0
/* common.bpf.c — the one definition of every map and setting the probe files share
 * (common.bpf.h declares them extern elsewhere; bpftool gen object links them by name). */
#define LS_MAPS_OWNER
#include "common.bpf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u64 ls_wake_bytes = 0;
__u64 ls_lost_by_kind[LS_EV__COUNT] = {};
