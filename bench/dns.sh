#!/usr/bin/env bash
# DNS benchmark: round trip of one TSIG-signed UPDATE (delete RRset + add)
# through user/controller/dns.c against a local BIND9 named, as the event loop sees it (dns_update()
# call -> callback), N updates in a row alternating between two addresses so each one
# changes the zone (journal write, serial bump). TCP (the default) and UDP.
# usage: bench/dns.sh [-n UPDATES]     (named, tsig-keygen, dig; loopback only)
# named's zone and journal live under $TMPDIR (default /tmp): on a disk, BIND's journal
# writes are part of each round trip; TMPDIR=/dev/shm leaves the exchange itself.
set -euo pipefail
cd "$(dirname "$0")/.."
N=200
[ "${1:-}" = "-n" ] && N=$2
make -s build/tools/dnsupdate >/dev/null
. tests/lib/testlib.sh
. tests/lib/named.sh
T=$(mktemp -d "${TMPDIR:-/tmp}/flatline-bench.XXXXXX")
CLEANUP=()
trap 'run_cleanup; rm -rf "$T"' EXIT
skip() { echo "bench-dns: $*" >&2; exit 1; }
start_named

bench() { # TRANSPORT-FLAGS...
	build/tools/dnsupdate -s "127.0.0.1:$NAMED_PORT" -z ha.example. -k flatline \
		-a hmac-sha256 -S "$SECRET" "$@" -n "$N" bench cache.ha.example. 10.0.0.2 10.0.0.3
}
bench >/dev/null # warm-up: named's first update opens the journal
printf '%-6s %5s %9s %9s %9s %9s %9s\n' transp n p50_ms p90_ms p99_ms max_ms mean_ms
for t in tcp udp; do
	flags=()
	[ $t = udp ] && flags=(--udp)
	bench "${flags[@]}" | jq -r '[.transport, .n, .p50_ms, .p90_ms, .p99_ms, .max_ms, .mean_ms] |
		@tsv' | awk '{ printf "%-6s %5d %9.3f %9.3f %9.3f %9.3f %9.3f\n", $1, $2, $3, $4, $5, $6, $7 }'
done
echo "serial after the run: $(soa_serial); $(named -v | cut -d' ' -f1-2); zone on $(df --output=fstype "$T" | tail -n 1)"
