#!/usr/bin/env bash
# Partition shapes and a client on the primary's own host, for the write-lease tests
# (tests/integration/test_lease.sh) and benchmark (bench/lease.sh). Sourced after
# tests/lib/cluster.sh; every function works on host IDX of the cluster it started.
#
#   pt_cut SHAPE IDX   nftables in host IDX's namespace (table inet flisolate):
#                        full   everything on eth0, both ways (cl_isolate)
#                        in     inbound only: the host sends, receives nothing
#                        out    outbound only: the host receives, sends nothing
#                        ctl    to and from the controller's address only
#                        peers  to and from the other two hosts only
#                      loopback lives on: a client on the host still reaches its server.
#   pt_heal IDX        removes the table
#   pt_colo_start IDX  the co-located writer (tests/lib/clwriter.py --addr): in host
#                      IDX's namespace, RPUSH to its own server 1,000 times a second,
#                      record in $CL_DIR/colo.out; pt_colo_stop stops it
#   pt_count REC FINAL CUT_NS PROM_NS [HEAL_NS]
#                      prints: acknowledged after the cut, of those lost (not in FINAL,
#                      the new primary's list), acknowledged after the promotion
#                      instant, of those missing, ms from the cut to the last ack (with
#                      HEAL_NS: the acknowledgements and the last one before the heal)
#   pt_redis_log_ms LOG   wall-clock ns of "MASTER MODE enabled" in a redis-server log

pt_nft() { cl_in "$1" nft -f -; }

pt_cut() {
	local shape=$1 i=$2 others=()
	case $shape in
	full) cl_isolate "$i" ;;
	in)
		pt_nft "$i" <<-EOF
			table inet flisolate {
				chain in { type filter hook input priority -10; policy accept; iifname "eth0" drop; }
			}
		EOF
		;;
	out)
		pt_nft "$i" <<-EOF
			table inet flisolate {
				chain out { type filter hook output priority -10; policy accept; oifname "eth0" drop; }
			}
		EOF
		;;
	ctl)
		pt_nft "$i" <<-EOF
			table inet flisolate {
				chain in { type filter hook input priority -10; policy accept; ip saddr $CL_CTL_IP drop; }
				chain out { type filter hook output priority -10; policy accept; ip daddr $CL_CTL_IP drop; }
			}
		EOF
		;;
	peers)
		for j in 1 2 3; do [ "$j" = "$i" ] || others+=("$(cl_ip "$j")"); done
		pt_nft "$i" <<-EOF
			table inet flisolate {
				chain in { type filter hook input priority -10; policy accept; ip saddr { ${others[0]}, ${others[1]} } drop; }
				chain out { type filter hook output priority -10; policy accept; ip daddr { ${others[0]}, ${others[1]} } drop; }
			}
		EOF
		;;
	*) echo "pt_cut: unknown shape $shape" >&2; return 2 ;;
	esac
}
pt_heal() { cl_in "$1" nft delete table inet flisolate 2>/dev/null; return 0; }

pt_colo_over() { local n; n=$(grep -c '^A ' "$CL_DIR/colo.out" 2>/dev/null); [ "${n:-0}" -gt "$1" ]; }
pt_colo_start() {
	rm -f "$CL_DIR/colo.out"
	cl_spawn colo "$(cl_ns "$1")" "$CL_PY" "$CL_ROOT/tests/lib/clwriter.py" \
		--addr "$(cl_ip "$1"):6379" --rate 1000 --timeout-ms 100 --out "$CL_DIR/colo.out"
	cl_until 5 pt_colo_over 300 ||
		{ cl_log "co-located writer too slow: $(tail -n 3 "$CL_DIR/log/colo.out")"; return 1; }
}
pt_colo_stop() { cl_stop colo; }
# pt_colo_acks_since NS: acknowledged writes after that wall-clock time.
pt_colo_acks_since() { awk -v t="$1" '$1 == "A" && $3 > t' "$CL_DIR/colo.out" | wc -l; }

pt_count() {
	"$CL_PY" - "$@" <<-'PYEOF'
		import sys
		rec, final, cut, prom = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
		heal = int(sys.argv[5]) if len(sys.argv) > 5 else None
		have = set(l.strip() for l in open(final) if l.strip())
		acked = [(int(f[1]), int(f[2])) for f in (l.split() for l in open(rec)) if f and f[0] == "A"]
		after_cut = [(v, t) for v, t in acked if t > cut and (heal is None or t < heal)]
		lost = [v for v, t in after_cut if str(v) not in have]
		after_prom = [v for v, t in acked if prom and t > prom]
		bad = [v for v in after_prom if str(v) not in have]
		last = max((t for v, t in after_cut), default=cut)
		print(len(after_cut), len(lost), len(after_prom), len(bad), (last - cut) // 1000000)
	PYEOF
}

pt_redis_log_ms() {
	"$CL_PY" - "$1" <<-'PYEOF'
		import sys, datetime, re
		for l in open(sys.argv[1], errors="replace"):
		    if "MASTER MODE enabled" in l:
		        m = re.search(r"(\d+ \w+ \d{4} \d\d:\d\d:\d\d\.\d{3})", l)
		        if m:
		            t = datetime.datetime.strptime(m.group(1), "%d %b %Y %H:%M:%S.%f")
		            # redis-server logs local time; the namespaces share this host's zone
		            print(int(t.timestamp() * 1e9))
		            break
	PYEOF
}
