/* dataset_trace.c — the peers' file-backed datasets: vLLM's sonnet and burstgpt, SGLang's
 * mooncake trace and its ShareGPT-based random (see dataset_peer.h). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "workload/dataset_peer.h"
#include "workload/dataset_peer_int.h"
#include "base/json_file.h"
#include "base/opts.h"
#include "base/rng.h"
#include "base/strbuf.h"

#define SONNET_BASE   "Pick as many lines as you can from these poem lines:\n"
#define SONNET_TRIES  100 /* draws per prompt before giving up (every draw over input_len) */
#define BURST_MAX_TOKENS (1 << 20) /* a row past this is not a real request */


/* The file's lines (each with its '\n'), pointing into buf (NUL-separated). */
static char **split_lines(char *buf, size_t len, size_t *n_out)
{
	size_t n = 0, cap = 64;
	char **lines = malloc(cap * sizeof(*lines));
	for (char *at = buf; lines && at < buf + len;) {
		char *nl = memchr(at, '\n', (size_t)(buf + len - at));
		char *next = nl ? nl + 1 : buf + len;
		if (n == cap) {
			char **grown = realloc(lines, (cap *= 2) * sizeof(*lines));
			if (!grown) {
				free(lines);
				return NULL;
			}
			lines = grown;
		}
		lines[n++] = at;
		at = next;
	}
	*n_out = n;
	return lines;
}

/* Sonnet's sizes: the instruction's tokens and a line's mean. */
static int sonnet_sizes(char **lines, size_t n, const struct ls_peer_count *c, uint32_t *base, double *avg)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t t;
		char save = 0, *end = i + 1 < n ? lines[i + 1] : NULL;
		if (end) { /* one line at a time: cut after its '\n' */
			save = *end;
			*end = 0;
		}
		int err = ls_peer_count_text(c, lines[i], &t);
		if (end)
			*end = save;
		if (err)
			return err;
		sum += t;
	}
	*avg = (double)sum / (double)n;
	return ls_peer_count_text(c, SONNET_BASE, base);
}

static int line_append(struct ls_strbuf *b, char **lines, size_t n, size_t i)
{
	size_t len = i + 1 < n ? (size_t)(lines[i + 1] - lines[i]) : strlen(lines[i]);
	return ls_strbuf_append(b, lines[i], len);
}

/* One sonnet prompt: the instruction, the prefix lines, k random lines. */
static int sonnet_one(struct ls_strbuf *b, char **lines, size_t n, size_t n_prefix, long k, uint64_t rng[2])
{
	int err = ls_strbuf_puts(b, SONNET_BASE);
	for (size_t i = 0; !err && i < n_prefix && i < n; i++)
		err = line_append(b, lines, n, i);
	for (long j = 0; !err && j < k; j++)
		err = line_append(b, lines, n, (size_t)ls_rng_below(rng, n));
	return err;
}

static int sonnet_sample(struct ls_dataset *ds, char **lines, size_t n_lines, const struct ls_sonnet_opts *o,
			 const struct ls_peer_count *c, const char *path)
{
	uint32_t base;
	double avg;
	int err = sonnet_sizes(lines, n_lines, c, &base, &avg);
	if (err)
		return err;
	if (o->input_len <= base) {
		fprintf(stderr, "latscope: %s: --sonnet-input-len %u must be above the instruction's %u tokens\n", path,
			o->input_len, base);
		return -EINVAL;
	}
	if (!(avg >= 0.5)) {
		fprintf(stderr, "latscope: %s: the lines count %.2f tokens each; sonnet needs poem lines\n", path, avg);
		return -EINVAL;
	}
	/* Python's round() is half-to-even, as nearbyint in the default rounding mode. */
	long n_input = (long)nearbyint((o->input_len - base) / avg);
	long n_prefix = (long)nearbyint(((double)o->prefix_len - base) / avg);
	if (n_prefix < 0)
		n_prefix = 0;
	uint64_t rng[2];
	ls_rng_seed(rng, o->seed);
	for (size_t tries = 0; ds->n < o->n; tries++) {
		if (tries > SONNET_TRIES * (o->n + 1)) {
			fprintf(stderr, "latscope: %s: no draw of lines stays within --sonnet-input-len %u\n", path,
				o->input_len);
			return -EINVAL;
		}
		struct ls_strbuf b = { 0 };
		struct ls_prompt *p = &ds->prompts[ds->n];
		if ((err = sonnet_one(&b, lines, n_lines, (size_t)n_prefix, n_input - n_prefix, rng)) ||
		    (err = ls_peer_finish(p, &b, 0, o->output_len, c))) {
			ls_strbuf_free(&b);
			return err;
		}
		if (p->prompt_len <= o->input_len) {
			ds->n++;
			continue;
		}
		free(p->text); /* over the length: vLLM draws again */
		memset(p, 0, sizeof(*p));
	}
	return 0;
}

