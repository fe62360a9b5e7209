/* backend.c — request bodies and frame meaning per server API (see backend.h).
 * Frames of the common shapes are read by frame_fast.c without a tree; the rest (and every
 * error) by cJSON, into the same fields, decoded by one copy of the rules here. cJSON's path
 * is per frame too, so its node allocations come from a per-thread bump arena (installed
 * through cJSON_InitHooks, active only inside ls_backend_decode_json on the calling thread;
 * every other cJSON user still gets malloc/free). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "base/numconv.h"
#include "driver/backend.h"
#include "driver/backend_int.h"
#include "base/strbuf.h"

/* Every name vLLM's and SGLang's benchmarks accept for these APIs, and what it means here. */
static const struct {
	const char *name;
	enum ls_backend backend;
} names[] = {
	{ "openai", LS_BACKEND_OPENAI },         { "vllm", LS_BACKEND_OPENAI },
	{ "sglang-oai", LS_BACKEND_OPENAI },     { "openai-chat", LS_BACKEND_OPENAI_CHAT },
	{ "vllm-chat", LS_BACKEND_OPENAI_CHAT }, { "sglang-oai-chat", LS_BACKEND_OPENAI_CHAT },
	{ "sglang", LS_BACKEND_SGLANG },         { "sglang-native", LS_BACKEND_SGLANG },
	{ "lmdeploy", LS_BACKEND_OPENAI },       { "lmdeploy-chat", LS_BACKEND_OPENAI_CHAT },
	{ "scalellm", LS_BACKEND_OPENAI },       { "tgi", LS_BACKEND_TGI },
	{ "tensorrt-llm", LS_BACKEND_TRT },      { "trt", LS_BACKEND_TRT },
	{ "llama.cpp", LS_BACKEND_OPENAI },      /* vLLM's benchmark sends it OpenAI completions */
	{ "llama.cpp-native", LS_BACKEND_LLAMACPP },
	{ "openai-responses", LS_BACKEND_OPENAI_RESPONSES },
};
#define N_NAMES (sizeof(names) / sizeof(names[0]))

const char *ls_backend_names(void)
{
	static char list[384];
	if (!list[0])
		for (size_t i = 0, len = 0; i < N_NAMES; i++)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "", names[i].name);
	return list;
}

int ls_backend_parse(const char *name, enum ls_backend *out)
{
	for (size_t i = 0; name && i < N_NAMES; i++)
		if (!strcmp(name, names[i].name)) {
			*out = names[i].backend;
			return 0;
		}
	return -EINVAL;
}

const char *ls_backend_name(enum ls_backend backend)
{
	switch (backend) {
	case LS_BACKEND_OPENAI: return "openai";
	case LS_BACKEND_OPENAI_CHAT: return "openai-chat";
	case LS_BACKEND_SGLANG: return "sglang";
	case LS_BACKEND_TGI: return "tgi";
	case LS_BACKEND_TRT: return "tensorrt-llm";
	case LS_BACKEND_LLAMACPP: return "llama.cpp-native";
	case LS_BACKEND_OPENAI_RESPONSES: return "openai-responses";
	}
	return "unknown";
}

const char *ls_backend_default_endpoint(enum ls_backend backend)
{
	switch (backend) {
	case LS_BACKEND_OPENAI: return "/v1/completions";
	case LS_BACKEND_OPENAI_CHAT: return "/v1/chat/completions";
	case LS_BACKEND_SGLANG: return "/generate";
	case LS_BACKEND_TGI: return "/generate_stream";
	case LS_BACKEND_TRT: return "/v2/models/ensemble/generate_stream"; /* SGLang's default model name */
	case LS_BACKEND_LLAMACPP: return "/completion";
	case LS_BACKEND_OPENAI_RESPONSES: return "/v1/responses";
	}
	return "/v1/completions";
}

void ls_decode_state_init(struct ls_decode_state *st)
{
	st->last_cum_tokens = 0;
	st->last_text_len = 0;
}

