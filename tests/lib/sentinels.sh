# shellcheck shell=bash
# Redis Sentinel beside the cluster harness (tests/lib/cluster.sh, sourced first): one
# sentinel of the flavour ($CL_SENTINEL: redis-sentinel or valkey-sentinel) per host
# namespace, on HOST_IP:26379, monitoring the harness's shard with quorum 2. What the
# benchmarks that compare flatline with Sentinel (bench/compare.sh, bench/lease.sh)
# start in place of flatline's agents and controller.
#
#   SENTINEL_PIDS=()             before each trial: the sentinels it starts
#   start_sentinels [DOWN_MS]    start them (down-after-milliseconds DOWN_MS, else
#                                Sentinel's default) and wait until they converge;
#                                they monitor host SENTINEL_PRIMARY's server (default 1)
#   SENTINEL_CONF_FN=FN          optional: FN IDX prints more lines for sentinel IDX's
#                                file (a later `bind` replaces the one above)
#   sentinel_field IDX FIELD     a field of SENTINEL MASTER as sentinel IDX sees it
#   sentinels_left               the pids of this trial's sentinels still running

SENTINEL_PIDS=()
sentinels_left() {
	local p
	for p in "${SENTINEL_PIDS[@]}"; do cl_running "$p" && echo "$p"; done
	return 0
}

start_sentinels() {
	local i d
	for i in 1 2 3; do
		d=$CL_DIR/sentinel-$i
		mkdir -p "$d"
		cat >"$d/sentinel.conf" <<-EOF
			port 26379
			bind $(cl_ip "$i")
			daemonize no
			dir $d
			logfile $d/sentinel.log
			sentinel monitor $CL_SHARD $(cl_ip "${SENTINEL_PRIMARY:-1}") 6379 2
		EOF
		[ -z "${1:-}" ] || echo "sentinel down-after-milliseconds $CL_SHARD $1" >>"$d/sentinel.conf"
		[ -z "${SENTINEL_CONF_FN:-}" ] || "$SENTINEL_CONF_FN" "$i" >>"$d/sentinel.conf"
		cl_spawn "sentinel-$i" "$(cl_ns "$i")" "$CL_SENTINEL" "$d/sentinel.conf"
		SENTINEL_PIDS+=("$CL_PID")
	done
	# Ready when every sentinel knows both replicas and both other sentinels.
	cl_until 30 sentinels_ready || { echo "start_sentinels: the sentinels did not converge" >&2; return 1; }
}

sentinel_field() { # IDX FIELD
	timeout 1 nsenter --net="/run/netns/$CL_NS_CTL" "$CL_CLI" -h "$(cl_ip "$1")" -p 26379 \
		sentinel master "$CL_SHARD" 2>/dev/null | awk -v f="$2" 'p { print; exit } $0 == f { p = 1 }'
}

sentinels_ready() {
	local i
	for i in 1 2 3; do
		[ "$(sentinel_field "$i" num-slaves)" = 2 ] && [ "$(sentinel_field "$i" num-other-sentinels)" = 2 ] ||
			return 1
	done
}
