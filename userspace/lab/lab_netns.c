/* lab/lab_netns.c — the lab's two network namespaces, their TUN devices and addresses, and
 * teardown (also of labs left behind by crashed runs). Namespaces are made and deleted with
 * iproute2 (`ip netns add/del` handles the /run/netns bind mounts); the TUN devices are opened
 * here, inside each namespace, so the forwarder holds both fds from the host namespace. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "lab/lab.h"

#define NETNS_DIR "/run/netns"

int lab_ip(const char *const *args)
{
	const char *argv[24];
	size_t n = 0;
	argv[n++] = "ip";
	for (size_t i = 0; args[i] && n < 23; i++)
		argv[n++] = args[i];
	argv[n] = NULL;

	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "lab: fork for ip: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, 1);
		execvp("ip", (char *const *)argv);
		fprintf(stderr, "lab: cannot run ip: %s (install iproute2)\n", strerror(errno));
		_exit(127);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	char cmd[256] = "";
	for (size_t i = 0; argv[i]; i++) {
		strncat(cmd, argv[i], sizeof(cmd) - strlen(cmd) - 2);
		strncat(cmd, " ", sizeof(cmd) - strlen(cmd) - 1);
	}
	fprintf(stderr, "lab: `%s` failed (exit %d)\n", cmd, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return -1;
}

pid_t lab_ns_owner(const char *name)
{
	if (strncmp(name, LAB_NS_CLIENT_PREFIX, 4) && strncmp(name, LAB_NS_SERVER_PREFIX, 4))
		return -1;
	const char *digits = name + 4;
	if (!*digits)
		return -1;
	char *end;
	errno = 0;
	long pid = strtol(digits, &end, 10);
	if (errno || *end || pid <= 0 || pid > 0x3fffffff || digits[0] == '0')
		return -1;
	return (pid_t)pid;
}

/* Does pid hold an fd to the namespace with this inode? (A lab holds both of its own.) */
static int holds_ns(pid_t pid, ino_t ino)
{
	char dir_path[64], want[64];
	snprintf(dir_path, sizeof(dir_path), "/proc/%d/fd", (int)pid);
	snprintf(want, sizeof(want), "net:[%llu]", (unsigned long long)ino);
	DIR *dir = opendir(dir_path);
	if (!dir)
		return 0;
	int found = 0;
	struct dirent *e;
	while (!found && (e = readdir(dir))) {
		char link_path[384], target[64];
		snprintf(link_path, sizeof(link_path), "%s/%s", dir_path, e->d_name);
		ssize_t n = readlink(link_path, target, sizeof(target) - 1);
		if (n > 0) {
			target[n] = 0;
			found = !strcmp(target, want);
		}
	}
	closedir(dir);
	return found;
}

/* Is the lab's owner still running it? A latscope (it may be between `ip netns add` and opening
 * the namespace), or any process holding the namespace open (a test driving the lab through
 * the library). A pid reused by an unrelated program keeps nothing alive. */
static int owner_alive(pid_t pid, const char *name)
{
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return 0;
	char path[64], comm[64] = "";
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	FILE *f = fopen(path, "re");
	if (f) {
		int ok = fgets(comm, sizeof(comm), f) != NULL;
		fclose(f);
		if (ok && !strncmp(comm, "latscope", 8))
			return 1;
	}
	struct stat st;
	char ns_path[300];
	snprintf(ns_path, sizeof(ns_path), NETNS_DIR "/%s", name);
	return stat(ns_path, &st) == 0 && holds_ns(pid, st.st_ino);
}

/* SIGKILLs every process whose network namespace is (dev, ino), except us. */
static int kill_inside(dev_t dev, ino_t ino)
{
	DIR *proc = opendir("/proc");
	if (!proc)
		return 0;
	int killed = 0;
	struct dirent *e;
	while ((e = readdir(proc))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0 || pid == getpid())
			continue;
		char path[64];
		struct stat st;
		snprintf(path, sizeof(path), "/proc/%ld/ns/net", pid);
		if (stat(path, &st) == 0 && st.st_dev == dev && st.st_ino == ino && kill((pid_t)pid, SIGKILL) == 0)
			killed++;
	}
	closedir(proc);
	return killed;
}

static void delete_ns(const char *name)
{
	char path[128];
	struct stat st;
	snprintf(path, sizeof(path), NETNS_DIR "/%s", name);
	if (stat(path, &st) == 0)
		kill_inside(st.st_dev, st.st_ino);
	const char *args[] = { "netns", "del", name, NULL };
	lab_ip(args);
}

