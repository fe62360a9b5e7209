/* sim/sim.h — the engine simulator's internal interfaces (`latscope sim`).
 * Takes: HTTP requests (OpenAI, SGLang), its flags (step model, faults, TLS).
 * Gives: streamed responses paced by a continuous-batching step model, and --truth JSONL of what happened.
 * One thread, one epoll loop (sim_server.c). Stages: HTTP parsing (sim_http.c), connection I/O
 * and TLS (sim_conn.c, sim_tls.c), endpoints and frame shapes (sim_api.c, sim_info.c), the
 * continuous-batching step model (sim_engine.c), tokenizer (sim_tokenizer.c), faults
 * (sim_fault.c), ground truth (sim_truth.c), optional GPU step library (sim_gpu.c). */
#ifndef LATSCOPE_SIM_H
#define LATSCOPE_SIM_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <openssl/ssl.h>
#include "base/rng.h"
#include "base/strbuf.h"
#include "sim/sim_http.h"

/* ---- seeded randomness: base's splitmix64 (small, fast, good enough for a model) ---- */
static inline uint64_t sim_rng_next(uint64_t *state)
{
	return ls_splitmix64(state);
}
static inline double sim_rng_unit(uint64_t *state) /* [0, 1) */
{
	return ls_rng_to_unit(ls_splitmix64(state));
}
/* FNV-1a of n bytes, folded through splitmix64: a seed from a name or a prompt. */
static inline uint64_t sim_hash64(const void *p, size_t n, uint64_t seed)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ull ^ seed;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ull;
	}
	return ls_splitmix64(&h);
}

/* ---- faults (sim_fault.c) ---- */
enum sim_fault {
	SIM_FAULT_NONE = 0,
	SIM_FAULT_HTTP500,
	SIM_FAULT_HTTP429,
	SIM_FAULT_RESET_BEFORE_HEADERS,
	SIM_FAULT_RESET_MID_STREAM,
	SIM_FAULT_STALL,
	SIM_FAULT_MALFORMED_FRAME,
	SIM_FAULT_TRUNCATED_CHUNK,
	SIM_FAULT_HTTP400_EMPTY,       /* 400, Content-Length: 0 */
	SIM_FAULT_HTTP503_EMPTY,       /* 503, no length, Connection: close: an empty body ended by FIN */
	SIM_FAULT_OVERSIZE_FRAME,      /* one frame of 1 MiB + 64 KiB of text */
	SIM_FAULT_BAD_UTF8,            /* one frame whose text is not UTF-8 */
	SIM_FAULT_NO_BLANK_LINE,       /* data: lines from then on end in one \n: no event ever ends */
	SIM_FAULT_ENDLESS_STREAM,      /* frames past max_tokens, 512 a step, until 4 x max_tokens + 4096 */
	SIM_FAULT_NO_HEADERS,          /* the request is read, nothing is ever sent */
	SIM_FAULT_CLOSE_AFTER_ACCEPT,  /* per connection: closed right after accept, nothing read */
	SIM_FAULT__COUNT
};
const char *sim_fault_name(enum sim_fault f);
/* Parses "kind[,kind...]" or "mixed" into a bitmask of (1 << kind). -1 naming the bad word. */
int sim_fault_parse_kinds(const char *list, unsigned *mask);
/* Picks the fault for one request from its own random stream (none with 1 - rate). Only
 * request kinds: close-after-accept is drawn per connection (sim_fault_on_accept). */
enum sim_fault sim_fault_pick(double rate, unsigned mask, uint64_t *rng);
/* Faults that act while the stream runs (sim_stream.c), as opposed to before the head. */
int sim_fault_mid_stream(enum sim_fault f);
struct sim_server;
struct sim_conn;
struct sim_req;
/* A new connection: 1 when it draws close-after-accept (rate / enabled kinds, seeded by its
 * number); the caller closes it. Counted in faults_total. */
int sim_fault_on_accept(struct sim_server *srv, const struct sim_conn *c);
/* A generation request whose fate is seeded: counts its fault, and answers the faults that act
 * before the response head (HTTP errors, resets, silence). 1 when it took r (freed or parked
 * on c), 0 when the request goes on to the engine. */
int sim_fault_before_head(struct sim_server *srv, struct sim_conn *c, struct sim_req *r);

/* ---- the engine's own per-request fields (sim_engine_fields.c: --engine-fields) ---- */
enum sim_engine_fields { SIM_EF_NONE = 0, SIM_EF_LLAMACPP, SIM_EF_SGLANG, SIM_EF_VLLM, SIM_EF_TRTLLM, SIM_EF__COUNT };
enum sim_ef_bad { SIM_EF_BAD_NONE = 0, SIM_EF_BAD_STRING, SIM_EF_BAD_NEGATIVE, SIM_EF_BAD_NAN, SIM_EF_BAD_HUGE,
		  SIM_EF_BAD__COUNT };
