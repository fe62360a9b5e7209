# latscope build. `make` builds build/latscope; `make test` and `make demo` install
# missing Debian packages first (scripts/deps.sh), so each is one command on a fresh machine.
# SAN=1 builds into build/san with AddressSanitizer + UndefinedBehaviorSanitizer.
# V=1 shows every command.

.DELETE_ON_ERROR:
.DEFAULT_GOAL := all
.SUFFIXES:

PREFIX    ?= /usr/local
# make test and make demo build on every core (a serial build was a minute of CI's ten).
JOBS      ?= $(shell nproc 2>/dev/null || echo 1)
CUDA_HOME ?= /usr/local/cuda
CC        ?= cc
CLANG     ?= clang
BPFTOOL   ?= bpftool

ifeq ($(V),1)
Q :=
msg := @true
else
Q := @
msg = @printf '  %-8s %s\n'
endif

ifeq ($(SAN),1)
BUILD     ?= build/san
# float-cast-overflow: not in GCC's "undefined"; JSON numbers reach integer fields.
OPT       := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined,float-cast-overflow \
             -fno-sanitize-recover=undefined,float-cast-overflow
SANLD     := -fsanitize=address,undefined,float-cast-overflow
else
BUILD     ?= build
OPT       := -O2 -g
SANLD     :=
endif

# The skeleton and vmlinux.h are generated once, in build/ (shared by the SAN build).
GEN       := build/gen

CFLAGS    += $(OPT) -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -pthread \
             -I$(GEN) -Iuserspace -Ibpf -Igpu -MMD -MP
LDFLAGS   += $(SANLD) -pthread
LDLIBS    += -luring -lcurl -lcjson -lbpf -lelf -lz -lssl -lcrypto -lm -ldl

# MPI (`mpirun -n N latscope bench`, docs/mpi.md): Debian's OpenMPI when
# libopenmpi-dev is installed (pkg-config ompi-c), linked directly (docs/ARCHITECTURE.md says
# why); without it, or with MPI=0, userspace/mpi/ builds its stub and says "MPI is off".
ifneq ($(MPI),0)
MPI_FOUND := $(shell pkg-config --exists ompi-c 2>/dev/null && echo yes)
endif
ifeq ($(MPI_FOUND),yes)
MPI_CFLAGS := -DLS_HAVE_MPI $(shell pkg-config --cflags ompi-c)
LDLIBS    += $(shell pkg-config --libs ompi-c)
endif