/* Creating a lab and cleaning stale ones exclude each other across processes: a lab is only
 * recognisably alive once its owner holds both namespaces open, so a cleanup must not run
 * between `ip netns add` and that open. -1 when the lock cannot be had (we go on without). */
static int lab_lock(void)
{
	int fd = open("/run/latscope-lab.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	while (flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

static void lab_unlock(int fd)
{
	if (fd >= 0)
		close(fd); /* releases the flock */
}

int lab_ns_clean_stale(int verbose)
{
	int lock = lab_lock();
	DIR *dir = opendir(NETNS_DIR);
	if (!dir) {
		lab_unlock(lock);
		return 0;
	}
	char stale[64][64];
	int n = 0;
	struct dirent *e;
	while ((e = readdir(dir)) && n < 64) {
		pid_t owner = lab_ns_owner(e->d_name);
		if (owner < 0 || owner == getpid() || owner_alive(owner, e->d_name))
			continue;
		size_t len = strlen(e->d_name);
		if (len >= sizeof(stale[0]))
			continue;
		memcpy(stale[n++], e->d_name, len + 1);
	}
	closedir(dir);
	for (int i = 0; i < n; i++) {
		if (verbose)
			fprintf(stderr, "lab: removing stale namespace %s (its latscope, pid %d, is gone)\n",
				stale[i], (int)lab_ns_owner(stale[i]));
		delete_ns(stale[i]);
	}
	lab_unlock(lock);
	return n;
}

int lab_ns_enter(const struct lab_ns *ns, int side)
{
	int fd = side < 0 ? ns->host_fd : ns->ns_fd[side];
	if (setns(fd, CLONE_NEWNET) < 0) {
		fprintf(stderr, "lab: setns into %s: %s\n", side < 0 ? "the host namespace" : ns->name[side],
			strerror(errno));
		return -1;
	}
	return 0;
}

int lab_socket_in(const struct lab_ns *ns, int side, int domain, int type)
{
	if (lab_ns_enter(ns, side) < 0)
		return -1;
	int fd = socket(domain, type | SOCK_CLOEXEC, 0);
	int err = errno;
	if (lab_ns_enter(ns, -1) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (fd < 0)
		fprintf(stderr, "lab: socket in %s: %s\n", ns->name[side], strerror(err));
	return fd;
}

int lab_open_in(const struct lab_ns *ns, int side, const char *path)
{
	if (lab_ns_enter(ns, side) < 0)
		return -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (lab_ns_enter(ns, -1) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

ssize_t lab_read_in(const struct lab_ns *ns, int side, const char *path, char *buf, size_t cap)
{
	int fd = cap ? lab_open_in(ns, side, path) : -1;
	if (fd < 0)
		return -1;
	ssize_t r = read(fd, buf, cap - 1);
	close(fd);
	if (r < 0)
		return -1;
	buf[r] = 0;
	return r;
}

static void write_sysctl(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return; /* e.g. no IPv6: nothing to switch off */
	if (write(fd, value, strlen(value)) < 0) {
		/* best effort: a namespace that keeps IPv6 only adds a few stray packets */
	}
	close(fd);
}

/* A packet socket on the TUN that keeps the first bytes of every packet the namespace sends
 * into it, with the kernel's timestamp: the forwarder holds each packet from that moment,
 * not from its own (50-110 us late) wake-up. */
static int open_stamp_socket(unsigned ifindex)
{
	int fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ALL));
	if (fd < 0) {
		fprintf(stderr, "lab: packet socket: %s\n", strerror(errno));
		return -1;
	}
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (uint32_t)(SKF_AD_OFF + SKF_AD_PKTTYPE)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PACKET_OUTGOING, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, LAB_STAMP_BYTES),
		BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog prog = { .len = sizeof(code) / sizeof(code[0]), .filter = code };
	int one = 1, rcvbuf = 4 << 20;
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL),
				   .sll_ifindex = (int)ifindex };
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_PACKET, PACKET_AUXDATA, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		fprintf(stderr, "lab: stamping socket on %s: %s\n", LAB_TUN_NAME, strerror(errno));
		close(fd);
		return -1;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	return fd;
}

