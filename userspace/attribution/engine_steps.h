/* engine_steps.h — engine steps whatever their source, one record type: CUPTI's GPU steps
 * (gpu/common/gpu_step.h, no sequence ids) and llama_decode's uprobe steps (bpf/events.h struct
 * ls_step_event: token count and the sequence ids of its batch). From steps that carry sequence
 * ids: each sequence's sessions (a request's life in one llama-server slot: its prompt steps,
 * then one-token decode steps), joined to the run's requests, so a request's server time splits
 * into queue (before its first step), prefill (its prompt steps) and decode (its decode steps).
 * All stamps CLOCK_MONOTONIC ns. */
#ifndef LATSCOPE_ENGINE_STEPS_H
#define LATSCOPE_ENGINE_STEPS_H

#include <stddef.h>
#include <stdint.h>
#include "events.h"
#include "common/gpu_step.h"

enum ls_step_source {
	LS_STEP_SRC_CUPTI = 1,  /* liblatscope_cupti.so's GPU steps (--gpu-dir) */
	LS_STEP_SRC_UPROBE = 2, /* llama_decode uprobes (--server-pid on a llama.cpp server) */
};

/* One engine step. n_seqs 0: the source does not say which sequences it computed. */
struct ls_engine_step {
	uint64_t start_ns, end_ns;
	uint64_t busy_ns;              /* CUPTI: kernel time inside; uprobe: end - start */
	uint32_t pid, tid;             /* tid: the uprobe's thread; CUPTI: the device */
	uint32_t source;               /* enum ls_step_source */
	uint32_t n_tokens;             /* the batch's tokens (0 unknown) */
	uint32_t flags;                /* LS_STEP_* of bpf/events.h */
	int32_t  ret;                  /* uprobe: llama_decode's return (0 ok) */
	uint32_t n_seqs;
	int32_t  seq_id[LS_STEP_SEQS];
	uint32_t seq_tokens[LS_STEP_SEQS];
	int32_t  seq_pos[LS_STEP_SEQS]; /* first position of each in the batch; -1 unknown */
};

/* One frontend mark of a server (uprobe): a call of llama_tokenize or of llama-server's post_tasks,
 * its process, thread, entry and return. */
struct ls_fe_call {
	uint64_t start_ns, end_ns;
	uint32_t pid, tid;
	uint32_t what;                 /* LS_STEP_TOKENIZE or LS_STEP_POSTED */
	int32_t  ret;                  /* llama_tokenize: tokens, or minus the room it needed */
};

struct ls_engine_steps {
	struct ls_engine_step *steps;  /* sorted by start_ns after ls_engine_steps_sort */
	size_t n, cap;
	struct ls_fe_call *calls;      /* frontend marks, sorted by (pid, tid, start_ns) after ls_engine_steps_sort */
	size_t n_calls, cap_calls;
};

/* Appends steps of each source (any order); uprobe frontend marks (LS_STEP_TOKENIZE, LS_STEP_POSTED)
 * go to calls.
 * 0 or -ENOMEM. */
int  ls_engine_steps_add_uprobe(struct ls_engine_steps *s, const struct ls_step_event *ev, size_t n);
int  ls_engine_steps_add_gpu(struct ls_engine_steps *s, const struct ls_gpu_step *g, size_t n);
void ls_engine_steps_sort(struct ls_engine_steps *s);
void ls_engine_steps_free(struct ls_engine_steps *s);
const char *ls_step_source_name(uint32_t source); /* "CUPTI", "uprobe" */

/* A request as the join sees it. */
struct ls_map_req {
	uint64_t arrived_ns;     /* the server's kernel had it (else the client sent it); 0 unknown */
	uint64_t first_token_ns; /* the server wrote its first token (else the client had it); 0 none */
	int32_t  prompt_n;       /* the engine's own timings (llama.cpp prompt_n, predicted_n); */
	int32_t  predicted_n;    /* <= 0 unknown */
};

enum {
	LS_SESS_UNCERTAIN = 1u << 0,     /* another request fits this session as well */
	LS_SESS_COUNTS_DIFFER = 1u << 1, /* joined by time alone: no request's token counts fit */
	LS_SESS_SEQS_MISSED = 1u << 2,   /* a step of it lost seq ids (more than LS_STEP_SEQS, unread) */
	LS_SESS_SPLIT = 1u << 4,         /* cut from a longer run of steps by the engine's token counts */
	LS_SESS_TWIN = 1u << 3,          /* uncertain, but its rival's session ran the same steps from
					  * start to end: either join gives the same parts */
};

