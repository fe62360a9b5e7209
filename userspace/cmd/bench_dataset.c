/* bench_dataset.c — which dataset a bench run sends, built with the settings its flags gave
 * (vLLM's and SGLang's dataset flags, config/config_datasets.c) and the server's /tokenize. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/bench_dataset.h"
#include "driver/backend.h"
#include "workload/dataset_peer.h"

/* A run under SGLang's rules (--profile sglang or sglang-oai) builds random and sharegpt as
 * SGLang's bench_serving does. */
static int sglang_rules(const struct ls_config *c)
{
	return !strncmp(c->profile.name, "sglang", 6);
}

static int build_random(const struct ls_config *c, struct ls_server *server, struct ls_dataset *ds, size_t n,
			ls_token_count_fn count)
{
	int needs_text = ls_backend_needs_text(c->profile.send.backend);
	struct ls_random_opts o = {
		.n = n, .input_len = c->datasets.input_len ? c->datasets.input_len : c->random_input_len,
		.output_len = c->datasets.output_len ? c->datasets.output_len : c->random_output_len,
		.range_ratio = c->random_range_ratio, .semantics = c->profile.send.range_semantics,
		.vocab_size = c->random_vocab_size, .seed = c->seed, .prefix_len = c->datasets.random_prefix_len,
	};
	if (o.semantics == LS_RANGE_VLLM && o.range_ratio >= 1.0) {
		fprintf(stderr, "latscope bench: --random-range-ratio %g is outside vLLM's [0, 1): read as SGLang's "
				"(every length exactly its --random-*-len)\n", o.range_ratio);
		o.semantics = LS_RANGE_SGLANG;
	}
	if (c->dataset == LS_DATASET_RANDOM && sglang_rules(c) && c->dataset_path) {
		/* SGLang's random: real ShareGPT prompts repeated to the drawn length */
		struct ls_sglang_random_opts so = { .n = n, .input_len = o.input_len, .output_len = o.output_len,
						    .range_ratio = o.range_ratio, .seed = c->seed };
		return ls_dataset_sglang_random(ds, c->dataset_path, &so, count, server);
	}
	if (c->dataset == LS_DATASET_RANDOM && sglang_rules(c))
		fprintf(stderr, "latscope bench: SGLang's random repeats ShareGPT prompts to length: give --dataset-path "
				"sharegpt.json for that; without it latscope sends random token ids (SGLang's random-ids)\n");
	if (!o.vocab_size && !needs_text && ls_server_vocab_size(server, LS_DEFAULT_VOCAB, &o.vocab_size)) {
		fprintf(stderr, "latscope bench: could not learn the vocabulary size for random token ids "
				"(%s, %d tries); pass --random-vocab-size N\n", server->why, LS_SERVER_PROBE_TRIES);
		return -EIO;
	}
	if (!o.vocab_size)
		o.vocab_size = LS_DEFAULT_VOCAB;
	return needs_text ? ls_dataset_random_text(ds, &o, count, server) : ls_dataset_random(ds, &o);
}

/* vLLM's timed_trace: token ids below the server's vocabulary, or words for a text backend. */
static int build_timed_trace(const struct ls_config *c, struct ls_server *server, struct ls_dataset *ds, size_t n)
{
	const struct ls_config_datasets *p = &c->datasets;
	struct ls_timed_trace_opts o = p->timed_trace;
	o.n = n;
	o.as_text = ls_backend_needs_text(c->profile.send.backend);
	o.vocab_size = o.as_text ? ls_dataset_n_words() : c->random_vocab_size;
	o.label_timestamp = p->timed_trace_labels[0];
	o.label_input_length = p->timed_trace_labels[1];
	o.label_output_length = p->timed_trace_labels[2];
	o.label_hash_ids = p->timed_trace_labels[3];
	if (!o.vocab_size && ls_server_vocab_size(server, LS_DEFAULT_VOCAB, &o.vocab_size)) {
		fprintf(stderr, "latscope bench: could not learn the vocabulary size for timed_trace's token ids "
				"(%s, %d tries); pass --random-vocab-size N\n", server->why, LS_SERVER_PROBE_TRIES);
		return -EIO;
	}
	if (!o.vocab_size)
		o.vocab_size = LS_DEFAULT_VOCAB;
	return ls_dataset_timed_trace(ds, c->dataset_path, &o);
}