cJSON *ls_backend_prompt_json(const struct ls_prompt *prompt)
{
	if (prompt->text)
		return cJSON_CreateString(prompt->text);
	cJSON *ids = cJSON_CreateArray();
	for (uint32_t i = 0; ids && i < prompt->n_token_ids; i++) {
		cJSON *id = cJSON_CreateNumber((double)prompt->token_ids[i]);
		if (!id || !cJSON_AddItemToArray(ids, id)) {
			cJSON_Delete(id);
			cJSON_Delete(ids);
			return NULL;
		}
	}
	return ids;
}

char *ls_backend_print_body(cJSON *root, int ok, size_t *len_out)
{
	char *body = ok ? cJSON_PrintUnformatted(root) : NULL;
	cJSON_Delete(root);
	if (!body) {
		errno = ENOMEM;
		return NULL;
	}
	if (len_out)
		*len_out = strlen(body);
	return body;
}

char *ls_backend_body(enum ls_backend backend, const char *model, const struct ls_prompt *prompt,
		      int ignore_eos, size_t *len_out)
{
	if (!prompt->text && !prompt->token_ids) {
		errno = EINVAL;
		return NULL;
	}
	if (ls_backend_is_peer(backend))
		return ls_backend_body_peer(backend, model, prompt, ignore_eos, len_out);
	/* Chat messages carry text: token ids must be detokenized by the caller first. */
	if (backend == LS_BACKEND_OPENAI_CHAT && !prompt->text) {
		errno = EINVAL;
		return NULL;
	}
	cJSON *root = cJSON_CreateObject();
	int ok = root != NULL;
	if (ok && model && backend != LS_BACKEND_SGLANG)
		ok = cJSON_AddStringToObject(root, "model", model) != NULL;
	if (ok && backend == LS_BACKEND_OPENAI) {
		cJSON *p = ls_backend_prompt_json(prompt);
		ok = p && cJSON_AddItemToObject(root, "prompt", p);
		if (!ok)
			cJSON_Delete(p);
	} else if (ok && backend == LS_BACKEND_OPENAI_CHAT) {
		cJSON *msgs = cJSON_AddArrayToObject(root, "messages");
		cJSON *msg = cJSON_CreateObject();
		ok = msgs && msg && cJSON_AddItemToArray(msgs, msg);
		if (!ok)
			cJSON_Delete(msg);
		ok = ok && cJSON_AddStringToObject(msg, "role", "user") &&
		     cJSON_AddStringToObject(msg, "content", prompt->text);
	} else if (ok) {
		cJSON *p = ls_backend_prompt_json(prompt);
		ok = p && cJSON_AddItemToObject(root, prompt->text ? "text" : "input_ids", p);
		if (!ok)
			cJSON_Delete(p);
	}
	if (ok && backend == LS_BACKEND_SGLANG) {
		cJSON *sp = cJSON_AddObjectToObject(root, "sampling_params");
		ok = sp && cJSON_AddNumberToObject(sp, "max_new_tokens", prompt->output_len) &&
		     cJSON_AddBoolToObject(sp, "ignore_eos", ignore_eos) &&
		     cJSON_AddTrueToObject(root, "stream");
	} else if (ok) {
		ok = cJSON_AddNumberToObject(root, "max_tokens", prompt->output_len) &&
		     cJSON_AddTrueToObject(root, "stream");
		cJSON *so = ok ? cJSON_AddObjectToObject(root, "stream_options") : NULL;
		ok = so && cJSON_AddTrueToObject(so, "include_usage") &&
		     cJSON_AddBoolToObject(root, "ignore_eos", ignore_eos);
	}
	return ls_backend_print_body(root, ok, len_out);
}

/* ---- the per-thread arena for frame decoding ---- */

#define ARENA_BYTES (64u * 1024u)

struct arena {
	char  *base;
	size_t used;
	int    spilled; /* something went to malloc: the tree must be freed node by node */
};

static __thread struct arena tl_arena;
static __thread int tl_arena_on;
static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;

static void *arena_malloc(size_t n)
{
	if (tl_arena_on) {
		size_t need = (n + 15) & ~(size_t)15;
		if (need <= ARENA_BYTES - tl_arena.used) {
			void *p = tl_arena.base + tl_arena.used;
			tl_arena.used += need;
			return p;
		}
		tl_arena.spilled = 1;
	}
	return malloc(n);
}

static void arena_free(void *p)
{
	char *c = p;
	if (tl_arena.base && c >= tl_arena.base && c < tl_arena.base + ARENA_BYTES)
		return; /* reclaimed when the arena is reset */
	free(p);
}

