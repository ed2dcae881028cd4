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

# writes of the full size, 16 deep, while the controller resets onto an
# association with a 64 KiB limit
nrp_dmesg_mark
errs0=$(nrp_stat "$ctrl" errors)
fio --name=big --filename="$dev" --direct=1 --ioengine=libaio --rw=randwrite \
	--bs="${big_kb}k" --iodepth=16 --size=96m --time_based --runtime=$((20 * NRP_SLOW)) \
	--output-format=terse --terse-version=3 >/tmp/mdts-fio.out 2>&1 &
fio_pid=$!
nrp_cleanup_push "kill $fio_pid"
# fio takes seconds to start under TCG: wait until the writes flow
c0=$(nrp_data_cmds "$ctrl")
for _ in $(seq $((150 * NRP_SLOW))); do
	[ $(($(nrp_data_cmds "$ctrl") - c0)) -gt 32 ] && break
	sleep 0.2
done
cmds0=$(nrp_data_cmds "$ctrl")
[ $((cmds0 - c0)) -gt 32 ] ||
	nrp_fail "only $((cmds0 - c0)) commands in $((30 * NRP_SLOW)) s: fio is not running"
echo 64 >"$NRP_DEBUGFS/$ctrl/fault_mdts_kb" || nrp_fail "no fault_mdts_kb"
echo 1 >"/sys/class/nvme/$ctrl/reset_controller" || nrp_fail "reset_controller refused"
sleep 1
nrp_wait_state "$ctrl" 30 || nrp_fail "$ctrl not live after the reset"
wait $fio_pid
rc=$?
cmds1=$(nrp_data_cmds "$ctrl")
echo "fio: exit $rc, $((cmds1 - cmds0)) commands after the reset"
if [ $rc != 0 ] || nrp_dmesg_since | grep -qi "failed to map data"; then
	nrp_dmesg_since | grep -E "map|nvme" | tail -n 5
	nrp_fail "requests built before the shrink failed after it (fio exit $rc: $(grep -m1 -i err /tmp/mdts-fio.out))"
fi
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
sleep 1
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
