#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Polled I/O: a connection with one default (write), one read and one poll
# queue sends polled I/O (io_uring with IORING_SETUP_IOPOLL, fio --hipri)
# to the poll queue and nothing else there, with verified data.
#
# Where the I/O went is read from the per-queue counters (debugfs
# queue_stats): a poll queue that io_poll advertises but that the I/O
# never reaches (blk-mq falls back to interrupts without a word) fails.
# That it was polled is read from the nrp_complete tracepoint, which fires
# where a completion is reaped: on the poll queue, always in the context
# of the task that polls, never in an interrupt or softirq, where a poll
# queue whose completions raise interrupts would reap them.
# pvsync2 --hipri is the other half: the kernel does not poll synchronous
# direct I/O (since 5.16 HIPRI is honoured for async I/O only), so its
# writes must go to the default queue, its reads to the read queue, and
# none to the poll queue, which has no interrupt to complete them.
. "$(dirname "$0")/lib.sh"

nrp_std_setup 64
nrp_connect --nr-io-queues=1 --nr-write-queues=1 --nr-poll-queues=1; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
path=/sys/block/$(nrp_path_disk "$ctrl")
[ "$(cat "$path/queue/io_poll" 2>/dev/null)" = 1 ] ||
	nrp_fail "$path: io_poll is not enabled with a poll queue"
nq=$(ls -d "$path"/mq/* | wc -l)
[ "$nq" = 3 ] || nrp_fail "expected 3 hardware queues (write, read, poll), got $nq"
nrp_expect "queue types (queue_stats)" \
	"$(awk 'NR > 1 { printf "%s ", $2 }' "$NRP_DEBUGFS/$ctrl/queue_stats")" \
	"admin default read poll "

declare -A before
snap() {
	local t
	for t in default read poll; do before[$t]=$(nrp_qstat "$ctrl" $t commands); done
}
# Fail unless the commands of the default, read and poll queues grew by
# $2, $3 and $4 since snap; $1 names the run.
moved() {
	local what=$1 t now got="" want="$2 $3 $4"
	for t in default read poll; do
		now=$(nrp_qstat "$ctrl" $t commands)
		[ "$now" != missing ] || nrp_fail "$what: no $t queue in queue_stats"
		got+="$((now - before[$t])) "
	done
	[ "$got" = "$want " ] ||
		nrp_fail "$what: commands on the default/read/poll queues: $got(expected $want)"
	echo "$what: commands on the default/read/poll queues: $got"
}

# Completions are traced while each job runs. trace_job QID: how many the
# queues of qid QID (an awk regex) reaped (NRP_REAPED), and how many of
# them in hard or soft interrupt context (NRP_IN_IRQ: the flags after the
# "[cpu]" of a trace line carry h, H or s there).
nrp_tracefs_require
E=$T/events/nvme_rdma_p2p/nrp_complete
[ -e $E/enable ] || nrp_fail "no tracepoint nvme_rdma_p2p:nrp_complete"
nrp_cleanup_push "echo 0 >$E/enable; echo 1 >$T/tracing_on"
trace_start() {
	echo 0 >$T/tracing_on
	echo >$T/trace
	echo 1 >$E/enable
	echo 1 >$T/tracing_on
}
trace_count() {
	echo 0 >$T/tracing_on
	awk -v c="$ctrl" -v q="^qid=($1)\$" '
		$0 !~ " nrp_complete: " { next }
		{ for (i = 1; i < NF; i++) if ($i == "nrp_complete:") break }
		$(i + 1) != c || $(i + 2) !~ q { next }
		{ for (j = 1; j < i; j++) if ($j ~ /^\[[0-9]+\]$/) break }
		{ n++; if ($(j + 1) ~ /[hHs]/) irq++ }
		END { print n + 0, irq + 0 }' $T/trace >/tmp/nrp-poll-trace.txt
	read -r NRP_REAPED NRP_IN_IRQ </tmp/nrp-poll-trace.txt
}
pq=$(awk '$2 == "poll" { print $1 }' "$NRP_DEBUGFS/$ctrl/queue_stats")
iq=$(awk '$2 == "default" || $2 == "read" { printf "%s%s", s, $1; s = "|" }' \
	"$NRP_DEBUGFS/$ctrl/queue_stats")

# 256 writes of 64 KiB, then fio's verify pass reads them back: 512
# commands, all polled
snap
trace_start
nrp_fio_verify "$dev" --ioengine=io_uring --hipri=1 --rw=randwrite --bs=64k --iodepth=16 --size=16m
trace_count "$pq"
moved "io_uring --hipri, 16 MiB in 64 KiB" 0 0 512
nrp_expect "completions reaped on the poll queue (qid $pq)" $NRP_REAPED 512
nrp_expect "of them in interrupt context" $NRP_IN_IRQ 0

# 1024 writes of 4 KiB and their 1024 reads, none polled: their queues
# reap in softirq (and in a worker for a late send completion), which
# also shows that the trace tells interrupt context apart
snap
trace_start
nrp_fio_verify "$dev" --ioengine=pvsync2 --hipri=1 --rw=randwrite --bs=4k --size=4m
trace_count "$iq"
moved "pvsync2 --hipri (not polled), 4 MiB in 4 KiB" 1024 1024 0
nrp_expect "completions reaped on the default and read queues (qid $iq)" $NRP_REAPED 2048
[ "$NRP_IN_IRQ" -gt 0 ] ||
	nrp_fail "none of the interrupt-driven queues' completions traced in interrupt context"
echo "of them in interrupt context: $NRP_IN_IRQ"
echo 0 >$E/enable
nrp_pass
