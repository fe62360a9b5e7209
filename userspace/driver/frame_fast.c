/* frame_fast.c — the fields of an OpenAI completions/chat or SGLang /generate frame, read in
 * one strict pass over its JSON without building a tree (backend_int.h: ls_frame_fast). cJSON
 * was most of a frame's cost (~8k instructions; issue 17). Everything is checked as cJSON's
 * path would (UTF-8 as ls_utf8_valid, the JSON grammar); what this does not read exactly as
 * cJSON would, it declines and cJSON's path decides: an escape in a member name of an object it
 * reads, a count that is not a plain integer of at most 9 digits, \u0000 (cJSON's strlen stops
 * there), a lone surrogate, control bytes in strings, whitespace JSON does not allow, nesting
 * deeper than FAST_DEPTH_MAX, bytes after the object, an error member. Declining costs the scan.
 * The members wanted are described by struct want (nested: choices[0].delta.content), and
 * taken in the same pass, first of each name, as backend.c's members() takes them. */
#include <stdint.h>
#include <string.h>
#include "base/strbuf.h"
#include "driver/backend_int.h"

#define FAST_DEPTH_MAX 16 /* frames nest 4 deep; cJSON allows 1000 */
#define FAST_NUM_MAX   40 /* cJSON reads a number through a 64-byte buffer */
#define FAST_OUT_MAX   11 /* wanted members of a backend, all levels */

enum vtype { V_NONE, V_OBJ, V_ARR, V_STR, V_NUM, V_NULL, V_BOOL };

/* A value as scanned, with what decoding may need of it. */
struct val {
	unsigned char type;
	unsigned char plain;      /* a string without escapes; a number that is a plain count */
	unsigned char first_type; /* an array: its first element's type (V_NONE: empty) */
	const unsigned char *at;  /* its first byte */
	uint64_t len;             /* a string: strlen() of it decoded; a plain number: its value */
};

struct want;

/* A member wanted of an object: its first value goes to out[slot]; when sub is set, that value's
 * own members too: the value's when it is an object, or (in_array) its first element's when it
 * is an array whose first element is an object. */
struct member {
	const char *name;
	size_t len;
	unsigned char slot, in_array;
	const struct want *sub;
};

struct want {
	const struct member *m;
	size_t n;
};

struct cur {
	const unsigned char *p, *end;
	struct val *out; /* FAST_OUT_MAX slots */
};

#define MEMBER(s, slot, in_array, sub) { s, sizeof(s) - 1, slot, in_array, sub }

/* JSON's whitespace: space, \t, \n, \r (cJSON skips every byte <= 32). The usual byte, past
 * ' ', costs two compares. */
static inline void skip_ws(struct cur *c)
{
	while (c->p < c->end && (*c->p == ' ' ||
				 (*c->p < ' ' && ((1u << *c->p) & (1u << '\t' | 1u << '\n' | 1u << '\r')))))
		c->p++;
}

static int hex4(const unsigned char *p, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		unsigned char ch = p[i];
		unsigned d = 16;
		if (ch >= '0' && ch <= '9')
			d = (unsigned)(ch - '0');
		else if (ch >= 'a' && ch <= 'f')
			d = (unsigned)(ch - 'a') + 10;
		else if (ch >= 'A' && ch <= 'F')
			d = (unsigned)(ch - 'A') + 10;
		if (d > 15)
			return -1; /* cJSON would read it as 0: a NUL */
		v = v << 4 | d;
	}
	*out = v;
	return 0;
}

/* The escape at p ('\\'): its length in the input, adding to *shrink how much shorter it is
 * decoded; -1 to decline. cJSON turns \uXXXX into 1-3 UTF-8 bytes, a surrogate pair into 4. */
static int escape(const unsigned char *p, const unsigned char *end, uint64_t *shrink)
{
	if (end - p < 2)
		return -1;
	switch (p[1]) {
	case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
		*shrink += 1;
		return 2;
	case 'u':
		break;
	default:
		return -1;
	}
	unsigned cp, lo;
	if (end - p < 6 || hex4(p + 2, &cp) || cp == 0 || (cp >= 0xDC00 && cp <= 0xDFFF))
		return -1;
	if (cp >= 0xD800 && cp <= 0xDBFF) {
		if (end - p < 12 || p[6] != '\\' || p[7] != 'u' || hex4(p + 8, &lo) || lo < 0xDC00 || lo > 0xDFFF)
			return -1;
		*shrink += 12 - 4;
		return 12;
	}
	*shrink += 6 - (cp < 0x80 ? 1 : cp < 0x800 ? 2 : 3);
	return 6;
}

/* How many of the 8 bytes at p come before the first '"', '\\', control byte or byte >= 0x80
 * (8: none). Each test below may also mark bytes after a true match, never before one, so the
 * lowest mark is exact (little-endian: the lowest byte comes first). */
