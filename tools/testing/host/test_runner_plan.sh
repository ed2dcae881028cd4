#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# What the check tier runs where when NRP_KERNELS adds kernels it does not
# boot by default, which no default run reaches: stock 6.12 gets its own
# list (the core paths 6.12 changed, the module's checks and
# authentication), and the debug kernel without the p2p kernel its
# default tests on top of the P2P set, with the debug test limit, without
# what its config lacks, and without authentication exactly when stock
# 6.12 runs it; beside the p2p kernel (the default) its own list alone. run-all.sh runs
# on a stand-in for run-guest.sh that records each guest's command
# (fixtures/stub-run-guest.sh, mode record); the debug kernel is marked
# built in a scratch cache, so nothing boots and no kernel is built.
. "$(dirname "$0")/lib.sh"
stub=$TOP/tools/testing/host/fixtures/stub-run-guest.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A scratch cache: the debug and P2PDMA kernels "built", the source shared with
# the real cache (the foreign module for stock 6.1 is built from it).
cache=$work/cache
mkdir -p "$cache/kernel"
ln -s "$NRP_CACHE/src" "$cache/src"
for k in debug p2p p2p-6.12 debug-6.12; do
	d=$(NRP_CACHE=$cache bash -c ". '$TOP/tools/vm/lib.sh'; nrp_use_kernel $k; nrp_kernel_dir $k")
	mkdir -p "$d" && touch "$d/.done"
done

plan() { # NAME KERNELS... [-- TEST...]: run the tier's plan (NRP_TIER, default check)
	local name=$1 ks=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do ks+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	# no shape guests unless asked (NRP_SHAPE_SMP), or their default
	# (PLAN_SHAPE_DEFAULT=1)
	local shape=(NRP_SHAPE_SMP="${NRP_SHAPE_SMP-}")
	[ -z "${PLAN_SHAPE_DEFAULT:-}" ] || shape=(-u NRP_SHAPE_SMP)
	env "${shape[@]}" NRP_CACHE=$cache NRP_STUB_MODE=record NRP_RUN_GUEST=$stub \
		NRP_TOPOLOGY= "$TOP/tools/testing/run-all.sh" --tier "${NRP_TIER:-check}" --no-setup --no-host-tests \
		--kernels "${ks[*]}" --out "$work/$name" "$@" >"$work/$name.log" 2>&1 ||
		{ tail -n 30 "$work/$name.log"; fail "$name: run-all.sh on the stand-in failed"; }
}
job() { # RUN BOOT: the tests (words after run_tests.sh) of that boot
	local f=$work/$1/guest-$2/job.txt
	[ -s "$f" ] || fail "$1: no guest $2 ran (no $f)"
	sed 's/.*run_tests\.sh//' "$f"
}
has() { [[ " $1 " == *" $2 "* ]]; }

plan s612 stock-6.12
got=$(job s612 stock-6.12 | xargs)
want="module_load transport_registered wrong_kernel connect fio_verify reset_during_io teardown_live auth"
[ "$got" = "$want" ] || fail "stock-6.12 in the check tier runs '$got', not '$want'"
echo "stock-6.12: $got"

plan both debug stock-6.12
d=$(job both debug)
has "$d" "-t 2400" || fail "debug boot without the debug test limit: $d"
for t in module_load transport_registered gpu_standin teardown_reaper; do
	has "$d" "$t" || fail "debug boot lacks its default test $t: $d"
done
for t in pi_namespace dkms_load many_ctrls shape_cpus shape_fabric deb_install; do
	has "$d" "$t" && fail "debug boot runs $t, which its config lacks: $d"
done
has "$d" auth && fail "debug boot runs auth although stock-6.12 runs it: $d"
has "$(job both stock-6.12)" auth || fail "stock-6.12 beside debug lost auth"
echo "debug beside stock-6.12: $(echo "$d" | wc -w) words, auth on stock-6.12"

# debug-6.12: the user-space path under the checkers, raw and files, in
# both tiers (--list: what each boot would run, nothing run; a full tier
# run on the stand-in would run make demo, and build its kernel)
for tier in check full; do
	NRP_CACHE=$cache "$TOP/tools/testing/run-all.sh" --tier $tier --kernels debug-6.12 --list \
		--out "$work/dbg612$tier" >"$work/dbg612$tier.log" 2>&1 ||
		{ cat "$work/dbg612$tier.log"; fail "run-all.sh --tier $tier --list failed"; }
	d=$(sed -n 's/^guest debug-6.12: //p' "$work/dbg612$tier.log")
	[ -n "$d" ] || { cat "$work/dbg612$tier.log"; fail "$tier tier: --list named no debug-6.12 boot"; }
	for t in p2p_user_raw p2p_user_fs p2p_multipath heads_during_free; do
		has "$d" $t || fail "debug-6.12 in the $tier tier lacks $t: $d"
	done
done
echo "debug-6.12: p2p_user_raw, p2p_user_fs, p2p_multipath and heads_during_free in both tiers"

