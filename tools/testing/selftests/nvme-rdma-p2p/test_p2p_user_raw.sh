#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The user-space P2P path to a raw remote namespace (Linux 6.2 and later):
# p2p-checkpoint --user maps P2P memory of the GPU stand-in through
# p2pmem/allocate and moves it with O_DIRECT, pwrite/pread and io_uring,
# 4 KiB to 1 GiB, read back into the same memory and compared word by
# word. Over nvme-rdma-p2p every payload byte is mapped as a P2P byte and
# none as a host byte; mixed P2P/host iovecs are served with the bytes
# split by kind (or, on 7.x, partly through the page cache by the kernel:
# below); misaligned buffers are served when the queue's DMA
# alignment allows them and refused with EINVAL otherwise.
#
# Then the same requests against the in-tree nvme_rdma on the same target:
# its queue has no P2PDMA feature, so the block layer refuses to pin the
# P2P pages (EREMOTEIO) while host memory is served. Both columns are
# printed side by side.
#
# Skips on kernels without P2PDMA (stock) and without the user-space path
# (6.1: no p2pmem/allocate). In the check tier (NRP_TIER=check,
# run-all.sh) the largest size is 256 MiB, a quarter of the full tier's
# rxe traffic under TCG for the same assertions. Under the debug kernel
# the largest is 64 MiB (io_uring, 4 deep) and the synchronous one
# 16 MiB, in the check tier 16 and 4 MiB: every call, alignment and
# memory kind still runs under KASAN and lockdep, and a request still
# spans many MRs and queue entries; the in-tree side is left to the
# kernels without the checkers.
# nrp-timeout: 1800
. "$(dirname "$0")/lib_p2p.sh"

# io_uring's largest checkpoint 16 deep in 1 MiB requests, under the
# debug kernel 4 deep: there 16 MiB in flight at under 1 MiB/s on a
# loaded host comes near the 30 s I/O timeout (test_p2p_user_fs.sh)
big=1024 mid=64 uqd=16
[ "${NRP_TIER:-}" = check ] && big=256
case $(uname -r) in
*-nrp-debug*)
	big=64 mid=16 uqd=4
	[ "${NRP_TIER:-}" = check ] && big=16 mid=4 ;;
esac
nrp_p2p_user_setup $((big + 16))
[ "$NRP_P2PMEM_AVAIL" -ge $((big << 20)) ] ||
	nrp_fail "only $NRP_P2PMEM_AVAIL bytes of p2pmem available, $big MiB needed (run-guest.sh --gpu-mem 2G)"
disk=$(basename "$NRP_NS")
lbs=$(cat "/sys/block/$disk/queue/logical_block_size")
mask=$(cat "/sys/block/$disk/queue/dma_alignment")
echo "$NRP_CTRL: $NRP_NS (${lbs}-byte blocks, DMA alignment mask $mask), p2pmem $(basename "$NRP_GPU_PCI"): $((NRP_P2PMEM_AVAIL >> 20)) MiB available"
NRP_SIDE=
nrp_side_row "request" "nvme-rdma-p2p" "in-tree nvme_rdma"

# P2P bytes exactly twice the payload (written and read), host bytes $2.
exact() { # SIZE HOST-BYTES WHAT INFLIGHT (nrp_uckpt_p2p_check)
	local p2p=$((NRP_UCKPT_P2P_W + NRP_UCKPT_P2P_F + NRP_UCKPT_P2P_R))
	local host=$((NRP_UCKPT_HOST_W + NRP_UCKPT_HOST_F + NRP_UCKPT_HOST_R))
	nrp_uckpt_p2p_check $((2 * $1 - $2)) "$4" "$3"
	[ "$host" = "$2" ] || nrp_fail "$3: host_bytes_mapped +$host, expected $2"
	echo "  $3: verified; p2p_bytes_mapped +$p2p${NRP_UCKPT_REMAP:+ ($NRP_UCKPT_REMAP)}, host_bytes_mapped +$host; $(echo "$NRP_UCKPT_OUT" |
		grep -E '^checkpoint verified' | sed 's/.*MiB, //')"
}

declare -A ours
served() { # KEY SIZE HOST-BYTES WHAT ARGS...
	local key=$1 size=$2 host=$3 what=$4
	shift 4
	nrp_snap
	nrp_dmesg_mark
	nrp_p2p_user served --dev "$NRP_NS" --size "$size" "$@"
	exact "$size" "$host" "$what" "$(nrp_ckpt_inflight "$@")"
	ours[$key]="served, p2p +$((2 * size - host)) host +$host"
}

# pwrite/pread and io_uring, 4 KiB to 1 GiB, all from P2P memory
served sync4k 4096 0 "pwrite/pread 4 KiB" --chunk 4K
served sync1m $((1 << 20)) 0 "pwrite/pread 1 MiB" --chunk 256K
served syncmid $((mid << 20)) 0 "pwrite/pread $mid MiB" --chunk 1M
served uring4k 4096 0 "io_uring 4 KiB" --io uring --chunk 4K
served uring1m $((1 << 20)) 0 "io_uring 1 MiB" --io uring --chunk 128K --qd 8
served uringbig $((big << 20)) 0 "io_uring $big MiB" --io uring --chunk 1M --qd "$uqd"

