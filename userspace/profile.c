/* profile.c — built-in profiles and profile JSON files (see profile.h). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "profile.h"

#ifndef LATSCOPE_PREFIX
#define LATSCOPE_PREFIX "/usr/local"
#endif

int ls_warmup_shape_parse(const char *s, enum ls_warmup_shape *out)
{
	if (s && !strcmp(s, "vllm"))
		*out = LS_WARMUP_VLLM;
	else if (s && !strcmp(s, "sglang"))
		*out = LS_WARMUP_SGLANG;
	else
		return -EINVAL;
	return 0;
}

const char *ls_warmup_shape_name(enum ls_warmup_shape shape)
{
	return shape == LS_WARMUP_SGLANG ? "sglang" : "vllm";
}

static void set_pcts(struct ls_read_rules *r, const double *p, size_t n)
{
	memcpy(r->percentiles, p, n * sizeof(*p));
	r->n_percentiles = n;
}

int ls_profile_builtin(const char *name, struct ls_profile *out)
{
	static const double vllm_pcts[] = { 99 };
	static const double sglang_pcts[] = { 50, 90, 95, 99 };
	static const double honest_pcts[] = { 50, 90, 99, 99.9 };
	struct ls_profile p;
	memset(&p, 0, sizeof(p));
	snprintf(p.source, sizeof(p.source), "built-in");
	if (!name)
		return -ENOENT;
	if (!strcmp(name, "vllm")) {
		/* vllm bench serve: clock after the semaphore, a sample per frame with choices,
		 * E2EL at the last content frame, gamma schedule normalised to N/rate, one pool. */
		p.read = (struct ls_read_rules){ .clock = LS_CLOCK_STARTED, .ttft_gate = LS_GATE_CHOICES,
						 .itl_mode = LS_ITL_FRAME, .e2el_end = LS_END_LAST_CONTENT,
						 .failures_in_headline = 1 };
		set_pcts(&p.read, vllm_pcts, 1);
		p.arrival = LS_ARRIVAL_GAMMA;
		p.range_semantics = LS_RANGE_VLLM;
		p.warmup_shape = LS_WARMUP_VLLM;
		p.show_client_queue = 1; /* vLLM prints client queue time since its PR #54136 */
	} else if (!strcmp(name, "sglang") || !strcmp(name, "sglang-oai")) {
		/* bench_serving: exponential sleep after yield, a connection per request, amortised
		 * token ITL, E2EL at [DONE], failures out of the headline, one capped warmup. */
		int oai = !strcmp(name, "sglang-oai");
		p.read = (struct ls_read_rules){ .clock = LS_CLOCK_STARTED,
						 .ttft_gate = oai ? LS_GATE_TEXT : LS_GATE_CHOICES,
						 .itl_mode = oai ? LS_ITL_FRAME : LS_ITL_TOKEN,
						 .e2el_end = LS_END_DONE, .failures_in_headline = 0 };
		set_pcts(&p.read, sglang_pcts, 4);
		p.arrival = LS_ARRIVAL_POISSON_YIELD;
		p.per_request_conn = 1;
		p.range_semantics = LS_RANGE_SGLANG;
		p.warmup_shape = LS_WARMUP_SGLANG;
		p.num_warmups = 1;
		p.itl_divide_by_accept_len = oai;
	} else if (!strcmp(name, "honest")) {
		/* latscope: clock from the schedule (coordinated omission corrected, as wrk2),
		 * both ITLs, failures shown, E2EL to the last byte. */
		p.read = (struct ls_read_rules){ .clock = LS_CLOCK_SCHEDULED, .ttft_gate = LS_GATE_CHOICES,
						 .itl_mode = LS_ITL_FRAME, .e2el_end = LS_END_LAST_BYTE,
						 .failures_in_headline = 1 };
		set_pcts(&p.read, honest_pcts, 4);
		p.arrival = LS_ARRIVAL_GAMMA;
		p.range_semantics = LS_RANGE_VLLM;
		p.warmup_shape = LS_WARMUP_VLLM;
		p.show_both_itl = 1;
		p.show_client_queue = 1;
	} else {
		return -ENOENT;
	}
	snprintf(p.name, sizeof(p.name), "%s", name);
	*out = p;
	return 0;
}

static int bad(const char *where, const char *key, const char *want)
{
	fprintf(stderr, "latscope: %s: profile key \"%s\" %s\n", where, key, want);
	return -EINVAL;
}

