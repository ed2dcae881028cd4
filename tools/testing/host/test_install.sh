#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# "make install" (README) puts the module under updates/ of the stock
# kernel's module tree, here into a staging root, as packagers do; with
# MODPROBE_CONF=1 the modprobe.d drop-in too, and without it not.
# "make uninstall" removes both again and runs depmod for that root.
. "$(dirname "$0")/lib.sh"
t=$(scratch_tree)
trap 'rm -rf "$t"' EXIT
root=$t/root
conf=$root/etc/modprobe.d/nvme-rdma-p2p.conf

make -C "$t" install INSTALL_MOD_PATH="$root" DEPMOD=true >"$t/install.log" 2>&1 ||
	{ tail -n 30 "$t/install.log"; fail "make install failed"; }
ko=$(find "$root" -name 'nvme-rdma-p2p.ko*' | head -n1)
case $ko in
"$root/lib/modules/$NRP_STOCK_KVER/updates/"*) echo "installed: ${ko#"$root"}" ;;
*) find "$root" -type f; fail "module not installed under /lib/modules/$NRP_STOCK_KVER/updates" ;;
esac
[ -e "$conf" ] && fail "the modprobe.d drop-in was installed without MODPROBE_CONF=1"

make -C "$t" install MODPROBE_CONF=1 INSTALL_MOD_PATH="$root" DEPMOD=true >"$t/install2.log" 2>&1 ||
	{ tail -n 30 "$t/install2.log"; fail "make install MODPROBE_CONF=1 failed"; }
cmp -s "$conf" "$t/tools/modprobe.d/nvme-rdma-p2p.conf" ||
	fail "MODPROBE_CONF=1 did not install tools/modprobe.d/nvme-rdma-p2p.conf as $conf"
echo "installed: ${conf#"$root"}"

# uninstall runs the real depmod on the staging root: it must leave a
# modules.dep there that no longer names the module
make -C "$t" uninstall INSTALL_MOD_PATH="$root" >"$t/uninstall.log" 2>&1 ||
	{ tail -n 30 "$t/uninstall.log"; fail "make uninstall failed"; }
left=$(find "$root" -name 'nvme-rdma-p2p*' -type f)
[ -z "$left" ] || fail "left behind by make uninstall: $left"
dep=$root/lib/modules/$NRP_STOCK_KVER/modules.dep
[ -e "$dep" ] || fail "make uninstall ran no depmod for $NRP_STOCK_KVER"
grep -q nvme-rdma-p2p "$dep" && fail "modules.dep still names the module"
echo "make uninstall: module and drop-in removed, depmod ran"
exit 0
