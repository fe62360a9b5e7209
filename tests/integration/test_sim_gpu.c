/* test_sim_gpu.c — the --gpu path without a GPU: a stand-in liblatscope_simgpu.so (compiled
 * here, sleeping for the step's work) proves the dlopen, the per-step call and the truth's host
 * bracket; a library whose init fails gives one clear line and exit 1. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "t_helpers.h"
#include "test_sim_client.h"

static struct t_sim sim;
static char dir[] = "/tmp/latscope-simgpu-XXXXXX";

static void fini(void)
{
	t_sim_stop(&sim);
	t_remove_tree(dir);
}

TestSuite(sim_gpu, .fini = fini, .timeout = 60);

static const char *fake_src =
	"#include <stdint.h>\n#include <stdio.h>\n#include <time.h>\n#include <stddef.h>\n"
	"static int ready;\n"
	"int ls_simgpu_init(int device, char *err, size_t n) {\n"
	"  if (device != 0) { snprintf(err, n, \"no device %d\", device); return -1; }\n"
	"  ready = 1; return 0; }\n"
	"int ls_simgpu_step(uint64_t work_ns, uint32_t n_sampled) {\n"
	"  (void)n_sampled; if (!ready) return -1;\n"
	"  struct timespec ts = { (time_t)(work_ns / 1000000000u), (long)(work_ns % 1000000000u) };\n"
	"  nanosleep(&ts, NULL); return 0; }\n"
	"void ls_simgpu_fini(void) { ready = 0; }\n";

/* Builds the stand-in library; returns its path or skips. */
static const char *build_fake(char *lib, size_t len)
{
	if (!mkdtemp(dir))
		cr_skip_test("mkdtemp failed");
	char src[128], cmd[512];
	snprintf(src, sizeof(src), "%s/fake.c", dir);
	snprintf(lib, len, "%s/liblatscope_simgpu.so", dir);
	FILE *f = fopen(src, "w");
	cr_assert(f);
	fputs(fake_src, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc -shared -fPIC -O1 -o %s %s 2>&1", lib, src);
	if (system(cmd) != 0)
		cr_skip_test("no C compiler to build the stand-in GPU library");
	return lib;
}

Test(sim_gpu, steps_call_the_library_and_truth_brackets_them)
{
	char lib[160];
	build_fake(lib, sizeof(lib));
	const char *extra[] = { "--gpu", "--gpu-lib", lib, "--step-ms", "3", "--prefill-token-us", "0", NULL };
	cr_assert_eq(t_sim_start(&sim, 0, extra), 0, "sim --gpu with the stand-in library did not start");
	struct t_resp r;
	t_request(sim.port, "POST", "/v1/completions", NULL,
		    "{\"prompt\":\"a\",\"max_tokens\":5,\"ignore_eos\":true,\"stream\":true}", &r, 5000);
	cr_expect_eq(r.status, 200);
	cr_expect_eq(r.n_events, 6);
	t_resp_free(&r);
	setenv("T_KEEP", "1", 1);
	t_sim_stop(&sim);
	unsetenv("T_KEEP");
	cJSON **lines;
	int n = t_truth_lines(sim.truth, &lines);
	unlink(sim.truth);
	cr_assert_eq(n, 1);
	cJSON *s;
	int steps = 0;
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(lines[0], "steps")) {
		cJSON *gs = cJSON_GetObjectItem(s, "gpu_start"), *ge = cJSON_GetObjectItem(s, "gpu_end");
		cr_assert(cJSON_IsNumber(gs) && cJSON_IsNumber(ge), "step has the GPU bracket");
		double work_ms = (ge->valuedouble - gs->valuedouble) / 1e6;
		cr_expect(work_ms >= 2.9 && work_ms < 20, "the library ran the step's 3 ms (%.3f ms)", work_ms);
		cr_expect_geq(gs->valuedouble, cJSON_GetObjectItem(s, "start")->valuedouble);
		cr_expect_leq(ge->valuedouble, cJSON_GetObjectItem(s, "end")->valuedouble);
		steps++;
	}
	cr_expect_eq(steps, 5);
	t_truth_lines_free(lines, n);
}

Test(sim_gpu, init_failure_is_one_line_exit_1)
{
	char lib[160];
	build_fake(lib, sizeof(lib));
	char *err = NULL;
	const char *argv[] = { "sim", "--port", "1", "--gpu", "--gpu-lib", lib, "--gpu-device", "3", NULL };
	cr_expect_eq(t_run(argv, NULL, &err, 10), 1);
	cr_expect(err && strstr(err, "no device 3"), "%s", err ? err : "");
	cr_expect(err && strchr(err, '\n') == err + strlen(err) - 1, "one line: %s", err ? err : "");
	free(err);
}