/* "none", "llama.cpp", "sglang", "vllm", "trtllm" into *out; -1 for another word. */
int sim_engine_fields_parse(const char *v, int *out);
const char *sim_engine_fields_bad_name(int kind); /* "none", "string", "negative", "nan", "huge" */

/* ---- configuration (sim_main.c fills it from flags) ---- */
enum sim_accept_dist { SIM_ACCEPT_GEOMETRIC = 0, SIM_ACCEPT_TWO_POINT };
enum sim_metrics_names { SIM_MNAMES_VLLM, SIM_MNAMES_SGLANG, SIM_MNAMES_LLAMACPP, SIM_MNAMES_TGI };
enum sim_metrics_fault { SIM_MFAULT_NONE, SIM_MFAULT_HANG, SIM_MFAULT_HUGE, SIM_MFAULT_GARBAGE };
/* --metrics-names LIST into a bitmask, --metrics-fault NAME (sim_info.c). 0 or -1. */
int sim_metrics_parse_names(const char *list, unsigned *mask);
int sim_metrics_parse_fault(const char *name, int *fault);

struct sim_config {
	const char *host;
	int         port;
	const char *truth_path;
	uint64_t    seed;
	const char *model;
	int         max_model_len;
	/* engine */
	double      step_ms;           /* fixed cost of every step */
	double      decode_token_us;   /* + per token a decoding request processes (1 + drafts) */
	double      prefill_token_us;  /* + per prompt token prefilled in the step */
	int         max_batch;
	int         max_batch_tokens;
	int         prefix_cache;
	int         prefix_block;      /* tokens per cached block */
	double      accept_len;        /* mean tokens per decode frame (1 = no speculation) */
	int         num_spec_tokens;   /* drafts per decode step (K) */
	enum sim_accept_dist accept_dist;
	int         empty_frame_every;
	int         empty_first_frame;  /* the first token frame carries only an empty-text special */
	double      api_frame_us;      /* API server CPU per frame it writes (busy), 0 = none */
	int         engine_fields;     /* enum sim_engine_fields: whose per-request account the frames carry */
	double      engine_fields_bad; /* share of requests whose account values are malformed */
	int         perf_metrics_max;  /* trtllm: GET /perf_metrics keeps the last this many requests */
	int         perf_metrics_fault; /* enum sim_metrics_fault, for GET /perf_metrics */
	/* GET /metrics (sim_info.c): whose gauge names, a fault of its own, the KV size it reports */
	unsigned    metrics_names;     /* bitmask of 1 << enum sim_metrics_names */
	int         metrics_fault;     /* enum sim_metrics_fault */
	int         kv_tokens;         /* KV-cache size in tokens that the use gauges divide by */
	/* faults */
	double      fail_rate;
	unsigned    fail_kinds;        /* bitmask of 1 << enum sim_fault */
	/* HTTP */
	size_t      max_header_bytes;
	size_t      max_body_bytes;
	int         max_conns;
	/* TLS */
	int         tls;
	const char *tls_cert, *tls_key;
	int         tls_max;           /* 0 (library default), 12 or 13 */
	/* GPU */
	int         gpu;
	const char *gpu_lib;
	int         gpu_device;
	int         quiet;
};

/* ---- tokenizer (sim_tokenizer.c): see docs/sim.md ---- */
#define SIM_TOK_EOS    256 /* "<|endoftext|>", empty text */
#define SIM_TOK_EMPTY  257 /* "<|special|>": a special token whose text is empty */
#define SIM_TOK_FIRST_WORD 258
int sim_tok_vocab_size(void);
/* Token ids of text (greedy longest match); returns count, -1 on allocation failure. */
int sim_tok_encode(const char *text, size_t len, int **ids_out);
/* Appends the text of ids (specials are empty); -1 when an id is outside the vocabulary. */
int sim_tok_decode(const int *ids, size_t n, struct ls_strbuf *out);
const char *sim_tok_text(int id, size_t *len);
/* The id of the k-th generated token of a request whose stream is seeded by seed. */
int sim_tok_generate(uint64_t *rng);

