#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest half of tools/demo.sh (runs inside the QEMU guest): a checkpoint
# from simulated GPU memory to a remote namespace over nvme-rdma-p2p,
# with no bounce buffer in system RAM. The in-guest test "demo" runs it as
# it is, so what the README's first command does is under test.
#
# Where the kernel lets user space map P2P memory (p2pmem/allocate, Linux
# 6.2 and later, so the 6.12 P2PDMA guest), the checkpoint is what an
# application writes: a file on XFS on the remote namespace, written by a
# user process from P2P memory with O_DIRECT, fsync'd, read back and
# compared. Elsewhere (6.1) the GPU stand-in's in-kernel mover writes the
# raw namespace.
#
#   tools/demo-guest.sh [SIZE_MIB]      (in the guest, from the checkout)
set -u
. tools/testing/selftests/nvme-rdma-p2p/lib_p2p.sh
size=${1:-256}

step() { echo "==> $*"; }
indent() { sed 's/^/    /'; }

step "the GPU stand-in: a QEMU ivshmem BAR registered and published as P2PDMA memory"
nrp_gpu_setup
user=
if [ -e "$NRP_GPU_PCI/p2pmem/allocate" ]; then
	# the stand-in keeps 16 MiB; the rest of the BAR is the pool that
	# user space maps through p2pmem/allocate
	user=1
	nrp_must modprobe -r $NRP_GPU_MOD
	NRP_GPU_ARGS=window_mb=16 nrp_gpu_setup
	echo "    user-space P2P: $NRP_GPU_PCI/p2pmem/allocate, $(($(cat "$NRP_GPU_PCI/p2pmem/available") >> 20)) MiB available to mmap"
fi
echo "    $NRP_GPU on $(basename "$NRP_GPU_PCI"): window $((NRP_GPU_WINDOW >> 20)) MiB, $(cat "$NRP_GPU_PCI/p2pmem/size") bytes of p2pmem"

disk=$((size + 64))
# room for XFS's log and metadata next to the file; mkfs.xfs wants 300 MB
[ -z "$user" ] || disk=$((size + 192 > 320 ? size + 192 : 320))
step "soft-RoCE (rxe) on a veth pair, nvmet-rdma target on a $disk MiB RAM disk"
nrp_must modprobe brd rd_nr=1 rd_size=$((disk * 1024))
nrp_cleanup_push "modprobe -r brd"
nrp_rdma_setup rxe
nrp_nvmet_setup /dev/ram0
rdma link show | indent

step "installing the modprobe.d drop-in, loading nvme-rdma-p2p as transport 'rdma'"
cp tools/modprobe.d/nvme-rdma-p2p.conf /etc/modprobe.d/
nrp_cleanup_push "rm -f /etc/modprobe.d/nvme-rdma-p2p.conf"
# allow_soft_p2p: rxe moves data with the CPU, so P2P over it is the
# test and development path, off by default
modprobe nvme-rdma-p2p allow_soft_p2p=1 || nrp_fail "modprobe nvme-rdma-p2p failed"
nrp_cleanup_push "modprobe -r nvme-rdma-p2p"
dmesg | grep 'nvme_rdma_p2p' | tail -n 2 | indent

step "nvme discover -t rdma -a $NRP_TGT_IP4"
nvme discover -t rdma -a "$NRP_TGT_IP4" -s "$NRP_PORT" | grep -E 'trtype|subnqn|traddr' | indent ||
	nrp_fail "discovery failed"
step "nvme connect -t rdma -a $NRP_TGT_IP4 -n $NRP_SUBNQN"
nvme connect -t rdma -a "$NRP_TGT_IP4" -s "$NRP_PORT" -n "$NRP_SUBNQN" ||
	nrp_fail "connect failed"
