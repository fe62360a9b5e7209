/* lab/lab_proc.c — what runs inside the lab: sim and bench as children that join a namespace
 * and exec this same binary; readiness; and the ephemeral-port side of per-request
 * connections (TIME_WAIT sockets counted from /proc/PID/net/tcp, and the port arithmetic). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "lab/lab.h"

const char *lab_self_exe(void)
{
	/* Resolved by the forked child, it is the very file we run, even if a rebuild has
	 * replaced build/latscope meanwhile. */
	return "/proc/self/exe";
}

pid_t lab_spawn(const struct lab_ns *ns, int side, char *const argv[], const sigset_t *mask,
		int stdout_fd, const char *log_path)
{
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "lab: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid > 0)
		return pid;
	/* child: join the namespace, die with the lab, unblock signals, exec */
	if (setns(ns->ns_fd[side], 0) < 0)
		_exit(126);
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != parent)
		_exit(126);
	/* Own process group: a terminal's Ctrl-C reaches the lab, which stops bench first (so it
	 * reports what finished), then sim, then tears down. */
	setpgid(0, 0);
	if (stdout_fd >= 0)
		dup2(stdout_fd, 1);
	if (log_path) {
		int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd >= 0) {
			dup2(fd, 2);
			if (stdout_fd == LAB_STDOUT_TO_LOG)
				dup2(fd, 1);
		}
	}
	sigprocmask(SIG_SETMASK, mask, NULL);
	/* /proc/self/exe by its own name when that still is the same file: ps and comm then
	 * say "latscope", not "exe". */
	char *args[192], real[4096];
	size_t n = 0;
	for (; argv[n] && n < 191; n++)
		args[n] = argv[n];
	args[n] = NULL;
	ssize_t len = readlink("/proc/self/exe", real, sizeof(real) - 1);
	struct stat a, b;
	if (!strcmp(argv[0], "/proc/self/exe") && len > 0) {
		real[len] = 0;
		if (stat(real, &a) == 0 && stat("/proc/self/exe", &b) == 0 && a.st_dev == b.st_dev &&
		    a.st_ino == b.st_ino)
			args[0] = real;
	}
	execv(args[0], args);
	fprintf(stderr, "lab: exec %s: %s\n", args[0], strerror(errno));
	_exit(127);
}

int lab_stop_child(pid_t pid, int sig, int grace_ms)
{
	if (pid <= 0)
		return -1;
	int status;
	if (sig)
		kill(pid, sig);
	for (int waited = 0; waited < grace_ms; waited += 10) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			return status;
		if (r < 0 && errno != EINTR)
			return -1;
		struct timespec ts = { .tv_nsec = 10000000 };
		nanosleep(&ts, NULL);
	}
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return status;
}

static int child_gone(pid_t child)
{
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	return child > 0 && waitid(P_PID, (id_t)child, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == child;
}

int lab_wait_listening(const struct lab_ns *ns, int port, pid_t child, int timeout_ms)
{
	struct sockaddr_in srv = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	inet_pton(AF_INET, LAB_SERVER_ADDR, &srv.sin_addr);
	for (int waited = 0; waited < timeout_ms && !lab_interrupted; waited += 20) {
		if (child_gone(child))
			return -1;
		int fd = lab_socket_in(ns, LAB_CLIENT, AF_INET, SOCK_STREAM);
		if (fd < 0)
			return -1;
		struct linger lin = { .l_onoff = 1, .l_linger = 0 };
		struct timeval tv = { .tv_sec = 1 };
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lin, sizeof(lin));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		int ok = connect(fd, (struct sockaddr *)&srv, sizeof(srv)) == 0;
		close(fd);
		if (ok)
			return 0;
		lab_sleep_ms(20); /* wakes early on SIGINT/SIGTERM */
	}
	return -1;
}

long lab_count_time_wait(const char *text)
{
	long n = 0;
	const char *line = strchr(text, '\n'); /* the first line is the header */
	while (line && *++line) {
		unsigned state;
		if (sscanf(line, " %*s %*s %*s %x", &state) == 1 && state == 0x06)
			n++;
		line = strchr(line, '\n');
	}
	return n;
}

static char *read_all(int fd)
{
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	while (buf) {
		if (len + 1 >= cap) {
			char *grown = cap < (64u << 20) ? realloc(buf, cap * 2) : NULL;
			if (!grown) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = grown;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	if (buf)
		buf[len] = 0;
	return buf;
}

long lab_sockstat_tw(const char *sockstat)
{
	const char *tcp = strstr(sockstat, "TCP:");
	const char *tw = tcp ? strstr(tcp, " tw ") : NULL;
	const char *eol = tcp ? strchr(tcp, '\n') : NULL;
	if (!tw || (eol && tw > eol))
		return -1;
	char *end;
	long n = strtol(tw + 4, &end, 10);
	return end == tw + 4 || n < 0 ? -1 : n;
}

/* The whole of path as seen from one side's namespace (malloc'd), or NULL. */
static char *read_all_in(const struct lab_ns *ns, int side, const char *path)
{
	int fd = lab_open_in(ns, side, path);
	if (fd < 0)
		return NULL;
	char *text = read_all(fd);
	close(fd);
	return text;
}

long lab_time_wait_in(const struct lab_ns *ns, int side)
{
	/* sockstat's tw is the namespace's own TIME_WAIT counter: O(1). /proc/net/tcp walks the
	 * whole host's established hash (~10 ms per read here), so it is only the fallback. */
	long total = -1;
	char *text = read_all_in(ns, side, "/proc/thread-self/net/sockstat");
	if (text)
		total = lab_sockstat_tw(text);
	free(text);
	if (total >= 0)
		return total;
	static const char *const files[] = { "/proc/thread-self/net/tcp", "/proc/thread-self/net/tcp6" };
	for (size_t i = 0; i < 2; i++) {
		text = read_all_in(ns, side, files[i]);
		if (!text)
			continue;
		total = (total < 0 ? 0 : total) + lab_count_time_wait(text);
		free(text);
	}
	return total;
}

int lab_parse_port_range(const char *text, int *lo, int *hi)
{
	if (!text || sscanf(text, "%d %d", lo, hi) != 2 || *lo <= 0 || *hi < *lo || *hi > 65535)
		return -1;
	return 0;
}

int lab_port_warning(double rate_per_s, int per_request, int port_lo, int port_hi,
		     char *msg, size_t cap)
{
	if (cap)
		msg[0] = 0;
	if (!per_request || rate_per_s <= 0)
		return 0;
	int ports = port_hi - port_lo + 1;
	double held = rate_per_s * LAB_TIME_WAIT_S;
	if (held <= ports)
		return 0;
	snprintf(msg, cap,
		 "warning: %.0f req/s with a new connection per request keeps ~%.0f sockets in TIME_WAIT "
		 "(%d s each), more than the %d ephemeral ports of net.ipv4.ip_local_port_range (%d-%d): "
		 "connect() will start failing with EADDRNOTAVAIL. Fix: reuse connections "
		 "(--connection reuse), or widen the port range",
		 rate_per_s, held, LAB_TIME_WAIT_S, ports, port_lo, port_hi);
	return 1;
}
