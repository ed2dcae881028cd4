#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# P2P bios waiting in a head fail when our path leaves it while a path
# that cannot carry them stays (review of the head sweep, finding 2).
# nvme_core multipath=Y; ours is the one path of a marked head, with a
# reconnect delay longer than the test, so that no attempt of its looks
# at the head while the test runs. Its port goes away and a P2P
# checkpoint waits in the head; debugfs fault_requeue_hold takes the
# waiting bios off the head's list (as the core's requeue work does) while
# the in-tree nvme_rdma connects through a port whose ANA group is
# inaccessible: its path joins the head (unmarked) and the core routes
# nothing to it. The held bios are let go: no path is usable, they wait in
# the head again, behind a path that cannot carry them. Then our
# controller is deleted: its path leaving the head must fail them
# (-EREMOTEIO), or they wait for as long as the in-tree controller lives
# and go down its path once its ANA group is accessible.
# nrp-timeout: 600
. "$(dirname "$0")/lib_mpath.sh"

nrp_p2p_require
nrp_nvme_core_multipath Y
nrp_gpu_setup
nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
nrp_backing_dev ram 64
nrp_nvmet_setup "$NRP_DEV"
nrp_second_path
nrp_ana 2 inaccessible || nrp_fail "cannot make port 2's ANA group inaccessible"
nrp_load_ours "$NRP_TRANSPORT" allow_soft_p2p=1
nrp_connect_path 1 --reconnect-delay=3600 --ctrl-loss-tmo=3600; ours=$NRP_CTRL
NRP_NS=$(nrp_head_dev) || nrp_fail "no head disk"
h=$(basename "$NRP_NS")
nrp_wait_head_p2p "$h" 1 || nrp_fail "head $h not marked: $(cat "$NRP_DEBUGFS/heads")"
hold=$NRP_DEBUGFS/fault_requeue_hold
log=/tmp/nrp-leave.log
nrp_p2p_hold_waiting "$ours" "$h" $log
ckpt=$NRP_HELD_CKPT
echo "$ours $(nrp_ctrl_state "$ours"), its port gone: $NRP_HELD P2P bios held off head $h"

nrp_intree_after_ours
before=$(ls /sys/class/nvme)
nrp_must nvme connect -t rdma -a "$NRP_TGT2_IP4" -s "$NRP_PORT" -n "$NRP_SUBNQN"
c=
for x in /sys/class/nvme/*; do
	x=${x##*/}
	echo "$before" | grep -qx "$x" || c=$x
done
[ -n "$c" ] && ! nrp_ctrl_is_ours "$c" || nrp_fail "no in-tree controller joined ($c)"
p3=
for _ in $(seq 150); do p3=$(nrp_path_sysfs "$c") && break; nrp_nap 0.2; done
[ -n "$p3" ] || nrp_fail "the in-tree path joined no head"
for _ in $(seq 100); do [ "$(cat "$p3/ana_state" 2>/dev/null)" = inaccessible ] && break; nrp_nap 0.1; done
nrp_expect "ANA state of the in-tree path" "$(cat "$p3/ana_state" 2>/dev/null)" inaccessible
nrp_expect "head $h's P2P mark with the in-tree path in it" "$(nrp_head_p2p "$h")" 0
ios3=$(nrp_path_ios "$p3")

# let them go: no path is usable, back into the head they go
echo 0 >"$hold"
nrp_expect "bios still held" "$(cat "$hold")" 0
nrp_running $ckpt || nrp_fail "the checkpoint ended before our path left: $(tail -n 3 $log)"
nrp_expect "$ours's state (no attempt before the test ends)" "$(nrp_ctrl_state "$ours")" connecting
echo "in-tree $c joined (inaccessible); the held bios wait in head $h again, the checkpoint waits"

t0=$(nrp_now)
nrp_must nvme disconnect -d "$ours"
nrp_wait_gone "$ours" 30 || nrp_fail "$ours still there after its disconnect"
end=$((SECONDS + 30 * NRP_SLOW))
while nrp_running $ckpt; do
	[ $SECONDS -lt $end ] ||
		nrp_fail "the P2P checkpoint still waits $((30 * NRP_SLOW))s after our path left head $h"
	nrp_nap 0.2
done
wait $ckpt && nrp_fail "the P2P checkpoint completed with our path gone: $(tail -n 3 $log)"
grep -q "Remote I/O error" $log ||
	nrp_fail "the P2P checkpoint failed without -EREMOTEIO: $(tail -n 3 $log)"
nrp_expect "I/O on the in-tree path" "$(nrp_path_ios "$p3")" "$ios3"
echo "$ours deleted: the waiting P2P bios failed (-EREMOTEIO) $(nrp_secs "$t0" "$(nrp_now)")s after, the in-tree path carried none"
nrp_must nvme disconnect -d "$c"
nrp_wait_gone "$c" 30 || nrp_fail "$c still there"
nrp_assert_no_splat
nrp_pass
