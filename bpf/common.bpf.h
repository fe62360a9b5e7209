/* common.bpf.h — maps and helpers shared by every probe file. All probe files (bpf/NAME.bpf.c)
 * link into one object (`bpftool gen object`): maps are defined once, in common.bpf.c
 * (LS_MAPS_OWNER), and declared `extern` here for the others; the linker checks that the
 * definitions match. common.bpf.c must be the FIRST object linked: libbpf 1.1's linker leaves
 * offset 0 in the .maps BTF for a map seen extern before its definition, and the load then fails
 * with "map relo failed to find map for section '.maps'" (measured; the Makefile links in
 * wildcard order, which sorts common.bpf.c first). */
#ifndef LATSCOPE_COMMON_BPF_H
#define LATSCOPE_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "events.h"

#ifdef LS_MAPS_OWNER
#define LS_MAP
#define LS_RODATA
#define LS_GLOBAL
#else
#define LS_MAP extern
#define LS_RODATA extern
#define LS_GLOBAL extern
#endif

#define LS_AF_INET 2
#define LS_AF_INET6 10
#define LS_IPPROTO_TCP 6
#define LS_MSG_PEEK 2

/* Tracked socket: what a socket pointer means right now. Re-created at connect/ESTABLISHED and
 * deleted at close, because socket memory is reused (kernel-hooks.md: keeping stale entries
 * merged new connections into old ones). */
struct ls_sock_info {
	__u64 cookie;
	__u32 tgid;
	__u32 role;
	__u32 last_srtt_us;
	__u32 pad;
};

/* A connect() in flight on this thread: sys_enter_connect -> SYN_SENT -> sys_exit_connect. */
struct ls_pending_connect {
	__u64 ts_ns;
	__u64 cookie;
	__s32 fd;
	__u32 pad;
};

/* A TLS session (key: SSL* as __u64): linked to its socket by a send/recv inside SSL_connect. */
struct ls_ssl_info {
	__u64 start_ns;
	__u64 cookie;
	__u32 done;
	__u32 pad;
};

/* Settings written between open and load. */
LS_RODATA const volatile __u64 ls_wake_bytes; /* force a wake-up above this much unread data; 0 never */
/* 1 from the forced wake-up until user space drained the ring (.bss, written by both sides). */
LS_GLOBAL __u32 ls_wake_sent;

/* Events lost because the ring buffer was full, per kind (.bss: user space reads it mmapped,
 * without a syscall). Rare by design, so one atomic add on a shared line costs nothing. */
LS_GLOBAL __u64 ls_lost_by_kind[LS_EV__COUNT];

LS_MAP struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 * 1024 * 1024);
} ls_events SEC(".maps");

LS_MAP struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct ls_tgid_info);
} ls_tgids SEC(".maps");

LS_MAP struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct ls_listen_info);
} ls_listen SEC(".maps");

LS_MAP struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct ls_sock_info);
} ls_socks SEC(".maps");

LS_MAP struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct ls_pending_connect);
} ls_connects SEC(".maps");

LS_MAP struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct ls_ssl_info);
} ls_ssl SEC(".maps");

/* SSL* inside SSL_connect (or SSL_read, opt-in) on this thread (key: tid). */
LS_MAP struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} ls_ssl_cur SEC(".maps");

LS_MAP struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} ls_ssl_rd SEC(".maps");

LS_MAP struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u64);
} ls_lost SEC(".maps");

/* The last SSL* this thread started a handshake step on, until a send links it (key: tid).
 * Python's asyncio drives SSL through memory BIOs: its socket writes come right after the
 * SSL_do_handshake call returns, never inside it. */
LS_MAP struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} ls_ssl_last SEC(".maps");

/* Reserves an event; on a full ring counts the loss per kind and per socket. */
static __always_inline struct ls_event *ls_reserve(__u16 kind, __u64 cookie)
{
	struct ls_event *e = bpf_ringbuf_reserve(&ls_events, sizeof(*e), 0);

	if (!e) {
		if (kind < LS_EV__COUNT)
			__sync_fetch_and_add(&ls_lost_by_kind[kind], 1);
		if (cookie) {
			__u64 one = 1, *lost = bpf_map_lookup_elem(&ls_lost, &cookie);

			if (lost)
				__sync_fetch_and_add(lost, 1);
			else
				bpf_map_update_elem(&ls_lost, &cookie, &one, BPF_ANY);
		}
		return NULL;
	}
	e->ts_ns = bpf_ktime_get_ns();
	e->cookie = cookie;
	e->tgid = 0;
	e->kind = kind;
	e->role = 0;
	e->flags = 0;
	e->seq = 0;
	e->len = 0;
	e->lport = 0;
	e->rport = 0;
	e->aux = 0;
	return e;
}

