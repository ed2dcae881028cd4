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
#   NRP_BENCH_RUNTIME     seconds per fio run (6); with NRP_BENCH_IOS
#                         the most a run may take
#   NRP_BENCH_IOS         I/Os per fio run, in 4 KiB I/Os' worth of bytes
#                         (icount: 4000; wall: unset, time-based runs)
#   NRP_BENCH_CKPT_MIB    checkpoint size in MiB (1024)
#   NRP_BENCH_PROFILES    fio profiles, a subset of the default list
#   NRP_BENCH_TRANSPORTS  columns, a subset of "rdma rdma_p2p tcp"
#   NRP_BENCH_BACKENDS    namespaces the fio profiles run on: null, ram
#                         or "null ram" (null)
#   NRP_BENCH_CKPT_RUNS   runs of each checkpoint mode (1)
#   NRP_BENCH_CKPT_MODES  P2P checkpoint modes, a subset of
#                         "p2p bounce-ours bounce-intree"
#                         ("p2p bounce-intree"; "" skips)
#   NRP_BENCH_ATTR_PROFILES  fio profiles profiled for the attribution,
#                         once per RDMA transport ("rr4k_qd1"; "" skips;
#                         needs CONFIG_FUNCTION_PROFILER)
#   NRP_BENCH_ATTR_IOS    I/Os of each profiled run (2000)
#   NRP_BENCH_ELEVATOR    block I/O scheduler of every namespace disk
#                         (none; "" keeps the kernel's own choice)
#   NRP_BENCH_OUT         raw result directory (/nrp-job/raw)
set -u
. tools/testing/selftests/nvme-rdma-p2p/lib.sh

runs=${NRP_BENCH_RUNS:-3}
runtime=${NRP_BENCH_RUNTIME:-6}
ios=${NRP_BENCH_IOS-}
[ "${NRP_BENCH_CLOCK:-wall}" != icount ] || ios=${NRP_BENCH_IOS-4000}
ckpt_mib=${NRP_BENCH_CKPT_MIB:-1024}
profiles=${NRP_BENCH_PROFILES:-rr4k_qd1 rr4k_qd16 rr4k_qd32x2 rw4k_qd32 sw128k_qd16 sw1m_qd16 xfs_ckpt}
transports=${NRP_BENCH_TRANSPORTS:-rdma rdma_p2p tcp}
backends=${NRP_BENCH_BACKENDS:-null}
ckpt_modes=${NRP_BENCH_CKPT_MODES-p2p bounce-intree}
ckpt_runs=${NRP_BENCH_CKPT_RUNS:-1}
attr_profiles=${NRP_BENCH_ATTR_PROFILES-rr4k_qd1}
elevator=${NRP_BENCH_ELEVATOR-none}
out=${NRP_BENCH_OUT:-/nrp-job/raw}
tcp_port=4421
ckpt_tool=tools/p2p-checkpoint/p2p-checkpoint
mnt=/mnt/nrp-bench

case $runs in '' | *[!0-9]* | 0) nrp_fail "NRP_BENCH_RUNS must be a positive number, not '$runs'" ;; esac
case $runtime in '' | *[!0-9]* | 0) nrp_fail "NRP_BENCH_RUNTIME must be a positive number of seconds, not '$runtime'" ;; esac
case $ios in *[!0-9]* | 0) nrp_fail "NRP_BENCH_IOS must be a positive number (or empty: time-based runs), not '$ios'" ;; esac
case $ckpt_mib in '' | *[!0-9]* | 0) nrp_fail "NRP_BENCH_CKPT_MIB must be a positive number, not '$ckpt_mib'" ;; esac

mkdir -p "$out/fio" "$out/ckpt" || nrp_fail "cannot create $out"
runs_tsv=$out/runs.tsv
hz=$(getconf CLK_TCK)
ncpu=$(nproc)

say() { echo "bench: $*"; }

