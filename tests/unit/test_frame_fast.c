/* The frame fast path (driver/frame_fast.c) against cJSON's path: ls_backend_decode (fast,
 * falling back to cJSON) and ls_backend_decode_json (cJSON alone) must leave identical frames,
 * records and decoding state for every payload: the common shapes of each backend, frames the
 * fast path must decline, thousands of seeded mutations of them, and every event of the fuzz
 * corpus (tests/fuzz/corpus/sse) under each backend. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/rng.h"
#include "driver/backend_int.h"
#include "driver/sse.h"

struct side {
	struct ls_request req;
	struct ls_decode_state st;
};

static void side_init(struct side *s)
{
	memset(s, 0, sizeof(*s));
	ls_request_reset(&s->req, 0);
	ls_decode_state_init(&s->st);
}

static size_t n_compared, n_fast;

/* Decodes data with both paths (each on its own record and state) and compares everything. */
static void both(struct side *a, struct side *b, enum ls_backend be, const char *data, size_t len)
{
	char *copy = malloc(len ? len : 1); /* exactly len bytes: an over-read is ASan's to catch */
	cr_assert_not_null(copy);
	memcpy(copy, data, len);
	struct ls_frame fa = { .tokens = -1, .cum_tokens = -1 }, fb = fa;
	struct ls_frame_fields f;
	n_fast += ls_frame_fast(be, copy, len, &f);
	int ra = ls_backend_decode(be, copy, len, &a->st, &fa, &a->req);
	int rb = ls_backend_decode_json(be, copy, len, &b->st, &fb, &b->req);
	n_compared++;
	char shown[96];
	snprintf(shown, sizeof(shown), "%.*s", len < 80 ? (int)len : 80, data);
	cr_assert_eq(ra, rb, "backend %d rc %d vs %d: %s", be, ra, rb, shown);
	cr_assert_eq(fa.text_len, fb.text_len, "backend %d text_len %u vs %u: %s", be, fa.text_len, fb.text_len, shown);
	cr_assert_eq(fa.tokens, fb.tokens, "backend %d tokens %d vs %d: %s", be, fa.tokens, fb.tokens, shown);
	cr_assert_eq(fa.cum_tokens, fb.cum_tokens, "backend %d cum_tokens: %s", be, shown);
	cr_assert_eq(fa.flags, fb.flags, "backend %d flags %x vs %x: %s", be, fa.flags, fb.flags, shown);
	cr_assert_eq(a->req.usage_prompt_tokens, b->req.usage_prompt_tokens, "prompt tokens: %s", shown);
	cr_assert_eq(a->req.usage_completion_tokens, b->req.usage_completion_tokens, "completion tokens: %s", shown);
	cr_assert_eq(a->req.text_bytes, b->req.text_bytes, "text bytes: %s", shown);
	cr_assert_str_eq(a->req.error, b->req.error, "error: %s", shown);
	cr_assert_eq(a->st.last_cum_tokens, b->st.last_cum_tokens, "state: %s", shown);
	cr_assert_eq(a->st.last_text_len, b->st.last_text_len, "state: %s", shown);
	free(copy);
}

