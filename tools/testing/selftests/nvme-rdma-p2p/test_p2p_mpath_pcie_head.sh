#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A head of another transport keeps the P2P mark the core gave it. From
# Linux 7.2 nvme_core marks a multipath head whose paths all take P2PDMA
# pages; with nvme_core multipath_always_on=Y an nvme-pci SSD's namespace
# gets such a head, and P2P memory (here its own CMB, published as
# p2pmem) reaches it with O_DIRECT. Our watch of the block class sees
# every path disk, that SSD's too: it must leave a head of no subsystem of
# ours alone, when it starts watching (a controller of ours connects) and
# when the SSD's path disk is added again (unbind and bind). Before the
# fix the SSD's head lost its mark at our first connect, and a P2P
# O_DIRECT to it was refused (EREMOTEIO) from then on.
#
# Runs in run-all.sh's topology boot (its QEMU NVMe device has a CMB);
# skips where the core marks no head itself (before 7.2) or has no
# multipath_always_on.
. "$(dirname "$0")/lib_mpath.sh"

nrp_p2p_require
nrp_qemu_nvme
bdf=$NRP_NVME_BDF
drv=/sys/bus/pci/drivers/nvme

# nvme_core afresh with multipath_always_on=Y (read-only once loaded)
nrp_mod_unload_tree nvme_core
nrp_mod_loaded nvme_core && nrp_fail "nvme_core is in use: $(lsmod | grep -E '^nvme' | tr -s ' ' | tr '\n' ';')"
nrp_must modprobe nvme_core multipath=Y multipath_always_on=Y
nrp_cleanup_push "nrp_mod_unload_tree nvme_core"
[ "$(cat /sys/module/nvme_core/parameters/multipath_always_on 2>/dev/null)" = Y ] ||
	nrp_skip "nvme_core has no multipath_always_on (Linux 6.15 and later)"
nrp_must modprobe nvme
[ -e "$drv/$bdf" ] || echo "$bdf" >"$drv/bind" || nrp_fail "cannot bind $bdf to the nvme driver"

# The SSD's head: the disk of the head its path disk (nvmeXcYnZ) is under.
pcie_head() {
	local c p
	for c in /sys/bus/pci/devices/"$bdf"/nvme/nvme*; do
		for p in "$c"/nvme*c*n*; do
			[ -e "$p" ] || continue
			p=$(basename "$p")
			echo "${p%%c*}n${p##*n}"
			return 0
		done
	done
	return 1
}
# ... once its block device is there: into hp, else fail saying $1
wait_pcie_head() { # WHAT
	local _
	hp=
	for _ in $(seq $((150 * NRP_SLOW))); do
		hp=$(pcie_head) && [ -b "/dev/$hp" ] && return 0
		hp=
		sleep 0.2
	done
	nrp_fail "no multipath head for $bdf's namespace $1: $(ls /sys/bus/pci/devices/"$bdf"/nvme/nvme* 2>&1 | tr '\n' ' ')"
}
wait_pcie_head "with multipath_always_on=Y"
p2pmem=/sys/bus/pci/devices/$bdf/p2pmem
[ -e "$p2pmem/allocate" ] || nrp_fail "$bdf's CMB is not published as p2pmem ($p2pmem/allocate missing)"

# P2P memory of the SSD's CMB to its head: the core's mark, before ours
ckpt() { # WANT WHAT
	nrp_p2p_user "$1" --p2pmem "$bdf" --dev "/dev/$hp" --size 1M --chunk 256K --qd 4 --stats none
	echo "  $2: $1"
}
NRP_UCKPT_OUT=$("$NRP_P2P_TOOL" --user --p2pmem "$bdf" --dev "/dev/$hp" --size 1M --chunk 256K \
	--qd 4 --stats none 2>&1) ||
	nrp_skip "the core does not mark $hp (a head of nvme-pci paths) for P2PDMA pages here (Linux 7.2 and later do): $(echo "$NRP_UCKPT_OUT" | tail -n 1)"
echo "$hp (nvme-pci $bdf, multipath_always_on): P2P O_DIRECT from its CMB served before any controller of ours"

# a controller of ours: our watch of the block class starts, and sees
# the SSD's path disk among all disks there are
nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
nrp_backing_dev ram 64
nrp_nvmet_setup "$NRP_DEV"
nrp_load_ours "$NRP_TRANSPORT" allow_soft_p2p=1
nrp_connect
h=$(basename "$(nrp_ns_dev "$NRP_CTRL")") || nrp_fail "no namespace on $NRP_CTRL"
nrp_wait_head_p2p "$h" 1 || nrp_fail "our head $h not marked: $(cat "$NRP_DEBUGFS/heads")"
ckpt served "after $NRP_CTRL connected (our head $h marked)"

# the SSD's path disk added again while we watch
echo "$bdf" >"$drv/unbind" || nrp_fail "cannot unbind $bdf"
echo "$bdf" >"$drv/bind" || nrp_fail "cannot bind $bdf again"
wait_pcie_head "after binding it again"
ckpt served "after $bdf was bound again ($hp)"
nrp_wait_head_p2p "$h" 1 $((5 * NRP_SLOW)) || nrp_fail "our head $h lost its mark: $(cat "$NRP_DEBUGFS/heads")"
echo "our head $h still marked"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
echo "$bdf" >"$drv/unbind"
nrp_assert_no_splat
nrp_pass
