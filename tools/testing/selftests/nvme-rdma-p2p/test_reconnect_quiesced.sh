#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# While a controller reconnects, queued I/O waits in quiesced queues instead
# of being redispatched every few milliseconds (issue 12, finding 8), and
# the ways out still release it:
#  - reconnect: the queued read completes;
#  - fast_io_fail_tmo: I/O fails about then, not at the next attempt;
#  - delete (disconnect during reconnects): I/O fails, delete returns.
# not_ready counts commands turned away by a queue that is not live.
#
# nvme_core.multipath=N: a multipath head parks its bios itself, so only
# the controller's own disk shows what the transport's queues do.
# (Taking the nvmet port away is the single-guest way to lose the target,
# as in test_target_restart.sh.)
. "$(dirname "$0")/lib_p2p.sh"

cfs=/sys/kernel/config/nvmet
port_off() { rm "$cfs/ports/1/subsystems/$NRP_SUBNQN"; }
port_on() { ln -s "$cfs/subsystems/$NRP_SUBNQN" "$cfs/ports/1/subsystems/"; }

nrp_nvme_core_multipath N
nrp_std_setup 64
nrp_dmesg_mark

# wait up to 30 s for $1 to leave live
wait_not_live() {
	local i
	for i in $(seq 150); do
		[ "$(nrp_ctrl_state "$1")" != live ] && return 0
		sleep 0.2
	done
	nrp_fail "$1 stayed live with the target gone"
}

# 1. reconnect: 6 s of outage with a read queued
nrp_connect --nr-io-queues=1 --reconnect-delay=2 --ctrl-loss-tmo=60; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
port_off || nrp_fail "cannot disable the target port"
wait_not_live "$ctrl"
dd if="$dev" of=/dev/null bs=4k count=1 iflag=direct status=none &
dd_pid=$!
nrp_cleanup_push "kill $dd_pid"
sleep 1
n0=$(nrp_stat "$ctrl" not_ready)
a0=$(nrp_stat "$ctrl" reconnect_attempts)
sleep 6
n1=$(nrp_stat "$ctrl" not_ready)
a1=$(nrp_stat "$ctrl" reconnect_attempts)
echo "6 s of reconnecting ($((a1 - a0)) attempts): $((n1 - n0)) dispatches turned away"
[ $((a1 - a0)) -ge 1 ] || nrp_fail "no reconnect attempt in 6 s"
nrp_running $dd_pid || nrp_fail "the read ended while the target was gone"
[ $((n1 - n0)) -le 10 ] ||
	nrp_fail "$((n1 - n0)) dispatches in 6 s: queued I/O spins while reconnecting"
port_on || nrp_fail "cannot re-enable the target port"
nrp_wait_state "$ctrl" 30 || nrp_fail "$ctrl not live after the port came back"
wait $dd_pid || nrp_fail "the queued read failed across the reconnect"
echo "the queued read completed after the reconnect"
nrp_must nvme disconnect -n "$NRP_SUBNQN"

# 2. fast_io_fail_tmo=2 with reconnect_delay=10: I/O fails within seconds
nrp_connect_raw "traddr=$NRP_TGT_IP4,trsvcid=$NRP_PORT,nr_io_queues=1,reconnect_delay=10,ctrl_loss_tmo=60,fast_io_fail_tmo=2"
ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
port_off
wait_not_live "$ctrl"
t0=$(nrp_now)
timeout 30 dd if="$dev" of=/dev/null bs=4k count=1 iflag=direct status=none &&
	nrp_fail "a read succeeded with the target gone"
secs=$(nrp_secs "$t0" "$(nrp_now)")
echo "fast_io_fail_tmo=2: the read failed after ${secs}s"
[ "${secs%.*}" -lt 8 ] || nrp_fail "fast_io_fail_tmo=2 failed the read only after ${secs}s"

nrp_must nvme disconnect -n "$NRP_SUBNQN"
port_on

# 3. delete during reconnects with a read queued
nrp_connect --nr-io-queues=1 --reconnect-delay=2 --ctrl-loss-tmo=60; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
port_off
wait_not_live "$ctrl"
dd if="$dev" of=/dev/null bs=4k count=1 iflag=direct status=none &
dd_pid=$!
sleep 1
t0=$(nrp_now)
timeout 60 nvme disconnect -n "$NRP_SUBNQN" >/dev/null || nrp_fail "disconnect failed or hung"
echo "disconnect while reconnecting: $(nrp_secs "$t0" "$(nrp_now)")s"
wait $dd_pid && nrp_fail "a read succeeded on a deleted controller"
port_on
nrp_assert_no_splat
nrp_pass
