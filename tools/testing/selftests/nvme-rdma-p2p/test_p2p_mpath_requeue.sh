#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# P2P bios that a requeue round holds while another transport's controller
# arrives never reach its path (issue 44, finding 3). nvme_core
# multipath=Y; ours is the one path of a marked head; its port goes away
# and a P2P checkpoint waits in the head. debugfs fault_requeue_hold takes
# the waiting bios off the head's list, as the core's requeue work does
# before it submits them again, and holds them. The in-tree nvme_rdma
# connects through port 2: as soon as the module has seen its controller
# come (the head unmarked; its connect under way, before its namespace
# scan), the held bios are submitted again; no path is usable, they wait
# in the head again. When the in-tree
# path joins, they must fail (-EREMOTEIO), before it can take them: the
# checkpoint fails with "Remote I/O error" and the in-tree path carries no
# I/O. Before the fix the waiting bios were failed only when the
# controller appeared, when the round held them, and the in-tree path
# then carried the P2P checkpoint.
# nrp-timeout: 600
. "$(dirname "$0")/lib_mpath.sh"

nrp_p2p_require
nrp_nvme_core_multipath Y
nrp_gpu_setup
nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
nrp_backing_dev ram 64
nrp_nvmet_setup "$NRP_DEV"
nrp_second_path
nrp_load_ours "$NRP_TRANSPORT" allow_soft_p2p=1
nrp_connect_path 1 --reconnect-delay=1 --ctrl-loss-tmo=300; ours=$NRP_CTRL
NRP_NS=$(nrp_head_dev) || nrp_fail "no head disk"
h=$(basename "$NRP_NS")
nrp_wait_head_p2p "$h" 1 || nrp_fail "head $h not marked: $(cat "$NRP_DEBUGFS/heads")"
hold=$NRP_DEBUGFS/fault_requeue_hold
nrp_p2p_hold_waiting "$ours" "$h" /tmp/nrp-requeue.log
ckpt=$NRP_HELD_CKPT
echo "$ours $(nrp_ctrl_state "$ours"), its port gone: $NRP_HELD P2P bios held off head $h, as a requeue round holds them"

nrp_intree_after_ours
# the next controller's name: the lowest instance free
for ((i = 0; ; i++)); do [ -e "/sys/class/nvme/nvme$i" ] || break; done
c=nvme$i
nvme connect -t rdma -a "$NRP_TGT2_IP4" -s "$NRP_PORT" -n "$NRP_SUBNQN" >/tmp/nrp-requeue-connect.log 2>&1 &
cpid=$!
nrp_cleanup_push "kill $cpid"
# Let them go once the module has seen the controller come (the head
# unmarked: the nvme class's add_dev ran, which its sysfs directory
# precedes). Builtins only: over rxe the in-tree connect and scan take
# milliseconds.
end=$((SECONDS + 30 * NRP_SLOW))
seen=
until [ -n "$seen" ]; do
	while read -r hd _ _ _ _ mark; do
		[ "$hd" = "$h" ] && [ "$mark" = 0 ] && seen=1
	done <"$NRP_DEBUGFS/heads"
	[ $SECONDS -lt $end ] || nrp_fail "head $h still marked 30 s into the in-tree connect: $(cat /tmp/nrp-requeue-connect.log)"
done
echo 0 >"$hold"
[ -e "/sys/class/nvme/$c" ] || nrp_fail "head $h unmarked, but no $c"
[ -z "$(ls -d /sys/class/nvme/"$c"/nvme*c*n1 2>/dev/null)" ] ||
	nrp_fail "raced: the in-tree path had joined before the held bios were let go"
echo "in-tree $c appeared ($(nrp_ctrl_state "$c")): the held bios submitted again, no path usable"
wait "$cpid" || nrp_fail "the in-tree connect failed: $(cat /tmp/nrp-requeue-connect.log)"
for _ in $(seq 150); do p3=$(nrp_path_sysfs "$c") && break; sleep 0.2; done
[ -n "$p3" ] || nrp_fail "the in-tree path joined no head"

end=$((SECONDS + 60 * NRP_SLOW))
while nrp_running "$ckpt"; do
	[ $SECONDS -lt $end ] || nrp_fail "the P2P checkpoint still runs 60 s after the in-tree path joined"
	nrp_nap 0.2
done
ios=$(nrp_path_ios "$p3")
wait "$ckpt" && nrp_fail "the P2P checkpoint completed with our path gone: the in-tree path ($(basename "$p3"), $ios I/Os) carried it"
[ "$ios" = 0 ] || nrp_fail "the in-tree path carried $ios I/Os of the P2P checkpoint: $(grep -E '^(write|flush|p2p-checkpoint)' /tmp/nrp-requeue.log | paste -sd' ')"
grep -q "Remote I/O error" /tmp/nrp-requeue.log ||
	nrp_fail "the P2P checkpoint failed without -EREMOTEIO: $(tail -n 3 /tmp/nrp-requeue.log)"
nrp_expect "head $h's P2P mark with the in-tree path in it" "$(nrp_head_p2p "$h")" 0
echo "in-tree path $(basename "$p3") joined: the P2P bios failed (-EREMOTEIO) before it took any, it carried none"
nrp_must nvme disconnect -d "$c"
nrp_port_on 1
nrp_wait_state "$ours" $((60 * NRP_SLOW)) live || nrp_fail "$ours not live again"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_assert_no_splat
nrp_pass
