#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench: ours against the in-tree nvme_rdma (and nvme_tcp as a
# reference) in one boot of the P2PDMA guest, same target, same rxe.
#
#   tools/bench/run.sh [RESULT_DIR]
#
# Results go to RESULT_DIR (default $NRP_BENCH_OUT, else
# bench-results/<UTC timestamp>/ in the checkout): results.json, results.md, results.png, and the raw data in
# guest/raw. The Markdown table is printed at the end. See
# tools/bench/README.md for the format.
#
# Environment (all optional; the NRP_BENCH_* ones reach the guest):
#   NRP_BENCH_RUNS=3        runs per transport of each measurement
#   NRP_BENCH_RUNTIME=6     seconds per fio run (icount: the most one may take)
#   NRP_BENCH_IOS           icount: I/Os per fio run in 4 KiB I/Os' worth
#                           of bytes (4000); "" for time-based runs
#   NRP_BENCH_CKPT_MIB=1024 checkpoint size (the XFS file and the P2P one)
#   NRP_BENCH_CKPT_RUNS=1   runs of each P2P/bounce checkpoint mode
#   NRP_BENCH_PROFILES, NRP_BENCH_TRANSPORTS, NRP_BENCH_BACKENDS,
#   NRP_BENCH_CKPT_MODES    subsets, see tools/bench/guest.sh
#   NRP_BENCH_ELEVATOR=none I/O scheduler of the namespace disks ("": the
#                           kernel's, mq-deadline with one vCPU)
#   NRP_BENCH_CLOCK=icount  icount: the guest clock counts executed
#                           instructions (QEMU -icount shift=0,sleep=off,
#                           one vCPU), so guest-time figures are costs that
#                           do not depend on the host's load; wall: the
#                           guest clock is the host's (two vCPUs)
#   NRP_BENCH_SMP           guest CPUs (icount: 1, wall: 2)
#   NRP_BENCH_ATTR_PROFILES, NRP_BENCH_ATTR_IOS  the function-profiler
#                           attribution, see tools/bench/guest.sh
#   NRP_BENCH_KERNEL=p2p    guest kernel (stock has no P2PDMA: no P2P part;
#                           stock-7.3, Debian 13's, has: upstream's own
#                           nvme_rdma of 7.3 against ours, nothing built)
#   NRP_BENCH_MEM           guest memory in MiB (default: enough for the
#                           RAM namespace, 2048 + 1.25 x checkpoint)
#   NRP_BENCH_TIMEOUT=5400  seconds before the guest is killed
set -euo pipefail
. "$(dirname "$0")/../vm/lib.sh"

case ${1:-} in
-h | --help) sed -n '3,/^set -euo/p' "$0" | sed 's/^# \{0,1\}//; /^set -euo/d'; exit 0 ;;
esac

bench=$NRP_TOP/tools/bench
out=${1:-${NRP_BENCH_OUT:-$NRP_TOP/bench-results/$(date -u +%Y%m%d-%H%M%S)}}
kernel=${NRP_BENCH_KERNEL:-p2p}
export NRP_BENCH_CKPT_MIB=${NRP_BENCH_CKPT_MIB:-1024}
export NRP_BENCH_CKPT_RUNS=${NRP_BENCH_CKPT_RUNS:-1}
timeout=${NRP_BENCH_TIMEOUT:-5400}
export NRP_BENCH_CLOCK=${NRP_BENCH_CLOCK:-icount}
clock_opt=()
case $NRP_BENCH_CLOCK in
icount)	smp=${NRP_BENCH_SMP:-1}; clock_opt=(--icount) ;;
wall)	smp=${NRP_BENCH_SMP:-2} ;;
*)	nrp_die "NRP_BENCH_CLOCK must be icount or wall, not '$NRP_BENCH_CLOCK'" ;;
esac
ckpt_mib=$NRP_BENCH_CKPT_MIB
case $ckpt_mib in '' | *[!0-9]* | 0) nrp_die "NRP_BENCH_CKPT_MIB must be a positive number of MiB" ;; esac
mem=${NRP_BENCH_MEM:-$((2048 + ckpt_mib + ckpt_mib / 4))}
# The GPU window holds two checkpoint regions; an ivshmem BAR is a power
# of two.
gpu_mib=256
while [ "$gpu_mib" -lt $((2 * ckpt_mib)) ]; do gpu_mib=$((gpu_mib * 2)); done