/* ---- ground truth (sim_truth.c) ---- */
struct sim_step_rec {
	uint64_t start_ns, end_ns;
	uint64_t gpu_start_ns, gpu_end_ns; /* host bracket of ls_simgpu_step, 0 without --gpu */
	uint32_t tokens, prefill_tokens;
};
enum sim_frame_kind {
	SIM_FRAME_TOKENS = 0, SIM_FRAME_ROLE, SIM_FRAME_USAGE, SIM_FRAME_DONE,
	SIM_FRAME_MALFORMED, SIM_FRAME_TRUNCATED, SIM_FRAME_BODY, SIM_FRAME_ERROR
};
struct sim_frame_rec {
	uint64_t t_ns;
	uint32_t bytes, tokens, text_len;
	uint32_t kind;
};

/* ---- requests ---- */
enum sim_endpoint { SIM_EP_COMPLETIONS = 0, SIM_EP_CHAT, SIM_EP_GENERATE, SIM_EP_TGI, SIM_EP_TRT, SIM_EP_RESPONSES };
enum sim_req_state { SIM_REQ_NEW = 0, SIM_REQ_WAITING, SIM_REQ_RUNNING, SIM_REQ_STALLED, SIM_REQ_DONE };

struct sim_conn;
struct sim_req {
	struct sim_req  *prev, *next;    /* engine list links (waiting or running) */
	int              listed;         /* 1 while on an engine list */
	struct sim_conn *conn;
	char             id[96];
	uint64_t         seq;
	enum sim_endpoint ep;
	enum sim_req_state state;
	int              stream, include_usage, ignore_eos;
	int              keep_alive;     /* the connection stays open after this response */
	int              chunked;        /* HTTP/1.1 stream: chunked; HTTP/1.0: close-delimited */
	long long        created;        /* wall-clock seconds for the OpenAI "created" field */
	int              max_tokens, min_tokens;
	int             *prompt_ids;
	int              prompt_len;
	int              prefilled;      /* prompt tokens computed or found in the prefix cache */
	int              cached_tokens;
	int              target_tokens;  /* output length (max_tokens, or the seeded EOS point) */
	int              generated;
	int              token_frames;   /* frames that carried tokens so far */
	uint32_t         spec_verify_ct; /* decode steps with drafts */
	uint64_t         rng;
	enum sim_fault   fault;
	int              fault_frame;    /* mid-stream faults fire before writing this token frame */
	int              malformed_done; /* the mid-stream fault has fired */
	uint32_t         endless_frames; /* frames an endless stream has sent past its tokens */
	int              engine_bad;     /* enum sim_ef_bad: how its engine fields are malformed */
	/* this step's plan (sim_engine.c) */
	int              in_step;
	int              step_prefill;
	int              step_decode;
	uint64_t         received_ns, admitted_ns, headers_ns;
	struct sim_step_rec  *steps;
	size_t           n_steps, cap_steps;
	struct sim_frame_rec *frames;
	size_t           n_frames, cap_frames;
	struct ls_strbuf   text;           /* all text so far (cumulative /generate, non-streaming) */
};

/* ---- connections (sim_conn.c) ---- */
struct sim_server;
struct sim_conn {
	struct sim_conn   *prev, *next;  /* server's list of open connections */
	struct sim_conn   *dead_next;    /* reap list */
	struct sim_server *srv;
	int                fd;
	SSL               *ssl;
	int                handshake_done;
	uint64_t           id;
	struct ls_strbuf     in, out;
	size_t             out_off;
	uint32_t           events;       /* what epoll watches now */
	int                dead;         /* closing: reaped after the current event batch */
	int                reset;        /* close with RST (SO_LINGER 0) */
	int                close_after_flush;
	int                sent_continue;
	struct sim_req    *req;          /* the generation request this connection serves */
};

int  sim_conn_accept(struct sim_server *srv, int fd);
void sim_conn_on_event(struct sim_conn *c, uint32_t events);
int  sim_conn_send(struct sim_conn *c, const void *data, size_t len); /* queue + flush */
/* Sends a whole reply built in out (cut instead when build_rc != 0) and frees out. */
void sim_conn_reply(struct sim_conn *c, struct ls_strbuf *out, int build_rc, int keep_alive);
int  sim_conn_flush(struct sim_conn *c);
void sim_conn_kill(struct sim_conn *c, int reset);  /* close after this event batch */
void sim_conn_process_input(struct sim_conn *c);     /* parse and dispatch buffered requests */
void sim_conn_reap(struct sim_server *srv);
void sim_conn_close_all(struct sim_server *srv);

