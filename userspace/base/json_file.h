/* json_file.h — reads a JSON file whole, and names the file and line of what is wrong. */
#ifndef LATSCOPE_JSON_FILE_H
#define LATSCOPE_JSON_FILE_H

#include <cjson/cJSON.h>
#include <stdint.h>

/* Parses the file at path; on any failure prints one line "<who>: <path>[:LINE]: <why>" to
 * stderr and returns NULL. what names the file's role in messages ("config", "profile"). */
cJSON *ls_json_read_file(const char *path, const char *who, const char *what);

/* The file at path, whole and NUL-terminated (*len: its bytes, without the NUL); on failure
 * prints one line "<who>: cannot open|read <what> <path>: <why>" and returns NULL. */
char *ls_read_file(const char *path, const char *who, const char *what, size_t *len);

/* A JSON array of n numbers; NULL when out of memory. */
cJSON *ls_json_doubles(const double *v, size_t n);
cJSON *ls_json_u32s(const uint32_t *v, size_t n);

/* The 1-based line of buf that at (within buf) lies on. */
size_t ls_line_at(const char *buf, const char *at);

/* x as Python's repr(float) writes it (what json.dumps and an f-string give): the shortest
 * digits that read back as x, "20.0" for a whole number, "1e-05" / "1e+16" outside
 * [1e-4, 1e16), "inf", "nan". The peers name files and write rates this way. */
void ls_py_float(double x, char *buf, size_t cap);

/* Python's json.dumps writes Infinity, -Infinity and NaN, which cJSON does not read: the text
 * with those tokens (outside strings) as 1e999, -1e999 (read as +-inf) and null, parsed whole
 * (require_end). NULL when it is not JSON, or out of memory. */
cJSON *ls_json_parse_py(const char *text);

#endif
