/* probes.c — loads the one BPF skeleton, fills the watch maps (tgids, server listen ports),
 * attaches each program and checks each attach, and drains the ring buffer into the per-socket
 * event store. Everything is undone by ls_probes_close on every path. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "latscope.skel.h"
#include "base/clock.h"
#include "base/loop_hook.h"
#include "probes/probes.h"
#include "probes/probes_engine.h"

#define LS_MAX_EXTRA_LINKS 512 /* uprobes: up to 8 per client pid (watch follows children) */
#define LS_MAX_PIDS 64

struct ls_probes {
	struct latscope_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link *links[LS_MAX_EXTRA_LINKS]; /* uprobes (one set per client pid) */
	size_t n_links;
	struct ls_evstore *store;
	uint64_t lost_seen;       /* sum of ls_lost_by_kind at the last drain */
	int oom;                  /* an event could not be stored */
	int stats_fd;             /* BPF_STATS_RUN_TIME held while open, -1 */
	uint64_t drain_ns, drained;
	uint64_t budget;          /* events this drain may still take, 0 = no limit */
	uint64_t slice;           /* the loop's drain budget now (on_ready) */
	int64_t timens_offset_ns; /* this process's time namespace offset: kernel stamps moved by it */
	pid_t server_pids[LS_MAX_PIDS];
	size_t n_server_pids;
	pid_t client_pids[LS_MAX_PIDS];  /* every client pid seen (follow_forks adds children) */
	int client_tls[LS_MAX_PIDS];     /* 1: its own libssl probed, 2: the system one only (re-scan) */
	size_t n_client_pids;
	int follow, ssl_read, tls_entry_all, no_tls;
	char sys_libssl[512];            /* follow: the system libssl, probed for every process; "" none */
	struct ls_engine_probe engine;   /* llama_decode steps of the watched servers */
	char notes[1024];
};

/* libbpf's messages: keep the last warning for the reason string instead of spamming stderr. */
static char last_libbpf_msg[256];

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	vsnprintf(last_libbpf_msg, sizeof(last_libbpf_msg), fmt, ap);
	last_libbpf_msg[strcspn(last_libbpf_msg, "\n")] = '\0';
	return 0;
}

static void note(struct ls_probes *p, const char *fmt, ...)
{
	size_t len = strlen(p->notes);
	va_list ap;

	if (len + 2 >= sizeof(p->notes))
		return;
	va_start(ap, fmt);
	vsnprintf(p->notes + len, sizeof(p->notes) - len - 1, fmt, ap);
	va_end(ap);
	len = strlen(p->notes);
	p->notes[len] = '\n';
	p->notes[len + 1] = '\0';
}

static int handle_event(void *ctx, void *data, size_t size)
{
	struct ls_probes *p = ctx;

	if (size < sizeof(struct ls_event))
		return 0;
	const struct ls_event *ev = data;
	struct ls_event moved;
	if (p->timens_offset_ns) { /* bpf_ktime_get_ns() is the host's clock: into ours (clocks.md) */
		memcpy(&moved, data, sizeof(moved));
		moved.ts_ns = (uint64_t)((int64_t)moved.ts_ns + p->timens_offset_ns);
		ev = &moved;
	}
	if (ls_evstore_add(p->store, ev))
		p->oom = 1;
	p->drained++;
	/* Out of budget: libbpf keeps this event consumed and stops here. */
	if (p->budget && !--p->budget)
		return -EAGAIN;
	return 0;
}

/* Per-socket loss counts, read only when the kernel's per-kind totals moved. */
static void collect_lost(struct ls_probes *p)
{
	const __u64 *by_kind = p->skel->bss->ls_lost_by_kind;
	uint64_t total = 0, lost[LS_EV__COUNT], key, next, n;
	int fd = bpf_map__fd(p->skel->maps.ls_lost);
	void *prev = NULL;

	for (unsigned k = 0; k < LS_EV__COUNT; k++)
		total += (lost[k] = __atomic_load_n(&by_kind[k], __ATOMIC_RELAXED));
	if (total == p->lost_seen)
		return;
	p->lost_seen = total;
	ls_evstore_set_lost_by_kind(p->store, lost);
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		if (bpf_map_lookup_elem(fd, &next, &n) == 0 && ls_evstore_set_lost(p->store, next, n))
			p->oom = 1;
		key = next;
		prev = &key;
	}
}

