#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The GPU server's fabric in one guest (issue 27): many controllers, two
# paths to every subsystem, and a host of hundreds of possible CPUs, with
# nvme_core's multipath=Y as on Debian. Run it in a guest booted with
# many possible CPUs (run-guest.sh --smp 2,maxcpus=240, or on 6.12
# --smp 240 --online 2, as shape_cpus).
#
# nvmet serves NRP_FABRIC_SUBSYS (8) subsystems on two paths, each a
# link of its own (two veth pairs, a soft RDMA device on each end); the
# host connects to every subsystem through both, asking for 224 write
# queues as an admin of a 224-thread host might (the core clamps them to
# the CPUs; the driver sizes what a controller may ever need by the
# possible CPUs): 16 controllers, 8 head disks of two paths,
# round-robin. fio writes all heads at once, and path 2 goes away while
# it writes. Path 2 stays away until fio has finished writing and reading
# back every head: what was queued on the dead path must fail over to
# path 1 at once (nvme-mpath requests fail fast when their controller
# leaves LIVE), never wait for a reconnect that cannot come. Then path 2
# comes back, every controller must be LIVE again and every path of every
# head carry verified I/O; after disconnecting nothing may be left: no
# controller, the host's RDMA resources as before, the module's reference
# count 0.
#
# Path 2 is one nvmet port per subsystem, each on a service ID of its own,
# and goes away by unlinking each port's subsystem: a port whose last
# subsystem goes stops listening, and reconnects are refused until it is
# linked again. With one port for all eight, unlinking them one by one
# leaves the port listening for the others, and a controller whose
# subsystem has gone reconnects to a Connect failed with DNR ("invalid
# subsystem"): 6.12's core then gives up and deletes it, as it should. Not
# the link either: after the veth's target end goes down and up, rdma_cm
# over rxe here never establishes a connection again: the in-tree
# nvme_rdma on 6.1 and ours on 6.12 alike, each attempt failing after 60
# to 100 s.
# nrp-timeout: 1200
. "$(dirname "$0")/lib_mpath.sh"

nsubs=${NRP_FABRIC_SUBSYS:-8}
mib=${NRP_FABRIC_MIB:-64}
cfs=/sys/kernel/config/nvmet
nqn=nqn.2026-12.io.nvme-rdma-p2p:fabric
subnqn() { echo "$nqn-$1"; }
addr_of() { if [ "$1" = 1 ]; then echo "$NRP_TGT_IP4"; else echo "$NRP_TGT2_IP4"; fi; }
# nvmet port and service ID of subsystem $2 on path $1: port 1 serves
# every subsystem on path 1; port 10 + S only subsystem S on path 2
port_of() { if [ "$1" = 1 ]; then echo 1; else echo $((10 + $2)); fi; }
svcid_of() { if [ "$1" = 1 ]; then echo "$NRP_PORT"; else echo $((NRP_PORT + 1 + $2)); fi; }

nrp_guest_cpus "$nsubs subsystems x 2 paths"
online=$NRP_USABLE_CPUS possible=$NRP_POSSIBLE_CPUS
# what the kernel reports from here on is this test's (shape_cpus ran before)
nrp_dmesg_mark

nrp_nvme_core_multipath Y
nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
# the second link, without nrp_second_path's single test subsystem
nrp_second_link
nrp_ram_subsystems "$nqn" "$nsubs" "$mib"
# port_link P S / port_unlink P S: export subsystem S on path P, or stop
port_link() {
	local d=$cfs/ports/$(port_of "$1" "$2")/subsystems
	[ -e "$d/$(subnqn "$2")" ] || ln -s "$cfs/subsystems/$(subnqn "$2")" "$d/"
}
port_unlink() { rm -f "$cfs/ports/$(port_of "$1" "$2")/subsystems/$(subnqn "$2")"; }
for p in 1 2; do
	for ((s = 0; s < nsubs; s++)); do
		d=$cfs/ports/$(port_of $p $s)
		if [ ! -d "$d" ]; then
			mkdir "$d" || nrp_fail "cannot create nvmet port $(port_of $p $s)"
			nrp_cleanup_push "rmdir $d"
			echo rdma >"$d/addr_trtype"
			echo ipv4 >"$d/addr_adrfam"
			addr_of $p >"$d/addr_traddr"
			svcid_of $p $s >"$d/addr_trsvcid"
		fi
		port_link $p $s || nrp_fail "cannot export subsystem $s on path $p"
		nrp_cleanup_push "port_unlink $p $s"
	done
	# before the unlinks (see nrp_drop_listener)
	nrp_cleanup_push "nrp_drop_listener $(addr_of $p)"
