#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# P2P requests in flight on our path when a path that cannot carry them
# has joined the head are not failed over to it (issue 45: no test ran
# nrp_p2p_block_failover()). nvme_core multipath=Y, user-space O_DIRECT
# from mapped P2P memory (io_uring) through the head of one controller of
# ours, on a target namespace that completes each command after seconds,
# so that requests sit in flight. The in-tree nvme_rdma connects through
# a second port: the head loses its mark, and new P2P submissions are
# refused where the kernel pins the pages. While requests of the
# checkpoint are still in flight on our path, our port goes away: each of
# them fails with EREMOTEIO and the "not failed over" line, the checkpoint
# fails with "Remote I/O error", and the in-tree path carries no I/O.
# Without the refusal they would be failed over to the in-tree path,
# which copies P2P memory with the CPU over rxe. Then our port comes back
# and the namespace reads back what was written before.
# nrp-timeout: 900
. "$(dirname "$0")/lib_mpath.sh"

nrp_p2p_require
nrp_p2p_user_capable ||
	nrp_skip "Linux $(uname -r) maps no P2P memory for user space (6.2 and later do): the in-kernel mover checks the mark once per transfer and keeps submitting, see design.rst"
nrp_nvme_core_multipath Y
nrp_gpu_setup_ckpt
nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
# each command completes after this long on the target: under the I/O
# timeout (30 s), long enough for the in-tree connect and its scan (7.6 s
# measured with five guests on two cores)
hold=20
nrp_slow_backing $((hold * 1000)) 128
# null_blk times its own requests out after 5 s: not these
echo $(((hold + 30) * 1000)) >"/sys/block/$(basename "$(readlink -f "$NRP_DEV")")/queue/io_timeout" ||
	nrp_fail "cannot raise the slow namespace's request timeout"
nrp_nvmet_setup "$NRP_DEV"
nrp_second_path
nrp_load_ours "$NRP_TRANSPORT" allow_soft_p2p=1
nrp_must modprobe --ignore-install nvme-rdma
nrp_cleanup_push "modprobe -r nvme_rdma"
nrp_connect_path 1 --reconnect-delay=1; c1=$NRP_CTRL
NRP_NS=$(nrp_head_dev) || nrp_fail "no head disk"
h=$(basename "$NRP_NS")
nrp_wait_head_p2p "$h" 1 || nrp_fail "head $h not marked: $(cat "$NRP_DEBUGFS/heads")"
p1=$(nrp_path_sysfs "$c1") || nrp_fail "no path disk of $c1"
echo "head $h over $c1 alone, marked; the target completes each command after ${hold}s"

log=/tmp/inflight-ckpt.log
"$NRP_P2P_TOOL" --user --dev "$NRP_NS" --size 64M --io uring --chunk 1M --qd 16 \
	--stats none >$log 2>&1 &
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
nrp_expect "head $h's P2P mark with the in-tree path in it" "$(nrp_head_p2p "$h")" 0
ios3=$(nrp_path_ios "$p3")
left=$(nrp_path_inflight "$p1")
[ "$left" -gt 0 ] ||
	nrp_fail "the in-tree path joined $(nrp_secs "$t0" "$(nrp_now)")s after the connect began; nothing was in flight on $c1 any more (the target holds each command ${hold}s)"
echo "in-tree $c3 joined after $(nrp_secs "$t0" "$(nrp_now)")s; $left requests still in flight on $c1"

nrp_dmesg_mark
nrp_port_off 1 || nrp_fail "cannot take port 1 away"
nrp_cleanup_push "nrp_port_on 1"
for _ in $(seq $((600 * NRP_SLOW))); do nrp_running $ck || break; sleep 0.1; done
nrp_running $ck && nrp_fail "the checkpoint still runs $((60 * NRP_SLOW))s after port 1 went away"
wait $ck && nrp_fail "the checkpoint succeeded with its requests cut off: $(tail -n 3 $log)"
grep -q "Remote I/O error" $log ||
	nrp_fail "the checkpoint did not fail with EREMOTEIO: $(tail -n 5 $log)"
n=$(nrp_dmesg_since | grep -c "a P2P request not failed over")
[ "$n" -ge 1 ] || nrp_fail "no 'not failed over' line for the requests in flight on $c1: $(nrp_dmesg_since | grep -E 'nvme|nrp' | tail -n 5)"
nrp_expect "I/O on the in-tree path" "$(nrp_path_ios "$p3")" "$ios3"
echo "port 1 away: the checkpoint failed with EREMOTEIO ($(grep -m1 'Remote I/O error' $log)); 'not failed over' logged; the in-tree path carried nothing"

nrp_port_on 1 || nrp_fail "cannot give port 1 back"
nrp_wait_state "$c1" $((60 * NRP_SLOW)) || nrp_fail "$c1 not live after port 1 came back"
nrp_must nvme disconnect -d "$c3"
nrp_wait_gone "$c3" 30 || nrp_fail "$c3 still there"
nrp_wait_head_p2p "$h" 1 || nrp_fail "head $h not marked again with $c1 alone: $(cat "$NRP_DEBUGFS/heads")"
echo "port 1 back, in-tree path gone: head $h marked again"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_assert_no_splat
nrp_pass
