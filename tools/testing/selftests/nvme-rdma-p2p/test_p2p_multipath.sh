#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# With nvme_core.multipath=Y (Debian's default) the visible disk is the
# multipath head. It takes P2PDMA pages exactly while every controller of
# its subsystem is one of ours that can carry them (rdma_p2p_mpath.c),
# which the debugfs file "heads" shows: with allow_soft_p2p=1 over rxe a
# checkpoint from GPU memory through the head is byte-exact with nothing
# bounced; with allow_soft_p2p=0 our controller cannot carry P2P, the head
# is not marked and the submitter refuses it (exit 3), and a request
# forced through anyway fails alone with -EREMOTEIO on our path, never
# bounced, never wrong data.
. "$(dirname "$0")/lib_p2p.sh"

nrp_p2p_require
nrp_nvme_core_multipath Y
nrp_gpu_setup
nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
nrp_backing_dev ram 64
nrp_nvmet_setup "$NRP_DEV"

for allow in 1 0; do
	nrp_load_ours "$NRP_TRANSPORT" allow_soft_p2p=$allow
	nrp_connect
	NRP_NS=$(nrp_ns_dev "$NRP_CTRL") || nrp_fail "no namespace on $NRP_CTRL"
	path=$(nrp_path_disk "$NRP_CTRL")
	case $path in
	*c*n*) ;;
	*) nrp_fail "multipath=Y but $NRP_CTRL's disk is $path, not a path under a head" ;;
	esac
	h=$(basename "$NRP_NS")
	nrp_wait_head_p2p "$h" $allow ||
		nrp_fail "allow_soft_p2p=$allow: head $h marked $(nrp_head_p2p "$h"), expected $allow"
	echo "allow_soft_p2p=$allow: head $NRP_NS over $path, P2P mark $allow ($(grep "^$h " "$NRP_DEBUGFS/heads"))"
	if [ $allow = 1 ]; then
		nrp_p2p_ckpt_exact $((16 << 20)) --chunk 1M --qd 8
		echo "checkpoint through the head: byte-exact, nothing bounced"
	else
		out=$("$NRP_P2P_TOOL" --gpu "$NRP_GPU" --dev "$NRP_NS" --size 1M --stats none 2>&1)
		rc=$?
		[ $rc = 3 ] || nrp_fail "a P2P checkpoint to an unmarked head: exit $rc, expected 3 (refused): $out"
		echo "the submitter refuses the unmarked head (exit 3)"
		nrp_snap
		out=$("$NRP_P2P_TOOL" --gpu "$NRP_GPU" --dev "$NRP_NS" --size 256K --chunk 256K --stats none --force 2>&1) &&
			nrp_fail "a forced P2P checkpoint through a path that cannot carry P2P succeeded: $out"
		nrp_p2p_expect p2p_unreachable 1 "a forced P2P write through a path without P2P"
		nrp_p2p_expect host_bytes_mapped 0 "a forced P2P write (never bounced)"
		nrp_p2p_expect recoveries 0
		echo "forced through the head: refused on our path with -EREMOTEIO, nothing bounced, no recovery"
	fi
	nrp_must nvme disconnect -n "$NRP_SUBNQN"
	nrp_must modprobe -r nvme-rdma-p2p
done
nrp_assert_no_splat
nrp_pass
