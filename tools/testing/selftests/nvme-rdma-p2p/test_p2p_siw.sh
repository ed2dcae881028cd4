#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The P2P path over the other soft RDMA device, siw (iWARP over TCP),
# where the guest kernel has it: checkpoints that must not bounce, a
# mixed one, and the unreachable case without allow_soft_p2p.
. "$(dirname "$0")/lib_p2p.sh"

export NRP_RDMA_TYPE=siw
nrp_p2p_require
modinfo siw >/dev/null 2>&1 || nrp_skip "kernel $(uname -r) has no siw"
nrp_p2p_setup 80
rdma link show | grep -q "siw" || nrp_fail "no siw link"
echo "$NRP_CTRL over siw: $NRP_NS"

nrp_p2p_ckpt_exact 4096 --chunk 4K
nrp_p2p_ckpt_exact $((1 << 20)) --chunk 128K --qd 4
nrp_p2p_ckpt_exact $((64 << 20)) --chunk 1M --qd 16
nrp_p2p_ckpt_exact $(((3 << 20) + 1536)) --offset 3584 --region-a 1024 \
	--region-b $((8 << 20)) --chunk 192K --qd 3
nrp_snap
nrp_p2p_ckpt --size 4M --chunk 1M --mix
nrp_p2p_expect p2p_bytes_mapped $((4 << 20)) "mixed requests over siw"
nrp_p2p_expect host_bytes_mapped $((4 << 20)) "mixed requests over siw"

# Without allow_soft_p2p: not advertised, and forced requests fail alone.
nrp_must nvme disconnect -d "$NRP_CTRL"
nrp_must modprobe -r $NRP_MOD
nrp_load_ours "$NRP_TRANSPORT" allow_soft_p2p=0
nrp_connect
NRP_NS=$(nrp_ns_dev "$NRP_CTRL") || nrp_fail "no namespace on $NRP_CTRL"
[ "$(nrp_stat "$NRP_CTRL" p2p_capable)" = 0 ] || nrp_fail "P2P capable over siw without allow_soft_p2p"
nrp_snap
out=$("$NRP_P2P_TOOL" --gpu "$NRP_GPU" --dev "$NRP_NS" --size 1M --chunk 128K --qd 1 --force --stats none 2>&1)
echo "$out" | grep -q "Remote I/O error" || nrp_fail "forced P2P request over siw: $out"
nrp_p2p_expect p2p_unreachable 1 "one forced request over siw"
nrp_p2p_expect p2p_bytes_mapped 0 "an unreachable request over siw"
nrp_p2p_expect recoveries 0 "an unreachable request over siw"
[ "$(nrp_ctrl_state "$NRP_CTRL")" = live ] || nrp_fail "$NRP_CTRL not live after an unreachable request"
echo "siw without allow_soft_p2p: not advertised, a forced request fails alone with -EREMOTEIO"
nrp_pass
