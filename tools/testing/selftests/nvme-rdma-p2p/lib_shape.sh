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
# (io_uring, hipri) where controller $2 has poll queues; then each of its
# I/O queues must have carried what its CPUs sent: 64 writes and 64
# verifying reads per CPU, on the default and the read queue blk-mq maps
# that CPU to (both on the default one without read queues), and 64
# polled reads on its poll queue. blk-mq's map is the path disk's
# mq/<hctx>/cpu_list, and hctx N is our queue N + 1. Within 8 commands:
# the block layer may merge two adjacent random writes of one job, and
# the kernel's partition scan of a new disk may still read; a CPU's job on
# the wrong queue is 64 off on two queues. An online CPU that no
# cpu_list names (isolated: isolcpus=) may send to any queue of a kind,
# so each queue of that kind may carry its I/O too. $1 says what is checked, $3 is
# the namespace's block device. One fio runs a job per CPU, each pinned to
# its CPU and on a 256 KiB region of its own: 64 fio processes one after
# the other took minutes of a 64-CPU TCG guest.
nrp_check_every_queue() {
	local what=$1 ctrl=$2 dev=$3 before after cpu bad out n h i=0 jobs=() online polled=0 cpus
	before=$(nrp_queue_cmds "$ctrl")
	online=$(nrp_cpulist "$(cat /sys/devices/system/cpu/online)" | sort)
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
		polled=1
	fi
	after=$(nrp_queue_cmds "$ctrl")
	# "qid online-CPUs-mapped" of each hardware context of the path disk
	cpus=$(for h in /sys/class/nvme/"$ctrl"/"$(nrp_path_disk "$ctrl")"/mq/*/; do
		n=$(comm -12 <(nrp_cpulist "$(cat "$h/cpu_list")" | sort) <(echo "$online") | wc -l)
		h=${h%/}
		echo "$((${h##*/} + 1)) $n"
	done)
	[ -n "$cpus" ] || nrp_fail "$what: no blk-mq map (mq/*/cpu_list) for $ctrl's path disk"
	echo "$what: queues (qid type CPUs commands before -> after, expected growth):"
	out=$({ sed 's/^/B /' <<<"$before"; sed 's/^/C /' <<<"$cpus"; sed 's/^/A /' <<<"$after"; } |
		awk -v polled=$polled -v online="$(echo "$online" | wc -l)" '
		$1 == "B" { b[$2] = $4; next }
		$1 == "C" { c[$2] = $3; next }
		{ q[++n] = $2; t[$2] = $3; a[$2] = $4; if ($3 == "read") reads = 1 }
		END {
			# online CPUs in no default cpu_list (isolcpus=: blk-mq
			# lists the CPUs of a queue, not the isolated ones it
			# also takes): their I/O may land on any queue of a kind
			for (i = 1; i <= n; i++)
				if (t[q[i]] == "default")
					listed += c[q[i]]
			extra = online - listed
			if (extra < 0)
				extra = 0
			for (i = 1; i <= n; i++) {
				id = q[i]; k = c[id] + 0
				if (t[id] == "default")
					e = 64 * k * (reads ? 1 : 2)
				else
					e = (t[id] == "read" || polled) ? 64 * k : 0
				g = a[id] - b[id]
				printf "  %s %s %d %d -> %d, +%d expected\n", id, t[id], k, b[id], a[id], e
				slack = 8 + (t[id] == "default" && !reads ? 128 : 64) * extra
				if ((e == 0 && !extra) || g < e - 8 || g > e + slack)
					printf "BAD %s(%s: +%d, expected +%d)\n", id, t[id], g, e
			}
		}')
	grep -v '^BAD ' <<<"$out"
	bad=$(grep '^BAD ' <<<"$out" | cut -c5- | paste -sd' ' -)
	[ -z "$bad" ] || nrp_fail "$what: queues that did not carry what their CPUs sent: $bad"
	n=$(echo "$after" | wc -l)
	echo "$what: all $n I/O queues carried what their CPUs sent, within 8 commands"
}
