/* probes_engine.c — see probes_engine.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "latscope.skel.h"
#include "probes/probes_engine.h"

static int on_step(void *ctx, void *data, size_t size)
{
	struct ls_engine_probe *e = ctx;
	struct ls_step_event *st;

	if (size < sizeof(*st))
		return 0;
	if (e->n == e->cap) {
		size_t cap = e->cap ? 2 * e->cap : 1024;
		struct ls_step_event *grown = realloc(e->steps, cap * sizeof(*grown));
		if (!grown) {
			e->oom = 1;
			return 0;
		}
		e->steps = grown;
		e->cap = cap;
	}
	st = &e->steps[e->n++];
	memcpy(st, data, sizeof(*st));
	if (e->timens_offset_ns) { /* bpf_ktime_get_ns() is the host's clock (clocks.md) */
		st->start_ns = (uint64_t)((int64_t)st->start_ns + e->timens_offset_ns);
		st->end_ns = (uint64_t)((int64_t)st->end_ns + e->timens_offset_ns);
	}
	return 0;
}

int ls_engine_probe_ring(struct ls_engine_probe *e, struct latscope_bpf *skel, struct ring_buffer *rb,
			 int64_t timens_offset_ns)
{
	e->timens_offset_ns = timens_offset_ns;
	return ring_buffer__add(rb, bpf_map__fd(skel->maps.ls_steps), on_step, e);
}

/* An entry and a return program on func in file (no half pair: an entry with no return would
 * never be sent). 0 or -errno. */
static int attach_pair(struct ls_engine_probe *e, struct bpf_program *const progs[2], pid_t pid, const char *file,
		       const char *func)
{
	if (e->n_links + 2 > LS_ENGINE_MAX_LINKS)
		return -E2BIG;
	for (int ret = 0; ret < 2; ret++) {
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = func, .retprobe = ret);
		struct bpf_link *link = bpf_program__attach_uprobe_opts(progs[ret], pid, file, 0, &uo);
		if (!link) {
			int err = -errno;
			if (ret)
				bpf_link__destroy(e->links[--e->n_links]);
			return err;
		}
		e->links[e->n_links++] = link;
	}
	return 0;
}

/* llama-server's hand-off of a request's tasks to its engine queue (server_response_reader::
 * post_tasks(std::vector<server_task>&&, bool), tools/server/server-queue.cpp): exported by
 * libllama-server-impl.so, or in the executable where the server is linked in one piece. */
#define LS_POST_TASKS "_ZN22server_response_reader10post_tasksEOSt6vectorI11server_taskSaIS1_EEb"

/* llama_decode probed in file: the frontend marks too, llama_tokenize in the same file and
 * post_tasks where the server has it (their absence costs the frontend part only: why says
 * so, the steps go on). */
static void attached(struct ls_engine_probe *e, struct latscope_bpf *skel, pid_t pid, const char *file, char *why,
		     size_t why_len)
{
	struct bpf_program *const tok[2] = { skel->progs.ls_frontend_enter, skel->progs.ls_llama_tokenize_ret };
	struct bpf_program *const post[2] = { skel->progs.ls_frontend_enter, skel->progs.ls_post_tasks_ret };
	char impl[512], exe[64];
	int err = attach_pair(e, tok, pid, file, "llama_tokenize"), err_post;

	snprintf(e->where, sizeof(e->where), "%s", file);
	e->n_attached++;
	e->n_tokenize_attached += err == 0;
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
	if (ls_probes_find_mapped(pid, "libllama-server-impl.so", impl, sizeof(impl)) != 0)
		snprintf(impl, sizeof(impl), "%s", exe);
	err_post = attach_pair(e, post, pid, impl, LS_POST_TASKS);
	e->n_post_attached += err_post == 0;
	if (err && err_post)
		snprintf(why, why_len, "server pid %d: neither llama_tokenize (%s) nor llama-server's post_tasks (%s) "
			 "could be probed: no frontend part (the HTTP thread's time stays in queue)", (int)pid,
			 strerror(-err), strerror(-err_post));
	else if (err_post)
		snprintf(why, why_len, "server pid %d: no llama-server post_tasks to probe (%s): the frontend ends at "
			 "its last llama_tokenize, and requests sent as token ids have none", (int)pid, strerror(-err_post));
}

int ls_engine_probe_attach(struct ls_engine_probe *e, struct latscope_bpf *skel, pid_t pid, char *why,
			   size_t why_len)
{
	struct bpf_program *const dec[2] = { skel->progs.ls_llama_decode, skel->progs.ls_llama_decode_ret };
	char lib[512], exe[64];
	int err = -ENOENT;

	why[0] = '\0';
	if (ls_probes_find_mapped(pid, "libllama.so", lib, sizeof(lib)) == 0 &&
	    (err = attach_pair(e, dec, pid, lib, "llama_decode")) == 0) {
		attached(e, skel, pid, lib, why, why_len);
		return 0;
	}
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid); /* a program that links llama.cpp in */
	int err_exe = attach_pair(e, dec, pid, exe, "llama_decode");
	if (err_exe == 0) {
		attached(e, skel, pid, exe, why, why_len);
		return 0;
	}
	if (err == -ENOENT && (err_exe == -ENOENT || err_exe == -ESRCH))
		snprintf(why, why_len, "server pid %d has no llama_decode (no libllama.so mapped, none in its "
			 "executable): not a llama.cpp engine, no engine steps (queue / prefill / decode) from it",
			 (int)pid);
	else
		snprintf(why, why_len, "server pid %d: llama_decode could not be probed (%s: %s; its executable: %s): "
			 "no engine steps from it", (int)pid, err == -ENOENT ? "no libllama.so mapped" : "libllama.so",
			 strerror(-err), strerror(-err_exe));
	return err_exe;
}

uint64_t ls_engine_probe_lost(const struct latscope_bpf *skel)
{
	return __atomic_load_n(&skel->bss->ls_steps_lost, __ATOMIC_RELAXED);
}

void ls_engine_probe_close(struct ls_engine_probe *e)
{
	for (size_t i = 0; i < e->n_links; i++)
		bpf_link__destroy(e->links[i]);
	free(e->steps);
	memset(e, 0, sizeof(*e));
}
