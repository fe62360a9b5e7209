// SPDX-License-Identifier: GPL-2.0
/* engine.bpf.c — engine steps of a native llama.cpp server: a uprobe and a uretprobe on
 * llama_decode(ctx, batch) in the libllama.so the watched server maps (user space attaches them
 * per server pid: probes/probes_engine.c). At entry: the batch's n_tokens and, per distinct
 * sequence id, its token count (the counts and ids only, never token contents); at return: the
 * end. One struct ls_step_event per step into the ls_steps ring. The first position of each
 * sequence in the batch is read too: it tells a new request's prompt from a decode step.
 * Frontend marks: pairs on llama_tokenize (libllama) and on llama-server's
 * server_response_reader::post_tasks, which the server's HTTP thread calls on its way to hand a
 * request to the engine; each call goes into the same ring as a step event flagged
 * LS_STEP_TOKENIZE or LS_STEP_POSTED (its stamps and thread alone). */
#include "common.bpf.h"

/* struct llama_batch (llama.h): passed by value, 56 bytes, so in memory on x86-64: at entry it
 * lies at the stack pointer + 8 (above the return address). Layout checked against llama.h. */
struct ls_llama_batch {
	__s32 n_tokens;
	__u32 pad;
	__u64 token, embd, pos, n_seq_id, seq_id, logits;
};
_Static_assert(sizeof(struct ls_llama_batch) == 56, "struct llama_batch is 56 bytes");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1024 * 1024);
} ls_steps SEC(".maps");

/* The step this thread is inside (key: tid), from entry to return. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct ls_step_event);
} ls_step_open SEC(".maps");

/* A zeroed step to start from (too big for the BPF stack's 512 bytes with the rest). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ls_step_event);
} ls_step_zero SEC(".maps");

/* The frontend mark this thread is inside (key: tid): its entry stamp. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} ls_tok_open SEC(".maps");

/* Where a tokenize call's event is built (a step event: too big for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ls_step_event);
} ls_tok_scratch SEC(".maps");

__u64 ls_steps_lost = 0; /* steps (and tokenize calls) the ring had no room for */

struct ls_seq_scan {
	struct ls_step_event *st;
	__u64 seq_id;    /* llama_seq_id ** of the batch */
	__u64 pos;       /* llama_pos * of the batch (0: none) */
};

/* One token: its first seq id. The table holds runs of one sequence (llama-server adds each
 * slot's tokens together, so a run is a sequence; user space merges a sequence's runs): no search,
 * which keeps the verifier's paths few. Returns 1 to stop. */
static long ls_scan_token(__u64 i, void *data)
{
	struct ls_seq_scan *c = data;
	struct ls_step_event *st = c->st;
	__u32 k = st->n_seqs;
	__u64 ptr = 0;
	__s32 seq = 0, pos = -1;

	if (bpf_probe_read_user(&ptr, sizeof(ptr), (const void *)(c->seq_id + i * 8)) || !ptr ||
	    bpf_probe_read_user(&seq, sizeof(seq), (const void *)ptr)) {
		st->flags |= LS_STEP_SEQ_UNREAD;
		return 1;
	}
	if (k > 0 && k <= LS_STEP_SEQS && st->seq_id[k - 1] == seq) {
		st->seq_tokens[k - 1]++;
		return 0;
	}
	if (k >= LS_STEP_SEQS) {
		st->flags |= LS_STEP_MORE_SEQS;
		return 0;
	}
	if (!c->pos || bpf_probe_read_user(&pos, sizeof(pos), (const void *)(c->pos + i * 4)))
		st->flags |= LS_STEP_POS_UNREAD;
	st->seq_id[k] = seq;
	st->seq_pos[k] = pos;
	st->seq_tokens[k] = 1;
	st->n_seqs = k + 1;
	return 0;
}

static __always_inline int ls_server_watched(void)
{
	struct ls_tgid_info *w = ls_current_watched();

	return w && w->role == LS_ROLE_SERVER;
}

