#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The nvme core and we never disagree about a head's P2P mark, whatever a
# controller of ours decides at each association (issue 43). From Linux
# 7.2 the core owns the head's BLK_FEAT_PCI_P2PDMA too: it stacks each
# path's limits into the head whenever it revalidates a namespace, and
# clears the feature for a path whose own queue lacks it. The path's
# queue got its feature once, when the core allocated the namespace, from
# what the controller answered then. nvme_core multipath=Y, rxe:
#  - allow_soft_p2p=0 at connect: p2p_capable 0, the head unmarked, the
#    P2P submitter refuses it;
#  - allow_soft_p2p=1, reset: p2p_capable 1, the head marked, the
#    submitter takes it;
#  - the namespace grows on the target, so the core revalidates it and
#    stacks the path into the head (the head's "detected capacity change"
#    line comes after that): the head stays marked and takes a byte-exact
#    P2P checkpoint. Before our paths followed the decision, their queues
#    kept the first connect's "no", and on 7.x this revalidation took the
#    mark from the head while we held it;
#  - allow_soft_p2p=0 without a reset changes nothing (the association
#    decided), a checkpoint still goes; then a reset and another
#    revalidation: unmarked, refused.
# (On 6.1 and 6.12 the core never touches a head's mark, so there the
# test holds with or without the fix.)
. "$(dirname "$0")/lib_p2p.sh"

nrp_p2p_require
nrp_nvme_core_multipath Y

# Reset $NRP_CTRL with allow_soft_p2p=$1 and expect p2p_capable $1.
reassociate() {
	echo "$1" >/sys/module/nvme_rdma_p2p/parameters/allow_soft_p2p ||
		nrp_fail "allow_soft_p2p is not writable"
	nrp_must nvme reset "/dev/$NRP_CTRL"
	nrp_wait_state "$NRP_CTRL" 60 live || nrp_fail "$NRP_CTRL not live after its reset"
	[ "$(nrp_stat "$NRP_CTRL" p2p_capable)" = "$1" ] ||
		nrp_fail "p2p_capable $(nrp_stat "$NRP_CTRL" p2p_capable) after a reset with allow_soft_p2p=$1"
}

# Grow the namespace by 8 MiB on the target and wait until the core has
# revalidated it on the host, head included.
revalidate() {
	local mib=$1
	truncate -s "${mib}M" /run/nrp-backing.img
	nrp_must losetup -c "$NRP_DEV"
	nrp_dmesg_mark
	echo 1 >"$NRP_CFS/subsystems/$NRP_SUBNQN/namespaces/1/revalidate_size" ||
		nrp_fail "cannot revalidate the target's namespace"
	nrp_dmesg_wait "$head: detected capacity change" $((30 * NRP_SLOW)) ||
		nrp_fail "the host never revalidated $head after the namespace grew to $mib MiB"
}

# Head $head's mark must be $1 and the submitter's answer $2.
agree() {
	local m s
	m=$(nrp_head_p2p "$head")
	s=$(nrp_p2p_submitter "$NRP_NS")
	[ "$m" = "$1" ] && [ "$s" = "$2" ] ||
		nrp_fail "$3: head $head's mark $m (expected $1), the P2P submitter's answer $s (expected $2): $(cat "$NRP_DEBUGFS/heads")"
	echo "$3: head $head mark $m, submitter $s"
}

NRP_CFS=/sys/kernel/config/nvmet
nrp_gpu_setup
nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
nrp_backing_dev loop 64
nrp_nvmet_setup "$NRP_DEV"
nrp_load_ours "$NRP_TRANSPORT" allow_soft_p2p=0
nrp_connect
NRP_NS=$(nrp_ns_dev "$NRP_CTRL") || nrp_fail "no namespace on $NRP_CTRL"
head=$(basename "$NRP_NS")
[ "$head" != "$(nrp_path_disk "$NRP_CTRL")" ] || nrp_fail "multipath=Y, but $NRP_CTRL's disk $head has no head"
[ "$(nrp_stat "$NRP_CTRL" p2p_capable)" = 0 ] || nrp_fail "p2p_capable at connect with allow_soft_p2p=0"
nrp_wait_head_p2p "$head" 0 || nrp_fail "head $head marked with allow_soft_p2p=0"
agree 0 3 "connected without soft P2P"

reassociate 1
nrp_wait_head_p2p "$head" 1 || nrp_fail "head $head unmarked after a reset that can carry P2P: $(cat "$NRP_DEBUGFS/heads")"
agree 1 0 "reset with soft P2P"
revalidate 72
agree 1 0 "revalidated by the core"
nrp_p2p_ckpt_exact $((8 << 20)) --chunk 1M --qd 8
echo "checkpoint through $head after the revalidation: byte-exact, nothing bounced"
# allow_soft_p2p is read at the next association, not by each request
echo 0 >/sys/module/nvme_rdma_p2p/parameters/allow_soft_p2p
u0=$(nrp_stat "$NRP_CTRL" p2p_unreachable)
nrp_p2p_ckpt_exact $((4 << 20)) --chunk 1M --qd 4
nrp_expect "p2p_unreachable with allow_soft_p2p=0 before a reset" "$(nrp_stat "$NRP_CTRL" p2p_unreachable)" "$u0"
agree 1 0 "allow_soft_p2p=0, no reset yet"

reassociate 0
nrp_wait_head_p2p "$head" 0 || nrp_fail "head $head marked after a reset that cannot carry P2P"
agree 0 3 "reset without soft P2P"
revalidate 80
agree 0 3 "revalidated by the core"

nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_assert_no_splat
nrp_pass
