#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The GPU server's shape (issue 27): hundreds of possible CPUs and a queue
# per online CPU. Run it in a guest booted with many possible CPUs
# (run-guest.sh --smp 2,maxcpus=240: nr_cpu_ids 240, the sizing a
# 224-thread host gives; on 6.12, --smp 240 --online 2: 240 present, two
# online) or many online ones (--smp 16); on a plain 2-CPU guest it checks
# the same at that size. It fails when the kernel did not give the CPUs
# the boot asked for (nrp_guest_cpus). Booted with isolcpus= (run-all.sh's
# "2:isolcpus=1" shape boot), the queues are one per CPU not isolated, and
# pinning I/O to every online CPU, isolated or not, must still move every
# queue: the in-tree transport maps a queue to an isolated CPU alone and
# cannot connect it (-EXDEV).
#
# Connects twice: with the default options, and with 224 I/O, write and
# poll queues asked for (the core clamps I/O queues to the online CPUs, not
# write or poll queues; the driver sizes what a controller may ever need by
# the possible CPUs). Each time every queue of every kind must carry
# verified I/O: writes and reads pinned to each online CPU (blk-mq maps
# each CPU to a default and a read queue of its own), and polled reads
# (io_uring, hipri) to the poll queues; each queue's command count in
# queue_stats must grow by what was sent there.
. "$(dirname "$0")/lib.sh"

nrp_guest_cpus
online=$NRP_ONLINE_CPUS possible=$NRP_POSSIBLE_CPUS usable=$NRP_USABLE_CPUS

nrp_std_setup 64

# commands of each I/O queue, "qid type commands" lines
qcmds() {
	awk 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "commands") c = i; next }
	     $1 > 0 { print $1, $2, $c }' "$NRP_DEBUGFS/$ctrl/queue_stats"
}

# check_queues: I/O pinned to every online CPU, then every queue moved
check_queues() {
	local what=$1 before after cpu idle n
	before=$(qcmds)
	for ((cpu = 0; cpu < online; cpu++)); do
		taskset -c "$cpu" fio --name="w$cpu" --filename="$dev" --direct=1 \
			--ioengine=libaio --rw=randwrite --bs=4k --iodepth=4 \
			--offset=$((cpu * 512))k --size=512k --verify=crc32c \
			--verify_fatal=1 --do_verify=1 --output-format=terse \
			--terse-version=3 >/tmp/shape-fio.log 2>&1 ||
			nrp_fail "$what: fio pinned to CPU $cpu failed: $(tail -n 3 /tmp/shape-fio.log)"
		if grep -qw poll <(qcmds); then
			taskset -c "$cpu" fio --name="p$cpu" --filename="$dev" --direct=1 \
				--ioengine=io_uring --hipri=1 --rw=randread --bs=4k \
				--iodepth=4 --offset=$((cpu * 512))k --size=512k \
				--output-format=terse --terse-version=3 >/tmp/shape-fio.log 2>&1 ||
				nrp_fail "$what: polled fio on CPU $cpu failed: $(tail -n 3 /tmp/shape-fio.log)"
		fi
	done
	after=$(qcmds)
	echo "$what: queues (qid type commands before -> after):"
	join <(echo "$before") <(echo "$after") | awk '{ printf "  %s %s %s -> %s\n", $1, $2, $3, $5 }'
	idle=$(join <(echo "$before") <(echo "$after") | awk '$5 <= $3 { print $1 "(" $2 ")" }')
	[ -z "$idle" ] || nrp_fail "$what: queues that carried nothing: $idle"
	n=$(echo "$after" | wc -l)
	echo "$what: all $n I/O queues carried verified I/O"
}

nrp_connect; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
nq=$(qcmds | wc -l)
[ "$nq" = "$usable" ] || nrp_fail "default options: $nq I/O queues, expected one per online CPU not isolated ($usable)"
echo "default options: $(dmesg | grep -o "$ctrl: mapped [0-9/]* default/read/poll queues" | tail -n 1)"
check_queues "default options"
nrp_must nvme disconnect -n "$NRP_SUBNQN"

nrp_dmesg_mark
nrp_connect --nr-io-queues=224 --nr-write-queues=224 --nr-poll-queues=224; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
m=$(nrp_dmesg_since | grep -o "mapped [0-9]*/[0-9]*/[0-9]* default/read/poll" | tail -n 1)
nrp_expect "queues with 224 of each asked for" "$m" "mapped $usable/$usable/$usable default/read/poll"
for t in default read poll; do
	n=$(qcmds | awk -v t=$t '$2 == t' | wc -l)
	nrp_expect "$t queues in queue_stats" "$n" "$usable"
done
check_queues "224 I/O, write and poll queues asked for"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_assert_no_splat
nrp_pass
