#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The connect options behave as with the in-tree transport: the defaults
# of a bare connect (trsvcid 4420, queue_size 128, keep_alive_tmo 5,
# reconnect_delay 10, ctrl_loss_tmo 600, one I/O queue per CPU) and
# explicit values of each are what the controller shows; queue_size above
# 128 is clamped; hostid, tos and disable_sqflow are taken;
# duplicate_connect decides whether a second identical connect is refused;
# fast_io_fail_tmo fails I/O early while the controller keeps reconnecting;
# huge write and poll queue counts are capped, not a splat.
. "$(dirname "$0")/lib.sh"

cfs=/sys/kernel/config/nvmet
nrp_std_setup 64
hostid=6f2c1d9e-51a4-4b8e-9d0a-2f6a7c3e8b11

attr() { cat "/sys/class/nvme/$ctrl/$1"; }
expect() { # ATTRIBUTE WANT
	[ "$(attr "$1")" = "$2" ] || nrp_fail "$ctrl ($copts): $1 reads '$(attr "$1")', expected '$2'"
}
connect_raw() { # OPTIONS (beyond transport and nqn)
	copts=$1
	nrp_connect_raw "$copts"; ctrl=$NRP_CTRL
	nrp_wait_state "$ctrl" 10 || nrp_fail "$ctrl ($copts) is $(nrp_ctrl_state "$ctrl")"
}

# a bare connect: the fabrics defaults
connect_raw "traddr=$NRP_TGT_IP4"
grep -q "trsvcid=4420" "/sys/class/nvme/$ctrl/address" || nrp_fail "address: $(attr address)"
expect sqsize 127
expect kato 5
expect reconnect_delay 10
expect ctrl_loss_tmo 600
expect fast_io_fail_tmo off
expect queue_count $(($(nproc) + 1))
echo "defaults: $(attr address | tr '\n' ' ')sqsize $(attr sqsize), kato $(attr kato), reconnect_delay $(attr reconnect_delay), ctrl_loss_tmo $(attr ctrl_loss_tmo), $(($(attr queue_count) - 1)) I/O queues"
nrp_must nvme disconnect -n "$NRP_SUBNQN"

# every one of them set. Both ends live in this guest and the route to the
# target's address is local, so the only source address that reaches it is
# that same address (on its own rxe device); test_pair_target_restart binds
# to a real second host's address.
connect_raw "traddr=$NRP_TGT_IP4,trsvcid=$NRP_PORT,host_traddr=$NRP_TGT_IP4,queue_size=32,keep_alive_tmo=7,reconnect_delay=3,ctrl_loss_tmo=30,fast_io_fail_tmo=20,nr_io_queues=1"
grep -q "host_traddr=$NRP_TGT_IP4" "/sys/class/nvme/$ctrl/address" ||
	nrp_fail "address lacks host_traddr: $(attr address)"
expect sqsize 31
expect kato 7
expect reconnect_delay 3
expect ctrl_loss_tmo 30
expect fast_io_fail_tmo 20
expect queue_count 2
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
nq=$(ls -d /sys/block/"$(nrp_path_disk "$ctrl")"/mq/* | wc -l)
[ "$nq" = 1 ] || nrp_fail "nr_io_queues=1 gave $nq hardware queues"
nrp_fio_verify "$dev" --rw=randwrite --bs=16k --iodepth=32 --size=4m
echo "explicit: $(attr address | tr '\n' ' ')sqsize 31, kato 7, reconnect_delay 3, ctrl_loss_tmo 30, fast_io_fail_tmo 20, 1 I/O queue; verified"
nrp_must nvme disconnect -n "$NRP_SUBNQN"

# more slots than an RDMA queue has: clamped, as the in-tree transport does
nrp_dmesg_mark
connect_raw "traddr=$NRP_TGT_IP4,queue_size=1024"
expect sqsize 127
nrp_dmesg_since | grep -q "clamping down" || nrp_fail "queue_size=1024 clamped without a word"
echo "queue_size=1024: clamped to sqsize $(attr sqsize)"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_assert_no_ctrls

# hostid, tos, disable_sqflow through nvme-cli
nrp_connect --hostid=$hostid --tos=8 --disable-sqflow; ctrl=$NRP_CTRL
[ "$(cat /sys/class/nvme/$ctrl/hostid)" = $hostid ] ||
	nrp_fail "hostid reads $(cat /sys/class/nvme/$ctrl/hostid)"
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
nrp_fio_verify "$dev" --rw=randwrite --bs=8k --size=4m
echo "hostid, tos=8, disable_sqflow: $ctrl live, I/O verified"

# duplicate_connect: the same target, subsystem and host as the first one
hostnqn=$(cat /sys/class/nvme/$ctrl/hostnqn)
opts="transport=$NRP_TRANSPORT,traddr=$NRP_TGT_IP4,trsvcid=$NRP_PORT,nqn=$NRP_SUBNQN,hostnqn=$hostnqn,hostid=$hostid"
out=$(nrp_fabrics_write "$opts") && nrp_fail "duplicate connect accepted: $out"
echo "duplicate refused: ${out##*: }"
out=$(nrp_fabrics_write "$opts,duplicate_connect") || nrp_fail "duplicate_connect refused: $out"
n=$(grep -l "$NRP_SUBNQN" /sys/class/nvme/nvme*/subsysnqn | wc -l)
[ "$n" = 2 ] || nrp_fail "expected 2 controllers with duplicate_connect, found $n"
echo "duplicate_connect: second controller $out"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_assert_no_ctrls

# fast_io_fail_tmo: I/O fails after 2 s, long before ctrl_loss_tmo (60 s)
nrp_connect_raw "traddr=$NRP_TGT_IP4,trsvcid=$NRP_PORT,reconnect_delay=1,ctrl_loss_tmo=60,fast_io_fail_tmo=2"
ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
rm "$cfs/ports/1/subsystems/$NRP_SUBNQN"
t0=$(date +%s)
timeout 50 dd if=/dev/zero of="$dev" bs=4k count=1 oflag=direct status=none &&
	nrp_fail "write succeeded with the target gone"
dt=$(($(date +%s) - t0))
echo "fast_io_fail_tmo=2: write failed after ${dt}s, $ctrl $(nrp_ctrl_state "$ctrl")"
[ "$dt" -lt 30 ] || nrp_fail "I/O took ${dt}s to fail with fast_io_fail_tmo=2"
[ -e "/sys/class/nvme/$ctrl" ] || nrp_fail "$ctrl was removed, ctrl_loss_tmo had not expired"
ln -s "$cfs/subsystems/$NRP_SUBNQN" "$cfs/ports/1/subsystems/"
nrp_wait_state "$ctrl" 60 || nrp_fail "$ctrl did not come back live"
dd if=/dev/zero of="$dev" bs=4k count=1 oflag=direct status=none ||
	nrp_fail "I/O still failing after reconnect"
echo "$ctrl live again, I/O flows"
nrp_must nvme disconnect -n "$NRP_SUBNQN"

# nvmf leaves the write and poll queue counts uncapped: huge ones are
# capped by the CPUs, as in-tree, and size nothing past its allocator
# (they once made the per-CPU counters warn, found by fuzz_options)
nrp_dmesg_mark
connect_raw "traddr=$NRP_TGT_IP4,nr_write_queues=100000,nr_poll_queues=100000"
echo "nr_write_queues=nr_poll_queues=100000: $ctrl live"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_assert_no_splat
nrp_pass
