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

#endif
