// SPDX-License-Identifier: GPL-2.0
/* net.bpf.c — bytes on tracked sockets: send start/end, arrival in the kernel, user-space read,
 * RTT and retransmits. TCP sequence numbers tie a frame's arrival to its read. */
#include "common.bpf.h"

/* tcp_sendmsg_locked: kernel send start on every path (send, write, io_uring). */
SEC("tp_btf/tcp_sendmsg_locked")
int BPF_PROG(ls_send_start, struct sock *sk, struct msghdr *msg, struct sk_buff *skb, int size_goal)
{
	struct ls_sock_info *info = ls_sock_task(sk);
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct ls_event *e;

	if (!info)
		return 0;
	if (info->role == LS_ROLE_CLIENT)
		ls_ssl_link(info->cookie);
	e = ls_reserve_sock(LS_EV_SEND_START, info, sk);
	if (!e)
		return 0;
	e->seq = BPF_CORE_READ(tp, write_seq);
	e->len = (__u32)BPF_CORE_READ(msg, msg_iter.count);
	e->aux = (__u32)size_goal;
	ls_submit(e);
	return 0;
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(ls_send_end, struct sock *sk, int ret, int flags)
{
	struct ls_sock_info *info;
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct ls_event *e;

	if (ret <= 0)
		return 0;
	info = ls_sock_task(sk);
	if (!info)
		return 0;
	e = ls_reserve_sock(LS_EV_SEND_END, info, sk);
	if (!e)
		return 0;
	e->seq = BPF_CORE_READ(tp, write_seq);
	e->len = (__u32)ret;
	ls_submit(e);
	return 0;
}

/* Softirq in the sender's context: only sockets already tracked. */
SEC("tp_btf/sk_data_ready")
int BPF_PROG(ls_arrived, struct sock *sk)
{
	struct ls_sock_info *info = ls_sock_get(sk);
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct ls_event *e;

	if (!info)
		return 0;
	e = ls_reserve_sock(LS_EV_ARRIVED, info, sk);
	if (!e)
		return 0;
	e->seq = BPF_CORE_READ(tp, rcv_nxt);
	e->aux = BPF_CORE_READ(tp, copied_seq);
	ls_submit(e);
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(ls_read, struct sock *sk, int ret, int flags)
{
	struct ls_sock_info *info;
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct ls_event *e;

	if (ret <= 0 || (flags & LS_MSG_PEEK))
		return 0;
	info = ls_sock_task(sk);
	if (!info)
		return 0;
	if (info->role == LS_ROLE_CLIENT)
		ls_ssl_link(info->cookie);
	e = ls_reserve_sock(LS_EV_READ, info, sk);
	if (!e)
		return 0;
	e->seq = BPF_CORE_READ(tp, copied_seq);
	e->len = (__u32)ret;
	e->aux = (__u32)bpf_get_current_pid_tgid(); /* the reader: a server's request handler thread */
	ls_submit(e);
	return 0;
}

/* Every received segment (pure ACKs too): emit only when the smoothed RTT changed. */
SEC("tp_btf/tcp_probe")
int BPF_PROG(ls_rtt, struct sock *sk, struct sk_buff *skb)
{
	struct ls_sock_info *info = ls_sock_get(sk);
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct ls_event *e;
	__u32 srtt_us;

	/* Client sockets only: attribution reads the harness's srtt. A server socket's srtt moves
	 * with every ACK of a frame (on loopback, in the harness's CPU): 0.8 events a frame for
	 * nothing. */
	if (!info || info->role != LS_ROLE_CLIENT)
		return 0;
	srtt_us = BPF_CORE_READ(tp, srtt_us) >> 3;
	if (srtt_us == info->last_srtt_us)
		return 0;
	info->last_srtt_us = srtt_us;
	e = ls_reserve_sock(LS_EV_RTT, info, sk);
	if (!e)
		return 0;
	e->seq = BPF_CORE_READ(tp, snd_una);
	e->aux = srtt_us;
	ls_submit(e);
	return 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(ls_retransmit, struct sock *sk, struct sk_buff *skb, int err)
{
	struct ls_sock_info *info = ls_sock_get(sk);
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct ls_event *e;

	if (!info)
		return 0;
	e = ls_reserve_sock(LS_EV_RETRANSMIT, info, sk);
	if (!e)
		return 0;
	e->seq = BPF_CORE_READ(tp, snd_una);
	e->aux = (__u32)err;
	ls_submit(e);
	return 0;
}
