#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Run the in-guest suite as TAP (kselftest conventions): every test_*.sh is
# one test point; exit 0 passes, 4 skips, anything else fails.
#
#   run_tests.sh [-t SECONDS] [TEST...]
#
# Default: every test_*.sh but test_pair_*.sh, which need the host guest of
# tools/vm/run-pair.sh, and test_nrp_check_topology.sh, which needs a guest
# with the PCIe topology of its header; they run when named.
#
# TEST is a name like module_load or test_module_load.sh. NAME@siw runs the
# test over siw (NRP_RDMA_TYPE=siw) and reports it as NAME@siw, so one boot
# runs the rxe and the siw pass. NAME@mpn runs it with nvme_core reloaded
# with multipath=N (NRP_CORE_MULTIPATH, lib.sh), whatever the boot's is.
#
# A test that runs longer than its limit is killed and fails. The limit is
# -t, or a line "# nrp-timeout: SECONDS" in the test when that is longer.
#
# After each test the guest must be as the test found it: no NVMe-oF
# controller, none of our modules loaded (nvme_rdma_p2p, whose reference
# count must be 0 to unload, and the fixtures), no nvmet subsystem or
# port, no soft RDMA link, no veth of the fixtures, nvme_core's multipath
# as the boot set it (or nvme_core not loaded), no in-tree host transport
# the suite did not start with (nvme_rdma would take "rdma" from a later
# test that loads ours under that name). A test that leaves
# something fails, even if it passed, and the leftovers are removed so
# that the next test starts clean. On a kernel with lockdep, lockdep must
# still be on (debug_locks 1): it turns itself off after its first report,
# and the rest of the boot would run unchecked. Its state before the first
# test and after the last is printed ("# lockdep at the start: ..." and
# "# lockdep at the end: ...", "none" without /proc/lockdep_stats), and
# lockdep off at either point fails the run; tools/testing/run-all.sh
# asserts both lines on the kernels that have lockdep.
cd "$(dirname "$0")" || exit 1

# Our modules: the transport and the fixtures built beside it.
our_modules() {
	local ko
	echo nvme_rdma_p2p
	for ko in "${NRP_KO_DIR:-/nonexistent}"/*.ko; do
		[ -e "$ko" ] || continue
		ko=$(basename "$ko" .ko)
		echo "${ko//-/_}"
	done | sort -u
}

# The in-tree host transports loaded now (lib.sh's NRP_INTREE_TRANSPORTS:
# this runner does not source lib.sh). The fabrics core loads
# nvme-<transport> for any transport=NAME written to /dev/nvme-fabrics.
intree_transports() {
	local m
	for m in nvme_rdma nvme_tcp nvme_fc nvme_loop; do
		[ -e "/sys/module/$m/refcnt" ] && echo "$m"
	done
}

# What a test left behind, one line each.
residue() {
	local c t m x cfs=/sys/kernel/config/nvmet
	for c in /sys/class/nvme/nvme*; do
		[ -e "$c/transport" ] || continue
		t=$(cat "$c/transport" 2>/dev/null)
		[ "$t" = pcie ] && continue
		echo "controller $(basename "$c") ($t, $(cat "$c/state" 2>/dev/null))"
	done
	for m in $(our_modules); do
		[ -d "/sys/module/$m/sections" ] || [ -e "/sys/module/$m/refcnt" ] || continue
		echo "module $m loaded, reference count $(cat "/sys/module/$m/refcnt" 2>/dev/null)"
	done
	for x in "$cfs"/subsystems/* "$cfs"/ports/* "$cfs"/hosts/*; do
		[ -e "$x" ] && echo "nvmet ${x#"$cfs"/}"
	done
	rdma link show 2>/dev/null | awk '$1 == "link" { print "rdma link " $2 }'
	for x in /sys/class/net/nrp-*; do
		[ -e "$x" ] && echo "netdev $(basename "$x")"
	done
	x=$(cat /sys/module/nvme_core/parameters/multipath 2>/dev/null)
	[ -z "$x" ] || [ "$x" = "${boot_multipath:-$x}" ] ||
		echo "nvme_core multipath=$x (the boot's is $boot_multipath)"
	for m in $(intree_transports); do
		[[ " $boot_transports " == *" $m "* ]] || echo "module $m loaded (in-tree transport)"
	done
}

# Remove what residue() found, as far as it goes.
scrub() {
	local x y cfs=/sys/kernel/config/nvmet m
	nvme disconnect-all >/dev/null 2>&1
	for _ in $(seq 100); do
		residue | grep -q '^controller' || break
		sleep 0.2
	done
	for x in "$cfs"/ports/*; do
		[ -e "$x" ] || continue
		for y in "$x"/subsystems/*; do rm -f "$y"; done
		rmdir "$x"
	done
	for x in "$cfs"/subsystems/*; do
		[ -e "$x" ] || continue
		for y in "$x"/allowed_hosts/*; do rm -f "$y"; done
		for y in "$x"/namespaces/*; do
			[ -e "$y" ] || continue
			echo 0 >"$y/enable"
			rmdir "$y"
		done
		rmdir "$x"
	done
	for x in "$cfs"/hosts/*; do [ -e "$x" ] && rmdir "$x"; done
	for x in $(rdma link show 2>/dev/null | awk '$1 == "link" { print $2 }'); do
		rdma link delete "${x%/*}"
	done
	for x in /sys/class/net/nrp-*; do
		[ -e "$x" ] && ip link del "$(basename "$x")"
	done
	for m in $(our_modules); do
		[ -e "/sys/module/$m/refcnt" ] && modprobe -r "$m"
	done
	for m in $(intree_transports); do
		[[ " $boot_transports " == *" $m "* ]] || modprobe -r "$m"
	done
	x=$(cat /sys/module/nvme_core/parameters/multipath 2>/dev/null)
	[ -z "$x" ] || [ "$x" = "${boot_multipath:-$x}" ] || unload_tree nvme_core
} >/dev/null 2>&1

# Unload $1 and first every module that holds it.
unload_tree() {
	local h
	for h in /sys/module/"$1"/holders/*; do
		[ -e "$h" ] && unload_tree "${h##*/}"
	done
	modprobe -r "$1"
}

