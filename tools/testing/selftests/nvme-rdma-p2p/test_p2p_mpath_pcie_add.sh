#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A controller whose subsystem is not known yet does not fail P2P I/O of
# unrelated heads (issue 44, finding 5). nvme_core multipath=Y; ours is
# the one path of a marked head; its target port goes away, and a P2P
# checkpoint started then waits in the head for a path ("no usable path -
# requeuing I/O"). A PCIe NVMe controller appears (the QEMU NVMe device
# bound to the nvme driver, as a hot-added SSD would be): until it
# identifies, the module cannot know its subsystem. The waiting P2P I/O
# must still be waiting once it has identified (an unrelated subsystem),
# the head must be marked again, and when the port comes back the
# checkpoint completes byte-exact. Before the fix every head lost the mark
# at once and every waiting P2P bio failed with -EREMOTEIO.
#
# Needs a QEMU NVMe device (run-all.sh boots it with the topology of
# test_nrp_check_topology.sh, which has one); skips without.
. "$(dirname "$0")/lib_mpath.sh"

nrp_p2p_require
nrp_qemu_nvme
bdf=$NRP_NVME_BDF
nrp_nvme_core_multipath Y
nrp_must modprobe nvme
nrp_cleanup_push "modprobe -r nvme"
drv=/sys/bus/pci/drivers/nvme
[ -e "$drv/$bdf" ] && echo "$bdf" >"$drv/unbind"
[ -e "$drv/$bdf" ] && nrp_fail "cannot unbind $bdf from the nvme driver"

nrp_gpu_setup
nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
nrp_backing_dev ram 64
nrp_nvmet_setup "$NRP_DEV"
nrp_load_ours "$NRP_TRANSPORT" allow_soft_p2p=1
nrp_connect -c 1 -l 300
NRP_NS=$(nrp_ns_dev "$NRP_CTRL") || nrp_fail "no namespace on $NRP_CTRL"
h=$(basename "$NRP_NS")
nrp_wait_head_p2p "$h" 1 || nrp_fail "head $h not marked: $(cat "$NRP_DEBUGFS/heads")"
nrp_snap

nrp_port_off 1 || nrp_fail "cannot take nvmet port 1 away"
nrp_cleanup_push "nrp_port_on 1"
for _ in $(seq 150); do [ "$(nrp_ctrl_state "$NRP_CTRL")" != live ] && break; sleep 0.2; done
[ "$(nrp_ctrl_state "$NRP_CTRL")" != live ] || nrp_fail "$NRP_CTRL still live 30 s after its port went"
"$NRP_P2P_TOOL" --gpu "$NRP_GPU" --dev "$NRP_NS" --size 8M --chunk 1M --qd 8 --stats none \
	>/tmp/nrp-parked.log 2>&1 &
ckpt=$!
nrp_cleanup_push "kill $ckpt"
nrp_dmesg_wait "$h: no usable path - requeuing I/O" 30 ||
	nrp_fail "the P2P checkpoint did not wait in head $h: $(tail -n 3 /tmp/nrp-parked.log)"
echo "$NRP_CTRL $(nrp_ctrl_state "$NRP_CTRL"), its port gone: a P2P checkpoint waits in $h"

before=$(ls /sys/class/nvme)
echo "$bdf" >"$drv/bind" || nrp_fail "cannot bind $bdf to the nvme driver"
nrp_cleanup_push "echo $bdf >$drv/unbind"
c=
for _ in $(seq 150); do
	for x in $(ls /sys/class/nvme); do echo "$before" | grep -qx "$x" || c=$x; done
	[ -n "$c" ] && [ "$(nrp_ctrl_state "$c")" = live ] && break
	sleep 0.2
done
[ -n "$c" ] && [ "$(nrp_ctrl_state "$c")" = live ] || nrp_fail "no live PCIe controller after binding $bdf ($c)"
sub=$(cat "/sys/class/nvme/$c/subsysnqn")
echo "PCIe controller $c ($bdf) added, subsystem $sub"
nrp_wait_head_p2p "$h" 1 5 ||
	nrp_fail "head $h not marked again 5 s after $c told its subsystem: $(cat "$NRP_DEBUGFS/heads")"
nrp_running "$ckpt" || nrp_fail "the waiting P2P checkpoint ended when $c appeared: $(tail -n 3 /tmp/nrp-parked.log)"
echo "head $h marked again, the P2P checkpoint still waits"

nrp_port_on 1 || nrp_fail "cannot give nvmet port 1 back"
wait "$ckpt" || nrp_fail "the P2P checkpoint failed across the PCIe add: $(tail -n 4 /tmp/nrp-parked.log)"
grep -q "^checkpoint verified" /tmp/nrp-parked.log || nrp_fail "no verification line: $(cat /tmp/nrp-parked.log)"
nrp_p2p_expect p2p_unreachable 0
echo "$NRP_CTRL $(nrp_ctrl_state "$NRP_CTRL") again: the checkpoint completed, verified"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_assert_no_splat
nrp_pass
