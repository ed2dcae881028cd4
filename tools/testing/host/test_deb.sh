#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# "make deb" (README: install with the package): in a fresh copy of the
# tree it builds nvme-rdma-p2p-dkms_<version>_all.deb, lintian reports no
# error and no warning, and the package holds what it must: the module's
# build files under /usr/src/nvme-rdma-p2p-<version> (with a dkms.conf of
# that version, and enough to build the module: "make" of dkms.conf runs
# on them here), nrp-stat and nrp-check as commands with man pages, the
# modprobe.d drop-in as a conffile whose "install" line is commented out,
# and nothing of the tests. A later commit makes a newer version; a tree
# without git gets dkms.conf's version.
#
# The installs themselves (apt install, DKMS for both series, purge,
# upgrade) run in guests: test_deb_*.sh.
. "$(dirname "$0")/lib.sh"
for t in dpkg-buildpackage dh_dkms lintian; do
	command -v $t >/dev/null || fail "$t missing (tools/setup.sh installs debhelper, dh-dkms, lintian)"
done
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
base=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$TOP/dkms.conf")
[ -n "$base" ] || fail "no PACKAGE_VERSION in dkms.conf"

# A fresh clone: the tree as it is, committed once.
src=$(scratch_tree)
mv "$src" "$t/tree"
g=(git -C "$t/tree" -c user.name=test -c user.email=test@example.invalid)
"${g[@]}" init -q && "${g[@]}" add -A && "${g[@]}" commit -q -m one ||
	fail "cannot make a git tree of the checkout"

# make deb; prints the package's path
build() { # TREE
	local log=$t/make-deb.log out
	if ! make -s -C "$1" deb >"$log" 2>&1; then
		tail -n 30 "$log"
		fail "make deb in $1 failed"
	fi
	out=$(tail -n 1 "$log")
	[ -f "$out" ] || fail "make deb named no package: $(cat "$log")"
	echo "$out"
}
lint() { # DEB
	local out rc=0
	lintian --fail-on error,warning "$1" >"$t/lintian.log" 2>&1 || rc=$?
	# (as root it says "running with root privileges is not recommended!")
	out=$(grep -v 'root privileges' "$t/lintian.log")
	[ "$rc" = 0 ] && ! echo "$out" | grep -q '^[EW]:' ||
		fail "lintian on $(basename "$1") (exit $rc): $out"
	echo "lintian $(basename "$1"): no errors, no warnings${out:+ ($out)}"
}
field() { dpkg-deb -f "$1" "$2"; }

t0=$SECONDS
deb=$(build "$t/tree")
echo "make deb: $(basename "$deb") in $((SECONDS - t0)) s"
v1=$(field "$deb" Version)
case $v1 in
"$base+git1."*) ;;
*) fail "version '$v1' is not $base+git1.<commit>" ;;
esac
[ "$(basename "$deb")" = "nvme-rdma-p2p-dkms_${v1}_all.deb" ] || fail "package named $(basename "$deb")"
[ "$(field "$deb" Architecture)" = all ] || fail "Architecture: $(field "$deb" Architecture)"
echo "$(field "$deb" Depends)" | grep -qE '(^|, )dkms( |,|$)' || fail "Depends: $(field "$deb" Depends)"
echo "$(field "$deb" Depends)" | grep -qE '(^|, )python3(,|$)' || fail "no python3 in Depends (nrp-stat)"
echo "$(field "$deb" Recommends)" | grep -q 'linux-source-6.1' || fail "Recommends: $(field "$deb" Recommends)"
lint "$deb"

# --- contents --------------------------------------------------------------
x=$t/x
dpkg-deb -R "$deb" "$x" || fail "dpkg-deb -R failed"
usrc=$x/usr/src/nvme-rdma-p2p-$v1
[ -d "$usrc" ] || fail "no /usr/src/nvme-rdma-p2p-$v1: $(ls "$x/usr/src")"
[ "$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$usrc/dkms.conf")" = "$v1" ] ||
	fail "dkms.conf in the package: $(grep PACKAGE_VERSION "$usrc/dkms.conf")"
diff <(grep -v '^PACKAGE_VERSION=' "$usrc/dkms.conf") <(grep -v '^PACKAGE_VERSION=' "$TOP/dkms.conf") >/dev/null ||
	fail "the package's dkms.conf differs from the tree's beyond its version"
for p in Kbuild Makefile drivers include scripts; do
	diff -r "$TOP/$p" "$usrc/$p" >/dev/null || fail "/usr/src/.../$p differs from the tree's"
done
for s in private-headers.sh compat-probe.sh dkms-check.sh dkms-kernels.sh kernel-series.sh; do
	[ -x "$usrc/scripts/$s" ] || fail "scripts/$s is not executable in the package"
