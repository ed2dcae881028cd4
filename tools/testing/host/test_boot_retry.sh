#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A guest whose kernel dies while booting, before the guest's job started,
# is booted once more (run-all.sh's suite_run: stock 7.3 under
# multi-threaded TCG oopses now and then on a text-patching int3 before
# anything of ours ran), and the summary says so; a second death, or a
# death once the job started (the suite's own modprobe, a test), is the
# boot's failure as before. Stand-in guests (fixtures/stub-run-guest.sh)
# that die so, on a console whose lines end in CRLF.
. "$(dirname "$0")/lib.sh"
stub=$TOP/tools/testing/host/fixtures/stub-run-guest.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

boot() { # MODE: run-all.sh on a stand-in stock guest of MODE; its status in rc
	rc=0
	NRP_STUB_MODE=$1 NRP_RUN_GUEST=$stub "$TOP/tools/testing/run-all.sh" --no-setup \
		--no-host-tests --kernels stock --out "$work/$1" module_load >"$work/$1.log" 2>&1 || rc=$?
	boots=$(grep -c . "$work/$1/guest-stock.boots.txt" 2>/dev/null)
}
has() { grep -qF -- "$2" "$work/$1.log" || { cat "$work/$1.log"; fail "$1: no '$2'"; }; }

boot died-once
[ "$rc" = 0 ] || { cat "$work/died-once.log"; fail "died-once: run-all.sh exited $rc: a boot that died before its first test and then passed"; }
[ "$boots" = 2 ] || fail "died-once: $boots boots, not 2"
has died-once "PASS  stock/module_load"
has died-once "booted twice (the kernel died while booting"
has died-once "  stock                Oops: int3: 0000 [#1] SMP NOPTI, the first console: $work/died-once/guest-stock.died-early.console.log"
grep -q $'\r' "$work/died-once.log" && fail "died-once: a carriage return of the console in the summary"
[ -s "$work/died-once/guest-stock.died-early.console.log" ] || fail "died-once: the first boot's console is gone"
has died-once "2 passed, 0 failed"
echo "died while booting, once: booted twice, passed, and the summary says so"

boot died-twice
[ "$rc" != 0 ] || { cat "$work/died-twice.log"; fail "died-twice: a kernel that died on both boots passed"; }
[ "$boots" = 2 ] || fail "died-twice: $boots boots, not 2"
has died-twice "FAIL  stock/guest-completed"
echo "died while booting, both boots: $(grep -c '^FAIL' "$work/died-twice.log") results fail, no third boot"

boot died-in-job
[ "$rc" != 0 ] || { cat "$work/died-in-job.log"; fail "died-in-job: a kernel that died once the job started passed"; }
[ "$boots" = 1 ] || fail "died-in-job: $boots boots: a death once the guest's job started is not retried"
has died-in-job "FAIL  stock/"
echo "died once the job started, before its first test: not booted again, $(grep -c '^FAIL' "$work/died-in-job.log") results fail"

boot died-in-test
[ "$rc" != 0 ] || { cat "$work/died-in-test.log"; fail "died-in-test: a kernel that died in a test passed"; }
[ "$boots" = 1 ] || fail "died-in-test: $boots boots: a death once a test began is not retried"
grep -q "booted twice" "$work/died-in-test.log" && fail "died-in-test: the summary calls it retried"
has died-in-test "FAIL  stock/"
echo "died once a test began: not booted again, $(grep -c '^FAIL' "$work/died-in-test.log") results fail"
exit 0
