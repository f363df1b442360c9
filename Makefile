# skewgate — build, test and run.
#   make              optimised build in build/
#   make SAN=1 ...    AddressSanitizer + UBSan build in build-san/
#   make TSAN=1 ...   ThreadSanitizer build in build-tsan/
#   make test         unit (Criterion) + integration tests (INTEGRATION_JOBS=N: N
#                     integration tests at a time, default nproc + 1; tests/integration/README.md)
#   make run          the local demo stack (see README)
#   make fuzz         every libFuzzer target for FUZZ_SECONDS (default 20) each
#   make e2e-mcs      tests/e2e_mcs against the real MCS (the prebuilt 4.13 and 4.22 in MCS_DIR,
#                     or MCO_SRC=DIR MCO_RELEASE=4.N: one built from a machine-config-operator tree)
#   make image        the container image, without a registry: build/image/skewgate.oci.tar

PKGS := libevent libevent_openssl libevent_pthreads openssl jansson yaml-0.1 libnftables

ifeq ($(SAN),1)
export SKEWGATE_SAN := 1
BUILD ?= build-san
OPT   := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
else ifeq ($(TSAN),1)
BUILD ?= build-tsan
OPT   := -O1 -g -fsanitize=thread
else
BUILD ?= build
OPT   := -O2 -g
endif

CC      ?= cc
WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
# Lazily expanded: pkg-config is only asked once the packages are installed.
CFLAGS   = -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) -Iinclude $(shell pkg-config --cflags $(PKGS))
LDLIBS   = $(shell pkg-config --libs $(PKGS)) -lpthread
TESTLIBS = $(shell pkg-config --libs criterion)

