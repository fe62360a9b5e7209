/* config.c — flags, --config JSON and profile defaults for `latscope bench` (see config.h).
 * One table drives the flag parser, the JSON keys (same names, '-' or '_') and --help. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config/config_int.h"
#include "base/json_file.h"

static void defaults(struct ls_config *c)
{
	memset(c, 0, sizeof(*c)); /* the send rules come with the profile */
	c->port = 8000;
	c->dataset = LS_DATASET_RANDOM;
	c->random_input_len = 1024;
	c->random_output_len = 128;
	c->random_vocab_size = 0; /* auto */
	c->num_prompts = 1000;
	c->request_rate = INFINITY;
	c->burstiness = 1.0;
	c->request_timeout_s = 6 * 3600; /* vLLM's aiohttp total timeout */
	c->ready_check_timeout_s = 600;
	c->percentile_metrics = LS_PM_TTFT | LS_PM_TPOT | LS_PM_ITL | LS_PM_E2EL;
	ls_config_datasets_defaults(c);
}

/* A JSON value as the flag text it stands for, into buf. NULL when it has no such form. */
static const char *json_text(const cJSON *v, char *buf, size_t cap)
{
	if (cJSON_IsString(v))
		return v->valuestring;
	if (cJSON_IsTrue(v))
		return "true";
	if (cJSON_IsFalse(v))
		return "false";
	if (cJSON_IsNumber(v)) {
		double d = v->valuedouble;
		if (d == floor(d) && fabs(d) < 1e15)
			snprintf(buf, cap, "%.0f", d);
		else
			snprintf(buf, cap, "%.17g", d);
		return buf;
	}
	if (cJSON_IsArray(v)) { /* lists join with commas: "percentile-metrics": ["ttft", "itl"] */
		size_t len = 0;
		buf[0] = 0;
		for (const cJSON *e = v->child; e; e = e->next) {
			char one[64];
			const char *t = json_text(e, one, sizeof(one));
			if (!t || cJSON_IsArray(e) || len + strlen(t) + 2 > cap)
				return NULL;
			len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? "," : "", t);
		}
		return buf;
	}
	return NULL;
}

static int apply_config_file(struct ls_config *c, cJSON *root, const char *path)
{
	for (const cJSON *it = root->child; it; it = it->next) {
		const struct ls_opt *o = ls_config_find_opt(it->string, strlen(it->string));
		if (!o || o->id == O_HELP) {
			fprintf(stderr, "latscope bench: %s: unknown key \"%s\" (keys are the flag names, see "
					"latscope bench --help)\n", path, it->string);
			return 2;
		}
		if (o->id == O_CONFIG || o->id == O_PROFILE)
			continue; /* read before the profile was applied */
		if (o->id == O_GOODPUT && (cJSON_IsArray(it) || cJSON_IsObject(it))) {
			for (const cJSON *e = it->child; e; e = e->next) {
				char one[96];
				const char *why = NULL;
				if (cJSON_IsObject(it) && cJSON_IsNumber(e))
					snprintf(one, sizeof(one), "%s:%.17g", e->string, e->valuedouble);
				else if (cJSON_IsString(e))
					snprintf(one, sizeof(one), "%s", e->valuestring);
				else
					why = "must be a list of \"KEY:MS\" or an object {\"ttft\": MS}";
				if (!why)
					why = ls_config_apply(c, o, one);
				if (why) {
					fprintf(stderr, "latscope bench: %s: \"%s\" %s\n", path, it->string, why);
					return 2;
				}
			}
			continue;
		}
		if (o->arg == LS_ARG_MANY && cJSON_IsArray(it)) { /* "header": ["a=1", "b=2"]: one value each */
			for (const cJSON *e = it->child; e; e = e->next) {
				const char *why = cJSON_IsString(e) ? ls_config_apply(c, o, e->valuestring)
								    : "must be a list of strings";
				if (why) {
					fprintf(stderr, "latscope bench: %s: \"%s\" %s\n", path, it->string, why);
					return 2;
				}
			}
			continue;
		}
		char buf[512];
		const char *text = json_text(it, buf, sizeof(buf));
		const char *why = text ? ls_config_apply(c, o, text) : "has a value of the wrong type";
		if (why) {
			fprintf(stderr, "latscope bench: %s: \"%s\" %s\n", path, it->string, why);
			return 2;
		}
	}
	return 0;
}

static cJSON *read_config(const char *path)
{
	cJSON *root = ls_json_read_file(path, "latscope bench", "config");
	if (root && !cJSON_IsObject(root)) {
		fprintf(stderr, "latscope bench: %s:1: a config file is one JSON object of flag keys\n", path);
		cJSON_Delete(root);
		root = NULL;
	}
	return root;
}

#define PROG "latscope bench"

/* "true"/"false" ("True"/"False") as Python argparse's type=bool flags are given them: the
 * switch's value, or NULL for any other word. */
static const char *bool_word(const char *a)
{
	if (!strcmp(a, "true") || !strcmp(a, "True"))
		return "true";
	return !strcmp(a, "false") || !strcmp(a, "False") ? "false" : NULL;
}

