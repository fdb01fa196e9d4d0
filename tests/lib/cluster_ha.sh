# shellcheck shell=bash
# HA mode of the cluster harness (sourced by tests/lib/cluster.sh; FL_HA=1 or
# `scripts/cluster.sh up --ha`): three more namespaces <name>-c1..c3 on the bridge
# ($CL_NET.11..13), each running one etcd member (client :2379, peer :2380) and one
# `flatline controller --id cN`. Agents report to all three; one leads.
#
# env: FL_HA_LEASE_MS (the controllers' lease, default 1000), FL_ETCD_ELECTION_MS
# (etcd's election timeout, default 500; its heartbeat is a tenth of it). etcd makes
# a lease live at least 1.5 x the election timeout, rounded up to whole seconds.

cl_ha_ns() { echo "$CL_NAME-c$1"; }                   # IDX -> namespace
cl_ha_ip() { echo "$CL_NET.1$1"; }                     # IDX -> address
cl_ha_in() { local i=$1; shift; nsenter --net="/run/netns/$(cl_ha_ns "$i")" "$@"; }
cl_ha_ips() { local i; for i in 1 2 3; do cl_ha_ip "$i"; done; }
cl_ha_log() { echo "$CL_DIR/controller-c$1.jsonl"; } # IDX -> the controller's event log

cl_ha_net_up() {
	local i
	for i in 1 2 3; do cl_netns_attach "$(cl_ha_ns "$i")" "vc$i" "$(cl_ha_ip "$i")"; done
}