done
left=$(cd "$usrc" && ls -A | grep -vxE 'Kbuild|Makefile|dkms.conf|drivers|include|scripts')
[ -z "$left" ] || fail "more than the module's build files in /usr/src: $left"
cmp -s "$x/usr/bin/nrp-stat" "$TOP/tools/nrp-stat" && [ -x "$x/usr/bin/nrp-stat" ] ||
	fail "/usr/bin/nrp-stat is not tools/nrp-stat, executable"
[ -e "$x/usr/share/man/man1/nrp-stat.1.gz" ] || fail "no man page of nrp-stat"
if [ -e "$TOP/tools/nrp-check" ]; then
	cmp -s "$x/usr/bin/nrp-check" "$TOP/tools/nrp-check" || fail "/usr/bin/nrp-check is not tools/nrp-check"
else
	[ ! -e "$x/usr/bin/nrp-check" ] || fail "/usr/bin/nrp-check without tools/nrp-check"
fi
conf=$x/etc/modprobe.d/nvme-rdma-p2p.conf
grep -qx /etc/modprobe.d/nvme-rdma-p2p.conf "$x/DEBIAN/conffiles" ||
	fail "the drop-in is no conffile: $(cat "$x/DEBIAN/conffiles")"
grep -q '^install' "$conf" && fail "the drop-in routes nvme_rdma without the admin: $(grep '^install' "$conf")"
[ "$(sed -n 's/^#install /install /p' "$conf")" = "$(grep '^install ' "$TOP/tools/modprobe.d/nvme-rdma-p2p.conf")" ] ||
	fail "the commented line of the drop-in is not tools/modprobe.d's: $(grep 'install' "$conf")"
grep -q "remove the \"#\"" "$conf" || fail "the drop-in does not say how to enable it"
grep -q 'nvme-rdma-p2p.conf' "$x/usr/share/doc/nvme-rdma-p2p-dkms/README.Debian" ||
	fail "README.Debian does not explain the drop-in"
grep -q 'dkms-kernels.sh' "$x/DEBIAN/postinst" && grep -q 'dkms remove' "$x/DEBIAN/prerm" ||
	fail "postinst/prerm do not build and remove with DKMS"
tests=$(dpkg-deb -c "$deb" | grep -E 'testing|selftests|\.o$|\.ko|/debian/')
[ -z "$tests" ] || fail "the package ships what it must not: $tests"
echo "contents: /usr/src/nvme-rdma-p2p-$v1 ($(dpkg-deb -c "$deb" | grep -c '/usr/src/.*[^/]$') files), /usr/bin/$(ls "$x/usr/bin" | paste -sd,), the drop-in off"

# What DKMS's MAKE runs, on the package's files: nothing is missing.
cp -a "$usrc" "$t/build"
make -s -C "$t/build" KDIR="$STOCK_KDIR" modules >"$t/build.log" 2>&1 ||
	{ tail -n 20 "$t/build.log"; fail "the module does not build from the package's files"; }
[ -e "$t/build/nvme-rdma-p2p.ko" ] || fail "no nvme-rdma-p2p.ko built from the package's files"
echo "the package's /usr/src tree builds the module for $(basename "$STOCK_KDIR")"

# --- a later commit is a newer version; nrp-check lands --------------------
if [ ! -e "$t/tree/tools/nrp-check" ]; then
	# until tools/nrp-check is on main: the packaging installs it once it is
	printf '#!/bin/sh\necho "nrp-check stand-in"\n' >"$t/tree/tools/nrp-check"
	chmod +x "$t/tree/tools/nrp-check"
fi
"${g[@]}" add -A && "${g[@]}" commit -q --allow-empty -m two || fail "second commit"
deb2=$(build "$t/tree")
v2=$(field "$deb2" Version)
dpkg --compare-versions "$v2" gt "$v1" || fail "the later commit's version $v2 is not newer than $v1"
dpkg-deb -c "$deb2" >"$t/contents2" || fail "dpkg-deb -c $deb2 failed"
grep -q ' ./usr/bin/nrp-check$' "$t/contents2" || fail "no /usr/bin/nrp-check in $v2"
grep -q 'man1/nrp-check.1.gz$' "$t/contents2" || fail "no man page of nrp-check in $v2"
lint "$deb2"
echo "a later commit: $v2 > $v1, with /usr/bin/nrp-check"

# --- a tree without git: dkms.conf's version ---------------------------------
rm -rf "$t/tree/.git" "$t/tree/.build" "$t"/tree/*.deb
deb3=$(build "$t/tree")
[ "$(field "$deb3" Version)" = "$base" ] || fail "without git: version $(field "$deb3" Version), not $base"
echo "without git: version $base"
exit 0
