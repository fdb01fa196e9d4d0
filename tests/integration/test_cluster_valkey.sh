#!/usr/bin/env bash
# The failure suite (test_cluster.sh: every fault, the same invariants) against Valkey 8.0:
# valkey-server built from the vendored tarball by scripts/build-valkey.sh (which
# scripts/install-deps.sh runs). Without that build every test says SKIP with the reason.
export FL_FLAVOUR=valkey
exec bash "$(dirname "$0")/test_cluster.sh"
