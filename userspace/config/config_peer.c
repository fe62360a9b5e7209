/* config_peer.c — the flags of `vllm bench serve` (vllm/benchmarks/serve.py add_cli_args,
 * vllm/benchmarks/datasets/arg_utils.py) and SGLang's bench_serving (python/sglang/benchmark/
 * serving.py cli_main) that config_opts.c does not have: request body and headers, ramp-up,
 * server controls, output files, and the ones latscope accepts and does its own way. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "config/config_int.h"
#include "config/config_peer.h"

enum peer_id {
	P_HARNESS = LS_PEER_OPT_FIRST, P_RULES_ALIAS,
	P_TEMPERATURE, P_TOP_P, P_TOP_K, P_MIN_P, P_FREQUENCY_PENALTY, P_PRESENCE_PENALTY, P_REPETITION_PENALTY,
	P_LOGPROBS, P_RETURN_LOGPROB, P_TOP_LOGPROBS_NUM, P_LOGPROB_START_LEN,
	P_EXTRA_BODY, P_SERVED_MODEL_NAME, P_HEADER, P_REQUEST_ID_PREFIX, P_LORA_MODULES, P_LORA_ASSIGNMENT,
	P_LORA_NAME, P_LORA_DISTRIBUTION, P_LORA_ZIPF_ALPHA, P_PROMPT_SUFFIX, P_DISABLE_IGNORE_EOS,
	P_RAMP_STRATEGY, P_RAMP_START, P_RAMP_END, P_PROBE_RATE,
	P_SERVER_PROFILE, P_PROFILE_ACTIVITIES, P_PROFILE_START_STEP, P_PROFILE_STEPS, P_PROFILE_NUM_STEPS,
	P_PROFILE_BY_STAGE, P_PROFILE_STAGES, P_PROFILE_OUTPUT_DIR, P_PROFILE_PREFIX, P_PROFILE_PREFILL_URL, P_PROFILE_DECODE_URL,
	P_FLUSH_CACHE,
	P_SAVE_DETAILED, P_APPEND_RESULT, P_METADATA, P_LABEL, P_OUTPUT_FILE, P_OUTPUT_DETAILS, P_TAG,
	P_PRINT_REQUESTS, P_PLOT_THROUGHPUT, P_PLOT_TIMELINE,
	/* accepted: latscope does this its own way, and says so in one line */
	P_NOTE_FIRST,
	P_TOKENIZER = P_NOTE_FIRST, P_TOKENIZER_MODE, P_TRUST_REMOTE_CODE, P_SKIP_TOKENIZER_INIT,
	P_USE_BEAM_SEARCH, P_NO_STREAM, P_SKIP_CHAT_TEMPLATE, P_APPLY_CHAT_TEMPLATE, P_TOKENIZE_PROMPT,
	P_DISABLE_STREAM, P_PD_SEPARATED, P_TIMELINE_ITL_THRESHOLDS, P_PLOT_NOTE, P_SAVE_DETAILED_NOTE, P_PLOT_DATASET_STATS,
	P_NOTE_END,
};

#define NOTE_TOKENIZER "latscope counts tokens with the server's /tokenize, not a local tokenizer"

