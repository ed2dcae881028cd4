#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Two guests (tools/vm/run-pair.sh): the link stays down longer than the
# controller's limits.
#  - fast_io_fail_tmo: I/O in flight when the cable is pulled fails soon
#    after the limit while the controller keeps reconnecting; once the link
#    is back the controller is LIVE and new I/O reads back what it wrote.
#  - ctrl_loss_tmo: the controller gives up and is deleted, I/O fails (no
#    hang), nothing is left behind: no controller, no namespace device,
#    the module unloads, and a new connect works.
. "$(dirname "$0")/lib.sh"

# dd writing the namespace until it fails; its pid in dd_pid.
dd_start() {
	dd if=/dev/zero of="$1" bs=64k count=100000 oflag=direct status=none \
		2>/tmp/nrp-dd.err &
	dd_pid=$!
	nrp_cleanup_push "kill $dd_pid"
}

# Wait up to $1 s for dd to end; fail on a hang or a success. Leaves the
# seconds since $2 in dd_secs. (Not in $(...): dd is this shell's child.)
dd_must_fail() {
	local i rc=0
	for ((i = 0; i < $1 * 5; i++)); do
		nrp_running "$dd_pid" || break
		sleep 0.2
	done
	nrp_running "$dd_pid" && nrp_fail "I/O still pending $1 s after the link went down (hang)"
	wait "$dd_pid" || rc=$?
	[ "$rc" != 0 ] || nrp_fail "dd succeeded with the link down"
	dd_secs=$(nrp_secs "$2" "$(nrp_now)")
}

nrp_pair_host_setup
nrp_dmesg_mark

# fast_io_fail_tmo=4: I/O fails, the controller stays.
# (nvme-cli 2.3 has no option for fast_io_fail_tmo)
nrp_connect_raw "traddr=$NRP_TGT_IP4,trsvcid=$NRP_PORT,reconnect_delay=1,ctrl_loss_tmo=300,fast_io_fail_tmo=4,keep_alive_tmo=5"
ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
dd_start "$dev"
sleep 2
nrp_running $dd_pid || nrp_fail "dd ended before the link went down: $(cat /tmp/nrp-dd.err)"
out=$(nrp_pair_ctl link off both) || nrp_fail "link off: $out"
t0=$(nrp_now)
dd_must_fail 60 "$t0"
state=$(nrp_ctrl_state "$ctrl")
echo "fast_io_fail_tmo=4: I/O failed $dd_secs s after the link went down ($(head -n1 /tmp/nrp-dd.err)); $ctrl $state"
[ "$state" = connecting ] || nrp_fail "$ctrl is $state, expected connecting until ctrl_loss_tmo"
out=$(nrp_pair_ctl link on both) || nrp_fail "link on: $out"
t1=$(nrp_now)
nrp_wait_state "$ctrl" 90 || nrp_fail "$ctrl not live 90 s after the link came back ($(nrp_ctrl_state "$ctrl"))"
echo "$ctrl live $(nrp_secs "$t1" "$(nrp_now)") s after the link came back"
dd if=/dev/urandom of=/tmp/nrp-pattern bs=64k count=32 status=none
dd if=/tmp/nrp-pattern of="$dev" bs=64k oflag=direct status=none ||
	nrp_fail "write after the link came back failed"
dd if="$dev" bs=64k count=32 iflag=direct status=none | cmp -s - /tmp/nrp-pattern ||
	nrp_fail "read back after the link came back differs"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_wait_gone "$ctrl" 30 || nrp_fail "$ctrl not removed by disconnect"

# ctrl_loss_tmo=8: the controller is deleted.
nrp_connect --reconnect-delay=1 --ctrl-loss-tmo=8 --keep-alive-tmo=5; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
dd_start "$dev"
sleep 2
nrp_running $dd_pid || nrp_fail "dd ended before the link went down: $(cat /tmp/nrp-dd.err)"
out=$(nrp_pair_ctl link off both) || nrp_fail "link off: $out"
t0=$(nrp_now)
dd_must_fail 120 "$t0"
echo "ctrl_loss_tmo=8: I/O failed $dd_secs s after the link went down ($(head -n1 /tmp/nrp-dd.err))"
nrp_wait_gone "$ctrl" 60 || nrp_fail "$ctrl still there ($(nrp_ctrl_state "$ctrl")) long after ctrl_loss_tmo"
echo "$ctrl deleted $(nrp_secs "$t0" "$(nrp_now)") s after the link went down"
for i in $(seq 50); do
	[ -e "$dev" ] || break
	sleep 0.2
done
[ -e "$dev" ] && nrp_fail "$dev left behind by the deleted controller"
out=$(nrp_pair_ctl link on both) || nrp_fail "link on: $out"
nrp_assert_no_ctrls
for d in "$NRP_DEBUGFS"/nvme*; do
	[ -e "$d" ] && nrp_fail "debugfs entry left behind: $d"
done
nrp_must modprobe -r nvme-rdma-p2p
nrp_mod_loaded nvme_rdma_p2p && nrp_fail "module still loaded after modprobe -r"
nrp_load_ours
nrp_connect --reconnect-delay=1 --ctrl-loss-tmo=30; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace after reconnecting"
nrp_fio_verify "$dev" --rw=randrw --bs=16k --iodepth=8 --size=4m --ioengine=libaio
echo "a new connect after the deletion works, I/O verifies"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_wait_gone "$ctrl" 30 || nrp_fail "$ctrl not removed by disconnect"
nrp_assert_no_splat
nrp_pass
