# Quality gates, included by the Makefile. docs/hacking.md describes them.
#
#   make check                  check-format check-docs check-asan check-static (not the
#                               integration run, not fuzz)
#   make check-docs             relative links, anchors and file names in the Markdown
#                               files resolve (tests/lib/doclinks.py)
#   make check-asan             unit tests rebuilt in build-asan/ with ASan+UBSan, run; any
#                               sanitizer report fails
#   make check-static           check-bpf check-cppcheck check-tidy
#   make check-bpf              BPF objects compile with -Wall -Werror
#   make check-cppcheck         cppcheck over user/ (.cppcheck-suppressions)
#   make check-tidy             clang-tidy over user/*.c (.clang-tidy)
#   make check-integration-asan integration tests (default: test_proc.sh, test_hostile*.sh,
#                               test_client_auth.sh) on build-asan/
#                               (root; CHECK_INTEGRATION=<filter list> to choose)
#   make fuzz [FUZZ_SECONDS=30] each libFuzzer harness tests/fuzz/fuzz_*.c for N seconds
#   make fuzz-build             just build them (build-fuzz/)
#
# Sanitizer runs send every report to a file under $(SAN_LOG_DIR) and fail when one
# appears, so a report from a process whose exit status nobody checks (a daemon killed
# by a test's cleanup) still fails the run.

.PHONY: check check-docs check-asan check-static check-bpf check-cppcheck check-tidy \
	check-integration-asan fuzz fuzz-build

check: check-format check-docs check-asan check-static

# ---------------------------------------------------------------------------
# Documentation: every relative link (file and anchor) and every repository path or
# source file named as code in the Markdown files exists.

