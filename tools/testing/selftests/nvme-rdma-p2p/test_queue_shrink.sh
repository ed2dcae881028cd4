#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A reconnect that grants a smaller queue (issue 27, finding 7). The tag set
# keeps the depth of the first association; the queue must be built for
# what the target now grants (send queue, receive ring, send CQ), with an
# MR for every tag that may still come, and hold back the commands beyond
# the granted depth. Before, the send queue was sized for the new depth
# while blk-mq kept sending the old one: posts failed, the controller went
# into recovery, reconnected and failed again.
#
# debugfs's fault_queue_size lowers the queue size at the next association
# exactly as a smaller MQES of the target would (the core takes the
# smaller). fio reads and writes 128 deep, verifying, across the reset to a
# 16-deep queue and on after it: no error, no recovery, every command
# above 16 counted as held back, data intact.
. "$(dirname "$0")/lib_p2p.sh"

limit() { nrp_debugfs_value "$ctrl" limits "$1"; }

nrp_nvme_core_multipath N
nrp_std_setup 128
nrp_connect --nr-io-queues=1 --queue-size=128; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
nrp_expect "I/O queue depth" "$(limit io_queue_depth)" 128
depth0=$(limit io_queue_tags)
[ "$depth0" -le 128 ] || nrp_fail "tags $depth0 above the depth of 128"
# the tag set's depth, which a reconnect keeps: nr_tags of the
# namespace's hardware queue in blk-mq's debugfs, the set's queue_depth
# with the connect's reserved tag in it (6.1's nvme_alloc_io_tag_set()
# makes it sqsize + 1, 128; 6.12's sqsize, 127). Not nr_requests, which
# follows an I/O scheduler's tags.
set_depth=$(awk -F= '$1 == "nr_tags" { print $2 }' \
	"/sys/kernel/debug/block/$(basename "$dev")/hctx0/tags")
[ -n "$set_depth" ] || nrp_fail "no blk-mq debugfs tags for $dev"
echo "tag set depth: $set_depth"

nrp_snap
errs0=$(nrp_stat "$ctrl" errors)
fio --name=deep --filename="$dev" --direct=1 --ioengine=libaio --rw=randrw \
	--bs=16k --iodepth=128 --size=96m --verify=crc32c --verify_fatal=1 \
	--do_verify=1 --output=/tmp/qshrink-fio.log &
fio_pid=$!
nrp_cleanup_push "kill $fio_pid"
c0=$(nrp_data_cmds "$ctrl")
for _ in $(seq $((150 * NRP_SLOW))); do
	[ $(($(nrp_data_cmds "$ctrl") - c0)) -gt 256 ] && break
	nrp_running $fio_pid || break
	sleep 0.2
done
nrp_running $fio_pid || nrp_fail "fio ended before the reset: $(tail -n 3 /tmp/qshrink-fio.log)"
[ $(($(nrp_data_cmds "$ctrl") - c0)) -gt 256 ] || nrp_fail "fio is not running deep"
echo 16 >"$NRP_DEBUGFS/$ctrl/fault_queue_size" || nrp_fail "no fault_queue_size"
nrp_dmesg_mark
echo 1 >"/sys/class/nvme/$ctrl/reset_controller" || nrp_fail "reset_controller refused"
nrp_dmesg_wait "fault: queue size 16 instead of 128" $((30 * NRP_SLOW)) ||
	nrp_fail "the reset did not take the smaller queue: $(nrp_dmesg_since | tail -n 5)"
nrp_wait_state "$ctrl" $((30 * NRP_SLOW)) || nrp_fail "$ctrl not live after the reset"
nrp_expect "I/O queue depth after the reset" "$(limit io_queue_depth)" 16
nrp_expect "tags the queue must take (the tag set's)" "$(limit io_queue_tags)" "$set_depth"
# the deep I/O goes on over the shallow queue, if fio is still writing:
# on a loaded host it may have finished while the reset ran, which the
# fresh deep run below covers either way
c1=$(nrp_data_cmds "$ctrl")
nrp_running $fio_pid || echo "fio finished while the reset ran"
for _ in $(seq $((150 * NRP_SLOW))); do
	nrp_running $fio_pid || break
	[ $(($(nrp_data_cmds "$ctrl") - c1)) -gt 256 ] && break
	sleep 0.2
done
wait $fio_pid || { tail -n 20 /tmp/qshrink-fio.log; nrp_fail "fio failed across the shrink"; }
grep -q 'verify: bad' /tmp/qshrink-fio.log && nrp_fail "data corrupted across the shrink"
held=$(nrp_delta queue_full_requeues)
nrp_expect "errors" "$(nrp_stat "$ctrl" errors)" "$errs0"
nrp_expect "recoveries" "$(nrp_delta recoveries)" 0
nrp_expect "timeouts" "$(nrp_delta timeouts)" 0
echo "128-deep fio across a reset to a 16-deep queue: verified; $held commands held back"
# and a fresh deep verify on the shrunken queue, which must hold commands
# back: 64 in flight on a 16-deep queue with 128 tags
nrp_fio_verify "$dev" --ioengine=libaio --rw=randwrite --bs=4k --iodepth=64 --size=16m
[ "$(nrp_delta queue_full_requeues)" -gt "$held" ] ||
	nrp_fail "no command was held back at depth 16 under 64-deep I/O ($held before it)"
nrp_expect "recoveries" "$(nrp_delta recoveries)" 0
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_assert_no_splat
nrp_pass