/* What latscope does instead, per accepted flag (printed once each, on stderr). */
static const char *const notes[P_NOTE_END - P_NOTE_FIRST] = {
	[P_TOKENIZER - P_NOTE_FIRST] = "--tokenizer: " NOTE_TOKENIZER,
	[P_TOKENIZER_MODE - P_NOTE_FIRST] = "--tokenizer-mode: " NOTE_TOKENIZER,
	[P_TRUST_REMOTE_CODE - P_NOTE_FIRST] = "--trust-remote-code: " NOTE_TOKENIZER " (no model code runs here)",
	[P_SKIP_TOKENIZER_INIT - P_NOTE_FIRST] = "--skip-tokenizer-init: " NOTE_TOKENIZER " instead",
	[P_USE_BEAM_SEARCH - P_NOTE_FIRST] = "--use-beam-search: vllm bench serve accepts it and sends nothing "
					   "for it; latscope neither",
	[P_NO_STREAM - P_NOTE_FIRST] = "--no-stream: vLLM's means loading a Hugging Face dataset without "
				      "streaming; latscope reads dataset files whole, so nothing changes",
	[P_SKIP_CHAT_TEMPLATE - P_NOTE_FIRST] = "--skip-chat-template: latscope never applies a chat template "
					       "client-side; prompts go as the dataset has them",
	[P_APPLY_CHAT_TEMPLATE - P_NOTE_FIRST] = "--apply-chat-template: latscope has no local tokenizer to apply "
						"one; prompts go as they are (a chat backend, e.g. --backend "
						"sglang-oai-chat, has the server apply its template)",
	[P_TOKENIZE_PROMPT - P_NOTE_FIRST] = "--tokenize-prompt: latscope already sends random prompts as token "
					    "ids (input_ids on /generate); text datasets stay text",
	[P_DISABLE_STREAM - P_NOTE_FIRST] = "--disable-stream: latscope measures streamed responses (TTFT and ITL "
					   "need frames) and keeps streaming; SGLang's non-streamed TTFT is its "
					   "E2E latency",
	[P_PD_SEPARATED - P_NOTE_FIRST] = "--pd-separated: requests go to --base-url (the PD router), as SGLang's "
					 "do; with --profile, /start_profile and /stop_profile go to each "
					 "--profile-prefill-url and --profile-decode-url instead",
	[P_TIMELINE_ITL_THRESHOLDS - P_NOTE_FIRST] = "--timeline-itl-thresholds: see --plot-timeline",
	[P_PLOT_NOTE - P_NOTE_FIRST] = "--plot-timeline: latscope draws the per-request timeline in its HTML report "
				      "(--html) and its Perfetto trace (--trace FILE); no .timeline.html is written",
	[P_PLOT_DATASET_STATS - P_NOTE_FIRST] = "--plot-dataset-stats: the prompt and output lengths are in the "
					       "result JSON (input_lens, output_lens) and the record file; no .png "
					       "is drawn",
	[P_SAVE_DETAILED_NOTE - P_NOTE_FIRST] = "--save-detailed: latscope's result JSON always carries vLLM's "
					       "per-request arrays (generated_texts are empty: latscope keeps "
					       "no text)",
};

