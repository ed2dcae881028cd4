#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Plain "make" in a fresh tree builds the module for Debian's stock kernel
# of the default series; "make KDIR=" builds it for the stock kernel of
# every other supported series (6.12; 7.3 in the Debian 13 root, as on a
# Debian 13 host), from the same tree, warning-free. A series whose
# headers are missing fails: the set-up installs them all.
. "$(dirname "$0")/lib.sh"
t=$(scratch_tree)
trap 'rm -rf "$t"' EXIT
first=
# in the Debian 13 root, no series is plain "make"'s default
[ -z "${NRP_TEST_SERIES:-}" ] || first=root
for series in $(series_native); do
	rel=$("$TOP/scripts/kernel-series.sh" installed "$series") ||
		fail "no stock headers of Linux $series installed (tools/setup.sh installs them)"
	args=()
	# the default series is what plain "make" builds for
	[ -z "$first" ] || args=(KDIR="/usr/src/linux-headers-$rel")
	first=$series
	make -C "$t" clean >/dev/null 2>&1
	make -C "$t" "${args[@]}" >"$t/build.log" 2>&1 ||
		{ tail -n 30 "$t/build.log"; fail "make ${args[*]} failed for $series"; }
	[ -f "$t/nvme-rdma-p2p.ko" ] || fail "no nvme-rdma-p2p.ko for $series"
	vm=$(modinfo -F vermagic "$t/nvme-rdma-p2p.ko")
	case "$vm" in
	"$rel "*) echo "Linux $series: vermagic: $vm" ;;
	*) fail "vermagic '$vm' is not for $rel" ;;
	esac
	grep -q 'warning:' "$t/build.log" && { grep 'warning:' "$t/build.log"; fail "build warnings for $series"; }
done
series_in_root
[ -n "${NRP_TEST_SERIES:-}" ] ||
	! git -C "$TOP" ls-files | grep -E '(^|/)(nvme|fabrics)\.h$' || fail "private headers are committed"
exit 0
