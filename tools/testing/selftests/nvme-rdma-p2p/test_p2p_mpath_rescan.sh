#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A head that a later namespace scan creates takes P2P pages too (issue
# 44, finding 4). nvme_core multipath=Y, one controller of ours that can
# carry P2P (allow_soft_p2p=1), the subsystem's namespace 2 disabled at
# connect. Enabling it on the target sends a Namespace Attribute Changed
# event; the host's scan makes a second head, which must be marked
# (debugfs heads "p2p 1") and take a byte-exact P2P checkpoint with
# nothing bounced. Before the fix such a head stayed unmarked until the
# next reconnect, and P2P submitters refused it.
. "$(dirname "$0")/lib_p2p.sh"

nrp_p2p_require
nrp_nvme_core_multipath Y
nrp_gpu_setup
nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
nrp_must modprobe brd rd_nr=2 rd_size=$((64 * 1024))
nrp_cleanup_push "modprobe -r brd"
nrp_nvmet_setup /dev/ram0
ns2=/sys/kernel/config/nvmet/subsystems/$NRP_SUBNQN/namespaces/2
mkdir "$ns2" || nrp_fail "cannot create namespace 2"
nrp_cleanup_push "rmdir $ns2"
echo /dev/ram1 >"$ns2/device_path"
nrp_load_ours "$NRP_TRANSPORT" allow_soft_p2p=1
nrp_connect
NRP_NS=$(nrp_ns_dev "$NRP_CTRL") || nrp_fail "no namespace on $NRP_CTRL"
h1=$(basename "$NRP_NS")
nrp_wait_head_p2p "$h1" 1 || nrp_fail "head $h1 not marked at connect: $(cat "$NRP_DEBUGFS/heads")"
[ -z "$(ls -d /sys/class/nvme/"$NRP_CTRL"/nvme*n2 2>/dev/null)" ] ||
	nrp_fail "namespace 2 exists before it was enabled"
echo "connected $NRP_CTRL: head $h1 marked, namespace 2 not there yet"

echo 1 >"$ns2/enable" || nrp_fail "cannot enable namespace 2"
nrp_cleanup_push "echo 0 >$ns2/enable"
nrp_dmesg_wait "$NRP_CTRL: rescanning namespaces" 30 ||
	nrp_fail "no rescan after namespace 2 was enabled (Namespace Attribute Changed)"
NRP_NS=$(nrp_p2p_ns 2) || nrp_fail "no disk for namespace 2 after the rescan"
h2=$(basename "$NRP_NS")
[ "$h2" != "$h1" ] || nrp_fail "namespace 2 got head $h1"
nrp_wait_head_p2p "$h2" 1 ||
	nrp_fail "head $h2 of the rescan: P2P mark $(nrp_head_p2p "$h2"), expected 1: $(cat "$NRP_DEBUGFS/heads")"
echo "rescan: head $h2 for namespace 2, P2P mark 1"
nrp_p2p_ckpt_exact $((8 << 20)) --chunk 1M --qd 8
echo "checkpoint through $h2: byte-exact, nothing bounced"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_assert_no_splat
nrp_pass
