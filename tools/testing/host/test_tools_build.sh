#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Every tool the guests run is built here too, from a fresh tree and
# warning-free: the host tools (tools/*/Makefile marked nrp-host-tool,
# which tools/vm/run-guest.sh builds before each boot) and the fixture
# modules (tools/*/Kbuild, which tools/vm/build-module.sh builds for each
# guest kernel) for the stock kernel of every supported series. A tool that
# stops compiling fails here, named, not only as guests that never boot.
. "$(dirname "$0")/lib.sh"
t=$(scratch_tree)
trap 'rm -rf "$t"' EXIT
n=0
# the host tools once, on the host (in the Debian 13 root the fixture
# modules only: the guests run the host's own tools)
for mk in "$t"/tools/*/Makefile; do
	[ -z "${NRP_TEST_SERIES:-}" ] || break
	grep -q '^# nrp-host-tool' "$mk" || continue
	d=$(dirname "$mk")
	name=$(basename "$d")
	make -C "$d" CFLAGS="-O2 -g -Werror" >"$t/$name.log" 2>&1 ||
		{ tail -n 20 "$t/$name.log"; fail "host tool $name does not build"; }
	grep -q 'not built' "$t/$name.log" && fail "host tool $name was not built: $(cat "$t/$name.log")"
	echo "host tool $name: built"
	n=$((n + 1))
done
[ -n "${NRP_TEST_SERIES:-}" ] || [ "$n" -gt 0 ] || fail "no host tool found"
for series in $(series_native); do
	kdir=$("$TOP/scripts/kernel-series.sh" kdir "$series") ||
		fail "no stock headers of Linux $series installed"
	for kb in "$t"/tools/*/Kbuild; do
		d=$(dirname "$kb")
		name=$(basename "$d")
		make -C "$kdir" M="$d" clean >/dev/null 2>&1
		make -C "$kdir" M="$d" W=1 modules >"$t/$name-$series.log" 2>&1 ||
			{ tail -n 20 "$t/$name-$series.log"; fail "fixture module $name does not build for Linux $series"; }
		grep -q 'warning:' "$t/$name-$series.log" &&
			{ grep 'warning:' "$t/$name-$series.log"; fail "fixture module $name: warnings for Linux $series"; }
		echo "fixture module $name: built for Linux $series ($(basename "$kdir"))"
	done
done
series_in_root
exit 0
