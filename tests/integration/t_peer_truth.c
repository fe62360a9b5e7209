/* t_peer_truth.c — see t_peer_truth.h. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "t_helpers.h"
#include "t_peer_truth.h"

static int truth_line(const char *line, struct t_peer_truth *e)
{
	cJSON *o = cJSON_Parse(line);
	if (!o)
		return -1;
	memset(e, 0, sizeof(*e));
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
	const cJSON *ep = cJSON_GetObjectItemCaseSensitive(o, "endpoint");
	const cJSON *frames = cJSON_GetObjectItemCaseSensitive(o, "frames");
	const cJSON *rec = cJSON_GetObjectItemCaseSensitive(o, "received");
	const cJSON *pt = cJSON_GetObjectItemCaseSensitive(o, "prompt_tokens");
	const cJSON *ct = cJSON_GetObjectItemCaseSensitive(o, "cached_tokens");
	snprintf(e->id, sizeof(e->id), "%s", cJSON_IsString(id) ? id->valuestring : "");
	snprintf(e->endpoint, sizeof(e->endpoint), "%s", cJSON_IsString(ep) ? ep->valuestring : "");
	e->received_ns = cJSON_IsNumber(rec) ? (uint64_t)rec->valuedouble : 0;
	e->prompt_tokens = cJSON_IsNumber(pt) ? pt->valueint : -1;
	e->cached_tokens = cJSON_IsNumber(ct) ? ct->valueint : -1;
	e->token_ns = calloc((size_t)cJSON_GetArraySize(frames) + 1, sizeof(uint64_t));
	for (const cJSON *f = frames ? frames->child : NULL; e->token_ns && f; f = f->next) {
		const cJSON *kind = cJSON_GetObjectItemCaseSensitive(f, "kind");
		const cJSON *at = cJSON_GetObjectItemCaseSensitive(f, "t");
		if (cJSON_IsNumber(at) && (uint64_t)at->valuedouble > e->last_write_ns)
			e->last_write_ns = (uint64_t)at->valuedouble;
		if (cJSON_IsString(kind) && !strcmp(kind->valuestring, "tokens") && cJSON_IsNumber(at))
			e->token_ns[e->n_token++] = (uint64_t)at->valuedouble;
	}
	e->first_token_ns = e->n_token ? e->token_ns[0] : 0;
	cJSON_Delete(o);
	return e->token_ns ? 0 : -1;
}

static struct t_peer_truth *load_once(const char *path, size_t *n_out)
{
	char *text = t_read_file(path, NULL);
	size_t cap = 64, n = 0;
	struct t_peer_truth *t = calloc(cap, sizeof(*t));
	for (char *save = NULL, *line = text ? strtok_r(text, "\n", &save) : NULL; t && line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (n == cap) {
			struct t_peer_truth *grown = realloc(t, (cap *= 2) * sizeof(*t));
			if (!grown)
				break;
			t = grown;
		}
		if (truth_line(line, &t[n]) == 0)
			n++;
	}
	free(text);
	*n_out = n;
	return t;
}

struct t_peer_truth *t_peer_truth_load(const char *path, size_t want, size_t *n_out)
{
	struct t_peer_truth *t = NULL;
	for (int tries = 0; tries < 250; tries++) {
		t = load_once(path, n_out);
		if (*n_out >= want)
			break;
		t_peer_truth_free(t, *n_out);
		t = NULL;
		usleep(20000);
	}
	return t ? t : load_once(path, n_out);
}

const struct t_peer_truth *t_peer_truth_find(const struct t_peer_truth *t, size_t n, const char *tag, uint64_t id)
{
	char want[96];
	snprintf(want, sizeof(want), "%s-%llu", tag, (unsigned long long)id);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(t[i].id, want))
			return &t[i];
	return NULL;
}

void t_peer_truth_free(struct t_peer_truth *t, size_t n)
{
	for (size_t i = 0; t && i < n; i++)
		free(t[i].token_ns);
	free(t);
}

size_t t_text_frames(const struct ls_request *r, uint64_t *at, size_t cap)
{
	size_t k = 0;
	for (uint32_t f = 0; f < r->n_frames && k < cap; f++)
		if ((r->frames[f].flags & LS_FRAME_CHOICES) && !(r->frames[f].flags & LS_FRAME_EMPTY_TEXT))
			at[k++] = r->frames[f].arrived_ns;
	return k;
}
