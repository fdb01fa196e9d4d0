# shellcheck shell=bash
# What the TLS tests share (test_tls.sh, test_tls_ha.sh): certificates made with the
# openssl CLI, redis-server on its tls-port only, redis-cli over TLS. Needs $T
# (testlib.sh); certs sets $C. TLS_IN: a command prefix that runs redis-server and
# redis-cli elsewhere (nsenter --net=... for a test inside a network namespace).

need_tls() {
	need_root
	need_cmd openssl redis-server redis-cli jq # a redis-server without TLS: SKIP in tls_redis
}

# mkcert DIR NAME CA SAN: NAME.key/NAME.crt signed by CA (CA.key/CA.crt), for
# servers and clients both.
mkcert() {
	local d=$1 n=$2 ca=$3 san=$4
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$d/$n.key" \
		-out "$d/$n.csr" -subj "/CN=$n" 2>/dev/null || fail "openssl req $n failed"
	printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n' \
		"$san" >"$d/$n.ext"
	openssl x509 -req -in "$d/$n.csr" -CA "$d/$ca.crt" -CAkey "$d/$ca.key" -CAcreateserial \
		-out "$d/$n.crt" -days 2 -extfile "$d/$n.ext" 2>/dev/null || fail "openssl x509 $n failed"
	chmod 600 "$d/$n.key"
}

mkca() { # DIR NAME
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-keyout "$1/$2.key" -out "$1/$2.crt" -subj "/CN=$2" \
		-addext basicConstraints=critical,CA:TRUE -addext keyUsage=keyCertSign,cRLSign \
		2>/dev/null || fail "openssl req -x509 $2 failed"
}

# certs: $C/ca (the cluster's CA), server (redis, 127.0.0.1), ctl (the controller,
# 127.0.0.1 and localhost), agent and client (client certificates), and from another
# CA: evil (a client certificate) and evilca.crt.
certs() {
	C=$T/pki
	mkdir -p "$C"
	mkca "$C" ca
	mkca "$C" evilca
	mkcert "$C" server ca "IP:127.0.0.1"
	mkcert "$C" ctl ca "IP:127.0.0.1,DNS:localhost"
	mkcert "$C" agent ca "DNS:agent"
	mkcert "$C" client ca "DNS:client"
	mkcert "$C" evil evilca "IP:127.0.0.1"
	mkcert "$C" other ca "DNS:other.example"
}

# tls_redis_bg PORT: as tls_redis, without waiting for an answer (a server holding no
# write lease answers nobody new over TLS).
tls_redis_bg() {
	local port=$1; shift
	"${TLS_IN[@]}" redis-server --port 0 --tls-port "$port" --bind 127.0.0.1 --save '' --appendonly no \
		--tls-cert-file "$C/server.crt" --tls-key-file "$C/server.key" \
		--tls-ca-cert-file "$C/ca.crt" --tls-auth-clients yes --tls-replication yes \
		--repl-diskless-sync-delay 0 --dir "$T" --dbfilename "dump-$port.rdb" \
		--logfile "$T/redis-$port.log" "$@" &
	REDIS_PID=$!
	on_exit "kill -KILL $REDIS_PID"
}

# tls_redis PORT [ARGS...]: redis-server on its TLS port only; REDIS_PID.
tls_redis() {
	local port=$1
	tls_redis_bg "$@"
	local end=$((SECONDS + FL_WAIT_S))
	until rcli "$port" ping 2>/dev/null | grep -q PONG; do
		kill -0 "$REDIS_PID" 2>/dev/null || { tail -n 5 "$T/redis-$port.log" >&2; skip "redis-server has no TLS (tls-port)"; }
		[ $SECONDS -le $end ] || fail "redis-server on TLS port $port did not start"
		sleep 0.05
	done
}

rcli() { # PORT ARGS...: redis-cli over TLS with the client certificate
	local port=$1; shift
	"${TLS_IN[@]}" redis-cli --tls --cacert "$C/ca.crt" --cert "$C/client.crt" --key "$C/client.key" \
		-h 127.0.0.1 -p "$port" "$@"
}

rcli_t() { # SECONDS PORT ARGS...: rcli cut after SECONDS (a reply that may never come)
	local t=$1 port=$2; shift 2
	timeout "$t" "${TLS_IN[@]}" redis-cli --tls --cacert "$C/ca.crt" --cert "$C/client.crt" \
		--key "$C/client.key" -h 127.0.0.1 -p "$port" "$@"
}

role() { rcli "$1" role 2>/dev/null | head -n 1; }
link_up() { rcli "$1" info replication 2>/dev/null | tr -d '\r' | grep -q '^master_link_status:up'; }
until_s() { # SECONDS CMD...
	local end=$((SECONDS + $1)); shift
	until "$@"; do [ $SECONDS -le $end ] || return 1; sleep 0.05; done
}