done
nrp_load_ours
nrp_cleanup_push "nvme disconnect-all"

# What the host's RDMA devices hold: "pd N cq N qp N cm_id N mr N" each.
res_of_host() {
	rdma res show 2>/dev/null | awk '$2 ~ /^nrp_(rxe|siw)_h2?:$/ {
		printf "%s ", $2
		for (i = 3; i < NF; i += 2)
			if ($i ~ /^(pd|cq|qp|cm_id|mr)$/) printf "%s %s ", $i, $(i + 1)
	}'
}
nctrls() { ls -d /sys/class/nvme/nvme* 2>/dev/null | wc -l; }
percpu_kb() { awk '$1 == "Percpu:" { print $2 }' /proc/meminfo; }
# controllers of path P ("nvmeX" lines): those whose address is port P's
ctrls_of_path() {
	local c
	for c in /sys/class/nvme/nvme*; do
		grep -q "traddr=$(addr_of "$1")," "$c/address" 2>/dev/null && basename "$c"
	done
}
# Commands the I/O queues of path P's controllers carried, summed (the
# driver's own count, queue_stats: the hidden path disks of 6.1 keep no
# I/O statistics). Bash builtins only: with fio's jobs and rxe busy on both
# vCPUs of a TCG guest, each fork takes a second and more, and forks in a
# loop would miss the moment the test waits for; the sum is left in SUM,
# not printed (command substitution forks too).
path_sum() {
	local c s=0 cs line f i col qid
	if [ "$1" = 1 ]; then cs=("${path1[@]}"); else cs=("${path2[@]}"); fi
	for c in "${cs[@]}"; do
		col=
		while read -r line; do
			read -ra f <<<"$line"
			if [ -z "$col" ]; then
				for i in "${!f[@]}"; do [ "${f[i]}" = commands ] && col=$i; done
				continue
			fi
			qid=${f[0]:-}
			[ "$qid" -gt 0 ] 2>/dev/null && s=$((s + f[col]))
		done <"$NRP_DEBUGFS/$c/queue_stats"
	done
	SUM=$s
}
# Commands of every controller's I/O queues, "ctrl count" lines.
path_ios() {
	local c
	for c in /sys/class/nvme/nvme*; do
		c=$(basename "$c")
		echo "$c $(nrp_io_stat "$c" commands)"
	done
}
# number of controllers of path P in state ST, left in NST (builtins, as
# path_sum)
n_in_state() {
	local c n=0 cs st
	if [ "$1" = 1 ]; then cs=("${path1[@]}"); else cs=("${path2[@]}"); fi
	for c in "${cs[@]}"; do
		st=
		read -r st 2>/dev/null <"/sys/class/nvme/$c/state"
		[ "$st" = "$2" ] && n=$((n + 1))
	done
	NST=$n
}

# connect_all TRANSPORT: every subsystem through both ports, asking for
# 224 write queues; the per-CPU memory each controller took is left in PC
connect_all() {
	local s p out pc0 n
	pc0=$(percpu_kb)
	for ((s = 0; s < nsubs; s++)); do
		for p in 1 2; do
			out=$(nvme connect -t "$1" -a "$(addr_of $p)" -s "$(svcid_of $p $s)" \
				-n "$(subnqn $s)" --nr-write-queues=224 --reconnect-delay=1 2>&1) ||
				nrp_fail "$1: connect to subsystem $s through port $p failed: $out"
		done
	done
	n=$(nctrls)
	nrp_expect "$1: controllers" "$n" $((2 * nsubs))
	PC=$((($(percpu_kb) - pc0) / n))
}
disconnect_all() {
	nrp_must nvme disconnect-all
	for _ in $(seq 300); do [ "$(nctrls)" = 0 ] && break; sleep 0.2; done
	[ "$(nctrls)" = 0 ] || nrp_fail "$(nctrls) controllers left after disconnect-all"
}

