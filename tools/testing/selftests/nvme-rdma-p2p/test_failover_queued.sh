#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Failover that never waits on a dead path (issue 28). Two paths to one
# namespace (two nvmet ports on two veth pairs), nvme_core multipath=Y,
# round-robin: fio writes 256 deep (4 jobs of 64) through the head while
# each path's queue takes 15 commands and each command takes 250 ms at the
# target, so requests wait for tags of both paths. Port 2 goes away. Every request
# already routed to path 2 must fail over to path 1 at once, as in-tree:
# the controller leaves LIVE and its queued requests are sent down the
# other path, not kept until a reconnect (the port stays away for 60 s)
# or ctrl_loss_tmo.
# Measured: the time from the port going away until path 2 holds no
# request (none in flight, none holding a tag of it unstarted), and fio,
# whose requests all complete, finishes verified while port 2 is still
# away. Then the port comes back, path 2 reconnects and carries I/O
# again. With the I/O queues left quiesced while reconnecting (d87c58c,
# before e924085) path 2 emptied as fast, but fio's I/O never completed:
# this test failed with fio still waiting 285 s after the port went away.
# nrp-timeout: 900
. "$(dirname "$0")/lib_mpath.sh"

nrp_nvme_core_multipath Y
nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
# A namespace whose every command takes 250 ms. Both paths full need 120
# commands a second: at 50 ms (600 a second, 9 MB/s of 16 KiB writes with
# crc32c) a TCG guest on a loaded host could not submit that fast and path
# 2 held 9 of its 15 tags at most.
nrp_slow_backing 250 256
nrp_nvmet_setup "$NRP_DEV"
nrp_load_ours
nrp_second_path
nrp_connect_path 1 --nr-io-queues=1 --queue-size=16 --reconnect-delay=2; c1=$NRP_CTRL
nrp_connect_path 2 --nr-io-queues=1 --queue-size=16 --reconnect-delay=2; c2=$NRP_CTRL
head=$(nrp_head_dev round-robin) || nrp_fail "no head disk"
p1=$(nrp_path_sysfs "$c1") && p2=$(nrp_path_sysfs "$c2") || nrp_fail "no path disks under the head"
echo "head $head over $c1 ($(basename "$p1")) and $c2 ($(basename "$p2"))"

fio --name=deep --filename="$head" --direct=1 --ioengine=libaio --rw=randwrite \
	--bs=4k --iodepth=64 --numjobs=4 --offset_increment=16m --size=1m \
	--verify=crc32c --verify_fatal=1 --do_verify=1 --group_reporting \
	--output=/tmp/failover-fio.log &
fio_pid=$!
nrp_cleanup_push "kill $fio_pid"
# both paths busy, path 2 with its 15 I/O tags taken (256 in flight over
# 30 tags: the rest wait for tags)
for _ in $(seq $((300 * NRP_SLOW))); do
	[ "$(nrp_path_inflight "$p2")" -ge 12 ] && [ "$(nrp_path_ios "$p1")" -gt 100 ] && break
	nrp_running $fio_pid || break
	sleep 0.1
done
q=$(nrp_path_inflight "$p2")
nrp_running $fio_pid || nrp_fail "fio ended before the port went away"
[ "$q" -ge 12 ] || nrp_fail "path 2 never had its tags taken ($q in flight)"
tq=$(nrp_path_tagged "$p2")
[ -n "$tq" ] || nrp_fail "no blk-mq debugfs tags for $p2: cannot see requests that hold a tag unstarted"
echo "path 2: $q in flight of its 15 I/O tags ($tq tagged); fio 256 deep"

nrp_dmesg_mark
t0=$(nrp_now)
nrp_port_off 2 || nrp_fail "cannot take port 2 away"
nrp_cleanup_push "nrp_port_on 2"
nrp_wait_left_live "$c2" $((60 * NRP_SLOW)) || nrp_fail "$c2 stayed live with its port gone"
tl=$NRP_LEFT
tleft=$(nrp_secs "$t0" "$tl")
# what failover means: path 2's requests, started (inflight) or holding
# a tag of it unstarted on its queue, which a quiesced queue keeps, move
# as soon as its controller leaves live, not when an I/O timeout (30 s)
# or the reconnect ends them (2.1 s measured)
bound=$(nrp_failover_bound)
nrp_expect_failover "path 2" "$tl" "$bound" "$p2"
tdrain=$(nrp_secs "$t0" "$(nrp_now)")
echo "port 2 away: $c2 left live after ${tleft}s, path 2 empty after ${tdrain}s, ${NRP_FAILOVER_SECS}s after it left (bound: ${bound}s after leaving live)"
# fio finishes over path 1 alone, port 2 still away
for _ in $(seq $((1200 * NRP_SLOW))); do
	nrp_running $fio_pid || break
	sleep 0.1
done
tfio=$(nrp_secs "$t0" "$(nrp_now)")
nrp_running $fio_pid && nrp_fail "fio did not finish in ${tfio}s with port 2 away"
wait $fio_pid || { tail -n 20 /tmp/failover-fio.log; nrp_fail "fio failed across the failover"; }
grep -q 'verify: bad' /tmp/failover-fio.log && nrp_fail "data corrupted across the failover"
[ "$(nrp_ctrl_state "$c2")" != live ] || nrp_fail "$c2 live again before the port came back"
echo "fio verified ${tfio}s after port 2 went away, port 2 still away"

a1=$(nrp_path_ios "$p2")
nrp_port_on 2 || nrp_fail "cannot give port 2 back"
nrp_wait_state "$c2" $((60 * NRP_SLOW)) || nrp_fail "$c2 not live after port 2 came back"
nrp_fio_verify "$head" --ioengine=libaio --rw=randwrite --bs=16k --iodepth=32 --size=2m
[ "$(nrp_path_ios "$p2")" -gt "$a1" ] || nrp_fail "path 2 carries no I/O after it came back"
echo "port 2 back: $c2 live, path 2 carries I/O again"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_assert_no_splat
nrp_pass
