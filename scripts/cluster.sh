#!/usr/bin/env bash
# scripts/cluster.sh [-d DIR] [-n NAME] [--keep] [--ha] up|down|status: a three-host flatline
# cluster on this machine (network namespaces, redis-server, agents, a controller and
# named; with --ha three etcd members and three controllers, one leading). The work
# is tests/lib/cluster.sh's (the library the tests and benchmarks
# share); its header lists the settings.
set -u
# shellcheck source=tests/lib/cluster.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/cluster.sh"

cl_main() {
	local dir='' name='' cmd=''
	while [ $# -gt 0 ]; do
		case $1 in
		-d) dir=$2; shift 2 ;;
		-n) name=$2; shift 2 ;;
		--keep) CL_KEEP=1; shift ;;
		--ha) export FL_HA=1; shift ;;
		up | down | status) cmd=$1; shift ;;
		*) echo "usage: scripts/cluster.sh [-d DIR] [-n NAME] [--keep] [--ha] up|down|status" >&2; return 2 ;;
		esac
	done
	[ -n "$cmd" ] || { echo "usage: scripts/cluster.sh [-d DIR] [-n NAME] [--keep] [--ha] up|down|status" >&2; return 2; }
	cl_init "$dir" "$name"
	case $cmd in
	up)
		local t0=$SECONDS
		trap 'cl_log "interrupted: tearing down"; cl_down; exit 1' INT TERM
		if ! cl_up; then
			cl_log "up failed: tearing down"
			CL_KEEP=0 cl_down
			return 1
		fi
		trap - INT TERM
		[ -n "${CL_ALREADY:-}" ] || cl_log "up in $((SECONDS - t0)) s: ${CL_NODES[*]} on $CL_NET.1-3, controller and named on $CL_CTL_IP ($CL_DIR)"
		;;
	down) cl_down ;;
	status) cl_status ;;
	esac
}

cl_main "$@"
