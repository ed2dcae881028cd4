#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Data integrity through our transport: fio crc32c verification for write,
# read and randrw, block sizes 512 B to 4 MiB, queue depth 1 to 128,
# several I/O queues; the inline path is taken for small writes. The
# check tier (NRP_TIER=check, run-all.sh) writes half as much per run (8
# MiB: still two 4 MiB commands and 128 in flight of the small sizes), at
# queue depths 1 and 128 only.
. "$(dirname "$0")/lib.sh"

nrp_std_setup 256
nrp_connect --nr-io-queues=2; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
nqueues=$(ls -d /sys/block/"$(nrp_path_disk "$ctrl")"/mq/* 2>/dev/null | wc -l)
echo "$ctrl: $nqueues blk-mq hardware queues"
[ "$nqueues" -ge 2 ] || nrp_fail "expected at least 2 I/O queues, got $nqueues"

aio="--ioengine=libaio"
runs=()
qds="1 32 128"
[ "${NRP_TIER:-}" = check ] && qds="1 128"
for bs in 512 4k 64k 1m 4m; do
	for qd in $qds; do
		size=16m
		[ "${NRP_TIER:-}" = check ] && size=8m
		[ "$bs" = 512 ] && size=2m
		runs+=("$aio --rw=randwrite --bs=$bs --iodepth=$qd --size=$size")
	done
done
nrp_fio_verify_runs "$dev" "${runs[@]}"
echo "randwrite+verify: bs 512, 4k, 64k, 1m, 4m at QD ${qds// /, } (${#runs[@]} runs)"
# a separate read pass over what the last write laid down
nrp_fio_verify "$dev" $aio --rw=write --bs=128k --iodepth=16 --size=32m --do_verify=0
nrp_fio_verify "$dev" $aio --rw=read --bs=128k --iodepth=16 --size=32m --verify_only=1
echo "read: 32 MiB read back and verified"
nrp_fio_verify "$dev" $aio --rw=randrw --bs=16k --iodepth=32 --size=32m --numjobs=2 \
	--offset_increment=64m
echo "randrw: 2 jobs, verified"

# Small writes travel inside the command capsule when the target allows it.
before=$(nrp_stat "$ctrl" inline_writes)
nrp_fio_verify "$dev" $aio --rw=randwrite --bs=4k --iodepth=4 --size=1m
after=$(nrp_stat "$ctrl" inline_writes)
echo "inline_writes: $before -> $after"
[ "$before" != missing ] && [ "$after" -gt "$before" ] ||
	nrp_fail "4 KiB writes did not take the inline path"
nrp_pass
