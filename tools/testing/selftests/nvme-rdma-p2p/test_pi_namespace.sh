#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# T10-PI namespaces. This transport never carries metadata (no
# NVME_F_METADATA_SUPPORTED, no integrity segments): the nvme core then
# serves a namespace formatted with T10-PI (8-byte PI metadata) by setting
# PRACT in every read and write, so the controller inserts and strips the
# PI itself, and hides (capacity 0) a namespace with any other metadata.
#
# Here the target is nvmet-rdma with a PI-formatted backing device
# (scsi_debug, DIF type 1 with DIX) and PI asked for on its port. Soft
# RDMA has no signature offload (IBK_INTEGRITY_HANDOVER), so nvmet turns
# PI off for the port and exports the namespace without metadata: we see
# a plain 512-byte namespace, the host disk has no integrity profile, and
# the target's block layer generates and checks the PI on the backing
# device (scsi_debug fails any I/O whose PI does not match).
. "$(dirname "$0")/lib.sh"

cfs=/sys/kernel/config/nvmet
nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
modprobe scsi_debug dev_size_mb=64 dif=1 dix=1 sector_size=512 ||
	nrp_skip "no scsi_debug module"
nrp_cleanup_push "modprobe -r scsi_debug"
# no udev in the guest to load the disk driver for the new SCSI device
modprobe sd_mod || nrp_fail "no sd_mod"
sd=
for _ in $(seq 50); do
	sd=$(ls /sys/bus/pseudo/drivers/scsi_debug/adapter*/host*/target*/*/block 2>/dev/null | head -n1)
	[ -n "$sd" ] && [ -b "/dev/$sd" ] && break
	sleep 0.2
done
[ -n "$sd" ] || nrp_fail "scsi_debug made no disk"
fmt=$(cat "/sys/block/$sd/integrity/format")
nrp_expect "backing device $sd integrity" "$fmt" T10-DIF-TYPE1-CRC

nrp_nvmet_setup "/dev/$sd"
# PI on the port (only while it exports nothing) and on the subsystem
rm "$cfs/ports/1/subsystems/$NRP_SUBNQN"
echo 1 >"$cfs/ports/1/param_pi_enable" || nrp_fail "cannot set param_pi_enable"
echo 1 >"$cfs/subsystems/$NRP_SUBNQN/attr_pi_enable" || nrp_fail "cannot set attr_pi_enable"
ln -s "$cfs/subsystems/$NRP_SUBNQN" "$cfs/ports/1/subsystems/" ||
	nrp_fail "cannot re-enable the port"
nrp_load_ours

nrp_dmesg_mark
nrp_connect --nr-io-queues=1; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
nrp_dmesg_since | grep -m1 "T10-PI is not supported by device" ||
	nrp_fail "nvmet did not turn PI off on ${NRP_RDMA_TYPE:-rxe}"
idns=$(nvme id-ns "$dev")
dps=$(echo "$idns" | awk '$1 == "dps" { print $3 }')
ms=$(echo "$idns" | sed -n 's/.*lbaf  *0 *: *ms:\([0-9]*\).*/\1/p')
nrp_expect "namespace dps (PI type)" "$dps" 0
nrp_expect "namespace LBA format 0 metadata size" "$ms" 0
disk=$(basename "$dev")
nrp_expect "host disk integrity" "$(cat "/sys/block/$disk/integrity/format")" none
[ "$(cat "/sys/block/$disk/size")" -gt 0 ] || nrp_fail "namespace has no capacity"

# data moves; the target's block layer adds and checks PI on the way
nrp_fio_verify "$dev" --ioengine=libaio --rw=randwrite --bs=4k --iodepth=8 --size=8m
nrp_fio_verify "$dev" --ioengine=libaio --rw=write --bs=128k --iodepth=4 --size=16m
nrp_dmesg_since | grep -iE "protection|guard|ref tag|integrity" &&
	nrp_fail "PI errors on the target"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_assert_no_splat
nrp_pass
