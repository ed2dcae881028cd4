# SPDX-License-Identifier: GPL-2.0
# Fixtures of the shape tests (test_shape_*.sh): what each I/O queue of a
# controller carried, and verified I/O from every online CPU that must
# reach every queue.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Commands of each I/O queue of controller $1: "qid type commands" lines.
nrp_queue_cmds() {
	awk 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "commands") c = i; next }
	     $1 > 0 { print $1, $2, $c }' "$NRP_DEBUGFS/$1/queue_stats"
}

# Writes and reads pinned to each online CPU (blk-mq maps each CPU to a
# default and a read queue of its own), verified, and polled reads
# (io_uring, hipri) where controller $2 has poll queues; then every one of
# its I/O queues must have carried some. $1 says what is checked, $3 is the
# namespace's block device. One fio runs a job per CPU, each pinned to its
# CPU and on a 256 KiB region of its own: 64 fio processes one after the
# other took minutes of a 64-CPU TCG guest.
nrp_check_every_queue() {
	local what=$1 ctrl=$2 dev=$3 before after cpu idle n i=0 jobs=()
	before=$(nrp_queue_cmds "$ctrl")
	for cpu in $(nrp_cpulist "$(cat /sys/devices/system/cpu/online)"); do
		jobs+=(--name="c$cpu" --cpus_allowed="$cpu" --offset=$((i * 256))k)
		i=$((i + 1))
	done
	fio --filename="$dev" --direct=1 --ioengine=libaio --rw=randwrite --bs=4k \
		--iodepth=4 --size=256k --verify=crc32c --verify_fatal=1 --do_verify=1 \
		--output-format=terse --terse-version=3 "${jobs[@]}" >/tmp/shape-fio.log 2>&1 ||
		nrp_fail "$what: fio pinned to each of $i CPUs failed: $(tail -n 3 /tmp/shape-fio.log)"
	if grep -qw poll <(nrp_queue_cmds "$ctrl"); then
		fio --filename="$dev" --direct=1 --ioengine=io_uring --hipri=1 --rw=randread \
			--bs=4k --iodepth=4 --size=256k --output-format=terse --terse-version=3 \
			"${jobs[@]}" >/tmp/shape-fio.log 2>&1 ||
			nrp_fail "$what: polled fio on each of $i CPUs failed: $(tail -n 3 /tmp/shape-fio.log)"
	fi
	after=$(nrp_queue_cmds "$ctrl")
	echo "$what: queues (qid type commands before -> after):"
	join <(echo "$before") <(echo "$after") | awk '{ printf "  %s %s %s -> %s\n", $1, $2, $3, $5 }'
	idle=$(join <(echo "$before") <(echo "$after") | awk '$5 <= $3 { print $1 "(" $2 ")" }')
	[ -z "$idle" ] || nrp_fail "$what: queues that carried nothing: $idle"
	n=$(echo "$after" | wc -l)
	echo "$what: all $n I/O queues carried verified I/O"
}
