#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The tracepoints (system nvme_rdma_p2p) follow one command: enabled
# through tracefs, one 4 KiB direct write leaves an nrp_submit, an nrp_map
# and an nrp_complete event naming the same controller, queue and command
# id, with the bytes and memory kind of the write and a success status.
# Disabled again, the same I/O records nothing. The README's trace-cmd
# example sees the same events.
#
# Then the controller's own events: its target port goes away and comes
# back. One nrp_error_recovery names the controller and its queue count;
# nrp_reconnect follows with attempts 1, 2, ... at least reconnect_delay
# apart, each failed one with the negative errno the kernel log reports for
# that attempt, the last one with result 0, as many as the counters count.
# A second controller of the same subsystem, through a second port that
# stays, records nothing and stays live.
. "$(dirname "$0")/lib.sh"

nrp_tracefs_require
E=$T/events/nvme_rdma_p2p

nrp_std_setup 64
nrp_connect --nr-io-queues=2 --reconnect-delay=1 --ctrl-loss-tmo=60; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
inst=${ctrl#nvme}

[ -d $E ] || nrp_fail "no $E: the module registered no trace events"
for e in nrp_submit nrp_map nrp_p2p_refused nrp_complete nrp_error_recovery nrp_reconnect; do
	[ -e $E/$e/format ] || nrp_fail "event $e missing"
done
evs=
for e in "$E"/nrp_*/; do evs+=" $(basename "$e")"; done
echo "events:$evs"

# Tracing to the ring buffer only while the one I/O runs.
trace_io() { # SEEK
	echo 0 >$T/tracing_on
	echo >$T/trace
	echo 1 >$T/tracing_on
	dd if=/dev/urandom of="$dev" bs=4k count=1 seek="$1" oflag=direct status=none ||
		nrp_fail "dd to $dev failed"
	echo 0 >$T/tracing_on
}

nrp_cleanup_push "echo 0 >$E/enable; echo 1 >$T/tracing_on"
echo 1 >$E/enable
trace_io 7
buf=$(cat $T/trace)
echo "$buf" | grep nrp_ | sed 's/^ *//'

# the write's submission: opcode 0x1, 4096 bytes, namespace 1
sub=$(echo "$buf" | grep "nrp_submit: nvme$inst " | grep "opcode=0x1 nsid=1 bytes=4096" | head -n1)
[ -n "$sub" ] || nrp_fail "no nrp_submit of a 4 KiB write on nvme$inst"
qid=$(echo "$sub" | sed -n 's/.* qid=\([0-9]*\) .*/\1/p')
cid=$(echo "$sub" | sed -n 's/.* cid=\(0x[0-9a-f]*\) .*/\1/p')
[ -n "$qid" ] && [ -n "$cid" ] || nrp_fail "cannot parse qid/cid of: $sub"
[ "$qid" -ge 1 ] || nrp_fail "the write went to queue $qid, not an I/O queue"
echo "write: nvme$inst qid=$qid cid=$cid"

echo "$buf" | grep -q "nrp_map: nvme$inst qid=$qid cid=$cid memory=host bytes=4096 segments=[1-9][0-9]* p2p_bytes=0 p2p_segments=0" ||
	nrp_fail "no nrp_map event of host memory, 4096 bytes, for cid $cid"
echo "$buf" | grep -q "nrp_complete: nvme$inst qid=$qid cid=$cid status=0x0" ||
	nrp_fail "no successful nrp_complete for cid $cid"
# in that order: submit, map... the map runs inside the submission, which
# is traced once the command is ready; completion comes last
order=$(echo "$buf" | grep " qid=$qid cid=$cid " | sed -n 's/.*\(nrp_[a-z_]*\):.*/\1/p' | tr '\n' ' ')
nrp_expect "events of cid $cid in order" "$order" "nrp_map nrp_submit nrp_complete "

# disabled: the same I/O leaves nothing
echo 0 >$E/enable
trace_io 8
n=$(grep -c nrp_ $T/trace)
nrp_expect "events with the tracepoints disabled" "$n" 0

# the README's trace-cmd example
if command -v trace-cmd >/dev/null; then
	rm -f /tmp/nrp-trace.dat
	nrp_must trace-cmd record -q -e nvme_rdma_p2p -o /tmp/nrp-trace.dat \
		dd if=/dev/zero of="$dev" bs=4k count=1 seek=9 oflag=direct status=none
	rep=$(trace-cmd report -i /tmp/nrp-trace.dat 2>/dev/null)
	echo "$rep" | grep -q "nrp_submit: *nvme$inst .*opcode=0x1 nsid=1 bytes=4096" ||
		nrp_fail "trace-cmd report lacks the write's nrp_submit: $(echo "$rep" | tail -n 5)"
	echo "$rep" | grep -q "nrp_complete: *nvme$inst " ||
		nrp_fail "trace-cmd report lacks nrp_complete"
	echo "trace-cmd record/report: $(echo "$rep" | grep -c nrp_) events"
	rm -f /tmp/nrp-trace.dat
else
	echo "trace-cmd not installed: its example not run (tools/setup.sh installs it)"
fi

# --- error recovery and reconnect ------------------------------------------
cfs=/sys/kernel/config/nvmet
port_link=$cfs/ports/1/subsystems/$NRP_SUBNQN
mkdir $cfs/ports/2 || nrp_fail "cannot create a second nvmet port"
nrp_cleanup_push "rmdir $cfs/ports/2"
echo rdma >$cfs/ports/2/addr_trtype
echo ipv4 >$cfs/ports/2/addr_adrfam
echo "$NRP_TGT_IP4" >$cfs/ports/2/addr_traddr
echo $((NRP_PORT + 1)) >$cfs/ports/2/addr_trsvcid
ln -s "$cfs/subsystems/$NRP_SUBNQN" $cfs/ports/2/subsystems/ ||
	nrp_fail "cannot enable the second nvmet port"
nrp_cleanup_push "rm $cfs/ports/2/subsystems/$NRP_SUBNQN"
out=$(nvme connect -t "$NRP_TRANSPORT" -a "$NRP_TGT_IP4" -s $((NRP_PORT + 1)) \
	-n "$NRP_SUBNQN" --nr-io-queues=1 2>&1) || nrp_fail "second connect failed: $out"
other=
for c in /sys/class/nvme/nvme*; do
	grep -q "trsvcid=$((NRP_PORT + 1))" "$c/address" 2>/dev/null && other=$(basename "$c")
done
[ -n "$other" ] && [ "$other" != "$ctrl" ] || nrp_fail "no second controller through port $((NRP_PORT + 1))"
echo "$ctrl through port $NRP_PORT, $other through port $((NRP_PORT + 1))"

queues=$(($(grep -c . "$NRP_DEBUGFS/$ctrl/queue_stats") - 1))
rec0=$(nrp_stat "$ctrl" recoveries)
att0=$(nrp_stat "$ctrl" reconnect_attempts)
con0=$(nrp_stat "$ctrl" reconnects)
echo 0 >$E/enable
echo 1 >$E/nrp_error_recovery/enable
echo 1 >$E/nrp_reconnect/enable
echo 0 >$T/tracing_on
echo >$T/trace
echo 1 >$T/tracing_on
nrp_dmesg_mark
# the port forgets the subsystem: nvmet drops its controllers there
rm "$port_link" || nrp_fail "cannot take the subsystem off port $NRP_PORT"
nrp_cleanup_push "ln -s $cfs/subsystems/$NRP_SUBNQN $cfs/ports/1/subsystems/"
# wait for a failed attempt (every 1 s while the port is away)
for i in $(seq 300); do
	grep -q "nrp_reconnect: nvme$inst attempt=[0-9]* result=-" $T/trace && break
	sleep 0.2
done
ln -s "$cfs/subsystems/$NRP_SUBNQN" $cfs/ports/1/subsystems/ ||
	nrp_fail "cannot put the subsystem back on port $NRP_PORT"
nrp_wait_state "$ctrl" 60 || nrp_fail "$ctrl not live again ($(nrp_ctrl_state "$ctrl"))"
# the successful attempt is traced as the controller turns live
for i in $(seq 50); do
	grep -q "nrp_reconnect: nvme$inst attempt=[0-9]* result=0" $T/trace && break
	sleep 0.2
done
echo 0 >$T/tracing_on
echo 0 >$E/enable
buf=$(grep -E 'nrp_(error_recovery|reconnect):' $T/trace)
echo "$buf" | sed 's/^ *//'

echo "$buf" | grep -E "nrp_[a-z_]*: nvme$other " && nrp_fail "events for $other, whose port stayed"
nrp_expect "$other state" "$(nrp_ctrl_state "$other")" live
nrp_expect "nrp_error_recovery events of $ctrl" \
	"$(echo "$buf" | grep -c "nrp_error_recovery: nvme$inst ")" 1
echo "$buf" | grep -q "nrp_error_recovery: nvme$inst queues=$queues$" ||
	nrp_fail "nrp_error_recovery does not say queues=$queues (admin + I/O queues of $ctrl)"
first=$(echo "$buf" | grep -E "nrp_(error_recovery|reconnect): nvme$inst " | head -n1)
case $first in
*nrp_error_recovery:*) ;;
*) nrp_fail "the first event is not the recovery: $first" ;;
esac
rec=$(echo "$buf" | grep "nrp_reconnect: nvme$inst ")
n=$(echo "$rec" | grep -c .)
[ "$n" -ge 2 ] || nrp_fail "$n nrp_reconnect events; expected a failed attempt and a successful one"
a_prev=0 t_prev=
while read -r t a r; do
	[ "$a" = $((a_prev + 1)) ] || nrp_fail "attempt $a follows attempt $a_prev"
	if [ "$a" -lt "$n" ]; then
		[ "$r" -lt 0 ] || nrp_fail "attempt $a of $n: result $r, expected a negative errno"
		nrp_dmesg_since | grep -q "nvme$inst: Failed reconnect attempt $a: $r$" ||
			nrp_fail "the kernel log does not report attempt $a failing with $r"
	else
		[ "$r" = 0 ] || nrp_fail "the last attempt ($a) has result $r, expected 0"
	fi
	if [ -n "$t_prev" ]; then
		awk -v a="$t_prev" -v b="$t" 'BEGIN { exit !(b - a >= 0.9) }' ||
			nrp_fail "attempt $a at ${t}s came less than reconnect_delay (1 s) after ${t_prev}s"
	fi
	a_prev=$a t_prev=$t
done < <(echo "$rec" | sed -n 's/.* \([0-9]*\.[0-9]*\): nrp_reconnect: nvme[0-9]* attempt=\([0-9]*\) result=\(-*[0-9]*\)$/\1 \2 \3/p')
[ "$a_prev" = "$n" ] || nrp_fail "parsed $a_prev of $n nrp_reconnect events"
nrp_dmesg_since | grep -q "nvme$inst: Successfully reconnected ($n attempts)" ||
	nrp_fail "the kernel log does not report success after $n attempts"
nrp_expect "recoveries counted" $(($(nrp_stat "$ctrl" recoveries) - rec0)) 1
nrp_expect "reconnect attempts counted" $(($(nrp_stat "$ctrl" reconnect_attempts) - att0)) "$n"
nrp_expect "reconnects counted" $(($(nrp_stat "$ctrl" reconnects) - con0)) 1
dd if=/dev/zero of="$dev" bs=4k count=1 seek=10 oflag=direct status=none ||
	nrp_fail "write after the reconnect failed"
nrp_pass