/* One sequence's session: prompt steps (the first, and more chunks while no decode came), then
 * one-token decode steps, until the sequence is missing from a step of its process (the slot
 * went idle), a multi-token step starts a new prompt, or its positions do not continue (a new
 * request whose prompt, after a cached prefix, is one token). */
struct ls_engine_session {
	uint32_t pid;
	int32_t  seq;
	uint64_t first_start_ns, prefill_end_ns, last_end_ns;
	uint64_t prefill_steps_ns, decode_steps_ns; /* sums of its steps' durations */
	uint32_t prompt_tokens, n_prefill_steps, n_decode_steps;
	size_t   first, n;       /* its steps: step_idx[first .. first + n), prefill ones first */
	size_t   request;        /* the request joined to it, SIZE_MAX none */
	uint32_t flags;          /* LS_SESS_* */
};

struct ls_engine_map {
	const struct ls_engine_step *steps; /* the caller's, sorted by start_ns */
	size_t n_steps;
	struct ls_engine_session *sess;
	size_t n_sess, cap_sess;
	size_t *step_idx;
	size_t *req_sess;        /* per request: its session, SIZE_MAX none */
	size_t n_req;
	size_t n_seq_steps;      /* steps that said which sequences they computed */
	size_t n_mapped, n_uncertain, n_twins, n_split, n_counts_differ, n_sess_unjoined;
};

/* Sessions from steps (sorted by start_ns; steps without seq ids and failed ones are left out),
 * joined to requests: sessions in order of their prompt's end, each to the request not yet
 * joined that arrived before its first step, whose first token was written after its prompt
 * ended (the earliest such), and whose engine token counts fit it (prompt_n = the session's
 * prompt tokens, predicted_n = decode steps + 1 or + 0): when none fits, by time alone
 * (LS_SESS_COUNTS_DIFFER). Uncertain: another fitting request's first token also came before
 * the end of the step after the prompt. 0 or -ENOMEM. */
int  ls_engine_map_build(const struct ls_engine_step *steps, size_t n_steps, const struct ls_map_req *req,
			 size_t n_req, struct ls_engine_map *m);
void ls_engine_map_free(struct ls_engine_map *m);

/* Of [from, to]: the part before session s's first step, split at frontend_end (0: unknown)
 * into frontend (before it) and queue (after it), the part inside its prefill steps and inside
 * its decode steps. The rest of the interval is none of them. frontend_end is at most the
 * session's first step's start (ls_engine_frontend's windows end there). */
void ls_engine_split(const struct ls_engine_map *m, size_t s, uint64_t frontend_end, uint64_t from, uint64_t to,
		     uint64_t *frontend, uint64_t *queue, uint64_t *prefill, uint64_t *decode);

/* ---- the frontend: the server's HTTP thread, from its read of a request to its hand-off ---- */

/* A request as the frontend join sees it (0: unknown). */
struct ls_fe_req {
	uint64_t read_ns;  /* the server read the whole request */
	uint32_t pid, tid; /* the server process and the thread that read it */
	uint64_t limit_ns; /* its first engine step started: the engine had it by then */
};

struct ls_fe_join {
	uint64_t end_ns;   /* the frontend's end, 0 none found */
	uint32_t tokenize; /* llama_tokenize calls in its window */
	uint32_t posted;   /* post_tasks calls in its window */
};

/* llama-server's HTTP thread reads a request, tokenizes its prompt when it is text (llama_tokenize,
 * once or twice: common_tokenize calls again when the first buffer was too small; more for stop
 * words, grammar triggers; none for a prompt of token ids) and posts its tasks to the engine's
 * queue (post_tasks), on that thread. Each request's window on the thread that read it: from its
 * read to the earlier of its first step's start and the next read of another request on that
 * thread (marks from before its read, or on other threads, are not its). Its frontend ends at the
 * last return of a mark that started inside the window, or at the window's end when that mark
 * returned after it (the engine took the tasks while post_tasks returned). Requests with no tid,
 * no read or no limit get none. calls sorted (ls_engine_steps_sort); out: one per request;
 * *joined: the marks that fell in some window. 0 or -ENOMEM. */
int ls_engine_frontend(const struct ls_fe_call *calls, size_t n_calls, const struct ls_fe_req *req, size_t n_req,
		       struct ls_fe_join *out, size_t *joined);

#endif
