#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A reset whose new association changes p2p_capable completes while a
# sysfs limits write waits for the path's queue to freeze (review finding
# F1 of f3a52a4, fixed by 36c3944). Our paths' queues follow p2p_capable
# (nrp_mpath_paths_follow()): changing BLK_FEAT_PCI_P2PDMA takes the
# queue's limits_lock. A limits write in sysfs holds that lock while it
# waits for the queue to freeze on 6.12.118 and 7.3 (queue_attr_store():
# queue_limits_start_update(), then queue_limits_commit_update_frozen()),
# and on 7.3 the core's own revalidation too (nvme_update_ns_info_block();
# 6.12's freezes first). The freeze waits for the requests a
# reconnecting controller holds on its dispatch lists, which wait for the
# I/O queues to run again. The follow used to run right after the admin
# queue came up, under nrp_mpath_lock: it waited for the lock, and the
# reset never ended. nvme_core multipath=N, rxe, allow_soft_p2p=1:
#  - connect: p2p_capable 1, the controller's disk takes P2P pages;
#  - allow_soft_p2p=0, the target's port taken away: the controller
#    resets and reconnects, and a direct read of known data waits on its
#    queue (not_ready), then a max_sectors_kb write waits in
#    blk_mq_freeze_queue_wait() holding the disk's limits_lock;
#  - the port back: within 20 s (times NRP_SLOW) the controller is live,
#    the sysfs write returned and took, the held read returned the data
#    written before; p2p_capable 0, the disk refuses P2P pages, it has no
#    head (multipath=N) and data written and read after verifies; no task
#    is left blocked in our code, a queue freeze or a limits update.
# When the reset does not end in time, the blocked tasks' stacks are
# printed (the follow's among them, if there) and the test fails; the
# connection's fast_io_fail_tmo, three times the bound, then fails the
# held read, which ends the hang so that the guest can be cleaned up.
# multipath=N: a head would take the read off the path at once (a host
# path error, REQ_NVME_MPATH), and nothing would keep the freeze waiting.
# On 6.1 a limits write takes no freeze (queue_attr_store() holds only
# the queue's sysfs_lock) and the follow sets a queue flag: the write
# returns at once, and the rest is asserted all the same.
# The failing case waits up to fast_io_fail_tmo (60 s x NRP_SLOW) after
# the 20 s x NRP_SLOW bound so that the guest can be cleaned up.
# nrp-timeout: 2400
. "$(dirname "$0")/lib_mpath.sh"

nrp_p2p_require
nrp_nvme_core_multipath N

# Whether a limits write in sysfs freezes the queue under limits_lock
# (queue_attr_store() through queue_limits_commit_update_frozen(): 6.12.118
# and 7.x). 6.1 takes only the queue's sysfs_lock for it, and our follow
# sets a queue flag there: nothing to meet, the rest still holds.
freezes=0
grep -qw queue_limits_commit_update_frozen /proc/kallsyms && freezes=1
bound=$((20 * NRP_SLOW))
failfast=$((3 * bound))
pat=/tmp/nrp-follow-freeze.pat
held=/tmp/nrp-follow-freeze.held
back=/tmp/nrp-follow-freeze.back
werr=/tmp/nrp-follow-freeze.werr
rm -f "$pat" "$held" "$back" "$werr"
nrp_cleanup_push "rm -f $pat $held $back $werr"

# The kernel stack of task $1, one line of function names.
stack_of() {
	awk '{ sub(/\+.*/, "", $2); printf "%s%s", (NR > 1 ? " < " : ""), $2 }' \
		"/proc/$1/stack" 2>/dev/null
}

# Tasks in D state now whose stack is in our module, the nvme core, a
# queue freeze or a limits update: "comm[pid]: stack" lines.
blocked_tasks() {
	local d st comm s
	for d in /proc/[0-9]*; do
		{ read -r st <"$d/stat"; } 2>/dev/null || continue
		st=${st##*) }
		[ "${st%% *}" = D ] || continue
		s=$(stack_of "${d#/proc/}")
		case $s in
		*nrp_* | *nvme_* | *blk_mq_freeze_queue* | *queue_limits_* | *limits_lock*) ;;
		*) continue ;;
		esac
		read -r comm <"$d/comm" 2>/dev/null
		echo "${comm}[${d#/proc/}]: $s"
	done
}