/* sharegpt under the extra rules: --no-oversample (vLLM), --sharegpt-context-len (SGLang). */
static int build_sharegpt(const struct ls_config *c, struct ls_server *server, struct ls_dataset *ds, size_t n,
			  ls_token_count_fn count)
{
	uint32_t fixed = c->datasets.output_len ? c->datasets.output_len : c->sharegpt_output_len;
	if (sglang_rules(c)) {
		struct ls_sglang_sharegpt_opts so = { .n = n, .fixed_output_len = fixed,
						      .context_len = c->datasets.sharegpt_context_len, .seed = c->seed };
		return ls_dataset_sglang_sharegpt(ds, c->dataset_path, &so, count, server);
	}
	int err = c->datasets.disable_shuffle ? ls_dataset_sharegpt_in_order(ds, c->dataset_path, n, fixed, count, server)
					  : ls_dataset_sharegpt(ds, c->dataset_path, n, fixed, c->seed, count, server);
	if (err)
		return err;
	if (c->datasets.no_oversample && ds->n_unique && ds->n_unique < ds->n) {
		for (size_t i = ds->n_unique; i < ds->n; i++)
			free(ds->prompts[i].text);
		ds->n = ds->n_unique;
	}
	size_t kept = 0;
	for (size_t i = 0; i < ds->n; i++) {
		struct ls_prompt *p = &ds->prompts[i];
		if (c->datasets.sharegpt_context_len && (uint64_t)p->prompt_len + p->output_len > c->datasets.sharegpt_context_len) {
			free(p->text);
			continue;
		}
		ds->prompts[kept++] = *p;
	}
	ds->n = kept;
	if (!kept) {
		fprintf(stderr, "latscope bench: no conversation of %s fits --sharegpt-context-len %u\n", c->dataset_path,
			c->datasets.sharegpt_context_len);
		return -EINVAL;
	}
	return 0;
}

static uint32_t out_len(const struct ls_config *c, uint32_t dataset_default)
{
	return c->datasets.output_len ? c->datasets.output_len : dataset_default;
}

static int build_peer(const struct ls_config *c, struct ls_server *server, struct ls_dataset *ds, size_t n,
		      ls_token_count_fn count)
{
	const struct ls_config_datasets *p = &c->datasets;
	switch (c->dataset) {
	case LS_DATASET_PREFIX_REPETITION: {
		struct ls_prefix_rep_opts o = p->prefix_rep;
		o.n = n;
		o.seed = c->seed;
		o.disable_shuffle = p->disable_shuffle;
		o.output_len = out_len(c, o.output_len);
		return ls_dataset_prefix_repetition(ds, &o, count, server);
	}
	case LS_DATASET_SONNET: {
		struct ls_sonnet_opts o = p->sonnet;
		o.n = n;
		o.seed = c->seed;
		o.input_len = p->input_len ? p->input_len : o.input_len;
		o.output_len = out_len(c, o.output_len);
		return ls_dataset_sonnet(ds, c->dataset_path, &o, count, server);
	}
	case LS_DATASET_BURSTGPT:
		return ls_dataset_burstgpt(ds, c->dataset_path, n, c->seed);
	case LS_DATASET_GSP: {
		struct ls_gsp_opts o = p->gsp;
		o.seed = c->seed;
		o.zipf_alpha = p->gsp_zipf ? p->gsp_zipf_alpha : 0.0;
		if ((uint64_t)o.num_groups * o.prompts_per_group != c->num_prompts)
			fprintf(stderr, "latscope bench: generated-shared-prefix sends --gsp-num-groups x "
					"--gsp-prompts-per-group = %llu requests; --num-prompts is not read (as SGLang)\n",
				(unsigned long long)o.num_groups * o.prompts_per_group);
		return ls_dataset_gsp(ds, &o, count, server);
	}
	case LS_DATASET_SPEC_BENCH: { /* vLLM maps --output-len onto --spec-bench-output-len */
		struct ls_spec_bench_opts o = { .n = n, .output_len = out_len(c, p->spec_bench_output_len),
						.category = p->spec_bench_category, .seed = c->seed,
						.in_order = p->disable_shuffle, .no_oversample = p->no_oversample };
		return ls_dataset_spec_bench(ds, c->dataset_path, &o, count, server);
	}
	case LS_DATASET_TIMED_TRACE:
		return build_timed_trace(c, server, ds, n);
	case LS_DATASET_MOONCAKE: {
		struct ls_mooncake_opts o = p->mooncake;
		o.n = n;
		return ls_dataset_mooncake(ds, c->dataset_path, &o, count, server);
	}
	default:
		return -EINVAL;
	}
}

