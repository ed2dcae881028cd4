#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The tracepoints (system nvme_rdma_p2p) follow one command: enabled
# through tracefs, one 4 KiB direct write leaves an nrp_submit, an nrp_map
# and an nrp_complete event naming the same controller, queue and command
# id, with the bytes and memory kind of the write and a success status.
# Disabled again, the same I/O records nothing. The README's trace-cmd
# example sees the same events.
. "$(dirname "$0")/lib.sh"

T=/sys/kernel/tracing
[ -e $T/trace ] || mount -t tracefs nodev $T 2>/dev/null
[ -e $T/trace ] || T=/sys/kernel/debug/tracing
[ -e $T/trace ] || nrp_skip "this kernel has no tracefs (CONFIG_FTRACE off)"
E=$T/events/nvme_rdma_p2p

nrp_std_setup 64
nrp_connect; ctrl=$NRP_CTRL
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
nrp_pass