# A failed test's kernel log, from its start line on, beside the job's
# output (dmesg-NAME.txt), where tools/testing/run-all.sh points to it:
# later tests may push it out of the kernel's buffer before the boot ends.
save_klog() { # NAME
	[ -d /nrp-job ] && [ -w /nrp-job ] || return 0
	# from the last start line of this name (a list may name a test
	# twice), compared as a string: two passes, no growing buffer, which
	# mawk and busybox awk copy on every line
	dmesg >/tmp/nrp-klog.txt
	awk -v m="nrp-selftest: start $1" '
		NR == FNR { if (substr($0, length($0) - length(m) + 1) == m) s = FNR; next }
		s && FNR >= s' /tmp/nrp-klog.txt /tmp/nrp-klog.txt \
		>"/nrp-job/dmesg-$1.txt" 2>/dev/null
	rm -f /tmp/nrp-klog.txt
}

# nvme_core's multipath as the boot sets it: the kernel command line's,
# else the module's default (Y where CONFIG_NVME_MULTIPATH is on)
boot_multipath=$(tr ' ' '\n' </proc/cmdline | sed -n 's/^nvme_core\.multipath=//p' | tail -n1)
case $boot_multipath in
[yY1]*)	boot_multipath=Y ;;
[nN0]*)	boot_multipath=N ;;
*)	modprobe -q nvme_core
	boot_multipath=$(cat /sys/module/nvme_core/parameters/multipath 2>/dev/null) ;;
esac

# the in-tree transports the boot loaded (none, in our guests)
boot_transports=$(intree_transports | tr '\n' ' ')

debug_locks() {
	awk '$1 == "debug_locks:" { print $2 }' /proc/lockdep_stats 2>/dev/null
}
limit=600
if [ "${1:-}" = -t ]; then
	limit=$2
	shift 2