int ls_bench_dataset(const struct ls_config *c, struct ls_server *server, struct ls_dataset *ds)
{
	ls_token_count_fn count = NULL;
	int needs_text = ls_backend_needs_text(c->profile.send.backend);
	int sglang_random = c->dataset == LS_DATASET_RANDOM && c->dataset_path && sglang_rules(c);
	int ids = c->dataset == LS_DATASET_RANDOM_IDS || (c->dataset == LS_DATASET_RANDOM && !sglang_random);
	if (!ids || needs_text) {
		if (ls_server_has_tokenize(server))
			count = ls_server_count_tokens;
		else
			fprintf(stderr, "latscope bench: the server has no /tokenize; prompt lengths are estimated "
					"(1 token per 4 bytes or per word)\n");
	}
	if (c->datasets.gsp_send_routing_key && c->dataset != LS_DATASET_GSP)
		fprintf(stderr, "latscope bench: --gsp-send-routing-key is read only with generated-shared-prefix\n");
	size_t n = c->num_prompts ? c->num_prompts + c->datasets.dataset_offset : 0; /* 0: the whole file (-1) */
	int err;
	switch (c->dataset) {
	case LS_DATASET_RANDOM:
	case LS_DATASET_RANDOM_IDS:
		err = build_random(c, server, ds, n, count);
		break;
	case LS_DATASET_SHAREGPT:
		err = build_sharegpt(c, server, ds, n, count);
		break;
	case LS_DATASET_JSONL:
	case LS_DATASET_CUSTOM:
		err = ls_dataset_jsonl(ds, c->dataset_path, n,
				       out_len(c, c->dataset == LS_DATASET_CUSTOM ? c->datasets.custom_output_len
										 : c->random_output_len), count, server);
		if (!err && c->dataset == LS_DATASET_CUSTOM && !c->datasets.no_oversample)
			err = ls_dataset_oversample(ds, n, c->seed); /* vLLM's CustomDataset does */
		break;
	default:
		err = build_peer(c, server, ds, n, count);
	}
	if (!err)
		ls_dataset_skip(ds, c->datasets.dataset_offset);
	if (!err && !ds->n) {
		fprintf(stderr, "latscope bench: --dataset-offset %zu leaves no prompt\n", c->datasets.dataset_offset);
		err = -EINVAL;
	}
	return err;
}

int ls_bench_route_keys(const struct ls_config *c)
{
	return c->datasets.gsp_send_routing_key && c->dataset == LS_DATASET_GSP;
}

char *ls_bench_route_key(const char *run_tag, const char *date, uint32_t group)
{
	char key[96];
	snprintf(key, sizeof(key), "%s_%s_%u", run_tag, date, group);
	return strdup(key);
}
