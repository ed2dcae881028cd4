#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A misbehaving target (issue 12): tools/hostile-target, a user-space
# NVMe/RDMA target of ours on rdma-core, runs on the target side of the
# veth pair and carries our host through Connect, the property accesses
# and Identify of a discovery controller (admin queue only), then
# misbehaves as each mode says. For every mode the host must fail the
# connect or recover (or give up) as the mode requires, with the reason in
# the kernel log; afterwards no controller is left, the module's reference
# count is 0, the host's RDMA device holds exactly the PDs, CQs, QPs, MRs
# and CM ids it held before, and the kernel reported nothing. Each mode is
# a sub-check; the test fails if any does. NRP_HOSTILE_MODES picks modes.
# nrp-timeout: 900
. "$(dirname "$0")/lib.sh"

ht=$(cd "$(dirname "$0")/../../../.." && pwd)/tools/hostile-target/hostile-target
[ -x "$ht" ] || nrp_skip "$ht not built (make -C tools/hostile-target; needs libibverbs-dev, librdmacm-dev)"
disc=nqn.2014-08.org.nvmexpress.discovery
# commands the target leaves unanswered time out after this many seconds
tmo=3

nrp_rdma_setup rxe
# user-space verbs and rdma_cm
modprobe ib_uverbs && modprobe rdma_ucm || nrp_skip "no ib_uverbs/rdma_ucm in this kernel"
nrp_load_ours
old_tmo=$(cat /sys/module/nvme_core/parameters/admin_timeout)
echo $tmo >/sys/module/nvme_core/parameters/admin_timeout
nrp_cleanup_push "echo $old_tmo >/sys/module/nvme_core/parameters/admin_timeout"
nrp_cleanup_push "for c in /sys/class/nvme/nvme*; do echo 1 >\$c/delete_controller; done"

# What the host's RDMA device holds: "pd N cq N qp N cm_id N mr N".
res_of_host() {
	rdma res show 2>/dev/null | awk '$2 == "nrp_rxe_h:" {
		for (i = 3; i < NF; i += 2)
			if ($i ~ /^(pd|cq|qp|cm_id|mr)$/) printf "%s %s ", $i, $(i + 1)
	}'
}

failures=()
sub_fail() { echo "  FAIL: $mode: $*"; failures+=("$mode: $*"); }
ctrl_now() { ls -d /sys/class/nvme/nvme* 2>/dev/null | head -n1 | xargs -r basename; }

# Wait up to $2 s for the log (since the mode began) to match $1. Bound
# by the clock, not by rounds: under a loaded TCG host a round of dmesg
# and grep takes a second.
log_wait() {
	local end=$((SECONDS + $2))
	until nrp_dmesg_since | grep -q "$1"; do
		((SECONDS < end)) || { sub_fail "no '$1' in the kernel log"; return 1; }
		sleep 0.5
	done
}