/* Drains up to budget events (0: all); 1 when the budget ran out (more may wait), else 0. */
static int drain(struct ls_probes *p, uint64_t budget)
{
	uint64_t t0 = ls_now_ns();
	int more;

	p->budget = budget;
	more = ring_buffer__consume(p->rb) == -EAGAIN;
	p->budget = 0;
	if (!more) /* drained: the next fill may wake us again */
		__atomic_store_n(&p->skel->bss->ls_wake_sent, 0, __ATOMIC_RELAXED);
	collect_lost(p);
	p->drain_ns += ls_now_ns() - t0;
	return more;
}

void ls_probes_drain(struct ls_probes *p)
{
	if (p)
		drain(p, 0);
}

size_t ls_probes_cost(const struct ls_probes *p, struct ls_probe_cost *out, size_t cap,
		      uint64_t *drain_ns, uint64_t *events)
{
	struct bpf_program *prog;
	size_t n = 0;

	*drain_ns = p ? p->drain_ns : 0;
	*events = p ? p->drained : 0;
	if (!p || p->stats_fd < 0)
		return 0;
	bpf_object__for_each_program(prog, p->skel->obj) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);

		if (n == cap || bpf_program__fd(prog) < 0)
			continue;
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
			continue;
		out[n].name = bpf_program__name(prog);
		out[n].run_cnt = info.run_cnt;
		out[n].run_time_ns = info.run_time_ns;
		n++;
	}
	return n;
}

/* In the loop: slices, so a frame waits at most one slice behind the drain instead of a whole
 * period's events. A slice starts at LS_PROBES_DRAIN_SLICE events (~50 us) and doubles while
 * the events come faster than it drains them (1,400 streams: ~1,500 events a loop turn), else
 * the ring's backlog grows to its wake-up mark and stays there; it halves back when one empties
 * the ring. */
static int on_ready(void *ctx, uint64_t now_ns)
{
	struct ls_probes *p = ctx;
	(void)now_ns;
	int more = drain(p, p->slice);
	if (more && p->slice < LS_PROBES_DRAIN_SLICE_MAX)
		p->slice *= 2;
	else if (!more && p->slice > LS_PROBES_DRAIN_SLICE)
		p->slice /= 2;
	return more;
}

int ls_probes_fd(const struct ls_probes *p)
{
	return p ? ring_buffer__epoll_fd(p->rb) : -1;
}

void ls_probes_loop_hook(struct ls_probes *p, struct ls_loop_hook *hook)
{
	hook->fd = ls_probes_fd(p);
	hook->period_ns = LS_PROBES_DRAIN_PERIOD_NS;
	hook->each_turn = 1; /* events drain as frames come, in the turns the loop takes anyway */
	hook->on_ready = on_ready;
	hook->ctx = p;
}

size_t ls_probes_tls_sessions(const struct ls_probes *p)
{
	__u64 key, next;
	size_t n = 0;
	int fd;

	if (!p || (fd = bpf_map__fd(p->skel->maps.ls_ssl)) < 0)
		return 0;
	for (void *prev = NULL; bpf_map_get_next_key(fd, prev, &next) == 0 && n < (1u << 20); prev = &key) {
		key = next;
		n++;
	}
	return n;
}

const struct ls_evstore *ls_probes_events(const struct ls_probes *p)
{
	return p ? p->store : NULL;
}

const char *ls_probes_notes(const struct ls_probes *p)
{
	if (!p)
		return "";
	if (p->oom && !strstr(p->notes, "out of memory"))
		note((struct ls_probes *)p, "out of memory storing probe events: some were dropped");
	return p->notes;
}

size_t ls_probes_engine_steps(const struct ls_probes *p, const struct ls_step_event **steps,
			      struct ls_probes_engine_info *info)
{
	memset(info, 0, sizeof(*info));
	*steps = p ? p->engine.steps : NULL;
	if (!p)
		return 0;
	info->n_attached = p->engine.n_attached;
	info->lost = ls_engine_probe_lost(p->skel) + (p->engine.oom ? 1 : 0);
	snprintf(info->where, sizeof(info->where), "%s", p->engine.where);
	return p->engine.n;
}

size_t ls_probes_server_pids(const struct ls_probes *p, const pid_t **pids)
{
	*pids = p ? p->server_pids : NULL;
	return p ? p->n_server_pids : 0;
}

