#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# "make install" (README) puts the module under updates/ of the stock
# kernel's module tree; here into a staging root, as packagers do.
. "$(dirname "$0")/lib.sh"
t=$(scratch_tree)
trap 'rm -rf "$t"' EXIT
make -C "$t" install INSTALL_MOD_PATH="$t/root" DEPMOD=true >"$t/install.log" 2>&1 ||
	{ tail -n 30 "$t/install.log"; fail "make install failed"; }
ko=$(find "$t/root" -name 'nvme-rdma-p2p.ko*' | head -n1)
case $ko in
"$t/root/lib/modules/$NRP_STOCK_KVER/updates/"*) echo "installed: ${ko#"$t/root"}" ;;
*) find "$t/root" -type f; fail "module not installed under /lib/modules/$NRP_STOCK_KVER/updates" ;;
esac
exit 0