int ls_profile_apply_json(struct ls_profile *p, const cJSON *obj, const char *where)
{
	if (!cJSON_IsObject(obj)) {
		fprintf(stderr, "latscope: %s: a profile is a JSON object\n", where);
		return -EINVAL;
	}
	for (const cJSON *it = obj->child; it; it = it->next) {
		const char *k = it->string, *s = cJSON_IsString(it) ? it->valuestring : NULL;
		if (!strcmp(k, "base") || !strcmp(k, "description") || !strcmp(k, "comment")) {
			continue; /* base is handled by ls_profile_load */
		} else if (!strcmp(k, "name")) {
			if (!s)
				return bad(where, k, "must be a string");
			snprintf(p->name, sizeof(p->name), "%s", s);
		} else if (!strcmp(k, "clock")) {
			if (ls_clock_parse(s, &p->read.clock))
				return bad(where, k, "must be \"scheduled\", \"admitted\" or \"started\"");
		} else if (!strcmp(k, "ttft_gate")) {
			if (ls_gate_parse(s, &p->read.ttft_gate))
				return bad(where, k, "must be \"choices\" or \"text\"");
		} else if (!strcmp(k, "itl")) {
			if (ls_itl_mode_parse(s, &p->read.itl_mode))
				return bad(where, k, "must be \"frame\" or \"token\"");
		} else if (!strcmp(k, "e2el_end")) {
			if (ls_e2el_end_parse(s, &p->read.e2el_end))
				return bad(where, k, "must be \"last_content\", \"done\" or \"last_byte\"");
		} else if (!strcmp(k, "failures_in_headline") || !strcmp(k, "show_both_itl") ||
			   !strcmp(k, "show_client_queue") || !strcmp(k, "itl_divide_by_accept_len")) {
			if (!cJSON_IsBool(it))
				return bad(where, k, "must be true or false");
			int v = cJSON_IsTrue(it);
			if (!strcmp(k, "failures_in_headline"))
				p->read.failures_in_headline = v;
			else if (!strcmp(k, "show_both_itl"))
				p->show_both_itl = v;
			else if (!strcmp(k, "itl_divide_by_accept_len"))
				p->itl_divide_by_accept_len = v;
			else
				p->show_client_queue = v;
		} else if (!strcmp(k, "percentiles")) {
			struct ls_read_rules r = p->read;
			size_t n = 0;
			if (!cJSON_IsArray(it))
				return bad(where, k, "must be a list of numbers in (0, 100]");
			for (const cJSON *v = it->child; v; v = v->next) {
				if (!cJSON_IsNumber(v) || !(v->valuedouble > 0 && v->valuedouble <= 100) ||
				    n == LS_MAX_PERCENTILES)
					return bad(where, k, "must be a list of at most 16 numbers in (0, 100]");
				r.percentiles[n++] = v->valuedouble;
			}
			r.n_percentiles = n;
			p->read = r;
		} else if (!strcmp(k, "arrival")) {
			if (ls_arrival_parse_kind(s, &p->arrival))
				return bad(where, k, "must be gamma, poisson-yield, constant, closed, trace or inf");
		} else if (!strcmp(k, "connection")) {
			if (s && !strcmp(s, "reuse"))
				p->per_request_conn = 0;
			else if (s && !strcmp(s, "per-request"))
				p->per_request_conn = 1;
			else
				return bad(where, k, "must be \"reuse\" or \"per-request\"");
		} else if (!strcmp(k, "range_semantics")) {
			if (ls_range_semantics_parse(s, &p->range_semantics))
				return bad(where, k, "must be \"vllm\" or \"sglang\"");
		} else if (!strcmp(k, "warmup_shape")) {
			if (ls_warmup_shape_parse(s, &p->warmup_shape))
				return bad(where, k, "must be \"vllm\" or \"sglang\"");
		} else if (!strcmp(k, "num_warmups")) {
			if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > 1e6)
				return bad(where, k, "must be a count >= 0");
			p->num_warmups = (uint32_t)it->valuedouble;
		} else {
			fprintf(stderr, "latscope: %s: unknown profile key \"%s\"\n", where, k);
			return -EINVAL;
		}
	}
	return 0;
}

static cJSON *read_json(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	if (!mem) {
		fclose(f);
		return NULL;
	}
	char chunk[4096];
	size_t r;
	while ((r = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, r, mem);
	fclose(f);
	fclose(mem);
	cJSON *root = buf ? cJSON_ParseWithLength(buf, len) : NULL;
	free(buf);
	return root;
}

static int load_file(const char *path, struct ls_profile *out, const char *builtin_name)
{
	cJSON *root = read_json(path);
	if (!root) {
		fprintf(stderr, "latscope: cannot read profile %s: %s\n", path,
			access(path, R_OK) ? strerror(errno) : "not valid JSON");
		return -EINVAL;
	}
	const cJSON *base = cJSON_GetObjectItemCaseSensitive(root, "base");
	const char *base_name = builtin_name ? builtin_name : cJSON_IsString(base) ? base->valuestring : "vllm";
	if (ls_profile_builtin(base_name, out)) {
		/* A file named after no built-in starts from vllm's rules. */
		if (builtin_name || ls_profile_builtin("vllm", out)) {
			fprintf(stderr, "latscope: %s: unknown base profile \"%s\"\n", path, base_name);
			cJSON_Delete(root);
			return -EINVAL;
		}
	}
	int err = ls_profile_apply_json(out, root, path);
	snprintf(out->source, sizeof(out->source), "%s", path);
	cJSON_Delete(root);
	return err;
}

int ls_profile_load(const char *name_or_path, struct ls_profile *out)
{
	if (!name_or_path || !*name_or_path) {
		fprintf(stderr, "latscope: empty profile name\n");
		return -EINVAL;
	}
	size_t len = strlen(name_or_path);
	if (strchr(name_or_path, '/') || (len > 5 && !strcmp(name_or_path + len - 5, ".json")))
		return load_file(name_or_path, out, NULL);
	if (ls_profile_builtin(name_or_path, out)) {
		fprintf(stderr, "latscope: unknown profile '%s' (built in: vllm, sglang, sglang-oai, honest; "
				"or a path to a JSON profile)\n", name_or_path);
		return -ENOENT;
	}
	/* Overlay the shipped configs/NAME.json when there is one (the profiles stage fills them). */
	const char *dirs[] = { getenv("LATSCOPE_CONFIG_DIR"), "configs", LATSCOPE_PREFIX "/share/latscope/configs" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char path[512];
		if (!dirs[i] || !*dirs[i])
			continue;
		snprintf(path, sizeof(path), "%s/%s.json", dirs[i], name_or_path);
		if (access(path, R_OK) == 0)
			return load_file(path, out, name_or_path);
	}
	return 0;
}
