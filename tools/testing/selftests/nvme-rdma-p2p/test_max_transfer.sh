#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The largest command is derived: it is the smaller of the RDMA device's
# fast-register page-list length, bounded by the module's max_mr_pages
# (default 256, less the page an unaligned buffer needs), and the target's
# MDTS, and the I/O-queue MRs are sized to it. An I/O of exactly that size
# travels as one command; one page more is split.
#
# With nvmet-rdma (MDTS 1 MiB) and the default max_mr_pages, the module's
# bound binds on rxe (512-entry page lists) and on siw (256 entries);
# test_mdts_shrink.sh raises max_mr_pages to let MDTS bind.
. "$(dirname "$0")/lib.sh"

limit() { nrp_debugfs_value "$ctrl" limits "$1"; }
min() { echo $(($1 < $2 ? $1 : $2)); }

type=${NRP_RDMA_TYPE:-rxe}
nrp_std_setup 64
nrp_connect; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
q=/sys/block/$(nrp_path_disk "$ctrl")/queue

# the device's page-list length, as ib_core reports it to the module
len=$(limit fr_page_list_len)
case $type in
rxe)	nrp_expect "rxe fast-register page-list length" "$len" 512 ;;
siw)	nrp_expect "siw fast-register page-list length" "$len" 256 ;;
esac
dev_pages=$(($(min "$len" "$(limit max_mr_pages)") - 1))
nrp_expect "pages per FRWR the device allows" "$(limit max_fr_pages)" "$dev_pages"

# the target's MDTS, in 4 KiB pages (nvmet's CAP.MPSMIN); 0 means no limit
mdts=$(nvme id-ctrl "/dev/$ctrl" | awk '$1 == "mdts" { print $3 }')
[ -n "$mdts" ] || nrp_fail "nvme id-ctrl /dev/$ctrl shows no mdts"
if [ "$mdts" = 0 ]; then
	mdts_pages=$dev_pages
	echo "target MDTS: none"
else
	mdts_pages=$((1 << mdts))
	echo "target MDTS: $mdts ($((mdts_pages * 4)) KiB)"
fi

pages=$(min "$dev_pages" "$mdts_pages")
if [ "$pages" = "$dev_pages" ]; then bound="the device and max_mr_pages"; else bound="the target's MDTS"; fi
nrp_expect "max_hw_sectors_kb (bound by $bound)" "$(cat "$q/max_hw_sectors_kb")" $((pages * 4))
nrp_expect "max_segments" "$(cat "$q/max_segments")" "$(min $((pages + 1)) "$dev_pages")"
nrp_expect "admin-queue MR page list" "$(limit admin_mr_pages)" $((dev_pages + 1))
nrp_expect "I/O-queue MR page list (sized after Identify)" "$(limit io_mr_pages)" $((pages + 1))

# let the block layer build commands of the full size
for d in "$q" "/sys/block/$(basename "$dev")/queue"; do
	cat "$d/max_hw_sectors_kb" >"$d/max_sectors_kb" ||
		nrp_fail "cannot raise $d/max_sectors_kb"
done

max_kb=$((pages * 4)) n=16
before=$(nrp_data_cmds "$ctrl") frwr=$(nrp_stat "$ctrl" frwr_registrations)
nrp_fio_verify "$dev" --ioengine=libaio --rw=write --bs="${max_kb}k" --iodepth=4 \
	--size=$((n * max_kb))k
nrp_expect "commands for $n writes and $n reads of $max_kb KiB" $(($(nrp_data_cmds "$ctrl") - before)) $((2 * n))
nrp_expect "of them by FRWR" $(($(nrp_stat "$ctrl" frwr_registrations) - frwr)) $((2 * n))

before=$(nrp_data_cmds "$ctrl")
nrp_fio_verify "$dev" --ioengine=libaio --rw=write --bs="$((max_kb + 4))k" --iodepth=4 \
	--size=$((n * (max_kb + 4)))k
nrp_expect "commands for $n writes and $n reads of $((max_kb + 4)) KiB (each split in two)" \
	$(($(nrp_data_cmds "$ctrl") - before)) $((4 * n))
nrp_pass
