# SPDX-License-Identifier: GPL-2.0
# Host-side tests: exit 0 pass, 1 fail, 4 skip (kselftest codes).
set -u
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
. "$TOP/tools/vm/lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
# The runner's stand-in runs here need no calibration of the machine
# (tools/vm/calibrate.sh: seconds each): as fast as the fastest, unless a
# test says otherwise.
export NRP_HOST_RATIO=${NRP_HOST_RATIO:-100}
# The set-up ran before these tests: the stock headers not being there is a
# failure of the set-up, not a reason to skip.
STOCK_KDIR=$("$TOP/scripts/kernel-series.sh" kdir "$NRP_SERIES") || fail "no stock kernel headers"
skip() { echo "SKIP: $*"; exit 4; }

# The kernel series a test covers: every supported one. Those this
# machine's Debian carries, series_native prints for the test's own loop
# (or just NRP_TEST_SERIES, the one it was started for); for each of the
# others (Debian 13's 7.x on a Debian 12 host) series_in_root runs this
# same test in the Debian 13 root (tools/vm/debian-root.sh), where that
# series is native, and fails the test if it fails there.
series_native() {
	local s
	if [ -n "${NRP_TEST_SERIES:-}" ]; then
		echo "$NRP_TEST_SERIES"
		return
	fi
	for s in $("$TOP/scripts/kernel-series.sh" list); do
		"$TOP/scripts/kernel-series.sh" native "$s" && echo "$s"
	done
}
series_in_root() {
	local s
	[ -z "${NRP_TEST_SERIES:-}" ] || return 0
	for s in $("$TOP/scripts/kernel-series.sh" list); do
		"$TOP/scripts/kernel-series.sh" native "$s" && continue
		echo "== Linux $s: this test in the Debian 13 root"
		NRP_SERIES=$s NRP_TEST_SERIES=$s "$TOP/tools/vm/debian-root.sh" --for user \
			run -- bash "$(cd "$(dirname "$0")" && pwd)/$(basename "$0")" ||
			fail "Linux $s, in the Debian 13 root: see above"
	done
}

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
