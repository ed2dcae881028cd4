#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The kernel log check of one guest boot, run by run-guest.sh once QEMU is
# gone: the console, dmesg.txt and the kmemleak reports in DIR sorted by
# tools/vm/classify-splats.py against tools/vm/known-splats.conf.
#
#   tools/vm/check-klog.sh --kernel NAME DIR
#
# Leaves in DIR:
#   klog-verdict       one line: "clean", "problems", or "error: WHY"
#                      when the check itself failed (no verdict on the log)
#   splats.txt         the reports, when any is not a known upstream one
#   known-splats.txt   the known upstream reports, when all are
# Exit status: 0 clean, 1 problems, 2 the check failed. A failed check is
# never taken for a clean log: the checker's status must agree with what it
# printed (1 with an unknown report, 0 without), and console.log must be
# there to read.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

kernel=
while [ $# -gt 0 ]; do
	case $1 in
	--kernel)	kernel=$2; shift 2 ;;
	-*)		nrp_die "unknown option $1" ;;
	*)		break ;;
	esac
done
[ $# = 1 ] && [ -n "$kernel" ] || nrp_die "usage: check-klog.sh --kernel NAME DIR"
out=$1
nrp_use_kernel "$kernel"

rm -f "$out"/{klog-verdict,splats.txt,known-splats.txt,klog-check.err}
verdict() { echo "$1" >"$out/klog-verdict"; }
if [ ! -r "$out/console.log" ]; then
	verdict "error: no console.log in $out to check"
	exit 2
fi
rc=0
"$NRP_TOP/tools/vm/classify-splats.py" --series "$NRP_SERIES" \
	"$NRP_TOP/tools/vm/known-splats.conf" \
	"$out/console.log" "$out/dmesg.txt" "$out"/kmemleak*.txt \
	>"$out/splats.txt" 2>"$out/klog-check.err" || rc=$?
unknown=$(grep -c '^unknown' "$out/splats.txt")
why=$(tail -n1 "$out/klog-check.err" | sed 's/^classify-splats\.py: error: //')
case $rc/$unknown in
0/0)	verdict clean ;;
1/0)	verdict "error: classify-splats.py exited 1 without a report: ${why:-no reason given}" ;;
1/*)	verdict problems ;;
0/*)	verdict "error: classify-splats.py exited 0 with $unknown unknown reports" ;;
*)	verdict "error: classify-splats.py exited $rc: ${why:-no reason given}" ;;
esac
[ -s "$out/klog-check.err" ] || rm -f "$out/klog-check.err"
case $(cat "$out/klog-verdict") in
clean)	# known upstream reports only, or none
	[ ! -s "$out/splats.txt" ] || mv "$out/splats.txt" "$out/known-splats.txt"
	rm -f "$out/splats.txt"
	exit 0 ;;
problems)
	exit 1 ;;
*)	exit 2 ;;
esac