#define V ""
#define S ""
const struct ls_opt ls_config_peer_opts[] = {
	{ "harness", P_HARNESS, LS_ARG_ONE, "vllm|sglang",
	  "whose command line the rest is: vllm (vllm bench serve: its names and defaults) or sglang\n"
	  "(everything after `python -m sglang.bench_serving`: its names, unique prefixes, defaults,\n"
	  "and its JSONL output file) [vllm]", NULL },
	{ "rules", O_PROFILE, LS_ARG_ONE, "NAME|PATH",
	  "latscope's profile (send and read rules): vllm, sglang, sglang-oai, honest, or a JSON file\n"
	  "[vllm; sglang or sglang-oai under --harness sglang]. --profile NAME is the old spelling", NULL },
	{ "temperature", P_TEMPERATURE, LS_ARG_ONE, "T", "sampling temperature sent [server's; SGLang sends 0.0]", NULL },
	{ "top-p", P_TOP_P, LS_ARG_ONE, "P", "top_p sent [not sent]", NULL },
	{ "top-k", P_TOP_K, LS_ARG_ONE, "K", V "top_k sent [not sent]", NULL },
	{ "min-p", P_MIN_P, LS_ARG_ONE, "P", V "min_p sent [not sent]", NULL },
	{ "frequency-penalty", P_FREQUENCY_PENALTY, LS_ARG_ONE, "X", V "frequency_penalty sent [not sent]", NULL },
	{ "presence-penalty", P_PRESENCE_PENALTY, LS_ARG_ONE, "X", V "presence_penalty sent [not sent]", NULL },
	{ "repetition-penalty", P_REPETITION_PENALTY, LS_ARG_ONE, "X", V "repetition_penalty sent [not sent]", NULL },
	{ "logprobs", P_LOGPROBS, LS_ARG_ONE, "N", V "logprobs per token asked on /v1/completions", NULL },
	{ "return-logprob", P_RETURN_LOGPROB, LS_ARG_NONE, NULL, S "return_logprob on /generate", NULL },
	{ "top-logprobs-num", P_TOP_LOGPROBS_NUM, LS_ARG_ONE, "N", S "top_logprobs_num (with --return-logprob)", NULL },
	{ "logprob-start-len", P_LOGPROB_START_LEN, LS_ARG_ONE, "N", S "logprob_start_len on /generate [-1]", NULL },
	{ "extra-body", P_EXTRA_BODY, LS_ARG_ONE, "JSON", V "JSON object merged over every request body", NULL },
	{ "extra-request-body", P_EXTRA_BODY, LS_ARG_ONE, "JSON", S "JSON object merged over every request body", NULL },
	{ "served-model-name", P_SERVED_MODEL_NAME, LS_ARG_ONE, "NAME", "the model name sent [--model]", NULL },
	{ "header", P_HEADER, LS_ARG_MANY, "KEY=VALUE ...",
	  "headers sent with every request (they replace Content-Type and Authorization;\n"
	  "never X-Request-Id); the record file and result JSON name them, values redacted", NULL },
	{ "request-id-prefix", P_REQUEST_ID_PREFIX, LS_ARG_ONE, "PREFIX",
	  V "X-Request-Id of measured requests is PREFIX<index> [latscope's: <run tag>-<index>]", NULL },
	{ "lora-modules", P_LORA_MODULES, LS_ARG_MANY, "NAME ...", V "LoRA adapters: each measured request names one as its model", NULL },
	{ "lora-assignment", P_LORA_ASSIGNMENT, LS_ARG_ONE, "random|round-robin", V "how --lora-modules are picked [random]", NULL },
	{ "lora-name", P_LORA_NAME, LS_ARG_MANY, "NAME ...", S "LoRA adapters (lora_path): the first for warmups, then uniform", NULL },
	{ "lora-request-distribution", P_LORA_DISTRIBUTION, LS_ARG_ONE, "uniform|distinct|skewed",
	  S "how --lora-name adapters are drawn: uniform, distinct (round robin), skewed (Zipf) [uniform]", NULL },
	{ "lora-zipf-alpha", P_LORA_ZIPF_ALPHA, LS_ARG_ONE, "A", S "skewed: P(adapter k) ~ A^-k, A > 1 [1.5]", NULL },
	{ "prompt-suffix", P_PROMPT_SUFFIX, LS_ARG_ONE, "TEXT", S "appended to every text prompt", NULL },
	{ "disable-ignore-eos", P_DISABLE_IGNORE_EOS, LS_ARG_NONE, NULL, S "do not ask the server to ignore EOS", NULL },
	{ "warmup-requests", O_NUM_WARMUPS, LS_ARG_ONE, "N", S "= --num-warmups [1]", NULL },
	{ "ramp-up-strategy", P_RAMP_STRATEGY, LS_ARG_ONE, "linear|exponential",
	  V "request rate grows from --ramp-up-start-rps to --ramp-up-end-rps over the run\n"
	  "(per request, vLLM's formula; no --request-rate)", NULL },
	{ "ramp-up-start-rps", P_RAMP_START, LS_ARG_ONE, "RPS", V "first request's rate", NULL },
	{ "ramp-up-end-rps", P_RAMP_END, LS_ARG_ONE, "RPS", V "last request's rate", NULL },
	{ "probe-request-rate", P_PROBE_RATE, LS_ARG_ONE, "R",
	  V "single-token probe requests beside the run, outside --max-concurrency: one at a time,\n"
	  "the next 1/R s after the last returned, until the run ends; their TTFT and E2EL are\n"
	  "reported apart (probe_* keys) [0: none]", NULL },
	{ "server-profile", P_SERVER_PROFILE, LS_ARG_NONE, NULL,
	  "vLLM's and SGLang's --profile (the bare flag): POST /start_profile before the run and\n"
	  "/stop_profile after it (SGLang's with its --profile-* body)", NULL },
	{ "profile-activities", P_PROFILE_ACTIVITIES, LS_ARG_MANY, "A ...", S "/start_profile activities [CPU GPU]", NULL },
	{ "profile-start-step", P_PROFILE_START_STEP, LS_ARG_ONE, "N", S "/start_profile start_step", NULL },
	{ "profile-steps", P_PROFILE_STEPS, LS_ARG_ONE, "N", S "/start_profile num_steps", NULL },
	{ "profile-num-steps", P_PROFILE_NUM_STEPS, LS_ARG_ONE, "N", S "/start_profile num_steps", NULL },
	{ "profile-by-stage", P_PROFILE_BY_STAGE, LS_ARG_NONE, NULL, S "/start_profile profile_by_stage", NULL },
	{ "profile-stages", P_PROFILE_STAGES, LS_ARG_MANY, "S ...", S "/start_profile profile_stages", NULL },
	{ "profile-output-dir", P_PROFILE_OUTPUT_DIR, LS_ARG_ONE, "DIR", S "/start_profile output_dir (+ /<time>)", NULL },
	{ "profile-prefix", P_PROFILE_PREFIX, LS_ARG_ONE, "P", S "/start_profile profile_prefix", NULL },
	{ "profile-prefill-url", P_PROFILE_PREFILL_URL, LS_ARG_MANY, "URL ...",
	  S "--pd-separated --profile: the prefill workers profiled (URL/start_profile, /stop_profile)", NULL },
	{ "profile-decode-url", P_PROFILE_DECODE_URL, LS_ARG_MANY, "URL ...", S "--pd-separated --profile: the decode workers profiled", NULL },
	{ "flush-cache", P_FLUSH_CACHE, LS_ARG_NONE, NULL, S "POST /flush_cache before the run", NULL },
	{ "save-detailed", P_SAVE_DETAILED, LS_ARG_NONE, NULL, V "per-request arrays in the result JSON (always there)", NULL },
	{ "append-result", P_APPEND_RESULT, LS_ARG_NONE, NULL, V "append the result JSON as one more line of the file", NULL },
	{ "metadata", P_METADATA, LS_ARG_MANY, "KEY=VALUE ...", V "keys added to the result JSON", NULL },
	{ "label", P_LABEL, LS_ARG_ONE, "NAME", V "the result's label and file name prefix [--backend]", NULL },
	{ "output-file", P_OUTPUT_FILE, LS_ARG_ONE, "FILE",
	  S "append SGLang's result line (JSONL) [under --harness sglang:\n"
	  "BACKEND_MMDD_N_IN_OUT.jsonl for random, BACKEND_MMDD_N_DATASET.jsonl else]", NULL },
	{ "output-details", P_OUTPUT_DETAILS, LS_ARG_NONE, NULL, S "per-request lists in the JSONL line", NULL },
	{ "tag", P_TAG, LS_ARG_ONE, "TAG", S "\"tag\" of the JSONL line", NULL },
	{ "print-requests", P_PRINT_REQUESTS, LS_ARG_NONE, NULL, S "one line per request (after the run)", NULL },
	{ "plot-throughput", P_PLOT_THROUGHPUT, LS_ARG_NONE, NULL,
	  S "accepted: throughput over time is in latscope's HTML report (--html)", NULL },
	{ "plot-timeline", P_PLOT_TIMELINE, LS_ARG_NONE, NULL, V "accepted: the timeline is latscope's HTML report / --trace", NULL },
	{ "timeline-itl-thresholds", P_TIMELINE_ITL_THRESHOLDS, LS_ARG_ONE, "MS,MS", V "accepted (see --plot-timeline)", NULL },
	{ "plot-dataset-stats", P_PLOT_DATASET_STATS, LS_ARG_NONE, NULL, V "accepted: the lengths are in the result JSON", NULL },
	{ "tokenizer", P_TOKENIZER, LS_ARG_ONE, "NAME", "accepted: " NOTE_TOKENIZER, NULL },
	{ "tokenizer-mode", P_TOKENIZER_MODE, LS_ARG_ONE, "MODE", V "accepted (see --tokenizer)", NULL },
	{ "trust-remote-code", P_TRUST_REMOTE_CODE, LS_ARG_NONE, NULL, V "accepted (see --tokenizer)", NULL },
	{ "skip-tokenizer-init", P_SKIP_TOKENIZER_INIT, LS_ARG_NONE, NULL, V "accepted (see --tokenizer)", NULL },
	{ "use-beam-search", P_USE_BEAM_SEARCH, LS_ARG_NONE, NULL, V "accepted; vLLM sends nothing for it either", NULL },
	{ "no-stream", P_NO_STREAM, LS_ARG_NONE, NULL, V "accepted (HF dataset loading; datasets here are files)", NULL },
	{ "skip-chat-template", P_SKIP_CHAT_TEMPLATE, LS_ARG_NONE, NULL, V "accepted: no client-side template ever", NULL },
	{ "custom-skip-chat-template", P_SKIP_CHAT_TEMPLATE, LS_ARG_NONE, NULL, V "= --skip-chat-template (its older name)", NULL },
	{ "endpoint-type", O_BACKEND, LS_ARG_ONE, "NAME", V "= --backend (its older name)", NULL },
	{ "apply-chat-template", P_APPLY_CHAT_TEMPLATE, LS_ARG_NONE, NULL, S "accepted: no local tokenizer (see a chat backend)", NULL },
	{ "tokenize-prompt", P_TOKENIZE_PROMPT, LS_ARG_NONE, NULL, S "accepted: random prompts go as token ids already", NULL },
	{ "pd-separated", P_PD_SEPARATED, LS_ARG_NONE, NULL, S "accepted: requests go to --base-url (the router)", NULL },
	{ "disable-stream", P_DISABLE_STREAM, LS_ARG_NONE, NULL, S "accepted: latscope keeps streaming (it measures frames)", NULL },
};
#undef V
#undef S
const size_t ls_config_peer_n_opts = sizeof(ls_config_peer_opts) / sizeof(ls_config_peer_opts[0]);

