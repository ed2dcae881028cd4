#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# RDMA device removal (issue 12, finding 6), with "rdma link delete":
#  1. removing a device we do not use does not wait for another
#     controller's slow delete (it used to flush the global delete
#     workqueue; fault_free_delay_ms makes that delete slow);
#  2. removing the device while a controller is being created on it, at
#     several moments of the connect;
#  3. removing it while a controller reconnects onto it.
# Each time the removal returns, nothing of ours stays on the device (the
# RDMA core frees its pooled CQs right after), no controller is left
# LIVE on it, and the kernel reports nothing.
#
# Both guest-side addresses are local, so the host's queues use the same
# rxe device as the target's listener (found through rdma's resource
# list); the other rxe device is the unrelated one.
# nrp-timeout: 900
. "$(dirname "$0")/lib.sh"

cfs=/sys/kernel/config/nvmet
[ "${NRP_RDMA_TYPE:-rxe}" = rxe ] || nrp_skip "written for rxe device names"
nrp_std_setup 64
port_off() { rm "$cfs/ports/1/subsystems/$NRP_SUBNQN"; }
port_on() { ln -s "$cfs/subsystems/$NRP_SUBNQN" "$cfs/ports/1/subsystems/"; }
nrp_dmesg_mark

nrp_connect --nr-io-queues=1; ctrl=$NRP_CTRL
# kernel QPs all show as rdma_cm's: the RC ones are the association's
used=$(rdma resource show qp 2>/dev/null | awk '/type RC/ { sub("/.*", "", $2); print $2; exit }')
[ -n "$used" ] || nrp_fail "no RC QP in 'rdma resource show qp': $(rdma resource show qp)"
case $used in
nrp_rxe_t) other=nrp_rxe_h netdev=nrp-t ;;
nrp_rxe_h) other=nrp_rxe_t netdev=nrp-h ;;
*) nrp_fail "our QPs are on $used" ;;
esac
echo "host queues on $used; unrelated device $other"

# 1. unrelated device, while a delete of ours sleeps in free_ctrl. Not
# judged by time: removing an rxe device alone takes 3 to 27 s on the debug
# kernel under TCG. The delete sleeps until told to go on (writing 0 ends
# the delay, which logs "free delay over"); a removal that waited for it
# would return only after that line.
nrp_must nvme disconnect -n "$NRP_SUBNQN"
# the in-tree nvme_rdma, if an earlier test left it loaded, flushes that
# workqueue on every removal itself
! nrp_mod_loaded nvme_rdma || rmmod nvme_rdma || nrp_fail "cannot unload the in-tree nvme_rdma"
nrp_connect --nr-io-queues=1 --reconnect-delay=1 --ctrl-loss-tmo=2; ctrl=$NRP_CTRL
echo 300000 >"$NRP_DEBUGFS/fault_free_delay_ms"
nrp_cleanup_push "echo 0 >$NRP_DEBUGFS/fault_free_delay_ms"
port_off
nrp_dmesg_wait "fault: freeing a controller" 30 ||
	nrp_fail "the controller was not deleted after ctrl_loss_tmo"
t0=$(nrp_now)
timeout 120 rdma link delete $other || nrp_fail "rdma link delete $other failed or hung"
secs=$(nrp_secs "$t0" "$(nrp_now)")
echo "removing the unrelated $other during a slow delete: ${secs}s"
nrp_dmesg_since | grep -q "fault: free delay over" &&
	nrp_fail "removing an unused device waited for another controller's delete"
echo "the delete still sleeps: the removal did not wait for it"
echo 0 >"$NRP_DEBUGFS/fault_free_delay_ms"
nrp_dmesg_wait "fault: free delay over" 30 || nrp_fail "the delayed free did not go on"
nrp_wait_gone "$ctrl" 30 || nrp_fail "$ctrl not gone"
port_on

# the used device again, and the target listening on it
relink() {
	[ -e "/sys/class/infiniband/$used" ] ||
		rdma link add "$used" type rxe netdev "$netdev" || nrp_fail "cannot add $used back"
	port_off 2>/dev/null
	port_on || nrp_fail "cannot re-enable the port"
}

check_after_removal() { # WHAT SECS
	local c st
	echo "$1: removal took ${2}s"
	for c in /sys/class/nvme/nvme*; do
		[ -e "$c" ] || continue
		st=$(cat "$c/state" 2>/dev/null)
		[ "$st" = live ] && nrp_fail "$1: $(basename "$c") is live after its device was removed"
		echo "$1: $(basename "$c") $st"
	done
	nrp_disconnect_all
	for c in /sys/class/nvme/nvme*; do
		[ -e "$c" ] || continue
		nrp_wait_gone "$(basename "$c")" 60 || nrp_fail "$1: $(basename "$c") not gone"
	done
	nrp_assert_no_splat
}

# 2. during creation, at several moments of the connect
for d in 0.3 0.8 1.5 2.5; do
	relink
	sleep 1
	nvme connect -t "$NRP_TRANSPORT" -a "$NRP_TGT_IP4" -s "$NRP_PORT" -n "$NRP_SUBNQN" \
		--nr-io-queues=2 --reconnect-delay=1 --ctrl-loss-tmo=5 >/tmp/nrp-rm-connect.out 2>&1 &
	cpid=$!
	sleep $d
	t0=$(nrp_now)
	timeout 150 rdma link delete "$used" || nrp_fail "rdma link delete $used failed or hung (connect + ${d}s)"
	secs=$(nrp_secs "$t0" "$(nrp_now)")
	wait $cpid
	echo "connect + ${d}s: connect exit $?: $(head -c 200 /tmp/nrp-rm-connect.out)"
	check_after_removal "connect + ${d}s" "$secs"
done

# 3. during a reconnect: the port comes back, the device goes
for d in 0.2 1.0; do
	relink
	sleep 1
	nrp_connect --nr-io-queues=2 --reconnect-delay=1 --ctrl-loss-tmo=30; ctrl=$NRP_CTRL
	nrp_dmesg_mark
	port_off
	nrp_dmesg_wait "Failed reconnect attempt" 20
	port_on
	nrp_dmesg_wait "Reconnecting in" 5
	sleep 1
	sleep $d
	t0=$(nrp_now)
	timeout 150 rdma link delete "$used" || nrp_fail "rdma link delete $used failed or hung (reconnect + ${d}s)"
	check_after_removal "reconnect + ${d}s" "$(nrp_secs "$t0" "$(nrp_now)")"
done
relink
nrp_pass
