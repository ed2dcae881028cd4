#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# RDMA device removal (issue 12, finding 6), with "rdma link delete":
#  1. removing a device we do not use does not wait for another
#     controller's slow delete (it used to flush the global delete
#     workqueue; fault_free_delay_ms makes that delete slow);
#  2. removing the device while a controller is being created on it, at
#     several moments of the connect;
#  3. removing it while a controller reconnects onto it.
# Each time the removal returns (it may not hang), nothing of ours stays
# on the device (the RDMA core frees its pooled CQs right after), no
# controller is left LIVE on it, one the removal deleted goes away by
# itself, and the kernel reports nothing.
#
# The moments are events, not times: the controller's debugfs directory
# appearing, its admin queue's commands, its I/O queues appearing in
# queue_stats and sending their Connects; a failed reconnect attempt, an
# attempt starting. rdma is started ahead and reads its command from a
# pipe, since starting a process takes a TCG guest longer than some of
# these moments last. A connect the removal met must fail (nvme-cli's exit
# code and message) with the log saying the device is being removed; one
# that finished first must have succeeded and its controller be deleted by
# the removal. At least one connect must have been met. A reconnect
# attempt the removal met gives up; a controller between attempts holds
# nothing on the device and may go on reconnecting.
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

# the used device again, and the target listening on it: the device's
# GID table has the target's address (added asynchronously after the
# link) before anything connects
tgt_gid=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${NRP_TGT_IP4//./ })
relink() {
	local i
	[ -e "/sys/class/infiniband/$used" ] ||
		rdma link add "$used" type rxe netdev "$netdev" || nrp_fail "cannot add $used back"
	for ((i = 0; i < 100; i++)); do
		grep -qsx "$tgt_gid" /sys/class/infiniband/"$used"/ports/1/gids/* && break
		nrp_nap 0.1
	done
	grep -qsx "$tgt_gid" /sys/class/infiniband/"$used"/ports/1/gids/* ||
		nrp_fail "$used has no GID for $NRP_TGT_IP4 10 s after it was added"
	port_off 2>/dev/null
	port_on || nrp_fail "cannot re-enable the port"
}

# The removal of $used, left waiting for remove_now: rdma is started now,
# reading its command from a pipe (-b, batch), so that the removal starts
# the moment the command is written, not a process start later. The test
# holds the pipe open for writing (and reading: no open blocks), and
# closes it after the command for rdma to see its end.
arm_removal() {
	rm -f /tmp/nrp-rm.fifo
	mkfifo /tmp/nrp-rm.fifo || nrp_fail "mkfifo failed"
	exec {rm_fd}<>/tmp/nrp-rm.fifo
	rdma -b /tmp/nrp-rm.fifo {rm_fd}>&- >/tmp/nrp-rm.out 2>&1 &
	rm_pid=$!
}
# Where the removal and a connect wait, for the report: their states and
# kernel stacks, blocked tasks (sysrq w, into the kernel log), the log.
stall_report() {
	local p
	for p in "${rm_pid:-}:rdma link delete $used" "${cpid:-}:nvme connect"; do
		[ -n "${p%%:*}" ] && [ -e "/proc/${p%%:*}" ] || continue
		echo "${p#*:} (pid ${p%%:*}, $(awk '$1 == "State:" { print $2, $3 }' "/proc/${p%%:*}/status")) waits in:"
		cat "/proc/${p%%:*}/stack"
	done
	for p in /sys/class/nvme/nvme*/state; do
		[ -e "$p" ] && echo "$(basename "$(dirname "$p")"): $(cat "$p")"
	done
	echo "the kernel log's last lines:"
	nrp_dmesg_since | tail -n 15
	echo w >/proc/sysrq-trigger
}

# Start it, wait up to 150 s for it to return; fail when it fails or hangs.
remove_now() { # WHAT
	local end=$((SECONDS + 150)) t0=$EPOCHREALTIME
	nrp_running $rm_pid || nrp_fail "$1: rdma ended before the removal: $(cat /tmp/nrp-rm.out)"
	echo "nrp-test: removing $used" >/dev/kmsg
	echo "link delete $used" >&$rm_fd
	exec {rm_fd}>&-
	while nrp_running $rm_pid; do
		if [ $SECONDS -gt $end ]; then
			stall_report
			nrp_fail "$1: rdma link delete $used hung (blocked tasks in the kernel log)"
		fi
		nrp_nap 0.1
	done
	wait $rm_pid || nrp_fail "$1: rdma link delete $used failed: $(cat /tmp/nrp-rm.out)"
	rm_pid=
	rm_secs=$(nrp_secs "$t0" "$EPOCHREALTIME")
}

# After a removal: no controller LIVE; with $2 (the removal deleted them)
# all gone by themselves, else after a disconnect; the kernel reported
# nothing.
check_after_removal() { # WHAT [deleted]
	local c st
	echo "$1: removal took ${rm_secs}s"
	for c in /sys/class/nvme/nvme*; do
		[ -e "$c" ] || continue
		st=$(cat "$c/state" 2>/dev/null)
		[ "$st" = live ] && nrp_fail "$1: $(basename "$c") is live after its device was removed"
	done
	[ -n "${2:-}" ] || nrp_disconnect_all
	for c in /sys/class/nvme/nvme*; do
		[ -e "$c" ] || continue
		nrp_wait_gone "$(basename "$c")" 60 ||
			nrp_fail "$1: $(basename "$c") still there 60 s after ${2:+its device was removed}${2:-the disconnect} ($(cat "$c/state" 2>/dev/null))"
	done
	nrp_assert_no_splat
}

# Whether moment $1 of a connect has come: the controller (its debugfs
# directory) exists; its admin queue sent 3 commands (Connect, register
# reads: the target made a controller); I/O queues exist; an I/O queue
# sent its Connect. bash builtins only: polled every 10 ms.
moment() {
	local d q t c rest adm=0 io=-1
	for d in "$NRP_DEBUGFS"/nvme*; do
		[ -d "$d" ] || return 1
		[ "$1" = allocated ] && return 0
		while read -r q t c rest; do
			case $t in
			admin) adm=$c ;;
			default) io=$((io < 0 ? c : io + c)) ;;
			esac
		done 2>/dev/null <"$d/queue_stats"
		case $1 in
		admin) [ "$adm" -ge 3 ] ;;
		io-queues) [ "$io" -ge 0 ] ;;
		io-connect) [ "$io" -ge 1 ] ;;
		esac
		return
	done
	return 1
}

