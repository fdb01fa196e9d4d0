#!/usr/bin/env bash
# The demo for now: a real redis-server, the agent watching it in the kernel,
# a SIGKILL, and the event log that tells what happened.
set -euo pipefail
cd "$(dirname "$0")/.."
FL=${FL:-$PWD/build/flatline}
[ "$(id -u)" -eq 0 ] || { echo "demo: run as root (the agent loads BPF programs)" >&2; exit 1; }
dir=$(mktemp -d /tmp/flatline-demo.XXXXXX)
port=${DEMO_PORT:-26399}
agent=
cleanup() {
	[ -z "$agent" ] || kill -TERM "$agent" 2>/dev/null
	[ -z "$agent" ] || wait "$agent" 2>/dev/null
	[ -z "${redis:-}" ] || kill -KILL "$redis" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

echo "== starting redis-server on 127.0.0.1:$port"
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
	>"$dir/redis.log" 2>&1 &
redis=$!
for _ in $(seq 100); do redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break; sleep 0.05; done

echo "== starting: flatline agent --node demo --watch-pid $redis --event-log $dir/events.jsonl"
"$FL" agent --node demo --watch-pid "$redis" --event-log "$dir/events.jsonl" &
agent=$!
for _ in $(seq 200); do grep -q agent_start "$dir/events.jsonl" 2>/dev/null && break; sleep 0.02; done
echo "== pinned maps: $(ls /sys/fs/bpf/flatline/demo | tr '\n' ' ')"
echo "== watched pids (bpftool map dump pinned /sys/fs/bpf/flatline/demo/fl_watch_pids):"
bpftool map dump pinned /sys/fs/bpf/flatline/demo/fl_watch_pids

echo "== kill -KILL $redis"
kill -KILL "$redis"
for _ in $(seq 200); do grep -q proc_exit "$dir/events.jsonl" 2>/dev/null && break; sleep 0.01; done
redis=

echo "== flatline events --log $dir/events.jsonl"
"$FL" events --log "$dir/events.jsonl"
echo "== the same, raw (--json):"
"$FL" events --log "$dir/events.jsonl" --json | grep proc_exit
