/* events.h — the kernel/user ABI: the one fixed-size event the probes emit through the ring
 * buffer, and the values of the maps user space fills. Only __u8/__u16/__u32/__u64 fields, no
 * pointers, no payload bytes: lengths, TCP sequence numbers and timestamps. Layout pinned by
 * static asserts (a change here is an ABI change for both sides). */
#ifndef LATSCOPE_EVENTS_H
#define LATSCOPE_EVENTS_H

#ifdef __BPF__
/* vmlinux.h provides __u8/__u16/__u32/__u64 */
#else
#include <stddef.h>
#include <linux/types.h>
#endif

/* What happened. Per kind, the meaning of seq / len / aux (all else is common):
 *   CONNECT      connect() called (ts = sys_enter_connect; socket known at SYN_SENT)
 *                aux = fd, len = ns from connect() to SYN_SENT
 *   CONNECT_RET  connect() returned: aux = return value (e.g. -EINPROGRESS as u32)
 *   ESTABLISHED  TCP up: SYN_SENT->ESTABLISHED (client) or SYN_RECV->ESTABLISHED (server, softirq)
 *   STATE        any other state change of a tracked socket: aux = old << 8 | new
 *   CLOSE        -> TCP_CLOSE: aux = old << 8 | new; the socket is no longer tracked
 *   SEND_START   tcp_sendmsg_locked: seq = write_seq (next byte queued), len = bytes still to
 *                send in this sendmsg, aux = size_goal. Fires per skb filled: maybe several/send
 *   SEND_END     sock_send_length, ret > 0: seq = write_seq after, len = bytes sent
 *   ARRIVED      sk_data_ready: seq = rcv_nxt (bytes before it are in the kernel), aux = copied_seq
 *   READ         sock_recv_length, ret > 0, not MSG_PEEK: seq = copied_seq after, len = ret,
 *                aux = the reading thread's id (tid): on a server, the thread that handles the
 *                request (attribution joins its llama_tokenize calls by it)
 *   RTT          tcp_probe when srtt changed: aux = srtt in us, seq = snd_una
 *   RETRANSMIT   tcp_retransmit_skb: seq = snd_una, aux = err
 *   TLS_START    first SSL_connect entry of a handshake (emitted with TLS_END, ts = entry)
 *   TLS_END      SSL_connect returned 1
 *   TLS_WRITE    SSL_write entry: len = plaintext bytes asked
 *   TLS_READ     SSL_read returned > 0 (opt-in only): len = plaintext bytes
 * cookie is the socket cookie (SO_COOKIE); 0 when the socket is not known (TLS before link). */
enum ls_event_kind {
	LS_EV_NONE = 0,
	LS_EV_CONNECT,
	LS_EV_CONNECT_RET,
	LS_EV_ESTABLISHED,
	LS_EV_STATE,
	LS_EV_CLOSE,
	LS_EV_SEND_START,
	LS_EV_SEND_END,
	LS_EV_ARRIVED,
	LS_EV_READ,
	LS_EV_RTT,
	LS_EV_RETRANSMIT,
	LS_EV_TLS_START,
	LS_EV_TLS_END,
	LS_EV_TLS_WRITE,
	LS_EV_TLS_READ,
	LS_EV__COUNT
};

/* Which end of a connection the socket is, from the tgid map or how it was tracked. */
enum ls_role {
	LS_ROLE_NONE = 0,
	LS_ROLE_CLIENT = 1, /* the harness (its connect() created the socket) */
	LS_ROLE_SERVER = 2, /* accepted on a listen port of a watched server */
};

struct ls_event {
	__u64 ts_ns;  /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u64 cookie; /* socket cookie, 0 when unknown */
	__u32 tgid;   /* owner of the socket (not the task a softirq interrupted) */
	__u16 kind;   /* enum ls_event_kind */
	__u8  role;   /* enum ls_role */
	__u8  flags;  /* reserved, 0 */
	__u32 seq;    /* TCP sequence number, per kind (above) */
	__u32 len;    /* bytes, per kind */
	__u16 lport;  /* local port, host order (0 before bind) */
	__u16 rport;  /* remote port, host order */
	__u32 aux;    /* per kind */
};

/* Value of ls_tgids (key: __u32 tgid): which processes are watched, and as what. */
struct ls_tgid_info {
	__u32 role; /* enum ls_role */
};

/* Value of ls_listen (key: __u32 local port): listen ports of watched servers. */
struct ls_listen_info {
	__u32 tgid;
};

/* Losses (ring buffer full): ls_lost_by_kind[LS_EV__COUNT] (__u64, in .bss) per kind, and
 * ls_lost (LRU hash __u64 cookie -> __u64) per socket, so user space can mark the requests the
 * lost events belonged to. */

