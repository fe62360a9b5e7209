/* gpu_check.c — latscope-gpu-check: compares the steps liblatscope_cupti.so recorded with the
 * simulator's ground truth (tests/gpu/smoke.sh). Exit 0 pass, 1 fail, 2 usage.
 *
 * Truth steps are read leniently from `latscope sim --truth` JSON lines: every object in a
 * "steps" array, or a line whose "type"/"kind"/"event" is "step". A step's host bracket is
 * gpu_start/gpu_end when present (the sim's stamps around ls_simgpu_step), else start/end
 * (a _ns suffix is accepted too). Steps shared by several requests are counted once. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attribution/gpu_steps.h"
#include "report/report.h"

struct bracket {
	uint64_t start_ns, end_ns;
};

struct brackets {
	struct bracket *v;
	size_t n, cap;
};

/* The first of the names (NULL-terminated) that holds a positive number, else 0. */
static uint64_t num(const cJSON *obj, const char *const *names)
{
	for (; *names; names++) {
		const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, *names);
		if (cJSON_IsNumber(it) && it->valuedouble > 0)
			return (uint64_t)it->valuedouble;
	}
	return 0;
}

static int add_step(struct brackets *b, const cJSON *step)
{
	if (!cJSON_IsObject(step))
		return 0;
	static const char *const starts[] = { "gpu_start", "gpu_start_ns", "start_ns", "start", NULL };
	static const char *const ends[] = { "gpu_end", "gpu_end_ns", "end_ns", "end", NULL };
	uint64_t s = num(step, starts), e = num(step, ends);
	if (!s || e < s)
		return 0;
	if (b->n == b->cap) {
		size_t want = b->cap ? b->cap * 2 : 1024;
		struct bracket *v = realloc(b->v, want * sizeof(*v));
		if (!v)
			return -1;
		b->v = v;
		b->cap = want;
	}
	b->v[b->n++] = (struct bracket){ s, e };
	return 0;
}

static int is_step_line(const cJSON *line)
{
	const char *keys[] = { "type", "kind", "event" };
	for (int i = 0; i < 3; i++) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(line, keys[i]);
		if (cJSON_IsString(t) && !strcmp(t->valuestring, "step"))
			return 1;
	}
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const struct bracket *x = a, *y = b;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return x->end_ns < y->end_ns ? -1 : x->end_ns > y->end_ns;
}

