#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The ways a command's data is described to the target, each proved by
# the counters and each with verified data:
#  - FRWR with remote invalidation (default): the target's response
#    invalidates every registration, we post no LOCAL_INV;
#  - FRWR with local invalidation: when the target does not invalidate
#    (here: we stop asking, debugfs remote_invalidate=N) every command
#    ends with our own LOCAL_INV before it completes (the send CQ is armed
#    for its completion only because the command waits for it: counted),
#    and the provider calls our handler for the send CQ's events, a CQ
#    ib_core made direct-polled (send_cq_events; run over rxe and siw);
#  - global rkey (register_always=N, as with nvme_rdma): single-segment
#    I/O skips registration altogether.
. "$(dirname "$0")/lib.sh"

nrp_std_setup 64
nrp_connect; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
knob=$NRP_DEBUGFS/$ctrl/remote_invalidate
nrp_expect "remote_invalidate by default" "$(cat "$knob")" Y

# 128 writes and 128 reads of 64 KiB, verified: each of them registered,
# and each registration ended the $1 way (remote or local), none the other
frwr_round() {
	local how=$1 other=remote frwr waits
	[ "$how" = remote ] && other=local
	nrp_snap
	nrp_fio_verify "$dev" --ioengine=libaio --rw=randwrite --bs=64k --iodepth=8 --size=8m
	frwr=$(nrp_delta frwr_registrations)
	[ "$frwr" -ge 256 ] || nrp_fail "only $frwr FRWR commands for 128 writes and 128 reads of 64 KiB"
	nrp_expect "$how invalidations" "$(nrp_delta "${how}_invalidations")" "$frwr"
	nrp_expect "$other invalidations" "$(nrp_delta "${other}_invalidations")" 0
	# a LOCAL_INV completes after the response, on the send CQ that is
	# armed only for a waiter: each of those commands waited for it once,
	# and still completed, verified
	waits=$(nrp_delta send_completion_waits)
	[ "$how" = remote ] || [ "$waits" -ge "$frwr" ] ||
		nrp_fail "$waits waits for a send completion, fewer than the $frwr LOCAL_INVs"
	# the send CQ is direct-polled and armed by us: the provider must
	# call our event handler (ib_core's own for such a CQ only warns)
	events=$(nrp_delta send_cq_events)
	[ "$how" = remote ] || [ "$events" -gt 0 ] ||
		nrp_fail "no event of the send CQ for $waits waits: the provider did not call our handler"
	echo "$how invalidation: $frwr FRWR commands, each ended that way ($waits waited for a send completion, $events send CQ events)"
}

frwr_round remote
echo N >"$knob"
frwr_round local
echo Y >"$knob"
[ "$(nrp_stat "$ctrl" recoveries)" = 0 ] || nrp_fail "an error recovery ran"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_must rmmod $NRP_MOD

nrp_load_ours "$NRP_TRANSPORT" register_always=N
nrp_connect; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
nrp_fio_verify "$dev" --ioengine=libaio --rw=write --bs=4k --iodepth=8 --size=4m --do_verify=0
nrp_snap
nrp_fio_verify "$dev" --ioengine=libaio --rw=read --bs=4k --iodepth=8 --size=4m --verify_only=1
nrp_expect "global-rkey reads of 4 KiB" "$(nrp_delta global_rkey_mappings)" 1024
nrp_expect "FRWR for them" "$(nrp_delta frwr_registrations)" 0
echo "register_always=N: 1024 reads of 4 KiB by the global rkey, no registration"
nrp_fio_verify "$dev" --ioengine=libaio --rw=randrw --bs=256k --iodepth=8 --size=16m
echo "register_always=N: 256 KiB randrw verified"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_must rmmod $NRP_MOD
nrp_pass
