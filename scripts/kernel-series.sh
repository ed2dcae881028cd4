#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Which Debian stock kernel of a series (6.1, 6.12, ...) to build and test
# against. The one rule that both the set-up (what to install) and the
# Makefile (which KDIR to build with) follow, so the two cannot drift apart:
# the flavour is "amd64" (not cloud, not rt), and headers, image and
# linux-source-SERIES must be the same package version, because the private
# nvme headers come from that source.
#
#   scripts/kernel-series.sh candidate SERIES  newest release apt can install
#                                              with a matching linux-source,
#                                              their package version and the
#                                              image package to install
#   scripts/kernel-series.sh installed SERIES  release whose headers are
#                                              installed (the one matching the
#                                              installed linux-source first)
#   scripts/kernel-series.sh kdir [SERIES]     its build tree (default 6.1)
#   scripts/kernel-series.sh image [SERIES]    its installed image package
#   scripts/kernel-series.sh list              the series the project supports
#   scripts/kernel-series.sh on DEBIAN         those Debian DEBIAN (12, 13)
#                                              carries
#   scripts/kernel-series.sh native SERIES     exit 0 if this machine's
#                                              Debian carries SERIES, so
#                                              that its kbuild runs here
#   scripts/kernel-series.sh here              the series it carries
#
# With NRP_ROOT=DIR, installed, kdir and image answer for the Debian root
# at DIR (tools/vm/debian-root.sh) as seen from outside it: its package
# database, and kdir prefixed with DIR.
# A release is printed like "6.1.0-57-amd64", "6.12.117+deb12-amd64" or
# "7.3.4+deb13-amd64". Nothing is pinned: security updates replace
# kernels, and this follows. Exit 1, with a one-line reason on stderr,
# when there is none.
#
# Where each series comes from. 6.1 is Debian 12's own; 6.12 is Debian
# 13's, and Debian 12's security suite carries it too (+deb12); the 7.x
# series is the one trixie-backports carries, the kernel Debian 13 users
# take for what 6.12 lacks (CONFIG_PCI_P2PDMA=y): the rule for which 7.x
# release to take is the same as for the others, the newest release of
# the series whose headers, image and linux-source are of one version,
# from the Debian 13 archive (suites trixie, trixie-security,
# trixie-backports). Its headers want gcc-14 and glibc 2.38, so a Debian
# 12 host builds for it in a Debian 13 root (tools/vm/debian-root.sh).
# When trixie-backports moves to a newer series, "candidate" says so: a
# new series is supported once the module's probes have read it.
set -u

die() { echo "nvme-rdma-p2p: $*" >&2; exit 1; }

# apt-cache with a binary cache of our own. Debian's container images turn
# apt's off (Dir::Cache::pkgcache ""), and then every apt-cache call parses
# all the package lists again: a second of CPU each, 5 to 7 s on a loaded
# 2-core machine, 10 calls a set-up. apt checks the cache against the lists
# itself and rebuilds it after an apt-get update.
# One cache per Debian release: the Debian 13 root shares NRP_CACHE.
aptc() {
	local d=${NRP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nvme-rdma-p2p}/apt/debian$(cut -d. -f1 /etc/debian_version 2>/dev/null | tr / _)

	if mkdir -p "$d" 2>/dev/null && [ -w "$d" ]; then
		apt-cache -o Dir::Cache::pkgcache="$d/pkgcache.bin" \
			-o Dir::Cache::srcpkgcache="$d/srcpkgcache.bin" "$@"
	else
		apt-cache "$@"
	fi
}

# dpkg-query of this machine, or of the root NRP_ROOT names
dpkgq() {
	if [ -n "${NRP_ROOT:-}" ]; then
		dpkg-query --root="$NRP_ROOT" "$@"
	else
		dpkg-query "$@"
	fi
}

cmd=${1:-}
series=${2:-6.1}
case "$cmd/$series" in
on/* | here/*) ;;
*/[0-9]*.[0-9]*) ;;
*) die "kernel series '$series' is not of the form 6.1 or 6.12" ;;
esac
re="^linux-headers-${series//./\\.}\\.[0-9]+(-[0-9]+|\\+deb[0-9]+)-amd64\$"

