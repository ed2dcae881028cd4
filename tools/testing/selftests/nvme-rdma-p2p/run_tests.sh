#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Run the in-guest suite as TAP (kselftest conventions): every test_*.sh is
# one test point; exit 0 passes, 4 skips, anything else fails.
#
#   run_tests.sh [-t SECONDS] [TEST...]
#
# Default: every test_*.sh but test_pair_*.sh, which need the host guest of
# tools/vm/run-pair.sh and run when named.
#
# TEST is a name like module_load or test_module_load.sh. NAME@siw runs the
# test over siw (NRP_RDMA_TYPE=siw) and reports it as NAME@siw, so one boot
# runs the rxe and the siw pass.
#
# A test that runs longer than its limit is killed and fails. The limit is
# -t, or a line "# nrp-timeout: SECONDS" in the test when that is longer.
cd "$(dirname "$0")" || exit 1
limit=600
if [ "${1:-}" = -t ]; then
	limit=$2
	shift 2
fi
if [ $# -gt 0 ]; then
	tests=("$@")
else
	# test_pair_*.sh need two guests (tools/vm/run-pair.sh): named only
	mapfile -t tests < <(ls test_*.sh | grep -v '^test_pair_')
fi

echo "TAP version 13"
echo "1..${#tests[@]}"
n=0 pass=0 fail=0 skip=0
for t in "${tests[@]}"; do
	n=$((n + 1))
	rdma=
	case $t in *@*) rdma=${t##*@}; t=${t%@*} ;; esac
	t=${t%.sh}
	t=test_${t#test_}.sh
	name=${t%.sh}
	name=${name#test_}${rdma:+@$rdma}
	echo "# --- $name"
	echo "nrp-selftest: start $name" >/dev/kmsg
	start=$SECONDS
	t_limit=$(sed -n 's/^# nrp-timeout: *\([0-9][0-9]*\)$/\1/p' "$t" | head -n1)
	[ "${t_limit:-0}" -gt "$limit" ] || t_limit=$limit
	NRP_RDMA_TYPE=${rdma:-${NRP_RDMA_TYPE:-rxe}} \
		timeout -k 10 "$t_limit" bash "./$t" 2>&1 | sed -u 's/^/# /' >"/tmp/nrp-$name.log"
	rc=${PIPESTATUS[0]}
	cat "/tmp/nrp-$name.log"
	echo "nrp-selftest: end $name rc=$rc" >/dev/kmsg
	dur=$((SECONDS - start))
	case $rc in
	0)	echo "ok $n $name # ${dur}s"; pass=$((pass + 1)) ;;
	4)	why=$(grep '^# SKIP: ' "/tmp/nrp-$name.log" | tail -n1 | sed 's/^# SKIP: //')
		echo "ok $n $name # SKIP ${why:-no reason given}"; skip=$((skip + 1)) ;;
	124|137) echo "not ok $n $name # TIMEOUT after ${t_limit}s"; fail=$((fail + 1)) ;;
	*)	echo "not ok $n $name # exit $rc, ${dur}s"; fail=$((fail + 1)) ;;
	esac
done
echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:$skip error:0"
[ "$fail" = 0 ]
