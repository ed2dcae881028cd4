#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# "make deb": build the Debian package nvme-rdma-p2p-dkms_<version>_all.deb
# from debian/ with debhelper and dh-dkms, in a copy of the tree, and put
# it into OUTDIR (default: the top of the checkout). Prints its path.
#
#   tools/make-deb.sh [OUTDIR]
#
# The version is dkms.conf's PACKAGE_VERSION, then, in a git checkout,
# "+git<commits>.<commit>": every later commit makes a newer package, so an
# upgrade replaces the module (0.1+git230.1a2b3c4). DEB_VERSION=
# overrides it. What is packaged is the checkout's files as they are, as
# git would put them into a commit (tracked and new, not ignored).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$top}
die() { echo "nvme-rdma-p2p: $*" >&2; exit 1; }

for t in dpkg-buildpackage:dpkg-dev dh:debhelper dh_dkms:dh-dkms; do
	command -v "${t%%:*}" >/dev/null ||
		die "${t%%:*} missing: apt-get install ${t#*:} (tools/setup.sh installs it)"
done
base=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$top/dkms.conf")
[ -n "$base" ] || die "no PACKAGE_VERSION in $top/dkms.conf"
# only this checkout's own history, not that of a repository around it
git=
if [ "$(git -C "$top" rev-parse --show-toplevel 2>/dev/null)" = "$top" ]; then
	git=1
fi
if [ -z "${DEB_VERSION:-}" ]; then
	DEB_VERSION=$base
	if [ -n "$git" ] && count=$(git -C "$top" rev-list --count HEAD 2>/dev/null); then
		DEB_VERSION+="+git$count.$(git -C "$top" rev-parse --short=7 HEAD)"
	fi
fi
dpkg --validate-version "$DEB_VERSION" 2>/dev/null ||
	die "'$DEB_VERSION' is no Debian version"

work=$top/.build/deb
src=$work/nvme-rdma-p2p-$DEB_VERSION
rm -rf "$work"
mkdir -p "$src"
if [ -n "$git" ]; then
	(cd "$top" && git ls-files -z --cached --others --exclude-standard |
		xargs -0 cp --parents -t "$src" 2>/dev/null) || true
else
	(cd "$top" && find . \( -path ./.build -o -path ./.gen -o -path ./.git \) -prune -o \
		-type f ! -name '*.o' ! -name '*.ko' ! -name '.*.cmd' ! -name '*.deb' \
		-print0 | xargs -0 cp --parents -t "$src")
fi
[ -x "$src/debian/rules" ] || die "copying the tree to $src failed"
# the changelog's top entry names the version being built
sed -i "1s/^nvme-rdma-p2p ([^)]*)/nvme-rdma-p2p ($DEB_VERSION)/" "$src/debian/changelog"

(cd "$src" && dpkg-buildpackage -b --no-sign -Zxz >"$work/build.log" 2>&1) || {
	tail -n 30 "$work/build.log" >&2
	die "dpkg-buildpackage failed, see $work/build.log"
}
deb=nvme-rdma-p2p-dkms_${DEB_VERSION}_all.deb
[ -e "$work/$deb" ] || die "dpkg-buildpackage made no $deb"
mkdir -p "$out"
cp "$work/$deb" "$out/"
echo "$out/$deb"
