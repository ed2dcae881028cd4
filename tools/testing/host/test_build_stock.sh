#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Plain "make" in a fresh tree builds the module for Debian's stock kernel.
. "$(dirname "$0")/lib.sh"
t=$(scratch_tree)
trap 'rm -rf "$t"' EXIT
make -C "$t" >"$t/build.log" 2>&1 || { tail -n 30 "$t/build.log"; fail "make failed"; }
[ -f "$t/nvme-rdma-p2p.ko" ] || fail "no nvme-rdma-p2p.ko"
vm=$(modinfo -F vermagic "$t/nvme-rdma-p2p.ko")
case "$vm" in
"$NRP_STOCK_KVER "*) echo "vermagic: $vm" ;;
*) fail "vermagic '$vm' is not for $NRP_STOCK_KVER" ;;
esac
grep -q 'warning:' "$t/build.log" && { grep 'warning:' "$t/build.log"; fail "build warnings"; }
git -C "$TOP" ls-files | grep -E '(^|/)(nvme|fabrics)\.h$' && fail "private headers are committed"
exit 0