static int load_truth(const char *path, struct brackets *b)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "latscope-gpu-check: cannot open truth file '%s': %s\n", path,
			strerror(errno));
		return -1;
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	while ((len = getline(&line, &cap, f)) > 0) {
		cJSON *obj = cJSON_ParseWithLength(line, (size_t)len);
		if (!obj)
			continue;
		const cJSON *steps = cJSON_GetObjectItemCaseSensitive(obj, "steps");
		const cJSON *it;
		int rc = 0;
		if (cJSON_IsArray(steps))
			cJSON_ArrayForEach(it, steps)
				rc |= add_step(b, it);
		if (is_step_line(obj))
			rc |= add_step(b, obj);
		cJSON_Delete(obj);
		if (rc < 0) {
			fprintf(stderr, "latscope-gpu-check: out of memory reading '%s'\n", path);
			free(line);
			fclose(f);
			return -1;
		}
	}
	free(line);
	fclose(f);
	qsort(b->v, b->n, sizeof(*b->v), by_start);
	size_t k = 0; /* one bracket per step, however many requests rode it */
	for (size_t i = 0; i < b->n; i++)
		if (!k || b->v[i].start_ns != b->v[k - 1].start_ns || b->v[i].end_ns != b->v[k - 1].end_ns)
			b->v[k++] = b->v[i];
	b->n = k;
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: latscope-gpu-check --truth FILE [--gpu-dir DIR] [--slack-us N] [--max-delay-ms N]\n"
		"       latscope-gpu-check --truth FILE --truth-only\n"
		"  --truth FILE       latscope sim --truth output (JSON lines)\n"
		"  --gpu-dir DIR      where liblatscope_cupti.so wrote its rings (LATSCOPE_GPU_DIR)\n"
		"  --slack-us N       a GPU step may stick out of its host bracket by this much (50)\n"
		"  --max-delay-ms N   step end -> record written must stay under this (200)\n"
		"  --truth-only       print the truth's step rate and mean bracket, check nothing\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "truth", required_argument, 0, 't' },   { "gpu-dir", required_argument, 0, 'd' },
		{ "slack-us", required_argument, 0, 's' }, { "max-delay-ms", required_argument, 0, 'm' },
		{ "truth-only", no_argument, 0, 'o' },     { "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	const char *truth = NULL, *dir = NULL;
	uint64_t slack_ns = 50000, max_delay_ns = 200000000ull;
	int truth_only = 0, c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 't': truth = optarg; break;
		case 'd': dir = optarg; break;
		case 's': slack_ns = strtoull(optarg, NULL, 10) * 1000; break;
		case 'm': max_delay_ns = strtoull(optarg, NULL, 10) * 1000000ull; break;
		case 'o': truth_only = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!truth || optind != argc) {
		fprintf(stderr, "latscope-gpu-check: --truth FILE is required (see --help)\n");
		return 2;
	}
	struct brackets tb = { 0 };
	if (load_truth(truth, &tb) < 0)
		return 1;
	if (!tb.n) {
		fprintf(stderr, "latscope-gpu-check: no steps with start/end stamps in '%s'\n", truth);
		free(tb.v);
		return 1;
	}
	uint64_t lo = tb.v[0].start_ns, hi = 0, sum_bracket = 0;
	for (size_t i = 0; i < tb.n; i++) {
		if (tb.v[i].end_ns > hi)
			hi = tb.v[i].end_ns;
		sum_bracket += tb.v[i].end_ns - tb.v[i].start_ns;
	}
	double span_s = (double)(hi - lo) / 1e9;
	printf("truth: %zu steps in %.3f s = %.1f steps/s, mean host bracket %.1f us\n", tb.n, span_s,
	       span_s > 0 ? (double)tb.n / span_s : 0, (double)sum_bracket / (double)tb.n / 1e3);
	if (truth_only) {
		free(tb.v);
		return 0;
	}

	struct ls_gpu_steps gs;
	if (ls_gpu_steps_load(dir, lo - slack_ns, hi + slack_ns, &gs) < 0) {
		free(tb.v);
		return 1;
	}
	ls_gpu_report_print(stdout, &gs, lo, hi);
	/* Each GPU step must sit inside exactly one bracket, and each bracket hold one step. */
	uint32_t *hits = calloc(tb.n, sizeof(*hits));
	size_t outside = 0, worst_i = 0;
	uint64_t worst_out = 0;
	for (size_t i = 0; hits && i < gs.n; i++) {
		const struct ls_gpu_step *s = &gs.steps[i];
		size_t a = 0, b = tb.n; /* last bracket starting at or before s->start + slack */
		while (a < b) {
			size_t mid = a + (b - a) / 2;
			if (tb.v[mid].start_ns <= s->start_ns + slack_ns)
				a = mid + 1;
			else
				b = mid;
		}
		/* The nearest of the bracket before and the one after: how far the step sticks out. */
		uint64_t out_by = UINT64_MAX;
		size_t best = 0;
		for (size_t cand = a ? a - 1 : 0; cand <= a && cand < tb.n; cand++) {
			const struct bracket *br = &tb.v[cand];
			uint64_t early = br->start_ns > s->start_ns ? br->start_ns - s->start_ns : 0;
			uint64_t late = s->end_ns > br->end_ns ? s->end_ns - br->end_ns : 0;
			uint64_t by = early > late ? early : late;
			if (by < out_by) {
				out_by = by;
				best = cand;
			}
		}
		if (out_by <= slack_ns)
			hits[best]++;
		if (out_by > slack_ns) {
			outside++;
			if (out_by > worst_out) {
				worst_out = out_by;
				worst_i = i;
			}
		}
	}
	size_t missed = 0, doubled = 0;
	for (size_t i = 0; hits && i < tb.n; i++) {
		missed += hits[i] == 0;
		doubled += hits[i] > 1;
	}
	uint64_t max_delay = 0;
	for (size_t i = 0; i < gs.n_sources; i++)
		if (gs.sources[i].max_delay_ns > max_delay)
			max_delay = gs.sources[i].max_delay_ns;
	int ok = hits && gs.n == tb.n && !outside && !missed && !doubled && max_delay <= max_delay_ns;
	printf("check: %zu GPU steps vs %zu truth steps; %zu outside their bracket (+-%llu us)",
	       gs.n, tb.n, outside, (unsigned long long)(slack_ns / 1000));
	if (outside)
		printf(", worst by %.1f us at step %zu", (double)worst_out / 1e3, worst_i);
	printf("; %zu brackets without a step, %zu with several; record delay max %.1f ms (limit %llu)\n",
	       missed, doubled, (double)max_delay / 1e6, (unsigned long long)(max_delay_ns / 1000000));
	printf("%s\n", ok ? "PASS" : "FAIL");
	free(hits);
	free(tb.v);
	ls_gpu_steps_free(&gs);
	return ok ? 0 : 1;
}
