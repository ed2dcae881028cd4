#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench-memory: the memory one controller takes, ours against the
# in-tree nvme_rdma in the same boot, at the CPU counts of a GPU server
# (issue 27): slab, per-CPU and all pages in use, with the controller live
# and what the disconnect leaves.
#
#   tools/bench/memory.sh [RESULT_DIR]
#
# Shapes (NRP_MEM_SHAPES, "SMP/OPTIONS" words, QEMU -smp and connect
# options with commas for blanks): by default 2 CPUs, 240 possible CPUs
# with 2 online and 224 I/O, write and poll queues asked for (the sizing a
# 224-thread host gives), and 64 online CPUs. NRP_MEM_RUNS (3) runs per
# transport; NRP_MEM_KERNEL (stock) the guest kernel. Results:
# RESULT_DIR/memory.md (the table, median of the runs), memory.tsv (every
# run), memory.png (gnuplot, where installed).
set -euo pipefail
. "$(dirname "$0")/../vm/lib.sh"

out=${1:-$NRP_TOP/bench-results/memory-$(date -u +%Y%m%d-%H%M%S)}
kernel=${NRP_MEM_KERNEL:-stock}
shapes=${NRP_MEM_SHAPES:-"2/ 2,maxcpus=240/--nr-io-queues=224,--nr-write-queues=224,--nr-poll-queues=224 64/"}
mkdir -p "$out"
out=$(cd "$out" && pwd)
"$NRP_TOP/tools/setup.sh" --no-kernel
: >"$out/memory.tsv"
for shape in $shapes; do
	smp=${shape%%/*}
	opts=${shape#*/}
	tag=smp${smp//[^0-9]/_}
	nrp_log "memory: -smp $smp, options '${opts//,/ }'"
	t0=$SECONDS
	"$NRP_TOP/tools/vm/run-guest.sh" --kernel "$kernel" --smp "$smp" --gpu-mem 0 \
		--timeout "${NRP_MEM_TIMEOUT:-3600}" --out "$out/guest-$tag" \
		-- "NRP_MEM_RUNS=${NRP_MEM_RUNS:-3} NRP_MEM_OPTS='${opts//,/ }' tools/bench/memory-guest.sh" ||
		nrp_die "memory guest -smp $smp failed, see $out/guest-$tag"
	cpus=$(sed -n 's/^guest: \([0-9]*\) online CPUs, \([0-9]*\) possible.*/\1\/\2/p' "$out/guest-$tag/output.txt")
	awk -v s="$smp" -v c="$cpus" '$1 == "mem" { print s "\t" c "\t" $2 "\t" $3 "\t" $4 "\t" $5 "\t" $6 "\t" $7 "\t" $8 "\t" $9 "\t" $10 }' \
		"$out/guest-$tag/output.txt" >>"$out/memory.tsv"
	nrp_log "memory: -smp $smp done in $((SECONDS - t0)) s"
done
python3 - "$out" <<'PY'
import statistics, sys
out = sys.argv[1]
rows = {}
for line in open(f"{out}/memory.tsv"):
    smp, cpus, tr, run, opts, slab, pcpu, used, slab_left, pcpu_left, vm = line.rstrip("\n").split("\t")
    rows.setdefault((smp, cpus, opts), {}).setdefault(tr, []).append(
        [int(slab), int(pcpu), int(used), int(slab_left), int(pcpu_left), int(vm)])
med = lambda v, i: statistics.median(x[i] for x in v)
lines = ["| CPUs online/possible | options | transport | slab KiB | per-CPU KiB | vmalloc KiB | pages in use KiB | left after disconnect (slab, per-CPU) KiB |",
         "|---|---|---|---|---|---|---|---|"]
plot = []
for (smp, cpus, opts), t in rows.items():
    for tr in ("ours", "in-tree"):
        v = t.get(tr)
        if not v:
            continue
        lines.append(f"| {cpus} | {opts if opts not in ('', '-') else 'default'} | {tr} | {med(v,0):.0f} | {med(v,1):.0f} | {med(v,5):.0f} | {med(v,2):.0f} | {med(v,3):.0f}, {med(v,4):.0f} |")
    if "ours" in t and "in-tree" in t:
        o = med(t["ours"], 0) + med(t["ours"], 1)
        i = med(t["in-tree"], 0) + med(t["in-tree"], 1)
        ou, iu = med(t["ours"], 2), med(t["in-tree"], 2)
        ratio = o / i if i else float("nan")
        uratio = ou / iu if iu else float("nan")
        lines.append(f"| {cpus} | | **ours / in-tree** | **{ratio:.2f}x** (slab + per-CPU) | | | **{uratio:.2f}x** | |")
        plot.append(f"{cpus.replace('/', '-')} {o:.0f} {i:.0f} {ou:.0f} {iu:.0f}")
open(f"{out}/memory.md", "w").write("\n".join(lines) + "\n")
open(f"{out}/memory.dat", "w").write("\n".join(plot) + "\n")
print("\n".join(lines))
PY
if command -v gnuplot >/dev/null; then
	gnuplot -e "dir='$out'" "$NRP_TOP/tools/bench/memory.gp" 2>"$out/memory-chart.log" ||
		nrp_log "warning: gnuplot failed, no chart (see $out/memory-chart.log)"
fi
files="memory.md, memory.tsv"
[ -e "$out/memory.png" ] && files+=", memory.png"
nrp_log "memory: results in $out ($files)"