# Mixed iovecs: 4 KiB pieces alternating P2P and host memory. Where the
# block layer puts both kinds into one bio (6.12), every request carries
# both and the counters split its bytes by kind exactly. Where it keeps
# them apart (7.x: block/bio.c, zone_device_pages_compatible() and
# iov_iter_extract_bvecs() end a bio where the kind changes), io_uring's
# direct path goes on with a bio per run of one kind and still moves every
# byte directly; but a synchronous pwritev/preadv small enough for
# block/fops.c's one-bio path ends after its first piece, and the kernel
# writes or reads the rest through the page cache (its fallback for a
# short direct transfer): only the first piece of each call reaches us as
# P2P, the rest as host memory the CPU copied, plus the page cache's
# read-ahead. One of the two, nothing else: a P2P byte counted as host,
# or one lost, fails either way.
mixed() { # KEY SIZE CALLS WHAT ARGS...
	local key=$1 size=$2 calls=$3 what=$4 p2p host first
	shift 4
	nrp_p2p_user served --dev "$NRP_NS" --size "$size" --mem mix "$@"
	p2p=$((NRP_UCKPT_P2P_W + NRP_UCKPT_P2P_F + NRP_UCKPT_P2P_R))
	host=$((NRP_UCKPT_HOST_W + NRP_UCKPT_HOST_F + NRP_UCKPT_HOST_R))
	first=$((calls * 4096))
	if [ "$p2p" = "$size" ] && [ "$host" = "$size" ]; then
		echo "  $what: verified; every byte direct, split by kind: p2p_bytes_mapped +$p2p, host_bytes_mapped +$host"
		ours[$key]="served, p2p +$p2p host +$host"
	elif [ "$NRP_UCKPT_P2P_W" = "$first" ] && [ "$NRP_UCKPT_P2P_R" = "$first" ] &&
		[ "$NRP_UCKPT_HOST_W" = $((size - first)) ] &&
		[ "$NRP_UCKPT_HOST_R" -ge $((size - first)) ]; then
		echo "  $what: verified; the kernel keeps P2P and host pages in separate bios: the first piece of each of the $calls calls direct (p2p_bytes_mapped +$p2p), the rest through the page cache (host_bytes_mapped +$host, read-ahead included)"
		ours[$key]="served; the kernel copies all but the first 4 KiB of each call through the page cache (p2p +$p2p host +$host)"
	else
		nrp_fail "$what: p2p_bytes_mapped +$NRP_UCKPT_P2P_W write, +$NRP_UCKPT_P2P_R read, host_bytes_mapped +$NRP_UCKPT_HOST_W write, +$NRP_UCKPT_HOST_R read: neither all split by kind nor the first piece of each of $calls calls direct"
	fi
}
mixed mixsync $((8 << 20)) 8 "pwritev/preadv mixed P2P/host 8 MiB" --chunk 1M
mixed mixuring $((8 << 20)) 16 "io_uring writev/readv mixed P2P/host 8 MiB" --io uring --chunk 512K --qd 4
# host memory for comparison: no P2P byte
served host $((1 << 20)) $((2 << 20)) "pwrite/pread from host memory 1 MiB" --mem host --chunk 256K

# Misaligned buffers: served exactly when the queue's DMA alignment
# allows the address, else refused by O_DIRECT (EINVAL), never corrupted.
for off in 512 8 4 1; do
	if [ $((off & mask)) = 0 ]; then
		served "buf$off" $((1 << 20)) 0 "buffer $off bytes into its page" --buf-offset "$off" --chunk 256K
	else
		nrp_p2p_user refused-align --dev "$NRP_NS" --size 1M --buf-offset "$off"
		echo "  buffer $off bytes into its page: refused by O_DIRECT (mask $mask)"
		ours[buf$off]="refused: EINVAL (alignment)"
	fi
done
# a device offset off the logical block: O_DIRECT refuses it
nrp_p2p_user refused-align --dev "$NRP_NS" --size 1M --offset $((lbs / 2))
echo "  device offset $((lbs / 2)): refused by O_DIRECT"
ours[devoff]="refused: EINVAL (alignment)"

# The same requests through the in-tree nvme_rdma of this kernel.
nrp_p2p_user_then_intree
intree() { # KEY WANT WHAT ARGS...
	local key=$1 want=$2 what=$3 res
	shift 3
	nrp_p2p_user "$want" --dev "$NRP_NS" --stats none "$@"
	case $want in
	served) res="served" ;;
	refused) res="refused: EREMOTEIO" ;;
	refused-align) res="refused: EINVAL (alignment)" ;;
	esac
	echo "  $what: $res"
	nrp_side_row "$what" "${ours[$key]}" "$res"
}
intree sync4k refused "pwrite/pread 4 KiB from P2P" --size 4K --chunk 4K
intree sync1m refused "pwrite/pread 1 MiB from P2P" --size 1M --chunk 256K
intree syncmid refused "pwrite/pread $mid MiB from P2P" --size "${mid}M"
intree uring4k refused "io_uring 4 KiB from P2P" --size 4K --io uring --chunk 4K
intree uring1m refused "io_uring 1 MiB from P2P" --size 1M --io uring --chunk 128K --qd 8
intree uringbig refused "io_uring $big MiB from P2P" --size "${big}M" --io uring --qd 16
intree mixsync refused "pwritev/preadv mixed P2P/host 8 MiB" --size 8M --mem mix
intree mixuring refused "io_uring mixed P2P/host 8 MiB" --size 8M --mem mix --io uring --chunk 512K --qd 4
intree host served "pwrite/pread 1 MiB from host memory" --size 1M --mem host --chunk 256K
echo "side by side (the same requests, the same target):"
printf '%s' "$NRP_SIDE"
nrp_pass
