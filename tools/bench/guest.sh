#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest half of `make bench` (tools/bench/run.sh boots the guest and runs
# this in it, in the checkout).
#
# One nvmet target, one subsystem with two namespaces (nsid 1: null_blk,
# nsid 2: a brd RAM disk), exported over nvmet-rdma (rxe on a veth pair)
# and over nvmet-tcp on the same veth. Three controllers of the same host
# connect to it: the in-tree nvme_rdma (transport "rdma"), ours
# (transport "rdma_p2p") and the in-tree nvme_tcp. nvme_core is loaded
# with multipath=N, so each controller has its own block devices.
#
# Every measurement is repeated NRP_BENCH_RUNS times, the transports
# taking turns (A B C A B C ...), so that drift of a noisy TCG host hits
# them alike. Raw results go to $NRP_BENCH_OUT (fio JSON, and one line a
# run in runs.tsv); progress lines start with "bench:".
#
# Environment (all optional):
#   NRP_BENCH_RUNS        runs of each measurement per transport (3)
#   NRP_BENCH_RUNTIME     seconds per fio run (6)
#   NRP_BENCH_CKPT_MIB    checkpoint size in MiB (1024)
#   NRP_BENCH_PROFILES    fio profiles, a subset of the default list
#   NRP_BENCH_TRANSPORTS  columns, a subset of "rdma rdma_p2p tcp"
#   NRP_BENCH_BACKENDS    namespaces the fio profiles run on: null, ram
#                         or "null ram" (null)
#   NRP_BENCH_CKPT_RUNS   runs of each checkpoint mode (1)
#   NRP_BENCH_CKPT_MODES  P2P checkpoint modes, a subset of
#                         "p2p bounce-ours bounce-intree"
#                         ("p2p bounce-intree"; "" skips)
#   NRP_BENCH_OUT         raw result directory (/nrp-job/raw)
set -u
. tools/testing/selftests/nvme-rdma-p2p/lib.sh

runs=${NRP_BENCH_RUNS:-3}
runtime=${NRP_BENCH_RUNTIME:-6}
ckpt_mib=${NRP_BENCH_CKPT_MIB:-1024}
profiles=${NRP_BENCH_PROFILES:-rr4k_qd1 rr4k_qd32x2 rw4k_qd32 sw128k_qd16 sw1m_qd16 xfs_ckpt}
transports=${NRP_BENCH_TRANSPORTS:-rdma rdma_p2p tcp}
backends=${NRP_BENCH_BACKENDS:-null}
ckpt_modes=${NRP_BENCH_CKPT_MODES-p2p bounce-intree}
out=${NRP_BENCH_OUT:-/nrp-job/raw}
tcp_port=4421
ckpt_tool=tools/p2p-checkpoint/p2p-checkpoint
mnt=/mnt/nrp-bench

case $runs in '' | *[!0-9]* | 0) nrp_fail "NRP_BENCH_RUNS must be a positive number, not '$runs'" ;; esac
case $runtime in '' | *[!0-9]* | 0) nrp_fail "NRP_BENCH_RUNTIME must be a positive number of seconds, not '$runtime'" ;; esac
case $ckpt_mib in '' | *[!0-9]* | 0) nrp_fail "NRP_BENCH_CKPT_MIB must be a positive number, not '$ckpt_mib'" ;; esac

mkdir -p "$out/fio" "$out/ckpt" || nrp_fail "cannot create $out"
runs_tsv=$out/runs.tsv
hz=$(getconf CLK_TCK)
ncpu=$(nproc)

say() { echo "bench: $*"; }

