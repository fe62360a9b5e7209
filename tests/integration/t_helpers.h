/* t_helpers.h — shared by the integration tests: run `latscope sim` on a free loopback port,
 * run latscope subcommands and capture their output. */
#ifndef LATSCOPE_T_HELPERS_H
#define LATSCOPE_T_HELPERS_H

#include <stddef.h>
#include <sys/types.h>

struct t_sim {
	pid_t pid;
	int   port;
	char  url[128];      /* http(s)://127.0.0.1:PORT */
	char  truth[256];    /* ground-truth file (--truth), removed by t_sim_stop */
	char  log[256];      /* simulator stderr */
};

const char *t_bin(void);        /* build/latscope (LATSCOPE_BIN) */
int t_is_root(void);
int t_free_port(void);

/* Starts `latscope sim --port P --truth FILE <extra...>` and waits until it accepts (10 s).
 * extra is NULL-terminated (may be NULL). tls: 1 to use https in url. 0 or -1. */
int t_sim_start(struct t_sim *sim, int tls, const char *const *extra);
void t_sim_stop(struct t_sim *sim);
/* Removes a --record file and the attribution file bench writes beside it (FILE.attribution.jsonl
 * for FILE.jsonl, else FILE.attribution.jsonl). */
void t_unlink_record(const char *path);

/* Runs latscope with argv (NULL-terminated, without the binary), stdout into *out
 * (malloc'd, NUL-terminated), stderr into *err when err != NULL. Returns the exit code, or
 * -1 when it could not run or was killed after timeout_s. */
int t_run(const char *const *argv, char **out, char **err, int timeout_s);

/* Removes a test's scratch directory and everything in it, unless T_KEEP is set. Only paths
 * under /tmp/latscope- are touched, so a half-initialised name cannot remove anything else. */
void t_remove_tree(const char *dir);

/* Reads a whole file (malloc'd, NUL-terminated), NULL on error. */
char *t_read_file(const char *path, size_t *len);

/* Skips the calling test (cr_skip_test, with the reason) unless it runs as root on a kernel
 * with BTF: what the eBPF probes need. */
void t_need_root_and_btf(void);
/* The honest profile's read rules, as bench passes them to attribution (asserts). */
struct ls_read_rules;
const struct ls_read_rules *t_honest_rules(void);

#endif
