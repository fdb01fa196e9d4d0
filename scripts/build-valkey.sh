#!/usr/bin/env bash
# Build valkey-server, valkey-sentinel and valkey-cli from the vendored Valkey source,
# once. scripts/install-deps.sh calls it; the tests and bench/compare.sh find the
# binaries through tests/lib/flavour.sh.
#
#   vendor dir  FL_VENDOR_DIR, else ../shared/vendor beside the repository root (for a
#               git worktree: beside the main checkout's root too)
#   tarball     valkey-8.0.1.tar.gz, checked against valkey-8.0.1.tar.gz.sha256 BEFORE
#               anything is unpacked
#   cache       FL_CACHE_DIR (default /var/cache/flatline)/valkey-<sha256>/bin, keyed by
#               the checksum: a second run with the same tarball builds nothing
#
# Built with BUILD_TLS=no USE_SYSTEMD=no MALLOC=jemalloc (the bundled jemalloc): a C
# compiler and make are all it needs. About 2.5 minutes with -j2 on 2 idle cores.
# Prints the bin directory on stdout, messages on stderr. Exit status 3 when there is no
# vendored source at all (install-deps.sh then warns: the Valkey tests will say SKIP);
# 1 on any other failure, a checksum mismatch included.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=tests/lib/flavour.sh
. "$ROOT/tests/lib/flavour.sh"

log() { echo "build-valkey: $*" >&2; }
die() { log "$*"; exit 1; }

if ! vendor=$(fl_vendor_dir); then
	log "failed to find the vendored sources: no ../shared/vendor beside $ROOT (set FL_VENDOR_DIR)"
	exit 3
fi
tarball=$vendor/$FL_VALKEY_TARBALL
[ -f "$tarball" ] || die "failed to find $tarball"
[ -f "$tarball.sha256" ] || die "failed to find $tarball.sha256"
command -v sha256sum >/dev/null || die "failed to find sha256sum"
(cd "$vendor" && sha256sum --quiet -c "$FL_VALKEY_TARBALL.sha256" >&2) ||
	die "failed to verify $tarball: checksum mismatch, refusing to build it"
sum=$(sha256sum "$tarball" | cut -d' ' -f1)
dest=$FL_CACHE_DIR/valkey-$sum
bin=$dest/bin

if [ -f "$dest/ok" ] && fl_valkey_bins_ok "$bin"; then
	log "cached: $bin ($(cat "$dest/ok"))"
	echo "$bin"
	exit 0
fi

mkdir -p "$FL_CACHE_DIR"
# One builder at a time; a second caller waits, then finds the cache.
exec 9>"$FL_CACHE_DIR/valkey-$sum.lock"
flock 9
if [ -f "$dest/ok" ] && fl_valkey_bins_ok "$bin"; then
	log "cached: $bin (built by another run)"
	echo "$bin"
	exit 0
fi

for t in make cc tar; do
	command -v "$t" >/dev/null || die "failed to find $t (run scripts/install-deps.sh)"
done
work=$(mktemp -d "$FL_CACHE_DIR/.valkey-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
log "building $FL_VALKEY_TARBALL ($sum) in $work"
start_s=$(date +%s)
tar -xzf "$tarball" -C "$work"
src=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n 1)
[ -f "$src/src/Makefile" ] || die "failed to unpack $tarball: no src/Makefile"
jobs=${FL_BUILD_JOBS:-$(nproc 2>/dev/null || echo 2)}
if ! make -C "$src/src" -j"$jobs" BUILD_TLS=no USE_SYSTEMD=no MALLOC=jemalloc \
	valkey-server valkey-sentinel valkey-cli >"$work/build.log" 2>&1; then
	tail -n 40 "$work/build.log" >&2
	die "failed to build valkey: make exited non-zero (log above)"
fi
mkdir -p "$work/out/bin"
for b in valkey-server valkey-sentinel valkey-cli; do
	install -m 0755 "$src/src/$b" "$work/out/bin/$b"
done
fl_valkey_bins_ok "$work/out/bin" || die "failed to run the freshly built valkey-server"
secs=$(($(date +%s) - start_s))
"$work/out/bin/valkey-server" --version | head -n 1 >"$work/out/version"
echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) in ${secs}s: $(cat "$work/out/version")" >"$work/out/ok"
rm -rf "$dest"
mv "$work/out" "$dest"
log "built in ${secs}s: $bin"
echo "$bin"