static inline unsigned plain_run8(const unsigned char *p)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
	uint64_t w, q, b;
	memcpy(&w, p, 8);
	q = w ^ (ones * '"');
	b = w ^ (ones * '\\');
	uint64_t mark = (((q - ones) & ~q) | ((b - ones) & ~b) | (w - ones * 0x20) | w) & high;
	return mark ? (unsigned)__builtin_ctzll(mark) / 8 : 8;
#else
	unsigned i = 0;
	while (i < 8 && p[i] >= 0x20 && p[i] < 0x80 && p[i] != '"' && p[i] != '\\')
		i++;
	return i;
#endif
}

/* A string at c->p ('"'). UTF-8 is checked here: outside strings only ASCII is JSON. */
static int scan_str(struct cur *c, struct val *v)
{
	const unsigned char *start = c->p + 1, *p = start, *end = c->end;
	uint64_t shrink = 0;
	v->type = V_STR;
	v->plain = 1;
	v->at = c->p;
	for (;;) {
		unsigned run = 8;
		while (run == 8 && end - p >= 8)
			p += run = plain_run8(p);
		if (run == 8) /* the last bytes, fewer than 8 */
			while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
				p++;
		if (p >= end || *p < 0x20)
			return -1; /* unterminated; or a control byte, which cJSON takes (a NUL ends its strlen) */
		if (*p == '"')
			break;
		if (*p == '\\') {
			int n = escape(p, end, &shrink);
			if (n < 0)
				return -1;
			v->plain = 0;
			p += n;
		} else {
			size_t n = ls_utf8_seq_len(p, (size_t)(end - p));
			if (!n)
				return -1;
			p += n;
		}
	}
	v->len = (uint64_t)(p - start) - shrink;
	c->p = p + 1;
	return 0;
}

static int digits(struct cur *c)
{
	const unsigned char *from = c->p;
	while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
		c->p++;
	return (int)(c->p - from);
}

/* A number (RFC 8259's grammar: what strtod reads whole). plain: a count int_value would give
 * as it is (no sign, fraction or exponent, at most 9 digits); other numbers are only skipped. */
static int scan_num(struct cur *c, struct val *v)
{
	const unsigned char *start = c->p;
	int neg = *c->p == '-';
	c->p += neg;
	const unsigned char *int_at = c->p;
	int n_int = digits(c);
	if (!n_int || (n_int > 1 && *int_at == '0'))
		return -1; /* leading zeros: cJSON reads them, JSON does not */
	int plain = !neg && n_int <= 9;
	if (c->p < c->end && *c->p == '.') {
		c->p++;
		if (!digits(c))
			return -1;
		plain = 0;
	}
	if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
		c->p++;
		if (c->p < c->end && (*c->p == '+' || *c->p == '-'))
			c->p++;
		if (!digits(c))
			return -1;
		plain = 0;
	}
	if (c->p - start > FAST_NUM_MAX)
		return -1;
	v->type = V_NUM;
	v->plain = (unsigned char)plain;
	v->len = 0;
	for (const unsigned char *d = int_at; plain && d < int_at + n_int; d++)
		v->len = v->len * 10 + (uint64_t)(*d - '0');
	return 0;
}

static int scan_lit(struct cur *c, struct val *v, const char *lit, size_t n, unsigned char type)
{
	if ((size_t)(c->end - c->p) < n)
		return -1;
	for (size_t i = 1; i < n; i++) /* lit[0] is what brought us here */
		if (c->p[i] != (unsigned char)lit[i])
			return -1;
	c->p += n;
	v->type = type;
	return 0;
}

static int scan_obj(struct cur *c, struct val *v, const struct want *w, int depth);
static int scan_arr(struct cur *c, struct val *v, const struct want *first, int depth);

/* A value; w: the members wanted of it when it is an object (in_array: of its first element
 * when it is an array). */
static int scan_value(struct cur *c, struct val *v, const struct want *w, int in_array, int depth)
{
	if (c->p >= c->end)
		return -1;
	v->at = c->p;
	switch (*c->p) {
	case '"': return scan_str(c, v);
	case '{': return scan_obj(c, v, in_array ? NULL : w, depth);
	case '[': return scan_arr(c, v, in_array ? w : NULL, depth);
	case 't': return scan_lit(c, v, "true", 4, V_BOOL);
	case 'f': return scan_lit(c, v, "false", 5, V_BOOL);
	case 'n': return scan_lit(c, v, "null", 4, V_NULL);
	default:
		if (*c->p == '-' || (*c->p >= '0' && *c->p <= '9'))
			return scan_num(c, v);
		return -1;
	}
}

/* After an element of an array or object: 0 at its close (consumed), 1 after a comma (consumed,
 * with the blanks after it), -1 for anything else. */