uint64_t ls_socket_cookie(int fd)
{
	uint64_t cookie = 0;
	socklen_t len = sizeof(cookie);

	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &len) != 0)
		return 0;
	return cookie;
}

void ls_probes_close(struct ls_probes *p)
{
	if (!p)
		return;
	ring_buffer__free(p->rb);
	ls_engine_probe_close(&p->engine);
	for (size_t i = 0; i < p->n_links; i++)
		bpf_link__destroy(p->links[i]);
	latscope_bpf__destroy(p->skel); /* detaches the tracepoints */
	if (p->stats_fd >= 0)
		close(p->stats_fd);
	ls_evstore_free(p->store);
	free(p);
}

/* --- watching processes ------------------------------------------------------------------ */

static int pid_exists(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	return access(path, F_OK) == 0;
}

static int add_server_pid(struct ls_probes *p, pid_t pid)
{
	for (size_t i = 0; i < p->n_server_pids; i++)
		if (p->server_pids[i] == pid)
			return 0;
	if (p->n_server_pids == LS_MAX_PIDS)
		return -E2BIG;
	p->server_pids[p->n_server_pids++] = pid;
	return 0;
}

/* --server-comm: every process whose /proc/PID/comm is name, at open time. */
static void resolve_comm(struct ls_probes *p, const char *name)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	size_t found = 0;
	char want[16]; /* the kernel keeps 15 characters of a command name (TASK_COMM_LEN) */

	snprintf(want, sizeof(want), "%s", name);
	if (strlen(name) >= sizeof(want))
		note(p, "server comm '%s' is matched as '%s': the kernel keeps 15 characters", name, want);
	if (!d) {
		note(p, "server comm '%s': cannot read /proc (%s)", name, strerror(errno));
		return;
	}
	while ((de = readdir(d))) {
		char path[288], comm[64] = "";
		FILE *f;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f)) {
			comm[strcspn(comm, "\n")] = '\0';
			if (strcmp(comm, want) == 0 && add_server_pid(p, (pid_t)atoi(de->d_name)) == 0)
				found++;
		}
		fclose(f);
	}
	closedir(d);
	if (!found)
		note(p, "server comm '%s': no such process when the probes opened: server side not watched", name);
}

/* Watches pid in role; on failure says so in why (naming the pid). */
static int set_tgid(struct ls_probes *p, pid_t pid, __u32 role, char *why, size_t why_len)
{
	struct ls_tgid_info info = { .role = role };
	__u32 key = (__u32)pid;
	int err = bpf_map_update_elem(bpf_map__fd(p->skel->maps.ls_tgids), &key, &info, BPF_ANY);

	if (err)
		snprintf(why, why_len, "watching pid %d (tgid map) failed: %s", (int)pid, strerror(-err));
	return err;
}

/* Listen ports the server already has: its socket inodes (/proc/PID/fd) that are LISTEN
 * (state 0A) in /proc/PID/net/tcp{,6}. Later listen() calls are caught in the kernel. */
static int add_listen_ports(struct ls_probes *p, pid_t pid)
{
	unsigned long inodes[512];
	size_t n_inodes = 0, n_ports = 0;
	char path[300], buf[512];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d)) && n_inodes < 512) {
		char link[300];
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/%d/fd/%s", (int)pid, de->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = '\0';
		if (sscanf(link, "socket:[%lu]", &inodes[n_inodes]) == 1)
			n_inodes++;
	}
	closedir(d);
	for (int v6 = 0; v6 < 2; v6++) {
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/net/tcp%s", (int)pid, v6 ? "6" : "");
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(buf, sizeof(buf), f)) {
			char local[80];
			unsigned state, port;
			unsigned long inode;
			char *colon;

			if (sscanf(buf, " %*d: %79s %*s %x %*s %*s %*s %*s %*s %lu", local, &state, &inode) != 3 ||
			    state != 0x0A)
				continue;
			colon = strrchr(local, ':');
			if (!colon || sscanf(colon + 1, "%x", &port) != 1)
				continue;
			for (size_t i = 0; i < n_inodes; i++) {
				if (inodes[i] == inode) {
					struct ls_listen_info l = { .tgid = (__u32)pid };
					__u32 key = port;

					if (bpf_map_update_elem(bpf_map__fd(p->skel->maps.ls_listen), &key, &l,
								BPF_ANY) == 0)
						n_ports++;
				}
			}
		}
		fclose(f);
	}
	return (int)n_ports;
}