nrp_cleanup_push "nvme disconnect -n $NRP_SUBNQN"
NRP_CTRL=$(nrp_ctrl_of_subsys "$NRP_SUBNQN") || nrp_fail "no controller for $NRP_SUBNQN"
nrp_ctrl_is_ours "$NRP_CTRL" || nrp_fail "$NRP_CTRL is not driven by nvme-rdma-p2p"
NRP_NS=$(nrp_ns_dev "$NRP_CTRL") || nrp_fail "no namespace block device appeared"
nvme list | indent
echo "    $NRP_CTRL: $(cat /sys/class/nvme/$NRP_CTRL/address), driven by nvme-rdma-p2p, p2p_capable $(nrp_stat "$NRP_CTRL" p2p_capable)"
if [ "$(cat /sys/module/nvme_core/parameters/multipath)" = Y ]; then
	# Debian's default: the namespace is a multipath head disk, which
	# takes P2P pages while every controller of its subsystem can
	nrp_wait_head_p2p "$(basename "$NRP_NS")" 1 ||
		nrp_fail "head $NRP_NS does not take P2P pages: $(cat "$NRP_DEBUGFS/heads")"
	echo "    nvme_core multipath=Y: $NRP_NS is the multipath head disk, P2PDMA on: $(grep "^$(basename "$NRP_NS") " "$NRP_DEBUGFS/heads" | cut -d' ' -f2-)"
fi

if [ -n "$user" ]; then
	mnt=/mnt/nrp-demo
	step "XFS on $NRP_NS, mounted at $mnt"
	mkdir -p $mnt
	nrp_must mkfs.xfs -q -f "$NRP_NS"
	nrp_must mount -t xfs "$NRP_NS" $mnt
	# (the demo unmounts it itself; this is for a demo that failed)
	nrp_cleanup_push "if mountpoint -q $mnt; then umount $mnt; fi"
	step "a ${size} MiB checkpoint file $mnt/checkpoint from P2P memory mapped into a user process (mmap of p2pmem/allocate), O_DIRECT with io_uring, fsync, read back into P2P memory"
	nrp_snap
	"$NRP_P2P_TOOL" --user --file $mnt/checkpoint --size "${size}M" --io uring --chunk 1M --qd 16 |
		indent
	[ "${PIPESTATUS[0]}" = 0 ] || nrp_fail "the checkpoint failed"
	p2p=$(nrp_delta p2p_bytes_mapped)
	host=$(nrp_delta host_bytes_mapped)
	nrp_must umount $mnt
	nrp_must xfs_repair -n "$NRP_NS" >/dev/null
	step "unmounted; xfs_repair -n: clean"
	step "payload mapped from P2P memory: $((p2p >> 20)) MiB; from host memory: $host bytes, all of it XFS metadata (log, inode, extents)"
	[ "$p2p" = $((2 * size << 20)) ] ||
		nrp_fail "expected exactly $((2 * size)) MiB from P2P memory"
	[ "$host" -le $(((size << 20) / 16 + (8 << 20))) ] ||
		nrp_fail "$host host bytes is more than XFS metadata"
	step "transport counters ($NRP_DEBUGFS/$NRP_CTRL/stats)"
	indent <"$NRP_DEBUGFS/$NRP_CTRL/stats"
	step "checkpoint verified: a $size MiB file on XFS from GPU memory over nvme-rdma-p2p and back, byte-exact, payload zero bytes bounced"
	exit 0
fi

step "a ${size} MiB checkpoint from GPU memory to $NRP_NS and back (1 MiB commands, 16 in flight)"
nrp_snap
"$NRP_P2P_TOOL" --gpu "$NRP_GPU" --dev "$NRP_NS" --size "${size}M" --chunk 1M --qd 16 |
	indent
[ "${PIPESTATUS[0]}" = 0 ] || nrp_fail "the checkpoint failed"
p2p=$(nrp_delta p2p_bytes_mapped)
host=$(nrp_delta host_bytes_mapped)
step "payload mapped from P2P memory: $((p2p >> 20)) MiB; from host memory: $host bytes"
[ "$p2p" = $((2 * size << 20)) ] && [ "$host" = 0 ] ||
	nrp_fail "expected $((2 * size)) MiB from P2P memory and 0 from host memory"
step "transport counters ($NRP_DEBUGFS/$NRP_CTRL/stats)"
indent <"$NRP_DEBUGFS/$NRP_CTRL/stats"
step "checkpoint verified: $size MiB from GPU memory over nvme-rdma-p2p and back, byte-exact, zero bytes bounced"
