/* specdecode.c — see specdecode.h. The Prometheus parsing follows vLLM's
 * fetch_spec_decode_metrics: lines starting "vllm:spec_decode" whose metric name ends in
 * "_total", values summed over label sets. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/json_file.h"
#include "base/numconv.h"
#include "server/specdecode.h"

static uint64_t as_count(double v)
{
	return ls_d2u64(v + 0.5);
}

int ls_spec_parse_prometheus(const char *text, struct ls_spec_snapshot *s)
{
	int found = 0;
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char buf[512];
		if (len < sizeof(buf) && !strncmp(line, "vllm:spec_decode", 16)) {
			memcpy(buf, line, len);
			buf[len] = 0;
			size_t name_len = strcspn(buf, "{ \t");
			char *value = strrchr(buf, ' ');
			if (name_len >= 6 && !strncmp(buf + name_len - 6, "_total", 6) && value) {
				char *end;
				double v = strtod(value + 1, &end);
				if (end != value + 1) {
					char name[256];
					snprintf(name, sizeof(name), "%.*s", (int)name_len, buf);
					found = 1;
					if (strstr(name, "num_drafts")) {
						s->drafts += as_count(v);
					} else if (strstr(name, "num_draft_tokens")) {
						s->draft_tokens += as_count(v);
					} else if (strstr(name, "num_accepted_tokens_per_pos")) {
						const char *pos = strstr(buf, "position=\"");
						int p = pos ? atoi(pos + 10) : -1;
						if (p >= 0 && p < LS_SPEC_MAX_POS) {
							s->per_pos[p] += as_count(v);
							if (p + 1 > s->n_pos)
								s->n_pos = p + 1;
						}
					} else if (strstr(name, "num_accepted_tokens")) {
						s->accepted += as_count(v);
					}
				}
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	if (found)
		s->has_counters = 1;
	return found ? 0 : -1;
}

int ls_spec_parse_server_info(const char *json, struct ls_spec_snapshot *s)
{
	cJSON *root = json ? ls_json_parse_py(json) : NULL; /* SGLang's Python JSON: Infinity, NaN */
	int rc = -1;
	const cJSON *states = cJSON_GetObjectItemCaseSensitive(root, "internal_states");
	const cJSON *first = cJSON_IsArray(states) ? cJSON_GetArrayItem(states, 0) : NULL;
	const cJSON *avg = cJSON_GetObjectItemCaseSensitive(first, "avg_spec_accept_length");
	if (!avg) /* older SGLang put it at the top level */
		avg = cJSON_GetObjectItemCaseSensitive(root, "avg_spec_accept_length");
	if (cJSON_IsNumber(avg)) {
		s->has_avg = 1;
		s->avg_accept_len = avg->valuedouble;
		rc = 0;
	}
	cJSON_Delete(root);
	return rc;
}

void ls_spec_snapshot(const char *base, const struct ls_http_opts *o, struct ls_spec_snapshot *s)
{
	memset(s, 0, sizeof(*s));
	char url[1024];
	struct ls_http_resp resp;
	snprintf(url, sizeof(url), "%s/metrics", base);
	if (!ls_http_call(url, NULL, o, &resp) && resp.status == 200 && resp.body)
		ls_spec_parse_prometheus(resp.body, s);
	ls_http_resp_free(&resp);
	snprintf(url, sizeof(url), "%s/server_info", base);
	if (!ls_http_call(url, NULL, o, &resp) && resp.status == 200 && resp.body)
		ls_spec_parse_server_info(resp.body, s);
	ls_http_resp_free(&resp);
}

void ls_spec_delta(const struct ls_spec_snapshot *before, const struct ls_spec_snapshot *after,
		   struct ls_spec_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (after->has_avg) {
		out->has_avg = 1;
		out->avg_accept_len = after->avg_accept_len;
	}
	if (!before->has_counters || !after->has_counters)
		return;
	out->drafts = after->drafts >= before->drafts ? after->drafts - before->drafts : 0;
	out->draft_tokens = after->draft_tokens >= before->draft_tokens ? after->draft_tokens - before->draft_tokens : 0;
	out->accepted = after->accepted >= before->accepted ? after->accepted - before->accepted : 0;
	if (!out->draft_tokens)
		return; /* vLLM prints the block only when drafts happened during the run */
	out->has = 1;
	out->acceptance_rate_pct = (double)out->accepted / (double)out->draft_tokens * 100.0;
	out->acceptance_length = out->drafts ? 1.0 + (double)out->accepted / (double)out->drafts : 0.0;
	int n_pos = after->n_pos > before->n_pos ? after->n_pos : before->n_pos;
	for (int p = 0; p < n_pos && out->drafts; p++) {
		uint64_t a = after->per_pos[p], b = before->per_pos[p];
		out->per_pos_rate[p] = a >= b ? (double)(a - b) / (double)out->drafts : 0.0;
	}
	out->n_pos = out->drafts ? n_pos : 0;
}