/* The file named NAME (or NAME.N) this process really mapped (never a hard-coded path), through
 * /proc/PID/root so a process in another mount namespace works too. */
int ls_probes_find_mapped(pid_t pid, const char *name, char *out, size_t out_len)
{
	char path[64], line[1024];
	size_t name_len = strlen(name);
	FILE *f;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f)) {
		char *file = strchr(line, '/'), *base;

		if (!file)
			continue;
		file[strcspn(file, "\n")] = '\0';
		base = strrchr(file, '/') + 1;
		/* NAME[.N]: libllama.so is not libllama-common.so (the server's helpers) */
		if (strncmp(base, name, name_len) == 0 && (base[name_len] == '\0' || base[name_len] == '.')) {
			snprintf(out, out_len, "/proc/%d/root%s", (int)pid, file);
			found = 1;
		}
	}
	fclose(f);
	return found ? 0 : -ENOENT;
}

static int attach_uprobe(struct ls_probes *p, struct bpf_program *prog, pid_t pid, const char *lib,
			 const char *func, int retprobe)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = func, .retprobe = retprobe);
	struct bpf_link *link;

	if (p->n_links == LS_MAX_EXTRA_LINKS)
		return -E2BIG;
	link = bpf_program__attach_uprobe_opts(prog, pid, lib, 0, &uo);
	if (!link)
		return -errno;
	p->links[p->n_links++] = link;
	return 0;
}

/* The uprobes on one libssl for pid. 0, or -errno of the first that failed. SSL_connect is
 * what libcurl calls; Python's ssl module drives SSL_do_handshake and SSL_write_ex instead
 * (tls_entry_all), which the same programs read (same arguments, 1 on success). */
static int attach_tls_lib(struct ls_probes *p, pid_t pid, const char *lib)
{
	struct latscope_bpf *s = p->skel;
	int err;

	err = attach_uprobe(p, s->progs.ls_ssl_connect, pid, lib, "SSL_connect", 0);
	if (!err)
		err = attach_uprobe(p, s->progs.ls_ssl_connect_ret, pid, lib, "SSL_connect", 1);
	if (!err)
		err = attach_uprobe(p, s->progs.ls_ssl_write, pid, lib, "SSL_write", 0);
	if (!err)
		err = attach_uprobe(p, s->progs.ls_ssl_free, pid, lib, "SSL_free", 0);
	if (!err && p->tls_entry_all) {
		err = attach_uprobe(p, s->progs.ls_ssl_connect, pid, lib, "SSL_do_handshake", 0);
		if (!err)
			err = attach_uprobe(p, s->progs.ls_ssl_connect_ret, pid, lib, "SSL_do_handshake", 1);
		if (!err)
			err = attach_uprobe(p, s->progs.ls_ssl_write, pid, lib, "SSL_write_ex", 0);
	}
	if (!err && p->ssl_read) {
		err = attach_uprobe(p, s->progs.ls_ssl_read, pid, lib, "SSL_read", 0);
		if (!err)
			err = attach_uprobe(p, s->progs.ls_ssl_read_ret, pid, lib, "SSL_read", 1);
	}
	if (err)
		note(p, "TLS uprobes on %s (pid %d) failed: %s: TLS handshake not attributed", lib, (int)pid,
		     strerror(-err));
	return err;
}

static void attach_tls(struct ls_probes *p, pid_t pid, int ssl_read)
{
	char lib[512];

	(void)ssl_read; /* p->ssl_read */
	if (ls_probes_find_mapped(pid, "libssl.so", lib, sizeof(lib))) {
		note(p, "TLS handshake not probed in pid %d: it has no libssl mapped", (int)pid);
		return;
	}
	attach_tls_lib(p, pid, lib);
}

