#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Module exit must not return while free_ctrl still runs (issue 12,
# finding 7): exit waits for every controller to be freed, and free_ctrl
# is module code; if it announced "freed" before its last instruction,
# the module text could go away under it.
#
# debugfs fault_free_delay_ms makes free_ctrl sleep before it frees the
# controller's memory. rmmod, started while it sleeps, must wait for it,
# and the kernel must report nothing.
. "$(dirname "$0")/lib.sh"

nrp_std_setup 64
nrp_connect; ctrl=$NRP_CTRL
# 10 s: under a loaded host, noticing the delay's log line can take
# seconds, and rmmod must still start well inside the delay.
echo 10000 >"$NRP_DEBUGFS/fault_free_delay_ms"
nrp_dmesg_mark
nvme disconnect -n "$NRP_SUBNQN" >/tmp/nrp-disconnect.log 2>&1 &
dpid=$!
nrp_dmesg_wait "fault: freeing a controller" 15 ||
	nrp_fail "free_ctrl never reached its delay"
t0=$(nrp_now)
rmmod $NRP_MOD || nrp_fail "rmmod failed"
secs=$(nrp_secs "$t0" "$(nrp_now)")
echo "rmmod returned after ${secs}s"
# let a free_ctrl that was not waited for wake up in unloaded text
sleep 11
wait $dpid || nrp_fail "nvme disconnect failed: $(cat /tmp/nrp-disconnect.log)"
nrp_assert_no_splat
awk -v s="$secs" 'BEGIN { exit !(s >= 1.5) }' ||
	nrp_fail "rmmod returned after ${secs}s, while free_ctrl was still asleep"
echo "rmmod waited ${secs}s for free_ctrl; nothing reported"
nrp_pass
