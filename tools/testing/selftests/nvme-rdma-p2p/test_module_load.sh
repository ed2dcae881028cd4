#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The module loads, announces itself, and unloads without leaving anything.
. "$(dirname "$0")/lib.sh"

nrp_mod_loaded $NRP_MOD && nrp_fail "$NRP_MOD already loaded before the test"
nrp_dmesg_mark
nrp_must modprobe nvme-rdma-p2p transport="$NRP_TRANSPORT"
nrp_mod_loaded $NRP_MOD || nrp_fail "$NRP_MOD not in /proc/modules after modprobe"
nrp_dmesg_since | grep -q "nvme_rdma_p2p: registered transport '$NRP_TRANSPORT'" ||
	nrp_fail "no registration message in the kernel log"
[ "$(cat /sys/module/$NRP_MOD/parameters/transport)" = "$NRP_TRANSPORT" ] ||
	nrp_fail "transport parameter does not read back"
nrp_must modprobe -r nvme-rdma-p2p
nrp_mod_loaded $NRP_MOD && nrp_fail "$NRP_MOD still loaded after modprobe -r"
# a second cycle catches state that the first unload left behind
nrp_must modprobe nvme-rdma-p2p transport="$NRP_TRANSPORT"
nrp_must modprobe -r nvme-rdma-p2p
nrp_pass