int ls_dataset_sonnet(struct ls_dataset *ds, const char *path, const struct ls_sonnet_opts *o,
		      ls_token_count_fn count, void *count_ctx)
{
	size_t len = 0, n_lines = 0;
	int estimated = 0, err = ls_peer_alloc(ds, o->n);
	struct ls_peer_count c = { count, count_ctx, &estimated };
	char *buf = err ? NULL : ls_read_file(path, "latscope", "dataset", &len);
	if (!buf) {
		ls_dataset_free(ds);
		return err ? err : -EIO;
	}
	char **lines = split_lines(buf, len, &n_lines);
	if (!lines)
		err = -ENOMEM;
	else if (!n_lines) {
		fprintf(stderr, "latscope: %s: no lines (sonnet takes a text file of poem lines)\n", path);
		err = -EINVAL;
	} else
		err = sonnet_sample(ds, lines, n_lines, o, &c, path);
	free(lines);
	free(buf);
	return ls_peer_done(ds, estimated, err);
}

/* ---- burstgpt ---- */

struct burst_row {
	uint32_t in, out;
};

/* The CSV column named name in the header line, or -1. */
static int csv_column(const char *header, const char *name)
{
	int col = 0;
	for (const char *p = header;; col++) {
		size_t n = strcspn(p, ",\r\n");
		if (n == strlen(name) && !memcmp(p, name, n))
			return col;
		if (p[n] != ',')
			return -1;
		p += n + 1;
	}
}

/* Field col of line (up to its end) into out (cap bytes). 0, or -1 when the line is shorter. */
static int csv_field(const char *line, int col, char *out, size_t cap)
{
	const char *p = line;
	for (int k = 0; k < col; k++) {
		size_t n = strcspn(p, ",\r\n");
		if (p[n] != ',')
			return -1;
		p += n + 1;
	}
	size_t n = strcspn(p, ",\r\n");
	if (n >= cap)
		n = cap - 1;
	memcpy(out, p, n);
	out[n] = 0;
	return 0;
}

static int burst_parse_row(const char *line, const int col[3], struct burst_row *row)
{
	char model[64], in[32], out[32];
	double in_d, out_d;
	if (csv_field(line, col[0], model, sizeof(model)) || csv_field(line, col[1], in, sizeof(in)) ||
	    csv_field(line, col[2], out, sizeof(out)) || ls_opt_parse_double(in, 0, BURST_MAX_TOKENS, &in_d) ||
	    ls_opt_parse_double(out, -BURST_MAX_TOKENS, BURST_MAX_TOKENS, &out_d))
		return -1;
	row->in = (uint32_t)in_d;
	row->out = out_d > 0 ? (uint32_t)out_d : 0;
	return strcmp(model, "GPT-4") || !row->out || !row->in ? 1 : 0; /* vLLM keeps GPT-4 rows with output */
}

