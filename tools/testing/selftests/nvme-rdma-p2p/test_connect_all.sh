#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Registered as "rdma" with the modprobe.d drop-in that keeps the in-tree
# nvme_rdma from loading, "nvme connect-all -t rdma" (whose discovery log
# says trtype rdma) lands on our transport; loading ours while the in-tree
# transport owns "rdma" is refused with a clear message.
. "$(dirname "$0")/lib.sh"

conf=/etc/modprobe.d/nvme-rdma-p2p.conf
[ -r "$NRP_TOP/tools/modprobe.d/nvme-rdma-p2p.conf" ] ||
	nrp_fail "modprobe.d drop-in missing from the tree"
cp "$NRP_TOP/tools/modprobe.d/nvme-rdma-p2p.conf" $conf
nrp_cleanup_push "rm -f $conf"

# 1. The in-tree module owns "rdma": ours must refuse to load as "rdma".
nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
nrp_cleanup_push "rmmod $NRP_MOD"
nrp_cleanup_push "rmmod nvme_rdma"
modprobe --ignore-install nvme-rdma || nrp_fail "cannot load the in-tree nvme-rdma"
nrp_mod_loaded nvme_rdma || nrp_fail "the in-tree nvme_rdma did not load"
nrp_dmesg_mark
out=$(modprobe nvme-rdma-p2p 2>&1) && nrp_fail "loaded as 'rdma' next to the in-tree nvme_rdma"
echo "modprobe: $out"
nrp_mod_loaded $NRP_MOD && nrp_fail "module loaded despite the conflict"
nrp_dmesg_since | grep -q "nvme_rdma_p2p: .*nvme_rdma" ||
	nrp_fail "no kernel message naming the conflict"
nrp_dmesg_since | grep nvme_rdma_p2p
# ...while under another name the two live side by side
nrp_must modprobe nvme-rdma-p2p transport=$NRP_TRANSPORT
nrp_must rmmod $NRP_MOD
nrp_must rmmod nvme_rdma

# 2. With the drop-in, a request for nvme-rdma loads ours as "rdma".
modprobe brd rd_nr=1 rd_size=65536 || nrp_fail "cannot create RAM disk"
nrp_cleanup_push "modprobe -r brd"
nrp_nvmet_setup /dev/ram0
nrp_cleanup_push "modprobe -r nvme-rdma-p2p"
out=$(nvme connect-all -t rdma -a "$NRP_TGT_IP4" -s "$NRP_PORT" 2>&1) ||
	nrp_fail "connect-all failed: $out"
nrp_cleanup_push nrp_disconnect_all
nrp_mod_loaded nvme_rdma && nrp_fail "the in-tree nvme_rdma was loaded despite the drop-in"
nrp_mod_loaded $NRP_MOD || nrp_fail "connect-all did not load nvme-rdma-p2p"
ctrl=$(nrp_ctrl_of_subsys "$NRP_SUBNQN") || nrp_fail "connect-all made no controller for $NRP_SUBNQN"
nrp_ctrl_is_ours "$ctrl" || nrp_fail "$ctrl is not driven by nvme-rdma-p2p"
[ "$(cat /sys/module/$NRP_MOD/parameters/transport)" = rdma ] ||
	nrp_fail "module not registered as rdma"
echo "connect-all: $ctrl on nvme-rdma-p2p registered as 'rdma'"
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
nrp_fio_verify "$dev" --rw=randwrite --bs=4k --size=4m --iodepth=8 --ioengine=libaio
nrp_must nvme disconnect-all
nrp_assert_no_ctrls
nrp_pass
