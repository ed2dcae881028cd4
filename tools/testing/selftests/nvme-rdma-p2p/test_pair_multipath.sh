#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Two guests joined by two links (tools/vm/run-pair.sh), one path on each:
# nvme_core multipath=Y, a head over a controller through link 1 and one
# through link 2, round-robin (issue 28). A checkpoint of
# NRP_PAIR_MPATH_MIB (default 1024, 64 in the check tier) through the head,
# written and read back, while link 2's cable is pulled in the middle (both
# NICs lose carrier): what was on path 2 fails over to path 1 once the
# controller leaves LIVE (keep_alive_tmo=5), the checkpoint completes and
# verifies byte-exact, and when the cable is back path 2 reconnects and
# carries I/O again.
#
# On a P2PDMA kernel the checkpoint comes from the GPU stand-in's memory
# (the in-kernel mover on 6.1, O_DIRECT from mapped P2P memory on 6.2 and
# later): P2P bytes over both paths together are the payload plus at most
# what was on path 2 when it went (sent again), and the only host memory
# an I/O queue maps is a reconnect's Connect data. On a stock kernel
# (no P2PDMA) it is fio from host memory, with verify.
# nrp-timeout: 1800
. "$(dirname "$0")/lib_mpath.sh"

mib=${NRP_PAIR_MPATH_MIB:-1024}
[ "${NRP_TIER:-}" = check ] && mib=${NRP_PAIR_MPATH_MIB:-64}
nrp_pair_need host
nrp_nvme_core_multipath Y
p2p= user=
if grep -qw pci_p2pdma_add_resource /proc/kallsyms; then
	p2p=1
	nrp_gpu_find || nrp_fail "no GPU stand-in in the host guest (run-pair.sh gives it one)"
	nrp_gpu_setup_ckpt
	user=$NRP_CKPT_USER
fi
nrp_rdma_nic_setup "${NRP_RDMA_TYPE:-rxe}"
out=$(nrp_pair_ctl wait-target 300) || nrp_fail "no target guest: $out"
nrp_rdma_nic_setup "${NRP_RDMA_TYPE:-rxe}" 2
out=$(nrp_pair_ctl target path2-on) || nrp_fail "target: no port on link 2: $out"
nrp_cleanup_push "nrp_pair_ctl target path2-off"
busybox ping -c 1 -W 10 "$NRP_TGT_IP4" >/dev/null || nrp_fail "$NRP_TGT_IP4 does not answer on link 1"
busybox ping -c 1 -W 10 "$NRP_TGT2_IP4" >/dev/null || nrp_fail "$NRP_TGT2_IP4 does not answer on link 2"
if [ -n "$p2p" ]; then
	nrp_load_ours "$NRP_TRANSPORT" allow_soft_p2p=1 max_mr_pages=257
else
	nrp_load_ours
fi
opts=(--reconnect-delay=1 --ctrl-loss-tmo=300 --keep-alive-tmo=5)
nrp_dmesg_mark
nrp_connect_path 1 "${opts[@]}"; c1=$NRP_CTRL
nrp_connect_path 2 "${opts[@]}"; c2=$NRP_CTRL
NRP_NS=$(nrp_head_dev round-robin) || nrp_fail "no head disk"
h=$(basename "$NRP_NS")
p1=$(nrp_path_sysfs "$c1") && p2=$(nrp_path_sysfs "$c2") || nrp_fail "no path disks under $h"
[ -z "$p2p" ] || nrp_wait_head_p2p "$h" 1 ||
	nrp_fail "head $h not marked for P2P: $(cat "$NRP_DEBUGFS/heads")"