DOC_FILES = $(wildcard *.md docs/*.md docs/man/*.md tests/fuzz/*.md)
check-docs:
	$(call msg,DOCS,$(words $(DOC_FILES)) files)
	$(Q)python3 tests/lib/doclinks.py $(DOC_FILES)

# ---------------------------------------------------------------------------
# Sanitizers

# halt_on_error + abort_on_error: the first report kills the process (no "continue
# after error"), with SIGABRT so no caller can mistake it for an ordinary exit status.
# UBSan checks are built with -fno-sanitize-recover=all (Makefile), so they are fatal too.
# LeakSanitizer reports at exit and makes the exit status non-zero; suppressions only for
# leaks inside third-party libraries (tests/lsan.supp says which and why).
SAN_LOG_DIR   = $(CURDIR)/build-asan/san-logs
SAN_COMMON    = halt_on_error=1:abort_on_error=1:print_summary=1:disable_coredump=1
SAN_ENV       = ASAN_OPTIONS='$(SAN_COMMON):detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:log_path=$(SAN_LOG_DIR)/$(1)' \
		UBSAN_OPTIONS='$(SAN_COMMON):print_stacktrace=1:log_path=$(SAN_LOG_DIR)/$(1)' \
		LSAN_OPTIONS='suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0'

# `SANITIZE=1 make test` (and anything else run from make with SANITIZE=1) gets the same
# fatal-report settings on stderr, unless the caller set its own.
ifeq ($(SANITIZE),1)
export ASAN_OPTIONS  ?= $(SAN_COMMON):detect_leaks=1:strict_string_checks=1
export UBSAN_OPTIONS ?= $(SAN_COMMON):print_stacktrace=1
export LSAN_OPTIONS  ?= suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0
endif

# san_check NAME: fail, printing them, if any sanitizer report was written for NAME.
define san_check
	logs=$$(ls $(SAN_LOG_DIR)/$(1).* 2>/dev/null); \
	if [ -n "$$logs" ]; then \
		for l in $$logs; do echo "==== $$l"; cat "$$l"; done; \
		echo "check: sanitizer report(s) above ($(SAN_LOG_DIR)/$(1).*)"; exit 1; \
	fi
endef

check-asan:
	$(Q)$(MAKE) --no-print-directory SANITIZE=1 unit
	$(Q)rm -rf $(SAN_LOG_DIR)/unit.* && mkdir -p $(SAN_LOG_DIR)
	$(call msg,ASAN,unit tests)
	$(Q)rc=0; $(call SAN_ENV,unit) BUILD=build-asan tests/run.sh unit || rc=$$?; \
	$(call san_check,unit); exit $$rc

# Integration tests (tests/integration/test_<name>.sh) against build-asan/flatline and
# its helpers. Root only: without root tests/run.sh reports them skipped. The default is
# the foundation (process death) and the hostile-peer and client-authentication suites
# (the code that reads what attackers send): 11 s + 43 s + 32 s here;
# CHECK_INTEGRATION="proc agent peer" runs others.
CHECK_INTEGRATION ?= proc hostile hostile_limits client_auth
check-integration-asan:
	$(Q)$(MAKE) --no-print-directory SANITIZE=1 integration
	$(Q)rm -rf $(SAN_LOG_DIR)/integration.* && mkdir -p $(SAN_LOG_DIR)
	$(Q)rc=0; for t in $(CHECK_INTEGRATION); do \
		printf '  %-9s %s\n' ASAN "integration test_$$t.sh"; \
		$(call SAN_ENV,integration) BUILD=build-asan tests/run.sh integration "test_$$t.sh" || rc=1; \
	done; \
	$(call san_check,integration); exit $$rc

# ---------------------------------------------------------------------------
# Static analysis

check-static: check-bpf check-cppcheck check-tidy

# The BPF objects are compiled with BPF_CFLAGS (Makefile); this gate refuses to pass if
# someone drops -Wall or -Werror from them, then builds them.
check-bpf: $(BPF_OBJS)
	$(if $(and $(filter -Wall,$(BPF_CFLAGS)),$(filter -Werror,$(BPF_CFLAGS))),,\
		$(error check-bpf: BPF_CFLAGS must keep -Wall -Werror (have: $(BPF_CFLAGS))))
	$(call msg,BPF-OK,$(BPF_SRCS) built with -Wall -Werror)

# Same preprocessor view as the build: _GNU_SOURCE, our include paths, the generated
# skeletons in $(BUILD)/. --library=posix teaches it open/close, malloc/free pairs etc.;
# mk/libbpf.cfg defines libbpf's LIBBPF_OPTS() (cppcheck does not read system headers).
CPPCHECK       ?= cppcheck
CPPCHECK_FLAGS := --enable=warning,performance,portability --std=c11 --library=posix \
		  --library=mk/libbpf.cfg \
		  --inline-suppr --suppressions-list=.cppcheck-suppressions \
		  --error-exitcode=1 --quiet --template=gcc \
		  -D_GNU_SOURCE -Iinclude -Iuser -I$(BUILD)

check-cppcheck: $(SKELS) .cppcheck-suppressions mk/libbpf.cfg
	$(call msg,CPPCHECK,user/)
	$(Q)$(CPPCHECK) $(CPPCHECK_FLAGS) user/

# clang-tidy takes the build's flags after `--`. The skeletons are generated code, so
# they are passed as system headers (-isystem); mk/analyzer-libbpf.h corrects one
# false positive of the analyzer in them (see that file).
CLANG_TIDY       ?= clang-tidy
TIDY_FLAGS       := -std=gnu11 -D_GNU_SOURCE -Iinclude -Iuser -isystem $(BUILD) \
		    -include mk/analyzer-libbpf.h
TIDY_STAMPS      := $(patsubst user/%.c,$(BUILD)/tidy/%.ok,$(USER_SRCS))

check-tidy: $(TIDY_STAMPS)

# One stamp per file: `make -j` runs them in parallel, and a clean file is not re-checked
# until it, a header or the configuration changes.
$(BUILD)/tidy/%.ok: user/%.c .clang-tidy mk/analyzer-libbpf.h $(wildcard user/*.h user/*/*.h include/*.h) \
		    $(SKELS)
	$(call msg,TIDY,$<)
	$(Q)mkdir -p $(@D); out=$$($(CLANG_TIDY) --quiet $< -- $(TIDY_FLAGS) 2>&1); rc=$$?; \
	printf '%s\n' "$$out" | grep -v '^[0-9]* warnings\? generated\.$$'; \
	[ $$rc -eq 0 ] && touch $@

# ---------------------------------------------------------------------------
# Fuzzing (libFuzzer, clang)
#
# Adding a harness is one file plus its seeds:
#   tests/fuzz/fuzz_<name>.c      defines LLVMFuzzerTestOneInput; calls one parser
#   tests/fuzz/corpus/<name>/     committed seed inputs (required)
#   tests/fuzz/<name>.options     optional: extra libFuzzer flags (-max_len=, -dict=...)
# It links against build-fuzz/libflatline.a, all of user/*.c but main.c compiled with
# coverage and ASan+UBSan, so the linker pulls in just the modules the harness calls.
# tests/fuzz/README.md lists the parsers to cover and the planned harness names.

FUZZ_BUILD   := build-fuzz
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 30
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS  := -g -O1 -std=gnu11 -Wall -Wextra -Werror -Wno-missing-field-initializers \
		-D_GNU_SOURCE -DFL_FUZZING -Iinclude -Iuser -I$(BUILD) $(FUZZ_SAN)
FUZZ_SRCS    := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS    := $(patsubst tests/fuzz/%.c,$(FUZZ_BUILD)/%,$(FUZZ_SRCS))
FUZZ_LIBOBJS := $(patsubst user/%.c,$(FUZZ_BUILD)/user/%.o,$(filter-out user/main.c,$(USER_SRCS)))

$(FUZZ_BUILD)/user/%.o: user/%.c $(SKELS)
	$(call msg,CC-FUZZ,$@)
	$(Q)mkdir -p $(@D) && $(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(FUZZ_BUILD)/libflatline.a: $(FUZZ_LIBOBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_BUILD)/libflatline.a
	$(call msg,LD-FUZZ,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -MMD -MP $< $(FUZZ_BUILD)/libflatline.a \
		-Wl,--as-needed $(LDLIBS) -o $@

fuzz-build: $(FUZZ_BINS)

# Each harness runs for FUZZ_SECONDS on the committed seeds (read only) plus a scratch
# corpus in build-fuzz/corpus/<name>/ that grows across local runs. A crash, a leak, a
# sanitizer report or one input taking longer than 10 s fails; the input that did it is
# kept in build-fuzz/artifacts/<name>/ (replay: build-fuzz/fuzz_<name> FILE).
# fast_unwind_on_malloc=0: allocation stacks through libraries built without frame
# pointers (libldns) are whole, so tests/lsan.supp can name the library function.
fuzz: $(patsubst $(FUZZ_BUILD)/fuzz_%,fuzz-run-%,$(FUZZ_BINS))

fuzz-run-%: $(FUZZ_BUILD)/fuzz_%
	$(Q)test -d tests/fuzz/corpus/$* || { echo "fuzz: tests/fuzz/corpus/$*/ missing: commit seeds for fuzz_$*" >&2; exit 1; }
	$(Q)mkdir -p $(FUZZ_BUILD)/corpus/$* $(FUZZ_BUILD)/artifacts/$*
	$(call msg,FUZZ,fuzz_$* for $(FUZZ_SECONDS) s)
	$(Q)UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:fast_unwind_on_malloc=0 \
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
	$< -max_total_time=$(FUZZ_SECONDS) -timeout=10 -print_final_stats=1 \
		-artifact_prefix=$(FUZZ_BUILD)/artifacts/$*/ \
		$$(cat tests/fuzz/$*.options 2>/dev/null) \
		$(FUZZ_BUILD)/corpus/$* tests/fuzz/corpus/$* \
		> $(FUZZ_BUILD)/fuzz_$*.log 2>&1 || { \
		tail -n 80 $(FUZZ_BUILD)/fuzz_$*.log; \
		echo "fuzz: fuzz_$* failed; input kept in $(FUZZ_BUILD)/artifacts/$*/:"; \
		ls -l $(FUZZ_BUILD)/artifacts/$*/; exit 1; }
	$(Q)awk '/^stat::number_of_executed_units/ { runs = $$2 } /^stat::new_units_added/ { new = $$2 } \
		END { printf "  %-9s fuzz_$*: %s inputs, %s new in the corpus, no crash\n", "FUZZ-OK", runs, new }' \
		$(FUZZ_BUILD)/fuzz_$*.log

-include $(wildcard $(FUZZ_BUILD)/user/*.d $(FUZZ_BUILD)/user/*/*.d $(FUZZ_BUILD)/*.d)
