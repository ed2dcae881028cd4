#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Controller resets under load: writes in flight at each of three resets
# are retried on the new association, none is lost, and all the data
# verifies afterwards.
#
# Each reset waits for fio to be writing (commands going out, writes in
# flight on the path disk), not for a fixed time: a guest can write the
# whole area before a sleep ends, and a reset without I/O in flight shows
# nothing. fio's verify pass starts only after the last write, so every
# block written across the resets is read back and checked.
. "$(dirname "$0")/lib.sh"

mib=64
log=/tmp/nrp-fio-reset.log
nrp_std_setup 128
nrp_connect --nr-io-queues=2; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"

fio --name=nrp --filename="$dev" --direct=1 --ioengine=libaio --rw=randwrite \
	--bs=16k --iodepth=32 --size=${mib}m --verify=crc32c --verify_fatal=1 \
	--do_verify=1 --output-format=terse --terse-version=3 --output=$log &
fio_pid=$!
nrp_cleanup_push "kill $fio_pid 2>/dev/null || true"
for i in 1 2 3; do
	nrp_wait_writing "$ctrl" $fio_pid 32 60
	case $? in
	1) nrp_fail "reset #$i: no writes in flight on $ctrl within $((60 * NRP_SLOW)) s" ;;
	2) nrp_fail "reset #$i: fio ended before it ($(tail -n 3 $log)): the resets met no I/O" ;;
	esac
	# what nvme reset does, without the seconds nvme-cli takes to start
	echo 1 >"/sys/class/nvme/$ctrl/reset_controller" || nrp_fail "reset #$i failed"
	nrp_wait_state "$ctrl" 30 || nrp_fail "$ctrl not live 30 s after reset #$i ($(nrp_ctrl_state "$ctrl"))"
	# I/O waits out a reset: fio cannot have ended in between
	nrp_running $fio_pid ||
		nrp_fail "fio ended during reset #$i: $(tail -n 3 $log)"
	echo "reset #$i with $NRP_INFLIGHT writes in flight: $ctrl live again, fio still running"
done
wait $fio_pid || { cat $log; nrp_fail "fio failed across resets"; }
grep -q 'verify: bad' $log && nrp_fail "data corrupted across resets"
nrp_fio_all_verified $log $((mib * 1024)) "3 resets under writes"
nrp_pass
