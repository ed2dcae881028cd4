#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Polled I/O: a connection with poll and write queues serves hipri I/O
# from pvsync2 and io_uring with verified data.
. "$(dirname "$0")/lib.sh"

nrp_std_setup 64
nrp_connect --nr-io-queues=1 --nr-write-queues=1 --nr-poll-queues=1; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
path=/sys/block/$(nrp_path_disk "$ctrl")
[ "$(cat "$path/queue/io_poll" 2>/dev/null)" = 1 ] ||
	nrp_fail "$path: io_poll is not enabled with a poll queue"
nq=$(ls -d "$path"/mq/* | wc -l)
[ "$nq" -ge 3 ] || nrp_fail "expected 3 hardware queues (read, write, poll), got $nq"
nrp_fio_verify "$dev" --ioengine=pvsync2 --hipri=1 --rw=randwrite --bs=4k --size=4m
echo "pvsync2 --hipri: verified"
nrp_fio_verify "$dev" --ioengine=io_uring --hipri=1 --rw=randwrite --bs=64k --iodepth=16 --size=16m
echo "io_uring --hipri: verified"
nrp_pass