fi
if [ $# -gt 0 ]; then
	tests=("$@")
else
	# test_pair_*.sh need two guests (tools/vm/run-pair.sh), the topology
	# test a guest of its own: named only
	mapfile -t tests < <(ls test_*.sh | grep -v -e '^test_pair_' -e '^test_nrp_check_topology\.sh$')
fi

echo "TAP version 13"
echo "1..${#tests[@]}"
n=0 pass=0 fail=0 skip=0
locks_before=$(debug_locks)
locks_start=$locks_before
# off already (a report while booting): no test of this boot would be
# checked by it
if [ -n "$locks_start" ]; then
	echo "# lockdep at the start: debug_locks $locks_start (1: on)"
	[ "$locks_start" = 1 ] ||
		echo "# lockdep is off before the first test: see the boot's report in the kernel log"
else
	echo "# lockdep at the start: none (no /proc/lockdep_stats)"
fi
# what the boot itself left (none expected) is not the first test's
[ -z "$(residue)" ] || { residue | sed 's/^/# before the first test: /'; scrub; }
for t in "${tests[@]}"; do
	n=$((n + 1))
	# NAME@VARIANT: not "pass", the count of passed tests
	rdma= variant= core_mp=
	case $t in *@*) variant=${t##*@}; t=${t%@*} ;; esac
	case $variant in
	mpn)	core_mp=N ;;
	*)	rdma=$variant ;;
	esac
	t=${t%.sh}
	t=test_${t#test_}.sh
	name=${t%.sh}
	name=${name#test_}${variant:+@$variant}
	echo "# --- $name"
	echo "nrp-selftest: start $name" >/dev/kmsg
	start=$SECONDS
	t_limit=$(sed -n 's/^# nrp-timeout: *\([0-9][0-9]*\)$/\1/p' "$t" | head -n1)
	[ "${t_limit:-0}" -gt "$limit" ] || t_limit=$limit
	NRP_RDMA_TYPE=${rdma:-${NRP_RDMA_TYPE:-rxe}} NRP_CORE_MULTIPATH=$core_mp \
		timeout -k 10 "$t_limit" bash "./$t" 2>&1 | sed -u 's/^/# /' >"/tmp/nrp-$name.log"
	rc=${PIPESTATUS[0]}
	cat "/tmp/nrp-$name.log"
	# A test that ran out of time is mostly stuck in the kernel: the
	# blocked tasks' stacks go to the log (and the test's saved log
	# below) before the cleanup below can disturb them.
	case $rc in 124|137) echo w >/proc/sysrq-trigger 2>/dev/null ;; esac
	left=$(residue)
	if [ -n "$left" ]; then
		echo "$left" | sed 's/^/# left behind: /'
		scrub
		still=$(residue)
		[ -z "$still" ] || echo "$still" | sed 's/^/# could not remove: /'
	fi
	locks=$(debug_locks)
	echo "nrp-selftest: end $name rc=$rc" >/dev/kmsg
	dur=$((SECONDS - start))
	if [ "$rc" = 0 ] || [ "$rc" = 4 ]; then
		if [ -n "$left" ]; then
			echo "not ok $n $name # left behind: $(echo "$left" | paste -sd, -), ${dur}s"
			fail=$((fail + 1))
			save_klog "$name"
			continue
		fi
		if [ -n "$locks" ] && [ "$locks" != 1 ] && [ "$locks_before" = 1 ]; then
			echo "not ok $n $name # lockdep turned itself off (debug_locks $locks): see its report in the log, ${dur}s"
			fail=$((fail + 1))
			locks_before=$locks
			save_klog "$name"
			continue
		fi
	fi
	locks_before=$locks
	case $rc in
	0)	echo "ok $n $name # ${dur}s"; pass=$((pass + 1)) ;;
	4)	why=$(grep '^# SKIP: ' "/tmp/nrp-$name.log" | tail -n1 | sed 's/^# SKIP: //')
		echo "ok $n $name # SKIP ${why:-no reason given}"; skip=$((skip + 1)) ;;
	124|137) echo "not ok $n $name # TIMEOUT after ${t_limit}s"; fail=$((fail + 1)) ;;
	*)	echo "not ok $n $name # exit $rc, ${dur}s"; fail=$((fail + 1)) ;;
	esac
	case $rc in 0|4) ;; *) save_klog "$name" ;; esac
done
echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:$skip error:0"
# on a kernel with lockdep, the proof that it checked to the end
locks=$(debug_locks)
if [ -n "$locks" ]; then
	echo "# lockdep at the end: debug_locks $locks (1: on)"
else
	echo "# lockdep at the end: none (no /proc/lockdep_stats)"
fi
[ "$fail" = 0 ] || exit 1
[ -z "$locks_start$locks" ] || { [ "$locks_start" = 1 ] && [ "$locks" = 1 ]; }