const struct ls_opt *ls_config_all_opts(size_t *n)
{
	static struct ls_opt all[512];
	static size_t n_all;
	if (!n_all && ls_config_n_opts + ls_config_peer_n_opts <= sizeof(all) / sizeof(all[0])) {
		memcpy(all, ls_config_opts, ls_config_n_opts * sizeof(all[0]));
		memcpy(all + ls_config_n_opts, ls_config_peer_opts, ls_config_peer_n_opts * sizeof(all[0]));
		n_all = ls_config_n_opts + ls_config_peer_n_opts;
	}
	*n = n_all;
	return all;
}

static const char *set_text(char **dst, const char *v)
{
	return ls_config_set_str(dst, v) ? "out of memory" : NULL;
}

static const char *set_double(double *dst, const char *v, double lo, double hi)
{
	return ls_opt_parse_double(v, lo, hi, dst) ? "must be a number in range" : NULL;
}

/* A whole number in [lo, hi] (negative allowed: logprob_start_len -1). */
static const char *set_long(long *dst, const char *v, long lo, long hi)
{
	double d;
	if (ls_opt_parse_whole(v, (double)lo, (double)hi, &d))
		return "must be a whole number in range";
	*dst = (long)d;
	return NULL;
}

/* A comma list joined over repeats (--profile-activities CPU GPU). */
static const char *append_list(char **dst, const char *v)
{
	char *joined = NULL;
	if (asprintf(&joined, "%s%s%s", *dst ? *dst : "", *dst ? "," : "", v) < 0)
		return "out of memory";
	free(*dst);
	*dst = joined;
	return NULL;
}

