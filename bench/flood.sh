#!/usr/bin/env bash
# Floods of empty lines and inline junk: CONNS connections send "\n"
# (or "\r\n", or short unknown inline commands, or long lines of blanks) to the
# controller as fast as their sockets take them, while another connection sends
# a PING every 10 ms and times each answer. A reader that is not linear in its
# input (each line consumed by moving the rest of the buffer) makes the loop turn,
# and so every answer and every failover, wait; a turn past 2 s enters TILT.
#
# Each row is a fresh controller (one node, no server: the loop and the socket are
# what is measured). Flooders run as two processes (bench/flood.py), each with half
# the connections; the controller, the flooders and the pinger all run at nice -10
# so that other work on a shared machine weighs on them alike; the load average
# before the run is printed with the table.
#
# usage: bench/flood.sh [-c CONNS[,CONNS...]] [-s SECONDS] [-m MODE[,MODE...]]
#        (default 300 connections, 5 s, modes empty,crlf,junk,spaces; "idle" is a
#        row with no flood)
set -euo pipefail
cd "$(dirname "$0")/.."
CONNS=300
SECS=5
MODES=idle,empty,crlf,junk,spaces
while getopts c:s:m: o; do
	case $o in
	c) CONNS=$OPTARG ;;
	s) SECS=$OPTARG ;;
	m) MODES=$OPTARG ;;
	*) echo "usage: bench/flood.sh [-c CONNS,...] [-s SECONDS] [-m MODE,...]" >&2; exit 2 ;;
	esac
done
for t in jq python3; do command -v $t >/dev/null || { echo "bench-flood: needs $t" >&2; exit 1; }; done
[ -n "${FL:-}" ] || make -s all
FL=${FL:-$PWD/build/flatline}
dir=$(mktemp -d /tmp/flatline-bench-flood.XXXXXX)
cp "$FL" "$dir/flatline" # a rebuild during the run must not break it
FL=$dir/flatline
# free_port and the rest of what the tests share (FL is set above: testlib keeps it)
. tests/lib/testlib.sh
PY=/usr/bin/python3
ctl= pids=()
stop_row() {
	set +e
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	[ -z "$ctl" ] || kill -TERM "$ctl" 2>/dev/null
	wait 2>/dev/null
	ctl= pids=()
	set -e
}
cleanup() {
	stop_row
	[ -n "${KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cpu_ns() { awk '{ print $1 }' "/proc/$1/schedstat"; }

row() { # MODE CONNS: one line of the table
	local mode=$1 n=$2 t=$dir/t port c0 c1 w0 w1 half
	rm -rf "$t" && mkdir -p "$t"
	port=$(free_port)
	cat >"$t/cluster.conf" <<-EOF
		[cluster]
		name = flood
		secret = flood-secret-flood-secret
		[controller]
		listen = 127.0.0.1:$port
		state_file = $t/state
		event_log = $t/controller.jsonl
		[node "f1"]
		address = 127.0.0.1
		redis = 127.0.0.1:$(free_port)
		[shard "s"]
		nodes = f1
	EOF
	chmod 600 "$t/cluster.conf"
	ulimit -n 4096
	nice -n -10 "$FL" controller --allow-root -c "$t/cluster.conf" 2>"$t/controller.err" &
	ctl=$!
	for _ in $(seq 500); do grep -q controller_ready "$t/controller.jsonl" 2>/dev/null && break; sleep 0.02; done
	grep -q controller_ready "$t/controller.jsonl" || { cat "$t/controller.err" >&2; return 1; }
	if [ "$mode" != idle ]; then
		half=$((n / 2))
		$PY bench/flood.py flood "$port" "$half" "$((SECS + 2))" "$mode" "$t/f1.json" &
		pids+=($!)
		$PY bench/flood.py flood "$port" "$((n - half))" "$((SECS + 2))" "$mode" "$t/f2.json" &
		pids+=($!)
		sleep 1 # every connection open and sending
	fi
	c0=$(cpu_ns "$ctl") w0=$(date +%s%N)
	nice -n -10 $PY bench/flood.py ping "$port" "$SECS" "$t/ping.json"
	c1=$(cpu_ns "$ctl") w1=$(date +%s%N)
	for p in "${pids[@]}"; do wait "$p"; done
	pids=()
	[ -s "$t/f1.json" ] || echo '{"sent":0,"reconnects":0}' >"$t/f1.json"
	[ -s "$t/f2.json" ] || echo '{"sent":0,"reconnects":0}' >"$t/f2.json"
	kill -0 "$ctl" 2>/dev/null || { tail -n 5 "$t/controller.err" >&2; echo "bench-flood: the controller died" >&2; return 1; }
	jq -rn --slurpfile a "$t/f1.json" --slurpfile b "$t/f2.json" --slurpfile p "$t/ping.json" \
		--arg mode "$mode" --arg n "$([ "$mode" = idle ] && echo 0 || echo "$n")" \
		--arg cpu "$(awk -v d=$((c1 - c0)) -v w=$((w1 - w0)) 'BEGIN { printf "%.0f", 100 * d / w }')" \
		--arg secs "$(awk -v w=$((w1 - w0)) 'BEGIN { printf "%.2f", w / 1e9 }')" \
		--arg tilt "$(grep -c '"kind":"tilt_start"' "$t/controller.jsonl" || true)" '
		def pct(q): (.lat_ms | sort) as $l | if ($l | length) == 0 then 0
			else $l[(((($l | length) - 1) * q) | floor)] end;
		($a[0].sent + $b[0].sent) as $sent | $p[0] as $p
		| "| \($mode) | \($n) | \(($sent / 1048576 / ($secs | tonumber)) * 10 | floor / 10) | \($cpu) % | \($p.lat_ms | length) | \($p | pct(0.5) * 100 | floor / 100) | \($p | pct(0.99) * 100 | floor / 100) | \($p | pct(1) * 100 | floor / 100) | \($p.lost) | \($a[0].reconnects + $b[0].reconnects) | \($tilt) |"'
	stop_row
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
echo "| flood | conns | MiB/s sent | controller CPU | PINGs | p50 ms | p99 ms | max ms | lost | reconnects | TILT |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
IFS=, read -ra modes <<<"$MODES"
IFS=, read -ra counts <<<"$CONNS"
for mode in "${modes[@]}"; do
	if [ "$mode" = idle ]; then
		row idle 0
		continue
	fi
	for n in "${counts[@]}"; do row "$mode" "$n"; done
done