static int after_element(struct cur *c, unsigned char close)
{
	skip_ws(c);
	if (c->p >= c->end)
		return -1;
	if (*c->p == close) {
		c->p++;
		return 0;
	}
	if (*c->p != ',')
		return -1;
	c->p++;
	skip_ws(c);
	return 1;
}

/* An array at c->p ('['); first: the members wanted of its first element. */
static int scan_arr(struct cur *c, struct val *v, const struct want *first, int depth)
{
	if (depth >= FAST_DEPTH_MAX)
		return -1;
	v->type = V_ARR;
	v->first_type = V_NONE;
	c->p++;
	skip_ws(c);
	if (c->p < c->end && *c->p == ']') {
		c->p++;
		return 0;
	}
	for (int i = 0;; i++) {
		struct val e;
		if (scan_value(c, &e, i ? NULL : first, 0, depth + 1))
			return -1;
		if (!i)
			v->first_type = e.type;
		int more = after_element(c, ']');
		if (more <= 0)
			return more;
	}
}

/* The wanted member a name is, or NULL. A wanted object's escaped names are declined (-1 in
 * *rc): cJSON would decode them before comparing. */
static const struct member *wanted(const struct want *w, const struct val *key, int *rc)
{
	if (!key->plain) {
		*rc = -1;
		return NULL;
	}
	size_t klen = key->len;
	for (size_t k = 0; k < w->n; k++)
		if (w->m[k].len == klen && w->m[k].name[0] == key->at[1] && !memcmp(w->m[k].name, key->at + 1, klen))
			return &w->m[k];
	return NULL;
}

/* An object at c->p ('{'); w: its wanted members (NULL: none), into c->out. */
static int scan_obj(struct cur *c, struct val *v, const struct want *w, int depth)
{
	if (depth >= FAST_DEPTH_MAX)
		return -1;
	v->type = V_OBJ;
	c->p++;
	skip_ws(c);
	if (c->p < c->end && *c->p == '}') {
		c->p++;
		return 0;
	}
	for (;;) {
		struct val key, value;
		int rc = 0;
		if (c->p >= c->end || *c->p != '"' || scan_str(c, &key))
			return -1;
		const struct member *m = w ? wanted(w, &key, &rc) : NULL;
		if (rc)
			return -1;
		if (m && c->out[m->slot].type != V_NONE)
			m = NULL; /* not the first of its name: only checked */
		skip_ws(c);
		if (c->p >= c->end || *c->p != ':')
			return -1;
		c->p++;
		skip_ws(c);
		if (scan_value(c, &value, m ? m->sub : NULL, m && m->in_array, depth + 1))
			return -1;
		if (m)
			c->out[m->slot] = value;
		int more = after_element(c, '}');
		if (more <= 0)
			return more;
	}
}

/* Where each backend's members land in the out slots. */
enum { S_ERROR, S_OBJECT, S_A, S_B, S_C0_TEXT, S_C0_FINISH, S_PROMPT, S_COMPLETION, S_CONTENT, S_REASONING,
       S_TIMINGS, S_META_FINISH = S_C0_TEXT, S_META_E2E = S_CONTENT };

static const struct member usage_m[] = { MEMBER("prompt_tokens", S_PROMPT, 0, NULL),
					 MEMBER("completion_tokens", S_COMPLETION, 0, NULL) };
static const struct want usage_w = { usage_m, 2 };
static const struct member c0_m[] = { MEMBER("text", S_C0_TEXT, 0, NULL), MEMBER("finish_reason", S_C0_FINISH, 0, NULL) };
static const struct want c0_w = { c0_m, 2 };
static const struct member delta_m[] = { MEMBER("content", S_CONTENT, 0, NULL),
					 MEMBER("reasoning_content", S_REASONING, 0, NULL) };
static const struct want delta_w = { delta_m, 2 };
static const struct member chat_c0_m[] = { MEMBER("delta", S_C0_TEXT, 0, &delta_w),
					   MEMBER("finish_reason", S_C0_FINISH, 0, NULL) };
static const struct want chat_c0_w = { chat_c0_m, 2 };
static const struct member meta_m[] = { MEMBER("prompt_tokens", S_PROMPT, 0, NULL),
					MEMBER("completion_tokens", S_COMPLETION, 0, NULL),
					MEMBER("finish_reason", S_META_FINISH, 0, NULL),
					MEMBER("e2e_latency", S_META_E2E, 0, NULL) };
static const struct want meta_w = { meta_m, 4 };

/* The engine's own account of the request is cJSON's to read (backend_engine.c): llama.cpp's
 * "timings", vLLM's "metrics" and SGLang's finishing meta_info (finish_reason and e2e_latency). */