static const char *apply_sampling(struct ls_request_extra *x, int id, const char *v)
{
	int k = id - P_TEMPERATURE;
	double hi = k == LS_SAMP_TOP_K ? 1e9 : 1e6, lo = k == LS_SAMP_TOP_K ? -1 : -1e6;
	if (k == LS_SAMP_TOP_K) {
		long l;
		const char *why = set_long(&l, v, -1, 1000000000);
		if (why)
			return "must be a whole number (-1 = off)";
		x->sampling[k] = (double)l;
	} else if (set_double(&x->sampling[k], v, lo, hi)) {
		return "must be a number";
	}
	x->sampling_set |= 1u << k;
	return NULL;
}

/* The body: logprobs, extra body, model name, LoRA, suffix. */
static const char *apply_body(struct ls_config *c, int id, const char *v)
{
	struct ls_request_extra *x = &c->peer.req;
	long l = 0;
	const char *why;
	switch (id) {
	case P_LOGPROBS:
		if ((why = set_long(&l, v, 0, 1000)))
			return "must be a count 0..1000";
		x->logprobs = (int)l;
		return NULL;
	case P_RETURN_LOGPROB:
		return ls_config_switch(&x->return_logprob, v);
	case P_TOP_LOGPROBS_NUM:
		if ((why = set_long(&l, v, 0, 1000)))
			return "must be a count 0..1000";
		x->top_logprobs_num = (int)l;
		return NULL;
	case P_LOGPROB_START_LEN:
		if ((why = set_long(&l, v, -1, 1L << 30)))
			return "must be -1 (no input logprobs) or a position";
		x->logprob_start_len = (int)l;
		return NULL;
	case P_EXTRA_BODY:
		if ((why = ls_request_extra_check_object(v)))
			return why;
		return set_text(&x->extra_body, v);
	case P_SERVED_MODEL_NAME:
		return set_text(&x->served_model_name, v);
	case P_HEADER:
		return ls_request_extra_add_header(x, v);
	case P_REQUEST_ID_PREFIX:
		if (strlen(v) > LS_REQUEST_ID_PREFIX_MAX || strpbrk(v, "\r\n"))
			return "must be at most 36 characters, on one line";
		return set_text(&x->request_id_prefix, v);
	case P_LORA_MODULES:
	case P_LORA_NAME:
		return ls_request_extra_add_str(&x->lora, &x->n_lora, v) ? "out of memory" : NULL;
	case P_LORA_ASSIGNMENT:
		if (strcmp(v, "random") && strcmp(v, "round-robin"))
			return "must be random or round-robin";
		x->lora_round_robin = !strcmp(v, "round-robin");
		return NULL;
	case P_LORA_DISTRIBUTION:
		if (strcmp(v, "uniform") && strcmp(v, "distinct") && strcmp(v, "skewed"))
			return "must be uniform, distinct or skewed";
		x->lora_round_robin = !strcmp(v, "distinct");
		c->peer.lora_skewed = !strcmp(v, "skewed");
		c->peer.lora_distinct = !strcmp(v, "distinct");
		return NULL;
	case P_LORA_ZIPF_ALPHA:
		if (set_double(&c->peer.lora_zipf_alpha, v, 0, 1e6) || c->peer.lora_zipf_alpha <= 1)
			return "must be greater than 1 (SGLang's check)";
		return NULL;
	case P_PROMPT_SUFFIX:
		return set_text(&x->prompt_suffix, v);
	default:
		return "unknown option";
	}
}