# Fail: what is stuck and why, after the hang has been ended (or the
# deadline for that has passed) so that the cleanup can run.
hung() {
	local b follow t1 out
	b=$(blocked_tasks)
	echo "$NRP_CTRL is $(nrp_ctrl_state "$NRP_CTRL") ${bound}s after the target came back; blocked:"
	echo "${b:-  (no task in D state in nrp_/nvme_/freeze/limits)}" | sed 's/^/  /'
	follow=$(echo "$b" | grep -E 'nrp_(mpath_ctrl_decided|mpath_paths_follow|ns_path_follow)' | head -n1)
	# the diagnosis first: should the runner's limit end the test while
	# it waits for the hang to clear, it is already in the log
	[ -z "$follow" ] || echo "# the reset hangs in our path follow: $follow"
	echo w >/proc/sysrq-trigger 2>/dev/null
	# fast_io_fail_tmo fails the held read: the freeze, the write and
	# the reconnect then go on
	t1=$((SECONDS + failfast + 30 * NRP_SLOW))
	while nrp_running "$rpid" || nrp_running "$wpid" ||
		[ "$(nrp_ctrl_state "$NRP_CTRL")" != live ]; do
		[ $SECONDS -lt $t1 ] || { out=" (still stuck after fast_io_fail_tmo=$failfast: the cleanup may hang)"; break; }
		nrp_nap 0.5
	done
	echo "after fast_io_fail_tmo: $NRP_CTRL $(nrp_ctrl_state "$NRP_CTRL")${out:-}"
	if [ -n "$follow" ]; then
		nrp_fail "reset hung: our path follow waits for $disk's limits_lock, held by the max_sectors_kb write waiting for the queue to freeze, which waits for the read the reset holds: $follow"
	fi
	nrp_fail "reset not done ${bound}s after the target came back (live: $live_at, write returned: $w_at, read returned: $r_at)"
}

nrp_gpu_setup
nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
nrp_must modprobe brd rd_nr=1 rd_size=$((64 * 1024))
nrp_cleanup_push "modprobe -r brd"
nrp_nvmet_setup /dev/ram0
nrp_load_ours "$NRP_TRANSPORT" allow_soft_p2p=1
nrp_connect_raw "traddr=$NRP_TGT_IP4,trsvcid=$NRP_PORT,nr_io_queues=1,reconnect_delay=1,ctrl_loss_tmo=600,fast_io_fail_tmo=$failfast"
nrp_ctrl_is_ours "$NRP_CTRL" || nrp_fail "$NRP_CTRL is not ours"
NRP_NS=$(nrp_ns_dev "$NRP_CTRL") || nrp_fail "no namespace on $NRP_CTRL"
disk=$(basename "$NRP_NS")
[ "$disk" = "$(nrp_path_disk "$NRP_CTRL")" ] ||
	nrp_fail "multipath=N, but $NRP_CTRL's disk $disk is not its own ($(nrp_path_disk "$NRP_CTRL"))"
nrp_expect "p2p_capable with allow_soft_p2p=1" "$(nrp_stat "$NRP_CTRL" p2p_capable)" 1
nrp_expect "the P2P submitter's answer for $disk with p2p_capable 1" "$(nrp_p2p_submitter "$NRP_NS")" 0
head -c 4M /dev/urandom >"$pat"
nrp_must dd if="$pat" of="$NRP_NS" bs=1M oflag=direct status=none
msk=/sys/block/$disk/queue/max_sectors_kb
kb0=$(cat "$msk")
kb1=$((kb0 / 2))
[ "$kb1" -ge 4 ] || kb1=$((kb0 * 2))
echo "$NRP_CTRL: $disk takes P2P pages, max_sectors_kb $kb0; fast_io_fail_tmo $failfast s, bound ${bound}s"

# the next association may not carry P2P; the target goes away
echo 0 >/sys/module/$NRP_MOD/parameters/allow_soft_p2p || nrp_fail "allow_soft_p2p is not writable"
nrp_cleanup_push "echo 1 >/sys/module/$NRP_MOD/parameters/allow_soft_p2p"
rc0=$(nrp_stat "$NRP_CTRL" reconnects)
nrp_port_off 1 || nrp_fail "cannot take the target's port away"
nrp_cleanup_push "nrp_port_on 1"
nrp_wait_state "$NRP_CTRL" $((10 * NRP_SLOW)) connecting ||
	nrp_fail "$NRP_CTRL did not start reconnecting without its target ($(nrp_ctrl_state "$NRP_CTRL"))"

# a read waits on the queue of the reconnecting controller...
nr0=$(nrp_stat "$NRP_CTRL" not_ready)
dd if="$NRP_NS" of="$held" bs=1M count=4 iflag=direct status=none &
rpid=$!
nrp_cleanup_push "kill $rpid"
nrp_wait_stat "$NRP_CTRL" not_ready $((nr0 + 1)) 10 ||
	nrp_fail "the read was not held on $NRP_CTRL's queue (not_ready $(nrp_stat "$NRP_CTRL" not_ready))"