static const struct member openai_m[] = { MEMBER("error", S_ERROR, 0, NULL), MEMBER("object", S_OBJECT, 0, NULL),
					  MEMBER("choices", S_A, 1, &c0_w), MEMBER("usage", S_B, 0, &usage_w),
					  MEMBER("timings", S_TIMINGS, 0, NULL), MEMBER("metrics", S_TIMINGS, 0, NULL) };
static const struct member chat_m[] = { MEMBER("error", S_ERROR, 0, NULL), MEMBER("object", S_OBJECT, 0, NULL),
					MEMBER("choices", S_A, 1, &chat_c0_w), MEMBER("usage", S_B, 0, &usage_w),
					MEMBER("timings", S_TIMINGS, 0, NULL), MEMBER("metrics", S_TIMINGS, 0, NULL) };
static const struct member sglang_m[] = { MEMBER("error", S_ERROR, 0, NULL), MEMBER("object", S_OBJECT, 0, NULL),
					  MEMBER("text", S_A, 0, NULL), MEMBER("meta_info", S_B, 0, &meta_w),
					  MEMBER("timings", S_TIMINGS, 0, NULL) };
static const struct want openai_w = { openai_m, 6 }, chat_w = { chat_m, 6 }, sglang_w = { sglang_m, 5 };

/* A count as int_value() reads it: -1 when absent or no number; -2 to decline. */
static int64_t count(const struct val *v)
{
	if (v->type != V_NUM)
		return -1;
	return v->plain ? (int64_t)v->len : -2;
}

static int present(const struct val *v)
{
	return v->type != V_NONE && v->type != V_NULL;
}

/* A string's strlen() as str_len() gives it: 0 for anything else. */
static uint64_t text_len(const struct val *v)
{
	return v->type == V_STR ? v->len : 0;
}

/* The counts into f (the usage or meta_info object was there); 0, or -1 to decline. */
static int counts(const struct val *out, struct ls_frame_fields *f)
{
	int64_t p = count(&out[S_PROMPT]), q = count(&out[S_COMPLETION]);
	if (p == -2 || q == -2)
		return -1;
	f->usage = 1;
	f->prompt_tokens = (int32_t)p;
	f->completion_tokens = (int32_t)q;
	return 0;
}

/* The slots into f, as backend.c's openai_fields / sglang_fields read cJSON's tree. */
static int fields(enum ls_backend backend, const struct val *out, struct ls_frame_fields *f)
{
	*f = (struct ls_frame_fields){ .prompt_tokens = -1, .completion_tokens = -1 };
	if (backend == LS_BACKEND_SGLANG) {
		if (out[S_A].type == V_STR) {
			f->choice = 1;
			f->text_len = out[S_A].len;
		}
		if (out[S_B].type != V_OBJ)
			return 0;
		f->finish = present(&out[S_META_FINISH]);
		return counts(out, f);
	}
	if (out[S_A].type == V_ARR && out[S_A].first_type == V_OBJ) {
		f->choice = 1;
		f->finish = present(&out[S_C0_FINISH]);
		if (backend == LS_BACKEND_OPENAI)
			f->text_len = text_len(&out[S_C0_TEXT]);
		else if (out[S_C0_TEXT].type == V_OBJ) /* delta */
			f->text_len = text_len(&out[S_CONTENT]) + text_len(&out[S_REASONING]);
	}
	return out[S_B].type == V_OBJ ? counts(out, f) : 0;
}

int ls_frame_fast(enum ls_backend backend, const char *data, size_t len, struct ls_frame_fields *f)
{
	const struct want *w = backend == LS_BACKEND_OPENAI ? &openai_w : backend == LS_BACKEND_OPENAI_CHAT ? &chat_w
			     : backend == LS_BACKEND_SGLANG ? &sglang_w : NULL;
	struct val out[FAST_OUT_MAX], root;
	struct cur c = { (const unsigned char *)data, (const unsigned char *)data + len, out };
	if (!w)
		return 0;
	for (size_t i = 0; i < FAST_OUT_MAX; i++)
		out[i].type = V_NONE;
	skip_ws(&c);
	if (c.p >= c.end || *c.p != '{' || scan_obj(&c, &root, w, 0))
		return 0;
	skip_ws(&c);
	if (c.p != c.end)
		return 0; /* cJSON ignores what follows the object; JSON does not */
	/* An error object (backend.c: error_object) is cJSON's to report, an engine's timings its to read. */
	const struct val *obj = &out[S_OBJECT];
	int sglang_account = backend == LS_BACKEND_SGLANG && present(&out[S_META_E2E]) && present(&out[S_META_FINISH]);
	if (present(&out[S_ERROR]) || present(&out[S_TIMINGS]) || sglang_account ||
	    (obj->type == V_STR && (!obj->plain || (obj->len == 5 && !memcmp(obj->at + 1, "error", 5)))))
		return 0;
	return fields(backend, out, f) == 0;
}
