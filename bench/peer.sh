#!/usr/bin/env bash
# Host-failure detection benchmark (ICMP and ICMPv6), in namespaces this script makes
# and removes (a bridge and two "hosts" on 198.18.0.0/16 and fd00:f1::/64; nothing
# leaves them):
#   1. link cut -> peer_down at probe intervals 10, 100, 1000 ms (threshold 10 x
#      interval): mean and spread over a few trials, ICMP (IPv4) and ICMPv6 (IPv6);
#   2. RTT measured in the kernel (tc egress -> tc ingress) vs in userspace
#      (sendto -> recvfrom) for the same probes, p50/p99, idle and with both cores
#      busy (both families idle, IPv4 busy);
#   3. prober CPU at 100 peers x 10 probes/s, and the BPF programs' own cost.
#   -l SECONDS: only the detector under loss, at the shipped defaults (probe_interval_ms
#      25, peer_down_after_ms 250): both hosts probe each other (`flatline probe`), and
#      nftables `numgen random` drops 5, 20 and 40 % of what each receives for SECONDS;
#      the false peer_down counted, then b's link cut -> peer_down (the silence the
#      loss made it need: silence_needed_ms, gap_ratio). Again with b's prober stopped
#      (SIGSTOP: only a's round trips, as while b's agent stalls).
# usage: bench/peer.sh [-n TRIALS]      (root; prints a table)
#        bench/peer.sh -l SECONDS       (root; the loss table)
#        FAMILIES="4 6" (default) or "4" or "6": the families of parts 1 and 2.
set -euo pipefail
cd "$(dirname "$0")/.."
N=5 LOSS_S=
[ "${1:-}" = "-n" ] && N=$2
[ "${1:-}" = "-l" ] && LOSS_S=$2
FAMILIES=${FAMILIES:-4 6}
[ "$(id -u)" -eq 0 ] || { echo "bench-peer: run as root" >&2; exit 1; }
[ -n "${FL:-}" ] || make -s all
FL=${FL:-$PWD/build/flatline}
PY=/usr/bin/python3
P=flbench$$
dir=$(mktemp -d /tmp/flatline-bench.XXXXXX)
NA="nsenter --net=/run/netns/$P-a"
NB="nsenter --net=/run/netns/$P-b"
stats_old=$(sysctl -n kernel.bpf_stats_enabled)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -TERM "$p" 2>/dev/null; done
	wait 2>/dev/null
	sysctl -qw kernel.bpf_stats_enabled="$stats_old"
	for h in a b br; do ip netns del "$P-$h" 2>/dev/null; done
	rm -rf "$dir" /sys/fs/bpf/flatline/bench
}
trap cleanup EXIT

ip netns add "$P-br"
# A switch runs no netfilter: keep br_netfilter (if loaded) out of the bridge.
for k in iptables ip6tables arptables; do
	ip netns exec "$P-br" sysctl -qw "net.bridge.bridge-nf-call-$k=0" 2>/dev/null || true
done
ip -n "$P-br" link add br0 type bridge
ip -n "$P-br" link set br0 up
for h in a b; do
	ip netns add "$P-$h"
	ip -n "$P-br" link add "v$h" type veth peer name eth0 netns "$P-$h"
	ip -n "$P-br" link set "v$h" master br0 up
	ip -n "$P-$h" link set lo up
	ip -n "$P-$h" link set eth0 up
done
ip -n "$P-a" addr add 198.18.0.1/16 dev eth0
ip -n "$P-b" addr add 198.18.0.2/16 dev eth0
# IPv6 addresses are flushed on link down unless asked to stay.
nsenter --net=/run/netns/$P-b sysctl -qw net.ipv6.conf.eth0.keep_addr_on_down=1
ip -n "$P-a" addr add fd00:f1::1/64 dev eth0 nodad
ip -n "$P-b" addr add fd00:f1::2/64 dev eth0 nodad
peer_of() { [ "$1" = 6 ] && echo fd00:f1::2 || echo 198.18.0.2; }
for i in $(seq 1 100); do ip -n "$P-b" addr add "198.18.1.$i/16" dev eth0; done

