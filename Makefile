# spoa-breaker - a backpressure-aware circuit breaker for HAProxy (SPOE agent)
#
#   make                 build build/spoa-breaker
#   make check           install missing packages, then unit tests, the layer check, a fuzz run,
#                        end-to-end tests
#   make check-layers    the pure core (PURE_SRCS) does no I/O, reads no clock, logs nothing
#   make demo            install missing packages, then HAProxy + agent + demo workers on loopback
#   make sanitize        the same tests on an ASan+UBSan build (build-asan/)
#   make fuzz            libFuzzer targets (frame, Runtime API replies, agent-check,
#                        configuration, state snapshot), FUZZ_SECONDS each
#   make install         PREFIX=/usr/local DESTDIR=

VERSION    := 0.1.0
PREFIX     ?= /usr/local
DESTDIR    ?=
BUILD      ?= build
CC         ?= cc
FUZZ_CC    ?= clang
FUZZ_SECONDS ?= 15

WARNINGS   := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
              -Wpointer-arith -Wformat=2 -Wno-unused-parameter
CFLAGS     ?= -O2 -g
CPPFLAGS   += -Iinclude -DSPOA_VERSION=\"$(VERSION)\" -D_GNU_SOURCE
ALL_CFLAGS := -std=c11 $(WARNINGS) $(CFLAGS)

# libev ships no pkg-config file on Debian; the others do.
PKGS       := inih libmicrohttpd msgpack
DEP_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
DEP_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lev -lm -pthread
TEST_LIBS  := $(shell pkg-config --libs cmocka 2>/dev/null)

# Every source but main.c goes into a static library the tests link against.
LIB_SRCS   := $(wildcard spoa/*/*.c)
# The pure core: no I/O, no clock, no logging (make check-layers proves it
# from the objects' undefined symbols). Everything else is an edge.
PURE_SRCS  := $(wildcard spoa/core/*.c) \
              spoa/spop/codec.c spoa/spop/hello.c spoa/spop/dispatch.c spoa/spop/observe.c \
              spoa/link/runtime_api_cmd.c spoa/link/runtime_api_parse.c spoa/link/faults.c \
              spoa/link/enforce_plan.c spoa/link/owner_map.c spoa/link/agent_check_parse.c \
              spoa/admin/metrics.c spoa/admin/state_json.c spoa/admin/counters.c \
              spoa/state/snapshot_codec.c \
              spoa/util/strbuf.c spoa/util/errmsg.c spoa/util/names.c spoa/util/sockaddr.c \
              spoa/util/histogram.c
PURE_OBJS  := $(PURE_SRCS:spoa/%.c=$(BUILD)/obj/%.o)
LIB_OBJS   := $(LIB_SRCS:spoa/%.c=$(BUILD)/obj/%.o)
HEADERS    := $(wildcard include/*/*.h)
UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
UNIT_BINS  := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
BIN        := $(BUILD)/spoa-breaker

.PHONY: all check check-layers unit e2e fuzz sanitize demo deps install clean

all: $(BIN)

$(BUILD)/obj/%.o: spoa/%.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) $(DEP_CFLAGS) -c -o $@ $<

$(BUILD)/libspoa.a: $(LIB_OBJS)
	rm -f $@ && ar rcs $@ $^