/* ---- engine (sim_engine.c) ---- */
struct sim_req_list {
	struct sim_req *head, *tail;
	int             count;
};
struct sim_prefix_cache {
	uint64_t *slots;   /* open addressing; 0 = empty */
	size_t    cap, used;
};
struct sim_engine {
	struct sim_req_list waiting, running;
	int      step_active;
	uint64_t step_start_ns;     /* real stamp */
	uint64_t step_base_ns;      /* planned start (absolute deadlines: no drift) */
	uint64_t step_deadline_ns;  /* planned end */
	uint64_t gpu_start_ns, gpu_end_ns;
	uint32_t step_tokens;       /* tokens the step processes (for the cost model) */
	uint32_t step_prefill_tokens;
	double   accept_p;          /* per-draft acceptance probability (geometric) */
	struct sim_prefix_cache cache;
	/* counters (Prometheus /metrics, /server_info) */
	uint64_t steps_total;
	uint64_t prompt_tokens_total, generation_tokens_total;
	uint64_t spec_drafts_total, spec_draft_tokens_total, spec_accepted_total;
	uint64_t prefix_queries_total, prefix_hits_total;
};
int  sim_engine_init(struct sim_server *srv);
void sim_engine_fini(struct sim_server *srv);
void sim_engine_submit(struct sim_server *srv, struct sim_req *r);
void sim_engine_detach(struct sim_server *srv, struct sim_req *r);
void sim_engine_kick(struct sim_server *srv);       /* start a step if idle and work waits */
void sim_engine_on_timer(struct sim_server *srv);   /* the step's deadline passed */
void sim_engine_flush_cache(struct sim_server *srv);
/* Solves the geometric acceptance probability p for mean accept_len with k drafts. */
double sim_engine_accept_p(double accept_len, int k);
/* Tokens in one decode frame: 1 + accepted drafts. */
int sim_engine_draw_tokens(const struct sim_config *cfg, double p, uint64_t *rng);

/* ---- endpoints (sim_api.c, sim_info.c) ---- */
/* Handles one parsed request. body is the full body. Returns 0. */
void sim_api_dispatch(struct sim_conn *c, const struct sim_http_req *h, const char *body, size_t body_len);
/* The engine produced n token ids for r; reason is "length"/"stop" when r is complete. */
void sim_stream_emit(struct sim_server *srv, struct sim_req *r, const int *ids, int n, const char *reason);
/* The connection died under r (client closed, shutdown): writes its truth and frees it. */
void sim_stream_abort(struct sim_server *srv, struct sim_req *r, const char *reason);
void sim_api_send_error(struct sim_conn *c, int status, const char *type, const char *msg, int keep_alive);
int  sim_info_dispatch(struct sim_conn *c, const struct sim_http_req *h, const char *body, size_t body_len,
		       int keep_alive);
void sim_api_req_free(struct sim_req *r);
/* TGI's and Triton's generation APIs (sim_api_peer.c): which one a path names (-1: neither);
 * their bodies into r (NULL, or the message for a 400); one token frame's JSON into msg
 * (last_id: the id of the frame's last token; whole: the text so far, for TGI's last frame). */
int sim_api_peer_endpoint(const struct sim_http_req *h);
struct cJSON;
/* A request's integer member: absent/null -> dflt; else it must be an integer within [lo, hi]
 * (-1 when not). A boolean member: absent/null leaves *out; -1 when not a boolean. */
int sim_api_int_field(const struct cJSON *obj, const char *name, int dflt, int lo, int hi, int *out);
int sim_api_bool_field(const struct cJSON *obj, const char *name, int *out);
const char *sim_api_parse_peer(const struct cJSON *root, enum sim_endpoint ep, struct sim_req *r);
int sim_stream_peer_json(struct ls_strbuf *msg, const struct sim_req *r, const char *text, size_t text_len,
			 int last_id, const char *reason);
/* OpenAI's Responses stream (POST /v1/responses, sim_api_peer.c): the events before the first
 * token (created, in_progress, output_item.added, content_part.added) and those after the last
 * (output_text.done, content_part.done, output_item.done, response.completed with the usage), each
 * "event: TYPE\ndata: JSON\n\n"; no [DONE], as vLLM. */
int sim_responses_preamble(struct ls_strbuf *msg, const struct sim_req *r);
int sim_responses_end(struct ls_strbuf *msg, const struct sim_req *r);
/* Whether a peer API (TGI, Triton, Responses) writes the frame: sim_stream_peer_json. */
int sim_api_is_peer(enum sim_endpoint ep);

/* ---- truth (sim_truth.c) ---- */
struct sim_truth {
	int fd;          /* -1 without --truth */
	struct ls_strbuf line;
	uint64_t lines, write_errors;
};
int  sim_truth_open(struct sim_truth *t, const char *path);
/* Appends r's line; failed != 0 means reason is a fault or client_closed. */
void sim_truth_write(struct sim_truth *t, const struct sim_req *r, uint64_t end_ns, int failed,
		     const char *reason);
