#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# On a kernel with lockdep (run-all.sh's kernel_has), lockdep must be on
# before the first test and still on after the last, as run_tests.sh
# prints it (issue 45): a report while booting turns it off, and then the
# whole boot runs unchecked with every test passing. run-all.sh runs the
# debug kernel (marked built in a scratch cache) on a stand-in guest
# (fixtures/stub-run-guest.sh) that prints lockdep's state as
# NRP_STUB_LOCKDEP says: on at both ends passes debug/lockdep-on; off
# before the first test, off after the last, no lockdep at all and no
# line at the end of a finished run each fail it. A kernel without
# lockdep (stock 6.12) gets no such result. And run_tests.sh prints the
# lines the runner reads.
. "$(dirname "$0")/lib.sh"
stub=$TOP/tools/testing/host/fixtures/stub-run-guest.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cache=$work/cache
mkdir -p "$cache/kernel"
ln -s "$NRP_CACHE/src" "$cache/src"
d=$(NRP_CACHE=$cache bash -c ". '$TOP/tools/vm/lib.sh'; nrp_use_kernel debug; nrp_kernel_dir debug")
mkdir -p "$d" && touch "$d/.done"

lockdep() { # NAME "START END" EXPECT RESULT [KERNEL]
	local name=$1 rc=0
	NRP_CACHE=$cache NRP_STUB_MODE=record NRP_STUB_LOCKDEP=$2 NRP_RUN_GUEST=$stub \
		"$TOP/tools/testing/run-all.sh" --no-setup --no-host-tests --kernels "${5:-debug}" \
		--out "$work/$name" module_load >"$work/$name.log" 2>&1 || rc=$?
	case $3/$rc in
	pass/0 | fail/[1-9]*) ;;
	*)	cat "$work/$name.log"; fail "$name (lockdep '$2'): run-all.sh exited $rc, the run should $3" ;;
	esac
	if [ -n "$4" ]; then
		grep -q "^$4" "$work/$name.log" || { cat "$work/$name.log"; fail "$name: no '$4'"; }
		echo "$name (lockdep at the start, the end: $2): $(grep "^$4" "$work/$name.log")"
	fi
}
lockdep on "1 1" pass "PASS  debug/lockdep-on  (on from before the first test to after the last)"
lockdep off-at-boot "0 0" fail "FAIL  debug/lockdep-on  (off before the first test (debug_locks 0"
lockdep off-at-end "1 0" fail "FAIL  debug/lockdep-on  (off after the last test (debug_locks 0"
lockdep none "none none" fail "FAIL  debug/lockdep-on  (the kernel has no lockdep"
lockdep no-start "- 1" fail "FAIL  debug/lockdep-on  (no lockdep state before the first test"
lockdep no-end "1 -" fail "FAIL  debug/lockdep-on  (no lockdep state after the last test"
lockdep stock "none none" pass "" stock-6.12
grep -q lockdep-on "$work/stock.log" && { cat "$work/stock.log"; fail "a lockdep result on stock 6.12, which has none"; }
echo "stock-6.12: no lockdep result"

# the lines as run_tests.sh prints them, which the stand-in copies
rt=$TOP/tools/testing/selftests/nvme-rdma-p2p/run_tests.sh
for l in 'echo "# lockdep at the start: debug_locks $locks_start (1: on)"' \
	'echo "# lockdep at the start: none (no /proc/lockdep_stats)"' \
	'echo "# lockdep at the end: debug_locks $locks (1: on)"' \
	'echo "# lockdep at the end: none (no /proc/lockdep_stats)"'; do
	grep -qF "$l" "$rt" || fail "run_tests.sh does not print: $l"
done
echo "run_tests.sh prints lockdep's state at the start and at the end"
exit 0