# One record: profile backend transport run wall_s ios bytes and the
# CPU deltas in seconds. Appended to runs.tsv.
record() { # profile backend transport run t0 t1 "ticks0" "ticks1" ios bytes extra
	local p=$1 b=$2 tr=$3 r=$4 t0=$5 t1=$6 c0=$7 c1=$8 ios=$9 bytes=${10} extra=${11:-}
	awk -v p="$p" -v b="$b" -v tr="$tr" -v r="$r" -v t0="$t0" -v t1="$t1" \
		-v c0="$c0" -v c1="$c1" -v ios="$ios" -v bytes="$bytes" -v hz="$hz" \
		-v extra="$extra" 'BEGIN {
		split(c0, a, " "); split(c1, z, " ")
		printf "%s\t%s\t%s\t%s\t%.6f\t%s\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%s\n",
			p, b, tr, r, t1 - t0, ios, bytes, (z[1] - a[1]) / hz,
			(z[2] - a[2]) / hz, (z[3] - a[3]) / hz, (z[4] - a[4]) / hz, extra
	}' >>"$runs_tsv"
}

# --- fixtures ----------------------------------------------------------

# Before anything pulls nvme_core in: without multipath every controller
# has its own disks, so three transports reach the same namespace as
# three block devices.
modprobe nvme_core multipath=N || nrp_fail "cannot load nvme_core with multipath=N"
[ "$(cat /sys/module/nvme_core/parameters/multipath 2>/dev/null)" = N ] ||
	nrp_fail "nvme_core was loaded before the bench with multipath=Y"

say "setup: rxe on a veth pair, nvmet-rdma and nvmet-tcp, null_blk and brd namespaces"
nrp_rdma_setup rxe
modprobe null_blk nr_devices=1 gb=16 irqmode=0 queue_mode=2 ||
	nrp_fail "cannot load null_blk"
nrp_cleanup_push "modprobe -r null_blk"
[ -b /dev/nullb0 ] || nrp_fail "null_blk made no /dev/nullb0"
# brd: the checkpoint file on XFS, and the raw P2P checkpoint
ram_mib=$((ckpt_mib + ckpt_mib / 8 + 128))
[ "$ram_mib" -ge 512 ] || ram_mib=512	# mkfs.xfs wants 300 MB
modprobe brd rd_nr=1 rd_size=$((ram_mib * 1024)) || nrp_fail "cannot create a RAM disk"
nrp_cleanup_push "modprobe -r brd"
nrp_nvmet_setup /dev/nullb0
cfs=/sys/kernel/config/nvmet
ns2=$cfs/subsystems/$NRP_SUBNQN/namespaces/2
mkdir "$ns2" || nrp_fail "cannot create namespace 2"
nrp_cleanup_push "rmdir $ns2"
echo /dev/ram0 >"$ns2/device_path"
echo 1 >"$ns2/enable" || nrp_fail "cannot enable namespace 2 on /dev/ram0"
nrp_cleanup_push "echo 0 >$ns2/enable"
if [[ " $transports " == *" tcp "* ]]; then
	modprobe nvmet-tcp || nrp_fail "cannot load nvmet-tcp"
	nrp_cleanup_push "modprobe -r nvmet-tcp"
	mkdir "$cfs/ports/2"
	nrp_cleanup_push "rmdir $cfs/ports/2"
	echo tcp >"$cfs/ports/2/addr_trtype"
	echo ipv4 >"$cfs/ports/2/addr_adrfam"
	echo "$NRP_TGT_IP4" >"$cfs/ports/2/addr_traddr"
	echo "$tcp_port" >"$cfs/ports/2/addr_trsvcid"
	ln -s "$cfs/subsystems/$NRP_SUBNQN" "$cfs/ports/2/subsystems/" ||
		nrp_fail "cannot enable the nvmet-tcp port $NRP_TGT_IP4:$tcp_port"
	nrp_cleanup_push "rm $cfs/ports/2/subsystems/$NRP_SUBNQN"
fi

modprobe nvme-rdma || nrp_fail "cannot load the in-tree nvme-rdma"
nrp_cleanup_push "modprobe -r nvme-rdma"
# allow_soft_p2p only lets rxe advertise P2PDMA; no effect on host memory I/O
nrp_load_ours "$NRP_TRANSPORT" allow_soft_p2p=1
modprobe nvme-tcp || nrp_fail "cannot load nvme-tcp"
nrp_cleanup_push "modprobe -r nvme-tcp"