$(BIN): spoa/main.c $(BUILD)/libspoa.a
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) $(DEP_CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libspoa.a $(DEP_LIBS)

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libspoa.a | $(BUILD)/tests
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) $(DEP_CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libspoa.a $(DEP_LIBS) $(TEST_LIBS)

$(BUILD)/tests:
	mkdir -p $@

# The pure core stays pure; the self-test shows the check can fail.
check-layers: $(PURE_OBJS)
	@tests/check-layers.sh $(PURE_OBJS)
	@tests/check-layers-selftest.sh $(CC)

# Installs only what is missing; a no-op on a machine that has it all.
deps:
	@packaging/install-deps.sh

unit: $(UNIT_BINS)
	@tests/run-unit.sh $(UNIT_BINS)

e2e: $(BIN)
	SPOA_BIN=$(abspath $(BIN)) bats --print-output-on-failure tests/e2e

# Unit, fuzz smoke, end-to-end on every HAProxy available; ends "N passed, N failed".
check: deps
	@tests/check.sh

# The sanitizer build: same sources, same tests, its own build directory.
sanitize: deps
	@$(MAKE) --no-print-directory BUILD=build-asan CC=clang \
		CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
		LDFLAGS="-fsanitize=address,undefined" all unit e2e

# libFuzzer targets (tests/fuzz/fuzz_NAME.c), each with the sources it
# needs and its seeds in tests/fuzz/corpus_NAME (the frame's: corpus/).
FUZZ_TARGETS := frame runtime_api agent_check config snapshot
FUZZ_FLAGS   := $(CPPFLAGS) -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined
FUZZ_SRCS_frame       := spoa/spop/codec.c spoa/spop/hello.c
FUZZ_SRCS_runtime_api := spoa/link/runtime_api_parse.c
FUZZ_SRCS_agent_check := spoa/link/agent_check_parse.c spoa/util/names.c
FUZZ_SRCS_config      := $(LIB_SRCS)
FUZZ_LIBS_config      := $(DEP_LIBS)
FUZZ_SRCS_snapshot    := spoa/state/snapshot_codec.c spoa/util/names.c spoa/util/errmsg.c
FUZZ_LIBS_snapshot    := $(shell pkg-config --libs msgpack 2>/dev/null)
FUZZ_CORPUS_frame       := tests/fuzz/corpus
FUZZ_CORPUS_runtime_api := tests/fuzz/corpus_runtime_api
FUZZ_CORPUS_agent_check := tests/fuzz/corpus_agent_check
FUZZ_CORPUS_config      := tests/fuzz/corpus_config
FUZZ_CORPUS_snapshot    := tests/fuzz/corpus_snapshot
FUZZ_MAX_LEN_frame       := 20000
FUZZ_MAX_LEN_runtime_api := 16384
FUZZ_MAX_LEN_agent_check := 512
FUZZ_MAX_LEN_config      := 8192
FUZZ_MAX_LEN_snapshot    := 4096
FUZZ_BINS := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%)

.SECONDEXPANSION:
$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $$(FUZZ_SRCS_$$*) $(HEADERS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) $(DEP_CFLAGS) -o $@ tests/fuzz/fuzz_$*.c $(FUZZ_SRCS_$*) $(FUZZ_LIBS_$*)

# Each target FUZZ_SECONDS in turn; new inputs go to build/fuzz/corpus-NAME.
fuzz: $(FUZZ_BINS)
	$(foreach t,$(FUZZ_TARGETS),mkdir -p $(BUILD)/fuzz/corpus-$(t) && \
		$(BUILD)/fuzz/fuzz_$(t) -max_total_time=$(FUZZ_SECONDS) -max_len=$(FUZZ_MAX_LEN_$(t)) \
		-print_final_stats=1 $(BUILD)/fuzz/corpus-$(t) $(FUZZ_CORPUS_$(t)) &&) true

demo: deps all
	haproxy/demo.sh

install: $(BIN)
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/spoa-breaker
	install -D -m 0644 haproxy/spoe-breaker.conf $(DESTDIR)$(PREFIX)/share/spoa-breaker/spoe-breaker.conf
	install -D -m 0644 haproxy/haproxy.cfg $(DESTDIR)$(PREFIX)/share/spoa-breaker/haproxy.cfg
	install -m 0644 haproxy/router-errors.map haproxy/router-conditions.map haproxy/breaker-owned.map $(DESTDIR)$(PREFIX)/share/spoa-breaker/
	install -D -m 0644 -t $(DESTDIR)$(PREFIX)/share/spoa-breaker/router-errors haproxy/router-errors/*
	install -m 0755 haproxy/reload-haproxy.sh $(DESTDIR)$(PREFIX)/share/spoa-breaker/
	install -D -m 0644 packaging/spoa-breaker.ini $(DESTDIR)$(PREFIX)/share/spoa-breaker/spoa-breaker.ini

clean:
	rm -rf build build-asan
