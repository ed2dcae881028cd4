#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A storage host's shape: 64 controllers at once to one target (issue 27).
# nvmet serves 16 subsystems on 4 ports; the host connects to every
# subsystem through every port, with nvme_core's multipath=Y as on Debian:
# 16 head disks of 4 paths each, round-robin so that I/O reaches every
# controller. fio writes and verifies on all 16 heads at once; every
# controller must have carried data. Then everything is disconnected, and
# nothing may be left: no controller, the host's RDMA resources (QPs, CQs,
# MRs, PDs, CM ids) as before the first connect, the module's reference
# count 0.
#
# The in-tree nvme_rdma does the same in the same boot; the times of
# connecting and disconnecting all 64 are printed side by side as a ratio
# (a benchmark figure, not a test threshold: TCG). Where the in-tree
# default cannot connect at all (CPUs present but offline: below), that is
# said, and the in-tree side connects with one I/O queue per controller.
# nrp-timeout: 1800
. "$(dirname "$0")/lib_p2p.sh"

nsubs=${NRP_MANY_SUBSYS:-16}
nports=${NRP_MANY_PORTS:-4}
mib=${NRP_MANY_MIB:-16}
# NRP_MANY_IO_QUEUES=N: both sides connect with N I/O queues each, for a
# like-for-like figure where the in-tree default cannot connect (below)
qopt=()
[ -z "${NRP_MANY_IO_QUEUES:-}" ] || qopt=(--nr-io-queues="$NRP_MANY_IO_QUEUES")
cfs=/sys/kernel/config/nvmet
nqn=nqn.2026-12.io.nvme-rdma-p2p:many
subnqn() { echo "$nqn-$1"; }

nrp_nvme_core_multipath Y
nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
nrp_ram_subsystems "$nqn" "$nsubs" "$mib"
for ((p = 0; p < nports; p++)); do
	d=$cfs/ports/$((p + 1))
	mkdir "$d"
	nrp_cleanup_push "rmdir $d"
	echo rdma >"$d/addr_trtype"
	echo ipv4 >"$d/addr_adrfam"
	echo "$NRP_TGT_IP4" >"$d/addr_traddr"
	echo $((NRP_PORT + p)) >"$d/addr_trsvcid"
	for ((s = 0; s < nsubs; s++)); do
		ln -s "$cfs/subsystems/$(subnqn $s)" "$d/subsystems/" ||
			nrp_fail "cannot export subsystem $s on port $p"
		nrp_cleanup_push "rm $d/subsystems/$(subnqn $s)"
	done
done
nrp_load_ours
nrp_cleanup_push "nvme disconnect-all"

# What the host's RDMA device holds: "pd N cq N qp N cm_id N mr N".
res_of_host() {
	rdma res show 2>/dev/null | awk '$2 ~ /^nrp_(rxe|siw)_h:$/ {
		for (i = 3; i < NF; i += 2)
			if ($i ~ /^(pd|cq|qp|cm_id|mr)$/) printf "%s %s ", $i, $(i + 1)
	}'
}
nctrls() { ls -d /sys/class/nvme/nvme* 2>/dev/null | wc -l; }

# connect_all TRANSPORT [OPTION...]: all subsystems through all ports;
# seconds in T
connect_all() {
	local t0 s p out tr=$1
	shift
	t0=$(nrp_now)
	for ((s = 0; s < nsubs; s++)); do
		for ((p = 0; p < nports; p++)); do
			out=$(nvme connect -t "$tr" -a "$NRP_TGT_IP4" -s $((NRP_PORT + p)) \
				-n "$(subnqn $s)" "$@" 2>&1) || nrp_fail "$tr: connect $s/$p failed: $out"
		done
	done
	T=$(nrp_secs "$t0" "$(nrp_now)")
}

# The head disk of subsystem $1 (nvmeXnY under its nvme-subsystem).
head_of() {
	local d n
	for d in /sys/class/nvme-subsystem/*; do
		[ "$(cat "$d/subsysnqn" 2>/dev/null)" = "$(subnqn "$1")" ] || continue
		echo round-robin >"$d/iopolicy" 2>/dev/null
		for n in "$d"/nvme*n1; do
			[ -e "$n" ] && { echo "/dev/$(basename "$n")"; return 0; }
		done
	done
	return 1
}

# Data commands each path disk carried, "path count" lines.
path_ios() {
	local p
	for p in /sys/class/nvme/nvme*/nvme*c*n1; do
		[ -e "$p/stat" ] || continue
		echo "$(basename "$p") $(awk '{ print $1 + $5 }' "$p/stat")"
	done
}

