// SPDX-License-Identifier: GPL-2.0
/* net.bpf.c — socket-level probes (placeholder until the probes stage lands). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "events.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 ls_self_tgid = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} ls_events SEC(".maps");