_Static_assert(sizeof(struct ls_event) == 40, "ls_event layout is ABI");
_Static_assert(__builtin_offsetof(struct ls_event, ts_ns) == 0, "ls_event.ts_ns");
_Static_assert(__builtin_offsetof(struct ls_event, cookie) == 8, "ls_event.cookie");
_Static_assert(__builtin_offsetof(struct ls_event, tgid) == 16, "ls_event.tgid");
_Static_assert(__builtin_offsetof(struct ls_event, kind) == 20, "ls_event.kind");
_Static_assert(__builtin_offsetof(struct ls_event, role) == 22, "ls_event.role");
_Static_assert(__builtin_offsetof(struct ls_event, seq) == 24, "ls_event.seq");
_Static_assert(__builtin_offsetof(struct ls_event, len) == 28, "ls_event.len");
_Static_assert(__builtin_offsetof(struct ls_event, lport) == 32, "ls_event.lport");
_Static_assert(__builtin_offsetof(struct ls_event, rport) == 34, "ls_event.rport");
_Static_assert(__builtin_offsetof(struct ls_event, aux) == 36, "ls_event.aux");
_Static_assert(sizeof(struct ls_tgid_info) == 4, "ls_tgid_info layout is ABI");
_Static_assert(sizeof(struct ls_listen_info) == 4, "ls_listen_info layout is ABI");
_Static_assert(LS_EV__COUNT == 16, "new event kinds: update ls_event_kind_name() and counters");

/* One engine step (bpf/engine.bpf.c: a uprobe/uretprobe pair on llama.cpp's llama_decode in the
 * watched server), sent through its own ring buffer (ls_steps), one record per step. What the
 * step's batch carried: n_tokens and, per run of tokens of one sequence id (the first seq id of
 * each token; llama-server's seq id is its slot id, and it adds each slot's tokens together, so a
 * run is a sequence; user space merges a sequence's runs), how many tokens and the run's first
 * position. Token contents are never read.
 * start_ns / end_ns: bpf_ktime_get_ns() at entry / return (CLOCK_MONOTONIC). */
#define LS_STEP_SEQS 16        /* runs of one seq id kept per step; more: LS_STEP_MORE_SEQS */
#define LS_STEP_SCAN_MAX 8192  /* tokens whose seq id is read per step; more: LS_STEP_TRUNCATED */

enum {
	LS_STEP_MORE_SEQS = 1u << 0, /* more runs than LS_STEP_SEQS: the rest not counted */
	LS_STEP_TRUNCATED = 1u << 1, /* n_tokens > LS_STEP_SCAN_MAX: later tokens not read */
	LS_STEP_SEQ_UNREAD = 1u << 2,/* a seq id pointer could not be read (no seq ids, or paged out) */
	LS_STEP_NO_ENTRY = 1u << 3,  /* the batch itself could not be read at entry */
	LS_STEP_POS_UNREAD = 1u << 4,/* no positions (batch.pos NULL, or unreadable): seq_pos not set */
	/* Not steps: a call of the server's HTTP thread on its way to hand a request to the engine
	 * (a frontend mark): start_ns / end_ns, tgid, tid, ret = its return (low 32 bits); every
	 * other field 0. */
	LS_STEP_TOKENIZE = 1u << 5,  /* llama_tokenize (the token count, or minus the room it needed) */
	LS_STEP_POSTED = 1u << 6,    /* llama-server's server_response_reader::post_tasks: the request's
				      * tasks posted to the engine's queue */
};

struct ls_step_event {
	__u64 start_ns;
	__u64 end_ns;
	__u32 tgid;
	__u32 tid;
	__u32 n_tokens;                 /* batch.n_tokens */
	__u32 n_seqs;                   /* entries used in seq_id / seq_tokens */
	__u32 flags;                    /* LS_STEP_* */
	__s32 ret;                      /* llama_decode's return value: 0 ok, 1 no KV slot, < 0 error */
	__s32 seq_id[LS_STEP_SEQS];
	__u32 seq_tokens[LS_STEP_SEQS]; /* tokens of seq_id[i] in the batch */
	__s32 seq_pos[LS_STEP_SEQS];    /* position (batch.pos) of seq_id[i]'s first token in the batch:
					 * a request's decode continues its positions, a new request's
					 * prompt (even one token after a cached prefix) does not */
};

_Static_assert(sizeof(struct ls_step_event) == 232, "ls_step_event layout is ABI");
_Static_assert(__builtin_offsetof(struct ls_step_event, end_ns) == 8, "ls_step_event.end_ns");
_Static_assert(__builtin_offsetof(struct ls_step_event, n_tokens) == 24, "ls_step_event.n_tokens");
_Static_assert(__builtin_offsetof(struct ls_step_event, ret) == 36, "ls_step_event.ret");
_Static_assert(__builtin_offsetof(struct ls_step_event, seq_id) == 40, "ls_step_event.seq_id");
_Static_assert(__builtin_offsetof(struct ls_step_event, seq_tokens) == 104, "ls_step_event.seq_tokens");
_Static_assert(__builtin_offsetof(struct ls_step_event, seq_pos) == 168, "ls_step_event.seq_pos");

#endif
