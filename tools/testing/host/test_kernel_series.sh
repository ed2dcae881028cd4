#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The set-up and the Makefile find the stock kernel by one rule
# (scripts/kernel-series.sh): after the set-up, the newest release apt
# offers is the one installed, plain "make" builds for it, and a bad series
# is refused with one line.
. "$(dirname "$0")/lib.sh"
ks=$TOP/scripts/kernel-series.sh
cand=$("$ks" candidate "$NRP_SERIES") || fail "no candidate for $NRP_SERIES"
inst=$("$ks" installed "$NRP_SERIES") || fail "nothing installed for $NRP_SERIES"
echo "series $NRP_SERIES: apt offers $cand, installed $inst"
[ "$cand" = "$inst" ] || fail "the set-up left $inst although apt offers $cand"
[ "$("$ks" kdir "$NRP_SERIES")" = "/usr/src/linux-headers-$inst" ] || fail "kdir is not $inst's"
srcver=$(dpkg-query -W -f='${Version}' "linux-source-$NRP_SERIES")
hdrver=$(dpkg-query -W -f='${Version}' "linux-headers-$inst")
[ "$srcver" = "$hdrver" ] || fail "linux-source $srcver and headers $hdrver differ"
# the Makefile's default KDIR, on a host whose running kernel has no build tree
if [ ! -d "/lib/modules/$(uname -r)/build" ]; then
	kdir=$(make -s -C "$TOP" -p -n modules 2>/dev/null | sed -n 's/^KDIR := //p' | head -n1)
	[ "$kdir" = "/usr/src/linux-headers-$inst" ] || fail "Makefile's KDIR is '$kdir'"
fi
out=$("$ks" candidate 6.x 2>&1) && fail "series 6.x accepted"
echo "$out" | grep -q "^nvme-rdma-p2p: kernel series '6.x'" || fail "no clear refusal: $out"
exit 0
