/* json_file.c — see json_file.h. */
#include <errno.h>
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