static void install_hooks(void)
{
	cJSON_Hooks hooks = { .malloc_fn = arena_malloc, .free_fn = arena_free };
	cJSON_InitHooks(&hooks);
}

/* Parses with the arena when it is available (else plain cJSON). */
static cJSON *parse_frame(const char *data, size_t len)
{
	pthread_once(&hooks_once, install_hooks);
	if (!tl_arena.base)
		tl_arena.base = malloc(ARENA_BYTES); /* kept for the thread's life */
	tl_arena.used = 0;
	tl_arena.spilled = 0;
	tl_arena_on = tl_arena.base != NULL;
	cJSON *root = cJSON_ParseWithLength(data, len);
	tl_arena_on = 0;
	return root;
}

static void free_frame(cJSON *root)
{
	/* Arena nodes need no free; walk the tree only when some node came from malloc: the arena
	 * overflowed, or was not used at all (no arena, or someone replaced cJSON's hooks). */
	if (root && (tl_arena.spilled || !tl_arena.used))
		cJSON_Delete(root);
}

/* ---- decoding ---- */

/* Copies up to n bytes of s into dst as printable ASCII (for error messages). */
static void printable(char *dst, size_t cap, const char *s, size_t n)
{
	size_t j = 0;
	for (size_t i = 0; i < n && j + 1 < cap; i++)
		dst[j++] = (s[i] >= 32 && s[i] < 127) ? s[i] : '?';
	dst[j] = 0;
}

static int set_malformed(struct ls_request *req, const char *why, const char *data, size_t len)
{
	char head[64];
	printable(head, sizeof(head), data, len < 48 ? len : 48);
	snprintf(req->error, sizeof(req->error), "malformed frame (%s): %s%s", why, head,
		 len > 48 ? "..." : "");
	return -EBADMSG;
}


/* One pass over obj's members: out[k] is the first member named names[k], or NULL, as
 * cJSON_GetObjectItemCaseSensitive gives it, without a walk (and strcmp per member) per name.
 * Most of decoding's own cost, after cJSON's parse, was those walks. */
static void members(const cJSON *obj, const char *const *names, const cJSON **out, size_t n)
{
	size_t left = n;
	for (size_t k = 0; k < n; k++)
		out[k] = NULL;
	if (!cJSON_IsObject(obj))
		return;
	for (const cJSON *c = obj->child; c && c->string && left; c = c->next)
		for (size_t k = 0; k < n; k++)
			if (names[k][0] == c->string[0] && !out[k] && !strcmp(c->string, names[k])) {
				out[k] = c;
				left--;
				break;
			}
}

/* The top-level members a frame is decoded from: the error ones, then two per backend. */
enum { TOP_ERROR, TOP_OBJECT, TOP_MESSAGE, TOP_A, TOP_B, TOP__COUNT };
static const char *const openai_top[TOP__COUNT] = { "error", "object", "message", "choices", "usage" };
static const char *const sglang_top[TOP__COUNT] = { "error", "object", "message", "text", "meta_info" };

int ls_backend_stream_error(const cJSON *msg, struct ls_request *req)
{
	snprintf(req->error, sizeof(req->error), "server error in stream: %s",
		 cJSON_IsString(msg) ? msg->valuestring : "(no message)");
	return -EPROTO;
}

/* vLLM/OpenAI: {"error": {...}} or {"object": "error", "message": ...}; SGLang: {"error": ...}. */
static int error_object(const cJSON *const *top, struct ls_request *req)
{
	const cJSON *err = top[TOP_ERROR];
	const cJSON *obj = top[TOP_OBJECT];
	const cJSON *msg = NULL;
	if (err && !cJSON_IsNull(err))
		msg = cJSON_IsObject(err) ? cJSON_GetObjectItemCaseSensitive(err, "message") : err;
	else if (cJSON_IsString(obj) && !strcmp(obj->valuestring, "error"))
		msg = top[TOP_MESSAGE];
	else
		return 0;
	return ls_backend_stream_error(msg, req);
}

int32_t ls_backend_int_value(const cJSON *v)
{
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 2147483647.0)
		return -1;
	return (int32_t)v->valuedouble;
}

