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
# the possible CPUs). The kernel target grants at most 128 I/O queues: on
# 43 CPUs and more the poll queues get what is left, and a third connect
# asks for I/O and poll queues alone. Each time every queue of every kind
# must carry verified I/O: writes and reads pinned to each online CPU
# (blk-mq maps each CPU to a default and a read queue of its own), and
# polled reads (io_uring, hipri) to the poll queues; each queue's command
# count in queue_stats must grow by what was sent there.
# nrp-timeout: 1200
. "$(dirname "$0")/lib_shape.sh"

nrp_guest_cpus
usable=$NRP_USABLE_CPUS

nrp_std_setup 64

nrp_connect; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
nq=$(nrp_queue_cmds "$ctrl" | wc -l)
[ "$nq" = "$usable" ] || nrp_fail "default options: $nq I/O queues, expected one per online CPU not isolated ($usable)"
echo "default options: $(dmesg | grep -o "$ctrl: mapped [0-9/]* default/read/poll queues" | tail -n 1)"
nrp_check_every_queue "default options" "$ctrl" "$dev"
nrp_must nvme disconnect -n "$NRP_SUBNQN"

# Connect with 224 I/O queues asked for, and 224 write queues ($1 = 1)
# and poll queues ($2 = 1) or none; expect the split of what the target
# granted by the driver's priority (nrp_alloc_io_queues(): reads, then
# writes, then polling, each at most one per usable CPU; reads and writes
# share the default queues when the grant leaves writes none) and
# verified I/O on every queue.
many_queues() {
	local w=$1 p=$2 opts=(--nr-io-queues=224) what granted r d pl m t n
	what="224 I/O"
	[ "$w" = 1 ] && opts+=(--nr-write-queues=224) && what+=", write"
	[ "$p" = 1 ] && opts+=(--nr-poll-queues=224) && what+=", poll"
	what+=" queues asked for"
	nrp_dmesg_mark
	nrp_connect "${opts[@]}"; ctrl=$NRP_CTRL
	dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
	# nvmet grants at most 128 I/O queues: from 43 CPUs on, three per
	# CPU do not fit, and the split below says what each kind gets
	granted=$(nrp_dmesg_since | sed -n "s/.*$ctrl: creating \([0-9]*\) I\/O queues.*/\1/p" | tail -n 1)
	[ -n "$granted" ] || nrp_fail "$what: no 'creating N I/O queues' line"
	r=$((granted < usable ? granted : usable))
	if [ "$w" = 1 ] && [ "$r" -lt "$granted" ]; then
		d=$((granted - r < usable ? granted - r : usable))
	else
		d=$r r=0
	fi
	pl=0
	[ "$p" = 1 ] && pl=$((granted - r - d < usable ? granted - r - d : usable))
	echo "$what: the target granted $granted I/O queues (asked: $((usable * (1 + w + p))))"
	m=$(nrp_dmesg_since | grep -o "mapped [0-9]*/[0-9]*/[0-9]* default/read/poll" | tail -n 1)
	nrp_expect "$what" "$m" "mapped $d/$r/$pl default/read/poll"
	for t in default:$d read:$r poll:$pl; do
		n=$(nrp_queue_cmds "$ctrl" | awk -v t="${t%:*}" '$2 == t' | wc -l)
		nrp_expect "${t%:*} queues in queue_stats" "$n" "${t#*:}"
	done
	nrp_check_every_queue "$what" "$ctrl" "$dev"
	nrp_must nvme disconnect -n "$NRP_SUBNQN"
	# what had no room: poll queues (many CPUs) get a connect of their own
	[ "$p" = 1 ] && [ "$pl" -lt "$usable" ] && [ "$w" = 1 ] && many_queues 0 1
	return 0
}
many_queues 1 1
nrp_assert_no_splat
nrp_pass
