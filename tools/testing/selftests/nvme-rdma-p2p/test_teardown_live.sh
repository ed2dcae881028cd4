#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Controllers go away with what they stand on: unloading the module with
# live controllers deletes them, and so does removing the RDMA device.
. "$(dirname "$0")/lib.sh"

nrp_std_setup 64
nrp_connect; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
nrp_fio_verify "$dev" --rw=write --bs=64k --size=4m
nrp_must modprobe -r nvme-rdma-p2p
nrp_mod_loaded $NRP_MOD && nrp_fail "module still loaded"
nrp_assert_no_ctrls
echo "module unload with a live controller: controller deleted"

nrp_must modprobe nvme-rdma-p2p transport=$NRP_TRANSPORT
nrp_connect; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
fio --name=nrp --filename="$dev" --direct=1 --ioengine=libaio --rw=randwrite \
	--bs=4k --iodepth=16 --size=16m --time_based --runtime=30 \
	--output=/tmp/nrp-fio-rm.log 2>/dev/null &
fio_pid=$!
sleep 3
# Both ends sit in one guest, so the connection runs over the device that
# owns the target address: removing it takes the host queues away.
timeout 60 rdma link delete "nrp_${NRP_RDMA_TYPE:-rxe}_t" || nrp_fail "rdma link delete hung or failed"
nrp_wait_gone "$ctrl" 30 || nrp_fail "$ctrl survived the removal of its RDMA device"
echo "rdma device removal: $ctrl deleted"
# fio must end (with errors), not hang
timeout 60 tail --pid=$fio_pid -f /dev/null || nrp_fail "fio hung after device removal"
wait $fio_pid && echo "fio ended" || echo "fio ended with errors, as expected"
nrp_must rmmod $NRP_MOD
nrp_pass