SEC("uprobe")
int ls_llama_decode(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, zero = 0;
	struct ls_llama_batch b;
	struct ls_step_event *st, *z;

	if (!ls_server_watched())
		return 0;
	z = bpf_map_lookup_elem(&ls_step_zero, &zero);
	if (!z || bpf_map_update_elem(&ls_step_open, &tid, z, BPF_ANY))
		return 0;
	st = bpf_map_lookup_elem(&ls_step_open, &tid);
	if (!st)
		return 0;
	st->tgid = id >> 32;
	st->tid = tid;
	if (bpf_probe_read_user(&b, sizeof(b), (const void *)(PT_REGS_SP(ctx) + 8)) || b.n_tokens < 0) {
		st->flags = LS_STEP_NO_ENTRY;
		st->start_ns = bpf_ktime_get_ns();
		return 0;
	}
	st->n_tokens = (__u32)b.n_tokens;
	if (b.seq_id) {
		struct ls_seq_scan scan = { .st = st, .seq_id = b.seq_id, .pos = b.pos };
		__u32 n = st->n_tokens;

		if (n > LS_STEP_SCAN_MAX) {
			n = LS_STEP_SCAN_MAX;
			st->flags |= LS_STEP_TRUNCATED;
		}
		bpf_loop(n, ls_scan_token, &scan, 0);
	} else {
		st->flags |= LS_STEP_SEQ_UNREAD; /* llama_batch_get_one: no seq ids (seq 0 implied) */
	}
	st->start_ns = bpf_ktime_get_ns(); /* after the scan: the step is the engine's time alone */
	return 0;
}

/* One record into ls_steps: no wake-up until a quarter full (the reader drains on its timer). */
static __always_inline void ls_step_send(struct ls_step_event *st)
{
	__u64 flags = BPF_RB_NO_WAKEUP;

	if (bpf_ringbuf_query(&ls_steps, BPF_RB_AVAIL_DATA) >= 256 * 1024)
		flags = BPF_RB_FORCE_WAKEUP;
	if (bpf_ringbuf_output(&ls_steps, st, sizeof(*st), flags))
		__sync_fetch_and_add(&ls_steps_lost, 1);
}

SEC("uretprobe")
int ls_llama_decode_ret(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct ls_step_event *st = bpf_map_lookup_elem(&ls_step_open, &tid);

	if (!st)
		return 0;
	st->end_ns = bpf_ktime_get_ns();
	st->ret = (__s32)PT_REGS_RC(ctx);
	ls_step_send(st);
	bpf_map_delete_elem(&ls_step_open, &tid);
	return 0;
}

/* Entry of a frontend mark (llama_tokenize or post_tasks: one program, both functions). */
SEC("uprobe")
int ls_frontend_enter(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 now;

	if (!ls_server_watched())
		return 0;
	now = bpf_ktime_get_ns();
	bpf_map_update_elem(&ls_tok_open, &tid, &now, BPF_ANY);
	return 0;
}

static __always_inline int ls_frontend_return(struct pt_regs *ctx, __u32 flag)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, zero = 0;
	__u64 *start = bpf_map_lookup_elem(&ls_tok_open, &tid);
	struct ls_step_event *st;

	if (!start)
		return 0;
	st = bpf_map_lookup_elem(&ls_tok_scratch, &zero);
	if (st) {
		__builtin_memset(st, 0, sizeof(*st));
		st->start_ns = *start;
		st->end_ns = bpf_ktime_get_ns();
		st->tgid = id >> 32;
		st->tid = tid;
		st->flags = flag;
		st->ret = (__s32)PT_REGS_RC(ctx);
		ls_step_send(st);
	}
	bpf_map_delete_elem(&ls_tok_open, &tid);
	return 0;
}

SEC("uretprobe")
int ls_llama_tokenize_ret(struct pt_regs *ctx)
{
	return ls_frontend_return(ctx, LS_STEP_TOKENIZE);
}

SEC("uretprobe")
int ls_post_tasks_ret(struct pt_regs *ctx)
{
	return ls_frontend_return(ctx, LS_STEP_POSTED);
}
