// SPDX-License-Identifier: GPL-2.0
/* tls.bpf.c — uprobes on the libssl the harness mapped: handshake start/end (SSL_connect) and
 * the request (SSL_write). Arguments and return values only: plaintext is never read. */
#include "common.bpf.h"

static __always_inline int ls_tls_client(void)
{
	struct ls_tgid_info *w = ls_current_watched();

	return w && w->role == LS_ROLE_CLIENT;
}

/* The SSL* this thread entered the probed call with (map: tid -> SSL*), taken out of the map. */
static __always_inline int ls_ssl_pop(void *map, __u64 *ssl)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 *key = bpf_map_lookup_elem(map, &tid);

	if (!key)
		return 0;
	*ssl = *key;
	bpf_map_delete_elem(map, &tid);
	return 1;
}

/* An event of the client process; ts_ns 0 means now. */
static __always_inline void ls_client_event(__u16 kind, __u64 cookie, __u64 ts_ns, __u32 len)
{
	struct ls_event *e = ls_reserve(kind, cookie);

	if (!e)
		return;
	if (ts_ns)
		e->ts_ns = ts_ns;
	e->tgid = bpf_get_current_pid_tgid() >> 32;
	e->role = LS_ROLE_CLIENT;
	e->len = len;
	ls_submit(e);
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
		s = bpf_map_lookup_elem(&ls_ssl, &key);
	}
	bpf_map_update_elem(&ls_ssl_cur, &tid, &key, BPF_ANY);
	if (s && !s->cookie) /* also attached to SSL_do_handshake (Python): see ls_ssl_last */
		bpf_map_update_elem(&ls_ssl_last, &tid, &key, BPF_ANY);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(ls_ssl_connect_ret, int ret)
{
	struct ls_ssl_info *s;
	__u64 ssl;

	if (!ls_ssl_pop(&ls_ssl_cur, &ssl))
		return 0;
	s = bpf_map_lookup_elem(&ls_ssl, &ssl);
	if (!s || ret != 1 || s->done)
		return 0;
	s->done = 1;
	ls_client_event(LS_EV_TLS_START, s->cookie, s->start_ns, 0);
	ls_client_event(LS_EV_TLS_END, s->cookie, 0, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(ls_ssl_write, void *ssl, const void *buf, int num)
{
	__u64 key = (__u64)(unsigned long)ssl;
	struct ls_ssl_info *s;

	if (!ls_tls_client())
		return 0;
	s = bpf_map_lookup_elem(&ls_ssl, &key);
	ls_client_event(LS_EV_TLS_WRITE, s ? s->cookie : 0, 0, (__u32)num);
	return 0;
}

/* The SSL* is freed: its entry goes, so that a new SSL* at the same address (malloc reuses it)
 * is not taken for the old one's unfinished handshake and socket. */
SEC("uprobe")
int BPF_KPROBE(ls_ssl_free, void *ssl)
{
	__u64 key = (__u64)(unsigned long)ssl;

	if (!ls_tls_client())
		return 0;
	bpf_map_delete_elem(&ls_ssl, &key);
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
	struct ls_ssl_info *s;
	__u64 ssl;

	if (!ls_ssl_pop(&ls_ssl_rd, &ssl) || ret <= 0)
		return 0;
	s = bpf_map_lookup_elem(&ls_ssl, &ssl);
	ls_client_event(LS_EV_TLS_READ, s ? s->cookie : 0, 0, (__u32)ret);
	return 0;
}
