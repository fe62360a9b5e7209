/* probes_engine.h — engine steps from uprobes (bpf/engine.bpf.c): llama.cpp's llama_decode in
 * each watched server, found in the libllama.so it maps (or its executable), attached per pid;
 * the ls_steps ring drained into an array of struct ls_step_event in this process's clock (its
 * frontend marks among them, flagged LS_STEP_TOKENIZE / LS_STEP_POSTED).
 * Internal to probes/: probes.c opens it with the skeleton and its ring buffer reader. */
#ifndef LATSCOPE_PROBES_ENGINE_H
#define LATSCOPE_PROBES_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "events.h"

#define LS_ENGINE_MAX_LINKS 64 /* six per server pid: llama_decode's pair, llama_tokenize's, post_tasks' */

struct ring_buffer;
struct latscope_bpf;

struct ls_engine_probe {
	struct ls_step_event *steps; /* in arrival order (each thread's in time order) */
	size_t n, cap;
	int oom;                     /* a step could not be stored */
	int64_t timens_offset_ns;    /* moved into this process's clock, as the socket events */
	struct bpf_link *links[LS_ENGINE_MAX_LINKS];
	size_t n_links;
	size_t n_attached;           /* server pids with llama_decode probed */
	size_t n_tokenize_attached;  /* of them, with llama_tokenize probed too */
	size_t n_post_attached;      /* of them, with llama-server's post_tasks probed too */
	char where[512];             /* the last file probed, for the report */
};

/* Adds the ls_steps ring to rb (the reader the loop drains). 0 or -errno. */
int ls_engine_probe_ring(struct ls_engine_probe *e, struct latscope_bpf *skel, struct ring_buffer *rb,
			 int64_t timens_offset_ns);
/* Attaches the uprobe and uretprobe on llama_decode for pid: the libllama.so it maps, else its
 * executable; then the frontend marks: a pair on llama_tokenize in the same file, one on
 * llama-server's server_response_reader::post_tasks (libllama-server-impl.so, else the
 * executable). 0 or -errno, with what is missing in why ("" when all were probed; on success,
 * a note of a frontend mark that was not). */
int ls_engine_probe_attach(struct ls_engine_probe *e, struct latscope_bpf *skel, pid_t pid, char *why,
			   size_t why_len);
/* Steps the kernel could not send (its ring full). */
uint64_t ls_engine_probe_lost(const struct latscope_bpf *skel);
void ls_engine_probe_close(struct ls_engine_probe *e);

/* (probes.c) The file named NAME or NAME.N that pid maps ("libssl.so", "libllama.so"), as a path
 * through /proc/PID/root (0), or -ENOENT (-errno: its maps unreadable). */
int ls_probes_find_mapped(pid_t pid, const char *name, char *out, size_t out_len);

#endif