run_all() { # TRANSPORT [CONNECT-OPTION...]
	local tr=$1 s heads=() jobs=() d c before after idle
	res0=$(res_of_host)
	connect_all "$@"
	tc=$T
	[ "$(nctrls)" = $((nsubs * nports)) ] || nrp_fail "$tr: $(nctrls) controllers, not $((nsubs * nports))"
	for ((s = 0; s < nsubs; s++)); do
		for _ in $(seq 50); do d=$(head_of $s) && [ -b "$d" ] && break; sleep 0.2; done
		[ -b "$d" ] || nrp_fail "$tr: no head disk for subsystem $s"
		heads+=("$d")
		jobs+=(--name="s$s" --filename="$d")
	done
	before=$(path_ios)
	out=$(fio --direct=1 --ioengine=libaio --rw=randwrite --bs=16k --iodepth=8 \
		--size=$((mib / 2))m --verify=crc32c --verify_fatal=1 --do_verify=1 \
		--output-format=terse --terse-version=3 "${jobs[@]}" 2>&1) ||
		nrp_fail "$tr: fio on the $nsubs heads failed: $(echo "$out" | tail -n 3)"
	[ "$(echo "$out" | grep -c '^3;')" = "$nsubs" ] || nrp_fail "$tr: fio ran $(echo "$out" | grep -c '^3;') of $nsubs jobs"
	after=$(path_ios)
	idle=$(join <(echo "$before" | sort) <(echo "$after" | sort) | awk '$3 <= $2 { print $1 }')
	[ -z "$idle" ] || nrp_fail "$tr: paths that carried no I/O: $(echo $idle)"
	echo "$tr: $(nctrls) controllers connected in ${tc}s; fio verified on ${#heads[@]} heads, every path carried I/O"
	if [ "$tr" = "$NRP_TRANSPORT" ]; then
		for c in /sys/class/nvme/nvme*; do
			nrp_ctrl_is_ours "$(basename "$c")" || nrp_fail "$(basename "$c") is not ours"
		done
	fi
	local t0
	t0=$(nrp_now)
	nrp_must nvme disconnect-all
	for _ in $(seq 300); do [ "$(nctrls)" = 0 ] && break; sleep 0.2; done
	td=$(nrp_secs "$t0" "$(nrp_now)")
	[ "$(nctrls)" = 0 ] || nrp_fail "$tr: $(nctrls) controllers left after disconnect-all"
	for _ in $(seq 100); do [ "$(res_of_host)" = "$res0" ] && break; sleep 0.2; done
	[ "$(res_of_host)" = "$res0" ] || nrp_fail "$tr: RDMA resources $(res_of_host), before $res0"
	echo "$tr: all disconnected in ${td}s; RDMA resources as before ($res0)"
}

run_all "$NRP_TRANSPORT" "${qopt[@]}"
ours_c=$tc ours_d=$td
refs=$(cat /sys/module/$NRP_MOD/refcnt)
nrp_expect "$NRP_MOD reference count" "$refs" 0
modprobe --ignore-install nvme-rdma || nrp_fail "cannot load the in-tree nvme-rdma"
nrp_cleanup_push "modprobe -r nvme-rdma"
# The in-tree nvme_rdma spreads a controller's I/O queues over the CPUs
# present, online or not. Where a queue gets no online CPU (CPUs present
# but offline, as with SMT switched off at run time: 6.12 and 7.3 at 240
# present and 2 online), the Connect of that queue cannot be allocated
# (blk_mq_alloc_request_hctx(): -EXDEV) and the whole connect fails; ours
# deals the online CPUs out first (nrp_map_usable_first()). There the
# in-tree side is timed with one I/O queue per controller, the most it
# connects with, against our default (one per online CPU): a ratio in its
# favour.
intree=("${qopt[@]}") how=${NRP_MANY_IO_QUEUES:+", $NRP_MANY_IO_QUEUES I/O queues each"}
nrp_dmesg_mark
if out=$(nvme connect -t rdma -a "$NRP_TGT_IP4" -s "$NRP_PORT" -n "$(subnqn 0)" "${intree[@]}" 2>&1); then
	nrp_must nvme disconnect -n "$(subnqn 0)"
else
	nrp_dmesg_since | grep -q 'Connect command failed, errno: -18' ||
		nrp_fail "rdma: the first connect failed: $out"
	q="with its default queues"
	[ -z "${NRP_MANY_IO_QUEUES:-}" ] || q="with $NRP_MANY_IO_QUEUES I/O queues each"
	echo "rdma: its connect $q fails at this shape ($(nproc) of $(getconf _NPROCESSORS_CONF) CPUs online): an I/O queue with no online CPU, its Connect refused with -EXDEV; ours connected every queue"
	intree=(--nr-io-queues=1) how=", in-tree with one I/O queue per controller"
fi
for _ in $(seq 100); do [ "$(nctrls)" = 0 ] && break; sleep 0.2; done
[ "$(nctrls)" = 0 ] || nrp_fail "rdma: $(nctrls) controllers left after the first connect"
run_all rdma "${intree[@]}"
echo "connect 64: ours ${ours_c}s, in-tree ${tc}s ($(awk -v a="$ours_c" -v b="$tc" 'BEGIN { printf "%.2f", a / b }')x$how)"
echo "disconnect 64: ours ${ours_d}s, in-tree ${td}s ($(awk -v a="$ours_d" -v b="$td" 'BEGIN { printf "%.2f", a / b }')x)"
nrp_assert_no_splat
nrp_pass
