#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Put the nvme host's private headers (drivers/nvme/host/nvme.h, fabrics.h)
# of exactly the kernel we build against into OUT.
#
#   scripts/private-headers.sh KDIR KSRC OUT
#
# KSRC is a kernel source tree; when empty, the distribution's
# /usr/src/linux-source-X.Y.tar.xz is used. The two headers define structs
# whose layout nvme-core was compiled with, so a version mismatch is refused.
set -eu

kdir=$1 ksrc=$2 out=$3
# called from make: do not let its flags change what sub-makes print
unset MAKEFLAGS MFLAGS MAKELEVEL
die() { echo "nvme-rdma-p2p: $*" >&2; exit 1; }

[ -n "$kdir" ] && [ -f "$kdir/Makefile" ] && [ -f "$kdir/include/generated/utsrelease.h" ] ||
	die "KDIR='$kdir' is not a configured kernel build tree (run tools/setup.sh to install Debian's stock headers, or pass KDIR=/path/to/kernel/build)"

kver=$(make -s -C "$kdir" kernelversion 2>/dev/null) ||
	die "cannot read the kernel version of KDIR='$kdir'"
krel=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"/\1/p' "$kdir/include/generated/utsrelease.h")

# Debian ships headers and source as packages of one version; when both
# trees come from packages, their package versions must match as well.
pkgver() {
	local owner
	owner=$(dpkg -S "$1" 2>/dev/null | head -n1 | cut -d: -f1) || return 0
	[ -n "$owner" ] && dpkg-query -W -f='${Version}' "$owner" 2>/dev/null
	return 0
}

stamp="$kver $krel"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ -n "$ksrc" ]; then
	[ -f "$ksrc/Makefile" ] && [ -f "$ksrc/drivers/nvme/host/nvme.h" ] ||
		die "KSRC='$ksrc' is not a kernel source tree with drivers/nvme/host/nvme.h"
	sver=$(make -s -C "$ksrc" kernelversion 2>/dev/null) ||
		die "cannot read the kernel version of KSRC='$ksrc'"
	origin=$ksrc
	mkdir -p "$tmp/drivers/nvme/host"
	cp "$ksrc/drivers/nvme/host/nvme.h" "$ksrc/drivers/nvme/host/fabrics.h" \
		"$tmp/drivers/nvme/host/"
else
	series=${kver%.*}
	tarball=/usr/src/linux-source-$series.tar.xz
	[ -r "$tarball" ] ||
		die "no KSRC given and $tarball missing: install linux-source-$series, or pass KSRC=/path/to/linux (must be version $kver)"
	origin=$tarball
	stamp="$stamp $(stat -c %Y "$tarball")"
	if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ]; then
		exit 0
	fi
	# --occurrence: stop reading once the three are out, not at the end
	# of the whole source (half the time here; DKMS builds in slow VMs)
	tar --occurrence=1 -xJf "$tarball" -C "$tmp" --strip-components=1 \
		"linux-source-$series/Makefile" \
		"linux-source-$series/drivers/nvme/host/nvme.h" \
		"linux-source-$series/drivers/nvme/host/fabrics.h" ||
		die "$tarball lacks drivers/nvme/host/{nvme,fabrics}.h"
	sver=$(sed -n 's/^VERSION = //p; s/^PATCHLEVEL = //p; s/^SUBLEVEL = //p' \
		"$tmp/Makefile" | paste -sd.)
fi

[ "$sver" = "$kver" ] ||
	die "private headers from $origin are version $sver, but KDIR='$kdir' is $kver ($krel); pass KSRC= a source tree of $kver"

kpkg=$(pkgver "$kdir")
spkg=$(pkgver "$origin")
if [ -n "$kpkg" ] && [ -n "$spkg" ] && [ "$kpkg" != "$spkg" ]; then
	die "KDIR='$kdir' is package version $kpkg but $origin is $spkg; install matching linux-headers and linux-source packages"
fi

rm -rf "$out"
mkdir -p "$out"
mv "$tmp/drivers" "$out/"
echo "$stamp" >"$out/.stamp"
echo "  PRIVHDR $krel <- $origin ($sver)"
