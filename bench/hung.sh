#!/usr/bin/env bash
# Hung-with-a-cause benchmark: bench/failover.sh -f stop, which says what
# it measures. usage: bench/hung.sh [-n STOPS] [-k SLOW_RUNS] [-t COST_SECONDS]
#   (root; prints tables)
exec "$(dirname "$0")/failover.sh" -f stop "$@"