# One record: profile backend transport run wall_s ios bytes, the CPU
# deltas in seconds, the fio JSON and the busy guest ns. Appended to
# runs.tsv (or $record_tsv).
record() { # profile backend transport run t0 t1 "ticks0" "ticks1" ios bytes extra busy_ns
	local p=$1 b=$2 tr=$3 r=$4 t0=$5 t1=$6 c0=$7 c1=$8 ios=$9 bytes=${10} extra=${11:-}
	local busy=${12:--}
	awk -v p="$p" -v b="$b" -v tr="$tr" -v r="$r" -v t0="$t0" -v t1="$t1" \
		-v c0="$c0" -v c1="$c1" -v ios="$ios" -v bytes="$bytes" -v hz="$hz" \
		-v extra="$extra" -v busy="$busy" 'BEGIN {
		split(c0, a, " "); split(c1, z, " ")
		printf "%s\t%s\t%s\t%s\t%.6f\t%s\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%s\t%s\n",
			p, b, tr, r, t1 - t0, ios, bytes, (z[1] - a[1]) / hz,
			(z[2] - a[2]) / hz, (z[3] - a[3]) / hz, (z[4] - a[4]) / hz, extra, busy
	}' >>"${record_tsv:-$runs_tsv}"
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
# brd allocates a page on its first write to it. Write the whole disk
# once now, so that no checkpoint mode pays for the allocation: the
# first one measured had paid about 1 s of its 15 s for it.
dd if=/dev/zero of=/dev/ram0 bs=1M count="$ram_mib" oflag=direct status=none ||
	nrp_fail "cannot fill the RAM disk"
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

