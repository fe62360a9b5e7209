/* fuzz_config.c — `latscope bench --config FILE`: the JSON config loader with the flag table. */
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include "config/config.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	int fd = fuzz_file(data, size, path, sizeof(path));
	if (fd < 0)
		return 0;
	char *argv[] = { "bench", "--config", path, "--model", "m", NULL };
	struct ls_config c;
	memset(&c, 0, sizeof(c));
	ls_config_parse(&c, 5, argv);
	ls_config_free(&c);
	close(fd);
	return 0;
}
