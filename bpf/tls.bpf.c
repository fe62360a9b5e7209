// SPDX-License-Identifier: GPL-2.0
/* tls.bpf.c — uprobes on the libssl the harness mapped: handshake start/end (SSL_connect) and
 * the request (SSL_write). Arguments and return values only: plaintext is never read. */
#include "common.bpf.h"

static __always_inline int ls_tls_client(void)
{
	struct ls_tgid_info *w = ls_current_watched();

	return w && w->role == LS_ROLE_CLIENT;
}

/* Non-blocking: curl calls SSL_connect several times per handshake (-1 WANT_READ ... 1). The
 * first entry starts the handshake; an entry on a finished session is a new one (SSL* reuse). */
SEC("uprobe")
int BPF_KPROBE(ls_ssl_connect, void *ssl)
{
	__u64 key = (__u64)(unsigned long)ssl;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct ls_ssl_info *s;

	if (!ls_tls_client())
		return 0;
	s = bpf_map_lookup_elem(&ls_ssl, &key);
	if (!s || s->done) {
		struct ls_ssl_info fresh = { .start_ns = bpf_ktime_get_ns() };

		bpf_map_update_elem(&ls_ssl, &key, &fresh, BPF_ANY);
	}
	bpf_map_update_elem(&ls_ssl_cur, &tid, &key, BPF_ANY);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(ls_ssl_connect_ret, int ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 *key = bpf_map_lookup_elem(&ls_ssl_cur, &tid);
	struct ls_ssl_info *s;
	struct ls_event *e;
	__u64 ssl;

	if (!key)
		return 0;
	ssl = *key;
	bpf_map_delete_elem(&ls_ssl_cur, &tid);
	s = bpf_map_lookup_elem(&ls_ssl, &ssl);
	if (!s || ret != 1 || s->done)
		return 0;
	s->done = 1;
	e = ls_reserve(LS_EV_TLS_START, s->cookie);
	if (e) {
		e->ts_ns = s->start_ns;
		e->tgid = bpf_get_current_pid_tgid() >> 32;
		e->role = LS_ROLE_CLIENT;
		ls_submit(e);
	}
	e = ls_reserve(LS_EV_TLS_END, s->cookie);
	if (e) {
		e->tgid = bpf_get_current_pid_tgid() >> 32;
		e->role = LS_ROLE_CLIENT;
		ls_submit(e);
	}
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(ls_ssl_write, void *ssl, const void *buf, int num)
{
	__u64 key = (__u64)(unsigned long)ssl;
	struct ls_ssl_info *s;
	struct ls_event *e;

	if (!ls_tls_client())
		return 0;
	s = bpf_map_lookup_elem(&ls_ssl, &key);
	e = ls_reserve(LS_EV_TLS_WRITE, s ? s->cookie : 0);
	if (!e)
		return 0;
	e->tgid = bpf_get_current_pid_tgid() >> 32;
	e->role = LS_ROLE_CLIENT;
	e->len = (__u32)num;
	ls_submit(e);
	return 0;
}

/* Opt-in only (~10 us per hit here: the probed instruction is single-stepped). */
SEC("uprobe")
int BPF_KPROBE(ls_ssl_read, void *ssl)
{
	__u64 key = (__u64)(unsigned long)ssl;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	if (!ls_tls_client())
		return 0;
	bpf_map_update_elem(&ls_ssl_rd, &tid, &key, BPF_ANY);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(ls_ssl_read_ret, int ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 *key = bpf_map_lookup_elem(&ls_ssl_rd, &tid);
	struct ls_ssl_info *s;
	struct ls_event *e;
	__u64 ssl;

	if (!key)
		return 0;
	ssl = *key;
	bpf_map_delete_elem(&ls_ssl_rd, &tid);
	if (ret <= 0)
		return 0;
	s = bpf_map_lookup_elem(&ls_ssl, &ssl);
	e = ls_reserve(LS_EV_TLS_READ, s ? s->cookie : 0);
	if (!e)
		return 0;
	e->tgid = bpf_get_current_pid_tgid() >> 32;
	e->role = LS_ROLE_CLIENT;
	e->len = (__u32)ret;
	ls_submit(e);
	return 0;
}
