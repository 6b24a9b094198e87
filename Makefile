# ratiolab build. GNU make, C11. `make help` lists the targets.
#
# Layout: every library folder (LIBDIRS) is compiled into one static library; cli/ links it into
# build/ratiolab. Tests are tests/check_<module>.c (one Check suite each, found by file name);
# benchmarks are bench/<name>.c (one program each); tests/progs/<name>.c are helper programs the
# tests start. CUDA files (*.cu) are compiled only when nvcc is found.

SHELL := /bin/bash
.DEFAULT_GOAL := all

SANITIZE ?= 0
ifeq ($(SANITIZE),1)
BUILD ?= build-san
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
else
BUILD ?= build
SANFLAGS :=
endif

PREFIX ?= /usr/local
# gcc unless CC is given (make's built-in default `cc` does not count as given).
ifeq ($(origin CC),default)
CC := gcc
endif
LIBDIRS := common hw plan sim exec kernels traces calib validation plots monitor campaign

# ---- feature detection (one line each) -----------------------------------------------------
# Each may be given on the command line instead (scripts/gpu-check.sh does, on a machine whose
# libraries live in a private prefix): PKG_CONFIG (a pkg-config), NVCC, NCCL_H and NCCL_LIBDIR
# (a folder with libnccl.so), MPICC (empty: no MPI) or MPI_CFLAGS and MPI_LIBS.
PKG_CONFIG ?= pkg-config
NVCC := $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
CUDA_HOME := $(if $(NVCC),$(patsubst %/bin/nvcc,%,$(realpath $(NVCC))))
NCCL_H := $(firstword $(wildcard $(CUDA_HOME)/include/nccl.h /usr/include/nccl.h /usr/local/include/nccl.h))
NCCL_LIBDIR := $(patsubst %/,%,$(dir $(firstword $(wildcard $(CUDA_HOME)/lib/libnccl.so $(CUDA_HOME)/lib64/libnccl.so /usr/lib/x86_64-linux-gnu/libnccl.so))))
MPICC := $(shell command -v mpicc 2>/dev/null)
ifneq ($(MPICC),)
MPI_CFLAGS ?= $(shell $(MPICC) --showme:compile 2>/dev/null)
MPI_LIBS ?= $(shell $(MPICC) --showme:link 2>/dev/null)
endif
HAVE_CHECK := $(shell $(PKG_CONFIG) --exists check 2>/dev/null && echo yes)
HAVE_JANSSON := $(shell $(PKG_CONFIG) --exists jansson 2>/dev/null && echo yes)
HAVE_ZLIB := $(shell $(PKG_CONFIG) --exists zlib 2>/dev/null && echo yes)
GNUPLOT := $(shell command -v gnuplot 2>/dev/null)

# Printed by the inner make only: the entry targets (all, test, demo, bench) first install missing
# packages, then run an inner make that sees them.
ifeq ($(RL_INNER),1)
ifndef RL_FEATURES_SHOWN
$(info feature: nvcc     $(if $(NVCC),yes ($(NVCC)),no (CUDA code not built; GPU tests skip)))
$(info feature: NCCL     $(if $(and $(NVCC),$(NCCL_H),$(NCCL_LIBDIR)),yes ($(NCCL_H)),no))
$(info feature: MPI      $(if $(MPI_LIBS),yes ($(or $(MPICC),$(MPI_LIBS))),no))
$(info feature: Check    $(if $(HAVE_CHECK),yes,no (needed by make test)))
$(info feature: jansson  $(if $(HAVE_JANSSON),yes,no (required)))
$(info feature: zlib     $(if $(HAVE_ZLIB),yes,no (required)))
$(info feature: gnuplot  $(if $(GNUPLOT),yes ($(GNUPLOT)),no (ratiolab plot writes data and scripts only)))
export RL_FEATURES_SHOWN := 1
endif
endif

