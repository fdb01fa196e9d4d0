# flatline — build, test, install. See docs/hacking.md for the gates.
.DELETE_ON_ERROR:
.SUFFIXES:

ARCH      ?= $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
CC        ?= cc
CLANG     ?= clang
BPFTOOL   ?= $(or $(shell command -v bpftool 2>/dev/null),/usr/sbin/bpftool)
PREFIX    ?= /usr/local
# systemd units and tmpfiles: where systemd looks for them under PREFIX (/usr: Debian's).
UNITDIR   ?= $(if $(filter /usr,$(PREFIX)),/lib/systemd/system,$(PREFIX)/lib/systemd/system)
TMPFILESDIR ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/tmpfiles.d,$(PREFIX)/lib/tmpfiles.d)
DESTDIR   ?=
BUILD     ?= build
VERSION   ?= 0.1.0

# SANITIZE=1 builds everything (daemons and tests) with ASan and UBSan, in build-asan/.
ifeq ($(SANITIZE),1)
BUILD     := build-asan
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
endif

CFLAGS    ?= -O2 -g
CFLAGS    += -std=gnu11 -Wall -Wextra -Werror -Wno-missing-field-initializers \
             -D_GNU_SOURCE -Iinclude -Iuser -I$(BUILD) $(SAN_FLAGS)
LDFLAGS   += $(SAN_FLAGS)
LDLIBS    := -lbpf -lelf -lz -levent -levent_pthreads -levent_openssl -lssl -lhiredis -lldns -linih -lcurl -ljson-c -lcrypto -lsystemd -lpthread
BPF_CFLAGS := -g -O2 -Wall -Werror -target bpf -D__TARGET_ARCH_$(ARCH) -mcpu=v3 -I. -Iinclude

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-9s %s\n' "$(1)" "$(2)";
endif

BPF_SRCS  := $(wildcard bpf/*.bpf.c)
BPF_OBJS  := $(patsubst bpf/%.bpf.c,$(BUILD)/%.bpf.o,$(BPF_SRCS))
SKELS     := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))
USER_SRCS := $(wildcard user/*.c user/*/*.c)
USER_OBJS := $(patsubst user/%.c,$(BUILD)/user/%.o,$(USER_SRCS))
LIB_OBJS  := $(filter-out $(BUILD)/user/main.o,$(USER_OBJS))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))

.PHONY: all test unit integration tools check fuzz demo demo-ha install clean format check-format vmlinux man deb
all: $(BUILD)/flatline

# vmlinux.h is committed; only an explicit `make vmlinux` regenerates it.
vmlinux:
	$(call msg,GEN,vmlinux.h)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > vmlinux.h

$(BUILD) $(BUILD)/user $(BUILD)/tests:
	$(Q)mkdir -p $@