/* Every kernel program, attached one by one so a failure names its hook. */
static int attach_kernel(struct ls_probes *p, char *why, size_t why_len)
{
	struct latscope_bpf *s = p->skel;
	struct { struct bpf_program *prog; struct bpf_link **link; const char *hook; } progs[] = {
		{ s->progs.ls_connect_enter, &s->links.ls_connect_enter, "syscalls:sys_enter_connect" },
		{ s->progs.ls_connect_exit, &s->links.ls_connect_exit, "syscalls:sys_exit_connect" },
		{ s->progs.ls_set_state, &s->links.ls_set_state, "tp_btf/inet_sock_set_state" },
		{ s->progs.ls_send_start, &s->links.ls_send_start, "tp_btf/tcp_sendmsg_locked" },
		{ s->progs.ls_send_end, &s->links.ls_send_end, "tp_btf/sock_send_length" },
		{ s->progs.ls_arrived, &s->links.ls_arrived, "tp_btf/sk_data_ready" },
		{ s->progs.ls_read, &s->links.ls_read, "tp_btf/sock_recv_length" },
		{ s->progs.ls_rtt, &s->links.ls_rtt, "tp_btf/tcp_probe" },
		{ s->progs.ls_retransmit, &s->links.ls_retransmit, "tp_btf/tcp_retransmit_skb" },
	};

	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		*progs[i].link = bpf_program__attach(progs[i].prog);
		if (!*progs[i].link) {
			int err = -errno;

			snprintf(why, why_len, "attaching %s failed: %s", progs[i].hook, strerror(-err));
			return err;
		}
	}
	return 0;
}

/* --- following children (watch) ---------------------------------------------------------- */

static int attach_follow(struct ls_probes *p, char *why, size_t why_len)
{
	struct latscope_bpf *s = p->skel;

	if (!p->follow)
		return 0;
	s->links.ls_fork = bpf_program__attach(s->progs.ls_fork);
	if (!s->links.ls_fork) {
		snprintf(why, why_len, "attaching tp_btf/sched_process_fork failed: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Same file (device and inode) at both paths. */
static int same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* TLS for a newly seen pid, or a re-scan of one that had no libssl of its own. The system
 * libssl (the one latscope itself maps) is probed once for every process (pid -1; the programs
 * filter by the watch map), so a child that loads it is covered from its first call, with no
 * race against its start; a pid that maps another libssl (a venv's, a bundled one) gets that
 * one probed for it when the scan finds it. */
static void follow_tls(struct ls_probes *p, size_t i)
{
	pid_t pid = p->client_pids[i];
	char lib[512];

	if (p->no_tls || p->client_tls[i] == 1 || pid == getpid())
		return;
	if (ls_probes_find_mapped(pid, "libssl.so", lib, sizeof(lib)) == 0) {
		if (!(p->sys_libssl[0] && same_file(lib, p->sys_libssl)))
			attach_tls_lib(p, pid, lib);
		p->client_tls[i] = 1;
	}
}

/* The system libssl, probed for every process (see follow_tls). */
static void attach_sys_tls(struct ls_probes *p)
{
	if (p->no_tls || ls_probes_find_mapped(getpid(), "libssl.so", p->sys_libssl, sizeof(p->sys_libssl))) {
		p->sys_libssl[0] = '\0';
		return;
	}
	if (attach_tls_lib(p, -1, p->sys_libssl))
		p->sys_libssl[0] = '\0';
}

size_t ls_probes_follow(struct ls_probes *p)
{
	int fd = bpf_map__fd(p->skel->maps.ls_tgids);
	__u32 key, next, *prev = NULL;
	struct ls_tgid_info info;
	size_t live = 0;

	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &info) || info.role != LS_ROLE_CLIENT)
			continue;
		if (!pid_exists((pid_t)key)) { /* gone: never let a reused pid be watched */
			bpf_map_delete_elem(fd, &key);
			continue;
		}
		live++;
		size_t i = 0;
		while (i < p->n_client_pids && p->client_pids[i] != (pid_t)key)
			i++;
		if (i == p->n_client_pids) {
			if (i == LS_MAX_PIDS)
				continue;
			p->client_pids[p->n_client_pids++] = (pid_t)key;
		}
		follow_tls(p, i);
	}
	return live;
}

size_t ls_probes_client_pids(const struct ls_probes *p, const pid_t **pids)
{
	*pids = p ? p->client_pids : NULL;
	return p ? p->n_client_pids : 0;
}

int ls_probes_client_tls(const struct ls_probes *p, size_t i)
{
	return p && i < p->n_client_pids && p->client_tls[i] == 1;
}

void ls_probes_unwatch(struct ls_probes *p, pid_t pid)
{
	__u32 key = (__u32)pid;

	if (p)
		bpf_map_delete_elem(bpf_map__fd(p->skel->maps.ls_tgids), &key);
}

/* The syscalls:sys_{enter,exit}_connect tracepoints are attached through tracefs (libbpf reads
 * the event id there). A fresh machine may not have it mounted: mount it, as perf does. */
static int ensure_tracefs(char *why, size_t why_len)
{
	if (access("/sys/kernel/tracing/events/syscalls", F_OK) == 0 ||
	    access("/sys/kernel/debug/tracing/events/syscalls", F_OK) == 0)
		return 0;
	if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0 &&
	    access("/sys/kernel/tracing/events/syscalls", F_OK) == 0)
		return 0;
	snprintf(why, why_len, "tracefs is not mounted and mounting it failed (%s): run "
		 "'mount -t tracefs nodev /sys/kernel/tracing' as root", strerror(errno));
	return -ENOENT;
}