# probe LOG ARGS...: flatline probe in namespace a (under $NICE if set); waits for
# its start. Sets PROBE.
probe() {
	local log=$1
	shift
	$NA ${NICE:-} "$FL" probe --node bench --event-log "$log" "$@" 2>>"$dir/probe.err" &
	PROBE=$!
	pids+=("$PROBE")
	for _ in $(seq 500); do grep -q probe_start "$log" 2>/dev/null && break; sleep 0.01; done
	grep -q probe_start "$log" || { cat "$dir/probe.err" >&2; exit 1; }
}
stop() { kill -TERM "$PROBE"; wait "$PROBE" || true; }
# wait_kind LOG KIND COUNT SECONDS
wait_kind() {
	local end=$((SECONDS + $4))
	while [ $SECONDS -le $end ]; do
		[ "$(grep -c "\"kind\":\"$2\"" "$1" 2>/dev/null)" -ge "$3" ] && return 0
		sleep 0.005
	done
	echo "bench-peer: no $2 #$3 in $1" >&2
	return 1
}

# 4. (-l) The detector under loss, at the defaults.
if [ -n "$LOSS_S" ]; then
	loss_on() {
		local h
		for h in a b; do
			ip netns exec "$P-$h" nft -f - <<-EOF
				table inet flloss {
					chain in { type filter hook input priority -20; policy accept;
						iifname "eth0" numgen random mod 100 < $1 counter drop; }
				}
			EOF
		done
	}
	loss_off() { local h; for h in a b; do ip netns exec "$P-$h" nft delete table inet flloss; done; }
	$NB "$FL" probe --node bench-b --event-log "$dir/loss-b.jsonl" --peer a=198.18.0.1 \
		2>>"$dir/probe.err" &
	PB=$!
	pids+=("$PB")
	probe "$dir/loss-a.jsonl" --peer b=198.18.0.2
	wait_kind "$dir/loss-a.jsonl" peer_up 1 10
	: >"$dir/loss.txt"
	for mode in both replies; do
		[ "$mode" = replies ] && kill -STOP "$PB"
		for pct in 5 20 40; do
			d0=$(grep -c '"kind":"peer_down"' "$dir/loss-a.jsonl" || true)
			loss_on "$pct"
			sleep "$LOSS_S"
			d1=$(grep -c '"kind":"peer_down"' "$dir/loss-a.jsonl" || true)
			t0=$(date +%s%N)
			ip -n "$P-b" link set eth0 down
			wait_kind "$dir/loss-a.jsonl" peer_down $((d1 + 1)) 10
			ev=$(grep '"kind":"peer_down"' "$dir/loss-a.jsonl" | tail -n 1)
			t1=$(date -u -d "$(jq -r .ts <<<"$ev")" +%s%N)
			echo "$mode $pct $((d1 - d0)) $(((t1 - t0) / 1000)) $(jq -r '"\(.silence_needed_ms) \(.gap_ratio)"' <<<"$ev")" >>"$dir/loss.txt"
			loss_off
			ip -n "$P-b" link set eth0 up
			u=$(grep -c '"kind":"peer_up"' "$dir/loss-a.jsonl")
			wait_kind "$dir/loss-a.jsonl" peer_up $((u + 1)) 10
			sleep 3 # the measured share of silent rounds settles back
		done
	done
	kill -CONT "$PB"
	stop
	"$PY" - "$dir/loss.txt" "$LOSS_S" <<-'PYEOF'
		import sys
		print("the detector under loss, shipped defaults (probe_interval_ms 25, peer_down_after_ms 250); "
		      "%s s per row; then b's link cut" % sys.argv[2])
		print("| loss each way | b probes a too | false peer_down | cut -> peer_down (ms) | silence needed (ms) | silent rounds measured |")
		print("|---|---|---|---|---|---|")
		for l in open(sys.argv[1]):
		    mode, pct, false, det_us, need, gap = l.split()
		    print("| %s %% | %s | %s | %.0f | %s | %.3f |" % (pct, "yes" if mode == "both" else "no (stopped)",
		          false, int(det_us) / 1000, need, float(gap)))
	PYEOF
	exit 0
