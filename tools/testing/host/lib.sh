# SPDX-License-Identifier: GPL-2.0
# Host-side tests: exit 0 pass, 1 fail, 4 skip (kselftest codes).
set -u
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
. "$TOP/tools/vm/lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
# The set-up ran before these tests: the stock headers not being there is a
# failure of the set-up, not a reason to skip.
STOCK_KDIR=$("$TOP/scripts/kernel-series.sh" kdir "$NRP_SERIES") || fail "no stock kernel headers"
skip() { echo "SKIP: $*"; exit 4; }

# A scratch copy of the tracked tree, as a fresh clone would have it.
scratch_tree() {
	local d
	d=$(mktemp -d)
	if git -C "$TOP" rev-parse --git-dir >/dev/null 2>&1; then
		(cd "$TOP" && git ls-files -z --cached --others --exclude-standard |
			xargs -0 cp --parents -t "$d" 2>/dev/null)
	else
		# an exported tree without git: take it whole, minus build output
		cp -a "$TOP/." "$d/"
		rm -rf "$d/.gen" "$d/.build"
		find "$d" \( -name '*.o' -o -name '*.ko' -o -name '.*.cmd' \) -delete
	fi
	echo "$d"
}