static int valid_ring_size(uint32_t bytes)
{
	long page = sysconf(_SC_PAGESIZE);

	return bytes >= (uint32_t)page && (bytes & (bytes - 1)) == 0;
}

/* What can be checked before loading anything: something to watch, the ring's size, BTF,
 * the pids. 0, or -1 with why set. */
static int check_opts(const struct ls_probes_opts *opts, uint32_t ring, char *why, size_t why_len)
{
	if (!opts->n_client_pids && !opts->n_server_pids && !opts->server_comm) {
		snprintf(why, why_len, "no process to watch (give the harness pid or a server pid)");
		return -1;
	}
	if (!valid_ring_size(ring)) {
		snprintf(why, why_len, "ring buffer size %u is not a power of two >= the page size", ring);
		return -1;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		snprintf(why, why_len, "no kernel BTF (/sys/kernel/btf/vmlinux: %s): the tp_btf probes need "
			 "a kernel built with CONFIG_DEBUG_INFO_BTF", strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < opts->n_client_pids; i++)
		if (!pid_exists(opts->client_pids[i])) {
			snprintf(why, why_len, "client pid %d does not exist", (int)opts->client_pids[i]);
			return -1;
		}
	for (size_t i = 0; i < opts->n_server_pids; i++)
		if (!pid_exists(opts->server_pids[i])) {
			snprintf(why, why_len, "--server-pid %d: no such process", (int)opts->server_pids[i]);
			return -1;
		}
	return 0;
}

/* Opens the skeleton, sizes the ring, leaves out the TLS programs opts turns off, and loads
 * it into the kernel. 0, or -1 with why set. */
static int load_skel(struct ls_probes *p, const struct ls_probes_opts *opts, uint32_t ring, char *why,
		     size_t why_len)
{
	int err;

	libbpf_set_print(libbpf_print);
	last_libbpf_msg[0] = '\0';
	p->skel = latscope_bpf__open();
	if (!p->skel) {
		snprintf(why, why_len, "opening the BPF object failed: %s", strerror(errno));
		return -1;
	}
	p->skel->rodata->ls_wake_bytes = ring / 4;
	bpf_map__set_max_entries(p->skel->maps.ls_events, ring);
	if (!opts->follow_forks)
		bpf_program__set_autoload(p->skel->progs.ls_fork, false);
	if (opts->no_tls || !opts->ssl_read) {
		bpf_program__set_autoload(p->skel->progs.ls_ssl_read, false);
		bpf_program__set_autoload(p->skel->progs.ls_ssl_read_ret, false);
	}
	if (opts->no_tls) {
		bpf_program__set_autoload(p->skel->progs.ls_ssl_connect, false);
		bpf_program__set_autoload(p->skel->progs.ls_ssl_connect_ret, false);
		bpf_program__set_autoload(p->skel->progs.ls_ssl_write, false);
		bpf_program__set_autoload(p->skel->progs.ls_ssl_free, false);
	}
	err = latscope_bpf__load(p->skel);
	if (err) {
		if (err == -EPERM || err == -EACCES || errno == EPERM)
			snprintf(why, why_len, "loading BPF needs root (or CAP_BPF + CAP_PERFMON); running as "
				 "uid %d: run as root for kernel-side attribution", (int)geteuid());
		else
			snprintf(why, why_len, "loading the BPF probes failed: %s (%s)", strerror(-err),
				 last_libbpf_msg);
		return -1;
	}
	return 0;
}

/* The processes the kernel filters by: server pids (given and by comm) and client pids, with
 * the servers' listening ports. 0, or -1 with why set. */
static int watch_pids(struct ls_probes *p, const struct ls_probes_opts *opts, char *why, size_t why_len)
{
	for (size_t i = 0; i < opts->n_server_pids; i++)
		add_server_pid(p, opts->server_pids[i]);
	if (opts->server_comm)
		resolve_comm(p, opts->server_comm);
	for (size_t i = 0; i < opts->n_client_pids; i++)
		if (set_tgid(p, opts->client_pids[i], LS_ROLE_CLIENT, why, why_len))
			return -1;
	for (size_t i = 0; i < p->n_server_pids; i++) {
		if (set_tgid(p, p->server_pids[i], LS_ROLE_SERVER, why, why_len))
			return -1;
		if (add_listen_ports(p, p->server_pids[i]) <= 0)
			note(p, "server pid %d has no listening TCP socket yet: its connections are tracked "
			     "from its first read or listen()", (int)p->server_pids[i]);
	}
	return 0;
}

/* Engine steps: llama_decode in each watched server (none is no failure: a note says so). */
static int attach_engine(struct ls_probes *p, const struct ls_probes_opts *opts, char *why, size_t why_len)
{
	char miss[640];
	int err;

	if (!opts->engine_steps || !p->n_server_pids)
		return 0;
	err = ls_engine_probe_ring(&p->engine, p->skel, p->rb, p->timens_offset_ns);
	if (err) {
		snprintf(why, why_len, "adding the engine steps' ring buffer failed: %s", strerror(-err));
		return err;
	}
	for (size_t i = 0; i < p->n_server_pids; i++)
		if (ls_engine_probe_attach(&p->engine, p->skel, p->server_pids[i], miss, sizeof(miss)) || miss[0])
			note(p, "%s", miss);
	return 0;
}

struct ls_probes *ls_probes_open(const struct ls_probes_opts *opts, char *why, size_t why_len)
{
	uint32_t ring = opts->ringbuf_bytes ? opts->ringbuf_bytes : LS_PROBES_RING_DEFAULT;
	struct ls_probes *p;

	snprintf(why, why_len, "probes not opened");
	if (check_opts(opts, ring, why, why_len))
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p || !(p->store = ls_evstore_new())) {
		snprintf(why, why_len, "out of memory");
		free(p);
		return NULL;
	}
	ls_evstore_expect(p->store, opts->socket_events);
	p->stats_fd = -1;
	p->slice = LS_PROBES_DRAIN_SLICE;
	p->follow = opts->follow_forks;
	p->ssl_read = opts->ssl_read;
	p->tls_entry_all = opts->tls_entry_all;
	p->no_tls = opts->no_tls;
	if (load_skel(p, opts, ring, why, why_len) || watch_pids(p, opts, why, why_len))
		goto fail;
	p->timens_offset_ns = ls_clock_timens_offset_ns();
	if (p->timens_offset_ns)
		note(p, "this process runs in a time namespace (CLOCK_MONOTONIC %+.3f s from the host's): every "
		     "kernel stamp is moved into its clock", p->timens_offset_ns / 1e9);
	p->rb = ring_buffer__new(bpf_map__fd(p->skel->maps.ls_events), handle_event, p, NULL);
	if (!p->rb) {
		snprintf(why, why_len, "creating the ring buffer reader failed: %s", strerror(errno));
		goto fail;
	}
	if (ensure_tracefs(why, why_len) || attach_kernel(p, why, why_len) || attach_follow(p, why, why_len) ||
	    attach_engine(p, opts, why, why_len))
		goto fail;
	if (opts->stats) {
		p->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (p->stats_fd < 0)
			note(p, "BPF run-time stats unavailable: %s", strerror(errno));
	}
	if (p->follow) {
		attach_sys_tls(p);
		ls_probes_follow(p); /* the given pids, each with its own libssl when it has another */
	}
	else if (!opts->no_tls)
		for (size_t i = 0; i < opts->n_client_pids; i++)
			attach_tls(p, opts->client_pids[i], opts->ssl_read);
	if (opts->no_tls)
		note(p, "TLS uprobes off: TLS handshake not attributed");
	if (!p->n_server_pids)
		note(p, "no server watched (--server-pid/--server-comm): server and network time reported "
		     "together as network+server");
	why[0] = '\0';
	return p;
fail:
	ls_probes_close(p);
	return NULL;
}