void sim_truth_close(struct sim_truth *t);
int  sim_req_add_frame(struct sim_req *r, uint64_t t_ns, uint32_t bytes, uint32_t tokens,
		       uint32_t text_len, enum sim_frame_kind kind);
int  sim_req_add_step(struct sim_req *r, const struct sim_step_rec *s);

/* ---- the engine's own account of a request (sim_engine_fields.c) ---- */
/* From r's steps: queue (received -> its first prefill step starts), prefill (-> the step that
 * sampled its first token ends), decode (-> its last step ends), e2e (received -> last step end).
 * 0 when r has no token yet. */
struct sim_account {
	uint64_t queue_ns, prefill_ns, decode_ns, e2e_ns;
	uint64_t first_token_ns, last_token_ns;
};
int sim_engine_account(const struct sim_req *r, struct sim_account *a);
/* The bad kind for request number seq (--engine-fields-bad, seeded apart from its own stream). */
int sim_engine_fields_bad_pick(const struct sim_config *cfg, uint64_t seq);
/* Appends the members (each with its leading comma): llama.cpp's "timings" object; SGLang's
 * meta_info timings (final: the finishing frame's e2e and stamps too); vLLM's "metrics" object. */
int sim_engine_fields_llamacpp(struct ls_strbuf *b, const struct sim_req *r);
int sim_engine_fields_sglang(struct ls_strbuf *b, const struct sim_req *r, int final);
int sim_engine_fields_vllm(struct ls_strbuf *b, const struct sim_req *r);
struct sim_server;
struct sim_perf_list;
/* trtllm: r's entry into the list (a finished request with a token; its oldest entry dropped when
 * full), and the list as TensorRT-LLM's GET /perf_metrics writes it, emptied. 0 or -ENOMEM. */
int sim_perf_add(struct sim_server *srv, const struct sim_req *r);
int sim_perf_drain(struct sim_server *srv, struct ls_strbuf *b);
void sim_perf_free(struct sim_perf_list *l);

/* ---- TLS (sim_tls.c) ---- */
SSL_CTX *sim_tls_ctx(const struct sim_config *cfg);

/* ---- GPU step library (sim_gpu.c) ---- */
struct sim_gpu {
	void *handle;
	int  (*init)(int device, char *err, size_t err_len);
	int  (*step)(uint64_t work_ns, uint32_t n_sampled_ids);
	void (*fini)(void);
};
int  sim_gpu_open(struct sim_gpu *g, const char *path, int device);
void sim_gpu_close(struct sim_gpu *g);
/* <dir of /proc/self/exe>/gpu/liblatscope_simgpu.so */
int  sim_gpu_default_path(char *out, size_t len);

/* ---- server (sim_server.c) ---- */
/* --engine-fields trtllm: what GET /perf_metrics gives, a ring of the last perf_metrics_max
 * finished requests (TensorRT-LLM's deque(maxlen=perf_metrics_max_requests)), drained per read. */
struct sim_perf_entry {
	uint64_t seq, received_ns, scheduled_ns, first_token_ns, last_token_ns;
	int      bad;          /* enum sim_ef_bad */
};
struct sim_perf_list {
	struct sim_perf_entry *e;
	size_t   cap, head, n;
	uint64_t dropped;      /* pushed out by newer ones before a read */
};

struct sim_server {
	const struct sim_config *cfg;
	int              epfd, listen_fd, timer_fd, signal_fd;
	SSL_CTX         *ssl_ctx;
	struct sim_engine engine;
	struct sim_truth truth;
	struct sim_gpu   gpu;
	struct sim_conn *conns;         /* open connections */
	struct sim_conn *dead;          /* to reap */
	size_t           n_conns;
	size_t           max_conns;     /* --max-conns, or the open-file limit - 64 */
	uint64_t         next_conn_id;
	uint64_t         next_req_seq;
	uint64_t         accepted_total, requests_total, faults_total[SIM_FAULT__COUNT];
	uint64_t         finished_total[2]; /* length, stop */
	struct sim_perf_list perf;      /* --engine-fields trtllm */
	int              stop;
	uint64_t         start_ns;
};
int  sim_server_run(const struct sim_config *cfg);

/* ---- flags (sim_main.c) ---- */
struct ls_opt;
/* The flag table --help prints and the walker reads (tests check every entry). */
const struct ls_opt *sim_opts(size_t *n);
int  sim_server_watch(struct sim_server *srv, struct sim_conn *c, uint32_t events);
void sim_server_set_timer(struct sim_server *srv, uint64_t deadline_ns);

#endif
