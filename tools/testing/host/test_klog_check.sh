#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A kernel log check that cannot decide fails the boot; it never passes it.
# classify-splats.py exits 2, not 0 or 1, on a known-splats.conf it cannot
# read or a malformed line of it (a line short of fields, a count that is
# no number, a regex that does not compile), and 0 and 1 stay the verdicts
# clean and reports. check-klog.sh (run-guest.sh's check of a boot) leaves
# the verdict "error: ..." then, with status 2. Then the runner, in a copy
# of the tree whose known-splats.conf has a malformed line, on stand-ins
# that judge their guests' logs with that copy's checker
# (fixtures/stub-run-guest.sh, stub-run-pair.sh): the guest and both
# guests of a pair, and a target boot a test killed on purpose, each fail
# KERNEL/kernel-log-checked, and a guest whose log no checker judged
# fails too. With the tree's own file the same runs pass.
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
classify=$TOP/tools/vm/classify-splats.py
conf=$TOP/tools/vm/known-splats.conf

# the verdicts: a clean log 0, a report 1 (with its line)
printf 'nothing wrong\n' >"$work/clean.log"
printf 'BUG: kernel NULL pointer dereference, address: 0000000000000000\n' >"$work/bug.log"
rc=0
"$classify" --series 6.1 "$conf" "$work/clean.log" >"$work/out" 2>&1 || rc=$?
[ "$rc" = 0 ] || fail "a clean log: status $rc: $(cat "$work/out")"
rc=0
"$classify" --series 6.1 "$conf" "$work/bug.log" >"$work/out" 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q '^unknown: .*BUG: kernel NULL' "$work/out" ||
	fail "a BUG: status $rc: $(cat "$work/out")"
echo "classify-splats.py: clean log 0, a BUG 1"

# each kind of broken configuration: status 2, the reason on stderr
good=$(grep -v '^#' "$conf" | grep . | head -n1)
[ -n "$good" ] || fail "no entry in $conf to break"
i=0
while IFS= read -r bad; do
	i=$((i + 1))
	printf '# a comment\n%s\n' "$bad" >"$work/bad$i.conf"
	for log in clean bug; do
		rc=0
		"$classify" --series 6.1 "$work/bad$i.conf" "$work/$log.log" \
			>"$work/out" 2>"$work/err" || rc=$?
		[ "$rc" = 2 ] || fail "conf line '$bad', $log log: status $rc, not 2 ($(cat "$work/out" "$work/err"))"
		grep -q "bad$i.conf:2: " "$work/err" ||
			fail "conf line '$bad': no reason with the line's place: $(cat "$work/err")"
		grep -q Traceback "$work/err" && fail "conf line '$bad': a traceback, not a reason: $(cat "$work/err")"
	done
	echo "broken line '${bad:0:40}': status 2, $(cat "$work/err")"
done <<EOF
$(echo "$good" | cut -d'|' -f1-4)
$(echo "$good" | awk -F'|' -v OFS='|' '{ $3 = "two"; print }')
$(echo "$good" | awk -F'|' -v OFS='|' '{ $4 = "BUG: ("; print }')
$(echo "$good" | awk -F'|' -v OFS='|' '{ $5 = "[unclosed"; print }')
$(echo "$good" | awk -F'|' -v OFS='|' '{ $3 = "0"; print }')
EOF
rc=0
"$classify" --series 6.1 "$work/missing.conf" "$work/clean.log" >/dev/null 2>"$work/err" || rc=$?
[ "$rc" = 2 ] || fail "a missing known-splats.conf: status $rc, not 2"
echo "missing configuration: status 2, $(cat "$work/err")"

# check-klog.sh: its verdict in a guest's directory, and its status
klog() { # TREE DIR CONSOLE-LINE: check-klog.sh's status, the verdict in DIR
	mkdir -p "$2"
	printf '%s\n' "$3" >"$2/console.log"
	local rc=0
	"$1/tools/vm/check-klog.sh" --kernel stock "$2" >/dev/null 2>&1 || rc=$?
	echo "$rc $(cat "$2/klog-verdict" 2>/dev/null)"
}
got=$(klog "$TOP" "$work/g-clean" "nothing wrong")
[ "$got" = "0 clean" ] || fail "check-klog.sh, a clean log: '$got'"
got=$(klog "$TOP" "$work/g-bug" "BUG: unable to handle page fault")
[ "$got" = "1 problems" ] && grep -q '^unknown' "$work/g-bug/splats.txt" ||
	fail "check-klog.sh, a BUG: '$got'"
mkdir -p "$work/g-none"
rc=0
"$TOP/tools/vm/check-klog.sh" --kernel stock "$work/g-none" >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q '^error: no console.log' "$work/g-none/klog-verdict" ||
	fail "check-klog.sh without a console.log: status $rc, $(cat "$work/g-none/klog-verdict" 2>/dev/null)"
echo "check-klog.sh: clean 0, a BUG 1, no console.log 2"

# A copy of the tree with a malformed known-splats.conf line.
tree=$(scratch_tree)
trap 'rm -rf "$work" "$tree"' EXIT
echo 'malformed|6.1|1' >>"$tree/tools/vm/known-splats.conf"
badline=$(wc -l <"$tree/tools/vm/known-splats.conf")
got=$(klog "$tree" "$work/g-broken" "nothing wrong")
case $got in
"2 error: "*"known-splats.conf:"*) echo "check-klog.sh, broken configuration: $got" ;;
*) fail "check-klog.sh with a malformed known-splats.conf line: '$got', not status 2 and an error" ;;
esac