# 2. during creation, at several moments of the connect
met=0
for m in allocated admin io-queues io-connect; do
	relink
	arm_removal
	nrp_dmesg_mark
	nvme connect -t "$NRP_TRANSPORT" -a "$NRP_TGT_IP4" -s "$NRP_PORT" -n "$NRP_SUBNQN" \
		--nr-io-queues=2 --nr-write-queues=2 --nr-poll-queues=2 \
		--reconnect-delay=1 --ctrl-loss-tmo=5 >/tmp/nrp-rm-connect.out 2>&1 {rm_fd}>&- &
	# (not holding the removal's pipe: rdma ends at its end of input, and a
	# connect that kept it open made the removal look as long as itself)
	cpid=$!
	end=$((SECONDS + 60 * NRP_SLOW))
	until moment $m; do
		nrp_running $cpid || break
		[ $SECONDS -le $end ] || break
		nrp_nap 0.01
	done
	reached=no
	moment $m && reached=yes && echo "nrp-test: connect at $m" >/dev/kmsg
	remove_now "connect at $m"
	end=$((SECONDS + 120))
	while nrp_running $cpid; do
		[ $SECONDS -le $end ] || { stall_report; nrp_fail "connect at $m: nvme connect hung after the removal"; }
		nrp_nap 0.1
	done
	wait $cpid
	rc=$?
	cpid=
	log=$(nrp_dmesg_since)
	# the connect's outcome, from the log as from nvme-cli's exit code
	if echo "$log" | grep -q "new ctrl: NQN \"$NRP_SUBNQN\""; then
		[ $rc = 0 ] || nrp_fail "connect at $m: the controller was created, but nvme connect exited $rc"
		echo "$log" | grep -q "deleting controller on $used: the RDMA device is being removed" ||
			nrp_fail "connect at $m: the connect finished first, and the removal did not delete its controller"
		echo "connect at $m (moment reached: $reached): finished before the removal, which deleted the controller"
		check_after_removal "connect at $m" deleted
	else
		[ $rc != 0 ] || nrp_fail "connect at $m: nvme connect exited 0 without a controller"
		[ $reached = yes ] ||
			nrp_fail "connect at $m: failed (exit $rc) before the moment came: $(cat /tmp/nrp-rm-connect.out)"
		grep -q "could not add new controller" /tmp/nrp-rm-connect.out ||
			nrp_fail "connect at $m: exit $rc without nvme-cli's reason: $(cat /tmp/nrp-rm-connect.out)"
		echo "$log" | grep -q "$used: being removed, no new NVMe/RDMA queues on it\|RDMA device $used is being removed, giving up this association" ||
			nrp_fail "connect at $m: failed (exit $rc) without saying the device is being removed: $(echo "$log" | grep nvme | tail -n 3)"
		met=$((met + 1))
		echo "connect at $m: met by the removal, failed (exit $rc): $(echo "$log" | grep -o "being removed.*" | head -n1)"
		check_after_removal "connect at $m" deleted
	fi
