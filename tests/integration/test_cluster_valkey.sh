#!/usr/bin/env bash
# The failure suite (test_cluster.sh: every fault, the same invariants) against Valkey 8.0:
# valkey-server built from the vendored tarball by scripts/build-valkey.sh (which
# scripts/install-deps.sh runs). Without that build every test says SKIP with the reason.
# The lossy run lasts 30 s here (FL_CLUSTER_LOSS_S): the 120 s run is the Redis suite's,
# and the loss is in the network, not in the server.
export FL_FLAVOUR=valkey
export FL_CLUSTER_LOSS_S=${FL_CLUSTER_LOSS_S:-30}
exec bash "$(dirname "$0")/test_cluster.sh"