# Bytes path $1 (a sysfs disk directory) has moved, read and written.
moved() { awk '{ print ($3 + $7) * 512 }' "$1/stat"; }
b1=$(nrp_stat "$c1" p2p_bytes_mapped) b2=$(nrp_stat "$c2" p2p_bytes_mapped)
hb1=$(nrp_io_stat "$c1" host_bytes_mapped) hb2=$(nrp_io_stat "$c2" host_bytes_mapped)
rc1=$(nrp_stat "$c1" reconnects) rc2=$(nrp_stat "$c2" reconnects)
su1=$(nrp_ioq_setups "$c1" "$c2")
m1=$(moved "$p1") m2=$(moved "$p2")
what="fio from host memory"
[ -n "$p2p" ] && what="P2P, the in-kernel mover"
[ -n "$user" ] && what="P2P, user-space O_DIRECT from mapped P2P memory"
# What the head's path selector sees: round-robin alternates between
# optimized paths, so both must be.
pol=$(cat /sys/class/nvme-subsystem/"$(basename "$(dirname "$(readlink -f "/sys/block/$h")")")"/iopolicy 2>/dev/null)
ana1=$(cat "$p1/ana_state" 2>/dev/null) ana2=$(cat "$p2/ana_state" 2>/dev/null)
echo "head $NRP_NS over $c1 (link 1, $ana1) and $c2 (link 2, $ana2), $pol; a $mib MiB checkpoint, $what"

log=/tmp/pair-mpath.log
t00=$(nrp_now)
if [ -n "$p2p" ]; then
	nrp_ckpt_start "$mib" $log
else
	# (512 KiB: a 1 MiB write is split at the paths' 1020 KiB limit into
	# two parts, and round-robin, which takes turns per part, would send
	# every large part down one path; the P2P runs raise the limit with
	# max_mr_pages=257)
	fio --name=ckpt --filename="$NRP_NS" --direct=1 --ioengine=libaio --rw=write \
		--bs=512k --iodepth=16 --size="${mib}m" --verify=crc32c --verify_fatal=1 \
		--do_verify=1 --output=$log &
	nrp_ckpt_started $log
fi
# the cable goes once a quarter of the write went over path 2
nrp_ckpt_wait "$m2" $((mib << 18)) $((3000 * NRP_SLOW)) "link 2 could be cut" moved "$p2"
pre1=$(($(moved "$p1") - m1)) pre2=$(($(moved "$p2") - m2))
# before the pull: a pull that fails half-way (one side off) is undone too
nrp_cleanup_push "nrp_pair_ctl link on both 2"
out=$(nrp_pair_ctl link off both 2) || nrp_fail "cannot pull link 2: $out"
t0=$(nrp_now)
nrp_wait_left_live "$c2" $((60 * NRP_SLOW)) ||
	nrp_fail "$c2 stayed live $(nrp_secs "$t0" "$(nrp_now)")s with link 2 pulled"
# both bounds below count from when the kernel says it left, not the poll
tl=$NRP_LEFT
tleft=$(nrp_secs "$t0" "$tl")
echo "before the cut: $((pre1 >> 20)) MiB over $c1, $((pre2 >> 20)) MiB over $c2"
# round-robin over two optimized paths: each carries about half
[ "$pre1" -gt 0 ] && [ "$pre2" -gt 0 ] &&
	[ "$pre1" -ge $((pre2 / 4)) ] && [ "$pre2" -ge $((pre1 / 4)) ] ||
	nrp_fail "round-robin did not spread the checkpoint over both paths ($pre1, $pre2 bytes)"
echo "link 2 pulled: $c2 left live after ${tleft}s ($(nrp_ctrl_state "$c2"))"
# what a user calls failover: the dead path is noticed within the
# keep-alive timeout and the RDMA retries (3.4 and 7.3 s measured; bound
# 20 s x NRP_SLOW), and what it held moves to path 1 before an I/O
# timeout or a reconnect would move it: the queues' drain on a link
# without carrier waits for rxe's own retries (13.7 s measured), so the
# bound is the longest nrp_failover_bound gives
awk -v s="$tleft" -v m=$((20 * NRP_SLOW)) 'BEGIN { exit !(s <= m) }' ||
	nrp_fail "$c2 left live only ${tleft}s after its cable was pulled (bound $((20 * NRP_SLOW))s)"
