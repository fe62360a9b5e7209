/* json_file.h — reads a JSON file whole, and names the file and line of what is wrong. */
#ifndef LATSCOPE_JSON_FILE_H
#define LATSCOPE_JSON_FILE_H

#include <cjson/cJSON.h>

/* Parses the file at path; on any failure prints one line "<who>: <path>[:LINE]: <why>" to
 * stderr and returns NULL. what names the file's role in messages ("config", "profile"). */
cJSON *ls_json_read_file(const char *path, const char *who, const char *what);

#endif
