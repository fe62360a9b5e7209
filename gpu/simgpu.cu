// simgpu.cu — liblatscope_simgpu.so: the real GPU work behind `latscope sim --gpu`.
// The simulator dlopens <dir of latscope>/gpu/liblatscope_simgpu.so and, per engine step,
// calls ls_simgpu_step(). A step looks on the GPU like an engine's: a small H2D copy of the
// step's inputs, one kernel that runs for the modelled step time, and a small D2H copy of
// the sampled token ids, then the host waits for it (as engines do to detokenise). So the
// CUPTI path (liblatscope_cupti.so) sees what it sees in vLLM/SGLang, without an engine.
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define EXPORT extern "C" __attribute__((visibility("default")))

static const uint32_t kMaxIds = 1u << 16;

static cudaStream_t g_stream;
static int32_t *g_dev_inputs, *g_dev_ids, *g_host_inputs, *g_host_ids;
static int g_ready;

static __device__ __forceinline__ uint64_t global_ns()
{
	uint64_t t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

// One warp: lane 0 holds the GPU busy for work_ns, then the warp "samples" n ids.
static __global__ void step_kernel(uint64_t work_ns, const int32_t *inputs, int32_t *ids, uint32_t n)
{
	if (threadIdx.x == 0) {
		uint64_t t0 = global_ns();
		while (global_ns() - t0 < work_ns) {
		}
	}
	__syncwarp();
	for (uint32_t i = threadIdx.x; i < n; i += blockDim.x)
		ids[i] = (int32_t)((uint32_t)inputs[i] * 2654435761u + 1u) & 0x7fff;
}

static int fail(char *err, size_t err_len, const char *what, cudaError_t rc)
{
	if (err && err_len)
		snprintf(err, err_len, "%s: %s (%s)", what, cudaGetErrorString(rc), cudaGetErrorName(rc));
	return -1;
}

static int run_step(uint64_t work_ns, uint32_t n)
{
	if (n < 1)
		n = 1; // a step always copies something back: its end marker
	if (n > kMaxIds)
		n = kMaxIds;
	size_t bytes = (size_t)n * sizeof(int32_t);
	if (cudaMemcpyAsync(g_dev_inputs, g_host_inputs, bytes, cudaMemcpyHostToDevice, g_stream) != cudaSuccess)
		return -1;
	step_kernel<<<1, 32, 0, g_stream>>>(work_ns, g_dev_inputs, g_dev_ids, n);
	if (cudaGetLastError() != cudaSuccess)
		return -1;
	if (cudaMemcpyAsync(g_host_ids, g_dev_ids, bytes, cudaMemcpyDeviceToHost, g_stream) != cudaSuccess)
		return -1;
	if (cudaStreamSynchronize(g_stream) != cudaSuccess)
		return -1;
	return 0;
}

// Selects the device, allocates, and runs one warm-up step (module load, first-launch cost)
// so that the simulator's first real step costs what the others do. 0 ok, -1 with err set.
EXPORT int ls_simgpu_init(int device, char *err, size_t err_len)
{
	int count = 0;
	cudaError_t rc = cudaGetDeviceCount(&count);
	if (rc != cudaSuccess)
		return fail(err, err_len, "no usable CUDA device (cudaGetDeviceCount)", rc);
	if (device < 0 || device >= count) {
		if (err && err_len)
			snprintf(err, err_len, "CUDA device %d does not exist (%d found)", device, count);
		return -1;
	}
	if ((rc = cudaSetDevice(device)) != cudaSuccess)
		return fail(err, err_len, "cudaSetDevice", rc);
	if ((rc = cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking)) != cudaSuccess)
		return fail(err, err_len, "cudaStreamCreate", rc);
	size_t bytes = kMaxIds * sizeof(int32_t);
	if ((rc = cudaMalloc(&g_dev_inputs, bytes)) != cudaSuccess ||
	    (rc = cudaMalloc(&g_dev_ids, bytes)) != cudaSuccess)
		return fail(err, err_len, "cudaMalloc", rc);
	if ((rc = cudaMallocHost(&g_host_inputs, bytes)) != cudaSuccess ||
	    (rc = cudaMallocHost(&g_host_ids, bytes)) != cudaSuccess)
		return fail(err, err_len, "cudaMallocHost", rc);
	for (uint32_t i = 0; i < kMaxIds; i++)
		g_host_inputs[i] = (int32_t)i;
	if (run_step(1000, 1) < 0)
		return fail(err, err_len, "warm-up step", cudaGetLastError());
	g_ready = 1;
	return 0;
}

// One engine step: H2D inputs, a kernel busy for work_ns, D2H of n_sampled_ids int32 ids
// (at least 1), then wait. Returns 0, or -1 when CUDA failed (the step did not run).
EXPORT int ls_simgpu_step(uint64_t work_ns, uint32_t n_sampled_ids)
{
	if (!g_ready)
		return -1;
	return run_step(work_ns, n_sampled_ids);
}

EXPORT void ls_simgpu_fini(void)
{
	if (g_stream) {
		cudaStreamSynchronize(g_stream);
		cudaStreamDestroy(g_stream);
	}
	cudaFree(g_dev_inputs);
	cudaFree(g_dev_ids);
	cudaFreeHost(g_host_inputs);
	cudaFreeHost(g_host_ids);
	g_stream = 0;
	g_dev_inputs = g_dev_ids = g_host_inputs = g_host_ids = NULL;
	g_ready = 0;
}