$(BUILD)/%.bpf.tmp.o: bpf/%.bpf.c vmlinux.h $(wildcard include/*.h) $(wildcard bpf/*.h) | $(BUILD)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/%.bpf.o: $(BUILD)/%.bpf.tmp.o
	$(call msg,GEN-OBJ,$@)
	$(Q)$(BPFTOOL) gen object $@ $<

# The skeleton names the object fl_<name>, so maps read fl_proc.rodata etc.
$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name fl_$* > $@

# Every userspace object depends on every skeleton (there are few, and
# compiler-generated dependencies below keep header changes honest).
$(BUILD)/user/%.o: user/%.c $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(CFLAGS) -MMD -MP -c $< -o $@

# `flatline version` and the package carry VERSION.
$(BUILD)/user/common/version.o: CFLAGS += -DFL_VERSION='"$(VERSION)"'
$(BUILD)/user/common/version.o: Makefile

$(BUILD)/libflatline.a: $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/flatline: $(BUILD)/user/main.o $(BUILD)/libflatline.a
	$(call msg,LD,$@)
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libflatline.a | $(BUILD)/tests
	$(call msg,CC-TEST,$@)
	$(Q)$(CC) $(CFLAGS) -MMD -MP $(LDFLAGS) $< $(BUILD)/libflatline.a $(LDLIBS) -lcmocka -o $@

# Root-only test programs driven by tests/integration/*.sh (BPF test runs on crafted
# frames); tests/run.sh's unit pass does not see them.
ITEST_BINS := $(patsubst tests/integration/%.c,$(BUILD)/itests/%,$(wildcard tests/integration/*.c))
$(BUILD)/itests/%: tests/integration/%.c $(BUILD)/libflatline.a $(SKELS)
	$(call msg,CC-TEST,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(CFLAGS) -MMD -MP $(LDFLAGS) $< $(BUILD)/libflatline.a $(LDLIBS) -lcmocka -o $@

# Benchmark helpers (bench/*.c) and tools the tests share (tests/lib/*.c).
TOOLS := $(patsubst bench/%.c,$(BUILD)/tools/%,$(wildcard bench/*.c)) $(BUILD)/tools/dnsupdate \
	$(BUILD)/tools/nfqdelay
$(BUILD)/tools/%: bench/%.c
	$(call msg,CC-TOOL,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(CFLAGS) $(LDFLAGS) $< -o $@
tools: $(TOOLS)

# The scale benchmark's load generator speaks the agent protocol with the agent's own
# REPORT key table and INFO parser (the library); the server simulator needs libevent.
$(BUILD)/tools/loadgen $(BUILD)/tools/report_cost: $(BUILD)/tools/%: bench/%.c $(BUILD)/libflatline.a
	$(call msg,CC-TOOL,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(CFLAGS) $(LDFLAGS) $< $(BUILD)/libflatline.a $(LDLIBS) -o $@
$(BUILD)/tools/serversim: bench/serversim.c
	$(call msg,CC-TOOL,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(CFLAGS) $(LDFLAGS) $< -levent -o $@

# Tools that drive the library itself (tests/integration/test_dns.sh) link it too.
$(BUILD)/tools/dnsupdate: tests/lib/dnsupdate.c $(BUILD)/libflatline.a
	$(call msg,CC-TOOL,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(CFLAGS) $(LDFLAGS) $< $(BUILD)/libflatline.a $(LDLIBS) -o $@
# The delayed-link holder (tests/lib/cluster.sh cl_delay) speaks NFQUEUE.
$(BUILD)/tools/nfqdelay: tests/lib/nfqdelay.c
	$(call msg,CC-TOOL,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(CFLAGS) $(LDFLAGS) $< -lnetfilter_queue -o $@
# test_scale runs serversim and loadgen; the campaign and test_dns the others.
integration test: $(TOOLS)

unit: $(UNIT_BINS)
integration: $(BUILD)/flatline $(ITEST_BINS)

# Unit tests (no root) then integration tests (root); one summary line at the end.
test: $(BUILD)/flatline $(UNIT_BINS) $(ITEST_BINS)
	$(Q)BUILD=$(BUILD) tests/run.sh

demo: $(BUILD)/flatline
	$(Q)scripts/demo.sh

demo-ha: $(BUILD)/flatline
	$(Q)scripts/demo-ha.sh

# The manual: flatline(8) and flatline.conf(5), from docs/man/*.md (docs/man/md2man.py).
MANS := $(BUILD)/man/flatline.8 $(BUILD)/man/flatline.conf.5
$(BUILD)/man/%: docs/man/%.md docs/man/md2man.py
	$(call msg,MAN,$@)
	$(Q)mkdir -p $(@D) && python3 docs/man/md2man.py $< $@
man: $(MANS)

# Binary, manual, systemd units (their ExecStart pointed at PREFIX), tmpfiles.d, and
# the examples (cluster file, Prometheus alert rules).
DOCDIR ?= $(PREFIX)/share/doc/flatline
install: $(BUILD)/flatline $(MANS)
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)install -D -m 0755 $(BUILD)/flatline $(DESTDIR)$(PREFIX)/sbin/flatline
	$(Q)install -D -m 0644 $(BUILD)/man/flatline.8 $(DESTDIR)$(PREFIX)/share/man/man8/flatline.8
	$(Q)install -D -m 0644 $(BUILD)/man/flatline.conf.5 \
		$(DESTDIR)$(PREFIX)/share/man/man5/flatline.conf.5
	$(Q)install -d -m 0755 $(DESTDIR)$(UNITDIR) $(DESTDIR)$(DOCDIR)/examples
	$(Q)for u in packaging/*.service; do \
		sed 's|/usr/sbin/flatline|$(PREFIX)/sbin/flatline|' $$u > $(DESTDIR)$(UNITDIR)/$${u##*/} && \
		chmod 0644 $(DESTDIR)$(UNITDIR)/$${u##*/} || exit 1; done
	$(Q)install -D -m 0644 packaging/flatline.tmpfiles $(DESTDIR)$(TMPFILESDIR)/flatline.conf
	$(Q)install -m 0644 packaging/cluster.conf.example $(DESTDIR)$(DOCDIR)/examples/cluster.conf
	$(Q)install -m 0644 packaging/flatline-alerts.yml $(DESTDIR)$(DOCDIR)/examples/flatline-alerts.yml

# build/flatline_<version>_<arch>.deb from `make install DESTDIR=... PREFIX=/usr`.
deb: $(BUILD)/flatline $(MANS)
	$(Q)BUILD=$(BUILD) VERSION=$(VERSION) MAKE="$(MAKE)" packaging/mkdeb.sh

# Every hand-written C file; `make check-format` (part of `make check`) fails on any drift.
FORMAT_SRCS = $(wildcard user/*.c user/*.h user/*/*.c user/*/*.h include/*.h bpf/*.c bpf/*.h \
		tests/unit/*.c tests/unit/*.h tests/fuzz/*.c tests/integration/*.c tests/lib/*.c bench/*.c)
format:
	$(Q)clang-format -i $(FORMAT_SRCS)

check-format:
	$(call msg,FORMAT,check)
	$(Q)clang-format --dry-run -Werror $(FORMAT_SRCS)

clean:
	$(call msg,CLEAN,build build-asan build-fuzz)
	$(Q)rm -rf build build-asan build-fuzz

# Quality gates (make check, make fuzz): mk/check.mk.
-include mk/check.mk

-include $(wildcard $(BUILD)/user/*.d $(BUILD)/user/*/*.d $(BUILD)/tests/*.d $(BUILD)/itests/*.d)
