#!/usr/bin/env bash
# Production pieces (issue 17): `flatline version` and `check`, the manual, the
# systemd units, the Debian package, least privilege, SIGHUP, journald levels and
# the Prometheus metrics.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
EXAMPLE=packaging/cluster.conf.example

test_version() {
	out=$("$FL" version) || fail "flatline version failed"
	grep -qE '^flatline [0-9]+\.[0-9]+\.[0-9]+' <<<"$out" || fail "no version in '$out'"
	v=$(sed -n 's/^VERSION *?= *//p' Makefile)
	grep -qF "flatline $v " <<<"$out" || fail "'$out' is not the Makefile's $v"
}

test_check_example() {
	out=$("$FL" check -c "$EXAMPLE") || fail "the example does not validate: $out"
	grep -q "valid: cluster example, 3 node(s), 1 shard(s)" <<<"$out" || fail "no summary: $out"
	grep -q "probes peers: n2=10.0.0.2 n3=10.0.0.3" <<<"$out" || fail "n1's peers missing: $out"
	grep -q "priority 0 (never promoted)" <<<"$out" || fail "n3's priority missing: $out"
	grep -q "secret is the example's 'change-me'" <<<"$out" || fail "no warning on the secret"
	out=$("$FL" check -c "$EXAMPLE" --node n2) || fail "--node n2 failed"
	expect_eq "agents printed for --node n2" "$(grep -c '^agent on node' <<<"$out")" 1
	"$FL" check -q -c "$EXAMPLE" >"$T/q" || fail "-q failed"
	[ ! -s "$T/q" ] || fail "-q printed: $(cat "$T/q")"
}

test_check_broken() {
	sed 's/^hung_after = 5 /hung_after = five /' "$EXAMPLE" >"$T/bad.conf"
	rc=0
	"$FL" check -c "$T/bad.conf" >"$T/out" 2>"$T/err" || rc=$?
	expect_eq "exit status for a broken file" "$rc" 1
	expect_eq "the error" "$(cat "$T/err")" \
		"$T/bad.conf:10: [agent] hung_after: not a number: 'five'"
	rc=0
	"$FL" check -c "$EXAMPLE" --node n9 2>"$T/err" >/dev/null || rc=$?
	expect_eq "exit status for an unknown node" "$rc" 1
	rc=0
	"$FL" check -c "$T/missing.conf" 2>"$T/err" >/dev/null || rc=$?
	expect_eq "exit status for a missing file" "$rc" 1
	grep -q "failed to open cluster file" "$T/err" || fail "no message: $(cat "$T/err")"
}

# The manual: both pages build, groff finds nothing to warn about, and
# flatline.conf(5) names every key the parser knows.
test_manual() {
	need_cmd python3 groff
	make -s man >/dev/null || fail "make man failed"
	for p in build/man/flatline.8 build/man/flatline.conf.5; do
		[ -s "$p" ] || fail "$p not built"
		w=$(LC_ALL=C.UTF-8 groff -man -ww -z "$p" 2>&1)
		[ -z "$w" ] || fail "groff warns about $p: $w"
	done
	keys=$(grep -o 'KEY("[a-z_]*")' user/common/config.c | sed 's/KEY("\(.*\)")/\1/' | sort -u)
	[ "$(wc -l <<<"$keys")" -ge 30 ] || fail "found only $(wc -l <<<"$keys") keys in config.c"
	for k in $keys; do
		grep -q "^\`$k\`" docs/man/flatline.conf.5.md || grep -q "\`$k\`" docs/man/flatline.conf.5.md ||
			fail "flatline.conf(5) does not describe key $k"
	done
	for c in agent controller check status failover events peers probe version; do
		grep -q "^\`$c\`" docs/man/flatline.8.md || fail "flatline(8) does not describe '$c'"
	done
}

# Both units pass systemd-analyze verify (ExecStart pointed at this build).
test_units_verify() {
	need_cmd systemd-analyze
	for u in packaging/*.service; do
		sed "s|/usr/sbin/flatline|$FL|" "$u" >"$T/${u##*/}"
	done
	cp "$T/flatline-agent@.service" "$T/flatline-agent@n1.service"
	out=$(systemd-analyze verify --man=no "$T/flatline-agent@n1.service" \
		"$T/flatline-controller.service" 2>&1) || fail "systemd-analyze verify: $out"
	[ -z "$out" ] || fail "systemd-analyze verify says: $out"
	grep -q '^Type=notify' packaging/flatline-agent@.service || fail "agent unit not Type=notify"
	grep -q '^Type=notify' packaging/flatline-controller.service || fail "controller unit not Type=notify"
}

