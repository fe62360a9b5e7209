/* fuzz_dataset.c — the dataset files: the first byte picks jsonl or sharegpt (with and without a
 * token counter, whose answers come from the input too), the rest is the file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "workload/dataset.h"
#include "fuzz_file.h"

static int count(void *ctx, const char *text, uint32_t *tokens)
{
	uint8_t sel = *(const uint8_t *)ctx;
	if (sel & 0x10)
		return -5; /* the server's /tokenize failed */
	*tokens = (uint32_t)(strlen(text) / (1 + (sel & 3)));
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t sel = data[0];
	char path[64];
	int fd = fuzz_file(data + 1, size - 1, path, sizeof(path));
	if (fd < 0)
		return 0;
	struct ls_dataset ds;
	memset(&ds, 0, sizeof(ds));
	ls_token_count_fn fn = (sel & 0x20) ? count : NULL;
	size_t n = (sel >> 6) * 3; /* 0 = all (jsonl) */
	int err;
	if (sel & 1)
		err = ls_dataset_sharegpt(&ds, path, n ? n : 5, (sel & 2) ? 16 : 0, sel, fn, &sel);
	else
		err = ls_dataset_jsonl(&ds, path, n, 16, fn, &sel);
	if (!err) {
		double *ts = ls_dataset_timestamps(&ds);
		free(ts);
	}
	ls_dataset_free(&ds);
	close(fd);
	return 0;
}
