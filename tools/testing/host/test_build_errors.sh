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

expect_refusal "KDIR='/nonexistent'" KDIR=/nonexistent
expect_refusal "KSRC='/tmp/nrp-no-such-tree'" KSRC=/tmp/nrp-no-such-tree

# A source tree of another version: the message names both versions.
fake=$t/fake-src
mkdir -p "$fake/drivers/nvme/host"
printf 'kernelversion:\n\t@echo 6.1.191\n' >"$fake/Makefile"
touch "$fake/drivers/nvme/host/nvme.h" "$fake/drivers/nvme/host/fabrics.h"
kver=$(make -s -C "$STOCK_KDIR" kernelversion)
expect_refusal "version 6.1.191, but KDIR=.* is $kver" KSRC="$fake"
[ -e "$t/nvme-rdma-p2p.ko" ] && fail "a module was built despite the mismatch"
exit 0
