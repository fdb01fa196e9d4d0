#!/usr/bin/env bash
# Hung-with-a-cause benchmark: bench/failover.sh -f stop, which says what
# it measures (the shipped defaults but failover_block_ms = 100; -L sets lease_ms).
# usage: bench/hung.sh [-n STOPS] [-k SLOW_RUNS] [-t COST_SECONDS] [-L LEASE_MS]
#   (root; prints tables)
exec "$(dirname "$0")/failover.sh" -f stop "$@"