/* Inside one namespace (the calling thread is there): TUN device + stamping socket. */
static int open_tun_here(struct lab_ns *ns, int side)
{
	/* IPv6 off before the device exists: no router solicitations or MLD on the delay line. */
	write_sysctl("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1");
	int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "lab: open /dev/net/tun: %s (needs the tun module and root)\n", strerror(errno));
		return -1;
	}
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", LAB_TUN_NAME);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		fprintf(stderr, "lab: TUNSETIFF %s in %s: %s\n", LAB_TUN_NAME, ns->name[side], strerror(errno));
		close(fd);
		return -1;
	}
	ns->tun_fd[side] = fd;
	unsigned ifindex = if_nametoindex(LAB_TUN_NAME);
	if (!ifindex) {
		fprintf(stderr, "lab: %s vanished in %s\n", LAB_TUN_NAME, ns->name[side]);
		return -1;
	}
	ns->stamp_fd[side] = open_stamp_socket(ifindex);
	return ns->stamp_fd[side] < 0 ? -1 : 0;
}

int lab_ns_create(struct lab_ns *ns, pid_t owner)
{
	memset(ns, 0, sizeof(*ns));
	ns->host_fd = ns->ns_fd[0] = ns->ns_fd[1] = -1;
	ns->tun_fd[0] = ns->tun_fd[1] = ns->stamp_fd[0] = ns->stamp_fd[1] = -1;
	snprintf(ns->name[LAB_CLIENT], sizeof(ns->name[0]), LAB_NS_CLIENT_PREFIX "%d", (int)owner);
	snprintf(ns->name[LAB_SERVER], sizeof(ns->name[0]), LAB_NS_SERVER_PREFIX "%d", (int)owner);

	ns->host_fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (ns->host_fd < 0) {
		fprintf(stderr, "lab: open /proc/thread-self/ns/net: %s\n", strerror(errno));
		return -1;
	}
	int lock = lab_lock();
	static const char *const addr[2][2] = { { LAB_CLIENT_ADDR, LAB_SERVER_ADDR "/32" },
						{ LAB_SERVER_ADDR, LAB_CLIENT_ADDR "/32" } };
	for (int side = 0; side < 2; side++) {
		char path[128];
		snprintf(path, sizeof(path), NETNS_DIR "/%s", ns->name[side]);
		if (access(path, F_OK) == 0) /* our pid's, so left by a crashed run that had it */
			delete_ns(ns->name[side]);
		const char *add[] = { "netns", "add", ns->name[side], NULL };
		if (lab_ip(add) < 0)
			goto fail;
		ns->created[side] = 1;
		ns->ns_fd[side] = open(path, O_RDONLY | O_CLOEXEC);
		if (ns->ns_fd[side] < 0) {
			fprintf(stderr, "lab: open %s: %s\n", path, strerror(errno));
			goto fail;
		}
		if (lab_ns_enter(ns, side) < 0)
			goto fail;
		int rc = open_tun_here(ns, side);
		if (lab_ns_enter(ns, -1) < 0 || rc < 0)
			goto fail;
		const char *const n = ns->name[side];
		const char *lo[] = { "-n", n, "link", "set", "lo", "up", NULL };
		const char *mtu[] = { "-n", n, "link", "set", LAB_TUN_NAME, "mtu", "1500", "up", NULL };
		const char *ip[] = { "-n", n, "addr", "add", addr[side][0], "peer", addr[side][1],
				     "dev", LAB_TUN_NAME, NULL };
		if (lab_ip(lo) < 0 || lab_ip(mtu) < 0 || lab_ip(ip) < 0)
			goto fail;
	}
	lab_unlock(lock);
	return 0;
fail:
	lab_unlock(lock);
	lab_ns_destroy(ns);
	return -1;
}

void lab_ns_destroy(struct lab_ns *ns)
{
	for (int side = 0; side < 2; side++) {
		if (ns->stamp_fd[side] >= 0)
			close(ns->stamp_fd[side]);
		if (ns->tun_fd[side] >= 0)
			close(ns->tun_fd[side]); /* the device goes with its last fd */
		ns->stamp_fd[side] = ns->tun_fd[side] = -1;
		if (ns->ns_fd[side] >= 0) {
			struct stat st;
			if (fstat(ns->ns_fd[side], &st) == 0)
				kill_inside(st.st_dev, st.st_ino);
			close(ns->ns_fd[side]);
			ns->ns_fd[side] = -1;
		}
		if (ns->created[side]) {
			const char *del[] = { "netns", "del", ns->name[side], NULL };
			lab_ip(del);
			ns->created[side] = 0;
		}
	}
	if (ns->host_fd >= 0)
		close(ns->host_fd);
	ns->host_fd = -1;
}