ctrls() {
	local c
	for c in /sys/class/nvme/nvme*; do
		[ -e "$c" ] && echo "${c##*/}"
	done | sort
}
# The namespace disk with nsid $2 of controller $1.
ns_disk() {
	local c=$1 nsid=$2 i d
	for i in $(seq 50); do
		for d in /sys/class/nvme/"$c"/"$c"n*; do
			[ -e "$d/nsid" ] || continue
			[ "$(cat "$d/nsid")" = "$nsid" ] || continue
			[ -b "/dev/$(basename "$d")" ] && { echo "/dev/$(basename "$d")"; return 0; }
		done
		sleep 0.2
	done
	return 1
}

declare -A CTRL NULLDEV RAMDEV
nrp_cleanup_push nrp_disconnect_all
for tr in $transports; do
	port=$NRP_PORT
	[ "$tr" = tcp ] && port=$tcp_port
	before=$(ctrls)
	o=$(nvme connect -t "$tr" -a "$NRP_TGT_IP4" -s "$port" -n "$NRP_SUBNQN" 2>&1) ||
		nrp_fail "nvme connect -t $tr failed: $o"
	c=$(comm -13 <(echo "$before") <(ctrls) | head -n1)
	[ -n "$c" ] || nrp_fail "nvme connect -t $tr made no new controller: $o"
	case $tr in
	rdma_p2p) nrp_ctrl_is_ours "$c" || nrp_fail "$c (-t rdma_p2p) is not driven by nvme-rdma-p2p" ;;
	*) nrp_ctrl_is_ours "$c" && nrp_fail "$c (-t $tr) is driven by nvme-rdma-p2p, not the in-tree driver" ;;
	esac
	CTRL[$tr]=$c
	NULLDEV[$tr]=$(ns_disk "$c" 1) || nrp_fail "$c: no disk for namespace 1 (null_blk)"
	RAMDEV[$tr]=$(ns_disk "$c" 2) || nrp_fail "$c: no disk for namespace 2 (brd)"
	say "connected $tr: $c, null_blk ${NULLDEV[$tr]}, brd ${RAMDEV[$tr]}, $(find /sys/block/"$(basename "${NULLDEV[$tr]}")"/mq/ -mindepth 1 -maxdepth 1 | wc -l) I/O queues"
done

# Kernel and setup facts for the report.
{
	echo "kernel $(uname -r)"
	echo "date $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "cpus $ncpu"
	echo "clk_tck $hz"
	echo "mem_mib $(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo)"
	echo "fio $(fio --version)"
	echo "runs $runs"
	echo "runtime_s $runtime"
	echo "ckpt_mib $ckpt_mib"
	for tr in $transports; do
		echo "ctrl_$tr ${CTRL[$tr]} ${NULLDEV[$tr]} ${RAMDEV[$tr]}"
	done
} >"$out/facts.txt"

# --- fio profiles ------------------------------------------------------

# name: fio arguments
fio_args() {
	case $1 in
	rr4k_qd1)	echo "--rw=randread --bs=4k --iodepth=1 --numjobs=1" ;;
	rr4k_qd32x2)	echo "--rw=randread --bs=4k --iodepth=32 --numjobs=2" ;;
	rw4k_qd32)	echo "--rw=randwrite --bs=4k --iodepth=32 --numjobs=1" ;;
	sw128k_qd16)	echo "--rw=write --bs=128k --iodepth=16 --numjobs=1" ;;
	sw1m_qd16)	echo "--rw=write --bs=1m --iodepth=16 --numjobs=1" ;;
	*)		return 1 ;;
	esac
}

# The CPU ticks of the whole guest (all CPUs) in a /proc/stat "cpu" line:
# user+nice, system+irq, softirq, idle+iowait. Kernel threads, interrupts
# and softirqs count: rxe moves every byte in softirq or kworker context.
ticks_of() {
	local _c u n s i w irq sirq
	read -r _c u n s i w irq sirq _ <<<"$1"
	echo "$((u + n)) $((s + irq)) $sirq $((i + w))"
}

