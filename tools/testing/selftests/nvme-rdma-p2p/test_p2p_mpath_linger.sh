#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A head our last path left does not keep our P2P mark. From 6.16 a head
# may outlive its paths (sysfs delayed_removal_secs): it stays, queueing
# I/O until a path joins or the delay ends. No decision of ours visits it
# once no controller of ours has a path in it, so the mark must go with
# our last path: a P2P submitter is then refused at once (EREMOTEIO, the
# pages never pinned) instead of waiting in a head that a path of another
# transport may join. Before the fix the head stayed marked and a P2P
# write to it waited for a path.
# nvme_core multipath=Y; skips where heads have no delayed_removal_secs.
. "$(dirname "$0")/lib_mpath.sh"

nrp_nvme_core_multipath Y
nrp_p2p_user_setup 64
h=$(basename "$NRP_NS")
nrp_wait_head_p2p "$h" 1 || nrp_fail "$h is not a marked head of ours: $(cat "$NRP_DEBUGFS/heads")"
[ -w "/sys/block/$h/delayed_removal_secs" ] ||
	nrp_skip "head $h has no delayed_removal_secs (Linux 6.16 and later)"
nrp_p2p_user served --dev "$NRP_NS" --size 1M --chunk 256K --stats none
echo "$h marked: a 1 MiB P2P write and read served through it"

linger=$((30 * NRP_SLOW))
echo "$linger" >"/sys/block/$h/delayed_removal_secs" || nrp_fail "cannot set $h's delayed_removal_secs"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
[ -b "/dev/$h" ] || nrp_fail "head $h went with its last path, delayed_removal_secs $linger"
echo "$NRP_CTRL disconnected: head $h stays for $linger s"

# refused at once, never waiting: the submitter gets 20 s (x NRP_SLOW)
t0=$SECONDS
out=$(timeout $((20 * NRP_SLOW)) "$NRP_P2P_TOOL" --user --dev "$NRP_NS" --size 1M --chunk 256K \
	--stats none 2>&1)
rc=$?
[ "$rc" != 124 ] || nrp_fail "a P2P write to $h, which no path of ours is in, waited $((SECONDS - t0)) s for a path: the head kept our mark"
[ "$rc" = 3 ] && echo "$out" | grep -q "would not pin P2PDMA pages" ||
	nrp_fail "a P2P write to $h after our last path left: exit $rc, not refused: $(echo "$out" | tail -n 2)"
echo "P2P write to $h without a path of ours: refused (EREMOTEIO) after $((SECONDS - t0)) s"

# the head goes when its delay ends; nothing of ours is left in it
for _ in $(seq $(((linger + 30 * NRP_SLOW) * 5))); do
	[ -b "/dev/$h" ] || break
	sleep 0.2
done
[ ! -b "/dev/$h" ] || nrp_fail "head $h still there $((linger + 30 * NRP_SLOW)) s after its last path left"
echo "head $h removed after its delay"
nrp_assert_no_splat
nrp_pass