bound=$(nrp_failover_bound 25)
nrp_expect_failover "path 2" "$tl" "$bound" "$p2"
echo "path 2 empty ${NRP_FAILOVER_SECS}s after $c2 left live, $(nrp_secs "$t0" "$(nrp_now)")s after the pull (bound: ${bound}s after leaving live)"
# the checkpoint goes on over path 1 alone for a while
a1=$(moved "$p1") a2=$(moved "$p2")
nrp_ckpt_wait "$a1" $((mib << 17)) $((3000 * NRP_SLOW)) "" moved "$p1"
[ $(($(moved "$p1") - a1)) -gt 0 ] || nrp_fail "nothing moved over path 1 with link 2 pulled"
[ "$(moved "$p2")" = "$a2" ] || nrp_fail "path 2 moved data with its cable pulled"
[ "$(nrp_ctrl_state "$c2")" != live ] || nrp_fail "$c2 live again with link 2 still pulled"
echo "over path 1 alone: $((($(moved "$p1") - a1) >> 20)) MiB in $(nrp_secs "$t0" "$(nrp_now)")s since the cable went"
out=$(nrp_pair_ctl link on both 2) || nrp_fail "cannot plug link 2 back: $out"
t1=$(nrp_now)
nrp_wait_state "$c2" $((90 * NRP_SLOW)) || nrp_fail "$c2 not live 90 s after link 2 came back ($(nrp_ctrl_state "$c2"))"
echo "link 2 back: $c2 live after $(nrp_secs "$t1" "$(nrp_now)")s"
if [ -n "$p2p" ]; then
	nrp_ckpt_end "the cut"
else
	wait "$NRP_CKPT_PID" || { tail -n 20 $log; nrp_fail "the checkpoint failed across the cut"; }
	grep -q 'verify: bad' $log && nrp_fail "data corrupted across the cut"
	grep -q 'err= 0' $log || { tail -n 20 $log; nrp_fail "fio reported an error"; }
fi
echo "checkpoint of $mib MiB verified, $(nrp_secs "$t00" "$(nrp_now)")s"
d1=$(($(moved "$p1") - m1)) d2=$(($(moved "$p2") - m2))
[ "$d1" -gt 0 ] && [ "$d2" -gt 0 ] || nrp_fail "I/O on one path only ($d1, $d2 bytes)"
echo "moved: $((d1 >> 20)) MiB over $c1, $((d2 >> 20)) MiB over $c2 (ANA $(cat "$p1/ana_state" 2>/dev/null), $(cat "$p2/ana_state" 2>/dev/null))"
if [ -n "$p2p" ]; then
	pd1=$(($(nrp_stat "$c1" p2p_bytes_mapped) - b1)) pd2=$(($(nrp_stat "$c2" p2p_bytes_mapped) - b2))
	hb=$(($(nrp_io_stat "$c1" host_bytes_mapped) - hb1 + $(nrp_io_stat "$c2" host_bytes_mapped) - hb2))
	rc=$(($(nrp_stat "$c1" reconnects) - rc1 + $(nrp_stat "$c2" reconnects) - rc2))
	nq=$(awk 'NR > 1 && $1 > 0' "$NRP_DEBUGFS/$c2/queue_stats" | wc -l)
	[ "$rc" -ge 1 ] || nrp_fail "no reconnect counted after link 2 came back"
	nrp_expect_connect_data "$hb" "$rc" "$nq" $(($(nrp_ioq_setups "$c1" "$c2") - su1))
	total=$((pd1 + pd2)) payload=$((2 * mib << 20))
	[ "$total" -ge "$payload" ] && [ "$total" -le $((payload + (16 << 20))) ] ||
		nrp_fail "P2P bytes $total over both paths, payload $payload (up to 16 MiB sent again)"
	echo "P2P bytes: $((pd1 >> 20)) + $((pd2 >> 20)) MiB, payload $((payload >> 20)) MiB; host bytes: the Connect data alone"
fi
# path 2 carries I/O again
a2=$(moved "$p2")
if [ -n "$user" ]; then
	nrp_p2p_user served --dev "$NRP_NS" --size 16M --io uring --chunk 1M --qd 8 --stats none
elif [ -n "$p2p" ]; then
	nrp_p2p_ckpt --size 16M --chunk 1M --qd 8
else
	nrp_fio_verify "$NRP_NS" --ioengine=libaio --rw=randwrite --bs=64k --iodepth=8 --size=16m
fi
[ "$(moved "$p2")" -gt "$a2" ] || nrp_fail "path 2 carries no I/O after link 2 came back"
echo "path 2 back in use: $((($(moved "$p2") - a2) >> 20)) MiB over it"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_assert_no_splat
nrp_pass