# The outcome each mode must have: fail (connect fails), live (connects,
# and where the target acts once live, recovers to live), gone (connects,
# then the controller is deleted), and the log line that says why.
declare -A want why
want[good]=live;		why[good]=""
want[unknown-cid]=recover;	why[unknown-cid]="got bad command_id 0xf01e"
# the second completion comes while the first waits for its LOCAL_INV;
# should the LOCAL_INV win the race, the command's generation moved on
want[dup-cqe]=live;		why[dup-cqe]="second completion for command\\|genctr mismatch"
want[short-cqe]=fail;		why[short-cqe]="Unexpected nvme completion length(8)"
want[long-cqe]=fail;		why[long-cqe]="RECV for CQE .* failed with status"
want[bad-inv]=fail;		why[bad-inv]="RECV for CQE .* failed with status"
want[bad-accept]=live;		why[bad-accept]=""
want[reject-garbage]=fail;	why[reject-garbage]="Connect rejected: status 28 (consumer defined) nvme status 58846 (unrecognized reason)"
want[reject-status]=fail;	why[reject-status]="Connect rejected: .*(invalid host SQ size)"
want[silent-connect]=fail;	why[silent-connect]="I/O 0 QID 0 timeout"
want[disconnect-connect]=fail;	why[disconnect-connect]="I/O 0 QID 0 timeout"
want[disconnect-identify]=fail;	why[disconnect-identify]="QID 0 timeout: command .*, opcode 0x6"
want[dnr-connect]=fail;		why[dnr-connect]="Connect for subsystem $disc is not allowed"
# Kernels whose fabrics core looks at the failed attempt's status (6.10 on)
# give up on Do Not Retry; 6.1 counts attempts only, as its in-tree
# nvme_rdma does, and the next attempt (which the target lets through)
# succeeds.
want[dnr-reconnect]=gone;	why[dnr-reconnect]="is not allowed"
case $(uname -r) in 6.[0-9].*) want[dnr-reconnect]=recover ;; esac
want[flood]=recover;		why[flood]="got bad command_id"
want[fake-aen]=recover;		why[fake-aen]="got async event completion 0x1f with none outstanding"
# 400 async events answered back to back, no admin command between them:
# each AER's SEND completion must be reaped as its event comes, or the
# admin send CQ (97 entries) fills, rxe drops completions, and the next
# admin command (an Identify, below) never completes: a timeout, a
# recovery. It stays live and answers instead.
want[aen-storm]=storm;		why[aen-storm]=""
all_modes="good unknown-cid dup-cqe short-cqe long-cqe bad-inv bad-accept reject-garbage reject-status silent-connect disconnect-connect disconnect-identify dnr-connect dnr-reconnect flood fake-aen aen-storm"
# The check tier (NRP_TIER=check) runs one mode of each outcome and each
# fixed bug, about a third of the time: a bad completion that recovers
# (unknown-cid), one that fails the connect (long-cqe), an unsolicited
# event (fake-aen), a refusal (reject-status), a target gone silent and
# one that hangs up mid-connect. The full tier and a run by hand run all.
check_modes="good unknown-cid long-cqe fake-aen aen-storm reject-status silent-connect disconnect-identify"
default_modes=$all_modes
[ "${NRP_TIER:-}" = check ] && default_modes=$check_modes
modes=${NRP_HOSTILE_MODES:-$default_modes}
# (commas too: a job line of run-guest.sh keeps no quotes)
modes=${modes//,/ }

res0=$(res_of_host)
echo "host RDMA resources before: $res0"
port=$NRP_PORT
for mode in $modes; do
	[ -n "${want[$mode]:-}" ] || nrp_fail "unknown mode $mode"
	nfail=${#failures[@]}
	port=$((port + 1))
	log=/tmp/hostile-$mode.log
	nrp_dmesg_mark
	"$ht" -a "$NRP_TGT_IP4" -p $port -m "$mode" >$log 2>&1 &
	tpid=$!
	for ((i = 0; i < 100; i++)); do
		grep -q '^ready' $log && break
		sleep 0.1
	done
	grep -q '^ready' $log || { cat $log; nrp_fail "$mode: the target did not start"; }

	t0=$(nrp_now)
	out=$(nrp_fabrics_write "transport=$NRP_TRANSPORT,traddr=$NRP_TGT_IP4,trsvcid=$port,nqn=$disc,reconnect_delay=1,ctrl_loss_tmo=30")
	rc=$?
	tc=$(nrp_secs "$t0" "$(nrp_now)")
	ctrl=$(ctrl_now)
	case ${want[$mode]} in
	fail)
		[ $rc != 0 ] || sub_fail "connect succeeded ($out)"
		[ -z "$ctrl" ] || sub_fail "controller $ctrl left after a failed connect"
		detail="connect failed after ${tc}s: $out" ;;
	live|recover|gone|storm)
		[ $rc = 0 ] && [ -n "$ctrl" ] || sub_fail "connect failed: $out"
		detail="connected in ${tc}s" ;;
	esac
	echo "  $mode: connect rc $rc after ${tc}s, controller '${ctrl:-none}'"
	case ${want[$mode]} in
	recover)
		log_wait "${why[$mode]}" 20
		log_wait "Successfully reconnected" 30
		if [ -n "$ctrl" ]; then
			nrp_wait_state "$ctrl" 10 live || sub_fail "$ctrl not live again ($(nrp_ctrl_state "$ctrl"))"
			detail+=", recovered: recoveries $(nrp_stat "$ctrl" recoveries), reconnects $(nrp_stat "$ctrl" reconnects)"
		fi ;;
	storm)
		t1=$(nrp_now)
		until grep -q '^misbehave: aen-storm' $log; do
			[ "$(nrp_secs "$t1" "$(nrp_now)" | cut -d. -f1)" -lt 120 ] ||
				{ sub_fail "the storm did not end: $(grep -c . $log) lines of target log"; break; }
			sleep 0.5
		done
		if [ -n "$ctrl" ]; then
			ts=$(nrp_now)
			idc=$(timeout 60 nvme id-ctrl "/dev/$ctrl" 2>&1) ||
				sub_fail "an admin command after the storm failed: $(echo "$idc" | tail -n 2)"
			echo "$idc" | grep -q 'hostile-target' || sub_fail "Identify after the storm: $(echo "$idc" | head -n 3)"
			nrp_expect_sub() { [ "$2" = "$3" ] || sub_fail "$1: $2, not $3"; }
			nrp_expect_sub "timeouts" "$(nrp_stat "$ctrl" timeouts)" 0
			nrp_expect_sub "recoveries" "$(nrp_stat "$ctrl" recoveries)" 0
			nrp_wait_state "$ctrl" 5 live || sub_fail "$ctrl not live after the storm ($(nrp_ctrl_state "$ctrl"))"
			detail+=", the storm took $(nrp_secs "$t1" "$ts")s, Identify after it $(nrp_secs "$ts" "$(nrp_now)")s"
		fi ;;
	gone)
		if [ -n "$ctrl" ]; then
			t1=$(nrp_now)
			# a refusal with DNR must not be retried until ctrl_loss_tmo (30 s)
			nrp_wait_gone "$ctrl" 15 || sub_fail "$ctrl still there 15 s after the target went away ($(nrp_ctrl_state "$ctrl"))"
			detail+=", gone $(nrp_secs "$t1" "$(nrp_now)")s after the target went away"
		fi
		[ -z "${why[$mode]}" ] || log_wait "${why[$mode]}" 1 ;;
	*)
		[ -z "${why[$mode]}" ] || log_wait "${why[$mode]}" 5 ;;
	esac
	if [ "${want[$mode]}" = live ] && [ -n "$ctrl" ]; then
		nrp_wait_state "$ctrl" 5 live || sub_fail "$ctrl not live ($(nrp_ctrl_state "$ctrl"))"
	fi

	echo "  $mode: target said: $(grep -E '^(misbehave|connect|association)' $log | head -n 6 | tr '\n' ';')"
	# what is left goes away cleanly
	for c in /sys/class/nvme/nvme*; do
		[ -e "$c" ] || continue
		echo 1 >"$c/delete_controller"
		nrp_wait_gone "$(basename "$c")" 30 || sub_fail "$(basename "$c") not deleted"
	done
	echo "  $mode: controllers deleted, stopping the target"
	kill -TERM $tpid 2>/dev/null
	for ((i = 0; i < 100; i++)); do
		nrp_running $tpid || break
		sleep 0.1
	done
	nrp_running $tpid && { sub_fail "the target does not end"; kill -KILL $tpid; }
	wait $tpid
	trc=$?
	[ $trc = 0 ] || sub_fail "the target exited with $trc: $(tail -n 3 $log)"
	refs=$(cat /sys/module/$NRP_MOD/refcnt)
	[ "$refs" = 0 ] || sub_fail "module reference count $refs"
	for ((i = 0; i < 50; i++)); do
		[ "$(res_of_host)" = "$res0" ] && break
		sleep 0.1
	done
	[ "$(res_of_host)" = "$res0" ] || sub_fail "host RDMA resources $(res_of_host), before $res0"
	s=$(nrp_dmesg_since | grep -E 'BUG:|WARNING:|Oops|KASAN|refcount_t|possible circular|hung_task|blocked for more than' | head -n 3)
	[ -z "$s" ] || sub_fail "the kernel reported: $s"
	if [ ${#failures[@]} = "$nfail" ]; then
		echo "ok $mode: ${want[$mode]}, $detail; $(grep -c '^misbehave' $log) act(s) of misbehaviour"
	else
		echo "  kernel said: $(nrp_dmesg_since | grep -v nrp-dmesg-mark | tail -n 8 | cut -c1-200)"
	fi
done

_nrp_run_cleanups
nrp_mod_loaded $NRP_MOD && nrp_fail "module still loaded after rmmod"
[ ${#failures[@]} = 0 ] || nrp_fail "${#failures[@]} sub-check(s) failed: ${failures[*]}"
nrp_pass
