# spoa-breaker - a backpressure-aware circuit breaker for HAProxy (SPOE agent)
#
#   make                 build build/spoa-breaker
#   make check           install missing packages, then unit tests, the layer check, a fuzz run,
#                        end-to-end tests, and the packaging (man page, install, unit, .deb, image)
#   make check-layers    the pure core (PURE_SRCS) does no I/O, reads no clock, logs nothing;
#                        no header include cycle; every folder includes only floors below it;
#                        no two source files call each other
#   make demo            install the missing packages it needs (fewer than check's), then
#                        HAProxy + agent + demo workers on loopback
#   make deps            install the packages make check needs (deps-demo: make demo's)
#   make sanitize        the same tests on an ASan+UBSan build (build-asan/)
#   make fuzz            libFuzzer targets (frame, Runtime API replies, agent-check,
#                        configuration, state snapshot), FUZZ_SECONDS each
#   make bench           install missing packages, then benchmarks on loopback that print
#                        tables (figures, never pass/fail); BENCH_QUICK=1 for a short run
#   make soak            HAProxy, the agent and workers under traffic and a seeded random
#                        schedule of faults, invariants checked (SOAK_SECONDS=600, SOAK_SEED,
#                        SOAK_BUILD=build or build-asan; docs/soak.md)
#   make sim             the agent's real core and link in a simulated HAProxy and fleet: seeded
#                        schedules, invariants at every step, a failure shrunk to a replayable
#                        case (SIM_SEED, SIM_SCHEDULES, SIM_SECONDS of CPU, SIM_LENGTH; docs/testing.md)
#   make bench-closed-loop  install missing packages, then the stalled rule under closed-loop
#                        clients over many seeds, against the best its bound allows (no HAProxy)
#   make bench-fleet     install missing packages, then a simulated fleet behind HAProxy: client
#                        success, errors, latency, time out of rotation, with and without the agent
#   make man             the manual page, build/spoa-breaker.8 (scdoc)
#   make install         PREFIX=/usr/local DESTDIR= sysconfdir=: the Debian package's layout
#   make uninstall       the same variables; an edited configuration file stays

VERSION    := 0.1.0
# The git revision --version names: git describe's when built from git
# (the Debian package and the container image pass it in, as they build
# from a copy); none otherwise.
REVISION   ?= $(shell git describe --always --dirty 2>/dev/null)
PREFIX     ?= /usr/local
DESTDIR    ?=
sbindir    ?= $(PREFIX)/sbin
datadir    ?= $(PREFIX)/share
mandir     ?= $(datadir)/man
docdir     ?= $(datadir)/doc/spoa-breaker
# The system prefix keeps its configuration in /etc and its units where
# Debian 12 has them; any other prefix keeps both under itself (systemd
# reads /usr/local/lib/systemd/system too).
sysconfdir ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
unitdir    ?= $(if $(filter /usr,$(PREFIX)),/lib/systemd/system,$(PREFIX)/lib/systemd/system)
BUILD      ?= build
CC         ?= cc
FUZZ_CC    ?= clang
FUZZ_SECONDS ?= 15

WARNINGS   := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
              -Wpointer-arith -Wformat=2 -Wno-unused-parameter
CFLAGS     ?= -O2 -g
CPPFLAGS   += -Iinclude -DSPOA_VERSION=\"$(VERSION)\" -DSPOA_REVISION=\"$(REVISION)\" -D_GNU_SOURCE
# Hardening, as Debian builds its packages: stack protector, FORTIFY (which
# needs optimisation, and is left to CPPFLAGS that already set it), PIE and
# full RELRO. Not in sanitizer builds (CFLAGS or LDFLAGS with -fsanitize):
# FORTIFY's checked functions would hide accesses from ASan.
ifeq ($(findstring -fsanitize,$(CFLAGS) $(LDFLAGS)),)
HARDEN_CFLAGS  := -fstack-protector-strong -fPIE
HARDEN_LDFLAGS := -pie -Wl,-z,relro -Wl,-z,now
ifneq ($(filter -O -O1 -O2 -O3 -Os -Og -Ofast,$(CFLAGS)),)
ifeq ($(findstring _FORTIFY_SOURCE,$(CPPFLAGS) $(CFLAGS)),)
HARDEN_CFLAGS  += -D_FORTIFY_SOURCE=2
endif
endif
endif
ALL_CFLAGS := -std=c11 $(WARNINGS) $(HARDEN_CFLAGS) $(CFLAGS)
ALL_LDFLAGS := $(HARDEN_LDFLAGS) $(LDFLAGS)