# Beside the p2p kernel (the check tier's default kernels) the debug boot
# runs its own short list and nothing else: the P2P set stays on p2p.
plan withp2p p2p debug
d=$(job withp2p debug | xargs)
want="-t 2400 module_load transport_registered gpu_standin teardown_reaper reset_during_io p2p_checkpoint p2p_multipath"
[ "$d" = "$want" ] || fail "debug beside p2p runs '$d', not '$want'"
has "$(job withp2p p2p)" p2p_checkpoint || fail "p2p beside debug lost p2p_checkpoint"
echo "debug beside p2p: $d"

# Named tests: a shape test runs in the shape guest alone, never in the
# kernel's own boot (where it would run at 2 CPUs, and on debug into
# what its config lacks).
NRP_SHAPE_SMP=2,maxcpus=240 plan named stock -- shape_fabric connect
got=$(job named stock | xargs)
[ "$got" = connect ] || fail "named shape_fabric connect: the stock boot runs '$got', not 'connect'"
got=$(job named stock-smp2-max240 | xargs)
[ "$got" = shape_fabric ] || fail "named shape_fabric connect: the shape guest runs '$got'"
echo "named: connect in the stock boot, shape_fabric in the shape guest"

# The full tier runs 6.12's P2P tests once more with multipath=N, in the
# same boot (which has Y): the P2P tests named get @mpn, the others not.
NRP_TIER=full NRP_SIW_KERNELS= plan mpn p2p-6.12 -- p2p_checkpoint sg_tables p2p_user_raw
got=$(job mpn p2p-6.12 | xargs)
want="p2p_checkpoint sg_tables p2p_user_raw p2p_checkpoint@mpn p2p_user_raw@mpn"
[ "$got" = "$want" ] || fail "full tier, p2p-6.12: runs '$got', not '$want'"
grep -q -- '--multipath Y' "$work/mpn/guest-p2p-6.12/job.txt" ||
	fail "full tier, p2p-6.12: the boot is not multipath=Y: $(cat "$work/mpn/guest-p2p-6.12/job.txt")"
grep -q -- '--smp 2 ' "$work/mpn/guest-p2p-6.12/job.txt" ||
	fail "full tier, p2p-6.12: the suite boot is not of 2 CPUs (6.12 under TCG has no hotpluggable ones): $(cat "$work/mpn/guest-p2p-6.12/job.txt")"
echo "full p2p-6.12: $got, in a multipath=Y boot of 2 CPUs"

# The full tier runs the multipath tests over siw too (issue 28).
NRP_TIER=full NRP_MPN_KERNELS= plan siwmp p2p-6.12 -- p2p_mpath_pathloss failover_queued
got=$(job siwmp p2p-6.12 | xargs)
want="p2p_mpath_pathloss failover_queued p2p_mpath_pathloss@siw failover_queued@siw"
[ "$got" = "$want" ] || fail "full tier, p2p-6.12 multipath tests: runs '$got', not '$want'"
echo "full p2p-6.12 multipath: $got"
# on 6.1 the tests that take a port away stay over rxe (run-all.sh says why)
NRP_TIER=full NRP_MPN_KERNELS= plan siwmp61 p2p -- p2p_mpath_pathloss p2p_mpath_ana
got=$(job siwmp61 p2p | xargs)
want="p2p_mpath_pathloss p2p_mpath_ana p2p_mpath_ana@siw"
[ "$got" = "$want" ] || fail "full tier, p2p: runs '$got', not '$want'"
echo "full p2p multipath: $got"

# The full tier boots p2p-6.12's shape guests too: 240 CPUs present, two
# online (6.12 under TCG makes no hotpluggable CPU possible), and 16.
NRP_TIER=full PLAN_SHAPE_DEFAULT=1 plan shape612 p2p-6.12 -- shape_cpus shape_fabric shape_hotplug
f=$work/shape612/guest-p2p-6.12-smp240-on2/job.txt
[ -s "$f" ] || fail "full tier, p2p-6.12: no shape guest of 240 CPUs, 2 online: $(ls "$work/shape612")"
grep -q -- '--smp 240 --online 2 ' "$f" || fail "full tier, p2p-6.12 shape guest: $(cat "$f")"
got=$(job shape612 p2p-6.12-smp240-on2 | xargs)
[ "$got" = "shape_cpus shape_fabric shape_hotplug" ] || fail "full tier, p2p-6.12 shape guest runs '$got'"
[ -s "$work/shape612/guest-p2p-6.12-smp16/job.txt" ] || fail "full tier, p2p-6.12: no 16-CPU shape guest"
[ -e "$work/shape612/guest-p2p-6.12-smp2-max240" ] && fail "full tier, p2p-6.12: a 2,maxcpus=240 guest, which 6.12 under TCG cannot be"
echo "full p2p-6.12 shape: $got with -smp 240, 2 online, and with 16"

