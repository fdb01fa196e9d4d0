#!/usr/bin/env bash
# Server flavours the tests, the harness and the benchmarks run: which server, CLI and
# Sentinel binaries, and where the Valkey build lives. Sourced; defines fl_* functions.
#
#   FL_FLAVOUR=redis   Debian's redis-server, redis-cli, redis-sentinel (7.0)
#   FL_FLAVOUR=valkey  valkey-server, valkey-cli, valkey-sentinel (8.0) built from the
#                      vendored tarball by scripts/build-valkey.sh into
#                      $FL_CACHE_DIR/valkey-<sha256>/bin (FL_VALKEY_BIN overrides)

FL_VALKEY_TARBALL=valkey-8.0.1.tar.gz
FL_CACHE_DIR=${FL_CACHE_DIR:-/var/cache/flatline}
FL_FLAVOURS="redis valkey"

# fl_vendor_dir: ../shared/vendor beside the repository root; in a git worktree, beside
# the main checkout's root as well. FL_VENDOR_DIR overrides.
fl_vendor_dir() {
	local root common d
	if [ -n "${FL_VENDOR_DIR:-}" ]; then
		[ -d "$FL_VENDOR_DIR" ] && echo "$FL_VENDOR_DIR"
		return
	fi
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	for d in "$root/../shared/vendor" \
		"$(common=$(git -C "$root" rev-parse --path-format=absolute --git-common-dir 2>/dev/null) &&
			echo "$common/../../shared/vendor")"; do
		if [ -n "$d" ] && [ -f "$d/$FL_VALKEY_TARBALL" ]; then
			(cd "$d" && pwd)
			return 0
		fi
	done
	return 1
}

# fl_valkey_bins_ok DIR: the three binaries are there and the server runs.
fl_valkey_bins_ok() {
	local b
	for b in valkey-server valkey-sentinel valkey-cli; do
		[ -x "$1/$b" ] || return 1
	done
	"$1/valkey-server" --version 2>/dev/null | grep -q '^Valkey server v='
}

# fl_valkey_bin_dir: the cached build for the vendored tarball's checksum (from its
# .sha256 file; scripts/build-valkey.sh verified the tarball against it), or FL_VALKEY_BIN.
fl_valkey_bin_dir() {
	local vendor sum
	if [ -n "${FL_VALKEY_BIN:-}" ]; then
		fl_valkey_bins_ok "$FL_VALKEY_BIN" && echo "$FL_VALKEY_BIN"
		return
	fi
	vendor=$(fl_vendor_dir) || return 1
	read -r sum _ <"$vendor/$FL_VALKEY_TARBALL.sha256" || return 1
	[ -f "$FL_CACHE_DIR/valkey-$sum/ok" ] || return 1
	fl_valkey_bins_ok "$FL_CACHE_DIR/valkey-$sum/bin" || return 1
	echo "$FL_CACHE_DIR/valkey-$sum/bin"
}

# fl_flavour_set FLAVOUR: sets FL_FLAVOUR, FL_SERVER, FL_CLI, FL_SENTINEL (paths) and
# FL_SERVER_NAME ("Redis 7.0.15", "Valkey 8.0.1"). Returns 1 with FL_FLAVOUR_WHY set
# when that flavour's binaries are missing (callers SKIP with it).
# shellcheck disable=SC2034 # FL_FLAVOUR_WHY is read by the callers
fl_flavour_set() {
	local dir ver
	FL_FLAVOUR=$1
	FL_FLAVOUR_WHY=
	case $1 in
	redis)
		FL_SERVER=$(command -v redis-server) FL_CLI=$(command -v redis-cli) \
			FL_SENTINEL=$(command -v redis-sentinel)
		if [ -z "$FL_SERVER" ] || [ -z "$FL_CLI" ] || [ -z "$FL_SENTINEL" ]; then
			FL_FLAVOUR_WHY="redis-server, redis-cli or redis-sentinel missing (run scripts/install-deps.sh)"
			return 1
		fi
		;;
	valkey)
		if ! dir=$(fl_valkey_bin_dir); then
			FL_FLAVOUR_WHY="no valkey-server build in $FL_CACHE_DIR (run scripts/install-deps.sh, which runs scripts/build-valkey.sh)"
			return 1
		fi
		FL_SERVER=$dir/valkey-server FL_CLI=$dir/valkey-cli FL_SENTINEL=$dir/valkey-sentinel
		;;
	*)
		FL_FLAVOUR_WHY="unknown server flavour '$1' (one of: $FL_FLAVOURS)"
		return 1
		;;
	esac
	ver=$("$FL_SERVER" --version 2>/dev/null | sed -n 's/^\([A-Za-z]*\) server v=\([0-9.]*\).*/\1 \2/p')
	FL_SERVER_NAME=${ver:-$1}
	export FL_FLAVOUR FL_SERVER FL_CLI FL_SENTINEL FL_SERVER_NAME
}
