#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A Debian 13 (trixie) root in the cache: the build machine for the kernel
# series a Debian 12 host cannot build for itself, and the userland of the
# Debian 13 guests.
#
#   tools/vm/debian-root.sh [--for build|user] path
#   tools/vm/debian-root.sh [--for build|user] run [--] COMMAND...
#   tools/vm/debian-root.sh [--for build|user] release SERIES
#
# Linux 7.x as Debian 13 ships it (trixie-backports) is built with gcc-14
# and kbuild binaries that need glibc 2.38; Debian 12 has 2.36. So what
# builds for that series here (the module, its fixtures, check-style, DKMS)
# runs in this root: a Debian 13 machine of its own, made with mmdebstrap
# from Debian's archive alone. Inside it, the project's scripts work as on
# a user's Debian 13 host: scripts/kernel-series.sh finds the headers and
# linux-source installed there, and the Makefile builds natively.
#
# --for build (the default) installs what building for the root's series
# needs: gcc, make, sparse, and for each series Debian 13 carries that
# scripts/kernel-series.sh lists (on 13), its newest linux-headers,
# linux-image and linux-source of one version, by that script's rule.
# --for user adds a Debian 13 user's tools (DKMS, nvme-cli, rdma-core,
# fio, mkfs) for the guests whose root this is (run-guest.sh --root).
# Nothing is pinned: each call that finds a package missing updates the
# root's lists first, and a kernel the archive replaced is replaced here.
#
# path prints the root; run runs COMMAND in it, as root, in the current
# directory, with the checkout, NRP_CACHE and /tmp at the same paths as on
# the host (a scratch tree of a host test is one), in a mount namespace of
# its own: nothing stays mounted. release
# prints the stock kernel release of SERIES installed in the root.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

part=build
while [ $# -gt 0 ]; do
	case $1 in
	--for)	part=$2; shift 2
		case $part in build | user) ;;
		*) nrp_die "--for: build or user, not '$part'" ;;
		esac ;;
	*)	break ;;
	esac
done
cmd=${1:-path}
shift || true
[ "$(id -u)" = 0 ] || nrp_die "the Debian 13 root needs root (chroot, mount namespaces)"

root=$NRP_CACHE/root/debian13
# Bump when the base (what mmdebstrap makes) changes; the package sets
# below are installed into an existing root.
recipe=1
suites="trixie trixie-updates trixie-security trixie-backports"
mirror=http://deb.debian.org/debian
security=http://deb.debian.org/debian-security

# Run COMMAND in the root: the checkout and the cache bound at their own
# paths, /proc, /sys and /dev/pts mounted, in a private mount namespace.
in_root() { # COMMAND...
	local binds="$NRP_TOP $NRP_CACHE"
	unshare --mount --propagation private -- /bin/bash -c '
		set -e
		root=$1 binds=$2 wd=$3
		shift 3
		for b in $binds; do
			mkdir -p "$root$b"
			mount --bind "$b" "$root$b"
		done
		mount -t proc proc "$root/proc"
		mount -t sysfs sysfs "$root/sys"
		mount --bind /tmp "$root/tmp"
		mount -t devpts -o newinstance devpts "$root/dev/pts" 2>/dev/null || true
		cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
		[ -d "$root$wd" ] || wd=/
		exec chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" NRP_CACHE="$NRP_CACHE" \
			${NRP_SERIES:+NRP_SERIES=$NRP_SERIES} ${NRP_TEST_SERIES:+NRP_TEST_SERIES=$NRP_TEST_SERIES} \
			/bin/bash -c "cd \"\$0\" && exec \"\$@\"" "$wd" "$@"
	' in-root "$root" "$binds" "$PWD" "$@"
}