# Every userspace stage is a folder (docs/ARCHITECTURE.md); all but main.c go into one archive
# that the tests link too.
LIB_SRCS  := $(wildcard userspace/*/*.c gpu/common/*.c)
LIB_OBJS  := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRCS))
MAIN_OBJ  := $(BUILD)/obj/userspace/main.o
LIB       := $(BUILD)/liblatscope.a
BIN       := $(BUILD)/latscope

UNIT_SRCS  := $(wildcard tests/unit/*.c)
INTEG_SRCS := $(wildcard tests/integration/*.c)
UNIT_BIN   := $(BUILD)/tests/unit
INTEG_BIN  := $(BUILD)/tests/integration

BPF_SRCS  := $(wildcard bpf/*.bpf.c)
# common.bpf.o defines the shared maps; libbpf 1.1's linker needs the definition before any
# object that declares them extern, so it goes first.
BPF_OBJS  := $(GEN)/bpf/common.bpf.o \
             $(filter-out $(GEN)/bpf/common.bpf.o,$(patsubst bpf/%.bpf.c,$(GEN)/bpf/%.bpf.o,$(BPF_SRCS)))
SKEL      := $(GEN)/latscope.skel.h
VMLINUX   := $(GEN)/vmlinux.h
BPF_ARCH  := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')

.PHONY: all deps test unit-bins san-bins demo clean install fuzz bench gpu check-layout mutants engine
all: $(BIN) gpu

deps:
	$(Q)./scripts/deps.sh

# vmlinux.h from the running kernel's BTF, or the committed copy where there is none.
$(VMLINUX):
	$(Q)mkdir -p $(@D)
	$(msg) GEN $@
	$(Q)if [ -r /sys/kernel/btf/vmlinux ]; then \
	  $(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@; \
	else gzip -dc bpf/vmlinux.h.gz > $@; fi

$(GEN)/bpf/%.bpf.o: bpf/%.bpf.c bpf/events.h $(VMLINUX) $(wildcard bpf/*.bpf.h)
	$(Q)mkdir -p $(@D)
	$(msg) BPF $@
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -Wall -Werror \
	  -I$(GEN) -Ibpf -c $< -o $@

# All probes link into ONE object and one skeleton (docs/ARCHITECTURE.md).
$(GEN)/latscope.bpf.o: $(BPF_OBJS)
	$(msg) BPFLINK $@
	$(Q)$(BPFTOOL) gen object $@ $^

$(SKEL): $(GEN)/latscope.bpf.o
	$(msg) SKEL $@
	$(Q)$(BPFTOOL) gen skeleton $< name latscope_bpf > $@

$(BUILD)/obj/%.o: %.c
	$(Q)mkdir -p $(@D)
	$(msg) CC $@
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

# Only the MPI transport sees mpi.h.
$(BUILD)/obj/userspace/mpi/mpi_world.o: CFLAGS += $(MPI_CFLAGS)

# Only the probes include the skeleton; nothing else waits for clang -target bpf.
$(BUILD)/obj/userspace/probes/probes.o $(BUILD)/obj/userspace/probes/probes_engine.o: | $(SKEL)

$(LIB): $(LIB_OBJS)
	$(msg) AR $@
	$(Q)rm -f $@ && ar rcs $@ $^

$(BIN): $(MAIN_OBJ) $(LIB)
	$(msg) LD $@
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(UNIT_BIN): $(patsubst %.c,$(BUILD)/obj/%.o,$(UNIT_SRCS)) $(LIB)
	$(Q)mkdir -p $(@D)
	$(msg) LD $@
	$(Q)$(CC) $(LDFLAGS) $^ -lcriterion $(LDLIBS) -o $@

$(INTEG_BIN): $(patsubst %.c,$(BUILD)/obj/%.o,$(INTEG_SRCS)) $(LIB)
	$(Q)mkdir -p $(@D)
	$(msg) LD $@
	$(Q)$(CC) $(LDFLAGS) $^ -lcriterion $(LDLIBS) -o $@

unit-bins: $(UNIT_BIN) $(INTEG_BIN)

# The CUPTI side builds only where the CUDA toolkit is; gpu/gpu.mk owns it.
ifneq ($(wildcard $(CUDA_HOME)/include/cupti.h),)
include gpu/gpu.mk
else
gpu:
	@echo "  SKIP     gpu/: no CUDA toolkit at $(CUDA_HOME) (set CUDA_HOME to build the CUPTI library)"
endif

test: deps
	$(Q)$(MAKE) -j$(JOBS) --no-print-directory all unit-bins check-layout
	$(Q)$(MAKE) -j$(JOBS) --no-print-directory SAN=1 san-bins
	$(Q)scripts/engine.sh --test
	$(Q)tests/run

# llama.cpp's llama-server for the engine tests (tests/engines/, docs/engine.md): built once per
# machine from the source npm's node-llama-cpp@3.22.1 ships, into a cache keyed by the llama.cpp
# commit ($$LATSCOPE_ENGINE_CACHE, default /var/cache/latscope/engine); seconds when cached. The
# last line is the binary's path. Under `make test` a package that cannot be fetched is a skip of
# the engine tests, a build that fails is a failure.
engine: deps
	$(Q)scripts/engine.sh

# No include points up the pipeline (the stage order is in scripts/check-layout.sh), and no
# function is over 80 lines (data tables are not functions).
check-layout:
	$(Q)scripts/check-layout.sh
	$(Q)scripts/long-functions.py userspace/main.c $(wildcard userspace/*/*.c gpu/*.c gpu/common/*.c)

demo: deps
	$(Q)$(MAKE) -j$(JOBS) --no-print-directory all
	$(Q)scripts/demo.sh

fuzz: fuzz-bins
	$(Q)tests/fuzz/run.sh

# The floor of the three-client table (tests/perf/anchors.sh): one file, no library.
FLOOR_CLIENT := $(BUILD)/perf/floor_client
$(FLOOR_CLIENT): tests/perf/floor_client.c
	$(Q)mkdir -p $(@D)
	$(msg) CC $@
	$(Q)$(CC) -O2 -std=gnu11 -Wall -Wextra -Werror -o $@ $< -lm

bench: all $(FLOOR_CLIENT)
	$(Q)tests/perf/run.sh

# ---- fuzzing (tests/fuzz: the reliability stage) ----
# libFuzzer targets (clang, -fsanitize=fuzzer,address,undefined) in build/fuzz/bin, over the
# library rebuilt with clang in build/fuzz/obj; `make fuzz` runs each for FUZZ_SECONDS. The
# corpus replay (a plain main() over the same targets, gcc ASan+UBSan) is built by
# `make SAN=1 san-bins` into build/san/tests/fuzz and run once per corpus by tests/run.
FUZZ_NAMES  := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_DIR    := build/fuzz
FUZZ_CFLAGS := -O1 -g -fno-omit-frame-pointer -std=gnu11 -Wall -Wextra -D_GNU_SOURCE -pthread \
               -I$(GEN) -Iuserspace -Ibpf -Igpu -MMD -MP
REPLAY_BINS := $(patsubst %,$(BUILD)/tests/fuzz/%,$(FUZZ_NAMES))
.PHONY: fuzz-bins
# keep the fuzz objects (make would delete them as intermediates and rebuild them each time)
.SECONDARY: $(patsubst %,$(FUZZ_DIR)/obj/tests/fuzz/fuzz_%.o,$(FUZZ_NAMES)) \
            $(patsubst %,$(BUILD)/obj/tests/fuzz/fuzz_%.o,$(FUZZ_NAMES)) $(BUILD)/obj/tests/fuzz/replay_main.o

$(FUZZ_DIR)/obj/userspace/probes/probes.o $(FUZZ_DIR)/obj/userspace/probes/probes_engine.o: | $(SKEL)

$(FUZZ_DIR)/obj/%.o: %.c
	$(Q)mkdir -p $(@D)
	$(msg) FUZZCC $@
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -c $< -o $@

$(FUZZ_DIR)/liblatscope.a: $(patsubst %.c,$(FUZZ_DIR)/obj/%.o,$(LIB_SRCS))
	$(Q)rm -f $@ && ar rcs $@ $^

$(FUZZ_DIR)/bin/%: $(FUZZ_DIR)/obj/tests/fuzz/fuzz_%.o $(FUZZ_DIR)/liblatscope.a
	$(Q)mkdir -p $(@D)
	$(msg) FUZZLD $@
	$(Q)$(CLANG) -fsanitize=fuzzer,address,undefined -pthread $^ $(LDLIBS) -o $@

fuzz-bins: $(patsubst %,$(FUZZ_DIR)/bin/%,$(FUZZ_NAMES))

$(BUILD)/tests/fuzz/%: $(BUILD)/obj/tests/fuzz/fuzz_%.o $(BUILD)/obj/tests/fuzz/replay_main.o $(LIB)
	$(Q)mkdir -p $(@D)
	$(msg) LD $@
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# The sanitizer build (build/san): unit tests, a latscope for the integration tests that use
# it, and the fuzz corpus replays.
san-bins: $(BIN) unit-bins $(REPLAY_BINS)

# ---- the test runner's own fixtures (tests/runner) ----
# Suites that fail the ways tests/run must catch (a runner process that crashes, or exits before
# its TAP report; a test that never returns; a leak under ASan), a healthy one, and the corpus
# replay over a trivial fuzz target; tests/runner/test_runner.sh runs tests/run against them.
# Built with the unit tests, always into build/tests/runner: the leak fixture brings its own ASan.
RUNNER_FIX_DIR    := build/tests/runner
RUNNER_FIX_SRCS   := $(filter-out %/fuzz_target.c,$(wildcard tests/runner/fixtures/*.c))
RUNNER_FIXTURES   := $(patsubst tests/runner/fixtures/%.c,$(RUNNER_FIX_DIR)/%,$(RUNNER_FIX_SRCS)) \
                     $(RUNNER_FIX_DIR)/replay
RUNNER_FIX_CFLAGS := -O0 -g -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE
.PHONY: runner-fixtures
runner-fixtures: $(RUNNER_FIXTURES)
unit-bins: runner-fixtures

$(RUNNER_FIX_DIR)/leak: RUNNER_FIX_CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer

$(RUNNER_FIX_DIR)/replay: tests/runner/fixtures/fuzz_target.c tests/fuzz/replay_main.c
	$(Q)mkdir -p $(@D)
	$(msg) LD $@
	$(Q)$(CC) $(RUNNER_FIX_CFLAGS) $^ -o $@

$(RUNNER_FIX_DIR)/%: tests/runner/fixtures/%.c
	$(Q)mkdir -p $(@D)
	$(msg) LD $@
	$(Q)$(CC) $(RUNNER_FIX_CFLAGS) $< -lcriterion -o $@
# ---- end of the runner's fixtures ----

# Man pages: latscope(1) and latscope-CMD(1), made from the binary's own --help texts (one copy of
# each flag's text: the command's option table), so they are rebuilt with it.
MAN_DIR := $(BUILD)/man
.PHONY: man
man: $(MAN_DIR)/latscope.1
$(MAN_DIR)/latscope.1: $(BIN) scripts/manpages.sh
	$(msg) MAN $(MAN_DIR)
	$(Q)rm -rf $(MAN_DIR) && scripts/manpages.sh $(BIN) $(MAN_DIR)

install: all man
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/latscope
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0644 $(MAN_DIR)/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -d $(DESTDIR)$(PREFIX)/share/doc/latscope/docs
	install -m 0644 README.md CONTRIBUTING.md $(DESTDIR)$(PREFIX)/share/doc/latscope/
	install -m 0644 docs/*.md docs/*.png $(DESTDIR)$(PREFIX)/share/doc/latscope/docs/
	install -d $(DESTDIR)$(PREFIX)/share/latscope/configs
	install -m 0644 configs/*.json $(DESTDIR)$(PREFIX)/share/latscope/configs/
	$(if $(wildcard build/gpu/liblatscope_cupti.so),install -D -m 0755 build/gpu/liblatscope_cupti.so $(DESTDIR)$(PREFIX)/lib/latscope/liblatscope_cupti.so)
	$(if $(wildcard build/gpu/liblatscope_simgpu.so),install -D -m 0755 build/gpu/liblatscope_simgpu.so $(DESTDIR)$(PREFIX)/bin/gpu/liblatscope_simgpu.so)

clean:
	rm -rf build

# Header dependencies of every object this build knows (make ignores the ones not built yet).
-include $(patsubst %.o,%.d,$(LIB_OBJS) $(MAIN_OBJ) $(patsubst %.c,$(BUILD)/obj/%.o,$(UNIT_SRCS) $(INTEG_SRCS)) \
           $(patsubst %,$(BUILD)/obj/tests/fuzz/fuzz_%.o,$(FUZZ_NAMES)) $(BUILD)/obj/tests/fuzz/replay_main.o)

# Realistic bugs the tests must catch (tests/mutants.list), each applied to a scratch copy of the
# tree: fails on any the tests let through. Minutes; not part of make test.
mutants: all unit-bins
	$(Q)scripts/mutants.py
