/* llama_decode_stub.c — a process with llama.cpp's llama_decode ABI (struct llama_batch passed by
 * value, seq ids behind pointers) that calls it in a loop and prints, every 0.2 s, the median CPU
 * ns per call of its batches of 2,000 calls (its thread's CPU time: the traps' kernel work is in it,
 * other tasks' turns are not): tests/perf/engine_uprobe_cost.sh attaches latscope's
 * engine-step uprobes to it (--server-pid) and reads what they add per call (one step).
 * Usage: llama_decode_stub TOKENS_PER_CALL SECONDS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct llama_batch { /* llama.h */
	int32_t n_tokens;
	int32_t *token;
	float *embd;
	int32_t *pos;
	int32_t *n_seq_id;
	int32_t **seq_id;
	int8_t *logits;
};

__attribute__((noinline, used, visibility("default"))) int32_t llama_decode(void *ctx, struct llama_batch b)
{
	__asm__ volatile("" : : "r"(ctx), "m"(b) : "memory");
	return b.n_tokens > 0 ? 0 : -1;
}

static uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Wall clock for the schedule; the thread's CPU time (user + kernel: the trap's handling is
 * charged to it) for the cost, so time other tasks had the CPU is not counted. */
static uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1;
	double secs = argc > 2 ? atof(argv[2]) : 5;
	static int32_t seq_store[4096], *seq_ptrs[4096], n_seq[4096];
	if (n < 1 || n > 4096)
		return 2;
	for (int i = 0; i < n; i++) {
		seq_store[i] = i % 2; /* two slots' tokens */
		seq_ptrs[i] = &seq_store[i];
		n_seq[i] = 1;
	}
	struct llama_batch b = { .n_tokens = n, .n_seq_id = n_seq, .seq_id = seq_ptrs };
	uint64_t end = now_ns() + (uint64_t)(secs * 1e9), next = now_ns() + 200000000ull;
	double batch[256];
	int nb = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (now_ns() < end) {
		uint64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		for (int i = 0; i < 2000; i++)
			llama_decode(&b, b);
		batch[nb++ % 256] = (clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0) / 2000.0;
		if (now_ns() >= next) {
			int k = nb < 256 ? nb : 256;
			qsort(batch, (size_t)k, sizeof(batch[0]), cmp);
			printf("%.1f\n", batch[k / 2]);
			nb = 0;
			next += 200000000ull;
		}
	}
	return 0;
}