# libev ships no pkg-config file on Debian; the others do.
#
# pkg-config is asked on first use, not when make reads this file: on a
# bare machine the libraries (and pkg-config) come with the deps step, and
# a value read before it would be empty for the whole run -- the link then
# fails with every library symbol undefined. `VAR = $(eval VAR := ...)$(VAR)`
# runs the command the first time VAR is expanded and keeps its answer.
# (The targets that install packages also build in a second make, which
# reads this file after the deps step: see demo.)
PKGS       := inih libmicrohttpd msgpack openssl
DEP_CFLAGS  = $(eval DEP_CFLAGS := $(call pkg_config,--cflags,$(PKGS)))$(DEP_CFLAGS)
DEP_LIBS    = $(eval DEP_LIBS := $(call pkg_config,--libs,$(PKGS)) -lev -lm -pthread)$(DEP_LIBS)
TEST_LIBS   = $(eval TEST_LIBS := $(call pkg_config,--libs,cmocka))$(TEST_LIBS)
# pkg_config FLAGS,PACKAGES: its answer, or a stop that says what to run.
pkg_config  = $(if $(shell pkg-config --exists $(2) 2>/dev/null && echo yes),$(shell pkg-config $(1) $(2)),\
              $(error pkg-config finds no $(2): `make deps` installs what make needs))

# Every source but main.c goes into a static library the tests link against.
LIB_SRCS   := $(wildcard spoa/*/*.c)
# The pure core: no I/O, no clock, no logging (make check-layers proves it
# from the objects' undefined symbols). Everything else is an edge.
PURE_SRCS  := $(wildcard spoa/core/*.c) \
              spoa/breakers/publish.c spoa/breakers/counters.c \
              spoa/spop/codec.c spoa/spop/hello.c spoa/spop/dispatch.c spoa/spop/observe.c \
              spoa/hapi/cmd.c spoa/hapi/text.c spoa/hapi/stat.c spoa/hapi/servers_state.c spoa/hapi/info.c spoa/hapi/section_names.c \
              spoa/records/map_file.c spoa/records/haproxy_record.c spoa/records/owner_map.c spoa/records/retry_map.c spoa/records/watched_map.c spoa/records/verdicts.c \
              spoa/link/faults.c spoa/link/enforce_plan.c spoa/link/ejection.c spoa/link/ack_hold.c spoa/link/agent_check_parse.c spoa/link/wiring.c spoa/link/endpoints.c spoa/link/steady_support.c spoa/link/capacity.c \
              spoa/admin/metrics.c spoa/admin/metrics_servers.c spoa/admin/metrics_text.c spoa/admin/state_json.c \
              spoa/state/snapshot_codec.c spoa/config/values.c spoa/daemon/control_parse.c \
              spoa/util/strbuf.c spoa/util/errmsg.c spoa/util/names.c spoa/util/sockaddr.c \
              spoa/util/histogram.c spoa/util/cidr.c spoa/util/log_escape.c spoa/util/index_list.c
PURE_OBJS  := $(PURE_SRCS:spoa/%.c=$(BUILD)/obj/%.o)
LIB_OBJS   := $(LIB_SRCS:spoa/%.c=$(BUILD)/obj/%.o)
HEADERS    := $(wildcard include/*/*.h)
UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
UNIT_BINS  := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
BIN        := $(BUILD)/spoa-breaker
MAN        := $(BUILD)/spoa-breaker.8

.PHONY: all check check-layers unit e2e fuzz sanitize demo deps deps-demo deps-bench bench bench-fleet bench-tools bench-closed-loop soak sim man install uninstall clean FORCE

all: $(BIN)

$(BUILD)/obj/%.o: spoa/%.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) $(DEP_CFLAGS) -c -o $@ $<

# config.o prints the revision: rebuilt when it changes, and only then (the
# stamp's date moves only when its content does).
$(BUILD)/obj/config/config.o: $(BUILD)/revision
$(BUILD)/revision: FORCE
	@mkdir -p $(@D)
	@echo '$(REVISION)' | cmp -s - $@ || echo '$(REVISION)' >$@