/* No wake-up per event (~4 us each here: an IPI, a VM exit): user space drains in its loop and
 * on a timer, and is woken only when the ring fills past ls_wake_bytes; then once, until user
 * space has drained it (it clears ls_wake_sent), not on every event while it catches up. */
static __always_inline void ls_submit(struct ls_event *e)
{
	__u64 flags = BPF_RB_NO_WAKEUP;

	if (ls_wake_bytes && !ls_wake_sent && bpf_ringbuf_query(&ls_events, BPF_RB_AVAIL_DATA) >= ls_wake_bytes) {
		ls_wake_sent = 1;
		flags = BPF_RB_FORCE_WAKEUP;
	}
	bpf_ringbuf_submit(e, flags);
}

/* An event on a tracked socket: its cookie, owner, role and ports filled in. */
static __always_inline struct ls_event *ls_reserve_sock(__u16 kind, const struct ls_sock_info *info,
							const struct sock *sk)
{
	struct ls_event *e = ls_reserve(kind, info->cookie);

	if (!e)
		return NULL;
	e->tgid = info->tgid;
	e->role = (__u8)info->role;
	e->lport = BPF_CORE_READ(sk, __sk_common.skc_num);
	e->rport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	return e;
}

static __always_inline struct ls_sock_info *ls_sock_get(const struct sock *sk)
{
	__u64 key = (__u64)(unsigned long)sk;

	return bpf_map_lookup_elem(&ls_socks, &key);
}

static __always_inline struct ls_tgid_info *ls_current_watched(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	return bpf_map_lookup_elem(&ls_tgids, &tgid);
}

static __always_inline int ls_is_tcp(const struct sock *sk)
{
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);

	return BPF_CORE_READ(sk, sk_protocol) == LS_IPPROTO_TCP &&
	       (family == LS_AF_INET || family == LS_AF_INET6);
}

/* Starts tracking sk as a new socket (replacing whatever the pointer meant before). */
static __always_inline struct ls_sock_info *ls_sock_track(struct sock *sk, __u32 tgid, __u32 role)
{
	__u64 key = (__u64)(unsigned long)sk;
	struct ls_sock_info info = {
		.cookie = bpf_get_socket_cookie(sk),
		.tgid = tgid,
		.role = role,
	};

	bpf_map_update_elem(&ls_socks, &key, &info, BPF_ANY);
	return bpf_map_lookup_elem(&ls_socks, &key);
}

/* In process context: the socket's entry, or a new one when the current process is watched and
 * sk is TCP (a socket connected or accepted before the probes were attached). */
static __always_inline struct ls_sock_info *ls_sock_task(struct sock *sk)
{
	struct ls_sock_info *info = ls_sock_get(sk);
	struct ls_tgid_info *w;

	if (info)
		return info;
	w = ls_current_watched();
	if (!w || !ls_is_tcp(sk))
		return NULL;
	if (BPF_CORE_READ(sk, __sk_common.skc_state) == 7 /* TCP_CLOSE */)
		return NULL; /* closed (its entry dropped): about to be freed, its pointer reused */
	return ls_sock_track(sk, bpf_get_current_pid_tgid() >> 32, w->role);
}

/* Inside SSL_connect on this thread: the socket used now is the session's socket (curl 7.88
 * uses a custom BIO, the SSL object holds no fd). */
static __always_inline void ls_ssl_link(__u64 cookie)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 *ssl = bpf_map_lookup_elem(&ls_ssl_cur, &tid);
	struct ls_ssl_info *s;
	int last = 0;

	if (!ssl) { /* outside any SSL call: the session a memory-BIO handshake step left */
		ssl = bpf_map_lookup_elem(&ls_ssl_last, &tid);
		last = 1;
	}
	if (!ssl)
		return;
	s = bpf_map_lookup_elem(&ls_ssl, ssl);
	if (s && !s->cookie)
		s->cookie = cookie;
	if (last)
		bpf_map_delete_elem(&ls_ssl_last, &tid);
}

#endif
