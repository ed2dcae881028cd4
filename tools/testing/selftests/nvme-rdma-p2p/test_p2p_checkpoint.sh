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
# The check tier (NRP_TIER=check, run-all.sh) moves 256 MiB: a chain of
# 256 registrations each way asserts the same counters as 1024 do, in a
# quarter of the rxe traffic under TCG; the full tier moves 1 GiB.
# nrp-timeout: 1500
. "$(dirname "$0")/lib_p2p.sh"

big=1024
[ "${NRP_TIER:-}" = check ] && big=256
case $(uname -r) in *-nrp-debug*) big=64 ;; esac
# MRs of 257 entries: one 1 MiB command per 1 MiB chunk, so the counters
# below are exact (the default, 256 as in-tree, carries 1020 KiB).
NRP_P2P_MODPARAMS=max_mr_pages=257
nrp_p2p_setup $((big + 16))
[ "$NRP_GPU_WINDOW" -ge $((2 * big << 20)) ] ||
	nrp_fail "the $((NRP_GPU_WINDOW >> 20)) MiB GPU window cannot hold two $big MiB regions (run-guest.sh --gpu-mem $((2 * big))M)"
lbs=$(cat "/sys/block/$(basename "$NRP_NS")/queue/logical_block_size")
echo "$NRP_CTRL: $NRP_NS, ${lbs}-byte blocks, GPU $NRP_GPU window $((NRP_GPU_WINDOW >> 20)) MiB"

# 4 KiB: one command each way; the write goes in-capsule, straight from
# the BAR (the SEND's SGE points at it), and still counts as P2P bytes.
nrp_p2p_ckpt_exact 4096 --chunk 4K
nrp_p2p_expect inline_writes 1 "a 4 KiB P2P write"
echo "  the 4 KiB write went in-capsule"
nrp_p2p_ckpt_exact $((1 << 20)) --chunk 256K --qd 4
nrp_p2p_ckpt_exact $((64 << 20)) --chunk 1M --qd 16
if [ "$big" -gt 64 ]; then
	nrp_p2p_ckpt_exact $((big << 20)) --chunk 1M --qd 16
	# one registration per 1 MiB chunk each way, where one command can
	# carry 1 MiB; where it cannot (siw on 6.12: 4096 commands, 3072
	# registrations) a chunk splits, and a write's short tail may go
	# in-capsule
	mx=$(cat "/sys/block/$(basename "$NRP_NS")/queue/max_hw_sectors_kb")
	if [ "$mx" -ge 1024 ]; then
		nrp_p2p_expect frwr_registrations $((2 * big)) "1 MiB commands of a $big MiB checkpoint"
	else
		echo "  commands of at most $mx KiB here: the 1 MiB chunks split"
	fi
fi

# Odd sizes at unaligned places: device offsets off any page, window
# regions off any page, chunks that split pages.
nrp_p2p_ckpt_exact $((lbs * 3)) --offset $((lbs * 7)) --region-a "$lbs" --region-b $((1 << 20)) --chunk "$lbs"
nrp_p2p_ckpt_exact $(((1 << 20) + lbs * 5)) --offset $(((3 << 20) + lbs)) --region-a $((lbs * 3)) \
	--region-b $(((2 << 20) + lbs * 9)) --chunk $((192 << 10)) --qd 3 --verify-chunks
nrp_p2p_ckpt_exact $(((8 << 20) - lbs)) --offset $((lbs * 13)) --region-a $(((5 << 20) + lbs)) \
	--region-b $(((16 << 20) + lbs * 2)) --chunk $((1 << 20)) --qd 8
echo "unaligned offsets and sizes: byte-exact, nothing bounced"

[ "$(nrp_ctrl_state "$NRP_CTRL")" = live ] || nrp_fail "$NRP_CTRL is $(nrp_ctrl_state "$NRP_CTRL") after the checkpoints"
nrp_pass