/* The GPT-4 rows with a response, in file order. */
static int burst_rows(char **lines, size_t n_lines, const char *path, struct burst_row **rows, size_t *n_rows)
{
	const char *names[3] = { "Model", "Request tokens", "Response tokens" };
	int col[3];
	for (int k = 0; k < 3; k++)
		if (n_lines == 0 || (col[k] = csv_column(lines[0], names[k])) < 0) {
			fprintf(stderr, "latscope: %s:1: not a BurstGPT CSV: no column \"%s\"\n", path, names[k]);
			return -EINVAL;
		}
	*rows = calloc(n_lines, sizeof(**rows));
	if (!*rows)
		return -ENOMEM;
	*n_rows = 0;
	for (size_t i = 1; i < n_lines; i++) {
		if (lines[i][strspn(lines[i], " \t\r\n")] == 0)
			continue;
		int rc = burst_parse_row(lines[i], col, &(*rows)[*n_rows]);
		if (rc < 0) {
			fprintf(stderr, "latscope: %s:%zu: malformed BurstGPT row\n", path, i + 1);
			return -EINVAL;
		}
		if (rc == 0)
			(*n_rows)++;
	}
	if (!*n_rows) {
		fprintf(stderr, "latscope: %s: no GPT-4 row with Response tokens > 0\n", path);
		return -EINVAL;
	}
	return 0;
}

/* pandas' sample(n): without replacement when the file has n rows, else with. */
static int burst_fill(struct ls_dataset *ds, const struct burst_row *rows, size_t n_rows, size_t n, uint64_t seed)
{
	uint64_t rng[2];
	ls_rng_seed(rng, seed);
	size_t *pick = malloc((n_rows > n ? n_rows : n) * sizeof(*pick));
	if (!pick)
		return -ENOMEM;
	for (size_t i = 0; i < n_rows; i++)
		pick[i] = i;
	for (size_t i = 0; i < n; i++) {
		size_t j = n <= n_rows ? i + (size_t)ls_rng_below(rng, n_rows - i) : (size_t)ls_rng_below(rng, n_rows);
		size_t t = pick[j];
		if (n <= n_rows)
			pick[j] = pick[i];
		pick[i] = t;
	}
	int err = 0, estimated = 1;
	struct ls_peer_count none = { NULL, NULL, &estimated };
	for (size_t i = 0; !err && i < n; i++) {
		const struct burst_row *r = &rows[pick[i]];
		uint32_t *words = malloc(((size_t)r->in + 1) * sizeof(*words));
		struct ls_strbuf b = { 0 };
		for (uint32_t j = 0; words && j < r->in; j++)
			words[j] = (uint32_t)((i + j) % ls_dataset_n_words()); /* vLLM: (i + j) % vocab */
		err = !words ? -ENOMEM : ls_dataset_word_text(&b, words, r->in);
		if (!err)
			err = ls_peer_finish(&ds->prompts[i], &b, r->in, r->out, &none);
		ls_strbuf_free(&b);
		free(words);
		ds->n = i + 1;
	}
	free(pick);
	return err;
}

int ls_dataset_burstgpt(struct ls_dataset *ds, const char *path, size_t n, uint64_t seed)
{
	size_t len = 0, n_lines = 0, n_rows = 0;
	int err = ls_peer_alloc(ds, n);
	char *buf = err ? NULL : ls_read_file(path, "latscope", "dataset", &len);
	if (!buf)
		return err ? err : -EIO;
	char **lines = split_lines(buf, len, &n_lines);
	struct burst_row *rows = NULL;
	err = lines ? burst_rows(lines, n_lines, path, &rows, &n_rows) : -ENOMEM;
	if (!err)
		err = burst_fill(ds, rows, n_rows, n, seed);
	free(rows);
	free(lines);
	free(buf);
	if (err)
		ls_dataset_free(ds);
	else
		ds->lens_estimated = 0; /* vLLM's prompt_len is the trace's Request tokens, as here */
	return err;
}
