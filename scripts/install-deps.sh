#!/usr/bin/env bash
# Install every Debian package flatline's build, tests, benchmarks and demo need, then
# build Valkey from the vendored source (scripts/build-valkey.sh: once, cached by the
# tarball's checksum). Idempotent and non-interactive; run as root (or through sudo).
set -euo pipefail

PKGS=(
	# build: BPF toolchain and libraries
	make clang llvm gcc pkg-config
	libbpf-dev libelf-dev zlib1g-dev bpftool linux-libc-dev
	libhiredis-dev libevent-dev libldns-dev libinih-dev libsystemd-dev
	libcurl4-openssl-dev libjson-c-dev libssl-dev
	# packaging and operations: make deb, lintian, systemd-analyze, the manual, metrics
	dpkg-dev lintian systemd groff-base man-db prometheus
	# tests and quality gates
	libcmocka-dev cppcheck clang-tidy clang-format libclang-rt-14-dev
	# the delayed-link holder (tests/lib/nfqdelay.c: an NFQUEUE, as there is no netem;
	# iptables' NFQUEUE target, as nftables' queue statement may not be built)
	libnetfilter-queue-dev iptables
	# real peers the tests run (valkey-server 8.0 is built from ../shared/vendor: make,
	# gcc and libc6-dev are all that build needs, BUILD_TLS=no)
	redis-server redis-tools redis-sentinel bind9 bind9-dnsutils bind9-utils libc6-dev
	etcd-server etcd-client
	python3 python3-redis jq openssl
	# the benchmarks' plots (SVG)
	gnuplot-nox
	# network namespaces, packet filtering, process tools
	iproute2 nftables iputils-ping procps psmisc util-linux
)

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: must run as root (try: sudo $0)" >&2
	exit 1
fi

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# Client libraries the tests run that Debian does not package (tests/node/package.json,
# versions pinned by its package-lock.json), in tests/node/node_modules.
node_clients() {
	local dir
	dir=$(cd "$(dirname "$0")/../tests/node" && pwd)
	if ! command -v npm >/dev/null 2>&1; then
		export DEBIAN_FRONTEND=noninteractive
		apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
	fi
	if [ ! -d "$dir/node_modules/ioredis" ]; then
		echo "install-deps: npm ci in $dir"
		(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
	fi
}

if [ "${#missing[@]}" -eq 0 ]; then
	echo "install-deps: all ${#PKGS[@]} packages present"
else
	export DEBIAN_FRONTEND=noninteractive
	echo "install-deps: installing ${missing[*]}"
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	# Debian's packages start services on install; the tests start their own instances.
	for svc in redis-server redis-sentinel named bind9 etcd prometheus; do
		if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
			systemctl stop "$svc" || true
		fi
	done
fi
node_clients
# Debian 12 has no Valkey: valkey-server, valkey-sentinel and valkey-cli 8.0.1 from the
# vendored tarball, checksum first; about 2.5 minutes the first time, nothing after.
rc=0
"$(dirname "$0")/build-valkey.sh" >/dev/null || rc=$?
if [ "$rc" -eq 3 ]; then
	echo "install-deps: no vendored Valkey source: the Valkey tests will say SKIP" >&2
elif [ "$rc" -ne 0 ]; then
	exit "$rc"
fi
echo "install-deps: done"