static size_t str_len(const cJSON *v)
{
	return cJSON_IsString(v) ? strlen(v->valuestring) : 0;
}

/* What the decoders below need of an OpenAI frame's choices[0] and usage (cJSON's reading). */
static void openai_fields(enum ls_backend backend, const cJSON *choices, const cJSON *usage,
			  struct ls_frame_fields *f)
{
	static const char *const c0_names[2] = { "text", "finish_reason" };
	static const char *const chat_names[2] = { "delta", "finish_reason" };
	static const char *const delta_names[2] = { "content", "reasoning_content" };
	static const char *const usage_names[2] = { "prompt_tokens", "completion_tokens" };
	const cJSON *c0 = cJSON_IsArray(choices) ? choices->child : NULL; /* choices[0] */
	*f = (struct ls_frame_fields){ .prompt_tokens = -1, .completion_tokens = -1 };
	if (cJSON_IsObject(c0)) {
		const cJSON *m[2], *delta[2];
		f->choice = 1;
		if (backend == LS_BACKEND_OPENAI_CHAT) {
			members(c0, chat_names, m, 2);
			members(m[0], delta_names, delta, 2);
			f->text_len = str_len(delta[0]) + str_len(delta[1]);
		} else {
			members(c0, c0_names, m, 2);
			f->text_len = str_len(m[0]);
		}
		f->finish = m[1] && !cJSON_IsNull(m[1]);
	}
	if (cJSON_IsObject(usage)) {
		const cJSON *u[2];
		members(usage, usage_names, u, 2);
		f->usage = 1;
		f->prompt_tokens = ls_backend_int_value(u[0]);
		f->completion_tokens = ls_backend_int_value(u[1]);
	}
}

static void decode_openai(const struct ls_frame_fields *f, struct ls_decode_state *st, struct ls_frame *fr,
			  struct ls_request *req)
{
	if (f->choice) {
		fr->flags |= LS_FRAME_CHOICES;
		fr->text_len = (uint32_t)f->text_len;
		if (f->finish)
			fr->flags |= LS_FRAME_FINISH;
	}
	if (f->usage) {
		fr->flags |= LS_FRAME_USAGE;
		int32_t prompt = f->prompt_tokens;
		int32_t completion = f->completion_tokens;
		if (prompt >= 0)
			req->usage_prompt_tokens = prompt;
		if (completion >= 0) {
			req->usage_completion_tokens = completion;
			fr->cum_tokens = completion;
			/* Usage on every frame (continuous usage stats) gives per-frame counts; a final
			 * usage-only frame adds no tokens of its own. */
			fr->tokens = (fr->flags & LS_FRAME_CHOICES) ? completion - st->last_cum_tokens : 0;
			if (fr->tokens < 0)
				fr->tokens = -1;
			st->last_cum_tokens = completion;
		}
	}
}

/* What decode_sglang needs of an SGLang frame's text and meta_info (cJSON's reading). */
static void sglang_fields(const cJSON *text, const cJSON *meta, struct ls_frame_fields *f)
{
	static const char *const meta_names[3] = { "prompt_tokens", "completion_tokens", "finish_reason" };
	*f = (struct ls_frame_fields){ .prompt_tokens = -1, .completion_tokens = -1 };
	if (cJSON_IsString(text)) {
		f->choice = 1;
		f->text_len = strlen(text->valuestring);
	}
	if (!cJSON_IsObject(meta))
		return;
	const cJSON *m[3];
	members(meta, meta_names, m, 3);
	f->usage = 1;
	f->prompt_tokens = ls_backend_int_value(m[0]);
	f->completion_tokens = ls_backend_int_value(m[1]);
	f->finish = m[2] && !cJSON_IsNull(m[2]);
}