# ---- flags ------------------------------------------------------------------------------------
# -ffp-contract=off and no fast-math: the bitwise contract (kernels/README.md) depends on it.
# FORMAT_FLAGS: every printf-like call takes a literal format (a path or other input text as the
# format is a crash or a write to memory); printf-like functions carry the format attribute. It is an
# error even with WERROR= (empty).
# clang (`make CC=clang BUILD=build-clang`) has no -Wformat-truncation before version 18.
# WERROR= (empty) makes other warnings non-fatal (scripts/gpu-check.sh, on another image's compiler).
FORMAT_FLAGS := -Wformat=2 -Wformat-security -Werror=format-security
CC_IS_CLANG := $(shell $(CC) --version 2>/dev/null | grep -q clang && echo yes)
WERROR ?= -Werror
CFLAGS := -std=c11 -O2 -g -Wall -Wextra -Wmissing-prototypes -Wshadow $(WERROR) $(if $(CC_IS_CLANG),,-Wno-format-truncation) $(FORMAT_FLAGS) -ffp-contract=off -fopenmp -D_GNU_SOURCE \
          -I. -I$(BUILD)/gen $(SANFLAGS) $(EXTRA_CFLAGS) $(shell $(PKG_CONFIG) --cflags jansson zlib 2>/dev/null)
LDLIBS := $(shell $(PKG_CONFIG) --libs jansson zlib 2>/dev/null) -lopenblas -lm -ldl -lpthread
CHECK_CFLAGS := $(shell $(PKG_CONFIG) --cflags check 2>/dev/null)
CHECK_LIBS := $(shell $(PKG_CONFIG) --libs check 2>/dev/null)
LDFLAGS := -fopenmp $(SANFLAGS) $(EXTRA_LDFLAGS)

ifneq ($(NVCC),)
# NCCL's folder first: it may hold the headers the CUDA install lacks (nccl.h, cuBLAS's).
CFLAGS += -DRL_HAVE_CUDA=1 $(if $(NCCL_H),-I$(dir $(NCCL_H))) -I$(CUDA_HOME)/include
NVCC_ARCH ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]
NVCCFLAGS := -O3 -std=c++17 $(NVCC_ARCH) --fmad=false -prec-div=true -prec-sqrt=true -ftz=false \
             -I. -I$(BUILD)/gen -Xcompiler -ffp-contract=off,-Wall,-Wformat-security,-Werror=format-security $(if $(WERROR),-Xcompiler -Werror) -DRL_HAVE_CUDA=1
CUDA_LIBDIR := $(firstword $(wildcard $(CUDA_HOME)/lib64 $(CUDA_HOME)/lib))
# NCCL's folder before CUDA's: when NCCL_LIBDIR is given, its libnccl.so is the one linked.
LDLIBS += $(if $(and $(NCCL_H),$(NCCL_LIBDIR)),-L$(NCCL_LIBDIR)) -L$(CUDA_LIBDIR) -Wl,-rpath,$(CUDA_LIBDIR) -lcudart -lstdc++
ifneq ($(and $(NCCL_H),$(NCCL_LIBDIR)),)
CFLAGS += -DRL_HAVE_NCCL=1
NVCCFLAGS += -DRL_HAVE_NCCL=1 -I$(dir $(NCCL_H))
LDLIBS += -L$(NCCL_LIBDIR) -Wl,-rpath,$(NCCL_LIBDIR) -lnccl
# The executor's cuda backend (exec/backend_cuda.cu) needs NCCL (and cuBLAS, loaded at run time).
CFLAGS += -DRL_EX_CUDA=1
NVCCFLAGS += -DRL_EX_CUDA=1
endif
endif

# OpenBLAS (sgemm for ratiolab calibrate's emulated-device GEMM throughput).
HAVE_OPENBLAS := $(shell $(PKG_CONFIG) --exists openblas 2>/dev/null && echo yes)
ifneq ($(HAVE_OPENBLAS),)
CFLAGS += -DRL_HAVE_OPENBLAS=1 $(shell $(PKG_CONFIG) --cflags openblas)
LDLIBS += $(shell $(PKG_CONFIG) --libs openblas)
endif

# MPI (exec/comm.c only includes mpi.h; everything links it).
ifneq ($(MPI_LIBS),)
LDLIBS += $(MPI_LIBS)
$(BUILD)/obj/exec/comm.o: private CFLAGS += $(MPI_CFLAGS) -DRL_HAVE_MPI=1
endif

