/* fuzz_record.c — the --record JSONL reader (`latscope report`): any file, whole or cut. */
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include "report/record_file.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	int fd = fuzz_file(data, size, path, sizeof(path));
	if (fd < 0)
		return 0;
	struct ls_run run;
	struct ls_record_meta meta;
	if (ls_record_load(path, &run, &meta) == 0) {
		ls_run_free(&run);
		ls_record_meta_free(&meta);
	}
	close(fd);
	return 0;
}