# The time and the guest's CPU ticks are taken by fio itself right before
# its job starts I/O and right after it ends (after end_fsync), so that
# fio's start-up and exit are not charged to the transport: fio options
# for the JSON file $1. (fio cuts an exec command at ';', hence a script;
# it leaves the commands' own output in <job>.prerun.txt in its cwd, /tmp.)
stamp_script=/tmp/nrp-bench-stamp
cat >$stamp_script <<'STAMP'
#!/bin/bash
# $1 file, $2 pre|post: the time and the /proc/stat "cpu" line
read -r cpu </proc/stat
if [ "$2" = pre ]; then
	printf '%s\n%s\n' "$EPOCHREALTIME" "$cpu" >>"$1"
else
	printf '%s\n%s\n' "$cpu" "$EPOCHREALTIME" >>"$1"
fi
STAMP
chmod +x $stamp_script
fio_stamps() {
	echo "--exec_prerun=$stamp_script $1.stat0 pre"
	echo "--exec_postrun=$stamp_script $1.stat1 post"
}

# Record one fio run from its stamps: the first job's start, the last
# job's end (numjobs > 1 stamps once per job).
fio_record() { # profile backend transport run json
	local j=$5 t0 t1 c0 c1
	if [ ! -s "$j.stat0" ] || [ ! -s "$j.stat1" ]; then
		nrp_fail "fio $1 ($3) ran no exec_prerun/exec_postrun: no CPU figures"
	fi
	t0=$(head -n1 "$j.stat0")
	c0=$(ticks_of "$(sed -n 2p "$j.stat0")")
	t1=$(tail -n1 "$j.stat1")
	c1=$(ticks_of "$(tail -n2 "$j.stat1" | head -n1)")
	record "$1" "$2" "$3" "$4" "$t0" "$t1" "$c0" "$c1" - - "fio/$(basename "$j")"
}