make_base() {
	command -v mmdebstrap >/dev/null ||
		nrp_die "mmdebstrap is missing (tools/setup.sh installs it)"
	local s srcs=() t0=$SECONDS
	for s in $suites; do
		case $s in
		*-security)	srcs+=("deb $security $s main") ;;
		*)		srcs+=("deb $mirror $s main") ;;
		esac
	done
	nrp_log "making a Debian 13 root in $root (mmdebstrap, a minute or two)"
	rm -rf "$root.tmp"
	mkdir -p "$(dirname "$root")"
	mmdebstrap --quiet --variant=apt --include=ca-certificates \
		trixie "$root.tmp" "${srcs[@]}" >"$root.log" 2>&1 || {
		tail -n 20 "$root.log" >&2
		nrp_die "mmdebstrap failed (see $root.log)"
	}
	echo "$recipe" >"$root.tmp/.nrp-recipe"
	rm -rf "$root"
	mv "$root.tmp" "$root"
	nrp_log "Debian 13 root made in $((SECONDS - t0)) s"
}

# The packages of the part, for the series Debian 13 carries: one
# "PACKAGE" a line, the kernel ones as scripts/kernel-series.sh picks them
# (run inside the root, against its own package lists).
wanted() {
	local s cand rel ver img
	printf '%s\n' make gcc sparse perl xz-utils kmod bc file
	[ "$part" != user ] ||
		printf '%s\n' dkms nvme-cli rdma-core ibverbs-utils iproute2 fio e2fsprogs xfsprogs \
			python3 pciutils procps hostname
	for s in $("$NRP_TOP/scripts/kernel-series.sh" on 13); do
		# a build root needs only the series a Debian 12 host cannot
		# build for itself; a user's root every series it has
		[ "$part" = user ] || ! "$NRP_TOP/scripts/kernel-series.sh" native "$s" ||
			continue
		cand=$(in_root "$NRP_TOP/scripts/kernel-series.sh" candidate "$s") || return 1
		read -r rel ver img <<<"$cand"
		printf '%s\n' "linux-headers-$rel=$ver" "linux-source-$s=$ver" "$img=$ver"
	done
}

