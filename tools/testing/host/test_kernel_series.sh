#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The set-up and the Makefile find the stock kernel by one rule
# (scripts/kernel-series.sh): after the set-up, the newest release apt
# offers is the one installed, plain "make" builds for it, and a bad series
# is refused with one line. Debian 13's 7.x is checked in the Debian 13
# root, whose set-up follows the same rule with Debian 13's archive.
. "$(dirname "$0")/lib.sh"
ks=$TOP/scripts/kernel-series.sh
list=$("$ks" list)
[[ " $list " == *" 6.1 "* && " $list " == *" 6.12 "* && " $list " == *" 7.3 "* ]] ||
	fail "supported series are '$list', without 6.1, 6.12 and 7.3"
[ "$("$ks" on 12)" = "6.1 6.12" ] && [ "$("$ks" on 13)" = "6.12 7.3" ] ||
	fail "Debian 12 carries '$("$ks" on 12)', 13 '$("$ks" on 13)'"
for series in $(series_native); do
	cand=$("$ks" candidate "$series") || fail "no candidate for $series"
	read -r cand candver _ <<<"$cand"
	inst=$("$ks" installed "$series") || fail "nothing installed for $series"
	echo "series $series: apt offers $cand, installed $inst"
	[ "$cand" = "$inst" ] || fail "the set-up left $inst although apt offers $cand"
	[ "$("$ks" kdir "$series")" = "/usr/src/linux-headers-$inst" ] || fail "kdir is not $inst's"
	srcver=$(dpkg-query -W -f='${Version}' "linux-source-$series")
	hdrver=$(dpkg-query -W -f='${Version}' "linux-headers-$inst")
	img=$("$ks" image "$series") || fail "no image installed for $series"
	[[ "$img" == "linux-image-$inst" || "$img" == "linux-image-$inst-unsigned" ]] ||
		fail "image package $img is not of $inst"
	imgver=$(dpkg-query -W -f='${Version}' "$img")
	[ "$srcver" = "$hdrver" ] || fail "linux-source-$series $srcver and headers $hdrver differ"
	[ "$srcver" = "$imgver" ] || fail "linux-source-$series $srcver and image $imgver differ"
	[ "$srcver" = "$candver" ] || fail "apt offers $candver for $series, linux-source-$series is $srcver"
	[ -r "/boot/vmlinuz-$inst" ] || fail "no /boot/vmlinuz-$inst for the stock guest"
done
series_in_root
# the rest once, on the host
[ -z "${NRP_TEST_SERIES:-}" ] || exit 0
# the guests of Debian 13's series boot the root's kernel, seen from here
for series in $list; do
	"$ks" native "$series" && continue
	inst=$(NRP_ROOT=$NRP_CACHE/root/debian13 "$ks" installed "$series") ||
		fail "the Debian 13 root has no Linux $series"
	[ -r "$NRP_CACHE/root/debian13/boot/vmlinuz-$inst" ] ||
		fail "no vmlinuz-$inst in the Debian 13 root"
	echo "series $series: $inst in the Debian 13 root"
done
# the Makefile's default KDIR, on a host whose running kernel has no build
# tree: the default series, the first of the list
if [ ! -d "/lib/modules/$(uname -r)/build" ]; then
	inst=$("$ks" installed "${list%% *}")
	kdir=$(make -s -C "$TOP" -p -n modules 2>/dev/null | sed -n 's/^KDIR := //p' | head -n1)
	[ "$kdir" = "/usr/src/linux-headers-$inst" ] || fail "Makefile's KDIR is '$kdir'"
fi
# apt-cache through a binary cache of its own (the image turns apt's off):
# the same answer from a cold and a warm cache, and the cache is there
tmp=$(mktemp -d) || fail "mktemp"
cold=$(NRP_CACHE=$tmp "$ks" candidate "${list%% *}") || fail "no candidate with an empty cache"
deb=debian$(cut -d. -f1 /etc/debian_version)
[ -s "$tmp/apt/$deb/pkgcache.bin" ] || fail "apt-cache left no binary cache in \$NRP_CACHE/apt/$deb"
warm=$(NRP_CACHE=$tmp "$ks" candidate "${list%% *}") || fail "no candidate with a warm cache"
rm -rf "$tmp"
[ "$cold" = "$warm" ] || fail "cold cache said '$cold', warm '$warm'"
out=$("$ks" candidate 6.x 2>&1) && fail "series 6.x accepted"
echo "$out" | grep -q "^nvme-rdma-p2p: kernel series '6.x'" || fail "no clear refusal: $out"
exit 0