# What the host side needs: setup.sh (packages), the guest kernel of
# NRP_BENCH_KERNEL (only that one: a 6.12 bench does not wait for the 6.1
# P2PDMA kernel to build; the stock kernel needs no build at all),
# python3 for the reducer, gnuplot for the chart.
"$NRP_TOP/tools/setup.sh" --no-kernel
case $kernel in
stock | stock-*) ;;
*) "$NRP_TOP/tools/vm/build-kernel.sh" "$kernel" >/dev/null ;;
esac
command -v python3 >/dev/null || nrp_die "python3 is missing (apt-get install python3)"
if ! command -v gnuplot >/dev/null; then
	sudo=
	[ "$(id -u)" = 0 ] || sudo=sudo
	nrp_log "installing gnuplot-nox for the chart"
	{ $sudo apt-get update -qq &&
	  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
		--no-install-recommends gnuplot-nox >/dev/null; } ||
		nrp_log "warning: could not install gnuplot-nox; no PNG chart"
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
# What was measured: the module and tools are built from the working tree.
{
	rev=$(git -C "$NRP_TOP" rev-parse --short HEAD 2>/dev/null || echo unknown)
	dirty=$(git -C "$NRP_TOP" status --porcelain -- drivers include tools/nrp-gpu \
		tools/p2p-checkpoint 2>/dev/null | awk '{ print $2 }' | tr '\n' ' ')
	echo "git $rev${dirty:+ (uncommitted changes in the measured code)}"
	echo "git_dirty_files ${dirty:-none}"
	echo "host_cpus $(nproc)"
	echo "host_load $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/host-facts.txt"
# Every NRP_BENCH_* variable goes to the guest, quoted.
job=(env)
while IFS= read -r v; do
	job+=("$v=${!v}")
done < <(compgen -v NRP_BENCH_ | grep -v '^NRP_BENCH_\(KERNEL\|MEM\|TIMEOUT\|SMP\|OUT\)$' || true)
job+=(tools/bench/guest.sh)

nrp_log "bench: $kernel guest, $NRP_BENCH_CLOCK clock, $smp vCPU, ${mem} MiB, GPU window ${gpu_mib} MiB; results in $out"
nrp_log "bench: runs ${NRP_BENCH_RUNS:-3} x ${NRP_BENCH_RUNTIME:-6} s per fio run${NRP_BENCH_IOS:+ (or $NRP_BENCH_IOS I/Os)}, checkpoint ${ckpt_mib} MiB"
start=$SECONDS
"$NRP_TOP/tools/vm/run-guest.sh" --kernel "$kernel" --out "$out/guest" \
	--timeout "$timeout" --mem "$mem" --smp "$smp" "${clock_opt[@]}" --gpu-mem "${gpu_mib}M" \
	-- "$(printf '%q ' "${job[@]}")" &
gpid=$!
# Progress: the guest's "bench:" lines as they land in output.txt.
(
	while [ ! -e "$out/guest/output.txt" ] && kill -0 "$gpid" 2>/dev/null; do sleep 1; done
	tail -n +1 -F --pid="$gpid" "$out/guest/output.txt" 2>/dev/null |
		while IFS= read -r line; do
			case $line in
			bench:*) printf '[%s] %s\n' "$(date +%H:%M:%S)" "$line" >&2 ;;
			FAIL:*) printf '[%s] guest %s\n' "$(date +%H:%M:%S)" "$line" >&2 ;;
			esac
		done
) &
tpid=$!
rc=0
wait "$gpid" || rc=$?
wait "$tpid" 2>/dev/null || true
elapsed=$((SECONDS - start))

raw=$out/guest/raw
if [ ! -s "$raw/runs.tsv" ] && [ ! -d "$raw/ckpt" ]; then
	tail -n 20 "$out/guest/output.txt" >&2 2>/dev/null || true
	nrp_die "bench guest exited $rc with no results; console, output and dmesg in $out/guest"
fi
python3 "$bench/reduce.py" "$raw" "$out" || nrp_die "reducing the results in $raw failed"
if command -v gnuplot >/dev/null; then
	gnuplot -e "dir='$out'" "$bench/chart.gp" 2>"$out/chart.log" ||
		nrp_log "warning: gnuplot failed, no chart (see $out/chart.log)"
fi
echo
cat "$out/results.md"
echo
files="results.json, results.md"
[ -e "$out/results.png" ] && files+=", results.png"
nrp_log "bench: $((elapsed / 60)) min $((elapsed % 60)) s for the guest; $files in $out"
if [ "$rc" != 0 ]; then
	nrp_die "the bench guest exited $rc (1: kernel report, 2: timeout); the results above may be partial, see $out/guest"
fi
