// SPDX-License-Identifier: GPL-2.0
/* conn.bpf.c — connection life: connect() call and return, TCP state changes (SYN_SENT,
 * ESTABLISHED, close, TIME_WAIT), and which sockets are tracked at all. */
#include "common.bpf.h"

#define LS_TCP_ESTABLISHED 1
#define LS_TCP_SYN_SENT 2
#define LS_TCP_SYN_RECV 3
#define LS_TCP_CLOSE 7
#define LS_TCP_LISTEN 10

SEC("tracepoint/syscalls/sys_enter_connect")
int ls_connect_enter(struct trace_event_raw_sys_enter *ctx)
{
	struct ls_tgid_info *w = ls_current_watched();
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct ls_pending_connect p = {};

	if (!w)
		return 0;
	p.ts_ns = bpf_ktime_get_ns();
	p.fd = (__s32)ctx->args[0];
	bpf_map_update_elem(&ls_connects, &tid, &p, BPF_ANY);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_connect")
int ls_connect_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct ls_pending_connect *p = bpf_map_lookup_elem(&ls_connects, &tid);
	struct ls_event *e;

	if (!p)
		return 0;
	if (p->cookie) {
		e = ls_reserve(LS_EV_CONNECT_RET, p->cookie);
		if (e) {
			e->tgid = bpf_get_current_pid_tgid() >> 32;
			e->role = LS_ROLE_CLIENT;
			e->aux = (__u32)ctx->ret;
			ls_submit(e);
		}
	}
	bpf_map_delete_elem(&ls_connects, &tid);
	return 0;
}

/* SYN_SENT runs inside connect() (process context): the tgid filter holds, and the pending
 * connect on this thread gives the connect() time and fd. */
static __always_inline void ls_on_syn_sent(struct sock *sk)
{
	struct ls_tgid_info *w = ls_current_watched();
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct ls_pending_connect *p;
	struct ls_sock_info *info;
	struct ls_event *e;
	__u64 now = bpf_ktime_get_ns();

	if (!w)
		return;
	info = ls_sock_track(sk, bpf_get_current_pid_tgid() >> 32, LS_ROLE_CLIENT);
	if (!info)
		return;
	p = bpf_map_lookup_elem(&ls_connects, &tid);
	if (p)
		p->cookie = info->cookie;
	e = ls_reserve_sock(LS_EV_CONNECT, info, sk);
	if (!e)
		return;
	if (p) {
		e->ts_ns = p->ts_ns;
		e->len = (__u32)(now - p->ts_ns);
		e->aux = (__u32)p->fd;
	} else {
		e->aux = (__u32)-1;
	}
	ls_submit(e);
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(ls_set_state, struct sock *sk, int oldstate, int newstate)
{
	struct ls_sock_info *info;
	struct ls_event *e;
	__u16 kind;

	if (newstate == LS_TCP_SYN_SENT) {
		ls_on_syn_sent(sk);
		return 0;
	}
	if (newstate == LS_TCP_LISTEN) {
		/* listen() runs in the server's own context: remember its port for ESTABLISHED. */
		struct ls_tgid_info *w = ls_current_watched();
		struct ls_listen_info l = { .tgid = bpf_get_current_pid_tgid() >> 32 };
		__u32 port = BPF_CORE_READ(sk, __sk_common.skc_num);

		if (w && w->role == LS_ROLE_SERVER)
			bpf_map_update_elem(&ls_listen, &port, &l, BPF_ANY);
		return 0;
	}
	if (newstate == LS_TCP_SYN_RECV && oldstate == LS_TCP_LISTEN) {
		/* A new child socket: its pointer may still hold the entry of a freed socket that was
		 * tracked again after its close (a TLS close_notify sent after it), measured to merge
		 * a new connection into the old one's cookie. Forget it; ESTABLISHED tracks afresh. */
		__u64 key = (__u64)(unsigned long)sk;

		bpf_map_delete_elem(&ls_socks, &key);
		return 0;
	}
	info = ls_sock_get(sk);
	if (!info && newstate == LS_TCP_ESTABLISHED && oldstate == LS_TCP_SYN_RECV) {
		/* Softirq, often in the client's context on loopback: match the listen port, never
		 * the current tgid. The request usually arrives before accept(). */
		__u32 port = BPF_CORE_READ(sk, __sk_common.skc_num);
		struct ls_listen_info *l = bpf_map_lookup_elem(&ls_listen, &port);

		if (!l)
			return 0;
		info = ls_sock_track(sk, l->tgid, LS_ROLE_SERVER);
	}
	if (!info)
		return 0;
	if (newstate == LS_TCP_ESTABLISHED)
		kind = LS_EV_ESTABLISHED;
	else if (newstate == LS_TCP_CLOSE)
		kind = LS_EV_CLOSE;
	else
		kind = LS_EV_STATE;
	e = ls_reserve_sock(kind, info, sk);
	if (e) {
		e->aux = ((__u32)oldstate << 8) | (__u32)newstate;
		ls_submit(e);
	}
	if (newstate == LS_TCP_CLOSE) {
		__u64 key = (__u64)(unsigned long)sk;

		bpf_map_delete_elem(&ls_socks, &key);
	}
	return 0;
}