nrp_running $rpid || nrp_fail "the read ended while $NRP_CTRL reconnects (held: not_ready grew)"
# ...and a limits write waits for the queue to freeze, under limits_lock
echo "$kb1" >"$msk" 2>"$werr" &
wpid=$!
nrp_cleanup_push "kill $wpid"
if [ "$freezes" = 1 ]; then
	end=$((SECONDS + 10 * NRP_SLOW))
	until [[ $(stack_of $wpid) == *blk_mq_freeze_queue_wait* ]]; do
		nrp_running $wpid ||
			nrp_fail "the max_sectors_kb write returned while a read was held: the freeze did not wait ($(cat "$werr"))"
		[ $SECONDS -lt $end ] || nrp_fail "the max_sectors_kb write is not waiting for a freeze: $(stack_of $wpid)"
		nrp_nap 0.1
	done
	wait_in=$(stack_of $wpid | cut -d' ' -f1-9)
else
	wait $wpid || nrp_fail "the max_sectors_kb write failed: $(cat "$werr")"
	# 6.1's rescan after the reconnect sets the limits anew
	# (nvme_set_queue_limits()): the write is checked now
	nrp_expect "max_sectors_kb after the write" "$(cat "$msk")" "$kb1"
	wait_in="a write that returned at once: Linux $(uname -r) takes no freeze for it"
fi
echo "held: a read on $disk (not_ready +$(($(nrp_stat "$NRP_CTRL" not_ready) - nr0))), max_sectors_kb $kb1 in $wait_in"
[ "$(nrp_ctrl_state "$NRP_CTRL")" = connecting ] ||
	nrp_fail "$NRP_CTRL is $(nrp_ctrl_state "$NRP_CTRL") before the target came back"

# the target comes back: the reconnect changes p2p_capable to 0
nrp_port_on 1 || nrp_fail "cannot give the target's port back"
t0=$SECONDS
live_at=- w_at=- r_at=-
while :; do
	[ "$live_at" != - ] || [ "$(nrp_ctrl_state "$NRP_CTRL")" != live ] || live_at=$((SECONDS - t0))s
	[ "$w_at" != - ] || nrp_running $wpid || w_at=$((SECONDS - t0))s
	[ "$r_at" != - ] || nrp_running $rpid || r_at=$((SECONDS - t0))s
	[ "$live_at" != - ] && [ "$w_at" != - ] && [ "$r_at" != - ] && break
	[ $((SECONDS - t0)) -lt "$bound" ] || hung
	nrp_nap 0.2
done
echo "after the target came back: live in $live_at, the write returned in $w_at, the read in $r_at"
if [ "$freezes" = 1 ]; then
	# 6.12 and 7.3 keep a user's limit across the rescan (max_user_sectors)
	wait $wpid || nrp_fail "the max_sectors_kb write failed: $(cat "$werr")"
	nrp_expect "max_sectors_kb after the write" "$(cat "$msk")" "$kb1"
fi
wait $rpid || nrp_fail "the read held across the reconnect failed"
cmp -s "$pat" "$held" || nrp_fail "the read held across the reconnect returned other data than was written"
[ "$(nrp_stat "$NRP_CTRL" reconnects)" -gt "$rc0" ] || nrp_fail "no reconnect counted"
nrp_expect "p2p_capable after the reconnect with allow_soft_p2p=0" "$(nrp_stat "$NRP_CTRL" p2p_capable)" 0
nrp_expect "the P2P submitter's answer for $disk with p2p_capable 0" "$(nrp_p2p_submitter "$NRP_NS")" 3
nrp_expect "$disk's head (multipath=N)" "$(nrp_head_p2p "$disk")" none
head -c 4M /dev/urandom >"$pat"
nrp_must dd if="$pat" of="$NRP_NS" bs=1M oflag=direct status=none
nrp_must dd if="$NRP_NS" of="$back" bs=1M count=4 iflag=direct status=none
cmp -s "$pat" "$back" || nrp_fail "data written after the reconnect reads back otherwise"
echo "p2p_capable 0: $disk refuses P2P pages, no head; 4 MiB held across the reset and 4 MiB after it verified"

# nothing of ours left blocked (twice, a second apart: a passing wait is
# not a hang)
b=$(blocked_tasks)
if [ -n "$b" ]; then
	nrp_nap 1
	b2=$(blocked_tasks)
	b=$(comm -12 <(echo "$b" | sort) <(echo "$b2" | sort))
	[ -z "$b" ] || nrp_fail "blocked after the reset: $b"
fi

nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_assert_no_splat
nrp_pass
