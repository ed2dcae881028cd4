#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A target whose MDTS shrinks across a reconnect (issue 12, finding 3):
# requests built under the old, larger limit are requeued to the new
# association and must still map. The I/O queues' MRs keep the largest
# page list any association of the controller needed, so they do.
#
# nvmet-rdma's MDTS is fixed, so debugfs's fault_mdts_kb lowers the limit
# at the next association exactly as a smaller MDTS would (the core takes
# the smaller of ours and the target's). nvme_core.multipath=N: in-flight
# requests are then retried as they are, not split again by a head.
#
# Also: max_mr_pages bounds the MRs (default 256 entries, as nvme_rdma).
. "$(dirname "$0")/lib_p2p.sh"

limit() { nrp_debugfs_value "$ctrl" limits "$1"; }

nrp_nvme_core_multipath N
nrp_std_setup 128
nrp_connect --nr-io-queues=1; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
q=/sys/block/$(basename "$dev")/queue

nrp_expect "max_mr_pages (module default)" "$(limit max_mr_pages)" 256
nrp_expect "I/O-queue MR page list" "$(limit io_mr_pages)" 256
big_kb=$(cat "$q/max_hw_sectors_kb")
nrp_expect "max_hw_sectors_kb" "$big_kb" 1020
echo "$big_kb" >"$q/max_sectors_kb" || nrp_fail "cannot raise max_sectors_kb"

# Writes of the full size, 16 deep, while the controller resets onto an
# association with a 64 KiB limit; fio's verify pass then reads all of it
# back, what requests built before the shrink wrote included. The trace
# shows such requests: commands of more than 64 KiB mapped after the new
# association's Connect on the I/O queue.
nrp_tracefs_require
E=$T/events/nvme_rdma_p2p
nrp_cleanup_push "echo 0 >$E/nrp_submit/enable; echo 0 >$E/nrp_map/enable; echo 0 >$E/nrp_submit/filter; echo 0 >$E/nrp_map/filter"
echo 'opcode == 0x7f' >$E/nrp_submit/filter || nrp_fail "cannot filter nrp_submit"
echo 'bytes > 65536' >$E/nrp_map/filter || nrp_fail "cannot filter nrp_map"
echo >$T/trace
echo 1 >$E/nrp_submit/enable
echo 1 >$E/nrp_map/enable
nrp_dmesg_mark
errs0=$(nrp_stat "$ctrl" errors)
# 120 writes of the full size
kib=$((120 * big_kb))
log=/tmp/mdts-fio.out
fio --name=big --filename="$dev" --direct=1 --ioengine=libaio --rw=randwrite \
	--bs="${big_kb}k" --iodepth=16 --size=${kib}k --verify=crc32c --verify_fatal=1 \
	--do_verify=1 --output-format=terse --terse-version=3 --output=$log 2>$log.err &
fio_pid=$!
nrp_cleanup_push "kill $fio_pid 2>/dev/null || true"
# fio takes seconds to start under TCG: wait until the writes flow
nrp_wait_writing "$ctrl" $fio_pid 16 30
case $? in
1) nrp_fail "no writes in flight on $ctrl within $((30 * NRP_SLOW)) s" ;;
2) nrp_fail "fio ended before the shrink: $(tail -n 3 $log)" ;;
esac
cmds0=$(nrp_data_cmds "$ctrl")
echo 64 >"$NRP_DEBUGFS/$ctrl/fault_mdts_kb" || nrp_fail "no fault_mdts_kb"
echo 1 >"/sys/class/nvme/$ctrl/reset_controller" || nrp_fail "reset_controller refused"
nrp_wait_state "$ctrl" 30 || nrp_fail "$ctrl not live after the reset"
echo "reset onto a 64 KiB limit with $NRP_INFLIGHT writes of ${big_kb} KiB in flight"
wait $fio_pid
rc=$?
echo 0 >$E/nrp_submit/enable
echo 0 >$E/nrp_map/enable
cmds1=$(nrp_data_cmds "$ctrl")
echo "fio: exit $rc, $((cmds1 - cmds0)) commands after the reset"
if [ $rc != 0 ] || nrp_dmesg_since | grep -qi "failed to map data"; then
	nrp_dmesg_since | grep -E "map|nvme" | tail -n 5
	head -n 5 $log.err
	nrp_fail "requests built before the shrink failed after it (fio exit $rc: $(head -n 1 $log.err))"
fi
nrp_fio_all_verified $log $kib "writes across the shrink"
# the last Connect on I/O queue 1 is the new association's
big=$(awk -v c="$ctrl" '
	/ nrp_submit: / && $0 ~ " " c " qid=1 " { n = 0; next }
	/ nrp_map: / && $0 ~ " " c " qid=1 " { n++ }
	END { print n + 0 }' $T/trace)
[ "$big" -gt 0 ] ||
	nrp_fail "no command of more than 64 KiB was mapped after the shrink: nothing built before it crossed"
echo "commands of more than 64 KiB mapped on the new association: $big"
nrp_expect "errors counted" "$(nrp_stat "$ctrl" errors)" "$errs0"
nrp_expect "max_hw_sectors after the shrink" "$(limit max_hw_sectors)" 128
nrp_expect "I/O-queue MR page list after the shrink (kept)" "$(limit io_mr_pages)" 256
[ $((cmds1 - cmds0)) -gt 16 ] || nrp_fail "no I/O after the reset"

# the new limit applies to new I/O; data written since is intact
echo 64 >"$q/max_sectors_kb" 2>/dev/null || true
nrp_fio_verify "$dev" --ioengine=libaio --rw=randwrite --bs=64k --iodepth=4 --size=8m

# back to the target's own MDTS: the pool follows it up
echo 0 >"$NRP_DEBUGFS/$ctrl/fault_mdts_kb"
echo 1 >"/sys/class/nvme/$ctrl/reset_controller" || nrp_fail "reset_controller refused"
nrp_wait_state "$ctrl" 30 || nrp_fail "$ctrl not live after the second reset"
nrp_expect "max_hw_sectors after the limit is lifted" "$(limit max_hw_sectors)" 2040
nrp_must nvme disconnect -n "$NRP_SUBNQN"

# max_mr_pages: 2048 lets the target's MDTS (1 MiB on nvmet-rdma) bind on
# rxe (512 entries) and siw (256: one held back, 1020 KiB)
nrp_must rmmod $NRP_MOD
nrp_must modprobe nvme-rdma-p2p transport=$NRP_TRANSPORT max_mr_pages=2048
nrp_connect --nr-io-queues=1; ctrl=$NRP_CTRL
nrp_expect "max_mr_pages (module parameter)" "$(limit max_mr_pages)" 2048
case ${NRP_RDMA_TYPE:-rxe} in
rxe)	nrp_expect "max_hw_sectors (MDTS binds)" "$(limit max_hw_sectors)" 2048
	nrp_expect "admin-queue MR page list (the device's)" "$(limit admin_mr_pages)" 512 ;;
siw)	nrp_expect "max_hw_sectors (the device binds)" "$(limit max_hw_sectors)" 2040 ;;
esac
nrp_must nvme disconnect -n "$NRP_SUBNQN"
out=$(echo 4096 >/sys/module/$NRP_MOD/parameters/max_mr_pages 2>&1) &&
	nrp_fail "max_mr_pages=4096 accepted"
echo "max_mr_pages=4096 refused: $out"
nrp_assert_no_splat
nrp_pass