# The check tier's stock shape guests: 240 CPUs present, 2 online (where
# shape_hotplug runs), and one CPU of two isolated (isolcpus=1: the queue
# map alone, shape_cpus).
PLAN_SHAPE_DEFAULT=1 plan shapestock stock -- shape_cpus shape_hotplug
f=$work/shapestock/guest-stock-smp2-isolcpus_1/job.txt
[ -s "$f" ] || fail "check tier, stock: no shape guest with isolcpus=1: $(ls "$work/shapestock")"
grep -q -- '--smp 2 --append isolcpus=1 ' "$f" || fail "check tier, stock isolcpus guest: $(cat "$f")"
got=$(job shapestock stock-smp2-isolcpus_1 | xargs)
[ "$got" = shape_cpus ] || fail "check tier, stock isolcpus guest runs '$got', not shape_cpus alone"
f=$work/shapestock/guest-stock-smp240-on2/job.txt
[ -s "$f" ] || fail "check tier, stock: no shape guest of 240 CPUs, 2 online: $(ls "$work/shapestock")"
grep -q -- '--smp 240 --online 2 ' "$f" || fail "check tier, stock 240/2 shape guest: $(cat "$f")"
got=$(job shapestock stock-smp240-on2 | xargs)
[ "$got" = "shape_cpus shape_hotplug" ] || fail "check tier, stock 240/2 shape guest runs '$got'"
# a boot of two CPUs present cannot take cpu1 offline with cpu2 left
NRP_SHAPE_SMP=2,maxcpus=240 plan shapemax stock -- shape_cpus shape_hotplug
got=$(job shapemax stock-smp2-max240 | xargs)
[ "$got" = shape_cpus ] || fail "a 2,maxcpus=240 shape guest runs '$got', not shape_cpus alone"
echo "check stock shape: -smp 240 with 2 online (shape_hotplug there), and -smp 2 with isolcpus=1"

# The full tier's stock shape guest of 64 online CPUs: shape_fabric stays
# where 16 or fewer are online (run-all.sh says why).
NRP_TIER=full PLAN_SHAPE_DEFAULT=1 plan shape64 stock -- shape_cpus shape_fabric shape_hotplug
got=$(job shape64 stock-smp64 | xargs)
[ "$got" = "shape_cpus shape_hotplug" ] || fail "full tier, stock 64-CPU shape guest runs '$got'"
got=$(job shape64 stock-smp240-on2 | xargs)
[ "$got" = "shape_cpus shape_fabric shape_hotplug" ] || fail "full tier, stock 240/2 shape guest runs '$got'"
echo "full stock shape: 64 online: $(job shape64 stock-smp64 | xargs)"

# The full tier runs each package test on one stock kernel (deb_once):
# deb_install on 6.12, deb_upgrade on 6.1, and every other test on both.
# (--list: what each boot would run, nothing run)
"$TOP/tools/testing/run-all.sh" --tier full --kernels "stock stock-6.12" --list \
	--out "$work/debfull" >"$work/debfull.log" 2>&1 ||
	{ cat "$work/debfull.log"; fail "run-all.sh --list failed"; }
s61=$(sed -n 's/^guest stock: //p' "$work/debfull.log")
s612=$(sed -n 's/^guest stock-6.12: //p' "$work/debfull.log")
[ -n "$s61" ] && [ -n "$s612" ] || { cat "$work/debfull.log"; fail "--list named no boot of stock or stock-6.12"; }
has "$s61" deb_upgrade || fail "full tier, stock: no deb_upgrade: $s61"
has "$s61" deb_install && fail "full tier, stock runs deb_install too: $s61"
has "$s612" deb_install || fail "full tier, stock-6.12: no deb_install: $s612"
has "$s612" deb_upgrade && fail "full tier, stock-6.12 runs deb_upgrade too: $s612"
for t in dkms_load many_ctrls fio_verify connect; do
	has "$s61" $t && has "$s612" $t || fail "full tier: $t is not on both stock kernels"
done
echo "full tier: deb_upgrade on stock, deb_install on stock-6.12, $(echo "$s61" | wc -w) and $(echo "$s612" | wc -w) tests"

plan alone debug
d=$(job alone debug)
has "$d" auth || fail "debug alone does not run auth, which then runs nowhere: $d"
echo "debug alone: auth runs there"

# the tables of expected seconds (the debug split, the time left of a
# progress line) name tests that exist: a renamed test would fall back
# to the default weight without a word
for table in debug_secs guest_secs; do
	names=$(sed -n "/^$table=\"/,/\"\$/p" "$TOP/tools/testing/run-all.sh" |
		tr ' \t"' '\n\n\n' | sed -n 's/^\([a-z0-9_]*\):[0-9]*$/\1/p')
	[ -n "$names" ] || fail "no $table table in run-all.sh"
	for t in $names; do
		[ -f "$TOP/tools/testing/selftests/nvme-rdma-p2p/test_$t.sh" ] ||
			fail "$table names $t, which is no test"
	done
	echo "$table: $(echo $names | wc -w) tests, each a test"
done
exit 0
