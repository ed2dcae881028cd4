#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Checkpoint files on XFS and ext4 on a remote namespace, written from P2P
# memory by a user process (p2p-checkpoint --user --file: mmap of
# p2pmem/allocate, O_DIRECT, fsync, read back into the same P2P memory,
# compared word by word), then the filesystem unmounted and checked clean
# (xfs_repair -n, e2fsck -fn). Linux 6.2 and later.
#
# Over nvme-rdma-p2p the payload is mapped as P2P bytes, exactly twice its
# size (written and read). The host bytes are the filesystem's metadata
# (log, inodes, extents, bitmaps: never in P2P memory): reported per phase
# and held to a bound far below the payload. 4 KiB, 64 MiB and 1 GiB (XFS;
# ext4 256 MiB), pwrite and io_uring, a mixed P2P/host buffer.
#
# Then the same checkpoint writes through the in-tree nvme_rdma, side by
# side: the block layer refuses the P2P pages (EREMOTEIO), host memory is
# served, and the filesystem is still clean afterwards.
#
# Skips on kernels without P2PDMA or without the user-space path (6.1).
#
# The largest file is there to span several extents (XFS allocation
# groups, ext4's 128 MiB extent limit), so that O_DIRECT requests are
# split at extent boundaries; it asserts so. In the check tier
# (NRP_TIER=check, run-all.sh) the XFS one is 256 MiB on a smaller RAM
# disk, which spans allocation groups as 1 GiB does on the larger disk:
# the same assertions in about half the time under TCG. Under the debug
# kernel the largest file is 64 MiB (extents not asserted), the 64 MiB
# file itself, not a second one of the same size, and the in-tree side is
# left to the kernels without the checkers.
# nrp-timeout: 2400
. "$(dirname "$0")/lib_p2p.sh"

big=1024 big_ext4=256 min_extents=2
[ "${NRP_TIER:-}" = check ] && big=256
# io_uring 16 deep in 1 MiB requests, under the debug kernel 4 deep: at
# its 1 to 4 MiB/s under TCG a request waits behind the 15 others, and
# 16 MiB at 0.5 MiB/s on a loaded host outlasts the 30 s I/O timeout
# (nrp_uckpt_p2p_check: what a recovery sends again is mapped again)
uqd=16
case $(uname -r) in *-nrp-debug*) big=64 big_ext4=64 min_extents=1 uqd=4 ;; esac
# room for the largest file and the filesystem's own, and never below
# mkfs.xfs's smallest filesystem (300 MB): the debug kernel's 64 MiB file
# needs the disk that minimum sets
disk=$((big + 192))
[ "$disk" -ge 320 ] || disk=320
nrp_p2p_user_setup "$disk"
[ "$NRP_P2PMEM_AVAIL" -ge $((big << 20)) ] ||
	nrp_fail "only $NRP_P2PMEM_AVAIL bytes of p2pmem available, $big MiB needed (run-guest.sh --gpu-mem 2G)"
mnt=/mnt/nrp-user
mkdir -p $mnt
echo "$NRP_CTRL: $NRP_NS, p2pmem $(basename "$NRP_GPU_PCI"): $((NRP_P2PMEM_AVAIL >> 20)) MiB available"
NRP_SIDE=
nrp_side_row "request" "nvme-rdma-p2p" "in-tree nvme_rdma"
declare -A ours

mkfs_mount() { # FS DEV
	case $1 in
	xfs)  nrp_must mkfs.xfs -q -f "$2" ;;
	# 4 KiB blocks on every disk size: below 512 MiB (the check tier's
	# disk) mke2fs would pick 1 KiB ones
	ext4) nrp_must mkfs.ext4 -q -F -b 4096 "$2" ;;
	esac
	nrp_must mount -t "$1" "$2" $mnt
	nrp_cleanup_push "! mountpoint -q $mnt || umount $mnt"
}

umount_check() { # FS DEV
	nrp_must umount $mnt
	case $1 in
	xfs)  nrp_must xfs_repair -n "$2" >/dev/null ;;
	ext4) nrp_must e2fsck -fn "$2" >/dev/null ;;
	esac
	echo "  $1: unmounted, $([ "$1" = xfs ] && echo "xfs_repair -n" || echo "e2fsck -fn") clean"
}

