#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build the module (and the test fixture modules) for one guest kernel, in
# a private copy of the tree so builds for several kernels do not collide.
#
#   tools/vm/build-module.sh stock|p2p|debug[-SERIES]
#
# Prints the directory holding the built .ko files.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kernel=${1:-stock}
nrp_use_kernel "$kernel"
# Where a stock series' kbuild does not run on this machine (Debian 13's
# 7.x on Debian 12), the builds below run in the Debian 13 root, where
# its headers and linux-source are installed: as on a user's Debian 13.
kb=() kroot=
case "$NRP_FLAVOUR" in
stock)
	kroot=$NRP_STOCK_ROOT
	if [ -n "$kroot" ]; then
		"$NRP_TOP/tools/vm/debian-root.sh" path >/dev/null
		NRP_STOCK_KVER=${NRP_STOCK_KVER:-$(nrp_stock_kver "$NRP_SERIES" "$kroot")}
		kb=("$NRP_TOP/tools/vm/debian-root.sh" run --)
	fi
	kdir=/usr/src/linux-headers-$NRP_STOCK_KVER
	ksrc=
	;;
*)
	kd=$("$NRP_TOP/tools/vm/build-kernel.sh" "$NRP_FLAVOUR")
	kdir=$kd/build
	ksrc=$(nrp_src_tree)
	;;
esac
[ -d "$kroot$kdir" ] || nrp_die "no build tree for the $kernel kernel at $kroot$kdir (apt-get install linux-headers-$NRP_STOCK_KVER)"

krel=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"/\1/p' "$kroot$kdir/include/generated/utsrelease.h")
# One tree per kernel: the demo and p2p flavours share a release name
# (6.1.y-nrp) but not their configuration, so built kernels go by their
# cache directory, Debian's by release.
case "$NRP_FLAVOUR" in
stock)	work=$NRP_TOP/.build/$krel ;;
*)	work=$NRP_TOP/.build/$(basename "$kd") ;;
esac
mkdir -p "$work/src"
# One build per release at a time: run-all's two lanes may both want the
# same kernel's module (a guest's own, and another guest's foreign one),
# and two makes in one tree delete each other's objects.
exec 9>"$work/.lock"
flock 9
# Copy only what changed so kbuild's dependency tracking keeps working.
cp -a --update "$NRP_TOP/Kbuild" "$NRP_TOP/Makefile" "$NRP_TOP/drivers" \
	"$NRP_TOP/include" "$NRP_TOP/scripts" "$work/src/"
"${kb[@]}" make -s -C "$work/src" KDIR="$kdir" KSRC="$ksrc" modules >"$work/build.log" 2>&1 || {
	cat "$work/build.log" >&2
	nrp_die "module build for $krel failed"
}
mkdir -p "$work/ko"
cp "$work/src/nvme-rdma-p2p.ko" "$work/ko/"
# Test fixtures that are kernel modules (tools/<name>/Kbuild), e.g. the
# GPU-BAR stand-in.
for fx in "$NRP_TOP"/tools/*/Kbuild; do
	[ -e "$fx" ] || continue
	d=$(dirname "$fx")
	name=$(basename "$d")
	mkdir -p "$work/fixtures/$name"
	cp -a --update "$d/." "$work/fixtures/$name/"
	"${kb[@]}" make -s -C "$kdir" M="$work/fixtures/$name" modules \
		>>"$work/build.log" 2>&1 || {
		cat "$work/build.log" >&2
		nrp_die "fixture $name build for $krel failed"
	}
	cp "$work/fixtures/$name"/*.ko "$work/ko/"
done
echo "$work/ko"
