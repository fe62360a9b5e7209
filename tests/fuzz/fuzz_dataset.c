/* fuzz_dataset.c — the dataset files: the first byte picks jsonl or sharegpt (with and without a
 * token counter, whose answers come from the input too), the rest is the file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "workload/dataset.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t sel;
	char path[64];
	int fd = fuzz_sel_file(data, size, &sel, path, sizeof(path));
	if (fd < 0)
		return 0;
	struct fuzz_counter fc = { sel & 0x10, 1u + (sel & 3) };
	struct ls_dataset ds;
	memset(&ds, 0, sizeof(ds));
	ls_token_count_fn fn = (sel & 0x20) ? fuzz_count : NULL;
	size_t n = (sel >> 6) * 3; /* 0 = all (jsonl) */
	int err;
	if (sel & 1)
		err = ls_dataset_sharegpt(&ds, path, n ? n : 5, (sel & 2) ? 16 : 0, sel, fn, &fc);
	else
		err = ls_dataset_jsonl(&ds, path, n, 16, fn, &fc);
	if (!err) {
		double *ts = ls_dataset_timestamps(&ds);
		free(ts);
	}
	ls_dataset_free(&ds);
	close(fd);
	return 0;
}
