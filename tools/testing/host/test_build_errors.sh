#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A wrong or missing KDIR/KSRC stops the build with one line that says what
# is wrong, before the compiler runs.
. "$(dirname "$0")/lib.sh"
t=$(scratch_tree)
trap 'rm -rf "$t"' EXIT

expect_refusal() { # PATTERN MAKE-ARGS...
	local pat=$1 out
	shift
	out=$(make -C "$t" "$@" 2>&1) && fail "make $* succeeded"
	echo "make $*:"
	echo "$out" | grep '^nvme-rdma-p2p:' | sed 's/^/    /'
	echo "$out" | grep -q "^nvme-rdma-p2p: .*$pat" || { echo "$out"; fail "no clear message for make $*"; }
	echo "$out" | grep -qE '\.[ch]:[0-9]+:.*error' && fail "compiler ran for make $*"
	return 0
}

# (once, on the host: they name no series)
if [ -z "${NRP_TEST_SERIES:-}" ]; then
	expect_refusal "KDIR='/nonexistent'" KDIR=/nonexistent
	expect_refusal "KSRC='/tmp/nrp-no-such-tree'" KSRC=/tmp/nrp-no-such-tree
fi

# A source tree of another version: the message names both versions. For
# each supported series: one of its own series but another release, and
# one of the other series (6.1 sources for 6.12 headers and back).
fake=$t/fake-src
mkdir -p "$fake/drivers/nvme/host"
touch "$fake/drivers/nvme/host/nvme.h" "$fake/drivers/nvme/host/fabrics.h"
for series in $(series_native); do
	kdir=$("$TOP/scripts/kernel-series.sh" kdir "$series") ||
		fail "no stock headers of Linux $series installed"
	kver=$(make -s -C "$kdir" kernelversion)
	case "$series" in 6.1) other=6.12.1 ;; *) other=6.1.191 ;; esac
	for fver in "$series.1" "$other"; do
		printf 'kernelversion:\n\t@echo %s\n' "$fver" >"$fake/Makefile"
		expect_refusal "version $fver, but KDIR=.* is $kver" KDIR="$kdir" KSRC="$fake"
		[ -e "$t/nvme-rdma-p2p.ko" ] && fail "a module was built despite the mismatch"
	done
done
series_in_root
exit 0