fio_run() { # profile backend transport run
	local p=$1 b=$2 tr=$3 r=$4 dev args j stamps=()
	dev=${NULLDEV[$tr]}
	[ "$b" = ram ] && dev=${RAMDEV[$tr]}
	args=$(fio_args "$p")
	j=$out/fio/$p.$b.$tr.$r.json
	rm -f "$j.stat0" "$j.stat1"
	mapfile -t stamps < <(fio_stamps "$j")
	# shellcheck disable=SC2086
	(cd /tmp && fio --name="$p" --filename="$dev" --direct=1 --ioengine=libaio \
		--time_based --runtime="$runtime" --group_reporting \
		--norandommap --randrepeat=0 --lat_percentiles=1 \
		--percentile_list=50:99 --output-format=json --output="$j" \
		"${stamps[@]}" $args >/dev/null 2>"$j.err") ||
		nrp_fail "fio $p on $dev ($tr) failed: $(tail -n 5 "$j.err")"
	# ios and bytes come from the JSON, on the host
	fio_record "$p" "$b" "$tr" "$r" "$j"
	say "$(printf '%-12s %-4s %-8s run %d/%d: %s' "$p" "$b" "$tr" "$r" "$runs" \
		"$(awk -F'"' '/"iops" :/ { split($0, a, ": "); s += a[2] }
			/"bw_bytes" :/ { split($0, a, ": "); b += a[2] }
			END { printf "%.0f IOPS, %.1f MiB/s", s, b / 1048576 }' "$j")")"
}

# The 1 GiB checkpoint file: mkfs.xfs, mount, write it with O_DIRECT in
# 1 MiB I/Os (8 in flight) and fsync; wall time is all of the write and
# the fsync, not the mkfs nor fio's start-up.
xfs_run() { # transport run
	local tr=$1 r=$2 dev=${RAMDEV[$1]} j=$out/fio/xfs_ckpt.ram.$1.$2.json stamps=()
	blockdev --flushbufs "$dev"
	mkfs.xfs -q -f "$dev" >"$j.err" 2>&1 || nrp_fail "mkfs.xfs $dev ($tr): $(cat "$j.err")"
	mkdir -p $mnt
	mount -t xfs "$dev" $mnt || nrp_fail "cannot mount $dev ($tr)"
	sync
	rm -f "$j.stat0" "$j.stat1"
	mapfile -t stamps < <(fio_stamps "$j")
	(cd /tmp && fio --name=xfs_ckpt --filename=$mnt/checkpoint --direct=1 --ioengine=libaio \
		--rw=write --bs=1m --iodepth=8 --size="${ckpt_mib}m" --end_fsync=1 \
		--output-format=json --output="$j" "${stamps[@]}" >/dev/null 2>"$j.err") ||
		{ umount $mnt; nrp_fail "checkpoint file on $dev ($tr) failed: $(tail -n 5 "$j.err")"; }
	umount $mnt || nrp_fail "cannot unmount $mnt ($tr)"
	blockdev --flushbufs "$dev"
	fio_record xfs_ckpt ram "$tr" "$r" "$j"
	say "$(printf '%-12s %-4s %-8s run %d/%d: %s MiB in %.1f s' xfs_ckpt ram "$tr" "$r" "$runs" \
		"$ckpt_mib" "$(tail -n1 "$runs_tsv" | cut -f5)")"
}

nfio=0
for p in $profiles; do
	if [ "$p" = xfs_ckpt ]; then
		nfio=$((nfio + 1))
		continue
	fi
	fio_args "$p" >/dev/null || nrp_fail "unknown profile '$p'"
	for b in $backends; do nfio=$((nfio + 1)); done
done
ntr=$(wc -w <<<"$transports")
say "plan: $nfio measurements x $ntr transports x $runs runs, ${runtime}s per fio run; checkpoint modes: ${ckpt_modes:-none}"

: >"$runs_tsv"
for p in $profiles; do
	for r in $(seq "$runs"); do
		for tr in $transports; do
			if [ "$p" = xfs_ckpt ]; then
				xfs_run "$tr" "$r"
			else
				for b in $backends; do fio_run "$p" "$b" "$tr" "$r"; done
			fi
		done
	done
done

# --- P2P checkpoint against the bounce path -----------------------------

# Each line of the tool's output, prefixed with the time and the guest's
# CPU ticks when it was printed: the reducer takes the guest's CPU time of
# the write phase (from "checksum region A" to "flush") from them.
stamp() {
	local line u n s i w irq sirq
	while IFS= read -r line; do
		read -r _ u n s i w irq sirq _ </proc/stat
		echo "@$EPOCHREALTIME $((u + n)) $((s + irq)) $sirq $((i + w)) $line"
	done
}

ckpt_run() { # mode run
	local mode=$1 r=$2 dev args=() log=$out/ckpt/$1.$2.log rc res
	case $mode in
	p2p)		dev=${RAMDEV[rdma_p2p]}; args=(--stats "$NRP_DEBUGFS/${CTRL[rdma_p2p]}/stats") ;;
	bounce-ours)	dev=${RAMDEV[rdma_p2p]}; args=(--bounce --stats "$NRP_DEBUGFS/${CTRL[rdma_p2p]}/stats") ;;
	bounce-intree)	dev=${RAMDEV[rdma]}; args=(--bounce --stats none) ;;
	*)		nrp_fail "unknown checkpoint mode '$mode'" ;;
	esac
	blockdev --flushbufs "$dev"
	stdbuf -oL -eL "$ckpt_tool" --gpu "$gpu" --dev "$dev" --size "${ckpt_mib}M" \
		--chunk 1M --qd 8 "${args[@]}" 2>&1 | stamp >"$log"
	rc=${PIPESTATUS[0]}
	[ "$rc" = 0 ] || nrp_fail "p2p-checkpoint $mode on $dev exited $rc: $(tail -n 5 "$log" | cut -d' ' -f6-)"
	res=$(cut -d' ' -f6- "$log" | awk '
		/^write +[0-9.]+ MiB in/ { w = $5 }
		/^write +path/ { for (i = 2; i < NF; i += 2) kv[$i] = $(i + 1) }
		/^flush/ { f = $2 }
		END { printf "write+flush %.1f s, process CPU %s s, CPU-copied %s bytes",
			w + f, kv["cpu_s"], kv["cpu_copied_bytes"] }')
	grep -q ' checkpoint verified' "$log" || nrp_fail "p2p-checkpoint $mode: not verified"
	say "$(printf '%-12s %-4s %-14s run %d/%d: %s, verified' checkpoint ram "$mode" "$r" "$ckpt_runs" "$res")"
}

