#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# With nvme_core.multipath=Y (Debian's default) the visible disk is the
# multipath head. On 6.1 the head never carries the P2PDMA queue flag,
# whatever its paths say, and a transport module cannot keep it right as
# paths of other controllers come and go, so P2P submitters must refuse
# the head: that is the safe side, and what this test asserts. A forced
# request still only reaches paths that map P2P pages themselves: ours
# maps it (or fails it alone with -EREMOTEIO), it never corrupts data.
. "$(dirname "$0")/lib_p2p.sh"

nrp_p2p_require
nrp_nvme_core_multipath Y
nrp_gpu_setup
nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
nrp_backing_dev ram 64
nrp_nvmet_setup "$NRP_DEV"
nrp_load_ours "$NRP_TRANSPORT" allow_soft_p2p=1
nrp_connect
NRP_NS=$(nrp_ns_dev "$NRP_CTRL") || nrp_fail "no namespace on $NRP_CTRL"
path=$(nrp_path_disk "$NRP_CTRL")
case $path in
*c*n*) ;;
*) nrp_fail "multipath=Y but $NRP_CTRL's disk is $path, not a path under a head" ;;
esac
[ "$(nrp_stat "$NRP_CTRL" p2p_capable)" = 1 ] || nrp_fail "$NRP_CTRL is not P2P capable"
echo "head $NRP_NS, path $path of $NRP_CTRL (P2P capable)"

out=$("$NRP_P2P_TOOL" --gpu "$NRP_GPU" --dev "$NRP_NS" --size 1M --stats none 2>&1)
rc=$?
[ $rc = 3 ] || nrp_fail "a P2P checkpoint to the head disk: exit $rc, expected 3 (refused): $out"
echo "the head disk does not advertise P2PDMA: the submitter refuses (exit 3)"

nrp_snap
nrp_p2p_ckpt --size 8M --chunk 1M --qd 4 --force
nrp_p2p_expect p2p_bytes_mapped $((16 << 20)) "a forced checkpoint through the head"
nrp_p2p_expect host_bytes_mapped 0 "a forced checkpoint through the head"
echo "forced through the head to our path: byte-exact, 16 MiB mapped from P2P memory"
nrp_pass
