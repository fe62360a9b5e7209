/* request_extra.h — what a run adds to every request beyond its prompt, as `vllm bench serve`
 * (vllm/benchmarks/lib/endpoint_request_func.py: _update_payload_common, _update_headers_common)
 * and SGLang's bench_serving (python/sglang/benchmark/serving.py: async_request_*) put it in the
 * body and the headers: sampling parameters, logprobs, the served model name, LoRA adapters, an
 * extra JSON body merged last, extra headers and the request id. Pure functions, no I/O. */
#ifndef LATSCOPE_REQUEST_EXTRA_H
#define LATSCOPE_REQUEST_EXTRA_H

#include <stddef.h>
#include <stdint.h>
#include "driver/backend.h"

/* Whose payload rules: vLLM's adds only what a flag gave; SGLang's always sends its defaults
 * (temperature 0.0, best_of 1 on completions; return_logprob, logprob_start_len, lora_path on
 * /generate). */
enum ls_body_rules {
	LS_BODY_VLLM,
	LS_BODY_SGLANG,
};

enum ls_sampling {
	LS_SAMP_TEMPERATURE,
	LS_SAMP_TOP_P,
	LS_SAMP_TOP_K,
	LS_SAMP_MIN_P,
	LS_SAMP_FREQUENCY_PENALTY,
	LS_SAMP_PRESENCE_PENALTY,
	LS_SAMP_REPETITION_PENALTY,
	LS_SAMP__COUNT,
};
/* The JSON key of each (the same in vLLM's and SGLang's APIs). */
extern const char *const ls_sampling_keys[LS_SAMP__COUNT];

#define LS_REQUEST_ID_PREFIX_MAX 36 /* fits the driver's X-Request-Id line with a 20-digit id */

struct ls_request_extra {
	enum ls_body_rules rules;
	double   sampling[LS_SAMP__COUNT];
	unsigned sampling_set;       /* bit (1 << enum ls_sampling) per parameter given */
	int      logprobs;           /* vLLM --logprobs N; -1 = not given */
	int      return_logprob;     /* SGLang --return-logprob */
	int      top_logprobs_num;   /* SGLang --top-logprobs-num, 0 = none */
	int      logprob_start_len;  /* SGLang --logprob-start-len [-1] */
	char    *extra_body;         /* JSON object, merged over the body last; NULL = none */
	char    *served_model_name;  /* the "model" sent instead of --model */
	char   **headers;            /* "Name: value" per --header */
	size_t   n_headers;
	char    *request_id_prefix;  /* measured requests' X-Request-Id is PREFIX<i>; NULL = latscope's */
	char   **lora;               /* vLLM --lora-modules, SGLang --lora-name */
	size_t   n_lora;
	int      lora_round_robin;   /* vLLM --lora-assignment round-robin, SGLang's distinct */
	double   lora_zipf_alpha;    /* SGLang's skewed: P(adapter k) ~ alpha^-k; 0 = off */
	char    *prompt_suffix;      /* SGLang --prompt-suffix, appended to text prompts */
};

void ls_request_extra_init(struct ls_request_extra *x); /* nothing given; logprobs -1 etc. */
void ls_request_extra_free(struct ls_request_extra *x);

/* --header KEY=VALUE (vLLM's and SGLang's form): stored as "KEY: VALUE". NULL, or why not. */
const char *ls_request_extra_add_header(struct ls_request_extra *x, const char *kv);
/* A list flag's value (--lora-modules A B): appended. 0 or -ENOMEM. */
int ls_request_extra_add_str(char ***list, size_t *n, const char *v);
/* NULL when text is one JSON object, else why not. */
const char *ls_request_extra_check_object(const char *text);

/* The LoRA adapter of request i (NULL: none): vLLM picks one per measured request (random or
 * round-robin), none for its test and warmups; SGLang sends the first to its warmups and a
 * uniform pick to each measured request. rng: the run's draws (base/rng.h state). */
const char *ls_request_extra_lora(const struct ls_request_extra *x, size_t i, int warmup, uint64_t rng[2]);

/* body (a backend's JSON, ls_backend_body) with x applied for backend, lora (NULL: none):
 * malloc'd into *out, length *len. 0, or -EINVAL (body or extra body not a JSON object),
 * -ENOMEM. */
int ls_request_extra_apply(const struct ls_request_extra *x, enum ls_backend backend, const char *body,
			   const char *lora, char **out, size_t *len);

/* Whether x changes a body at all (else the backend's body goes out as it is). */
int ls_request_extra_touches_body(const struct ls_request_extra *x);

/* What x sends, for the record file and the result JSON: {"sampling": {...}, "headers":
 * {"Name": "<redacted>"}, ...}; header values never appear. has_auth: an Authorization header
 * goes out (OPENAI_API_KEY). malloc'd JSON text, NULL on ENOMEM. */
char *ls_request_extra_summary(const struct ls_request_extra *x, enum ls_backend backend, int has_auth);

#endif