# ---- sources ----------------------------------------------------------------------------------
LIB_SRC := $(foreach d,$(LIBDIRS),$(wildcard $(d)/*.c))
CU_SRC := $(if $(NVCC),$(foreach d,$(LIBDIRS),$(wildcard $(d)/*.cu)))
CLI_SRC := $(wildcard cli/*.c)
TEST_SRC := $(wildcard tests/*.c)
PROG_SRC := $(wildcard tests/progs/*.c)
BENCH_SRC := $(wildcard bench/*.c)

LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(CU_SRC:%.cu=$(BUILD)/obj/%.cu.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/obj/%.o)
LIB := $(BUILD)/libratiolab.a
BIN := $(BUILD)/ratiolab
TEST_BIN := $(BUILD)/tests/run_tests
PROGS := $(PROG_SRC:tests/progs/%.c=$(BUILD)/tests/progs/%)
BENCHES := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

# Generated lists: every cli/cmd_<name>.c defines `const struct cli_cmd cli_cmd_<name>`, every
# tests/check_<module>.c defines `Suite *<module>_suite(void)` (check_gpu_* run without fork).
CMD_NAMES := $(sort $(patsubst cli/cmd_%.c,%,$(wildcard cli/cmd_*.c)))
SUITE_NAMES := $(sort $(patsubst tests/check_%.c,%,$(wildcard tests/check_*.c)))
GEN_CMDS := $(BUILD)/gen/commands.h
GEN_SUITES := $(BUILD)/gen/suites.h

.PHONY: all test test-run demo bench install clean deps help fuzz fuzz-run FORCE

INNER := $(MAKE) --no-print-directory RL_INNER=1

all: deps-quiet
	@$(INNER) $(BIN)

help:
	@echo "make            build $(BIN)"
	@echo "make demo       build and run the default case (Megatron gpt-2.7b, 8 x V100): simulation, seconds"
	@echo "make demo-validate  figure 4: the executor against the simulator (minutes)"
	@echo "make figures    redraw the README's figures (docs/figures/*.png, needs gnuplot)"
	@echo "make test       build and run every test, then again under ASan + UBSan"
	@echo "make test SANITIZE=1   only the ASan + UBSan run"
	@echo "make test-long  the long loop tests (kernels' bitwise loops) at full length"
	@echo "make mutate     mutation score of the tests (tests/mutants/, slow, not part of make test)"
	@echo "make check-layers   every #include allowed by its module's README (run by make test)"
	@echo "make bench      build and run the benchmarks (bench/)"
	@echo "make fuzz       libFuzzer on every parser, FUZZ_SECONDS per target (default 60)"
	@echo "make install PREFIX=/usr/local   binary, catalog, man page, bash completion, probe/ratiolab_probe.py"
	@echo "make ds-oracle  real DeepSpeed on the CPU (pinned venvs in build-ds/) against the plan; re-records tests/deepspeed/"
	@echo "make ds-parity  only the config-parity corpus through each release's config classes (tests/deepspeed/parity/)"
	@echo "make uninstall PREFIX=/usr/local removes what install put there"
	@echo "make docs       build/ratiolab.1 and build/ratiolab.bash-completion from the --help texts"
	@echo "make deps       install missing Debian packages (as root) or print the command"
	@echo "make clean"

# ---- Debian packages ----------------------------------------------------------------------
DEB_PKGS := build-essential pkg-config libjansson-dev zlib1g-dev check libsubunit-dev \
            gnuplot-nox libopenmpi-dev openmpi-bin libopenblas-dev clang libclang-rt-dev
deps:
	@scripts/deps.sh $(DEB_PKGS)
deps-quiet:
	@scripts/deps.sh --quiet $(DEB_PKGS)
.PHONY: deps-quiet

# ---- build rules ----------------------------------------------------------------------------
$(BUILD)/gen/commands.h: FORCE
	@mkdir -p $(@D)
	@{ $(foreach c,$(CMD_NAMES),echo 'RL_CMD($(c))';) } > $@.tmp
	@cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@

$(BUILD)/gen/suites.h: FORCE
	@mkdir -p $(@D)
	@{ $(foreach s,$(SUITE_NAMES),echo 'RL_SUITE($(s))';) } > $@.tmp
	@cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@

# One rule per kind of file; what differs between them is a target-specific flag (`private`, so
# it never leaks into the library objects built as prerequisites). The generated headers are
# order-only: they exist before anything compiles, and only the files that include them
# (cli/main.c, tests/runner.c) depend on them, through their .d files: adding a test or a command
# rebuilds those two, not the library.
$(BUILD)/obj/%.o: %.c | $(GEN_CMDS) $(GEN_SUITES)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(OBJ_CFLAGS) -MMD -MP -c $< -o $@

# Tests: Check's flags, and each tests/check_<module>.c is told its suite function's name
# (-DTU_SUITE=<module>_suite), which tests/util.h declares.
$(TEST_OBJ): private OBJ_CFLAGS = $(CHECK_CFLAGS) \
    $(patsubst check_%,-DTU_SUITE=%_suite,$(filter check_%,$(basename $(notdir $@))))

$(BUILD)/obj/%.cu.o: %.cu
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJ)
	@mkdir -p $(@D)
	@rm -f $@
	ar rcs $@ $^

$(BIN): $(CLI_OBJ) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(LIB) $(LDLIBS)

$(TEST_BIN): $(TEST_OBJ) $(filter-out $(BUILD)/obj/cli/main.o,$(CLI_OBJ)) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

# Programs of one source file each (tests/progs/, bench/), linked with the library.
define LINK_PROGRAM
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)
endef
$(BENCHES): private CFLAGS += -fno-math-errno
$(PROGS): $(BUILD)/tests/progs/%: tests/progs/%.c $(LIB)
	$(LINK_PROGRAM)
$(BENCHES): $(BUILD)/bench/%: bench/%.c $(LIB)
	$(LINK_PROGRAM)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# ---- tests ------------------------------------------------------------------------------------
# `make test` runs the suite twice: a plain optimised build, then ASan + UBSan (build-san/).
# RATIOLAB_BIN and RATIOLAB_SRC tell the tests where the binary and the source tree are.
# RATIOLAB_CFLAGS: the C flags, for the test that a non-literal format does not build.
TEST_ENV := RATIOLAB_BIN=$(CURDIR)/$(BIN) RATIOLAB_SRC=$(CURDIR) RATIOLAB_BUILD=$(CURDIR)/$(BUILD) \
            RATIOLAB_CFLAGS='$(CFLAGS)' \
            ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=1:abort_on_error=0 \
            UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp

# The build before the run is parallel (JOBS, default the machine's cores): the objects are
# independent, and on the 2-core CI machine the two builds are most of `make test`'s time.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
test-build: $(BIN) $(TEST_BIN) $(PROGS)
.PHONY: test-build

# The suites run TEST_JOBS at a time (tests/runner.c, RL_TEST_JOBS), the longest first
# (TEST_FIRST: the suites that took longest in a plain run, longest first).
TEST_JOBS ?= $(JOBS)
TEST_FIRST := validation exec newcomer hardening docs badinput plots_safety monitor plots plot_figures
test-run: $(BIN) $(TEST_BIN) $(PROGS)
	@echo "== tests ($(if $(filter 1,$(SANITIZE)),ASan + UBSan,plain build)), $(TEST_JOBS) suites at a time =="
	$(TEST_ENV) RL_TEST_JOBS=$(TEST_JOBS) RL_TEST_FIRST="$(TEST_FIRST)" $(TEST_BIN)

# `make test-long`: the loop tests tagged "long" (the kernels' bitwise loops) at their full length
# (RL_TEST_LONG=1); `make test` runs their shorter form. SANITIZE=1 as for make test.
test-long: deps-quiet
	@$(INNER) test-long-run
test-long-run: $(BIN) $(TEST_BIN) $(PROGS)
	@echo "== long tests ($(if $(filter 1,$(SANITIZE)),ASan + UBSan,plain build)) =="
	$(TEST_ENV) RL_TEST_LONG=1 CK_INCLUDE_TAGS=long $(TEST_BIN)
.PHONY: test-long test-long-run

# `make check-layers`: every #include follows the "May include ..." sentence of its module's README
# (scripts/check-layers.sh); `make test` runs it first.
check-layers:
	@scripts/check-layers.sh
.PHONY: check-layers

ifeq ($(SANITIZE),1)
test: deps-quiet check-layers
	@$(INNER) -j$(JOBS) test-build
	@$(INNER) test-run
else
# The sanitizer build runs (niced, one job) while the plain half's tests run, which keep one core
# busy at a time: its compiler output goes to build-san/build.log, shown when it fails.
test: deps-quiet check-layers
	@$(INNER) -j$(JOBS) test-build
	@mkdir -p build-san; \
	 { nice -n 10 $(INNER) SANITIZE=1 test-build > build-san/build.log 2>&1; echo $$? > build-san/build.rc; } & \
	 $(INNER) test-run; rc=$$?; wait; \
	 if [ "$$(cat build-san/build.rc)" != 0 ]; then cat build-san/build.log; echo "sanitizer build failed"; exit 2; fi; \
	 exit $$rc
	@$(INNER) SANITIZE=1 -j$(JOBS) test-run
endif

# ---- fuzzing ------------------------------------------------------------------------------------
# `make fuzz`: one libFuzzer binary per parser (tests/fuzz_targets.c), clang with ASan + UBSan,
# run one after the other for FUZZ_SECONDS each by scripts/fuzz.sh; findings are copied to
# tests/fuzz/regressions/<target>/, which `make test` replays (no fuzzing inside make test).
FUZZ_TARGETS := ds_config hf_config hw_profile megatron_args trace dslog ckpt monitor_csv plot_inputs trace_diff \
                probe dsconfig flags ckpt_dir paths audit groups
FUZZ_SECONDS ?= 60
FUZZ_CC := $(shell command -v clang 2>/dev/null || command -v clang-14 2>/dev/null)
FUZZ_DIR := build-fuzz
FUZZ_FLAGS := -std=c11 -O1 -g -D_GNU_SOURCE -I. -ffp-contract=off -fno-omit-frame-pointer $(FORMAT_FLAGS) \
              -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_LIB_SRC := $(foreach d,common hw plan sim traces,$(wildcard $(d)/*.c)) exec/ckpt_file.c exec/ckpt_dir.c \
                validation/monitor_csv.c validation/tdiff.c validation/probe.c validation/audit.c \
                kernels/adam_replay.c plots/input.c cli/args.c cli/flag_values.c tests/fuzz_targets.c
FUZZ_LIB_OBJ := $(FUZZ_LIB_SRC:%.c=$(FUZZ_DIR)/obj/%.o)
FUZZ_BINS := $(FUZZ_TARGETS:%=$(FUZZ_DIR)/fuzz_%)

$(FUZZ_DIR)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(FUZZ_DIR)/fuzz_%: tests/fuzz/libfuzzer.c $(FUZZ_LIB_OBJ)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -DRL_FUZZ_TARGET=$* -o $@ $^ \
	    $(shell $(PKG_CONFIG) --libs jansson zlib 2>/dev/null) -lm -lpthread

-include $(shell find $(FUZZ_DIR)/obj -name '*.d' 2>/dev/null)

fuzz: deps-quiet
	@$(INNER) fuzz-run
fuzz-run: $(FUZZ_BINS)
	@test -n "$(FUZZ_CC)" || { echo "make fuzz needs clang (make deps)"; exit 3; }
	@scripts/fuzz.sh $(FUZZ_DIR) $(FUZZ_SECONDS) $(FUZZ_TARGETS)
# `make mutate`: each tests/mutants/*.mut applied alone to a scratch copy, its suites run (with
# RATIOLAB_CFLAGS, as make test-run gives it), the
# score printed with and without the golden table (scripts/mutate.sh; MUTANTS=name... for some).
mutate: deps-quiet
	@$(INNER) $(BIN) $(TEST_BIN) $(PROGS)
	@RATIOLAB_CFLAGS='$(CFLAGS)' MUTATE_JOBS=2 MUTATE_LONG=$(or $(MUTATE_LONG),1) scripts/mutate.sh $(MUTANTS)
.PHONY: mutate

# `make ds-oracle`: real DeepSpeed (pinned venvs under build-ds/, reused) on the CPU accelerator,
# the matrix of scripts/ds-oracle.sh, validate --probe on every cell, the observations recorded
# into tests/deepspeed/observed/ (which `make test` checks without any Python).
# DeepSpeed 0.14's CPU Adam asks numactl for the NUMA layout (deepspeed/utils/numa.py).
# build/ratiolab is built by the script while pip makes the venvs (DS_ORACLE_BUILD).
ds-oracle: deps-quiet
	@scripts/deps.sh --quiet numactl
	@DS_ORACLE_BUILD="$(INNER) -j$(JOBS) $(BIN)" scripts/ds-oracle.sh
	@scripts/ds-parity.sh
.PHONY: ds-oracle

# `make ds-parity`: only the config-parity stage: the corpus given to each recorded release's config
# classes (no GPU, no JIT), re-recording tests/deepspeed/parity/observed-*.tsv.
ds-parity:
	@scripts/ds-parity.sh
.PHONY: ds-parity

# ---- demo, bench, install -----------------------------------------------------------------------
demo: deps-quiet
	@$(INNER) $(BIN)
	@scripts/demo.sh $(BIN)

# Figure 4 of the demo: the executor against the simulator (minutes: real steps on 2 MPI ranks).
demo-validate: deps-quiet
	@$(INNER) $(BIN)
	@scripts/demo-validate.sh $(BIN)
.PHONY: demo-validate

# The README's figures (docs/figures/*.png), drawn as make demo draws them.
figures: deps-quiet
	@$(INNER) $(BIN)
	@scripts/demo.sh --figures docs/figures $(BIN)
	@rm -rf docs/figures/*.json docs/figures/validate
	@ls docs/figures/*.png
.PHONY: figures

bench: deps-quiet
	@$(INNER) bench-run
bench-run: $(BIN) $(BENCHES)
	@for b in $(BENCHES); do echo "== $$b =="; RATIOLAB_SRC=$(CURDIR) $$b || exit 1; done
.PHONY: bench-run

# The man page and the bash completion are generated from the --help texts of the built binary
# (scripts/gen-docs.sh), never written by hand.
DOCS := $(BUILD)/ratiolab.1 $(BUILD)/ratiolab.bash-completion
$(BUILD)/ratiolab.1: $(BIN) scripts/gen-docs.sh
	scripts/gen-docs.sh man $(BIN) > $@.tmp && mv $@.tmp $@
$(BUILD)/ratiolab.bash-completion: $(BIN) scripts/gen-docs.sh
	scripts/gen-docs.sh completion $(BIN) > $@.tmp && mv $@.tmp $@
docs: deps-quiet
	@$(INNER) $(DOCS)
.PHONY: docs uninstall

MAN_DIR := $(DESTDIR)$(PREFIX)/share/man/man1
COMPLETION_DIR := $(DESTDIR)$(PREFIX)/share/bash-completion/completions
install: all docs
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/ratiolab $(MAN_DIR) $(COMPLETION_DIR)
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/ratiolab
	install -m 644 $(BUILD)/ratiolab.1 $(MAN_DIR)/ratiolab.1
	install -m 644 $(BUILD)/ratiolab.bash-completion $(COMPLETION_DIR)/ratiolab
	cp -r catalog $(DESTDIR)$(PREFIX)/share/ratiolab/
	if [ -d plots/gnuplot ]; then cp -r plots/gnuplot $(DESTDIR)$(PREFIX)/share/ratiolab/; fi
	install -d $(DESTDIR)$(PREFIX)/share/ratiolab/probe
	install -m 644 probe/ratiolab_probe.py $(DESTDIR)$(PREFIX)/share/ratiolab/probe/ratiolab_probe.py

# Removes what install put there, then the folders under PREFIX it may have made, each only when
# left empty (PREFIX itself stays).
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/ratiolab $(MAN_DIR)/ratiolab.1 $(COMPLETION_DIR)/ratiolab
	rm -rf $(DESTDIR)$(PREFIX)/share/ratiolab
	for d in $(MAN_DIR) $(dir $(MAN_DIR)) $(COMPLETION_DIR) $(dir $(COMPLETION_DIR)) \
	         $(DESTDIR)$(PREFIX)/share $(DESTDIR)$(PREFIX)/bin; do rmdir $$d 2>/dev/null || true; done

clean:
	rm -rf build build-san build-fuzz