/* Ramp-up, server controls. */
static const char *apply_run(struct ls_config *c, int id, const char *v)
{
	struct ls_peer_opts *p = &c->peer;
	switch (id) {
	case P_DISABLE_IGNORE_EOS: {
		int on = 0;
		const char *why = ls_config_switch(&on, v);
		if (why)
			return why;
		return ls_config_apply(c, ls_config_find_opt("ignore-eos", 10), on ? "false" : "true");
	}
	case P_RAMP_STRATEGY:
		return ls_ramp_parse(v, &p->ramp) ? "must be linear or exponential" : NULL;
	case P_PROBE_RATE:
		return set_double(&p->probe_request_rate, v, 0, 1e6);
	case P_RAMP_START:
	case P_RAMP_END: {
		double *dst = id == P_RAMP_START ? &p->ramp_start_rps : &p->ramp_end_rps;
		*(id == P_RAMP_START ? &p->ramp_start_set : &p->ramp_end_set) = 1;
		return ls_opt_parse_whole(v, -1e9, 1e9, dst) ? "must be a whole number of requests per second" : NULL;
	}
	case P_SERVER_PROFILE:
	case P_PROFILE_BY_STAGE:
	case P_FLUSH_CACHE:
		return ls_config_switch(id == P_SERVER_PROFILE ? &p->server_profile
					: id == P_FLUSH_CACHE ? &p->flush_cache : &p->profile_by_stage, v);
	case P_PROFILE_ACTIVITIES:
		return append_list(&p->profile_activities, v);
	case P_PROFILE_STAGES:
		return append_list(&p->profile_stages, v);
	case P_PROFILE_START_STEP:
		return set_long(&p->profile_start_step, v, 0, 1L << 40);
	case P_PROFILE_STEPS:
		return set_long(&p->profile_steps, v, 0, 1L << 40);
	case P_PROFILE_NUM_STEPS:
		return set_long(&p->profile_num_steps, v, 0, 1L << 40);
	case P_PROFILE_OUTPUT_DIR:
		return set_text(&p->profile_output_dir, v);
	case P_PROFILE_PREFIX:
		return set_text(&p->profile_prefix, v);
	case P_PROFILE_PREFILL_URL:
	case P_PROFILE_DECODE_URL:
		if (strncmp(v, "http://", 7) && strncmp(v, "https://", 8))
			return "must be a worker's URL, http://HOST:PORT";
		return ls_request_extra_add_str(id == P_PROFILE_PREFILL_URL ? &p->prefill_urls : &p->decode_urls,
						id == P_PROFILE_PREFILL_URL ? &p->n_prefill_urls : &p->n_decode_urls, v)
			       ? "out of memory" : NULL;
	default:
		return apply_body(c, id, v);
	}
}

