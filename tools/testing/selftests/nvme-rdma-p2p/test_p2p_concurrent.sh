#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# P2P checkpoints at the same time on several queues and namespaces, each
# from its own region of the GPU window, pinned to different CPUs (one
# I/O queue per CPU); then the two other ways of moving the same bytes:
# requests that mix P2P and host pages (served, counted by kind) and the
# bounce path through host memory (what a user without P2PDMA does).
. "$(dirname "$0")/lib_p2p.sh"

n=4
nrp_p2p_setup 40 1 $n
cpus=$(nproc)
# the hardware queues belong to the path disk: with multipath=Y the
# namespace's block device is the head, a bio-based disk without any
path=$(nrp_path_disk "$NRP_CTRL") || nrp_fail "no path disk of $NRP_CTRL"
hwq=$(ls -d "/sys/block/$path/mq/"* | wc -l)
echo "$NRP_CTRL: $n namespaces, $hwq hardware queues, $cpus CPUs"
[ "$cpus" -lt 2 ] || [ "$hwq" -ge 2 ] || nrp_fail "$cpus CPUs but $hwq hardware queues"

size=$((32 << 20))
nrp_snap
pids=()
for ((i = 0; i < n; i++)); do
	ns=$(nrp_p2p_ns $((i + 1))) || nrp_fail "no block device for namespace $((i + 1))"
	taskset -c $((i % cpus)) "$NRP_P2P_TOOL" --gpu "$NRP_GPU" --dev "$ns" \
		--size $size --chunk 128K --qd 8 --seed $((i + 1)) \
		--region-a $((2 * i * size)) --region-b $(((2 * i + 1) * size)) \
		--stats none >/tmp/nrp-ckpt.$i 2>&1 &
	pids+=($!)
done
for ((i = 0; i < n; i++)); do
	wait "${pids[$i]}" || nrp_fail "checkpoint $i failed: $(tail -n 3 /tmp/nrp-ckpt.$i)"
	grep -q "^checkpoint verified" /tmp/nrp-ckpt.$i || nrp_fail "checkpoint $i not verified"
	grep "^checkpoint verified" /tmp/nrp-ckpt.$i | sed "s/^/  [$i] /"
done
nrp_p2p_expect p2p_bytes_mapped $((2 * n * size)) "$n concurrent checkpoints"
nrp_p2p_expect host_bytes_mapped 0 "$n concurrent checkpoints"
echo "$n concurrent checkpoints on $hwq queues: byte-exact, p2p_bytes_mapped +$((2 * n * size)), host_bytes_mapped +0"

# Mixed: every other page of each request comes from host memory. The
# request is served; each byte is counted by the kind of page it was in.
size=$((8 << 20))
nrp_snap
nrp_p2p_ckpt --size $size --chunk 1M --qd 4 --mix
nrp_p2p_expect p2p_bytes_mapped $size "mixed requests (half the pages are P2P)"
nrp_p2p_expect host_bytes_mapped $size "mixed requests (half the pages are host memory)"
nrp_p2p_expect p2p_segments_mapped $((size / 4096)) "mixed requests (one P2P segment per odd page)"
echo "$NRP_CKPT_OUT" | grep -q "^write .*cpu_copied_bytes $((size / 2))$" ||
	nrp_fail "the mixed write did not copy exactly half the bytes"
echo "mixed P2P and host pages in one request: served, split by kind"

# Bounce: the same bytes through host pages only; nothing of it is P2P,
# and the CPU copies every byte both ways.
nrp_snap
nrp_p2p_ckpt --size $size --chunk 1M --qd 4 --bounce
nrp_p2p_expect p2p_bytes_mapped 0 "bounced checkpoint"
nrp_p2p_expect host_bytes_mapped $((2 * size)) "bounced checkpoint"
for d in write read; do
	echo "$NRP_CKPT_OUT" | grep -q "^$d .*path bounce .*cpu_copied_bytes $size$" ||
		nrp_fail "the bounced $d did not copy $size bytes"
done
echo "bounce path: host_bytes_mapped +$((2 * size)), the CPU copied $((2 * size)) bytes"
nrp_pass
