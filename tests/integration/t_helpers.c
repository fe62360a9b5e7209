/* t_helpers.c — see t_helpers.h. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include "config/profile.h"
#include "t_helpers.h"

const char *t_bin(void)
{
	const char *bin = getenv("LATSCOPE_BIN");
	return bin ? bin : "build/latscope";
}

int t_is_root(void)
{
	return geteuid() == 0;
}

int t_free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || getsockname(fd, (struct sockaddr *)&a, &len)) {
		close(fd);
		return -1;
	}
	close(fd);
	return ntohs(a.sin_port);
}

static int port_accepts(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return 0;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return ok;
}

/* The files of the simulators this process started and has not stopped: a test that fails
 * an assertion never reaches its t_sim_stop, so they are removed when the test's process exits. */
#define T_SIMS_MAX 16
static char sim_files[T_SIMS_MAX][2][256];

static void remove_sim_files(void)
{
	for (int i = 0; i < T_SIMS_MAX && !getenv("T_KEEP"); i++)
		for (int k = 0; k < 2; k++)
			if (sim_files[i][k][0])
				unlink(sim_files[i][k]);
}

static void track_sim_files(const struct t_sim *sim, int on)
{
	static int registered;
	if (!registered)
		registered = !atexit(remove_sim_files);
	for (int i = 0; i < T_SIMS_MAX; i++) {
		if (on ? sim_files[i][0][0] != 0 : strcmp(sim_files[i][0], sim->truth) != 0)
			continue;
		snprintf(sim_files[i][0], sizeof(sim_files[i][0]), "%s", on ? sim->truth : "");
		snprintf(sim_files[i][1], sizeof(sim_files[i][1]), "%s", on ? sim->log : "");
		return;
	}
}

void t_unlink_record(const char *path)
{
	char attr[512];
	size_t len = strlen(path);
	int jsonl = len > 6 && !strcmp(path + len - 6, ".jsonl");
	snprintf(attr, sizeof(attr), "%.*s.attribution.jsonl", (int)(jsonl ? len - 6 : len), path);
	unlink(path);
	unlink(attr);
}

int t_sim_start(struct t_sim *sim, int tls, const char *const *extra)
{
	memset(sim, 0, sizeof(*sim));
	sim->port = t_free_port();
	if (sim->port < 0)
		return -1;
	snprintf(sim->url, sizeof(sim->url), "%s://127.0.0.1:%d", tls ? "https" : "http", sim->port);
	snprintf(sim->truth, sizeof(sim->truth), "/tmp/latscope-truth-%d-%d.jsonl", getpid(), sim->port);
	snprintf(sim->log, sizeof(sim->log), "/tmp/latscope-sim-%d-%d.log", getpid(), sim->port);
	unlink(sim->truth);
	track_sim_files(sim, 1);

	const char *argv[96];
	char port[16];
	size_t n = 0;
	snprintf(port, sizeof(port), "%d", sim->port);
	argv[n++] = t_bin();
	argv[n++] = "sim";
	argv[n++] = "--port";
	argv[n++] = port;
	argv[n++] = "--truth";
	argv[n++] = sim->truth;
	for (size_t i = 0; extra && extra[i] && n < 94; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;

	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		/* a test that crashes must not leave its simulator running */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int fd = open(sim->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, 2);
			dup2(fd, 1);
		}
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	sim->pid = pid;
	for (int i = 0; i < 1000; i++) {
		if (port_accepts(sim->port))
			return 0;
		int status;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			sim->pid = 0;
			return -1;
		}
		usleep(10000);
	}
	t_sim_stop(sim);
	return -1;
}

void t_sim_stop(struct t_sim *sim)
{
	if (sim->pid > 0) {
		kill(sim->pid, SIGTERM);
		for (int i = 0; i < 300; i++) {
			if (waitpid(sim->pid, NULL, WNOHANG) == sim->pid) {
				sim->pid = 0;
				break;
			}
			usleep(10000);
		}
		if (sim->pid > 0) {
			kill(sim->pid, SIGKILL);
			waitpid(sim->pid, NULL, 0);
		}
		sim->pid = 0;
	}
	if (!getenv("T_KEEP")) {
		unlink(sim->truth);
		unlink(sim->log);
	}
	track_sim_files(sim, 0);
}

static char *slurp_fd(int fd)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	if (!buf)
		return NULL;
	for (;;) {
		if (len + 1 >= cap) {
			char *grown = realloc(buf, cap *= 2);
			if (!grown) {
				free(buf);
				return NULL;
			}
			buf = grown;
		}
		ssize_t r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	buf[len] = 0;
	return buf;
}

int t_run(const char *const *argv, char **out, char **err, int timeout_s)
{
	char out_path[] = "/tmp/latscope-t-out.XXXXXX", err_path[] = "/tmp/latscope-t-err.XXXXXX";
	int out_fd = mkstemp(out_path), err_fd = mkstemp(err_path);
	if (out_fd < 0 || err_fd < 0)
		return -1;
	unlink(out_path);
	unlink(err_path);
	const char *full[128];
	size_t n = 0;
	full[n++] = t_bin();
	for (size_t i = 0; argv[i] && n < 127; i++)
		full[n++] = argv[i];
	full[n] = NULL;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(out_fd, 1);
		dup2(err_fd, 2);
		execv(full[0], (char *const *)full);
		_exit(127);
	}
	int status = 0, done = 0;
	for (int i = 0; i < timeout_s * 100; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			done = 1;
			break;
		}
		usleep(10000);
	}
	if (!done) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	lseek(out_fd, 0, SEEK_SET);
	lseek(err_fd, 0, SEEK_SET);
	if (out)
		*out = slurp_fd(out_fd);
	if (err)
		*err = slurp_fd(err_fd);
	close(out_fd);
	close(err_fd);
	if (!done || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

char *t_read_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	char *buf = slurp_fd(fd);
	close(fd);
	if (buf && len)
		*len = strlen(buf);
	return buf;
}

void t_remove_tree(const char *dir)
{
	if (getenv("T_KEEP") || strncmp(dir, "/tmp/latscope-", 14) || strstr(dir, "XXXXXX") ||
	    strchr(dir, '\'') || strstr(dir, ".."))
		return;
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	(void)!system(cmd);
}

void t_need_root_and_btf(void)
{
	if (!t_is_root())
		cr_skip_test("probes need root (running as uid %d)", (int)geteuid());
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
		cr_skip_test("no /sys/kernel/btf/vmlinux: the tp_btf probes need kernel BTF");
}

const struct ls_read_rules *t_honest_rules(void)
{
	static struct ls_profile honest;

	cr_assert_eq(ls_profile_builtin("honest", &honest), 0);
	return &honest.read;
}