/* The next flag of w; 1 with o and v (v NULL for a bare switch), 0 at the end, -1 after a
 * message. bench takes flags only: a bare word or "--" is a mistake. */
static int next_flag(struct ls_opt_walk *w, const struct ls_opt **o, const char **v)
{
	int kind = ls_opt_next(w, o, v);
	if (kind < 0)
		return -1;
	if (kind == LS_OPT_ARG || (kind == LS_OPT_END && w->dashdash)) {
		fprintf(stderr, PROG ": unexpected argument '%s' (flags start with --; see " PROG " --help)\n",
			kind == LS_OPT_ARG ? *v : "--");
		return -1;
	}
	if (kind == LS_OPT_FLAG && !*v && (*o)->arg == LS_ARG_NONE && w->i < w->argc && (*v = bool_word(w->argv[w->i])))
		w->i++; /* SGLang's type=bool flags: "--use-trace-timestamps true" */
	return kind != LS_OPT_END;
}

/* Pass 1: --help, --profile and --config, which decide the defaults the rest override. 0, 1
 * after --help, or 2 after a message. */
static int first_pass(int argc, char **argv, const char **profile_flag, const char **config_flag)
{
	*profile_flag = *config_flag = NULL;
	struct ls_opt_walk w;
	size_t n_opts;
	const struct ls_opt *opts = ls_config_all_opts(&n_opts);
	ls_opt_walk_init(&w, PROG, opts, n_opts, argc, argv);
	const struct ls_opt *o;
	const char *v;
	int more;
	while ((more = next_flag(&w, &o, &v)) > 0) {
		if (o->id == O_HELP) {
			ls_config_help(stdout);
			return 1;
		}
		if (o->id == O_PROFILE)
			*profile_flag = v;
		if (o->id == O_CONFIG)
			*config_flag = v;
		if (o->arg == LS_ARG_MANY)
			while (ls_opt_more(&w, &v))
				;
	}
	return more < 0 ? 2 : 0;
}

/* The profile (given, or named by the flag, the config file or the default) and the config
 * file over it. 0 or 2 after a message. */
static int profile_and_file(struct ls_config *c, const char *profile_flag, const char *config_flag,
			    const struct ls_profile *given)
{
	cJSON *file = NULL;
	if (config_flag) {
		if (ls_config_set_str(&c->config_path, config_flag)) {
			fprintf(stderr, "latscope bench: out of memory reading --config %s\n", config_flag);
			return 2;
		}
		if (!(file = read_config(config_flag)))
			return 2; /* read_config said why */
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(file, "profile");
		if (!p) /* --rules' key (the profile selector's new name) */
			p = cJSON_GetObjectItemCaseSensitive(file, "rules");
		if (p && (!cJSON_IsString(p) || ls_config_set_str(&c->profile_name, p->valuestring))) {
			fprintf(stderr, "latscope bench: %s: \"profile\" must be a profile name or path\n", config_flag);
			cJSON_Delete(file);
			return 2;
		}
	}
	if (given)
		profile_flag = given->name;
	if (profile_flag && ls_config_set_str(&c->profile_name, profile_flag)) {
		fprintf(stderr, "latscope bench: out of memory reading --profile %s\n", profile_flag);
		cJSON_Delete(file);
		return 2;
	}
	if (given)
		c->profile = *given;
	else if (ls_profile_load(c->profile_name ? c->profile_name : "vllm", &c->profile)) {
		cJSON_Delete(file);
		return 2;
	}
	int rc = file ? apply_config_file(c, file, config_flag) : 0;
	cJSON_Delete(file);
	return rc;
}

/* --goodput's values (one or more KEY:MS), which replace the file's SLOs. 0 or 2. */
static int apply_goodput(struct ls_config *c, struct ls_opt_walk *w, const struct ls_opt *o, const char *v,
			 int *from_flags)
{
	if (!*from_flags)
		memset(&c->goodput, 0, sizeof(c->goodput)); /* flags replace the file's SLOs */
	*from_flags = 1;
	do {
		const char *why = ls_config_apply(c, o, v);
		if (why) {
			fprintf(stderr, PROG ": --goodput '%s' %s\n", v, why);
			return 2;
		}
	} while (ls_opt_more(w, &v));
	return 0;
}

/* Pass 2: every flag, over the profile and the file. 0 or 2 after a message. */
static int apply_flags(struct ls_config *c, int argc, char **argv)
{
	int goodput_from_flags = 0, more;
	struct ls_opt_walk w;
	size_t n_opts;
	const struct ls_opt *opts = ls_config_all_opts(&n_opts);
	ls_opt_walk_init(&w, PROG, opts, n_opts, argc, argv);
	const struct ls_opt *o;
	const char *v;
	while ((more = next_flag(&w, &o, &v)) > 0) {
		if (o->id == O_PROFILE || o->id == O_CONFIG)
			continue;
		if (o->id == O_GOODPUT) {
			if (apply_goodput(c, &w, o, v, &goodput_from_flags))
				return 2;
			continue;
		}
		const char *why;
		if (o->arg == LS_ARG_MANY)
			ls_config_peer_list_begins(c, o->id); /* argparse's nargs store: the last flag's list */
		do /* an LS_ARG_MANY flag's values one by one (--header A=1 B=2) */
			if ((why = ls_config_apply(c, o, v ? v : "true"))) {
				ls_opt_bad_value(PROG, o, v, why);
				return 2;
			}
		while (o->arg == LS_ARG_MANY && ls_opt_more(&w, &v));
	}
	return more < 0 ? 2 : 0;
}