/* Output files; then the accepted-only flags. */
static const char *apply_output(struct ls_config *c, int id, const char *v)
{
	struct ls_peer_opts *p = &c->peer;
	const char *why;
	int on;
	switch (id) {
	case P_SAVE_DETAILED:
	case P_APPEND_RESULT:
	case P_OUTPUT_DETAILS:
	case P_PRINT_REQUESTS:
	case P_PLOT_THROUGHPUT:
	case P_PLOT_TIMELINE:
		if ((why = ls_config_switch(&on, v)))
			return why;
		*(id == P_SAVE_DETAILED ? &p->save_detailed : id == P_APPEND_RESULT ? &p->append_result
		  : id == P_OUTPUT_DETAILS ? &p->output_details : id == P_PRINT_REQUESTS ? &p->print_requests
		  : id == P_PLOT_THROUGHPUT ? &p->plot_throughput : &p->plot_timeline) = on;
		if (on && id == P_SAVE_DETAILED)
			p->notes |= 1u << (P_SAVE_DETAILED_NOTE - P_NOTE_FIRST);
		if (on && id == P_PLOT_TIMELINE)
			p->notes |= 1u << (P_PLOT_NOTE - P_NOTE_FIRST);
		return NULL;
	case P_METADATA:
		if (!strchr(v, '='))
			return "must be KEY=VALUE, e.g. version=0.3.3";
		return ls_request_extra_add_str(&p->metadata, &p->n_metadata, v) ? "out of memory" : NULL;
	case P_LABEL:
		return set_text(&p->label, v);
	case P_OUTPUT_FILE:
		return set_text(&p->output_file, v);
	case P_TAG:
		return set_text(&p->tag, v);
	default:
		if (id >= P_NOTE_FIRST && id < P_NOTE_END) {
			p->notes |= 1u << (id - P_NOTE_FIRST);
			return NULL;
		}
		return apply_run(c, id, v);
	}
}

const char *ls_config_peer_apply(struct ls_config *c, int id, const char *v)
{
	if (id == P_HARNESS) /* argv's is taken out before parsing (config_peer_argv.c): it decides how flags read */
		return "is read from the command line only (--harness vllm|sglang), not from a config file";
	if (id >= P_TEMPERATURE && id <= P_REPETITION_PENALTY)
		return apply_sampling(&c->peer.req, id, v);
	return apply_output(c, id, v);
}

static void clear_list(char ***list, size_t *n)
{
	for (size_t i = 0; i < *n; i++)
		free((*list)[i]);
	free(*list);
	*list = NULL;
	*n = 0;
}

void ls_config_peer_free(struct ls_peer_opts *p)
{
	ls_request_extra_free(&p->req);
	char **strs[] = { &p->profile_activities, &p->profile_stages, &p->profile_output_dir, &p->profile_prefix,
			  &p->label, &p->tag, &p->output_file };
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
		free(*strs[i]);
		*strs[i] = NULL;
	}
	clear_list(&p->metadata, &p->n_metadata);
	clear_list(&p->prefill_urls, &p->n_prefill_urls);
	clear_list(&p->decode_urls, &p->n_decode_urls);
}

/* SGLang downloads ShareGPT to /tmp/ShareGPT_V3_unfiltered_cleaned_split.json once and reads
 * that file ever after (download_and_cache_file): latscope reads it there too ($TMPDIR first).
 * 0, or 2 when out of memory. */
static int sglang_cached_sharegpt(struct ls_config *c)
{
	const char *dirs[] = { getenv("TMPDIR"), "/tmp" };
	for (size_t i = 0; i < 2; i++) {
		char *path = NULL;
		if (!dirs[i] || !*dirs[i])
			continue;
		if (asprintf(&path, "%s/ShareGPT_V3_unfiltered_cleaned_split.json", dirs[i]) < 0)
			return 2;
		if (!access(path, R_OK)) {
			fprintf(stderr, "latscope bench: --dataset-path: SGLang's cached ShareGPT file %s\n", path);
			c->dataset_path = path;
			return 0;
		}
		free(path);
	}
	return 0;
}