# Folders by layer (docs/internals.md); include/ mirrors src/.
SRC      := $(shell find src -name '*.c' | sort)
LIB_SRC  := $(filter-out src/cli/main.c,$(SRC))
LIB_OBJ  := $(LIB_SRC:src/%.c=$(BUILD)/obj/%.o)
HEADERS  := $(shell find include src -name '*.h')
UNIT_SRC := $(wildcard tests/unit/*.c)
UNIT_OBJ := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/unit/%.o)

# skewgate --version: the release, and the commit when the build can ask
# git (a tree without .git, such as the Containerfile's build stage, is
# given COMMIT= or has none). The stamp changes only when these do, so
# main.o is rebuilt then and only then.
VERSION  := 0.1.0
COMMIT   ?= $(shell git -C $(CURDIR) describe --always --dirty --abbrev=12 --exclude='*' 2>/dev/null)
VERSION_STAMP := $(BUILD)/version.stamp

BIN      := $(BUILD)/skewgate
LIB      := $(BUILD)/libskewgate.a
UNIT_BIN := $(BUILD)/unit-tests

.PHONY: all deps test unit integration run check-conf clean bench bench-smoke bench-held bench-pace bench-pace-smoke image image-rootfs fuzz abuse soak e2e-mcs
all: $(BIN)

deps:
	@./tools/deps.sh

$(BUILD)/obj/%.o: src/%.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/unit/%.o: tests/unit/%.c $(HEADERS) | $(BUILD)/unit
	$(CC) $(CFLAGS) -Wno-missing-prototypes -DSRCDIR='"$(CURDIR)"' -MMD -MP -c -o $@ $<

$(LIB): $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

.PHONY: FORCE
$(VERSION_STAMP): FORCE
	@mkdir -p $(dir $@)
	@echo '$(VERSION) $(COMMIT)' >$@.new
	@cmp -s $@.new $@ && rm -f $@.new || mv -f $@.new $@

$(BUILD)/obj/cli/main.o: $(VERSION_STAMP)
$(BUILD)/obj/cli/main.o: CFLAGS += -DSKEWGATE_RELEASE='"$(VERSION)"' -DSKEWGATE_COMMIT='"$(COMMIT)"'

$(BIN): $(BUILD)/obj/cli/main.o $(LIB)
	$(CC) $(OPT) -o $@ $^ $(LDLIBS)

$(UNIT_BIN): $(UNIT_OBJ) $(LIB)
	$(CC) $(OPT) -o $@ $^ $(TESTLIBS) $(LDLIBS)

$(BUILD)/unit:
	mkdir -p $@

unit: deps $(UNIT_BIN)
	./tools/run-unit $(UNIT_BIN) --jobs 2

integration: deps $(BIN)
	SKEWGATE_BIN=$(CURDIR)/$(BIN) ./tests/integration/run

# make test builds on every CPU unless make was given its own -j.
TEST_BUILD_JOBS = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(shell nproc))

ifeq ($(TSAN),1)
# Criterion cannot set up its arena under ThreadSanitizer, and the threads
# live in the gate: the TSan pass is the integration suite.
test: deps
	$(MAKE) --no-print-directory $(TEST_BUILD_JOBS) $(BIN)
	SKEWGATE_SAN=1 SKEWGATE_BIN=$(CURDIR)/$(BIN) ./tests/integration/run
else
test: deps
	./tools/check-layers
	$(MAKE) --no-print-directory $(TEST_BUILD_JOBS) $(BIN) $(UNIT_BIN)
	./tools/run-unit $(UNIT_BIN) --jobs 2
	SKEWGATE_BIN=$(CURDIR)/$(BIN) ./tests/integration/run
endif

check-conf: $(BIN)
	$(BIN) check -c conf/skewgate.yaml

run: deps
	$(MAKE) --no-print-directory $(BIN)
	SKEWGATE_BIN=$(CURDIR)/$(BIN) ./conf/demo/run

# The container image (deploy/Containerfile's, built from Debian's packages
# with debootstrap and buildah: tools/image.sh). image-rootfs stops before
# buildah: build/image/rootfs, for chroot.
image: deps
	$(MAKE) --no-print-directory $(BIN)
	IMAGE_BIN=$(CURDIR)/$(BIN) ./tools/image.sh image

image-rootfs: deps
	$(MAKE) --no-print-directory $(BIN)
	IMAGE_BIN=$(CURDIR)/$(BIN) ./tools/image.sh rootfs

# Benchmarks (issue 5): skewgate vs nginx vs HAProxy vs a floor; bench/RESULTS.md.
bench:
	./bench/run

bench-smoke:
	./bench/run --smoke
	./bench/held_pace/run --smoke

# GET /held's cost with 4,096 nodes in the pacing line (issue 31), in
# process and against a live gate: bench/held_pace/run's docstring.
bench-held:
	./bench/held_pace/run --live

# A scale-up of 500 nodes with pacing off and on (issue 26), against the
# fake API: bench/pace/README.md. The smoke: 150 nodes at time scale 30, ~30 s.
bench-pace: $(BIN)
	./bench/pace/run

bench-pace-smoke: $(BIN)
	./bench/pace/run --smoke

# The real-MCS tier (issues 19, 25, 32): tests/e2e_mcs (the differential,
# Ignition end to end, 200 concurrent fetches) against the real Machine
# Config Server of every release in MCS_RELEASES, one after the other, each
# with the gates' upstream.mcs_release set to it. By default those are the
# prebuilt MCSs in MCS_DIR (../shared/mcs/machine-config-server-4.N.gz, its
# README says how they were built), which the tier unpacks into build/mcs/
# and checks against MCS_SHA256_4.N; one absent skips in one line, or fails
# when CI=true. MCO_SRC=DIR MCO_RELEASE=4.N builds cmd/machine-config-server
# from a machine-config-operator tree instead (tools/build-mcs.sh), to test
# another release. ONLY=t_name runs one test. The checkout sits beside
# shared/; a clone elsewhere names the directory.
MCS_DIR         ?= $(CURDIR)/../shared/mcs
MCS_RELEASES    ?= 4.13 4.22
MCS_SHA256_4.13 ?= 465fd6e8a6e323b2ffdc8b6dc552f06b86e1a5b1f5225aa58c3b28ae80e9e0b7
MCS_SHA256_4.22 ?= eb82278cbff99b66ed751d98e3d02b08fb3545c200ee0da9ab6af0e4f581b79c
MCS_OUT_DIR     := $(CURDIR)/$(BUILD)/mcs
e2e-mcs: deps $(BIN)
ifneq ($(strip $(MCO_SRC)),)
	@[ -n "$(MCO_RELEASE)" ] || { echo "e2e-mcs: MCO_SRC needs MCO_RELEASE=4.N (the tree's release)" >&2; exit 2; }
	./tools/build-mcs.sh "$(MCO_SRC)" $(MCS_OUT_DIR)/machine-config-server-src
	SKEWGATE_BIN=$(CURDIR)/$(BIN) MCS_GZ= MCS_BIN=$(MCS_OUT_DIR)/machine-config-server-src \
	  MCS_RELEASE=$(MCO_RELEASE) ./tests/e2e_mcs/run
else
	@rc=0; $(foreach r,$(MCS_RELEASES),\
	  SKEWGATE_BIN=$(CURDIR)/$(BIN) MCS_GZ="$(MCS_DIR)/machine-config-server-$(r).gz" \
	    MCS_SHA256=$(MCS_SHA256_$(r)) MCS_BIN=$(MCS_OUT_DIR)/machine-config-server-$(r) MCS_RELEASE=$(r) \
	    ./tests/e2e_mcs/run; one=$$?; [ $$one -eq 77 ] || [ $$one -eq 0 ] || rc=1;) \
	exit $$rc
endif

# libFuzzer + ASan + UBSan targets (tests/fuzz/run.sh); FUZZ_JOBS=2 runs two at once.
FUZZ_SECONDS ?= 20
fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) ./tests/fuzz/run.sh

# Issue 12 item 4's heavier runs (tests/abuse/load.sh: hold storm, 10,000
# idle TLS connections), and item 5's soak (tests/soak/run.sh): ASan+UBSan
# for SOAK_SECONDS, then the plain build under valgrind memcheck for
# SOAK_VALGRIND_SECONDS. Figures in tests/RELIABILITY.md.
abuse: deps
	$(MAKE) --no-print-directory $(BIN)
	SKEWGATE_BIN=$(CURDIR)/$(BIN) nice -n 10 bash ./tests/abuse/load.sh

SOAK_SECONDS ?= 900
SOAK_VALGRIND_SECONDS ?= 180
soak: deps
	$(MAKE) --no-print-directory SAN=1 build-san/skewgate
	$(MAKE) --no-print-directory build/skewgate
	SOAK_SECONDS=$(SOAK_SECONDS) SOAK_OUT=$(CURDIR)/build/soak/asan SKEWGATE_SAN=1 \
	  SKEWGATE_BIN=$(CURDIR)/build-san/skewgate nice -n 10 bash ./tests/soak/run.sh
	SOAK_SECONDS=$(SOAK_VALGRIND_SECONDS) SOAK_VALGRIND=1 SOAK_OUT=$(CURDIR)/build/soak/valgrind \
	  SKEWGATE_BIN=$(CURDIR)/build/skewgate nice -n 10 bash ./tests/soak/run.sh

clean:
	rm -rf build build-san build-tsan build-bench

# A unit test may compile a source file of its own (test_coalesce_storebuf.c).
-include $(LIB_OBJ:.o=.d) $(BUILD)/obj/cli/main.d $(UNIT_OBJ:.o=.d)
