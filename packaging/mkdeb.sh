#!/usr/bin/env bash
# `make deb`: build/flatline_<version>_<arch>.deb from a `make install DESTDIR=` tree,
# with dpkg-deb (no debhelper): control file with shared-library dependencies from
# dpkg-shlibdeps, maintainer scripts that add the flatline system user and the
# directories, the copyright and changelog Debian wants.
set -euo pipefail
BUILD=${BUILD:-build}
VERSION=${VERSION:?}
MAKE=${MAKE:-make}
ARCH=$(dpkg --print-architecture)
ROOT=$BUILD/deb/root
OUT=$BUILD/flatline_${VERSION}_${ARCH}.deb
MAINT="flatline maintainers <maintainers@users.noreply.a-seed-7aaf8d88.example>"

rm -rf "$BUILD/deb"
mkdir -p "$ROOT/DEBIAN"
$MAKE --no-print-directory install DESTDIR="$PWD/$ROOT" PREFIX=/usr >/dev/null
# Debian's layout: stripped binary (debug info belongs in a -dbgsym package),
# compressed manual and changelog, a config directory.
strip --remove-section=.comment --remove-section=.note --strip-unneeded "$ROOT/usr/sbin/flatline"
gzip -9n "$ROOT/usr/share/man/man8/flatline.8" "$ROOT/usr/share/man/man5/flatline.conf.5"
install -d -m 0755 "$ROOT/etc/flatline"
doc=$ROOT/usr/share/doc/flatline
cat >"$doc/copyright" <<EOC
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: flatline
Source: https://example.invalid/flatline

Files: *
Copyright: 2026 $MAINT
License: GPL-2 or BSD-2-clause

License: GPL-2
 This program is free software; you can redistribute it and/or modify it under
 the terms of the GNU General Public License version 2 as published by the Free
 Software Foundation.
 .
 On Debian systems, the full text of the GNU General Public License version 2
 can be found in the file /usr/share/common-licenses/GPL-2.

License: BSD-2-clause
 Redistribution and use in source and binary forms, with or without
 modification, are permitted provided that the following conditions are met:
 .
 1. Redistributions of source code must retain the above copyright notice,
 this list of conditions and the following disclaimer.
 2. Redistributions in binary form must reproduce the above copyright notice,
 this list of conditions and the following disclaimer in the documentation
 and/or other materials provided with the distribution.
 .
 THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS"
 AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE
 IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE ARE
 DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT HOLDER OR CONTRIBUTORS BE LIABLE
 FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR CONSEQUENTIAL
 DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR
 SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER
 CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY,
 OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE
 OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
EOC
date=$(date -u -R -d "@${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}")
cat >"$BUILD/deb/changelog" <<EOC
flatline ($VERSION) unstable; urgency=medium

  * Release $VERSION: see NEWS.md.

 -- $MAINT  $date
EOC
gzip -9n -c "$BUILD/deb/changelog" >"$doc/changelog.gz"

# Shared-library dependencies, as dpkg-shlibdeps computes them (it wants a
# debian/control beside it).
mkdir -p "$BUILD/deb/src/debian"
printf 'Source: flatline\n\nPackage: flatline\nArchitecture: any\n' >"$BUILD/deb/src/debian/control"
shlibs=$(cd "$BUILD/deb/src" && dpkg-shlibdeps -O "$OLDPWD/$ROOT/usr/sbin/flatline" 2>/dev/null |
	sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ] || { echo "mkdeb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

size=$(du -k -s --exclude=DEBIAN "$ROOT" | cut -f1)
cat >"$ROOT/DEBIAN/control" <<EOC
Package: flatline
Version: $VERSION
Architecture: $ARCH
Maintainer: $MAINT
Installed-Size: $size
Depends: $shlibs, adduser
Recommends: systemd
Suggests: prometheus, bpftool
Section: admin
Priority: optional
Homepage: https://example.invalid/flatline
Description: eBPF-assisted failure detection and failover for Redis and Valkey
 flatline replaces Redis Sentinel for primary/replica deployments of Redis,
 Valkey and Dragonfly. An agent on each data node learns from the kernel (BPF)
 the instant its server dies and why, probes its peers with ICMP timed in the
 kernel, and reports to a controller that promotes the best replica, repoints
 the others, updates DNS and answers Sentinel's client protocol.
 .
 This package holds the flatline binary, systemd units for the agent
 (flatline-agent@NODE) and the controller, the manual and an example cluster
 file. No unit is enabled on install: write /etc/flatline/cluster.conf first.
EOC

cat >"$ROOT/DEBIAN/postinst" <<'EOC'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
	if ! getent passwd flatline >/dev/null; then
		adduser --system --group --quiet --home /var/lib/flatline --no-create-home \
			--gecos "flatline controller" flatline
	fi
	# As /usr/lib/tmpfiles.d/flatline.conf says (systemd-tmpfiles may be absent).
	install -d -m 0775 -o root -g flatline /var/log/flatline
	install -d -m 0750 -o flatline -g flatline /var/lib/flatline
	if [ -d /run/systemd/system ]; then
		systemctl --system daemon-reload >/dev/null || true
	fi
fi
exit 0
EOC
cat >"$ROOT/DEBIAN/postrm" <<'EOC'
#!/bin/sh
set -e
if [ "$1" = purge ]; then
	rm -rf /var/lib/flatline /var/log/flatline
fi
if [ -d /run/systemd/system ]; then
	systemctl --system daemon-reload >/dev/null || true
fi
exit 0
EOC
chmod 0755 "$ROOT/DEBIAN/postinst" "$ROOT/DEBIAN/postrm"
(cd "$ROOT" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
	xargs -0 md5sum) >"$ROOT/DEBIAN/md5sums"
chmod 0644 "$ROOT/DEBIAN/md5sums" "$ROOT/DEBIAN/control"
dpkg-deb --root-owner-group -Zxz --build "$ROOT" "$OUT" >/dev/null
echo "  DEB       $OUT"