# One checkpoint file of $3 bytes ($4 of them from host memory) on $1.
file_ckpt() { # FS KEY SIZE HOST-PAYLOAD WHAT ARGS...
	local fs=$1 key=$2 size=$3 hostpay=$4 what=$5 p2p host meta bound inflight
	shift 5
	inflight=$(nrp_ckpt_inflight "$@")
	nrp_snap
	nrp_dmesg_mark
	nrp_p2p_user served --file "$mnt/checkpoint-$key" --size "$size" "$@"
	p2p=$((NRP_UCKPT_P2P_W + NRP_UCKPT_P2P_F + NRP_UCKPT_P2P_R))
	host=$((NRP_UCKPT_HOST_W + NRP_UCKPT_HOST_F + NRP_UCKPT_HOST_R))
	meta=$((host - hostpay))
	nrp_uckpt_p2p_check $((2 * size - hostpay)) "$inflight" "$fs $what"
	# metadata: far below the payload, and never negative
	bound=$((size / 16 + (8 << 20)))
	[ "$meta" -ge 0 ] && [ "$meta" -le "$bound" ] ||
		nrp_fail "$fs $what: host_bytes_mapped +$host: $meta beyond the payload's $hostpay host bytes (bound $bound)"
	echo "  $fs $what: verified; payload p2p_bytes_mapped +$p2p (${NRP_UCKPT_REMAP:-exact}), host payload $hostpay;" \
		"metadata host bytes write $NRP_UCKPT_HOST_W, fsync $NRP_UCKPT_HOST_F, read $NRP_UCKPT_HOST_R" \
		"($(echo "$NRP_UCKPT_OUT" | grep -E '^checkpoint verified' | sed 's/.*MiB on [a-z0-9]* from [a-z]* memory, //'))"
	ours[$fs-$key]="served, p2p +$p2p, metadata $meta"
}

one_fs() { # FS BIG-MIB
	local fs=$1 b=$2 extents key
	mkfs_mount "$fs" "$NRP_NS"
	file_ckpt "$fs" 4k 4096 0 "4 KiB, pwrite" --chunk 4K
	file_ckpt "$fs" 64m $((64 << 20)) 0 "64 MiB, io_uring" --io uring --chunk 1M --qd "$uqd"
	key=big
	if [ "$b" -gt 64 ]; then
		file_ckpt "$fs" big $((b << 20)) 0 "$b MiB, io_uring" --io uring --chunk 1M --qd 16
	else
		key=64m
	fi
	extents=$(filefrag "$mnt/checkpoint-$key" | sed -n 's/.*: \([0-9]*\) extents\{0,1\} found$/\1/p')
	[ "${extents:-0}" -ge "$min_extents" ] ||
		nrp_fail "$fs $b MiB file: ${extents:-no} extents, at least $min_extents expected (filefrag: $(filefrag "$mnt/checkpoint-$key"))"
	echo "  $fs $b MiB file: $extents extents"
	file_ckpt "$fs" mix $((8 << 20)) $((8 << 20)) "8 MiB mixed P2P/host, pwritev" --mem mix --chunk 1M
	umount_check "$fs" "$NRP_NS"
}

one_fs xfs "$big"
one_fs ext4 "$big_ext4"

# The same files through the in-tree nvme_rdma of this kernel.
nrp_p2p_user_then_intree
intree_fs() { # FS
	local fs=$1
	mkfs_mount "$fs" "$NRP_NS"
	nrp_p2p_user refused --file "$mnt/checkpoint-4k" --stats none --size 4K --chunk 4K
	nrp_side_row "$fs file 4 KiB from P2P, pwrite" "${ours[$fs-4k]}" "refused: EREMOTEIO"
	nrp_p2p_user refused --file "$mnt/checkpoint-64m" --stats none --size 64M --io uring --qd 16
	nrp_side_row "$fs file 64 MiB from P2P, io_uring" "${ours[$fs-64m]}" "refused: EREMOTEIO"
	nrp_p2p_user refused --file "$mnt/checkpoint-mix" --stats none --size 8M --mem mix
	nrp_side_row "$fs file 8 MiB mixed P2P/host" "${ours[$fs-mix]}" "refused: EREMOTEIO"
	nrp_p2p_user served --file "$mnt/checkpoint-host" --stats none --size 8M --mem host
	nrp_side_row "$fs file 8 MiB from host memory" "(host memory: not P2P)" "served"
	echo "  $fs: P2P checkpoint files refused (EREMOTEIO), host memory served"
	umount_check "$fs" "$NRP_NS"
}
intree_fs xfs
intree_fs ext4
echo "side by side (the same requests, the same target):"
printf '%s' "$NRP_SIDE"
nrp_pass
