#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The set-up's and the runner's awk programs give the same answers, with no
# warning, under the three awks a Debian machine may call "awk": mawk (the
# default), gawk and busybox's. Each one in turn is put first in PATH as
# "awk"; then scripts/kernel-series.sh answers for every supported series
# (what tools/setup.sh installs by and the Makefile builds with), and
# run-all.sh reduces the TAP output of stand-in guests (passing, failing,
# short of its plan), as with mawk. gawk once warned about "\." on every
# run, and busybox awk found no kernel at all.
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stub=$TOP/tools/testing/host/fixtures/stub-run-guest.sh

awks=(mawk gawk "busybox awk")
for a in "${awks[@]}"; do
	set -- $a
	command -v "$1" >/dev/null || fail "$1 is missing (tools/setup.sh installs mawk, gawk and busybox-static)"
done

# what one awk makes of it all: answers on stdout, warnings in $work/NAME.err
run_with() { # NAME AWK...
	local name=$1 s m
	shift
	mkdir -p "$work/bin-$name"
	printf '#!/bin/sh\nexec %s "$@"\n' "$*" >"$work/bin-$name/awk"
	chmod +x "$work/bin-$name/awk"
	(
		export PATH=$work/bin-$name:$PATH
		for s in $(series_native); do
			echo "installed $s: $("$TOP/scripts/kernel-series.sh" installed "$s")"
			echo "kdir $s: $("$TOP/scripts/kernel-series.sh" kdir "$s")"
			echo "image $s: $("$TOP/scripts/kernel-series.sh" image "$s")"
		done
		for m in pass short; do
			NRP_STUB_MODE=$m NRP_RUN_GUEST=$stub "$TOP/tools/testing/run-all.sh" \
				--no-setup --no-host-tests --kernels stock-6.12 \
				--out "$work/$name-$m" module_load 2>&1 |
				grep -E '^(PASS|FAIL|SKIP) |passed,' | sed "s|$work/[^/]*/||"
		done
	) 2>"$work/$name.err"
}

run_with mawk mawk >"$work/mawk.out"
grep -q "^installed 6.1: " "$work/mawk.out" || fail "mawk: no answer: $(cat "$work/mawk.out" "$work/mawk.err")"
for a in "${awks[@]}"; do
	name=${a// /-}
	[ "$name" = mawk ] || run_with "$name" $a >"$work/$name.out"
	if grep -i 'warning' "$work/$name.err"; then
		fail "$a: warnings (above)"
	fi
	diff "$work/mawk.out" "$work/$name.out" >/dev/null ||
		{ diff "$work/mawk.out" "$work/$name.out"; fail "$a answers differently from mawk"; }
	echo "$a: $(grep -c . "$work/$name.out") answers as mawk's, no warning"
done
exit 0