# The kernel gives a disk of one hardware queue mq-deadline, and a guest
# of one vCPU has one I/O queue per controller; with more CPUs (any real
# host) the default is none. Under mq-deadline every libaio write of one
# iocb (no plug) is inserted and its queue run from kblockd's highpri
# kworker, so whether that kworker preempts fio at each wakeup decides
# the figures: on 7.3 (EEVDF) rw4k_qd32 ran in two modes, 13.2k IOPS
# or 7.8-8.2k (one kblockd run and ~10 context switches per write), a
# scheduler state that flips during the boot, for either transport,
# and made one transport look 1.6x the other. The transports are what
# is compared, so their disks take the multi-queue default, all alike.
set_elevator() { # disk
	local f=/sys/block/${1#/dev/}/queue/scheduler
	[ -n "$elevator" ] || return 0
	echo "$elevator" >"$f" 2>/dev/null ||
		nrp_fail "cannot set I/O scheduler $elevator on $1 (it has: $(cat "$f"))"
	grep -q "\[$elevator\]" "$f" ||
		nrp_fail "$1 kept I/O scheduler $(cat "$f") after writing $elevator"
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
	set_elevator "${NULLDEV[$tr]}"
	set_elevator "${RAMDEV[$tr]}"
	say "connected $tr: $c, null_blk ${NULLDEV[$tr]}, brd ${RAMDEV[$tr]}, $(find /sys/block/"$(basename "${NULLDEV[$tr]}")"/mq/ -mindepth 1 -maxdepth 1 | wc -l) I/O queues"
done

# Kernel and setup facts for the report.
{
	echo "kernel $(uname -r)"
	echo "date $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "cpus $ncpu"
	echo "clock ${NRP_BENCH_CLOCK:-wall}"
	echo "clk_tck $hz"
	echo "mem_mib $(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo)"
	echo "fio $(fio --version)"
	echo "runs $runs"
	echo "runtime_s $runtime"
	echo "ios ${ios:-time-based}"
	echo "ckpt_mib $ckpt_mib"
	# What the bench sets out to measure: the reducer tells a profile
	# or checkpoint mode the guest never got to from one never asked for.
	echo "profiles $profiles"
	echo "backends $backends"
	echo "attr_profiles $attr_profiles"
	echo "ckpt_modes $ckpt_modes"
	echo "ckpt_runs $ckpt_runs"
	echo "elevator ${elevator:-default}"
	for tr in $transports; do
		echo "ctrl_$tr ${CTRL[$tr]} ${NULLDEV[$tr]} ${RAMDEV[$tr]}"
	done
} >"$out/facts.txt"

# --- fio profiles ------------------------------------------------------

# name: fio arguments
fio_args() {
	case $1 in
	rr4k_qd1)	echo "--rw=randread --bs=4k --iodepth=1 --numjobs=1" ;;
	rr4k_qd16)	echo "--rw=randread --bs=4k --iodepth=16 --numjobs=1" ;;
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

# The time, the guest's CPU ticks and its idle time are taken by fio
# itself right before its job starts I/O and right after it ends (after
# end_fsync), so that fio's start-up and exit are not charged to the
# transport: fio options for the JSON file $1. (fio cuts an exec command
# at ';', hence a script; it leaves the commands' own output in
# <job>.prerun.txt in its cwd, /tmp.)
#
# One line a stamp: "pre|post TIME IDLE_NS cpu ...". IDLE_NS is the idle
# and iowait time of all CPUs in ns from /proc/timer_list (tick-sched's
# own accounting, exact for the CPU that reads it, which is busy then;
# /proc/stat has only 10 ms steps). The idle time is read outside the
# window (before the time at "pre", after it at "post"), so that reading
# it is not charged either.
stamp_script=/tmp/nrp-bench-stamp
cat >$stamp_script <<'STAMP'
#!/bin/bash
# $1 file, $2 pre|post, $3 "prof": the function profiler runs in between
# (switched on before the window and off after it: patching every
# function's entry is not charged)
prof=/sys/kernel/tracing/function_profile_enabled
idle() {
	awk '$1 == ".idle_sleeptime" || $1 == ".iowait_sleeptime" { s += $3 }
		END { printf "%.0f", s }' /proc/timer_list
}
if [ "$2" = pre ]; then
	[ "${3:-}" != prof ] || echo 1 >$prof
	i=$(idle)
	read -r cpu </proc/stat
	t=$EPOCHREALTIME
else
	t=$EPOCHREALTIME
	read -r cpu </proc/stat
	i=$(idle)
	[ "${3:-}" != prof ] || echo 0 >$prof
fi
echo "$2 $t $i $cpu" >>"$1"
STAMP
chmod +x $stamp_script
fio_stamps() { # json [prof]
	echo "--exec_prerun=$stamp_script $1.stamps pre ${2:-}"
	echo "--exec_postrun=$stamp_script $1.stamps post ${2:-}"
}

# Record one fio run from its stamps: the first job's start, the last
# job's end (numjobs > 1 stamps once per job). The last column is the
# guest's busy time in ns over that window, the window less the idle time
# (with icount and one vCPU: the instructions it executed), "-" when the
# idle time could not be read.
fio_record() { # profile backend transport run json
	local j=$5 pre post t0 t1 c0 c1 busy
	pre=$(grep -m1 '^pre ' "$j.stamps" 2>/dev/null)
	post=$(grep '^post ' "$j.stamps" 2>/dev/null | tail -n1)
	if [ -z "$pre" ] || [ -z "$post" ]; then
		nrp_fail "fio $1 ($3) ran no exec_prerun/exec_postrun: no CPU figures"
	fi
	read -r _ t0 i0 c0 <<<"$pre"
	read -r _ t1 i1 c1 <<<"$post"
	busy=$(awk -v t0="$t0" -v t1="$t1" -v i0="$i0" -v i1="$i1" 'BEGIN {
		if (i0 == "" || i1 == "" || i1 < i0) print "-"
		else printf "%.0f", (t1 - t0) * 1e9 - (i1 - i0) }')
	record "$1" "$2" "$3" "$4" "$t0" "$t1" "$(ticks_of "$c0")" "$(ticks_of "$c1")" - - \
		"fio/$(basename "$j")" "$busy"
}

# How long a fio run is. With NRP_BENCH_IOS (icount mode's default) a run
# is that many 4 KiB I/Os' worth of bytes (at least 8 I/Os per slot of the
# queue depth), stopped early at NRP_BENCH_RUNTIME guest seconds: an
# instruction count needs no long run. Else it runs NRP_BENCH_RUNTIME s.
fio_length() { # profile
	local bs qd n
	if [ -z "$ios" ]; then
		echo "--time_based --runtime=$runtime"
		return
	fi
	read -r bs qd <<<"$(fio_args "$1" |
		sed -n 's/.*--bs=\([0-9]*[km]\).*--iodepth=\([0-9]*\).*/\1 \2/p')"
	case $bs in
	*m) bs=$((${bs%m} * 1024)) ;;
	*) bs=${bs%k} ;;
	esac
	n=$((ios * 4 / ${bs:-4}))
	[ "$n" -ge $((8 * ${qd:-1})) ] || n=$((8 * ${qd:-1}))
	echo "--number_ios=$n --runtime=$runtime"
}

