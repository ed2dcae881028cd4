#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Nothing walks a controller that is being freed (the code review of issue
# 27/28, finding 1). On 6.12 the core cleans a controller's namespace-list
# SRCU before it calls our free_ctrl; a controller still on our multipath
# list then, visited by a read of debugfs "heads" (or by our work or a new
# controller's arrival), made srcu_read_lock() write through freed per-CPU
# data. Ours leave that list when they are deleted.
#
# fault_free_delay_ms holds free_ctrl for seconds after the core's own
# teardown; meanwhile "heads" is read again and again, and a controller of
# another transport comes and goes (our class interface walks our
# controllers then). Nothing may be reported, and "heads" must not list the
# controller being freed.
. "$(dirname "$0")/lib_p2p.sh"

nrp_nvme_core_multipath Y
nrp_std_setup 64
nrp_connect; ctrl=$NRP_CTRL
nrp_ns_dev "$ctrl" >/dev/null || nrp_fail "no namespace"
grep -q " $ctrl path " "$NRP_DEBUGFS/heads" || nrp_fail "heads does not list $ctrl: $(cat "$NRP_DEBUGFS/heads")"
echo 8000 >"$NRP_DEBUGFS/fault_free_delay_ms"
nrp_cleanup_push "echo 0 >$NRP_DEBUGFS/fault_free_delay_ms"
nrp_dmesg_mark
nvme disconnect -n "$NRP_SUBNQN" >/tmp/nrp-disconnect.log 2>&1 &
dpid=$!
nrp_dmesg_wait "fault: freeing a controller" 15 || nrp_fail "free_ctrl never reached its delay"
n=0
for _ in $(seq 20); do
	h=$(cat "$NRP_DEBUGFS/heads") || nrp_fail "reading heads failed"
	echo "$h" | grep -q " $ctrl path " && nrp_fail "heads lists $ctrl while it is freed: $h"
	n=$((n + 1))
	sleep 0.1
done
# a controller of another transport arrives and leaves meanwhile
modprobe --ignore-install nvme-rdma || nrp_fail "cannot load the in-tree nvme_rdma"
nrp_cleanup_push "modprobe -r nvme_rdma"
nvme connect -t rdma -a "$NRP_TGT_IP4" -s "$NRP_PORT" -n "$NRP_SUBNQN" >/dev/null 2>&1 ||
	nrp_fail "the in-tree nvme_rdma did not connect"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
echo 0 >"$NRP_DEBUGFS/fault_free_delay_ms"
wait $dpid || nrp_fail "nvme disconnect failed: $(cat /tmp/nrp-disconnect.log)"
nrp_dmesg_wait "fault: free delay over" 15 || nrp_fail "free_ctrl never went on"
echo "$n reads of heads and an in-tree controller's arrival while $ctrl was being freed: nothing reported"
nrp_assert_no_splat
nrp_pass
