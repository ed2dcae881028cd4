#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A response that claims the target invalidated an rkey that is not the
# command's (issue 12, finding 5). The command's own registration is then
# still valid: it must be invalidated locally before the command completes
# and its MR returns to the pool, the event counted and logged, and the
# connection kept (nothing is wrong with it).
#
# Here the target never invalidates (remote_invalidate=N) and debugfs
# fault_bogus_inv makes three responses claim a foreign rkey. rxe refuses
# to register an MR that is still valid ("not free"), so an MR handed out
# with a live rkey shows in the log.
. "$(dirname "$0")/lib.sh"

nrp_std_setup 64
nrp_connect --nr-io-queues=1; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
echo N >"$NRP_DEBUGFS/$ctrl/remote_invalidate"

nrp_dmesg_mark
nrp_snap
echo 3 >"$NRP_DEBUGFS/$ctrl/fault_bogus_inv"
nrp_fio_verify "$dev" --ioengine=libaio --rw=randwrite --bs=64k --iodepth=8 --size=8m
nrp_expect "fault_bogus_inv left" "$(cat "$NRP_DEBUGFS/$ctrl/fault_bogus_inv")" 0
nrp_dmesg_since | grep "not free" &&
	nrp_fail "an MR was registered again while its rkey was still valid"
nrp_expect "recoveries" "$(nrp_delta recoveries)" 0
nrp_expect "bogus_remote_invalidations" "$(nrp_stat "$ctrl" bogus_remote_invalidations)" 3
frwr=$(nrp_delta frwr_registrations)
nrp_expect "local invalidations (one per FRWR)" "$(nrp_delta local_invalidations)" "$frwr"
n=$(nrp_dmesg_since | grep -c "Bogus remote invalidation for rkey")
[ "$n" -ge 1 ] && [ "$n" -le 3 ] || nrp_fail "$n log lines for 3 bogus invalidations"
nrp_assert_no_splat
echo "3 bogus invalidations: counted, logged, invalidated locally; $frwr FRWR commands verified"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_pass
