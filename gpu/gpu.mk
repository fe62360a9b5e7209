# gpu/gpu.mk — the CUPTI side (included by the Makefile when $(CUDA_HOME)/include/cupti.h exists).
#   $(BUILD)/gpu/liblatscope_cupti.so   injection library (CUDA_INJECTION64_PATH); libcupti is
#                                       dlopen'ed, never linked; -z nodelete
#   $(BUILD)/gpu/liblatscope_simgpu.so  the simulator's step kernel (only where nvcc is)
#   $(BUILD)/gpu/latscope-gpu-check     reads rings + sim truth for tests/gpu/smoke.sh
#   $(BUILD)/tests/gpu                  Criterion: real libcupti record parsing -> segmentation,
#                                       and the injection library over a stand-in libcupti
# The injection library is never sanitized: it is loaded into engines that are not.

NVCC        ?= $(CUDA_HOME)/bin/nvcc
GPU_OUT     := $(BUILD)/gpu
CUPTI_INC   := -isystem $(CUDA_HOME)/include
# H100/H200 (sm_90) and A100 (sm_80) natively, plus compute_90 PTX for newer GPUs to JIT.
NVCC_ARCH   ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
               -gencode arch=compute_90,code=compute_90
NVCC_FLAGS  := -O2 -std=c++17 -shared --Werror all-warnings $(NVCC_ARCH) -cudart static \
               -Xcompiler -fPIC,-fvisibility=hidden,-Wall,-Wextra,-Werror

INJECT_SRCS := gpu/cupti_inject.c gpu/cupti_api.c gpu/cupti_records.c \
               gpu/common/segment.c gpu/common/step_ring.c
INJECT_OBJS := $(patsubst %.c,$(GPU_OUT)/pic/%.o,$(INJECT_SRCS))
INJECT_SO   := $(GPU_OUT)/liblatscope_cupti.so
SIMGPU_SO   := $(GPU_OUT)/liblatscope_simgpu.so
GPU_CHECK   := $(GPU_OUT)/latscope-gpu-check
GPU_TEST    := $(BUILD)/tests/gpu
FAKE_CUPTI  := $(GPU_OUT)/test/libfakecupti.so
GPU_TEST_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard tests/gpu/*.c) gpu/cupti_api.c gpu/cupti_records.c)

HAVE_NVCC   := $(if $(wildcard $(NVCC)),1,$(if $(shell command -v nvcc 2>/dev/null),1,))
ifeq ($(HAVE_NVCC),1)
ifeq ($(wildcard $(NVCC)),)
NVCC        := nvcc
endif
gpu: $(INJECT_SO) $(SIMGPU_SO) $(GPU_CHECK)
else
gpu: $(INJECT_SO) $(GPU_CHECK)
	@echo "  SKIP     $(SIMGPU_SO): no nvcc at $(NVCC) (latscope sim --gpu needs it)"
endif

unit-bins: $(GPU_TEST)

$(GPU_OUT)/pic/%.o: %.c
	$(Q)mkdir -p $(@D)
	$(msg) CC $@
	$(Q)$(CC) -O2 -g -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -pthread -fPIC \
	  -fvisibility=hidden -Iuserspace -Igpu $(CUPTI_INC) -MMD -MP -c $< -o $@

$(INJECT_SO): $(INJECT_OBJS)
	$(msg) LD $@
	$(Q)$(CC) -shared -pthread -Wl,-z,nodelete -Wl,-z,defs -Wl,--as-needed $^ -ldl -o $@

$(SIMGPU_SO): gpu/simgpu.cu
	$(Q)mkdir -p $(@D)
	$(msg) NVCC $@
	$(Q)$(NVCC) $(NVCC_FLAGS) $< -o $@

# CUDA headers for the objects that read CUPTI records (system headers: their warnings are not ours).
$(BUILD)/obj/gpu/cupti_%.o $(BUILD)/obj/tests/gpu/%.o $(BUILD)/obj/tests/gpu/tools/%.o: CFLAGS += $(CUPTI_INC)

# The tests load the injection library the way the driver does, over a stand-in libcupti.
$(GPU_TEST): $(GPU_TEST_OBJS) $(LIB) | $(INJECT_SO) $(FAKE_CUPTI)
	$(Q)mkdir -p $(@D)
	$(msg) LD $@
	$(Q)$(CC) $(LDFLAGS) $^ -lcriterion $(LDLIBS) -o $@

$(FAKE_CUPTI): tests/gpu/fake/fake_cupti.c
	$(Q)mkdir -p $(@D)
	$(msg) CC $@
	$(Q)$(CC) -O1 -g -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -pthread -fPIC -shared \
	  -fvisibility=hidden $(CUPTI_INC) $< -o $@

$(GPU_CHECK): $(BUILD)/obj/tests/gpu/tools/gpu_check.o $(LIB)
	$(Q)mkdir -p $(@D)
	$(msg) LD $@
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

-include $(patsubst %.o,%.d,$(INJECT_OBJS) $(GPU_TEST_OBJS) $(BUILD)/obj/tests/gpu/tools/gpu_check.o)
