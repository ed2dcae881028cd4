#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Filesystems on a remote namespace: ext4 and xfs are made, mounted,
# filled, checked clean, remounted and read back byte-exact.
. "$(dirname "$0")/lib.sh"

nrp_std_setup 512
nrp_connect; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
mnt=/mnt/nrp
mkdir -p $mnt

one_fs() {
	local fs=$1 i
	case $fs in
	ext4) nrp_must mkfs.ext4 -q -F "$dev" ;;
	xfs)  nrp_must mkfs.xfs -q -f "$dev" ;;
	esac
	nrp_must mount "$dev" $mnt
	nrp_cleanup_push "! mountpoint -q $mnt || umount $mnt"
	for i in 1 2 3 4; do
		head -c $((i * 3 * 1048576 + 4097)) /dev/urandom >"$mnt/file$i"
	done
	cp -a /usr/share/doc/fio $mnt/tree 2>/dev/null || true
	(cd $mnt && find . -type f -print0 | sort -z | xargs -0 sha256sum) >/tmp/nrp-sums
	nrp_must umount $mnt
	case $fs in
	ext4) nrp_must fsck.ext4 -fn "$dev" ;;
	xfs)  nrp_must xfs_repair -n "$dev" ;;
	esac
	# drop every cached page so the read-back really crosses the fabric
	echo 3 >/proc/sys/vm/drop_caches
	nrp_must mount "$dev" $mnt
	(cd $mnt && sha256sum --quiet -c /tmp/nrp-sums) || nrp_fail "$fs: files differ after remount"
	nrp_must umount $mnt
	echo "$fs: $(wc -l </tmp/nrp-sums) files written, fsck clean, read back byte-exact"
}

one_fs ext4
one_fs xfs
nrp_pass