int ls_config_peer_finish(struct ls_config *c)
{
	struct ls_peer_opts *p = &c->peer;
	const char *why = ls_ramp_check(p->ramp, p->ramp_start_rps, p->ramp_end_rps, p->ramp_start_set, p->ramp_end_set);
	if (!why && p->ramp != LS_RAMP_NONE && p->request_rate_set && isfinite(c->request_rate))
		why = "when using ramp-up, do not give --request-rate: the ramp-up flags set the rate";
	if (!why && (p->lora_skewed || p->lora_distinct) && p->req.n_lora < 2) /* SGLang's run_benchmark asserts it */
		why = "--lora-request-distribution distinct or skewed needs more than one --lora-name adapter";
	if (why) {
		fprintf(stderr, "latscope bench: %s\n", why);
		return 2;
	}
	if (p->append_result)
		c->save_result = 1; /* vLLM writes the file for either flag */
	if (c->dataset == LS_DATASET_GSP && c->datasets.gsp.num_turns > 1 &&
	    c->profile.send.backend != LS_BACKEND_OPENAI_CHAT) { /* SGLang's MULTI_TURN_BACKENDS assert */
		fprintf(stderr, "latscope bench: --gsp-num-turns above 1 needs a chat backend (sglang-oai-chat, "
				"vllm-chat, lmdeploy-chat or openai-chat): later turns send the conversation as "
				"messages\n");
		return 2;
	}
	if (c->dataset == LS_DATASET_TIMED_TRACE && !c->profile.send.ignore_eos) {
		/* vLLM's main_async sets ignore_eos for timed_trace: the trace's output lengths are sent */
		fprintf(stderr, "latscope bench: timed_trace: --ignore-eos on, as vLLM sets it (the trace's "
				"output lengths are generated)\n");
		c->profile.send.ignore_eos = 1;
	}
	if (p->lora_skewed) /* SGLang's default alpha is 1.5 */
		p->req.lora_zipf_alpha = p->lora_zipf_alpha > 1 ? p->lora_zipf_alpha : 1.5;
	/* vLLM's default for a generative model is "ttft,tpot,itl" (serve.py main_async): no E2EL block
	 * or keys unless asked. SGLang prints E2E latency always; latscope's own rules keep it too. */
	if (!p->percentile_metrics_set && p->harness == LS_HARNESS_VLLM && !strcmp(c->profile.name, "vllm"))
		c->percentile_metrics = LS_PM_TTFT | LS_PM_TPOT | LS_PM_ITL;
	if (p->harness == LS_HARNESS_SGLANG) {
		p->req.rules = LS_BODY_SGLANG;
		c->port = ls_config_peer_port(c);
		if (c->dataset == LS_DATASET_SHAREGPT && !c->dataset_path && sglang_cached_sharegpt(c))
			return 2;
		if (c->dataset == LS_DATASET_SHAREGPT && !c->dataset_path) {
			fprintf(stderr, "latscope bench: sglang.bench_serving downloads ShareGPT when --dataset-path is "
					"empty; latscope does not download: pass --dataset-path FILE (or --dataset-name "
					"random)\n");
			return 2;
		}
	}
	p->pd_separated = (p->notes >> (P_PD_SEPARATED - P_NOTE_FIRST)) & 1;
	if (p->server_profile && p->pd_separated && !p->n_prefill_urls && !p->n_decode_urls) {
		/* SGLang: PD mode profiles the workers' URLs only; without them it skips the profiler */
		fprintf(stderr, "latscope bench: --profile with --pd-separated: SGLang profiles only the workers' "
				"--profile-prefill-url/--profile-decode-url, so without them it skips the profiler; "
				"latscope too\n");
		p->server_profile = 0;
	}
	for (int k = 0; k < P_NOTE_END - P_NOTE_FIRST; k++)
		if ((p->notes >> k) & 1)
			fprintf(stderr, "latscope bench: %s\n", notes[k]);
	if (p->plot_throughput)
		fprintf(stderr, "latscope bench: --plot-throughput: throughput and concurrency over time are in "
				"latscope's HTML report (--html); the text report prints their peaks\n");
	return 0;
}


void ls_config_peer_list_begins(struct ls_config *c, int id)
{
	struct ls_peer_opts *p = &c->peer;
	switch (id) { /* vLLM: --metadata/--header nargs="*", --lora-modules "+"; SGLang the same for its lists */
	case P_METADATA:
		clear_list(&p->metadata, &p->n_metadata);
		break;
	case P_HEADER:
		clear_list(&p->req.headers, &p->req.n_headers);
		break;
	case P_LORA_MODULES:
	case P_LORA_NAME:
		clear_list(&p->req.lora, &p->req.n_lora);
		break;
	case P_PROFILE_PREFILL_URL:
		clear_list(&p->prefill_urls, &p->n_prefill_urls);
		break;
	case P_PROFILE_DECODE_URL:
		clear_list(&p->decode_urls, &p->n_decode_urls);
		break;
	case P_PROFILE_ACTIVITIES:
	case P_PROFILE_STAGES:
		free(*(id == P_PROFILE_STAGES ? &p->profile_stages : &p->profile_activities));
		*(id == P_PROFILE_STAGES ? &p->profile_stages : &p->profile_activities) = NULL;
		break;
	default:
		break;
	}
}
