# shellcheck shell=bash
# Helpers for tests of one agent against a recording controller peer
# (testlib.sh's start_recpeer and wait_report). Sourced after testlib.sh.

# cluster_file OUT CTL_PORT NODE=PORT...: a cluster file with one shard;
# AGENT_EXTRA is added to its [agent] section ("key = value\\n"...).
cluster_file() {
	local out=$1 ctl=$2 n ids=""
	shift 2
	{
		printf '[cluster]\nname = t\nsecret = %s\n' "${SECRET:-s3cret-s3cret-s3cret}"
		# lease_ms = 0: these agents run in the machine's own namespace against a
		# recording controller that names no primary; the write lease (its pins outlive
		# the agent) is tested in namespaces by test_lease.sh.
		printf '[agent]\nping_interval_ms = 100\nhung_after = 5\nheartbeat_ms = 100\nlease_ms = 0\n%b' "${AGENT_EXTRA:-}"
		printf '[controller]\nlisten = 127.0.0.1:%s\n' "$ctl"
		[ -z "${PASSWORD:-}" ] || printf '[redis]\npassword = %s\n' "$PASSWORD"
		for n in "$@"; do
			printf '[node "%s"]\naddress = 127.0.0.1\nredis = 127.0.0.1:%s\n' "${n%%=*}" "${n#*=}"
			ids="$ids ${n%%=*}"
		done
		printf '[shard "s"]\nnodes =%s\n' "$ids"
	} >"$out"
	chmod 600 "$out" # it holds the secret
}
