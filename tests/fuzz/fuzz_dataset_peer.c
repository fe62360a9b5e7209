/* fuzz_dataset_peer.c — the peers' dataset files: the first byte picks sonnet, burstgpt, mooncake
 * or SGLang's ShareGPT-based random or sharegpt (with and without a token counter whose answers come from the
 * input too), the rest is the file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "workload/dataset.h"
#include "workload/dataset_peer.h"
#include "fuzz_dataset_in.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_dataset_in in;
	if (fuzz_dataset_in(data, size, 4, &in))
		return 0;
	uint8_t sel = in.sel;
	const char *path = in.path;
	ls_token_count_fn fn = in.fn;
	struct ls_dataset ds;
	memset(&ds, 0, sizeof(ds));
	size_t n = 1 + (sel >> 6) * 3;
	if ((sel & 3) == 0) {
		struct ls_sonnet_opts o = { .n = n, .input_len = 200, .output_len = 4, .prefix_len = 20, .seed = sel };
		ls_dataset_sonnet(&ds, path, &o, fn, &in.fc);
	} else if ((sel & 3) == 1) {
		ls_dataset_burstgpt(&ds, path, n, sel);
	} else if ((sel & 3) == 2) {
		struct ls_mooncake_opts o = { .n = (sel & 8) ? 0 : n, .num_rounds = 1 + (sel >> 6), .slowdown = 1.5 };
		ls_dataset_mooncake(&ds, path, &o, fn, &in.fc);
	} else if (sel & 8) {
		struct ls_sglang_sharegpt_opts o = { .n = n, .fixed_output_len = (sel & 4) ? 4 : 0, .context_len = 40,
						     .seed = sel };
		ls_dataset_sglang_sharegpt(&ds, path, &o, fn, &in.fc);
	} else {
		struct ls_sglang_random_opts o = { .n = n, .input_len = 9, .output_len = 3, .range_ratio = 0.5, .seed = sel };
		ls_dataset_sglang_random(&ds, path, &o, fn, &in.fc);
	}
	ls_dataset_skip(&ds, sel & 3);
	ls_dataset_free(&ds);
	close(in.fd);
	return 0;
}
