/* t_unit.h — helpers the unit tests share (tests/unit/t_unit.c; linked into the one unit binary
 * with every test file there): one copy each of the backend, config, stderr and probe-event
 * scaffolding, so a change to what they build is made once. They assert with Criterion. */
#ifndef LATSCOPE_T_UNIT_H
#define LATSCOPE_T_UNIT_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "config/config.h"
#include "config/profile.h"
#include "driver/backend.h"
#include "probes/evstore.h"

/* ls_backend_body for b parsed back (asserts a body that is JSON, *len_out its length). */
cJSON *t_body_json(enum ls_backend b, const char *model, struct ls_prompt *p, int ignore_eos);
/* The member at a dotted path ("sampling_params.max_new_tokens"), or NULL. */
const cJSON *t_json_get(const cJSON *o, const char *path);

/* One request's frame decoding: t_dec_init once, then t_decode per frame (fr cleared first,
 * its token counts -1 as the driver starts them). */
struct t_dec {
	struct ls_request req;
	struct ls_decode_state st;
	struct ls_frame fr;
};
void t_dec_init(struct t_dec *d);
int t_decode(struct t_dec *d, enum ls_backend b, const char *data);

/* ls_config_parse of "bench" + args (NULL-terminated, at most 78). */
int t_config_parse(struct ls_config *c, const char *const *args);
/* What the test wrote to stderr so far (under .init = cr_redirect_stderr), NUL-terminated. */
char *t_stderr_text(void);

/* The honest profile's read rules, as bench passes them to attribution. */
const struct ls_read_rules *t_honest_rules(void);
/* A probe event at ts_us (microseconds) on the loopback pair client :40000 <-> server :8000,
 * ports as role sees them; the caller adds what else its case needs before t_ev_add. */
struct ls_event t_ev(uint64_t cookie, uint8_t role, uint16_t kind, uint64_t ts_us, uint32_t seq, uint32_t len,
		     uint32_t aux);
void t_ev_add(struct ls_evstore *st, struct ls_event e);

#endif