done
[ $met -gt 0 ] || nrp_fail "the removal met none of the connects: every one finished first"

# 3. during a reconnect: between two attempts with the target away (the
# controller holds nothing on the device then: the removal may leave it
# reconnecting, or delete it), and as an attempt starts with the target
# back (its queues go onto the device: the attempt must give up, or, if
# it finished first, the removal delete the controller)
for m in between-attempts attempt-started; do
	relink
	nrp_connect --nr-io-queues=2 --nr-write-queues=2 --nr-poll-queues=2 \
		--reconnect-delay=1 --ctrl-loss-tmo=30; ctrl=$NRP_CTRL
	arm_removal
	nrp_dmesg_mark
	port_off
	nrp_dmesg_wait "$ctrl: Failed reconnect attempt" 20 ||
		nrp_fail "reconnect at $m: no failed reconnect attempt 20 s after the target went away"
	if [ $m = attempt-started ]; then
		# the count after the port is on: an attempt counted before
		# (it counts as it starts) may have started without the port
		# and failed by the time the removal comes (a CI run's did).
		# One that started between port_on and the read may instead
		# have found the port and reconnected: then no attempt follows
		# (another CI run's did), and the removal meets a live
		# controller, which it must delete (checked below).
		port_on
		nrp_read_stat "$ctrl" reconnect_attempts
		att=$NRP_VAL
		end=$((SECONDS + 20))
		while nrp_read_stat "$ctrl" reconnect_attempts && [ "$NRP_VAL" = "$att" ]; do
			[ "$(nrp_ctrl_state "$ctrl")" != live ] || break
			[ $SECONDS -le $end ] ||
				nrp_fail "reconnect at $m: no attempt 20 s after the target came back, and $ctrl is $(nrp_ctrl_state "$ctrl")"
			nrp_nap 0.01
		done
	else
		st=$(nrp_ctrl_state "$ctrl")
		[ "$st" = connecting ] || nrp_fail "reconnect at $m: $ctrl is $st, not connecting"
	fi
	echo "nrp-test: reconnect at $m" >/dev/kmsg
	remove_now "reconnect at $m"
	log=$(nrp_dmesg_since)
	deleted=
	if echo "$log" | grep -q "$ctrl: RDMA device $used is being removed, giving up this association\|$used: being removed, no new NVMe/RDMA queues on it"; then
		how="met by the removal, the attempt gave up"
		echo "$log" | grep -q "$ctrl: deleting controller on $used" && deleted=1
	elif echo "$log" | grep -q "$ctrl: deleting controller on $used: the RDMA device is being removed"; then
		deleted=1
		how="deleted by the removal$(echo "$log" | grep -q "$ctrl: Successfully reconnected" &&
			echo ", after the attempt finished")"
	elif [ $m = between-attempts ] && [ "$(nrp_ctrl_state "$ctrl")" = connecting ]; then
		how="still reconnecting, on nothing of the device"
	else
		nrp_fail "reconnect at $m: the removal neither deleted $ctrl nor made its attempt give up: $(echo "$log" | grep "$ctrl" | tail -n 3)"
	fi
	echo "reconnect at $m: $how"
	check_after_removal "reconnect at $m" $deleted
done
relink
nrp_pass
