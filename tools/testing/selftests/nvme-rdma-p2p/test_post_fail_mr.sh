#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The provider takes a command's REG_MR but refuses its SEND (issue 12,
# finding 4): the MR is registered, its rkey valid over pages about to be
# unmapped. It must not go back to the pool, where the next command would
# get it; the queue keeps it until the QP is destroyed.
#
# debugfs fault_post makes one chain fail that way under fio load. rxe
# refuses to register an MR that is still valid ("not free"), so a pool
# that handed it out shows in the log. The failed command is retried and
# recovery rebuilds the queue: fio must still verify.
. "$(dirname "$0")/lib.sh"

nrp_std_setup 256
nrp_connect --nr-io-queues=1 --reconnect-delay=1; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"

nrp_dmesg_mark
nrp_snap
fio --name=nrp --filename="$dev" --direct=1 --ioengine=libaio --rw=randrw \
	--bs=64k --iodepth=16 --size=128m --verify=crc32c --verify_fatal=1 \
	--do_verify=1 --output=/tmp/nrp-fio-postfail.log &
fio_pid=$!
nrp_cleanup_push "kill $fio_pid"
# Arm the fault once fio's commands register MRs, not after a fixed
# sleep: a fast guest had finished 32 MiB within the 2 s it once waited,
# and the fault never fired.
for _ in $(seq 100); do
	[ "$(nrp_delta frwr_registrations)" -gt 16 ] && break
	nrp_running "$fio_pid" || break
	sleep 0.1
done
nrp_running "$fio_pid" ||
	nrp_fail "fio ended before the fault could be armed: $(nrp_delta frwr_registrations) registrations"
echo 1 >"$NRP_DEBUGFS/$ctrl/fault_post"
wait $fio_pid || { cat /tmp/nrp-fio-postfail.log; nrp_fail "fio failed across the refused post"; }
grep -q 'verify: bad' /tmp/nrp-fio-postfail.log && nrp_fail "data corrupted"
nrp_wait_state "$ctrl" 30 || nrp_fail "$ctrl not live after the refused post"
nrp_expect "fault_post left" "$(cat "$NRP_DEBUGFS/$ctrl/fault_post")" 0
nrp_expect "mrs_held_back" "$(nrp_delta mrs_held_back)" 1
nrp_dmesg_since | grep "not free" &&
	nrp_fail "the pool handed out an MR whose rkey was still valid"
nrp_assert_no_splat
echo "refused SEND after REG_MR: MR held back, recoveries $(nrp_delta recoveries), fio verified"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_pass
