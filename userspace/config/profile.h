/* profile.h — the rules on which benchmark harnesses disagree, fixed by name (ARCHITECTURE.md principle 1:
 * "one run can be reported the way vllm bench serve reports it, the way SGLang's bench_serving
 * reports it, and the honest way"). Read rules (struct ls_read_rules, metrics.h) turn records
 * into numbers; send rules are the defaults `latscope bench` uses unless a flag says otherwise.
 * Built in: vllm, sglang, sglang-oai, honest (profile.c says which harness code each rule
 * comes from). A JSON file (configs/NAME.json, or a path) with the same keys overrides a
 * built-in's fields (see ls_profile_apply_json). */
#ifndef LATSCOPE_PROFILE_H
#define LATSCOPE_PROFILE_H

#include <stdint.h>
#include "workload/arrival.h"
#include "driver/backend.h"
#include "workload/dataset.h"
#include "metrics/metrics.h"

struct cJSON;

/* How warmup requests are sent. */
enum ls_warmup_shape {
	LS_WARMUP_VLLM,   /* num_warmups copies of the first prompt, at once, under the slot limit */
	LS_WARMUP_SGLANG, /* the first prompt with output capped at 32 tokens, then a 1 s pause */
};
#define LS_WARMUP_SGLANG_OUTPUT_CAP 32
#define LS_WARMUP_SGLANG_PAUSE_NS   1000000000ull

int ls_warmup_shape_parse(const char *s, enum ls_warmup_shape *out); /* "vllm" | "sglang" */
const char *ls_warmup_shape_name(enum ls_warmup_shape shape);

/* Which tool's result block the text report copies. */
enum ls_report_layout {
	LS_LAYOUT_VLLM,   /* vllm bench serve */
	LS_LAYOUT_SGLANG, /* sglang.bench_serving */
};
int ls_layout_parse(const char *s, enum ls_report_layout *out); /* "vllm" | "sglang" */
const char *ls_layout_name(enum ls_report_layout layout);

/* How a harness sends: the one copy of these rules, in a profile (its defaults), in bench's
 * settings (the profile's with the config file and flags over them) and in what a compare run
 * sent. */
struct ls_send_rules {
	enum ls_backend         backend;
	enum ls_arrival_kind    arrival;
	int                     per_request_conn;
	enum ls_range_semantics range_semantics;
	enum ls_warmup_shape    warmup_shape;
	uint32_t                num_warmups;
	int                     ignore_eos;
};

struct ls_profile {
	char name[64];
	char source[256];            /* "built-in", or the file it was read from */
	char description[160];       /* one line: whose rules these are */
	struct ls_read_rules read;
	struct ls_send_rules send;   /* defaults for bench's flags */
	/* report */
	enum ls_report_layout   layout;
	int                     show_both_itl;     /* print chunk and token ITL side by side */
	int                     show_client_queue; /* print the slot wait and queue-inclusive E2EL */
	int                     itl_token_when_spec; /* headline ITL per token when the server reports a
						      * speculative accept length above 1 (sglang-oai) */
};

/* Built-in profile by name; 0 or -ENOENT. */
int ls_profile_builtin(const char *name, struct ls_profile *out);

/* NAME (a built-in, overlaid by NAME.json from $LATSCOPE_CONFIG_DIR, ./configs or
 * PREFIX/share/latscope/configs when one exists) or a PATH to a JSON profile (keys below,
 * "base": a built-in to start from, default "vllm"). 0, or -errno with one line on stderr. */
int ls_profile_load(const char *name_or_path, struct ls_profile *out);

/* The read rules a profile applies to a run whose server reported accept_len (SGLang's
 * avg_spec_accept_length; <= 0 unknown). Returns 1 when the accept length changed the
 * rules (sglang-oai switches its headline ITL to per token), else 0. */
int ls_profile_read_rules(const struct ls_profile *p, double accept_len, struct ls_read_rules *out);

/* Applies a profile JSON object's keys to p: "name", "description", "clock"
 * (scheduled|admitted|started), "ttft_gate" (choices|text|cum_text), "itl" (frame|token),
 * "e2el_end" (last_content|done|last_byte), "out_tokens" (usage|cumulative|requested),
 * "failures_in_headline", "no_token_ok", "no_done_ok", "itl_max" (bools), "percentiles" and
 * "itl_percentiles" ([50, 99]; [] = as percentiles), "backend", "arrival", "connection"
 * (reuse|per-request), "range_semantics" (vllm|sglang), "warmup_shape" (vllm|sglang),
 * "num_warmups", "ignore_eos", "layout" (vllm|sglang), "show_both_itl", "show_client_queue",
 * "itl_token_when_spec". Unknown keys are an error (a typo must not silently keep a default).
 * where names the source in messages. 0 or -EINVAL. */
int ls_profile_apply_json(struct ls_profile *p, const struct cJSON *obj, const char *where);

/* The profile as a JSON object with every key above (configs/NAME.json are this, checked by
 * a test). NULL on ENOMEM. */
struct cJSON *ls_profile_to_json(const struct ls_profile *p);

#endif