fi

# 1. Link cut -> peer_down.
for fam in $FAMILIES; do
for iv in 10 100 1000; do
	log=$dir/cut-$fam-$iv.jsonl
	trials=$N
	[ "$iv" -ge 1000 ] && trials=$(((N + 1) / 2))
	probe "$log" --peer "b=$(peer_of $fam)" --probe-interval-ms $iv --peer-down-after-ms $((10 * iv))
	wait_kind "$log" peer_up 1 10
	for t in $(seq "$trials"); do
		sleep "0.$((RANDOM % 10))$((RANDOM % 10))" # a random phase against the probe rounds
		sleep $((iv / 1000))
		echo "$fam $iv $(date +%s%N)" >>"$dir/cuts.txt"
		ip -n "$P-b" link set eth0 down
		wait_kind "$log" peer_down "$t" $((iv / 50 + 5))
		ip -n "$P-b" link set eth0 up
		wait_kind "$log" peer_up $((t + 1)) $((iv / 50 + 5))
	done
	stop
done
done

# 2. RTT in the kernel vs userspace, 10 ms interval, 10 s each.
for fam in $FAMILIES; do
	probe "$dir/rtt-$fam.jsonl" --peer "b=$(peer_of $fam)" --probe-interval-ms 10 \
		--rtt-log "$dir/rtt-idle$fam.txt" --duration-ms 10000
	wait "$PROBE" || true
done
busy=()
for _ in 1 2; do
	(while :; do :; done) &
	busy+=($!)
	pids+=($!)
done
probe "$dir/rtt2.jsonl" --peer b=198.18.0.2 --probe-interval-ms 10 --rtt-log "$dir/rtt-busy.txt" \
	--duration-ms 10000
wait "$PROBE" || true
# The agent losing the CPU to a hot server: nice 19 against the busy loops.
NICE="nice -n 19" probe "$dir/rtt3.jsonl" --peer b=198.18.0.2 --probe-interval-ms 10 \
	--rtt-log "$dir/rtt-nice.txt" --duration-ms 10000
wait "$PROBE" || true
kill "${busy[@]}"

# 3. CPU at 100 peers x 10 probes/s: 20 s after a 3 s warm-up, from schedstat (ns).
# veth runs the bridge's and the peer's processing of each probe, and our receipt
# of its reply, in the sender's context: that is counted too. A second run with
# the peer's link down (and its neighbours resolved) drops each probe right after
# tc egress: what is left is the prober's own cost.
peers=()
for i in $(seq 1 100); do peers+=(--peer "p$i=198.18.1.$i"); done
run_ns() { awk '{ print $1 }' "/proc/$PROBE/schedstat"; }
probe "$dir/cpu.jsonl" "${peers[@]}" --probe-interval-ms 100 --peer-down-after-ms 1000
sleep 3
sysctl -qw kernel.bpf_stats_enabled=1
prog_stats() {
	bpftool prog show --json | jq -r '[.[] | select(.name == "fl_icmp_egress" or .name == "fl_icmp_ingress")] |
		"\(map(.run_time_ns // 0) | add) \(map(.run_cnt // 0) | add)"'
}
read -r bt0 bc0 < <(prog_stats)
cpu0=$(run_ns)
w0=$(date +%s%N)
sleep 20
cpu1=$(run_ns)
w1=$(date +%s%N)
read -r bt1 bc1 < <(prog_stats)
ups=$(grep -c '"kind":"peer_up"' "$dir/cpu.jsonl")
downs=$(grep -c '"kind":"peer_down"' "$dir/cpu.jsonl" || true)
stop
mac=$($NB cat /sys/class/net/eth0/address 2>/dev/null || ip -n "$P-b" -j link show eth0 | jq -r '.[0].address')
for i in $(seq 1 100); do ip -n "$P-a" neigh replace "198.18.1.$i" lladdr "$mac" nud permanent dev eth0; done
ip -n "$P-b" link set eth0 down
probe "$dir/cpu2.jsonl" "${peers[@]}" --probe-interval-ms 100 --peer-down-after-ms 1000
sleep 3
own0=$(run_ns)
sleep 10
own1=$(run_ns)
stop
own=$(((own1 - own0) / 10))