static void decode_sglang(const struct ls_frame_fields *f, struct ls_decode_state *st, struct ls_frame *fr,
			  struct ls_request *req)
{
	if (f->choice) {
		fr->flags |= LS_FRAME_CHOICES;
		uint64_t len = f->text_len;
		/* Cumulative text: the frame added what grew. A shorter text means the server streams
		 * deltas (incremental output): then the frame's text is all new. */
		if (len >= st->last_text_len) {
			fr->text_len = (uint32_t)(len - st->last_text_len);
			st->last_text_len = len;
		} else {
			fr->text_len = (uint32_t)len;
			st->last_text_len += len;
		}
	}
	if (!f->usage)
		return;
	int32_t prompt = f->prompt_tokens;
	int32_t completion = f->completion_tokens;
	if (prompt >= 0)
		req->usage_prompt_tokens = prompt;
	if (completion >= 0) {
		req->usage_completion_tokens = completion;
		fr->cum_tokens = completion;
		fr->tokens = completion >= st->last_cum_tokens ? completion - st->last_cum_tokens : -1;
		st->last_cum_tokens = completion;
	}
	if (f->finish)
		fr->flags |= LS_FRAME_FINISH;
}

/* The fields of a frame of these backends, read by frame_fast.c or cJSON, into fr and req. */
static void decode_fields(enum ls_backend backend, const struct ls_frame_fields *f, struct ls_decode_state *st,
			  struct ls_frame *fr, struct ls_request *req)
{
	if (backend == LS_BACKEND_SGLANG)
		decode_sglang(f, st, fr, req);
	else
		decode_openai(f, st, fr, req);
	if (!fr->text_len)
		fr->flags |= LS_FRAME_EMPTY_TEXT;
	req->text_bytes += fr->text_len;
}

int ls_backend_decode(enum ls_backend backend, const char *data, size_t len,
		      struct ls_decode_state *st, struct ls_frame *fr, struct ls_request *req)
{
	struct ls_frame_fields f;
	if (!ls_backend_is_peer(backend) && ls_frame_fast(backend, data, len, &f)) {
		fr->text_len = 0;
		decode_fields(backend, &f, st, fr, req);
		return 0;
	}
	return ls_backend_decode_json(backend, data, len, st, fr, req);
}

/* A frame that is JSON but for Python's NaN / Infinity (json.dumps writes them: an engine's
 * timing field can be one): parsed with them as null, counted. NULL when it is not that. */
static cJSON *parse_non_finite(const char *data, size_t len, uint32_t *n_replaced)
{
	size_t fixed_len;
	char *fixed = ls_backend_non_finite_to_null(data, len, &fixed_len, n_replaced);
	cJSON *root = fixed && *n_replaced ? parse_frame(fixed, fixed_len) : NULL;
	free(fixed);
	return root;
}

int ls_backend_decode_json(enum ls_backend backend, const char *data, size_t len,
			   struct ls_decode_state *st, struct ls_frame *fr, struct ls_request *req)
{
	fr->text_len = 0;
	if (len == 6 && !memcmp(data, "[DONE]", 6)) {
		fr->flags |= LS_FRAME_DONE | LS_FRAME_EMPTY_TEXT;
		fr->tokens = 0;
		return 0;
	}
	if (!ls_utf8_valid((const unsigned char *)data, len))
		return set_malformed(req, "not UTF-8", data, len);
	cJSON *root = parse_frame(data, len);
	uint32_t non_finite = 0;
	if (!root)
		root = parse_non_finite(data, len, &non_finite);
	if (!root)
		return set_malformed(req, "not JSON", data, len);
	int rc = 0;
	ls_backend_engine_fields(root, non_finite, req);
	if (ls_backend_is_peer(backend)) {
		rc = cJSON_IsObject(root) ? ls_backend_decode_peer(backend, root, st, fr, req)
					  : set_malformed(req, "not an object", data, len);
		if (!rc && !fr->text_len)
			fr->flags |= LS_FRAME_EMPTY_TEXT;
		if (!rc)
			req->text_bytes += fr->text_len;
		free_frame(root);
		return rc;
	}
	const cJSON *top[TOP__COUNT];
	members(root, backend == LS_BACKEND_SGLANG ? sglang_top : openai_top, top, TOP__COUNT);
	if (!cJSON_IsObject(root))
		rc = set_malformed(req, "not an object", data, len);
	else if ((rc = error_object(top, req)) == 0) {
		struct ls_frame_fields f;
		if (backend == LS_BACKEND_SGLANG)
			sglang_fields(top[TOP_A], top[TOP_B], &f);
		else
			openai_fields(backend, top[TOP_A], top[TOP_B], &f);
		decode_fields(backend, &f, st, fr, req);
	}
	free_frame(root);
	return rc;
}
