#!/usr/bin/env bash
# Self-fencing (test_fence.sh: the agent's CLIENT PAUSE WRITE, renewed, lifted on the
# controller's word or a demotion) against valkey-server 8.0 (scripts/build-valkey.sh).
export FL_FLAVOUR=valkey
exec bash "$(dirname "$0")/test_fence.sh"
