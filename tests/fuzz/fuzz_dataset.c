/* fuzz_dataset.c — the dataset files: the first byte picks jsonl or sharegpt (with and without a
 * token counter, whose answers come from the input too), the rest is the file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "workload/dataset.h"
#include "fuzz_dataset_in.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_dataset_in in;
	if (fuzz_dataset_in(data, size, 3, &in))
		return 0;
	uint8_t sel = in.sel;
	const char *path = in.path;
	ls_token_count_fn fn = in.fn;
	struct ls_dataset ds;
	memset(&ds, 0, sizeof(ds));
	size_t n = (sel >> 6) * 3; /* 0 = all (jsonl) */
	int err;
	if (sel & 1)
		err = ls_dataset_sharegpt(&ds, path, n ? n : 5, (sel & 2) ? 16 : 0, sel, fn, &in.fc);
	else
		err = ls_dataset_jsonl(&ds, path, n, 16, fn, &in.fc);
	if (!err) {
		double *ts = ls_dataset_timestamps(&ds);
		free(ts);
	}
	ls_dataset_free(&ds);
	close(in.fd);
	return 0;
}
