#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A batch whose last request fails to map must still post the requests
# queued before it (issue 12, finding 1). blk-mq holds the doorbell with
# bd->last == false and only calls commit_rqs when queue_rq returns an
# error; a mapping failure is answered with a host path error and
# BLK_STS_OK, so the queue itself must post what waits.
#
# debugfs fault_map_last fails the mapping of the next request that ends a
# batch while others wait unposted. fio submits batches of 16 and waits
# for all 16; with nvme_core.max_retries=0 the failed request ends fio at
# once, which then waits for the other 15. Stranded, they would sit until
# the 30 s I/O timeout and an error recovery: the test wants no timeout.
. "$(dirname "$0")/lib.sh"

nrp_std_setup 64
nrp_connect --nr-io-queues=1; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
knob=$NRP_DEBUGFS/$ctrl/fault_map_last

# the failed request must reach fio, not be retried behind the batch
retries=/sys/module/nvme_core/parameters/max_retries
old=$(cat $retries)
echo 0 >$retries
nrp_cleanup_push "echo $old >$retries"

nrp_snap
echo 1 >"$knob"
t0=$(nrp_now)
timeout 120 fio --name=nrp --filename="$dev" --direct=1 --ioengine=libaio \
	--rw=randread --bs=4k --iodepth=16 --iodepth_batch_submit=16 \
	--iodepth_batch_complete_min=16 --size=16m --output=/tmp/nrp-fio-batch.log
rc=$?
secs=$(nrp_secs "$t0" "$(nrp_now)")
echo "fio with one failed batch end: exit $rc after ${secs}s"
nrp_expect "fault_map_last left" "$(cat "$knob")" 0
[ "$rc" != 0 ] || nrp_fail "fio saw no error although a mapping failed"
grep -q 'Input/output error\|err=' /tmp/nrp-fio-batch.log || cat /tmp/nrp-fio-batch.log
# stranded requests time out (15 of them, the rest of the batch), and the
# timeout starts a recovery; fio's own run time depends on the machine
nrp_expect "timeouts" "$(nrp_delta timeouts)" 0
nrp_expect "recoveries" "$(nrp_delta recoveries)" 0

echo "$old" >$retries
nrp_fio_verify "$dev" --ioengine=libaio --rw=randwrite --bs=16k --iodepth=16 \
	--iodepth_batch_submit=16 --size=8m
echo "batches after the fault: written and verified"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_pass
