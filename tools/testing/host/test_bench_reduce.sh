#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The reducer of "make bench" (README) on the raw data of a real run, cut
# down to one profile: rr4k_qd1 on the 6.1 P2PDMA guest with its function
# profile, and the GPU checkpoint in both modes. A full benchmark takes half
# an hour of guest time, so a reducer that breaks on some combination of
# parts (attribution and checkpoint together once did) would otherwise only
# show at the end of one. The expected figures are that run's, and the
# reducer is deterministic.
. "$(dirname "$0")/lib.sh"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
tar -xJf "$TOP/tools/testing/host/fixtures/bench-raw-rr4k-qd1.tar.xz" -C "$t" ||
	fail "cannot unpack the fixture"
python3 "$TOP/tools/bench/reduce.py" "$t/raw" "$t/out" >"$t/reduce.log" 2>&1 ||
	{ cat "$t/reduce.log"; fail "reduce.py failed"; }
md=$t/out/results.md
for f in results.md results.json chart-transports.dat chart-checkpoint.dat; do
	[ -s "$t/out/$f" ] || fail "no $f"
done
expect() {
	grep -qF -- "$1" "$md" || { cat "$md"; fail "results.md lacks: $1"; }
}
# a run from before NRP_BENCH_ELEVATOR had no elevator fact: the kernel's
expect "I/O scheduler default on every namespace disk"
# the exact difference and the headline ratio, as the run gave them
expect "whole guest ours - in-tree: -425 ± 50 instructions per I/O"
expect "host transport ours / in-tree: **0.83x** ± 0.02"
expect "| host-transport instructions per I/O <= 0.85x the in-tree nvme_rdma on one profile, none above 1.00x (attribution, within the resolution) | yes |"
# the top functions of both modules, side by side
# shellcheck disable=SC2016 # the backquotes are markdown, not a command
expect '| 1 | `nvme_rdma_queue_rq` | 1 | 1,637 | `nrp_queue_rq` | 1 | 790 |'
# the checkpoint: nothing copied on the P2P path, 1 GiB on the bounce path
expect "| P2P checkpoint: zero bytes copied by the CPU into host memory | yes |"
expect "| bounce via host memory -> in-tree nvme_rdma |"
python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); assert j["format"] == "nvme-rdma-p2p-bench/2"' \
	"$t/out/results.json" || fail "results.json is not format nvme-rdma-p2p-bench/2"
echo "reduced: $(grep -c '^|' "$md") table rows"

# A reducer that always says "met" passes the checks above. Each fixture
# below is the same real run with one thing gone wrong (what, and how it
# was made from the real one: fixtures/derive-bench-raw.py, and DERIVED.txt
# in each), and the target it bears on must not be met. Every fixture is
# tried, so that one run names all that fail.
bad=0
tried=" rr4k-qd1 "
derived() { # name expected-results.md-line...
	local name=$1 d=$t/$1 line
	shift
	tried+="$name "
	mkdir "$d"
	if ! tar -xJf "$TOP/tools/testing/host/fixtures/bench-raw-$name.tar.xz" -C "$d" ||
		! python3 "$TOP/tools/bench/reduce.py" "$d/raw" "$d/out" >"$d/reduce.log" 2>&1; then
		cat "$d/reduce.log" 2>/dev/null
		echo "$name: the reducer failed"
		bad=$((bad + 1))
		return
	fi
	for line; do
		grep -qF -- "$line" "$d/out/results.md" && continue
		echo "$name: results.md lacks: $line"
		sed -n '/^### Targets/,$p' "$d/out/results.md"
		bad=$((bad + 1))
		return
	done
	echo "$name: not met, as it should be"
}
zero_copy="| P2P checkpoint: zero bytes copied by the CPU into host memory |"
derived no-host-map \
	"$zero_copy incomplete | run 1: CPU-copied 0 bytes, host_bytes_mapped not measured |"
derived no-host-counter \
	"$zero_copy incomplete | run 1: CPU-copied 0 bytes, host_bytes_mapped not measured |"
derived one-copy \
	"$zero_copy no | run 1: CPU-copied 0 bytes, host_bytes_mapped +0; run 2: CPU-copied 1,073,741,824 bytes, host_bytes_mapped +0; run 3: CPU-copied 0 bytes, host_bytes_mapped +1,073,741,824 |"
derived unverified \
	"$zero_copy incomplete | run 1: not verified |" \
	"| P2P checkpoint CPU time <= 0.5x the bounce path (bounce-intree): the checkpoint process | incomplete | process CPU – s vs 0.40 s; p2p run 1 not verified |"
derived no-ours \
	"| every ratio >= 1.00 against the in-tree transport (latency <= 1.00) | incomplete | worst: rr4k_qd1 p99 latency 1.00x (same (±1.0%)); 4/4 >= 1.00; missing: rw4k_qd32 (in-tree 1/3 runs, ours 0/3 runs) |"
derived no-ours-profiled \
	"| host-transport instructions per I/O <= 0.85x the in-tree nvme_rdma on one profile, none above 1.00x (attribution, within the resolution) | incomplete | best rr4k_qd1 0.83x ± 0.02, worst rr4k_qd1 0.83x ± 0.02 (exact difference); missing: rr4k_qd32x2 (no profiled run of ours) |"
derived stopped \
	"| every ratio >= 1.00 against the in-tree transport (latency <= 1.00) | incomplete | worst: rr4k_qd1 p99 latency 1.00x (same (±1.0%)); 4/4 >= 1.00; missing: rw4k_qd32 (no runs) |" \
	"| host-transport instructions per I/O <= 0.85x the in-tree nvme_rdma on one profile, none above 1.00x (attribution, within the resolution) | incomplete | missing: rr4k_qd1 (no profiled run of in-tree or ours) |" \
	"$zero_copy incomplete | 0/1 runs |"
derived noisy \
	"| at least one profile >= 1.15x | unresolved | best: xfs_ckpt wall time 1.21x (same (±26.7%)): 1.15x not beyond the noise |" \
	"| 1024 MiB checkpoint file on XFS >= 1.15x | unresolved | 1.21x (same (±26.7%)): 1.15x not beyond the noise |"
derived wide-step \
	"| host-transport instructions per I/O <= 0.85x the in-tree nvme_rdma on one profile, none above 1.00x (attribution, within the resolution) | unresolved | best rr4k_qd1 0.83x ± 0.02, worst rr4k_qd32x2 0.95x ± 0.30 (exact difference); not resolved at or below 1.00x: rr4k_qd32x2 |"
# a fixture without expectations would test nothing
for f in "$TOP"/tools/testing/host/fixtures/bench-raw-*.tar.xz; do
	f=${f##*/bench-raw-}
	[[ "$tried" == *" ${f%.tar.xz} "* ]] || { echo "${f%.tar.xz}: no expectations"; bad=$((bad + 1)); }
done
[ "$bad" = 0 ] || fail "$bad derived fixtures reduced wrong or untested"
exit 0
