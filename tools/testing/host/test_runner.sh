#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The runner fails what did not run. run-all.sh is run on guests that
# never booted or left too little behind (a stand-in for run-guest.sh,
# fixtures/stub-run-guest.sh), and each must end with a failure named
# for it; only the complete guest passes. Then, for real, a clone whose
# tools/p2p-checkpoint does not compile, and one whose module does not:
# run-guest.sh stops before QEMU with its own status (3), and make check's
# runner counts that as a failed kernel, not as a clean boot.
. "$(dirname "$0")/lib.sh"
stub=$TOP/tools/testing/host/fixtures/stub-run-guest.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# run-all.sh on the stand-in, kernel stock-6.12 (its foreign module is
# the stock 6.1 one, whose build needs no guest kernel), one test.
stub_run() { # MODE
	NRP_STUB_MODE=$1 NRP_RUN_GUEST=$stub "$TOP/tools/testing/run-all.sh" \
		--no-setup --no-host-tests --kernels stock-6.12 --out "$work/$1" \
		module_load >"$work/$1.log" 2>&1
}

expect_fail() { # MODE RESULT-NAME
	if stub_run "$1"; then
		cat "$work/$1.log"
		fail "a guest of kind '$1' passed"
	fi
	grep -q "^FAIL  $2" "$work/$1.log" || { cat "$work/$1.log"; fail "'$1': no failure named $2"; }
	grep -qE '^[0-9]+ passed, [1-9][0-9]* failed' "$work/$1.log" ||
		fail "'$1': the summary does not count the failure"
	echo "$1: $(grep "^FAIL  $2" "$work/$1.log")"
}

stub_run pass || { cat "$work/pass.log"; fail "the complete stand-in guest did not pass"; }
grep -q '^PASS  stock-6.12/module_load' "$work/pass.log" || fail "no pass for stock-6.12/module_load"
echo "pass: $(tail -n1 "$work/pass.log")"
# The progress line's time left weighs each test by its expected time,
# at the pace of the tests done: module_load (35 s by run-all.sh's table)
# took about 6 s (4 to 6 at the runner's 2-s polls), so many_ctrls (380
# s) should take 40 to 60, of which it has had at most 6. A count of tests (1 of 2) would say the time so
# far again, boot included; this says at least twice that.
NRP_STUB_MODE=slow NRP_PROGRESS_EVERY=1 NRP_RUN_GUEST=$stub "$TOP/tools/testing/run-all.sh" \
	--no-setup --no-host-tests --kernels stock-6.12 --out "$work/slow" \
	module_load many_ctrls >"$work/slow.log" 2>&1 || { cat "$work/slow.log"; fail "the slow stand-in guest did not pass"; }
secs() { # "[M min ]S s" of nrp_dur
	echo "$1" | sed -n 's/^\(\([0-9]*\) min \)\{0,1\}\([0-9]*\) s$/\2 \3/p' |
		{ read -r a b; [ -n "$b" ] || { [ -n "$a" ] && b=$a a=0; }; echo $((${a:-0} * 60 + ${b:-0})); }
}
lines=$(grep -E 'guest stock-6.12 \(many_ctrls\): 1 of 2 tests \(50%\), .* left$' "$work/slow.log")
[ -n "$lines" ] || { cat "$work/slow.log"; fail "no progress line with a time left while many_ctrls ran"; }
while read -r line; do
	el=$(secs "$(echo "$line" | sed -n 's/.*(50%), \(.*\), about.*/\1/p')")
	left=$(secs "$(echo "$line" | sed -n 's/.*about \(.*\) left$/\1/p')")
	[ "$el" -gt 0 ] && [ "$left" -ge $((2 * el)) ] ||
		fail "time left not weighed by the tests' expected times: '$line' ($el s, $left s left)"
	echo "progress: $line"
done <<<"$lines"

expect_fail preboot "stock-6.12/guest-booted"
expect_fail no-output "stock-6.12/tap-plan"
expect_fail no-plan "stock-6.12/tap-plan"
expect_fail short "stock-6.12/tap-plan"
expect_fail no-status "stock-6.12/guest-completed"

# The real run-guest.sh on broken clones: status 3 before any QEMU starts.
broken_clone() { # NAME FILE
	local t=$work/$1
	mkdir -p "$t"
	(cd "$TOP" && git ls-files -z --cached --others --exclude-standard |
		xargs -0 cp --parents -t "$t" 2>/dev/null)
	echo 'this does not compile;' >>"$t/$2"
	echo "$t"
}
for b in "tool tools/p2p-checkpoint/p2p-checkpoint.c" \
	 "module drivers/nvme/host/rdma_p2p_main.c"; do
	read -r name file <<<"$b"
	t=$(broken_clone "$name" "$file")
	rc=0
	# (30 minutes: a host test runs at SCHED_IDLE beside the guests)
	timeout 1800 "$t/tools/vm/run-guest.sh" --kernel stock --out "$work/$name-guest" \
		-- true >"$work/$name-guest.log" 2>&1 || rc=$?
	[ "$rc" = 3 ] || { tail -n 20 "$work/$name-guest.log"; fail "run-guest.sh with a broken $name: status $rc, not 3"; }
	[ -e "$work/$name-guest/console.log" ] && fail "a guest booted with a broken $name"
	echo "broken $name: run-guest.sh status 3, no guest"
	rc=0
	"$t/tools/testing/run-all.sh" --no-setup --no-host-tests --kernels stock \
		--out "$work/$name-all" module_load >"$work/$name-all.log" 2>&1 || rc=$?
	[ "$rc" != 0 ] || { cat "$work/$name-all.log"; fail "run-all.sh passed with a broken $name"; }
	grep -q '^FAIL  stock/guest-booted' "$work/$name-all.log" ||
		{ cat "$work/$name-all.log"; fail "run-all.sh with a broken $name: no stock/guest-booted failure"; }
	echo "broken $name: run-all.sh: $(tail -n1 "$work/$name-all.log")"
done
exit 0
