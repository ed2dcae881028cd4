#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Controller resets under load: I/O in flight is retried, none is lost, and
# the data verifies afterwards.
. "$(dirname "$0")/lib.sh"

nrp_std_setup 128
nrp_connect --nr-io-queues=2; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"

fio --name=nrp --filename="$dev" --direct=1 --ioengine=libaio --rw=randwrite \
	--bs=16k --iodepth=32 --size=64m --verify=crc32c --verify_fatal=1 \
	--do_verify=1 --output=/tmp/nrp-fio-reset.log &
fio_pid=$!
for i in 1 2 3; do
	sleep 2
	nvme reset "/dev/$ctrl" || nrp_fail "nvme reset #$i failed"
	nrp_wait_state "$ctrl" 30 || nrp_fail "$ctrl not live 30 s after reset #$i ($(nrp_ctrl_state "$ctrl"))"
	echo "reset #$i: $ctrl live again"
done
wait $fio_pid || { cat /tmp/nrp-fio-reset.log; nrp_fail "fio failed across resets"; }
grep -q 'verify: bad' /tmp/nrp-fio-reset.log && nrp_fail "data corrupted across resets"
echo "fio across 3 resets: completed and verified"
nrp_pass