/* The shapes servers send (the simulator's, vLLM's, SGLang's), and near misses. */
static const char *const frames[] = {
	/* latscope sim, completions */
	"{\"id\":\"cmpl-7\",\"object\":\"text_completion\",\"created\":1733100000,\"model\":\"latscope-sim\","
	"\"choices\":[{\"index\":0,\"text\":\" the\",\"logprobs\":null,\"finish_reason\":null,\"stop_reason\":null}]}",
	"{\"id\":\"cmpl-7\",\"object\":\"text_completion\",\"created\":1733100000,\"model\":\"latscope-sim\","
	"\"choices\":[{\"index\":0,\"text\":\" end\",\"logprobs\":null,\"finish_reason\":\"length\",\"stop_reason\":null}]}",
	"{\"id\":\"cmpl-7\",\"object\":\"text_completion\",\"created\":1733100000,\"model\":\"latscope-sim\","
	"\"choices\":[],\"usage\":{\"prompt_tokens\":32,\"total_tokens\":96,\"completion_tokens\":64}}",
	/* latscope sim, chat: the role frame, a token, usage */
	"{\"id\":\"chatcmpl-7\",\"object\":\"chat.completion.chunk\",\"created\":1733100000,\"model\":\"m\","
	"\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,"
	"\"finish_reason\":null}]}",
	"{\"id\":\"chatcmpl-7\",\"object\":\"chat.completion.chunk\",\"created\":1733100000,\"model\":\"m\","
	"\"choices\":[{\"index\":0,\"delta\":{\"content\":\" w\\u00f6rld\\n\"},\"logprobs\":null,\"finish_reason\":null}]}",
	/* vLLM: usage on every frame (continuous usage stats), reasoning content, usage null */
	"{\"id\":\"cmpl-a\",\"object\":\"text_completion\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,"
	"\"text\":\"ab\",\"logprobs\":null,\"finish_reason\":null,\"stop_reason\":null}],"
	"\"usage\":{\"prompt_tokens\":5,\"total_tokens\":7,\"completion_tokens\":2}}",
	"{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,"
	"\"delta\":{\"reasoning_content\":\"hmm \\\"x\\\"\",\"content\":null},\"logprobs\":null,\"finish_reason\":null}],"
	"\"usage\":null}",
	"{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\\ud83d\\ude00 \xf0\x9f\x98\x80 \xc3\xa9\"},"
	"\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":0,\"completion_tokens\":9}}",
	/* SGLang /generate: cumulative text, meta_info whole on every frame */
	"{\"text\":\"Hi\",\"meta_info\":{\"id\":\"a1\",\"finish_reason\":null,\"prompt_tokens\":7,"
	"\"completion_tokens\":1,\"cached_tokens\":0}}",
	"{\"text\":\"Hi there\",\"meta_info\":{\"id\":\"a1\",\"finish_reason\":null,\"prompt_tokens\":7,"
	"\"completion_tokens\":2,\"cached_tokens\":0,\"e2e_latency\":0.0123,\"output_token_logprobs\":[[-0.5,17,null]]}}",
	"{\"text\":\"Hi there!\",\"meta_info\":{\"id\":\"a1\",\"finish_reason\":{\"type\":\"length\",\"length\":3},"
	"\"prompt_tokens\":7,\"completion_tokens\":3,\"cached_tokens\":0,\"spec_verify_ct\":1}}",
	"{\"text\":\"x\",\"meta_info\":{\"completion_tokens\":2}}",
	" \t{\"text\" : \"a\\/b\\b\\f\\r\\t\" ,\r\n\"meta_info\":{} }\n",
	/* near misses the fast path must decline or read exactly */
	"{\"choices\":[{\"text\":\"a\\u0000b\"}]}",
	"{\"choices\":[{\"t\\u0065xt\":\"escaped name\"}]}",
	"{\"ch\\u006fices\":[{\"text\":\"escaped top name\"}]}",
	"{\"choices\":[{\"text\":\"x\"}],\"usage\":{\"completion_tokens\":-0}}",
	"{\"choices\":[{\"text\":\"x\"}],\"usage\":{\"completion_tokens\":3.7}}",
	"{\"choices\":[{\"text\":\"x\"}],\"usage\":{\"completion_tokens\":1e2,\"prompt_tokens\":012}}",
	"{\"choices\":[{\"text\":\"x\"}],\"usage\":{\"completion_tokens\":2147483647,\"prompt_tokens\":2147483648}}",
	"{\"choices\":[{\"text\":\"x\"}],\"usage\":{\"completion_tokens\":999999999,\"prompt_tokens\":-5}}",
	"{\"choices\":[{\"text\":\"x\"}],\"usage\":{\"completion_tokens\":\"4\",\"prompt_tokens\":true}}",
	"{\"choices\":[{\"text\":\"x\"}]} trailing",
	"\xef\xbb\xbf{\"choices\":[{\"text\":\"bom\"}]}",
	"{\"choices\":[{\"text\":\"x\"}]\x0b}",
	"{\"choices\":[{\"text\":\"\\ud800\"}]}",
	"{\"choices\":[{\"text\":\"\\udbff\\udfff \\ud800\\udc00 \\u07ff\\u0800\\uffff\\u0080\\u007f\\u0001\"}]}",
	"{\"choices\":[{\"text\":\"\\ud83dx\"}]}",
	"{\"choices\":[{\"text\":\"\\ud83d\\u0041\"}]}",
	"{\"choices\":[{\"text\":\"\\uDBFF\\uDFFF\\uAbCd\"}]}",
	"{\"choices\":[{\"text\":\"\\udc00\"}]}",
	"{\"choices\":[{\"text\":\"\\uZZZZ\"}]}",
	"{\"choices\":[{\"text\":\"\\q\"}]}",
	"{\"choices\":[{\"text\":\"tab\there\"}]}",
	"{\"choices\":[{\"text\":\"\xc3\"}]}",
	"{\"choices\":[{\"text\":\"x\"}],}",
	"{\"choices\":[{\"text\":\"x\"},]}",
	"{\"choices\":[{\"x\":[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]],\"text\":\"deep\"}]}",
	"{\"choices\":[1,{\"text\":\"second\"}]}",
	"{\"choices\":[{\"index\":0},{\"text\":\"second\",\"finish_reason\":\"stop\",\"delta\":{\"content\":\"2\"}}],"
	"\"meta_info\":[{\"completion_tokens\":3}]}",
	"{\"usage\":{\"completion_tokens\":4,\"prompt_tokens\":9,\"completion_tokens\":99},"
	"\"choices\":[{\"text\":\"abc\",\"finish_reason\":null,\"text\":\"longer\",\"finish_reason\":\"stop\"}],"
	"\"choices\":[{\"text\":\"x\",\"finish_reason\":\"stop\"}],\"usage\":{\"completion_tokens\":1}}",
	"{\"choices\":[{\"delta\":{\"content\":\"cde\",\"content\":\"ignored\"},\"delta\":{\"content\":\"no\"}}]}",
	"{\"meta_info\":{\"finish_reason\":null,\"completion_tokens\":2,\"prompt_tokens\":3,\"finish_reason\":{}},"
	"\"text\":\"Hi\",\"text\":\"Hi there\",\"meta_info\":{\"completion_tokens\":7}}",
	"{\"error\":null,\"error\":{\"message\":\"second error member\"},\"object\":\"x\",\"object\":\"error\","
	"\"choices\":[{\"text\":\"ok\"}],\"text\":\"ok\"}",
	"{\"choices\":{\"text\":\"not an array\"}}",
	"{\"choices\":[{\"delta\":\"not an object\",\"text\":\"t\",\"finish_reason\":false}]}",
	"{\"error\":null,\"object\":\"text_completion\",\"choices\":[{\"text\":\"ok\"}]}",
	"{\"error\":{\"message\":\"boom\"}}",
	"{\"object\":\"error\",\"message\":\"bad\"}",
	"{\"object\":\"\\u0065rror\",\"message\":\"escaped\"}",
	"{\"object\":\"errors\",\"choices\":[]}",
	"{\"text\":null,\"meta_info\":{\"finish_reason\":null}}",
	"{\"text\":\"\",\"meta_info\":[]}",
	"{\"choices\":[{\"text\":\"n\",\"finish_reason\":nul}]}",
	"{\"choices\":[{\"text\":\"n\",\"finish_reason\":nulll}]}",
	"{\"a\":1.5e+3,\"b\":-0.0,\"c\":[true,false,null,{}],\"choices\":[]}",
	"{\"a\":1.,\"choices\":[]}",
	"{\"a\":.5,\"choices\":[]}",
	"{}",
	"[DONE]",
	"",
	"{",
	"{\"choices\":[{\"text\":\"unterminated",
};
#define N_FRAMES (sizeof(frames) / sizeof(frames[0]))