$(BUILD)/libspoa.a: $(LIB_OBJS)
	rm -f $@ && ar rcs $@ $^

$(BIN): spoa/main.c $(BUILD)/libspoa.a
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) $(DEP_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(BUILD)/libspoa.a $(DEP_LIBS)

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libspoa.a | $(BUILD)/tests
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) $(DEP_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(BUILD)/libspoa.a $(DEP_LIBS) $(TEST_LIBS)

$(BUILD)/tests:
	mkdir -p $@

# The pure core stays pure, the headers include each other without a
# cycle, the folders stand on their floors (docs/design.md), no two files
# call each other; the self-test shows each check can fail.
check-layers: $(PURE_OBJS) $(LIB_OBJS)
	@tests/check-layers.sh $(PURE_OBJS)
	@tests/check-header-cycles.sh include
	@tests/check-floors.sh
	@tests/check-file-circles.sh $(LIB_OBJS)
	@tests/check-layers-selftest.sh $(CC)

# Installs only what is missing; a no-op on a machine that has it all.
# deps: what make check needs; deps-demo: what make demo needs, fewer.
#
# A target that installs packages does it as a prerequisite and builds in
# its recipe, through a second make: that one reads this file once the
# packages are there, and nothing of the build can run beside the deps
# step, even under make -j.
deps:
	@packaging/install-deps.sh all
deps-demo:
	@packaging/install-deps.sh demo

unit: $(UNIT_BINS)
	@tests/run-unit.sh $(UNIT_BINS)

e2e: $(BIN)
	SPOA_BIN=$(abspath $(BIN)) bats --print-output-on-failure tests/e2e

# Unit, fuzz smoke, end-to-end on every HAProxy available; ends "N passed, N failed".
# (tests/check.sh builds through make runs of its own.)
check: deps
	@tests/check.sh

# The sanitizer build: same sources, same tests, its own build directory.
sanitize: deps
	@$(MAKE) --no-print-directory BUILD=build-asan CC=clang \
		CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
		LDFLAGS="-fsanitize=address,undefined" all unit e2e

# The soak (tests/soak/soak.sh, docs/soak.md): not part of check's
# end-to-end runs; check runs a short one of its own on build-asan.
SOAK_BUILD ?= build
soak:
ifeq ($(SOAK_BUILD),build-asan)
	@$(MAKE) --no-print-directory BUILD=build-asan CC=clang \
		CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
		LDFLAGS="-fsanitize=address,undefined" all
else
	@$(MAKE) --no-print-directory BUILD=$(SOAK_BUILD) all
endif
	@SOAK_BUILD=$(SOAK_BUILD) tests/soak/soak.sh

# The simulation (tests/sim/, docs/testing.md): the agent's real core and
# link in a simulated world, seeded schedules, invariants at every step.
# Linked without libev and util/clock.o: tests/sim/sim_loop.c is the
# loop and the clock they run on. SIM_SEED, SIM_SCHEDULES, SIM_SECONDS
# (the CPU budget), SIM_LENGTH, SIM_CASE and SIM_BREAK reach it from
# make's command line; the cases kept in tests/sim/cases/ (and the known
# defects', tests/sim/known/) replay first.
SIM_SRCS   := $(wildcard tests/sim/*.c)
SIM_BIN    := $(BUILD)/sim
SIM_LIBS    = $(eval SIM_LIBS := $(call pkg_config,--libs,$(PKGS)) -lm -pthread)$(SIM_LIBS)

$(SIM_BIN): $(SIM_SRCS) $(wildcard tests/sim/*.h) $(BUILD)/libspoa.a
	$(CC) $(CPPFLAGS) -Itests/sim $(ALL_CFLAGS) $(DEP_CFLAGS) $(ALL_LDFLAGS) -o $@ $(SIM_SRCS) \
		$(BUILD)/libspoa.a $(SIM_LIBS)

sim: $(SIM_BIN)
	@$(SIM_BIN) --cases tests/sim/cases
	@$(SIM_BIN) --cases tests/sim/known
	@$(SIM_BIN)

# libFuzzer targets (tests/fuzz/fuzz_NAME.c), each with the sources it
# needs and its seeds in tests/fuzz/corpus_NAME (the frame's: corpus/).
FUZZ_TARGETS := frame runtime_api agent_check config snapshot
FUZZ_FLAGS   := $(CPPFLAGS) -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined
FUZZ_SRCS_frame       := spoa/spop/codec.c spoa/spop/hello.c
FUZZ_SRCS_runtime_api := spoa/hapi/text.c spoa/hapi/stat.c spoa/hapi/servers_state.c spoa/hapi/info.c
FUZZ_SRCS_agent_check := spoa/link/agent_check_parse.c spoa/util/names.c
FUZZ_SRCS_config      := $(LIB_SRCS)
FUZZ_LIBS_config       = $(DEP_LIBS)
FUZZ_SRCS_snapshot    := spoa/state/snapshot_codec.c spoa/util/names.c spoa/util/errmsg.c
FUZZ_LIBS_snapshot     = $(eval FUZZ_LIBS_snapshot := $(call pkg_config,--libs,msgpack))$(FUZZ_LIBS_snapshot)
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

demo: deps-demo
	@$(MAKE) --no-print-directory all
	haproxy/demo.sh

# The benchmark tools (bench/): a SPOP load generator and an ack-only agent,
# with their own SPOP encoder, so the agent's codec is not measuring itself.
BENCH_COMMON := bench/spop_wire.c bench/latency.c
BENCH_BINS   := $(BUILD)/bench/spop_load $(BUILD)/bench/ack_agent

$(BUILD)/bench/%: bench/%.c $(BENCH_COMMON) $(wildcard bench/*.h)
	@mkdir -p $(@D)
	$(CC) -D_GNU_SOURCE $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(BENCH_COMMON)

bench-tools: $(BENCH_BINS)

# The stalled rule under closed-loop clients over many seeds, against the
# best its bound allows (bench/closed_loop_spread.c): the agent's pure
# core, no HAProxy. Figures only.
$(BUILD)/bench/closed_loop_spread: bench/closed_loop_spread.c tests/unit/closed_loop_scene.h tests/unit/stall_looks.h $(BUILD)/libspoa.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itests/unit $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(BUILD)/libspoa.a $(DEP_LIBS)

bench-closed-loop: deps-bench
	@$(MAKE) --no-print-directory $(BUILD)/bench/closed_loop_spread
	@$(BUILD)/bench/closed_loop_spread

# Installs its own packages (bench/install-deps.sh), then builds the agent
# and the tools. Not part of check: it prints figures, asserts none.
deps-bench:
	@bench/install-deps.sh

bench: deps-bench
	@$(MAKE) --no-print-directory all bench-tools
	@BUILD=$(BUILD) bench/run.sh

# The fleet scenario (bench/fleet.sh): a simulated fleet behind HAProxy,
# the same load through five setups, what the clients got. Figures only.
bench-fleet: deps-bench
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) bench/fleet.sh

man: $(MAN)

$(MAN): packaging/spoa-breaker.8.scd
	@mkdir -p $(@D)
	scdoc <$< >$@

# What the Debian package ships, where it ships it (debian/rules runs this
# with PREFIX=/usr). The example haproxy.cfg reads its maps and templates
# next to itself, and the SPOE file from sysconfdir: `haproxy -c -f
# $(datadir)/spoa-breaker/haproxy/haproxy.cfg` passes as installed. The
# steady-state SPOE file reads breaker-watched.map next to itself.
EXAMPLES   := $(datadir)/spoa-breaker/haproxy
CONF_FILES := packaging/spoa-breaker.ini:$(sysconfdir)/spoa-breaker/spoa-breaker.ini \
              haproxy/spoe-breaker.conf:$(sysconfdir)/haproxy/spoe-breaker.conf \
              haproxy/spoe-breaker-steady.conf:$(sysconfdir)/haproxy/spoe-breaker-steady.conf \
              haproxy/breaker-watched.map:$(sysconfdir)/haproxy/breaker-watched.map
DOCS       := README.md CHANGELOG.md LICENSE
DOCS_MD    := $(wildcard docs/*.md)

install: $(BIN) $(MAN)
	install -D -m 0755 $(BIN) $(DESTDIR)$(sbindir)/spoa-breaker
	install -D -m 0644 $(MAN) $(DESTDIR)$(mandir)/man8/spoa-breaker.8
	@# A configuration file that is there already may have been edited: it
	@# stays, and the shipped one goes next to it as FILE.new.
	@for pair in $(CONF_FILES); do \
		src=$${pair%%:*}; dst=$(DESTDIR)$${pair#*:}; \
		if [ -e "$$dst" ] && ! cmp -s "$$src" "$$dst"; then \
			echo "install: keeping $$dst; the shipped one is $$dst.new"; \
			install -m 0644 "$$src" "$$dst.new"; \
		else \
			echo "install -D -m 0644 $$src $$dst"; install -D -m 0644 "$$src" "$$dst"; \
		fi; \
	done
	install -d $(DESTDIR)$(EXAMPLES)/router-errors
	sed -e 's|/etc/haproxy/spoe-breaker.conf|$(sysconfdir)/haproxy/spoe-breaker.conf|' \
		-e 's|/etc/haproxy/spoe-breaker-steady.conf|$(sysconfdir)/haproxy/spoe-breaker-steady.conf|' \
		haproxy/haproxy.cfg >$(DESTDIR)$(EXAMPLES)/haproxy.cfg
	chmod 0644 $(DESTDIR)$(EXAMPLES)/haproxy.cfg
	install -m 0644 haproxy/router-errors.map haproxy/router-conditions.map \
		haproxy/breaker-owned.map haproxy/breaker-retry-at.map haproxy/breaker-watched.map \
		haproxy/breaker-peers.cfg $(DESTDIR)$(EXAMPLES)/
	install -m 0644 haproxy/router-errors/* $(DESTDIR)$(EXAMPLES)/router-errors/
	install -m 0755 haproxy/reload-haproxy.sh $(DESTDIR)$(EXAMPLES)/
	@# The multi-backend example's default paths name where it is installed.
	install -d $(DESTDIR)$(EXAMPLES)/examples/multi-backend
	@for f in haproxy/examples/multi-backend/*; do \
		echo "install $$f $(DESTDIR)$(EXAMPLES)/examples/multi-backend/"; \
		sed 's|/usr/share/spoa-breaker/haproxy|$(EXAMPLES)|g' "$$f" \
			>$(DESTDIR)$(EXAMPLES)/examples/multi-backend/$${f##*/} && \
		chmod 0644 $(DESTDIR)$(EXAMPLES)/examples/multi-backend/$${f##*/} || exit 1; \
	done
	install -D -m 0644 packaging/grafana-dashboard.json $(DESTDIR)$(datadir)/spoa-breaker/grafana-dashboard.json
	install -d $(DESTDIR)$(unitdir)
	sed -e 's|/usr/sbin/spoa-breaker|$(sbindir)/spoa-breaker|g' \
		-e 's|/etc/spoa-breaker/|$(sysconfdir)/spoa-breaker/|g' \
		packaging/spoa-breaker.service >$(DESTDIR)$(unitdir)/spoa-breaker.service
	chmod 0644 $(DESTDIR)$(unitdir)/spoa-breaker.service
	install -D -m 0644 -t $(DESTDIR)$(docdir) $(DOCS)
	@# README links docs/FILE.md: the same layout keeps its links whole.
	install -D -m 0644 -t $(DESTDIR)$(docdir)/docs $(DOCS_MD)

# Removes what install put there; a configuration file edited since is kept.
uninstall:
	rm -f $(DESTDIR)$(sbindir)/spoa-breaker $(DESTDIR)$(mandir)/man8/spoa-breaker.8 \
		$(DESTDIR)$(unitdir)/spoa-breaker.service
	rm -rf $(DESTDIR)$(datadir)/spoa-breaker $(DESTDIR)$(docdir)
	@for pair in $(CONF_FILES); do \
		src=$${pair%%:*}; dst=$(DESTDIR)$${pair#*:}; \
		rm -f "$$dst.new"; \
		if cmp -s "$$src" "$$dst"; then echo "rm -f $$dst"; rm -f "$$dst"; \
		elif [ -e "$$dst" ]; then echo "uninstall: keeping $$dst: edited since"; fi; \
	done
	@# Directories only if empty: HAProxy's own stays.
	@rmdir $(DESTDIR)$(sysconfdir)/spoa-breaker $(DESTDIR)$(sysconfdir)/haproxy 2>/dev/null || true

clean:
	rm -rf build build-asan