res0=$(res_of_host)
# What a controller costs in per-CPU memory at this many possible CPUs (the
# nvme core's and blk-mq's own structures are most of it), for the log:
# the per-CPU allocator keeps chunk pages it populated once, so a second
# set of controllers in the same boot may cost nothing that shows.
t0=$(nrp_now)
connect_all "$NRP_TRANSPORT"
tc=$(nrp_secs "$t0" "$(nrp_now)")
echo "per-CPU memory per controller at $possible possible CPUs: $PC KiB"
n=$(nctrls)
for c in /sys/class/nvme/nvme*; do
	c=$(basename "$c")
	nrp_ctrl_is_ours "$c" || nrp_fail "$c is not ours"
	# default (write) and read queues: one each per CPU not isolated
	q=$(awk 'NR > 1 && $1 > 0' "$NRP_DEBUGFS/$c/queue_stats" | wc -l)
	[ "$q" = $((2 * online)) ] || nrp_fail "$c: $q I/O queues, not $((2 * online))"
done
for p in 1 2; do
	nrp_expect "controllers through port $p" "$(ctrls_of_path $p | wc -l)" "$nsubs"
done
echo "$n controllers connected in ${tc}s, $((2 * online)) I/O queues each"
read -ra path1 <<<"$(ctrls_of_path 1 | tr '\n' ' ')"
read -ra path2 <<<"$(ctrls_of_path 2 | tr '\n' ' ')"
echo "path 1: ${path1[*]}; path 2: ${path2[*]}"

