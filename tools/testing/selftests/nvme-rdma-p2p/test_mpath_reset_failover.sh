#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A reset whose connect attempt takes long does not hold its path's
# requests (issue 44, finding 9). Two paths of ours to one namespace whose
# every command takes 250 ms, nvme_core multipath=Y, round-robin; each
# path takes 15 commands (one I/O queue of 16), and path 1's disk has
# mq-deadline where the kernel has it, so that requests beyond those wait
# in the scheduler or for a tag, not started. fio writes 128 deep through
# the head. Path 1 is reset with debugfs fault_cm_silent armed: its first
# connect attempt sends no connect request and waits for the 60 s bound
# of a connect, as against a target whose packets are dropped (with soft
# RDMA in one guest no packet can be dropped: rxe delivers between its
# devices without a netdev, and only the pair of guests has links to
# cut). The reset must send what waits on path 1 down path 2 at once, as
# error recovery does, not after that attempt: fio ends, verified, while
# path 1 is still connecting, with its largest completion latency within
# NRP_RESET_LAT_MAX seconds (default 20, times NRP_SLOW). Then path 1
# connects and carries I/O again.
# nrp-timeout: 900
. "$(dirname "$0")/lib_mpath.sh"

lat_max=$((${NRP_RESET_LAT_MAX:-20} * NRP_SLOW))
nrp_nvme_core_multipath Y
nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
nrp_slow_backing 250 64
nrp_nvmet_setup "$NRP_DEV"
nrp_load_ours
nrp_second_path
nrp_connect_path 1 --nr-io-queues=1 --queue-size=16 --reconnect-delay=2 --ctrl-loss-tmo=600; c1=$NRP_CTRL
nrp_connect_path 2 --nr-io-queues=1 --queue-size=16 --reconnect-delay=2 --ctrl-loss-tmo=600; c2=$NRP_CTRL
head=$(nrp_head_dev round-robin) || nrp_fail "no head disk"
p1=$(nrp_path_sysfs "$c1") && p2=$(nrp_path_sysfs "$c2") || nrp_fail "no path disks under the head"
sched=none
if grep -qw mq-deadline "$p1/queue/scheduler"; then
	echo mq-deadline >"$p1/queue/scheduler" || nrp_fail "cannot give $(basename "$p1") mq-deadline"
	sched=mq-deadline
fi
echo "head $head over $c1 ($(basename "$p1"), $sched) and $c2 ($(basename "$p2"))"

fio --name=deep --filename="$head" --direct=1 --ioengine=libaio --rw=randwrite \
	--bs=4k --iodepth=64 --numjobs=2 --offset_increment=16m --size=2m \
	--verify=crc32c --verify_fatal=1 --do_verify=1 --group_reporting \
	--output-format=json --output=/tmp/reset-fio.json &
fio_pid=$!
nrp_cleanup_push "kill $fio_pid"
# path 1 busy: its 15 I/O tags taken (128 in flight over 30 tags: the
# rest wait in its scheduler or for a tag)
t=0
until [ "$(nrp_path_inflight "$p1")" -ge 12 ]; do
	nrp_running "$fio_pid" || nrp_fail "fio ended before path 1 was full"
	((t++ < 300 * NRP_SLOW)) || nrp_fail "path 1 never had its tags taken: $(nrp_path_inflight "$p1") in flight"
	nrp_nap 0.1
done
echo "path 1: $(nrp_path_inflight "$p1") in flight of its 15 I/O tags; fio 128 deep"
echo 1 >"$NRP_DEBUGFS/$c1/fault_cm_silent" || nrp_fail "no debugfs fault_cm_silent"
t0=$(nrp_now)
# the write returns once the reset's first attempt is over: -ENETRESET,
# as that attempt fails
(echo 1 >"/sys/class/nvme/$c1/reset_controller") 2>/dev/null &
rpid=$!
nrp_cleanup_push "kill $rpid"
nrp_wait_state "$c1" $((30 * NRP_SLOW)) connecting || nrp_fail "$c1 not reset ($(nrp_ctrl_state "$c1"))"

end=$((SECONDS + 240 * NRP_SLOW))
while nrp_running "$fio_pid"; do
	[ $SECONDS -lt $end ] || nrp_fail "fio still running 240 s after the reset"
	nrp_nap 0.5
done
st=$(nrp_ctrl_state "$c1")
t1=$(nrp_now)
wait "$fio_pid" || nrp_fail "fio failed across the reset: $(tail -c 600 /tmp/reset-fio.json)"
lat=$(python3 -c '
import json, sys
t = open(sys.argv[1]).read()
# (fio may put a line of its own before the JSON)
j = json.loads(t[t.index("{"):])["jobs"][0]
print("%.1f %d %d %d" % (max(j[d]["clat_ns"]["max"] for d in ("read", "write")) / 1e9,
	j["error"], j["write"]["io_kbytes"], j["read"]["io_kbytes"]))' /tmp/reset-fio.json) ||
	nrp_fail "no fio result: $(head -c 600 /tmp/reset-fio.json)"
read -r lmax err wkb rkb <<<"$lat"
[ "$err" = 0 ] && [ "$wkb" = 4096 ] && [ "$rkb" = 4096 ] ||
	nrp_fail "fio: error $err, wrote $wkb KiB, read back $rkb KiB of 4096"
nrp_dmesg_since | grep -q "$c1: fault: no connect request" ||
	nrp_fail "the reset's connect attempt did not meet the fault"
echo "fio done $(nrp_secs "$t0" "$t1") s after the reset ($c1 $st then), all verified; largest completion latency ${lmax} s"
awk -v l="$lmax" -v m="$lat_max" 'BEGIN { exit !(l <= m) }' ||
	nrp_fail "a request waited ${lmax} s (more than $lat_max s): the reset held path 1's requests through its connect attempt"
[ "$st" != live ] || nrp_fail "$c1 was live again when fio ended: its connect attempt did not last"

nrp_wait_state "$c1" $((120 * NRP_SLOW)) live ||
	nrp_fail "$c1 not live 120 s after the reset ($(nrp_ctrl_state "$c1"))"
ios=$(nrp_path_ios "$p1")
nrp_fio_verify "$head" --rw=randwrite --bs=16k --iodepth=8 --size=1m
[ "$(nrp_path_ios "$p1")" -gt "$ios" ] || nrp_fail "path 1 carried no I/O after it reconnected"
echo "$c1 live again $(nrp_secs "$t0" "$(nrp_now)") s after the reset, carrying I/O"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_assert_no_splat
nrp_pass
