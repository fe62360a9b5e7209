// SPDX-License-Identifier: GPL-2.0
/* follow.bpf.c — fork following for `latscope watch`: a process forked by a watched process is
 * watched too, in the same role (Python harnesses fork and spawn workers; `sh -c CMD` forks
 * CMD). Loaded only when user space asks (ls_probes_opts.follow_forks): bench leaves it out. */
#include "common.bpf.h"

SEC("tp_btf/sched_process_fork")
int BPF_PROG(ls_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid), ctgid = BPF_CORE_READ(child, tgid);
	struct ls_tgid_info *w, info;

	if (ptgid == ctgid) /* a new thread of a watched process: its tgid is watched already */
		return 0;
	w = bpf_map_lookup_elem(&ls_tgids, &ptgid);
	if (!w)
		return 0;
	info = *w;
	bpf_map_update_elem(&ls_tgids, &ctgid, &info, BPF_NOEXIST);
	return 0;
}