int ls_config_check(const struct ls_config *c, const struct ls_send_rules *send)
{
	if (c->dataset != LS_DATASET_RANDOM && c->dataset != LS_DATASET_RANDOM_IDS &&
	    c->dataset != LS_DATASET_PREFIX_REPETITION && c->dataset != LS_DATASET_GSP && !c->dataset_path) {
		fprintf(stderr, "latscope bench: --dataset-name %s needs --dataset-path FILE\n",
			ls_dataset_kind_name(c->dataset));
		return 2;
	}
	if (send->arrival == LS_ARRIVAL_CLOSED && !c->max_concurrency) {
		fprintf(stderr, "latscope bench: --arrival closed needs --max-concurrency C (the number of clients)\n");
		return 2;
	}
	if (send->arrival == LS_ARRIVAL_TRACE && c->dataset != LS_DATASET_JSONL && c->dataset != LS_DATASET_CUSTOM &&
	    c->dataset != LS_DATASET_MOONCAKE && c->dataset != LS_DATASET_TIMED_TRACE) {
		fprintf(stderr, "latscope bench: --arrival trace (--use-trace-timestamps, --self-timed) needs --dataset-name "
				"jsonl with a \"timestamp\" per line, timed_trace or mooncake\n");
		return 2;
	}
	if (!c->num_prompts && c->dataset != LS_DATASET_JSONL && c->dataset != LS_DATASET_CUSTOM &&
	    c->dataset != LS_DATASET_SPEC_BENCH) {
		fprintf(stderr, "latscope bench: --num-prompts -1 (every prompt) needs a file of prompts (--dataset-name "
				"custom, jsonl or spec_bench); --dataset-name %s: give a count\n",
			ls_dataset_kind_name(c->dataset));
		return 2;
	}
	/* --random-range-ratio 1 under vLLM's semantics is read as SGLang's (cmd/bench_dataset.c says so). */
	if (!c->percentile_metrics) {
		fprintf(stderr, "latscope bench: --percentile-metrics is empty\n");
		return 2;
	}
	return 0;
}

int ls_config_parse_with(struct ls_config *c, int argc, char **argv, const struct ls_profile *p)
{
	const char *profile_flag, *config_flag;
	struct ls_peer_argv pa; /* the command line under its harness (config_peer_argv.c) */
	defaults(c);
	int rc = ls_config_peer_argv(&pa, argc, argv);
	ls_config_peer_defaults(c, &pa);
	if (!rc)
		rc = first_pass(pa.argc, pa.argv, &profile_flag, &config_flag);
	if (!rc)
		rc = profile_and_file(c, profile_flag, config_flag, p);
	if (!rc)
		rc = apply_flags(c, pa.argc, pa.argv);
	if (!rc)
		rc = ls_config_peer_finish(c);
	ls_config_peer_argv_free(&pa);
	return rc ? rc : ls_config_check(c, &c->profile.send);
}

int ls_config_parse(struct ls_config *c, int argc, char **argv)
{
	return ls_config_parse_with(c, argc, argv, NULL);
}

void ls_config_free(struct ls_config *c)
{
	char **strs[] = { &c->backend_name, &c->base_url, &c->host, &c->endpoint, &c->model, &c->dataset_path, &c->dataset_name, &c->cacert,
			  &c->result_dir, &c->result_filename, &c->record_path, &c->profile_name,
			  &c->config_path, &c->server_comm, &c->trace_path, &c->gpu_dir,
			  &c->html_path };
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
		free(*strs[i]);
		*strs[i] = NULL;
	}
	ls_config_peer_free(&c->peer);
}

char *ls_config_base(const struct ls_config *c)
{
	char *s = NULL;
	if (c->base_url) {
		size_t len = strlen(c->base_url);
		while (len > 0 && c->base_url[len - 1] == '/')
			len--;
		s = strndup(c->base_url, len);
	} else {
		const char *host = c->host ? c->host : "127.0.0.1";
		int v6 = strchr(host, ':') != NULL;
		if (asprintf(&s, "http://%s%s%s:%d", v6 ? "[" : "", host, v6 ? "]" : "", c->port) < 0)
			s = NULL;
	}
	return s;
}

char *ls_config_url(const struct ls_config *c)
{
	char *base = ls_config_base(c), *url = NULL;
	const char *ep = c->endpoint ? c->endpoint : ls_backend_default_endpoint(c->profile.send.backend);
	if (base && asprintf(&url, "%s%s", base, ep ? ep : "") < 0)
		url = NULL;
	free(base);
	return url;
}