# "PACKAGE VERSION" lines on stdin: the release of the headers package whose
# version is $1, else (when $1 is empty or none matches) of the newest one.
# The regex reaches awk through the environment: awk -v would take its
# backslashes for escape sequences (gawk warns, busybox awk then misreads
# the "\+" of "+deb").
pick() {
	want="$1" re="$re" awk '
		BEGIN { want = ENVIRON["want"]; re = ENVIRON["re"] }
		$1 ~ re && $2 != "(none)" {
			rel = substr($1, length("linux-headers-") + 1)
			if ($2 == want) exact = rel
			print $2, rel
		}
		END { if (exact != "") print "~exact", exact }' |
		sort -V | awk '$1 == "~exact" { e = $2 } { last = $2 } END { print (e != "" ? e : last) }'
}

case "$cmd" in
list)
	# the first is the default series
	echo "6.1 6.12 7.3"
	;;
on)
	case $series in
	12)	echo "6.1 6.12" ;;
	13)	echo "6.12 7.3" ;;
	*)	die "Debian $series: the project knows Debian 12 and 13" ;;
	esac
	;;
native | here)
	deb=$(cut -d. -f1 /etc/debian_version 2>/dev/null)
	case $deb in
	12 | 13) ;;
	# testing and unstable say "forky/sid": newer than 13
	*/sid)	deb=13 ;;
	*)	die "not a Debian 12 or 13 machine (/etc/debian_version: ${deb:-none})" ;;
	esac
	[ "$cmd" = native ] || exec "$0" on "$deb"
	case " $("$0" on "$deb") " in
	*" $series "*) exit 0 ;;
	*) exit 1 ;;
	esac
	;;
candidate)
	srcver=$(aptc policy "linux-source-$series" 2>/dev/null |
		awk '/Candidate:/ { print $2 }')
	if [ -z "$srcver" ] || [ "$srcver" = "(none)" ]; then
		# a backports series is replaced by the next one: say which
		others=$(aptc pkgnames linux-source- 2>/dev/null | grep -E '^linux-source-[0-9]+\.[0-9]+$' |
			sort -V | xargs)
		die "apt knows no linux-source-$series (run apt-get update)${others:+; it has $others}"
	fi
	mapfile -t names < <(aptc pkgnames "linux-headers-$series." 2>/dev/null | grep -E "$re")
	[ ${#names[@]} -gt 0 ] || die "apt knows no linux-headers-$series.*-amd64"
	rel=$(aptc policy "${names[@]}" 2>/dev/null |
		awk '/^[^ ]/ { sub(":$", "", $1); p = $1 } /Candidate:/ { print p, $2 }' |
		awk -v v="$srcver" '$2 == v' | pick "$srcver")
	[ -n "$rel" ] || die "no linux-headers-$series.*-amd64 of version $srcver (that of linux-source-$series)"
	# Debian's signed image of a release reaches the archive later than
	# its headers, source and unsigned image (seen: 6.12.118's headers and
	# -unsigned image a day before linux-image-6.12.118+deb12-amd64). Both
	# install the same /boot/vmlinuz-REL; the guest does not check the
	# signature, so the unsigned one stands in until the signed one comes.
	img=
	for p in "linux-image-$rel" "linux-image-$rel-unsigned"; do
		v=$(aptc policy "$p" 2>/dev/null | awk '/Candidate:/ { print $2 }')
		[ "$v" = "$srcver" ] && { img=$p; break; }
	done
	[ -n "$img" ] || die "no linux-image-$rel (signed or -unsigned) of version $srcver"
	echo "$rel $srcver $img"
	;;
image)
	# the image package installed for the release of the installed headers
	rel=$("$0" installed "$series") || exit 1
	for p in "linux-image-$rel" "linux-image-$rel-unsigned"; do
		dpkgq -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^ii' &&
			{ echo "$p"; exit 0; }
	done
	die "no linux-image-$rel installed (tools/setup.sh installs it)"
	;;
installed|kdir)
	srcver=$(dpkgq -W -f='${db:Status-Abbrev}${Version}' "linux-source-$series" 2>/dev/null |
		sed -n 's/^ii *//p')
	rel=$(dpkgq -W -f='${db:Status-Abbrev} ${Package} ${Version}\n' \
		"linux-headers-$series.*" 2>/dev/null |
		awk '$1 == "ii" { print $2, $3 }' | pick "$srcver")
	[ -n "$rel" ] ||
		die "no linux-headers-$series.*-amd64 installed (tools/setup.sh installs them)"
	if [ "$cmd" = kdir ]; then
		echo "${NRP_ROOT:-}/usr/src/linux-headers-$rel"
	else
		echo "$rel"
	fi
	;;
*)
	die "usage: scripts/kernel-series.sh list|on|native|here|candidate|installed|kdir|image [SERIES]"
	;;
esac