heads=() jobs=()
for ((s = 0; s < nsubs; s++)); do
	h=
	for _ in $(seq 50); do
		for d in /sys/class/nvme-subsystem/*; do
			[ "$(cat "$d/subsysnqn" 2>/dev/null)" = "$(subnqn $s)" ] || continue
			echo round-robin >"$d/iopolicy"
			for x in "$d"/nvme*n1; do
				[ -b "/dev/$(basename "$x")" ] && h=/dev/$(basename "$x")
			done
		done
		[ -n "$h" ] && break
		sleep 0.2
	done
	[ -n "$h" ] || nrp_fail "no head disk for subsystem $s"
	heads+=("$h")
	jobs+=(--name="s$s" --filename="$h")
done
echo "heads: ${heads[*]}"

# fio_all LOG SIZE_MIB: write and verify every head at once, in the background
fio_all() {
	fio --direct=1 --ioengine=libaio --rw=randwrite --bs=32k --iodepth=16 \
		--size="$2"m --verify=crc32c --verify_fatal=1 --do_verify=1 \
		--output-format=terse --terse-version=3 "${jobs[@]}" >"$1" 2>&1 &
}
fio_check() { # PID LOG WHAT
	wait "$1" || nrp_fail "$3: fio failed: $(grep -v '^3;' "$2" | tail -n 5)"
	[ "$(grep -c '^3;' "$2")" = "$nsubs" ] ||
		nrp_fail "$3: fio finished $(grep -c '^3;' "$2") of $nsubs jobs"
}

log=/tmp/shape-fabric-fio.log
path_sum 2; a2=$SUM
fio_all $log $((mib / 2))
f=$!
nrp_cleanup_push "kill $f"
# cut path 2 once it carries writes: a queue of requests on each path
for _ in $(seq 600); do
	path_sum 2
	[ $((SUM - a2)) -ge $((16 * nsubs)) ] && break
	nrp_running $f || break
	nrp_nap 0.1
done
nrp_running $f || nrp_fail "fio ended before path 2 could be cut: $((SUM - a2)) commands on path 2: $(grep -v '^3;' $log | tail -n 3)"
[ $((SUM - a2)) -ge $((16 * nsubs)) ] ||
	nrp_fail "path 2 carried $((SUM - a2)) commands in 60 s of fio, not $((16 * nsubs)): round-robin does not use it"
echo "cutting path 2 after $((SUM - a2)) commands on it"
p2disks=()
for c in "${path2[@]}"; do
	p=$(nrp_path_sysfs "$c") || nrp_fail "no path disk of $c"
	p2disks+=("$p")
done
tcut=$(nrp_now)
for ((s = 0; s < nsubs; s++)); do port_unlink 2 $s; done
for _ in $(seq 600); do n_in_state 2 live; [ "$NST" = 0 ] && { tl=$(nrp_now); break; }; nrp_nap 0.1; done
nrp_expect "path 2 controllers still live 60 s after path 2 went" "$NST" 0
# from the last one's leaving as the kernel logged it, not the poll
tl=$(nrp_left_live_at "$tl" "${path2[@]}")
echo "path 2 away: its $nsubs controllers left LIVE in $(nrp_secs "$tcut" "$tl")s"
# failover: what path 2 held, started or waiting for its queue, moves to
# path 1 within a bound of the last controller leaving live, not after an
# I/O timeout (30 s) or a reconnect
bound=$(nrp_failover_bound 10)
nrp_expect_failover "path 2" "$tl" "$bound" "${p2disks[@]}"
echo "path 2 empty ${NRP_FAILOVER_SECS}s after its controllers left LIVE, $(nrp_secs "$tcut" "$(nrp_now)")s after the cut (bound: ${bound}s after leaving LIVE)"
# fio must finish on path 1 alone, with path 2 still away
# the rest of the write on path 1 alone: 16 s in a check run of 8
# subsystems x 32 MiB; 120 s (x NRP_SLOW) is what a user would still call
# a failover, and an I/O timeout per queue would exceed it
for _ in $(seq $((1200 * NRP_SLOW))); do nrp_running $f || break; nrp_nap 0.1; done
nrp_running $f && nrp_fail "fio still running $((120 * NRP_SLOW)) s after path 2 went away: I/O waits on the dead path"
n_in_state 2 live
nrp_expect "path 2 controllers live before path 2 came back" "$NST" 0
fio_check $f $log "across the loss of path 2"
echo "fio wrote and verified $nsubs heads x $((mib / 2)) MiB on path 1 alone in $(nrp_secs "$tcut" "$(nrp_now)")s after the cut"

tback=$(nrp_now)
for ((s = 0; s < nsubs; s++)); do port_link 2 $s || nrp_fail "cannot export subsystem $s on path 2 again"; done
for c in "${path2[@]}"; do
	nrp_wait_state "$c" 120 || nrp_fail "$c not live 120 s after path 2 came back ($(nrp_ctrl_state "$c"))"
done
echo "path 2 back: its controllers LIVE again in $(nrp_secs "$tback" "$(nrp_now)")s"

before=$(path_ios)
fio_all $log 4
f=$!
fio_check $f $log "after path 2 came back"
after=$(path_ios)
idle=$(join <(echo "$before" | sort) <(echo "$after" | sort) | awk '$3 <= $2 { print $1 }')
[ -z "$idle" ] || nrp_fail "controllers that carried no I/O after path 2 came back: $(echo $idle)"
echo "after path 2 came back: all $(echo "$after" | wc -l) controllers carried verified I/O"

t0=$(nrp_now)
disconnect_all
for _ in $(seq 100); do [ "$(res_of_host)" = "$res0" ] && break; sleep 0.2; done
[ "$(res_of_host)" = "$res0" ] || nrp_fail "RDMA resources $(res_of_host), before $res0"
echo "all disconnected in $(nrp_secs "$t0" "$(nrp_now)")s; RDMA resources as before ($res0)"
for _ in $(seq 100); do [ "$(cat /sys/module/$NRP_MOD/refcnt)" = 0 ] && break; sleep 0.2; done
nrp_expect "$NRP_MOD reference count" "$(cat /sys/module/$NRP_MOD/refcnt)" 0
nrp_assert_no_splat
nrp_pass
