/* json_file.c — see json_file.h. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/json_file.h"

static char *slurp(FILE *f, size_t *len)
{
	char *buf = NULL;
	FILE *mem = open_memstream(&buf, len);
	if (!mem)
		return NULL;
	char chunk[4096];
	size_t r;
	while ((r = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (fwrite(chunk, 1, r, mem) != r)
			break;
	int failed = ferror(f) || ferror(mem);
	if (fclose(mem) || failed) {
		free(buf);
		return NULL;
	}
	return buf;
}

char *ls_read_file(const char *path, const char *who, const char *what, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "%s: cannot open %s %s: %s\n", who, what, path, strerror(errno));
		return NULL;
	}
	*len = 0;
	char *buf = slurp(f, len);
	int read_errno = errno;
	fclose(f);
	if (!buf)
		fprintf(stderr, "%s: cannot read %s %s: %s\n", who, what, path, strerror(read_errno));
	return buf;
}

static double at_double(const void *v, size_t i)
{
	return ((const double *)v)[i];
}

static double at_u32(const void *v, size_t i)
{
	return ((const uint32_t *)v)[i];
}

static cJSON *json_numbers(const void *v, size_t n, double (*at)(const void *, size_t))
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; a && i < n; i++)
		if (!cJSON_AddItemToArray(a, cJSON_CreateNumber(at(v, i)))) {
			cJSON_Delete(a);
			return NULL;
		}
	return a;
}

cJSON *ls_json_doubles(const double *v, size_t n)
{
	return json_numbers(v, n, at_double);
}

cJSON *ls_json_u32s(const uint32_t *v, size_t n)
{
	return json_numbers(v, n, at_u32);
}

size_t ls_line_at(const char *buf, const char *at)
{
	size_t line = 1;
	for (const char *p = buf; p < at; p++)
		line += *p == '\n';
	return line;
}

cJSON *ls_json_read_file(const char *path, const char *who, const char *what)
{
	size_t len;
	char *buf = ls_read_file(path, who, what, &len);
	if (!buf)
		return NULL;
	cJSON *root = cJSON_ParseWithLength(buf, len);
	if (!root) {
		const char *at = cJSON_GetErrorPtr();
		size_t line = at && at >= buf && at <= buf + len ? ls_line_at(buf, at) : 1;
		fprintf(stderr, "%s: %s:%zu: malformed JSON in the %s file\n", who, path, line, what);
	}
	free(buf);
	return root;
}

void ls_py_float(double x, char *buf, size_t cap)
{
	char e[40], digits[24];
	if (isnan(x) || isinf(x)) {
		snprintf(buf, cap, "%s", isnan(x) ? "nan" : x > 0 ? "inf" : "-inf");
		return;
	}
	if (x == 0) {
		snprintf(buf, cap, "%s", signbit(x) ? "-0.0" : "0.0");
		return;
	}
	for (int p = 1; p <= 17; p++) { /* repr: the fewest digits that read back as x */
		snprintf(e, sizeof(e), "%.*e", p - 1, x);
		if (strtod(e, NULL) == x)
			break;
	}
	const char *m = e + (e[0] == '-');
	size_t nd = 0;
	for (; *m && *m != 'e'; m++)
		if (*m != '.')
			digits[nd++] = *m;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = 0;
	int exp10 = atoi(m + 1);
	const char *sign = x < 0 ? "-" : "";
	static const char zeros[] = "0000000000000000"; /* 16: fixed notation never needs more */
	if (exp10 < -4 || exp10 >= 16) /* float_repr_style 'r': scientific outside [1e-4, 1e16) */
		snprintf(buf, cap, "%s%c%s%se%c%02d", sign, digits[0], nd > 1 ? "." : "", digits + 1,
			 exp10 < 0 ? '-' : '+', abs(exp10));
	else if (exp10 < 0)
		snprintf(buf, cap, "%s0.%.*s%s", sign, -exp10 - 1, zeros, digits);
	else if ((size_t)exp10 + 1 >= nd)
		snprintf(buf, cap, "%s%s%.*s.0", sign, digits, exp10 + 1 - (int)nd, zeros);
	else
		snprintf(buf, cap, "%s%.*s.%s", sign, exp10 + 1, digits, digits + exp10 + 1);
}

/* One Python token at s (Infinity, -Infinity, NaN): what cJSON reads for it, and its length. */
static const char *py_token(const char *s, size_t *len)
{
	static const struct { const char *py, *json; } map[] = {
		{ "-Infinity", "-1e999" }, { "Infinity", "1e999" }, { "NaN", "null" },
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strncmp(s, map[i].py, strlen(map[i].py))) {
			*len = strlen(map[i].py);
			return map[i].json;
		}
	return NULL;
}

cJSON *ls_json_parse_py(const char *text)
{
	size_t n = strlen(text), k = 0;
	char *out = malloc(n + n / 2 + 8); /* NaN (3) -> null (4): at most a third longer */
	if (!out)
		return NULL;
	for (size_t i = 0, in_str = 0; i < n;) {
		size_t len;
		const char *json = in_str ? NULL : py_token(text + i, &len);
		if (json) {
			memcpy(out + k, json, strlen(json));
			k += strlen(json);
			i += len;
			continue;
		}
		if (text[i] == '"')
			in_str = !in_str;
		else if (in_str && text[i] == '\\' && i + 1 < n)
			out[k++] = text[i++]; /* an escaped character never ends the string */
		out[k++] = text[i++];
	}
	out[k] = 0;
	cJSON *o = cJSON_ParseWithOpts(out, NULL, 1);
	free(out);
	return o;
}
