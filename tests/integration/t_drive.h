/* t_drive.h — the probe tests' runs (test_probes.c, test_probes_tls.c): n OpenAI completions
 * through ls_driver_run to `latscope sim`, their records kept for attribution. */
#ifndef LATSCOPE_T_DRIVE_H
#define LATSCOPE_T_DRIVE_H

#include <stddef.h>
#include <stdint.h>
#include "base/loop_hook.h"
#include "driver/driver.h"

struct t_drive {
	struct ls_run run;
	struct ls_request *recs;
	struct ls_driver_job *jobs;
	char **bodies;
	size_t n;
};

/* Sends n completions (max_tokens each, ignore_eos) to url_base's /v1/completions, conc at a
 * time, each over a fresh connection when fresh_conn; run_tag names them; hook may be NULL.
 * Asserts that every request succeeded. */
void t_drive(struct t_drive *d, const char *run_tag, const char *url_base, size_t n, uint32_t max_tokens,
	     uint32_t conc, int fresh_conn, const struct ls_loop_hook *hook);
void t_drive_free(struct t_drive *d);

#endif
