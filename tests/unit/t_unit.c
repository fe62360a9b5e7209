/* t_unit.c — see t_unit.h. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "t_unit.h"

cJSON *t_body_json(enum ls_backend b, const char *model, struct ls_prompt *p, int ignore_eos)
{
	size_t len = 0;
	char *body = ls_backend_body(b, model, p, ignore_eos, &len);
	cr_assert_not_null(body);
	cr_assert_eq(len, strlen(body));
	cJSON *root = cJSON_Parse(body);
	cr_assert_not_null(root, "body is JSON: %s", body);
	free(body);
	return root;
}

const cJSON *t_json_get(const cJSON *o, const char *path)
{
	char buf[128];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *save = NULL, *k = strtok_r(buf, ".", &save); k && o; k = strtok_r(NULL, ".", &save))
		o = cJSON_GetObjectItemCaseSensitive(o, k);
	return o;
}

void t_dec_init(struct t_dec *d)
{
	memset(d, 0, sizeof(*d));
	ls_request_reset(&d->req, 0);
	ls_decode_state_init(&d->st);
}

int t_decode(struct t_dec *d, enum ls_backend b, const char *data)
{
	memset(&d->fr, 0, sizeof(d->fr));
	d->fr.tokens = -1;
	d->fr.cum_tokens = -1;
	return ls_backend_decode(b, data, strlen(data), &d->st, &d->fr, &d->req);
}

int t_config_parse(struct ls_config *c, const char *const *args)
{
	char *argv[80];
	int argc = 0;
	argv[argc++] = "bench";
	for (; *args && argc < 79; args++)
		argv[argc++] = (char *)*args;
	argv[argc] = NULL;
	return ls_config_parse(c, argc, argv);
}

char *t_stderr_text(void)
{
	fflush(stderr);
	static char buf[8192];
	size_t n = fread(buf, 1, sizeof(buf) - 1, cr_get_redirected_stderr());
	buf[n] = 0;
	return buf;
}

const struct ls_read_rules *t_honest_rules(void)
{
	static struct ls_profile honest;

	cr_assert_eq(ls_profile_builtin("honest", &honest), 0);
	return &honest.read;
}

struct ls_event t_ev(uint64_t cookie, uint8_t role, uint16_t kind, uint64_t ts_us, uint32_t seq, uint32_t len,
		     uint32_t aux)
{
	struct ls_event e = { 0 };

	e.ts_ns = ts_us * 1000ull;
	e.cookie = cookie;
	e.role = role;
	e.kind = kind;
	e.seq = seq;
	e.len = len;
	e.aux = aux;
	e.lport = role == LS_ROLE_CLIENT ? 40000 : 8000;
	e.rport = role == LS_ROLE_CLIENT ? 8000 : 40000;
	return e;
}

void t_ev_add(struct ls_evstore *st, struct ls_event e)
{
	cr_assert_eq(ls_evstore_add(st, &e), 0);
}
