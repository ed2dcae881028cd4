#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# P2P requests in flight on our path when a path that cannot carry them
# is in the head are not failed over (issue 45: no test ran
# nrp_p2p_block_failover()). nvme_core multipath=Y; one controller of ours
# (one I/O queue of 16) on a target namespace that takes 250 ms per
# command, so that its queue is always full; the GPU stand-in's in-kernel
# mover writes a checkpoint through the head (it checks the head's mark
# once, as such submitters do, and keeps submitting, here every chunk even
# after one failed, as a batching submitter does). The in-tree
# nvme_rdma connects through a second port whose ANA group is
# inaccessible: its path joins the head (which loses its mark) but the
# core routes nothing to it, so the mover's bios keep going to our path.
# Then our port goes away: every P2P request in flight on our path fails
# with EREMOTEIO and the "not failed over" line, and so does every bio the
# mover submits after that, which waits in the head for a path (none is
# usable) until our controller's next reconnect attempt fails it
# (nrp_mpath_ctrl_down()); the checkpoint ends with "Remote I/O error"
# after submitting every chunk, while our port is still away, and the
# in-tree path carried nothing. Without the refusal the requests would
# wait in the head for a path and go on when one comes: to the in-tree
# path once it is accessible (test_p2p_mpath_requeue.sh covers bios that
# wait in the head when such a path joins). A CI run of the mover that
# stopped at its first error hit the second case by chance: one bio it
# submitted as our controller left LIVE waited in the head for 180 s.
# Then our port comes back and the in-tree path leaves: the head is marked
# again.
# nrp-timeout: 900
. "$(dirname "$0")/lib_mpath.sh"

nrp_p2p_require
nrp_nvme_core_multipath Y
nrp_gpu_setup
nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
nrp_slow_backing 250 272
nrp_nvmet_setup "$NRP_DEV"
nrp_second_path
nrp_ana 2 inaccessible || nrp_fail "cannot make port 2's ANA group inaccessible"
nrp_load_ours "$NRP_TRANSPORT" allow_soft_p2p=1
nrp_must modprobe --ignore-install nvme-rdma
nrp_cleanup_push "modprobe -r nvme_rdma"
nrp_connect_path 1 --nr-io-queues=1 --queue-size=16 --reconnect-delay=1; c1=$NRP_CTRL
NRP_NS=$(nrp_head_dev) || nrp_fail "no head disk"
h=$(basename "$NRP_NS")
nrp_wait_head_p2p "$h" 1 || nrp_fail "head $h not marked: $(cat "$NRP_DEBUGFS/heads")"
p1=$(nrp_path_sysfs "$c1") || nrp_fail "no path disk of $c1"
echo "head $h over $c1 alone, marked; the target takes 250 ms per command"

log=/tmp/inflight-ckpt.log
"$NRP_P2P_TOOL" --gpu "$NRP_GPU" --dev "$NRP_NS" --size 256M --chunk 256K --qd 64 \
	--keep-going --stats none >$log 2>&1 &
ck=$!
nrp_cleanup_push "kill $ck"
for _ in $(seq $((300 * NRP_SLOW))); do
	[ "$(nrp_path_inflight "$p1")" -ge 8 ] && break
	nrp_running $ck || break
	sleep 0.1
done
[ "$(nrp_path_inflight "$p1")" -ge 8 ] ||
	nrp_fail "no P2P requests in flight on $c1: $(nrp_path_inflight "$p1") ($(tail -n 3 $log))"
echo "checkpoint started: $(nrp_path_inflight "$p1") requests in flight on $c1"

t0=$(nrp_now)
before=$(ls /sys/class/nvme)
nvme connect -t rdma -a "$NRP_TGT2_IP4" -s "$NRP_PORT" -n "$NRP_SUBNQN" >/dev/null 2>&1 ||
	nrp_fail "the in-tree nvme_rdma did not connect"
c3=
for c in $(ls /sys/class/nvme); do echo "$before" | grep -qx "$c" || c3=$c; done
[ -n "$c3" ] && ! nrp_ctrl_is_ours "$c3" || nrp_fail "no in-tree controller joined ($c3)"
for _ in $(seq 100); do p3=$(nrp_path_sysfs "$c3") && break; sleep 0.1; done
[ -n "$p3" ] || nrp_fail "the in-tree path joined no head"
for _ in $(seq 100); do [ "$(cat "$p3/ana_state" 2>/dev/null)" = inaccessible ] && break; sleep 0.1; done
nrp_expect "ANA state of the in-tree path" "$(cat "$p3/ana_state" 2>/dev/null)" inaccessible
nrp_expect "head $h's P2P mark with the in-tree path in it" "$(nrp_head_p2p "$h")" 0
nrp_running $ck || nrp_fail "the checkpoint ended before our port could be cut: $(tail -n 3 $log)"
ios3=$(nrp_path_ios "$p3")
left=$(nrp_path_inflight "$p1")
[ "$left" -gt 0 ] || nrp_fail "nothing in flight on $c1 with the checkpoint running"
echo "in-tree $c3 joined (inaccessible) after $(nrp_secs "$t0" "$(nrp_now)")s; $left P2P requests in flight on $c1"

nrp_dmesg_mark
tcut=$(nrp_now)
nrp_port_off 1 || nrp_fail "cannot take port 1 away"
nrp_cleanup_push "nrp_port_on 1"
end=$((SECONDS + 60 * NRP_SLOW))
while [ "$SECONDS" -le "$end" ]; do nrp_running $ck || break; nrp_nap 0.2; done
nrp_running $ck &&
	nrp_fail "the checkpoint still runs $((60 * NRP_SLOW))s after port 1 went away: its requests wait in the head ($(nrp_dmesg_since | grep -c 'requeuing I/O') 'requeuing' lines)"
tend=$(nrp_now)
wait $ck && nrp_fail "the checkpoint succeeded with its requests cut off: $(tail -n 3 $log)"
grep -q "Remote I/O error" $log ||
	nrp_fail "the checkpoint did not fail with EREMOTEIO: $(tail -n 5 $log)"
# every chunk was submitted: those after the cut waited in the head and failed there
nrp_expect "bios the mover submitted" \
	"$(sed -n 's/.*I\/O error after \([0-9]*\) bios.*/\1/p' $log)" $((256 * 4))
echo "the checkpoint ended $(nrp_secs "$tcut" "$tend")s after the cut, every chunk submitted"
n=$(nrp_dmesg_since | grep -c "a P2P request not failed over")
[ "$n" -ge 1 ] || nrp_fail "no 'not failed over' line for the requests in flight on $c1: $(nrp_dmesg_since | grep -E 'nvme|nrp' | tail -n 5)"
nrp_expect "I/O on the in-tree path" "$(nrp_path_ios "$p3")" "$ios3"
echo "port 1 away: the checkpoint failed with EREMOTEIO ($(grep -m1 'Remote I/O error' $log | cut -c1-100)); 'not failed over' logged; the in-tree path carried nothing"

nrp_port_on 1 || nrp_fail "cannot give port 1 back"
nrp_wait_state "$c1" $((60 * NRP_SLOW)) || nrp_fail "$c1 not live after port 1 came back"
nrp_must nvme disconnect -d "$c3"
nrp_wait_gone "$c3" 30 || nrp_fail "$c3 still there"
nrp_wait_head_p2p "$h" 1 || nrp_fail "head $h not marked again with $c1 alone: $(cat "$NRP_DEBUGFS/heads")"
echo "port 1 back, in-tree path gone: head $h marked again"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_assert_no_splat
nrp_pass
