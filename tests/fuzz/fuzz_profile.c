/* fuzz_profile.c — a JSON profile file (--profile PATH), then its read rules and JSON form. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include "config/profile.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	int fd = fuzz_file(data, size, path, sizeof(path));
	if (fd < 0)
		return 0;
	struct ls_profile p;
	memset(&p, 0, sizeof(p));
	if (ls_profile_load(path, &p) == 0) {
		struct ls_read_rules rules;
		ls_profile_read_rules(&p, 3.5, &rules);
		cJSON_Delete(ls_profile_to_json(&p));
	}
	close(fd);
	return 0;
}