static const enum ls_backend backends[] = { LS_BACKEND_OPENAI, LS_BACKEND_OPENAI_CHAT, LS_BACKEND_SGLANG };

Test(frame_fast, common_shapes_take_the_fast_path)
{
	/* The sim's, vLLM's and SGLang's frames (the first 13) are read without cJSON. */
	for (size_t i = 0; i < 13; i++) {
		struct ls_frame_fields f;
		enum ls_backend be = strstr(frames[i], "meta_info") ? LS_BACKEND_SGLANG
				   : strstr(frames[i], "delta") ? LS_BACKEND_OPENAI_CHAT : LS_BACKEND_OPENAI;
		cr_expect_eq(ls_frame_fast(be, frames[i], strlen(frames[i]), &f), 1, "frame %zu declined", i);
	}
	struct ls_frame_fields f;
	const char *declined[] = { "{\"error\":{\"message\":\"boom\"}}", "{\"object\":\"error\"}", "[DONE]",
				   "{\"choices\":[{\"text\":\"a\\u0000b\"}]}", "{\"choices\":[]} x" };
	for (size_t i = 0; i < sizeof(declined) / sizeof(declined[0]); i++)
		cr_expect_eq(ls_frame_fast(LS_BACKEND_OPENAI, declined[i], strlen(declined[i]), &f), 0, "%s", declined[i]);
	cr_expect_eq(ls_frame_fast(LS_BACKEND_TGI, "{\"token\":{}}", 12, &f), 0, "TGI is cJSON's");
	const char *chat = "{\"choices\":[{\"delta\":{\"content\":\"\\u00e9\\ud83d\\ude00\",\"reasoning_content\":\"ab\"},"
			   "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4}}";
	cr_assert_eq(ls_frame_fast(LS_BACKEND_OPENAI_CHAT, chat, strlen(chat), &f), 1);
	cr_expect_eq(f.text_len, 2 + 4 + 2);
	cr_expect(f.choice && f.finish && f.usage);
	cr_expect_eq(f.prompt_tokens, 3);
	cr_expect_eq(f.completion_tokens, 4);
}