# make deb; lintian reports no error; installed into a copy of this machine (an
# overlay of / in a private mount namespace, thrown away afterwards) it lays out
# every file, adds the flatline user and the directories, and its units verify.
test_deb() {
	need_cmd dpkg-deb lintian unshare chroot systemd-analyze
	make -s deb >"$T/make.out" 2>&1 || { cat "$T/make.out" >&2; fail "make deb failed"; }
	v=$(sed -n 's/^VERSION *?= *//p' Makefile)
	deb=build/flatline_${v}_$(dpkg --print-architecture).deb
	[ -s "$deb" ] || fail "no $deb"
	lintian --fail-on error --tag-display-limit 0 "$deb" >"$T/lintian" 2>&1 ||
		{ cat "$T/lintian" >&2; fail "lintian reports errors"; }
	! grep -q '^E:' "$T/lintian" || fail "lintian: $(cat "$T/lintian")"
	passwd_before=$(md5sum </etc/passwd)
	dpkg-deb -c "$deb" >"$T/contents"
	for f in ./usr/sbin/flatline ./lib/systemd/system/flatline-agent@.service \
		./lib/systemd/system/flatline-controller.service ./usr/share/man/man8/flatline.8.gz \
		./usr/share/man/man5/flatline.conf.5.gz ./usr/share/doc/flatline/examples/cluster.conf \
		./usr/share/doc/flatline/examples/flatline-alerts.yml ./usr/lib/tmpfiles.d/flatline.conf \
		./usr/share/doc/flatline/copyright ./etc/flatline/; do
		grep -q " $f\$" "$T/contents" || fail "$f not in the package"
	done
	D=$T/root
	mkdir "$D"
	unshare --mount --propagation private bash -c "
		set -e
		mount -t tmpfs tmpfs '$D'
		mkdir '$D/u' '$D/w' '$D/m'
		mount -t overlay overlay -o 'lowerdir=/,upperdir=$D/u,workdir=$D/w' '$D/m'
		mount -t proc proc '$D/m/proc'
		mount -t tmpfs tmpfs '$D/m/run'
		mount -t tmpfs tmpfs '$D/m/tmp'
		cp '$deb' '$D/m/tmp/f.deb'
		chroot '$D/m' dpkg -i /tmp/f.deb
		chroot '$D/m' dpkg -L flatline
		echo user: \$(chroot '$D/m' id -un flatline)
		echo dirs: \$(chroot '$D/m' stat -c '%n:%U:%G:%a' /var/log/flatline /var/lib/flatline)
		chroot '$D/m' systemd-analyze verify --man=no flatline-agent@n1.service \
			flatline-controller.service && echo verify: ok
		chroot '$D/m' flatline version
		chroot '$D/m' flatline check -q -c /usr/share/doc/flatline/examples/cluster.conf && echo check: ok
	" >"$T/inst" 2>&1 || { cat "$T/inst" >&2; fail "installing into the fresh root failed"; }
	for f in /usr/sbin/flatline /lib/systemd/system/flatline-agent@.service \
		/lib/systemd/system/flatline-controller.service /usr/share/man/man8/flatline.8.gz \
		/usr/share/man/man5/flatline.conf.5.gz /usr/share/doc/flatline/examples/cluster.conf; do
		grep -qx "$f" "$T/inst" || fail "dpkg -L does not list $f: $(cat "$T/inst")"
	done
	grep -qx "user: flatline" "$T/inst" || fail "no flatline user: $(cat "$T/inst")"
	grep -q "dirs: /var/log/flatline:root:flatline:775 /var/lib/flatline:flatline:flatline:750" \
		"$T/inst" || fail "directories: $(grep dirs: "$T/inst")"
	grep -qx "verify: ok" "$T/inst" || fail "installed units do not verify: $(cat "$T/inst")"
	grep -q "^flatline $v " "$T/inst" || fail "installed binary: $(cat "$T/inst")"
	grep -qx "check: ok" "$T/inst" || fail "the installed example does not validate"
	# Nothing leaked onto this machine.
	expect_eq "/etc/passwd of this machine" "$(md5sum </etc/passwd)" "$passwd_before"
}

TESTS=(test_version test_check_example test_check_broken test_manual test_units_verify test_deb)
run_tests
