#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest half of tools/bench/memory.sh: the memory one controller takes,
# ours against the in-tree nvme_rdma, in one boot. For each transport and
# run: /proc/meminfo before the connect, with the controller live, and
# after the disconnect (caches dropped, slab shrunk each time). One line a
# measurement on stdout:
#
#   mem TRANSPORT RUN OPTIONS slab_kb percpu_kb used_kb slab_left_kb percpu_left_kb vmalloc_kb
#
# where slab, percpu, used (MemTotal less MemFree, the page cache and the
# per-CPU free lists) and vmalloc (VmallocUsed:
# soft RDMA's queues) are the growth from before the connect to the live
# controller, and *_left what the
# disconnect did not give back. OPTIONS: the connect's queue options
# (NRP_MEM_OPTS, default none: one I/O queue per online CPU).
set -u
. tools/testing/selftests/nvme-rdma-p2p/lib.sh
runs=${NRP_MEM_RUNS:-3}
opts=${NRP_MEM_OPTS:-}

meminfo() { # FIELD...: their values in kB, summed
	awk -v f=" $* " 'index(f, " " substr($1, 1, length($1) - 1) " ") { s += $2 } END { print s + 0 }' /proc/meminfo
}
settle() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
	# freed slab pages go back to the page allocator in a moment
	sleep 2
}
# Pages on the per-CPU free lists, in kB: free, but not in MemFree.
pcp_kb() { awk '$1 == "count:" { s += $2 } END { print s * 4 }' /proc/zoneinfo; }
snap() { # NAME -> "slab percpu used vmalloc"; /proc/vmstat kept as NAME
	settle
	# used: what neither the free lists nor the (dropped) page cache hold
	echo "$(meminfo SUnreclaim SReclaimable) $(meminfo Percpu) $(($(meminfo MemTotal) - $(meminfo MemFree Buffers Cached) - $(pcp_kb))) $(meminfo VmallocUsed)"
	cp /proc/vmstat "/tmp/nrp-vmstat.$1"
}
# The /proc/vmstat page counters that grew most between two snaps, for a
# gap that slab, per-CPU and vmalloc do not explain.
vmstat_delta() { # SNAP0 SNAP1
	awk 'NR == FNR { a[$1] = $2; next } $1 ~ /^nr_/ && $2 - a[$1] != 0 { print $2 - a[$1], $1 }' \
		"/tmp/nrp-vmstat.$1" "/tmp/nrp-vmstat.$2" | sort -rn | head -n 6 | paste -sd' ' -
}

nrp_std_setup 64
modprobe --ignore-install nvme-rdma || nrp_fail "cannot load the in-tree nvme_rdma"
nrp_cleanup_push "modprobe -r nvme_rdma"
echo "guest: $(nproc) online CPUs, $(($(sed 's/.*-//' /sys/devices/system/cpu/possible) + 1)) possible; options: ${opts:-none}"
# A first connect of each, not counted: the ib_device's shared CQ pool and
# the modules' own first allocations.
for tr in "$NRP_TRANSPORT" rdma; do
	nrp_must nvme connect -t "$tr" -a "$NRP_TGT_IP4" -s "$NRP_PORT" -n "$NRP_SUBNQN"
	ctrl=$(nrp_ctrl_of_subsys "$NRP_SUBNQN") || nrp_fail "$tr: no controller"
	nrp_must nvme disconnect -n "$NRP_SUBNQN"
	nrp_wait_gone "$ctrl" 30 || nrp_fail "$tr: $ctrl not gone"
done
for ((r = 1; r <= runs; r++)); do
	for tr in "$NRP_TRANSPORT" rdma; do
		read -r s0 p0 u0 v0 <<<"$(snap before)"
		# shellcheck disable=SC2086 # options, as words
		out=$(nvme connect -t "$tr" -a "$NRP_TGT_IP4" -s "$NRP_PORT" -n "$NRP_SUBNQN" $opts 2>&1) ||
			nrp_fail "$tr: connect failed: $out"
		ctrl=$(nrp_ctrl_of_subsys "$NRP_SUBNQN") || nrp_fail "$tr: no controller"
		nrp_ns_dev "$ctrl" >/dev/null || nrp_fail "$tr: no namespace"
		read -r s1 p1 u1 v1 <<<"$(snap live)"
		[ "$r" != 1 ] || echo "vmstat $tr $(vmstat_delta before live)"
		nrp_must nvme disconnect -n "$NRP_SUBNQN"
		nrp_wait_gone "$ctrl" 30 || nrp_fail "$tr: $ctrl not gone"
		read -r s2 p2 u2 v2 <<<"$(snap after)"
		name=ours
		[ "$tr" = rdma ] && name=in-tree
		o=${opts// /,}
		# "-": no options (a field of its own all the same)
		echo "mem $name $r ${o:--} $((s1 - s0)) $((p1 - p0)) $((u1 - u0)) $((s2 - s0)) $((p2 - p0)) $((v1 - v0))"
	done
done
nrp_pass