# FL_ETCD_TLS=1: etcd serves clients over TLS and asks for a client certificate;
# cl_etcd_pki makes a CA, one server certificate (the three addresses) and one client
# certificate in DIR/pki.
cl_etcd_scheme() { if [ -n "${FL_ETCD_TLS:-}" ]; then echo https; else echo http; fi; }
cl_etcd_pki() {
	local d=$CL_DIR/pki san="" i
	mkdir -p "$d"
	for i in 1 2 3; do san="$san${san:+,}IP:$(cl_ha_ip "$i")"; done
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=flatline-test-ca" \
		-keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null &&
	openssl req -newkey rsa:2048 -nodes -subj "/CN=etcd" -keyout "$d/server.key" \
		-out "$d/server.csr" 2>/dev/null &&
	openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
		-days 2 -extfile <(printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$san") \
		-out "$d/server.pem" 2>/dev/null &&
	openssl req -newkey rsa:2048 -nodes -subj "/CN=flatline" -keyout "$d/client.key" \
		-out "$d/client.csr" 2>/dev/null &&
	openssl x509 -req -in "$d/client.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
		-days 2 -extfile <(printf 'extendedKeyUsage=clientAuth\n') -out "$d/client.pem" 2>/dev/null &&
	chmod 0600 "$d"/*.key
}

cl_ha_conf() {
	local i eps=""
	for i in 1 2 3; do eps="$eps${eps:+,}$(cl_etcd_scheme)://$(cl_ha_ip "$i"):2379"; done
	cat >>"$CL_CONF" <<-EOF

		[etcd]
		endpoints = $eps
		prefix = /flatline/$CL_NAME/
		lease_ms = ${FL_HA_LEASE_MS:-1000}
		timeout_ms = 300
	EOF
	# FL_ETCD_AUTH=1: etcd with authentication on (root's password below).
	[ -z "${FL_ETCD_AUTH:-}" ] || printf 'user = root\npassword = %s\n' "$CL_SECRET" >>"$CL_CONF"
	[ -z "${FL_ETCD_TLS:-}" ] || printf 'cacert = %s\ncert = %s\nkey = %s\n' "$CL_DIR/pki/ca.pem" \
		"$CL_DIR/pki/client.pem" "$CL_DIR/pki/client.key" >>"$CL_CONF"
	for i in 1 2 3; do
		cat >>"$CL_CONF" <<-EOF

			[controller "c$i"]
			listen = $(cl_ha_ip "$i"):$CL_CTL_PORT
		EOF
	done
}

cl_etcd_start() {
	local i=$1 el=${FL_ETCD_ELECTION_MS:-500} peers="" j tls=() sc
	sc=$(cl_etcd_scheme)
	for j in 1 2 3; do peers="$peers${peers:+,}e$j=http://$(cl_ha_ip "$j"):2380"; done
	[ -z "${FL_ETCD_TLS:-}" ] || tls=(--cert-file "$CL_DIR/pki/server.pem"
		--key-file "$CL_DIR/pki/server.key" --trusted-ca-file "$CL_DIR/pki/ca.pem" --client-cert-auth)
	cl_spawn "etcd-e$i" "$(cl_ha_ns "$i")" etcd --name "e$i" --data-dir "$CL_DIR/etcd-e$i" \
		--listen-client-urls "$sc://$(cl_ha_ip "$i"):2379" \
		--advertise-client-urls "$sc://$(cl_ha_ip "$i"):2379" "${tls[@]}" \
		--listen-peer-urls "http://$(cl_ha_ip "$i"):2380" \
		--initial-advertise-peer-urls "http://$(cl_ha_ip "$i"):2380" \
		--initial-cluster "$peers" --initial-cluster-state new \
		--initial-cluster-token "$CL_NAME" \
		--heartbeat-interval $((el / 10)) --election-timeout "$el"
}

cl_etcdctl() {
	local tls=()
	[ -z "${FL_ETCD_TLS:-}" ] || tls=(--cacert "$CL_DIR/pki/ca.pem" --cert "$CL_DIR/pki/client.pem"
		--key "$CL_DIR/pki/client.key")
	cl_ha_in 1 env ETCDCTL_API=3 etcdctl --endpoints "$(cl_etcd_scheme)://$(cl_ha_ip 1):2379" \
		"${tls[@]}" --command-timeout=2s "$@"
}
cl_etcd_healthy() { cl_etcdctl endpoint health >/dev/null 2>&1; }

cl_ha_controller_start() {
	local i=$1
	cl_spawn "controller-c$i" "$(cl_ha_ns "$i")" "$FL" controller --allow-root -c "$CL_CONF" --id "c$i" \
		--event-log "$(cl_ha_log "$i")" -v
}

# cl_ha_status IDX: that controller's FLATLINE STATUS JSON.
cl_ha_status() {
	timeout 2 nsenter --net="/run/netns/$CL_NS_CTL" redis-cli --raw -h "$(cl_ha_ip "$1")" \
		-p "$CL_CTL_PORT" flatline status json 2>/dev/null
}

# cl_ha_leader: the index of the controller that leads now (from its status), or 1.
cl_ha_leader() {
	local i
	for i in 1 2 3; do
		cl_alive "controller-c$i" || continue
		if [ "$(cl_ha_status "$i" | jq -r '.controller.ha.role' 2>/dev/null)" = leader ]; then
			echo "$i"
			return 0
		fi
	done
	return 1
}

# cl_ha_leader_ready: a leader that has finished its INFO round.
cl_ha_leader_ready() {
	local i
	i=$(cl_ha_leader) || return 1
	cl_has_event "$(cl_ha_log "$i")" '.kind == "controller_ready"'
}

cl_ha_start() {
	local i
	command -v etcd >/dev/null || { cl_die "needs etcd (scripts/install-deps.sh)"; return 1; }
	[ -z "${FL_ETCD_TLS:-}" ] || cl_etcd_pki || { cl_die "could not make the test certificates"; return 1; }
	for i in 1 2 3; do cl_etcd_start "$i"; done
	cl_until "$CL_WAIT_S" cl_etcd_healthy ||
		{ cl_die "etcd did not come up: $(tail -n 5 "$CL_DIR/log/etcd-e1.out")"; return 1; }
	if [ -n "${FL_ETCD_AUTH:-}" ]; then
		{ cl_etcdctl user add "root:$CL_SECRET" && cl_etcdctl user grant-role root root &&
			cl_etcdctl auth enable; } >/dev/null 2>&1 || { cl_die "could not enable etcd auth"; return 1; }
	fi
	for i in 1 2 3; do cl_ha_controller_start "$i"; done
	cl_until "$CL_WAIT_S" cl_ha_leader_ready ||
		{ cl_die "no controller leads: $(tail -n 5 "$CL_DIR/log/controller-c1.out")"; return 1; }
	# The tests read the controller's events from the leader's log.
	CL_CLOG=$(cl_ha_log "$(cl_ha_leader)")
}
