#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build the Debian package on the host for the guests' package tests
# (test_deb_*.sh, run-guest.sh --deb): "make deb" of the tree as it is,
# committed in a private git copy, and once more after one more commit, so
# that the second is a newer version of the same source (the upgrade).
#
#   tools/vm/build-deb.sh [--root]
#
# --root: for a Debian 13 guest (run-guest.sh --root): headers/ holds the
# Debian 13 root's kernel headers instead (tools/vm/debian-root.sh).
# Prints a directory with 1/ and 2/ (each one nvme-rdma-p2p-dkms_*.deb),
# the files version1 and version2, and headers/: the linux-headers package
# of every supported series' stock kernel, as the set-up installed it, for
# a test that takes one series' headers away and installs them again (from
# apt's cache, else downloaded once). The result is kept until what the
# package is made of changes.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

in_root=()
variant=
if [ "${1:-}" = --root ]; then
	in_root=("$NRP_TOP/tools/vm/debian-root.sh" --for user run --)
	variant=-debian13
fi

for t in dpkg-buildpackage dh_dkms; do
	command -v $t >/dev/null || nrp_die "$t missing (tools/setup.sh installs debhelper and dh-dkms)"
done
files() {
	if git -C "$NRP_TOP" rev-parse --git-dir >/dev/null 2>&1; then
		git -C "$NRP_TOP" ls-files -z --cached --others --exclude-standard
	else
		(cd "$NRP_TOP" && find . \( -path ./.build -o -path ./.gen -o -path ./.git \) -prune -o \
			-type f ! -name '*.o' ! -name '*.ko' ! -name '.*.cmd' ! -name '*.deb' -print0)
	fi
}
# What the package is made of (debian/rules, tools/make-deb.sh), and this
# recipe; the headers of each series by their package version.
heads=()
for s in $("${in_root[@]}" "$NRP_TOP/scripts/kernel-series.sh" here); do
	rel=$("${in_root[@]}" "$NRP_TOP/scripts/kernel-series.sh" installed "$s") ||
		nrp_die "no linux-headers of Linux $s installed (run tools/setup.sh)"
	ver=$("${in_root[@]}" dpkg-query -W -f='${Version}' "linux-headers-$rel")
	heads+=("linux-headers-$rel=$ver")
done
key=$( { (cd "$NRP_TOP" && files |
	  grep -zE '^(\./)?(dkms\.conf|Kbuild|Makefile|drivers/|include/|scripts/|debian/|tools/make-deb\.sh|tools/nrp-stat|tools/nrp-check|tools/modprobe\.d/)' |
	  sort -z | xargs -0 sha256sum 2>/dev/null)
	 cat "$0"; echo "${heads[@]}"; } | sha256sum | cut -c1-12)
base=$NRP_TOP/.build/deb-guest$variant
d=$base/$key
if [ -e "$d/.done" ]; then
	echo "$d"
	exit 0
fi
mkdir -p "$base"
exec 9>"$base/.lock"
flock 9
if [ -e "$d/.done" ]; then
	echo "$d"
	exit 0
fi
rm -rf "${base:?}"/*/
mkdir -p "$d/tree" "$d/1" "$d/2" "$d/headers"
(cd "$NRP_TOP" && files | xargs -0 cp --parents -t "$d/tree" 2>/dev/null) || true
[ -x "$d/tree/tools/make-deb.sh" ] || nrp_die "copying the tree to $d failed"
g=(git -C "$d/tree" -c user.name=nrp-test -c user.email=nrp-test@example.invalid)
"${g[@]}" init -q && "${g[@]}" add -A && "${g[@]}" commit -q -m "the tree as it is" ||
	nrp_die "cannot commit the copy in $d/tree"
t0=$SECONDS
"$d/tree/tools/make-deb.sh" "$d/1" >"$d/build1.log" 2>&1 ||
	{ cat "$d/build1.log" >&2; nrp_die "make deb failed"; }
"${g[@]}" commit -q --allow-empty -m "one commit more" || nrp_die "second commit failed"
"$d/tree/tools/make-deb.sh" "$d/2" >"$d/build2.log" 2>&1 ||
	{ cat "$d/build2.log" >&2; nrp_die "make deb (the second) failed"; }
for i in 1 2; do
	dpkg-deb -f "$d"/$i/nvme-rdma-p2p-dkms_*_all.deb Version >"$d/version$i"
done
dpkg --compare-versions "$(cat "$d/version2")" gt "$(cat "$d/version1")" ||
	nrp_die "the second package ($(cat "$d/version2")) is not newer than the first ($(cat "$d/version1"))"
rm -rf "$d/tree"

for h in "${heads[@]}"; do
	p=${h%=*} v=${h#*=}
	# this host's apt cache holds its own series' headers, never the
	# Debian 13 root's (find: no match is no error under pipefail)
	f=
	[ -n "$variant" ] ||
		f=$(find /var/cache/apt/archives -maxdepth 1 -name "${p}_${v//:/%3a}_*.deb" -print -quit)
	if [ -n "$f" ]; then
		cp "$f" "$d/headers/"
	else
		"${in_root[@]}" bash -c 'cd "$1" && apt-get download -q "$2" >/dev/null' \
			download "$d/headers" "$h" ||
			nrp_die "$p $v is neither in apt's cache nor downloadable"
	fi
done
touch "$d/.done"
nrp_log "packages $(cat "$d/version1") and $(cat "$d/version2") in $((SECONDS - t0)) s: $d"
echo "$d"
