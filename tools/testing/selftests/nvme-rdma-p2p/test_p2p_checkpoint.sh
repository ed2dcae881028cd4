#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Checkpoints from simulated GPU memory (P2PDMA pages of the nrp_gpu BAR)
# to a remote namespace over nvme-rdma-p2p and back into another region,
# byte-exact: 4 KiB, 1 MiB, 64 MiB and 1 GiB, then odd sizes at unaligned
# device and window offsets. Nothing may bounce: for each one the P2P
# byte counter grows by exactly the payload (written and read) and the
# host-memory byte counter by zero.
#
# 1 GiB needs a 2 GiB GPU window (run-guest.sh --gpu-mem 2G); under the
# debug kernel (KASAN) the largest size is 64 MiB, to keep the run short.
# nrp-timeout: 1500
. "$(dirname "$0")/lib_p2p.sh"

big=1024
case $(uname -r) in *-nrp-debug*) big=64 ;; esac
nrp_p2p_setup $((big + 16))
[ "$NRP_GPU_WINDOW" -ge $((2 * big << 20)) ] ||
	nrp_fail "the $((NRP_GPU_WINDOW >> 20)) MiB GPU window cannot hold two $big MiB regions (run-guest.sh --gpu-mem $((2 * big))M)"
lbs=$(cat "/sys/block/$(basename "$NRP_NS")/queue/logical_block_size")
echo "$NRP_CTRL: $NRP_NS, ${lbs}-byte blocks, GPU $NRP_GPU window $((NRP_GPU_WINDOW >> 20)) MiB"

# $1 payload bytes; the rest goes to p2p-checkpoint.
ckpt() {
	local bytes=$1 bios segs data
	shift
	nrp_p2p_snap
	nrp_p2p_ckpt --size "$bytes" "$@"
	nrp_p2p_expect p2p_bytes_mapped $((2 * bytes)) "checkpoint of $bytes bytes"
	nrp_p2p_expect host_bytes_mapped 0 "checkpoint of $bytes bytes (nothing bounces)"
	nrp_p2p_expect p2p_unreachable 0
	nrp_p2p_expect recoveries 0
	bios=$(echo "$NRP_CKPT_OUT" | awk '/^(write|read) .* bios/ {
		for (i = 1; i < NF; i++) if ($(i + 1) ~ /^bios/) n += $i } END { print n + 0 }')
	# commands with data, whichever way it was described
	data=$(($(nrp_p2p_delta frwr_registrations) + $(nrp_p2p_delta inline_writes) +
		$(nrp_p2p_delta global_rkey_mappings)))
	segs=$(nrp_p2p_delta p2p_segments_mapped)
	# a bio may be split into several commands, never merged with another
	[ "$data" -ge "$bios" ] || nrp_fail "$bios bios but only $data data commands"
	[ "$segs" -ge "$data" ] || nrp_fail "$data data commands but $segs P2P segments"
	echo "  counters: p2p_bytes_mapped +$((2 * bytes)), host_bytes_mapped +0, $data data commands, $segs P2P segments"
}

# 4 KiB: one command each way; the write goes in-capsule, straight from
# the BAR (the SEND's SGE points at it), and still counts as P2P bytes.
ckpt 4096 --chunk 4K
nrp_p2p_expect inline_writes 1 "a 4 KiB P2P write"
echo "  the 4 KiB write went in-capsule"
ckpt $((1 << 20)) --chunk 256K --qd 4
ckpt $((64 << 20)) --chunk 1M --qd 16
if [ "$big" -gt 64 ]; then
	ckpt $((big << 20)) --chunk 1M --qd 16
	nrp_p2p_expect frwr_registrations $((2 * big)) "1 MiB commands of a $big MiB checkpoint"
fi

# Odd sizes at unaligned places: device offsets off any page, window
# regions off any page, chunks that split pages.
ckpt $((lbs * 3)) --offset $((lbs * 7)) --region-a "$lbs" --region-b $((1 << 20)) --chunk "$lbs"
ckpt $(((1 << 20) + lbs * 5)) --offset $(((3 << 20) + lbs)) --region-a $((lbs * 3)) \
	--region-b $(((2 << 20) + lbs * 9)) --chunk $((192 << 10)) --qd 3 --verify-chunks
ckpt $(((8 << 20) - lbs)) --offset $((lbs * 13)) --region-a $(((5 << 20) + lbs)) \
	--region-b $(((16 << 20) + lbs * 2)) --chunk $((1 << 20)) --qd 8
echo "unaligned offsets and sizes: byte-exact, nothing bounced"

[ "$(nrp_ctrl_state "$NRP_CTRL")" = live ] || nrp_fail "$NRP_CTRL is $(nrp_ctrl_state "$NRP_CTRL") after the checkpoints"
nrp_pass