Test(frame_fast, same_records_as_cjson)
{
	for (size_t b = 0; b < 3; b++) {
		struct side a, c;
		side_init(&a);
		side_init(&c);
		for (size_t i = 0; i < N_FRAMES; i++) /* in sequence: cumulative state carries */
			both(&a, &c, backends[b], frames[i], strlen(frames[i]));
		static const char nul[] = "{\"text\":\"ab\0cdefghijklmnop\",\"choices\":[{\"text\":\"abcdefghijklmn\0p\"}]}";
		both(&a, &c, backends[b], nul, sizeof(nul) - 1); /* cJSON's strlen stops at the NUL */
		ls_request_free(&a.req);
		ls_request_free(&c.req);
	}
}

/* A mutation of src into dst (cap bytes): bytes replaced, dropped, inserted or cut, chosen to
 * reach JSON's and UTF-8's edges. Returns its length. */
static size_t mutate(uint64_t rng[2], const char *src, size_t len, char *dst, size_t cap)
{
	static const char *const escapes[] = { "\\u00e9", "\\ud83d", "\\ude00", "\\udbff\\udfff", "\\u0000",
						"\\u07ff", "\\u0800", "\\uffff", "\\u0041", "\\n", "\\\"", "\\u00" };
	static const char pick[] = "\"\\{}[],:0123456789-+.eEunlrtf \t\r\n\x0b\x01\x80\xbf\xc3\xa9\xed\xf0\xf4xa";
	memcpy(dst, src, len);
	for (uint64_t k = 0, ops = 1 + ls_rng_below(rng, 3); k < ops; k++) {
		size_t at = len ? (size_t)ls_rng_below(rng, len) : 0;
		char ch = ls_rng_below(rng, 16) ? pick[ls_rng_below(rng, sizeof(pick) - 1)] : 0;
		switch (ls_rng_below(rng, 5)) {
		case 0: if (len) dst[at] = ch; break;
		case 1: if (len) { memmove(dst + at, dst + at + 1, len - at - 1); len--; } break;
		case 2: if (len + 1 < cap) { memmove(dst + at + 1, dst + at, len - at); dst[at] = ch; len++; } break;
		case 3: len = at; break;
		default: {
			const char *esc = escapes[ls_rng_below(rng, sizeof(escapes) / sizeof(escapes[0]))];
			size_t n = strlen(esc);
			if (len + n < cap) {
				memmove(dst + at + n, dst + at, len - at);
				memcpy(dst + at, esc, n);
				len += n;
			}
		}
		}
	}
	return len;
}

Test(frame_fast, same_records_over_mutations)
{
	uint64_t rng[2];
	ls_rng_seed(rng, 17);
	char buf[1024];
	size_t before = n_fast;
	for (size_t i = 0; i < N_FRAMES; i++)
		for (size_t b = 0; b < 3; b++) {
			struct side a, c;
			side_init(&a);
			side_init(&c);
			for (int m = 0; m < 300; m++) {
				size_t len = mutate(rng, frames[i], strlen(frames[i]), buf, sizeof(buf));
				both(&a, &c, backends[b], buf, len);
			}
			ls_request_free(&a.req);
			ls_request_free(&c.req);
		}
	cr_expect_gt(n_fast - before, 1000, "the mutations reach the fast path (%zu of %zu)", n_fast - before,
		     n_compared);
}

struct corpus_ctx {
	enum ls_backend backend;
	struct side a, c;
};

static int on_event(void *p, const struct ls_sse_event *ev)
{
	struct corpus_ctx *x = p;
	both(&x->a, &x->c, x->backend, ev->data, ev->data_len);
	return 0;
}

/* Every event of a corpus file (its first byte is the fuzzer's selector), under each backend. */
static void corpus_file(const char *path)
{
	FILE *fp = fopen(path, "rb");
	cr_assert_not_null(fp, "%s: %s", path, strerror(errno));
	static char data[1 << 20];
	size_t n = fread(data, 1, sizeof(data), fp);
	fclose(fp);
	for (size_t b = 0; b < 3 && n > 1; b++) {
		struct corpus_ctx x = { .backend = backends[b] };
		side_init(&x.a);
		side_init(&x.c);
		struct ls_sse sse;
		ls_sse_init(&sse);
		ls_sse_feed(&sse, data + 1, n - 1, on_event, &x);
		ls_sse_free(&sse);
		ls_request_free(&x.a.req);
		ls_request_free(&x.c.req);
	}
}

Test(frame_fast, same_records_over_the_fuzz_corpus)
{
	const char *root = getenv("LATSCOPE_ROOT");
	char dir[512], path[1024];
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/sse", root ? root : ".");
	DIR *d = opendir(dir);
	cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
	size_t files = 0, before = n_compared;
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		corpus_file(path);
		files++;
	}
	closedir(d);
	cr_expect_gt(files, 10, "corpus files in %s", dir);
	cr_expect_gt(n_compared - before, 100, "events compared");
}
