#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The remaining connect options behave as with the in-tree transport:
# hostid, tos and disable_sqflow are taken; duplicate_connect decides
# whether a second identical connect is refused; fast_io_fail_tmo fails
# I/O early while the controller keeps reconnecting.
. "$(dirname "$0")/lib.sh"

cfs=/sys/kernel/config/nvmet
nrp_std_setup 64
hostid=6f2c1d9e-51a4-4b8e-9d0a-2f6a7c3e8b11

# hostid, tos, disable_sqflow through nvme-cli
nrp_connect --hostid=$hostid --tos=8 --disable-sqflow; ctrl=$NRP_CTRL
[ "$(cat /sys/class/nvme/$ctrl/hostid)" = $hostid ] ||
	nrp_fail "hostid reads $(cat /sys/class/nvme/$ctrl/hostid)"
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
nrp_fio_verify "$dev" --rw=randwrite --bs=8k --size=4m
echo "hostid, tos=8, disable_sqflow: $ctrl live, I/O verified"

# duplicate_connect: the same target, subsystem and host as the first one
hostnqn=$(cat /sys/class/nvme/$ctrl/hostnqn)
opts="transport=$NRP_TRANSPORT,traddr=$NRP_TGT_IP4,trsvcid=$NRP_PORT,nqn=$NRP_SUBNQN,hostnqn=$hostnqn,hostid=$hostid"
out=$(nrp_fabrics_write "$opts") && nrp_fail "duplicate connect accepted: $out"
echo "duplicate refused: ${out##*: }"
out=$(nrp_fabrics_write "$opts,duplicate_connect") || nrp_fail "duplicate_connect refused: $out"
n=$(grep -l "$NRP_SUBNQN" /sys/class/nvme/nvme*/subsysnqn | wc -l)
[ "$n" = 2 ] || nrp_fail "expected 2 controllers with duplicate_connect, found $n"
echo "duplicate_connect: second controller $out"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_assert_no_ctrls

# fast_io_fail_tmo: I/O fails after 2 s, long before ctrl_loss_tmo (60 s)
out=$(nrp_fabrics_write "$opts,reconnect_delay=1,ctrl_loss_tmo=60,fast_io_fail_tmo=2") ||
	nrp_fail "connect with fast_io_fail_tmo failed: $out"
ctrl=nvme$(echo "$out" | sed -n 's/.*instance=\([0-9]*\).*/\1/p')
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
rm "$cfs/ports/1/subsystems/$NRP_SUBNQN"
t0=$(date +%s)
timeout 50 dd if=/dev/zero of="$dev" bs=4k count=1 oflag=direct status=none &&
	nrp_fail "write succeeded with the target gone"
dt=$(($(date +%s) - t0))
echo "fast_io_fail_tmo=2: write failed after ${dt}s, $ctrl $(nrp_ctrl_state "$ctrl")"
[ "$dt" -lt 30 ] || nrp_fail "I/O took ${dt}s to fail with fast_io_fail_tmo=2"
[ -e "/sys/class/nvme/$ctrl" ] || nrp_fail "$ctrl was removed, ctrl_loss_tmo had not expired"
ln -s "$cfs/subsystems/$NRP_SUBNQN" "$cfs/ports/1/subsystems/"
nrp_wait_state "$ctrl" 60 || nrp_fail "$ctrl did not come back live"
dd if=/dev/zero of="$dev" bs=4k count=1 oflag=direct status=none ||
	nrp_fail "I/O still failing after reconnect"
echo "$ctrl live again, I/O flows"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_pass
