/* sim/sim_gpu.c — --gpu: each engine step runs real GPU work through liblatscope_simgpu.so
 * (built by gpu/), loaded with dlopen so the simulator builds and runs without CUDA. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "sim/sim.h"

int sim_gpu_default_path(char *out, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		fprintf(stderr, "latscope sim: --gpu: cannot resolve /proc/self/exe; pass --gpu-lib PATH\n");
		return -1;
	}
	exe[n] = 0;
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	if ((size_t)snprintf(out, len, "%s/gpu/liblatscope_simgpu.so", exe) >= len) {
		fprintf(stderr, "latscope sim: --gpu: library path too long; pass --gpu-lib PATH\n");
		return -1;
	}
	return 0;
}

int sim_gpu_open(struct sim_gpu *g, const char *path, int device)
{
	memset(g, 0, sizeof(*g));
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "latscope sim: --gpu: cannot load %s (%s); build it with `make gpu` or pass --gpu-lib PATH\n",
			path, dlerror());
		return -1;
	}
	*(void **)&g->init = dlsym(h, "ls_simgpu_init");
	*(void **)&g->step = dlsym(h, "ls_simgpu_step");
	*(void **)&g->fini = dlsym(h, "ls_simgpu_fini");
	if (!g->init || !g->step || !g->fini) {
		fprintf(stderr, "latscope sim: --gpu: %s lacks ls_simgpu_init/ls_simgpu_step/ls_simgpu_fini\n", path);
		dlclose(h);
		memset(g, 0, sizeof(*g));
		return -1;
	}
	char err[256] = "";
	if (g->init(device, err, sizeof(err)) != 0) {
		fprintf(stderr, "latscope sim: --gpu: device %d: %s\n", device, err[0] ? err : "ls_simgpu_init failed");
		dlclose(h);
		memset(g, 0, sizeof(*g));
		return -1;
	}
	g->handle = h;
	return 0;
}

void sim_gpu_close(struct sim_gpu *g)
{
	if (!g->handle)
		return;
	g->fini();
	dlclose(g->handle);
	memset(g, 0, sizeof(*g));
}