fio_run() { # profile backend transport run
	local p=$1 b=$2 tr=$3 r=$4 dev args j stamps=() length=()
	dev=${NULLDEV[$tr]}
	[ "$b" = ram ] && dev=${RAMDEV[$tr]}
	args=$(fio_args "$p")
	j=$out/fio/$p.$b.$tr.$r.json
	rm -f "$j.stamps"
	mapfile -t stamps < <(fio_stamps "$j")
	read -r -a length <<<"$(fio_length "$p")"
	# shellcheck disable=SC2086
	(cd /tmp && fio --name="$p" --filename="$dev" --direct=1 --ioengine=libaio \
		"${length[@]}" --group_reporting \
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
	rm -f "$j.stamps"
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
say "plan: $nfio measurements x $ntr transports x $runs runs, ${ios:+$ios 4 KiB I/Os or }${runtime}s per fio run; checkpoint modes: ${ckpt_modes:-none}"

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

# --- attribution: the kernel's function profiler ------------------------

# One more fio run of each profile in NRP_BENCH_ATTR_PROFILES for the two
# RDMA transports, a fixed number of I/Os with the function profiler on
# every kernel function (graph-time and sleep-time off: each function's
# own time, children and sleep excluded). In icount mode its times are
# instructions. The profiler's own cost per traced call is found by
# reduce.py from the same run's total against the unprofiled runs above.
# Raw: attr.tsv (runs.tsv's format), attr/<profile>.<transport>.stat (the
# per-CPU trace_stat/function* files) and attr/modsyms.txt (which
# functions belong to which transport module).
attr_ios=${NRP_BENCH_ATTR_IOS:-2000}
case $attr_ios in '' | *[!0-9]* | 0) nrp_fail "NRP_BENCH_ATTR_IOS must be a positive number, not '$attr_ios'" ;; esac
tracing=/sys/kernel/tracing
attr_run() { # profile transport
	local p=$1 tr=$2 j=$out/fio/$1.profiled.$2.json args stamps=()
	args=$(fio_args "$p") || nrp_fail "unknown profile '$p' in NRP_BENCH_ATTR_PROFILES"
	rm -f "$j.stamps"
	mapfile -t stamps < <(fio_stamps "$j" prof)
	# shellcheck disable=SC2086
	(cd /tmp && fio --name="$p" --filename="${NULLDEV[$tr]}" --direct=1 --ioengine=libaio \
		--number_ios="$attr_ios" --runtime=3600 --group_reporting \
		--norandommap --randrepeat=0 --output-format=json --output="$j" \
		"${stamps[@]}" $args >/dev/null 2>"$j.err") ||
		{ echo 0 >$tracing/function_profile_enabled
		  nrp_fail "profiled fio $p ($tr) failed: $(tail -n 5 "$j.err")"; }
	cat $tracing/trace_stat/function[0-9]* >"$out/attr/$p.$tr.stat"
	record_tsv=$out/attr.tsv fio_record "$p" null "$tr" 1 "$j"
	say "$(printf '%-12s %-4s %-8s profiled: %s functions seen' "$p" null "$tr" \
		"$(grep -c ' us ' "$out/attr/$p.$tr.stat")")"
}
attr_trs=
for tr in rdma rdma_p2p; do
	[[ " $transports " == *" $tr "* ]] && attr_trs+=" $tr"
done
if [ -n "$attr_profiles" ] && [ -n "$attr_trs" ]; then
	mkdir -p "$out/attr"
	: >"$out/attr.tsv"
	[ -e $tracing/trace_stat ] || mount -t tracefs nodev $tracing 2>/dev/null
	if [ ! -e $tracing/function_profile_enabled ]; then
		why="kernel $(uname -r) has no function profiler (CONFIG_FUNCTION_PROFILER)"
		say "attribution: skipped: $why"
		echo "$why" >"$out/attr/skipped.txt"
	else
		echo 0 >$tracing/function_profile_enabled
		echo 0 >$tracing/options/graph-time 2>/dev/null
		echo 0 >$tracing/options/sleep-time 2>/dev/null
		: >$tracing/set_ftrace_filter
		: >$tracing/set_ftrace_notrace
		grep -E '\[(nvme_rdma|nvme_rdma_p2p|nvme_tcp)\]$' /proc/kallsyms |
			awk '$2 ~ /^[tT]$/ { print $3, $4 }' >"$out/attr/modsyms.txt"
		for p in $attr_profiles; do
			for tr in $attr_trs; do attr_run "$p" "$tr"; done
		done
	fi
fi

# --- P2P checkpoint against the bounce path -----------------------------

# Each line of the tool's output, prefixed with the time, the guest's CPU
# ticks and its idle ns (as in the fio stamps) when it was printed: the
# reducer takes the guest's CPU time and instructions of the write phase
# (from "checksum region A" to "flush") from them.
stamp() {
	local line u n s i w irq sirq idle
	while IFS= read -r line; do
		read -r _ u n s i w irq sirq _ </proc/stat
		idle=$(awk '$1 == ".idle_sleeptime" || $1 == ".iowait_sleeptime" { s += $3 }
			END { printf "%.0f", s }' /proc/timer_list)
		echo "@$EPOCHREALTIME $((u + n)) $((s + irq)) $sirq $((i + w)) $idle $line"
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
	# The stamper runs as a real-time task: it then reads the counters
	# as soon as the tool has written a line, not once the scheduler
	# gets round to it. A normal one is starved by the I/O of the next
	# phase (rxe and the target; softirq on 6.1, workqueues on 6.12):
	# its "flush" stamp came up to 1.5 s into the read-back and billed
	# that to the write, 1.35 s more for the P2P path than for the
	# bounce path in one 6.1 run.
	stdbuf -oL -eL "$ckpt_tool" --gpu "$gpu" --dev "$dev" --size "${ckpt_mib}M" \
		--chunk 1M --qd 8 "${args[@]}" 2>&1 |
		{ chrt -f -p 50 "$BASHPID" >/dev/null || say "warning: chrt failed, checkpoint stamps may lag" >&2; stamp; } >"$log"
	rc=${PIPESTATUS[0]}
	[ "$rc" = 0 ] || nrp_fail "p2p-checkpoint $mode on $dev exited $rc: $(tail -n 5 "$log" | cut -d' ' -f7-)"
	res=$(cut -d' ' -f7- "$log" | awk '
		/^write +[0-9.]+ MiB in/ { w = $5 }
		/^write +path/ { for (i = 2; i < NF; i += 2) kv[$i] = $(i + 1) }
		/^flush/ { f = $2 }
		END { printf "write+flush %.1f s, process CPU %s s, CPU-copied %s bytes",
			w + f, kv["cpu_s"], kv["cpu_copied_bytes"] }')
	grep -q ' checkpoint verified' "$log" || nrp_fail "p2p-checkpoint $mode: not verified"
	say "$(printf '%-12s %-4s %-14s run %d/%d: %s, verified' checkpoint ram "$mode" "$r" "$ckpt_runs" "$res")"
}

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
