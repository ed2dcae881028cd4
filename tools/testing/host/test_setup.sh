#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tools/setup.sh's parts (make demo installs "build", then "demo" while
# the guest kernel builds): each is a part of the whole set, the build
# part of the demo part, so nothing make check needs is left to the demo's
# and nothing the demo runs is left out of it; each runs and finds nothing
# missing on a machine the whole set-up ran on; a bad part is refused.
. "$(dirname "$0")/lib.sh"
setup=$TOP/tools/setup.sh

# The package names of the arrays $1... in setup.sh, one a line, sorted.
names() {
	local a
	for a in "$@"; do
		awk -v a="$a" 'index($0, a "=(") == 1 { on = 1; sub(/^[^(]*\(/, "") }
			on { x = $0; sub(/#.*/, "", x); print x; if (x ~ /\)/) on = 0 }' "$setup" |
			tr ' \t()' '\n\n\n\n' | grep -E '^[a-z0-9][a-z0-9.+-]+$'
	done | sort -u
}
build=$(names build_tools)
demo=$(names build_tools guest_tools)
all=$(names build_tools guest_tools suite_tools)
[ "$(echo "$build" | wc -l)" -ge 8 ] || fail "cannot read build_tools from setup.sh: '$build'"
for p in make gcc flex bison libelf-dev libssl-dev; do
	echo "$build" | grep -qx "$p" || fail "the build part lacks $p"
done
for p in qemu-system-x86 busybox-static nvme-cli rdma-core iproute2 python3; do
	echo "$demo" | grep -qx "$p" || fail "the demo part lacks $p, which a guest run uses"
done
[ -z "$(comm -23 <(echo "$build") <(echo "$demo"))" ] || fail "build is not part of demo"
[ -z "$(comm -23 <(echo "$demo") <(echo "$all"))" ] || fail "demo is not part of the whole set"
for part in build demo; do
	out=$("$setup" --for "$part" --series "$NRP_SERIES" 2>&1) || fail "--for $part failed: $out"
	echo "$out" | grep -q "packages ($part) ready" || fail "--for $part: no 'ready' line: $out"
	echo "$out" | grep -q installing && fail "--for $part installed after the whole set-up: $out"
done
out=$("$setup" --for nothing 2>&1) && fail "--for nothing was accepted"
echo "$out" | grep -q -- "--for: build or demo, not 'nothing'" || fail "--for nothing: '$out'"
echo "parts: build $(echo "$build" | wc -l), demo $(echo "$demo" | wc -l), all $(echo "$all" | wc -l) packages (and linux-source; all adds the stock kernels and headers)"
exit 0