# run-all.sh of TREE on its stand-ins; "pass" or "fail" expected, then the
# results that must be there
runner() { # TREE NAME EXPECT RESULT... (-- run-all.sh arguments)
	local t=$1 name=$2 want=$3 rc=0 r
	shift 3
	local must=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do must+=("$1"); shift; done
	shift
	NRP_RUN_GUEST=$t/tools/testing/host/fixtures/stub-run-guest.sh \
		NRP_RUN_PAIR=$t/tools/testing/host/fixtures/stub-run-pair.sh \
		NRP_PAIR_KERNELS=stock-6.12 "$t/tools/testing/run-all.sh" --no-setup --no-host-tests \
		--kernels stock-6.12 --out "$work/$name" "$@" >"$work/$name.log" 2>&1 || rc=$?
	case $want/$rc in
	pass/0) ;;
	fail/0)	cat "$work/$name.log"; fail "$name: the run passed" ;;
	pass/*)	cat "$work/$name.log"; fail "$name: the run failed" ;;
	esac
	for r in "${must[@]}"; do
		grep -q "^$r" "$work/$name.log" || { cat "$work/$name.log"; fail "$name: no '$r'"; }
	done
	if [ "$want" = fail ]; then
		grep -qE '^[0-9]+ passed, [1-9][0-9]* failed' "$work/$name.log" ||
			fail "$name: the summary does not count the failure"
		grep -q 'kernel-log-clean' "$work/$name.log" &&
			{ cat "$work/$name.log"; fail "$name: a kernel-log-clean result for a log nobody could judge"; }
	fi
	echo "$name: $(grep -c '^FAIL' "$work/$name.log") failed: $(grep '^FAIL' "$work/$name.log" | cut -c7- | cut -d' ' -f1 | xargs)"
}
runner "$TOP" good pass "PASS  stock-6.12/kernel-log-clean" -- module_load
runner "$tree" broken fail "FAIL  stock-6.12/kernel-log-checked  (classify-splats.py exited 2: .*known-splats.conf:$badline: 3 fields" -- module_load
# a guest whose log was never judged: no verdict, no pass
NRP_STUB_MODE=unchecked runner "$TOP" unchecked fail \
	"FAIL  stock-6.12/kernel-log-checked  (no verdict" -- module_load
# a pair, and a target boot killed on purpose
NRP_STUB_PAIR_KILLED=1 runner "$TOP" pair-good pass "PASS  stock-6.12/pair-host/kernel-log-clean" \
	"PASS  stock-6.12/pair-target/kernel-log-clean" \
	"PASS  stock-6.12/pair-target.1/kernel-log-clean" -- pair_link_loss
NRP_STUB_PAIR_KILLED=1 runner "$tree" pair-broken fail "FAIL  stock-6.12/pair-host/kernel-log-checked" \
	"FAIL  stock-6.12/pair-target/kernel-log-checked" \
	"FAIL  stock-6.12/pair-target.1/kernel-log-checked" -- pair_link_loss

# The real run-guest.sh, its QEMU a stand-in that leaves what a guest whose
# job passed leaves, and the checker crashed as issue 45 found it: status
# 1 and nothing printed (a python3 in PATH that does so for
# classify-splats.py alone). The boot fails, run-guest.sh with status 1,
# run-all.sh with stock/kernel-log-checked.
mkdir -p "$work/bin"
cat >"$work/bin/qemu-system-x86_64" <<'EOS'
#!/bin/bash
for a in "$@"; do
	case $a in local,path=*,mount_tag=job,*) d=${a#local,path=}; d=${d%%,mount_tag=job*} ;; esac
done
printf '%s\n' "TAP version 13" "1..1" "# --- module_load" "ok 1 module_load # 1s" >"$d/output.txt"
echo 0 >"$d/exit-status"
echo "[    0.000000] Linux version (QEMU stand-in)"
EOS
py=$(command -v python3)
cat >"$work/bin/python3" <<EOS
#!/bin/bash
case \${1:-} in */classify-splats.py) exit 1 ;; esac
exec "$py" "\$@"
EOS
chmod +x "$work/bin/qemu-system-x86_64" "$work/bin/python3"
rc=0
PATH=$work/bin:$PATH "$TOP/tools/vm/run-guest.sh" --kernel stock --out "$work/crashed" \
	-- true >"$work/crashed.log" 2>&1 || rc=$?
v=$(cat "$work/crashed/klog-verdict" 2>/dev/null)
[ "$rc" = 1 ] && [[ $v == "error: classify-splats.py exited 1 without a report"* ]] ||
	{ tail -n 20 "$work/crashed.log"; fail "run-guest.sh with a crashed checker: status $rc, verdict '$v'"; }
echo "run-guest.sh, crashed checker: status $rc, $v"
rc=0
PATH=$work/bin:$PATH "$TOP/tools/testing/run-all.sh" --no-setup --no-host-tests --kernels stock \
	--out "$work/crashed-all" module_load >"$work/crashed-all.log" 2>&1 || rc=$?
[ "$rc" != 0 ] && grep -q '^FAIL  stock/kernel-log-checked' "$work/crashed-all.log" &&
	! grep -q 'kernel-log-clean' "$work/crashed-all.log" ||
	{ cat "$work/crashed-all.log"; fail "run-all.sh with a crashed checker: status $rc"; }
echo "run-all.sh, crashed checker: $(grep '^FAIL' "$work/crashed-all.log")"
exit 0