"$PY" - "$dir" "$own" "$cpu0" "$cpu1" "$w0" "$w1" "$bt0" "$bc0" "$bt1" "$bc1" \
	"$ups" "$downs" <<'PYEOF'
import json, sys, datetime, statistics as st
d, own = sys.argv[1], int(sys.argv[2])
cpu0, cpu1, w0, w1, bt0, bc0, bt1, bc1, ups, downs = map(int, sys.argv[3:13])
def ts_ns(s):
    dt = datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    return int(dt.timestamp()) * 10**9 + dt.microsecond * 1000
def pct(v, p):
    v = sorted(v); return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]
cuts = {}
for line in open(f"{d}/cuts.txt"):
    fam, iv, t = map(int, line.split()); cuts.setdefault((fam, iv), []).append(t)
print("link cut -> peer_down (threshold 10 x interval; ms from `ip link set down`)")
print(f"{'family':<7} {'interval':>9} {'threshold':>10} {'trials':>7} {'mean':>8} {'min':>8} {'max':>8} {'stdev':>7} {'mean-thr':>9}")
for fam, iv in sorted(cuts):
    downs_ts = [ts_ns(json.loads(l)["ts"]) for l in open(f"{d}/cut-{fam}-{iv}.jsonl") if '"peer_down"' in l]
    lat = [(e - c) / 1e6 for c, e in zip(cuts[(fam, iv)], downs_ts)]
    sd = st.stdev(lat) if len(lat) > 1 else 0
    name = "ICMPv6" if fam == 6 else "ICMP"
    print(f"{name:<7} {iv:>7}ms {10*iv:>8}ms {len(lat):>7} {st.mean(lat):>8.1f} {min(lat):>8.1f} {max(lat):>8.1f} {sd:>7.1f} {st.mean(lat)-10*iv:>9.1f}")
print()
print("RTT of the same probes (10 ms interval, 10 s): kernel tc egress->ingress vs userspace sendto->recvfrom, us")
print(f"{'load':<20} {'n':>6} {'kernel p50':>11} {'kernel p99':>11} {'user p50':>9} {'user p99':>9} {'user max':>9}")
import os
for k in ("idle4", "idle6", "busy", "nice"):
    if not os.path.exists(f"{d}/rtt-{k}.txt"):
        continue
    rows = [l.split() for l in open(f"{d}/rtt-{k}.txt")]
    u = [int(r[2]) / 1000 for r in rows]
    kk = [int(r[3]) / 1000 for r in rows if int(r[3])]
    label = {"idle4": "ICMP idle", "idle6": "ICMPv6 idle", "busy": "ICMP 2 cores busy",
             "nice": "ICMP busy, nice 19"}[k]
    print(f"{label:<20} {len(u):>6} {pct(kk,50):>11.1f} {pct(kk,99):>11.1f} {pct(u,50):>9.1f} {pct(u,99):>9.1f} {max(u):>9.1f}")
print()
secs = (w1 - w0) / 1e9
cpu = (cpu1 - cpu0) / 1e9 / secs * 100
calls = bc1 - bc0
print(f"100 peers x 10 probes/s ({secs:.0f} s): prober CPU {cpu:.2f} % of one core, veth's packet "
      f"processing in its context included; peer_up {ups}, peer_down {downs}")
print(f"  the prober's own cost (probes dropped right after tc egress): {own / 1e9 * 100:.2f} % of one core")
print(f"  BPF programs: {calls} runs, {((bt1-bt0)/calls if calls else 0):.0f} ns per run, "
      f"{(bt1-bt0)/1e9/secs*100:.3f} % of one core")
PYEOF