# What of the list is not installed in the root at that version.
missing() {
	local p name ver
	for p in "$@"; do
		name=${p%%=*} ver=
		[ "$name" = "$p" ] || ver=${p#*=}
		in_root dpkg-query -W -f='${db:Status-Abbrev}${Version}\n' "$name" 2>/dev/null |
			grep -qx "ii *${ver:-.*}" && continue
		echo "$p"
	done
}

# apt-get install in the root, if there is anything to install.
install() { # [-t SUITE] PACKAGE...
	local t=()
	[ "${1:-}" != -t ] || { t=(-t "$2"); shift 2; }
	[ $# -gt 0 ] || return 0
	# INITRD=No: the guests boot with an initramfs of ours
	in_root env DEBIAN_FRONTEND=noninteractive INITRD=No \
		apt-get install -y -qq --no-install-recommends "${t[@]}" "$@" \
		>>"$root.install.log" 2>&1 || {
		tail -n 20 "$root.install.log" >&2
		nrp_die "installing into the Debian 13 root failed (see $root.install.log)"
	}
}

# sparse 0.6.4, Debian 12's and 13's, cannot parse __typeof_unqual__,
# which 7.x uses: that kernel's scripts/checker-valid.sh then turns the
# checker off and C=2 checks nothing (the kernel says so, and
# scripts/check-style.sh fails on it). Sid's 0.6.5 parses it. Its package
# wants sid's gcc-16, so its binary alone is unpacked into /usr/local/bin,
# ahead of 0.6.4 in PATH; it needs nothing Debian 13 lacks. (The
# archive's sid Release file here is past its Valid-Until: a snapshot.)
sid_sparse() {
	local l=/var/lib/apt/lists-sid
	[ ! -x "$root/usr/local/bin/sparse" ] || return 0
	nrp_log "Debian 13 root: sparse 0.6.5 from sid"
	mkdir -p "$root$l/partial" "$root/etc/apt/sid"
	echo "deb $mirror sid main" >"$root/etc/apt/sid/sources.list"
	in_root bash -c "
		set -e
		o='-o Dir::Etc::SourceList=/etc/apt/sid/sources.list -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists=$l -o Acquire::Check-Valid-Until=false'
		apt-get -qq \$o update
		cd /tmp && apt-get -qq \$o download sparse/sid
		dpkg-deb -x /tmp/sparse_*.deb /tmp/sparse
		install -m 0755 /tmp/sparse/usr/bin/sparse /usr/local/bin/sparse
		rm -rf $l/*Packages* /tmp/sparse*
	" >>"$root.install.log" 2>&1 || {
		tail -n 20 "$root.install.log" >&2
		nrp_die "sparse from sid could not be unpacked into the Debian 13 root (see $root.install.log)"
	}
}

# Debian's linux-headers of 7.x lack scripts/checker-valid.sh, which
# kbuild runs before sparse (C=2): without it, kbuild says "sparse is not
# available or not up to date" and checks nothing. The file comes from
# the linux-source package of the same version, installed beside them.
headers_fixup() {
	local c s
	for c in "$root"/usr/src/linux-headers-*-common; do
		[ -d "$c/scripts" ] && [ ! -e "$c/scripts/checker-valid.sh" ] &&
			grep -q checker-valid.sh "$c/Makefile" || continue
		s=$(basename "$c" | sed -n 's/^linux-headers-\([0-9]*\.[0-9]*\)\..*/\1/p')
		[ -r "$root/usr/src/linux-source-$s.tar.xz" ] || continue
		tar --occurrence=1 -xJf "$root/usr/src/linux-source-$s.tar.xz" -O \
			"linux-source-$s/scripts/checker-valid.sh" >"$c/scripts/checker-valid.sh" &&
			chmod 0755 "$c/scripts/checker-valid.sh" ||
			nrp_die "no scripts/checker-valid.sh in linux-source-$s"
	done
}

ensure() {
	local want miss t0=$SECONDS
	mkdir -p "$NRP_CACHE/root"
	exec 8>"$NRP_CACHE/root/.lock-debian13"
	flock 8
	[ "$(cat "$root/.nrp-recipe" 2>/dev/null)" = "$recipe" ] || make_base
	want=$(wanted 2>/dev/null) && miss=$(missing $want) || miss=unknown
	if [ -n "$miss" ]; then
		# whatever is missing, resolve it against fresh package lists
		in_root apt-get -qq update >/dev/null ||
			nrp_die "apt-get update in the Debian 13 root failed"
		want=$(wanted) || nrp_die "cannot pick the Debian 13 kernels (see above)"
		miss=$(missing $want)
	fi
	if [ -n "$miss" ]; then
		nrp_log "Debian 13 root: installing" $miss
		: >"$root.install.log"
		# A backports kernel wants backports' linux-base too, which
		# apt does not take from there by itself: as Debian's own
		# "apt install -t trixie-backports linux-image-amd64".
		install $(grep -v '~bpo' <<<"$miss")
		install -t trixie-backports $(grep '~bpo' <<<"$miss")
		in_root apt-get -qq clean
		nrp_log "Debian 13 root ($part) ready in $((SECONDS - t0)) s"
	fi
	sid_sparse
	headers_fixup
	flock -u 8
}

case $cmd in
path)
	ensure
	echo "$root"
	;;
run)
	[ "${1:-}" != -- ] || shift
	[ $# -gt 0 ] || nrp_die "run: no command"
	ensure
	in_root "$@"
	;;
release)
	[ $# = 1 ] || nrp_die "release: which series?"
	ensure
	in_root "$NRP_TOP/scripts/kernel-series.sh" installed "$1"
	;;
*)
	nrp_die "usage: tools/vm/debian-root.sh [--for build|user] path|run|release"
	;;
esac