ckpt_runs=${NRP_BENCH_CKPT_RUNS:-1}
if [ -n "$ckpt_modes" ]; then
	for m in $ckpt_modes; do
		case $m in
		p2p | bounce-ours) need=rdma_p2p ;;
		bounce-intree) need=rdma ;;
		*) nrp_fail "unknown checkpoint mode '$m'" ;;
		esac
		[ -n "${RAMDEV[$need]:-}" ] || nrp_fail "checkpoint mode $m needs transport $need in NRP_BENCH_TRANSPORTS"
	done
	ivshmem=
	for d in /sys/bus/pci/devices/*; do
		if [ "$(cat "$d/vendor")" = 0x1af4 ] && [ "$(cat "$d/device")" = 0x1110 ]; then
			ivshmem=$d
			break
		fi
	done
	why=
	if [ -z "$ivshmem" ]; then
		why="no ivshmem device (the simulated GPU BAR)"
	elif ! grep -qw pci_p2pdma_add_resource /proc/kallsyms; then
		why="kernel $(uname -r) has no PCI P2PDMA"
	elif ! "$ckpt_tool" --help | grep -q -- --bounce && [[ "$ckpt_modes" == *bounce* ]]; then
		why="$ckpt_tool has no --bounce mode"
	fi
	if [ -n "$why" ]; then
		say "checkpoint: skipped: $why"
		echo "$why" >"$out/ckpt/skipped.txt"
	else
		modprobe nrp_gpu || nrp_fail "cannot load nrp_gpu"
		nrp_cleanup_push "modprobe -r nrp_gpu"
		gpu=
		for m in "$ivshmem"/misc/nrp-gpu*; do
			[ -e "$m" ] && gpu=/dev/$(basename "$m")
		done
		[ -c "$gpu" ] || nrp_fail "nrp_gpu made no /dev/nrp-gpuN for $ivshmem"
		"$ckpt_tool" --gpu "$gpu" --info >"$out/ckpt/gpu-info.txt" ||
			nrp_fail "p2p-checkpoint --info failed"
		win=$(awk '$1 == "window_size" { print $2 }' "$out/ckpt/gpu-info.txt")
		[ "${win:-0}" -ge $((2 * ckpt_mib << 20)) ] ||
			nrp_fail "the GPU window ($((${win:-0} >> 20)) MiB) cannot hold two ${ckpt_mib} MiB regions: boot with --gpu-mem $((2 * ckpt_mib))M or more"
		[ "$(nrp_stat "${CTRL[rdma_p2p]}" p2p_capable)" = 1 ] ||
			nrp_fail "${CTRL[rdma_p2p]} is not P2P capable (allow_soft_p2p=1 not in effect?)"
		for r in $(seq "$ckpt_runs"); do
			for m in $ckpt_modes; do ckpt_run "$m" "$r"; done
		done
	fi
fi

# Our counters over the whole bench, for the record.
if [ -n "${CTRL[rdma_p2p]:-}" ]; then
	cp "$NRP_DEBUGFS/${CTRL[rdma_p2p]}/stats" "$out/ours-stats.txt" 2>/dev/null
fi
say "done"
nrp_pass
