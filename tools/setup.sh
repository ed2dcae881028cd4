#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Install what building and testing nvme-rdma-p2p needs on Debian 12, and
# build (or reuse) the cached P2PDMA guest kernel. Safe to run again.
#
#   tools/setup.sh [--no-kernel] [--no-root] [--with-debug-kernel]
#                  [--series SERIES] [--for build|guest|root] [--list]
#
# --no-kernel installs the packages only (make check times each guest
# kernel build as a part of its own); --no-root leaves the Debian 13 root
# of the series this machine's Debian lacks to the caller (make check
# makes it beside the kernel builds). --series installs the kernels of
# that series only (make demo: 6.1), not of every supported one.
# --for installs a part of the set (with --no-kernel implied): "build",
# what building a guest kernel needs (the compiler, kbuild's tools and
# linux-source); "guest", what a guest run uses (QEMU and the host's
# tools, which the guest runs over 9p). Together they are make demo's
# packages, without what only the suite needs (Debian's kernel images
# and headers, sparse, DKMS, packaging, lintian, Sphinx). make demo
# installs "build", then "guest" while the guest kernel builds: the guest
# part never touches linux-source, which the build is reading. --list
# prints the packages of the part (or the whole set), installed or not,
# one a line, and installs nothing. "root" is what making the Debian 13
# root needs (mmdebstrap: make demo on Debian 13's kernel builds nothing
# else).
#
# The stock kernels are not pinned: for each supported series (6.1, 6.12:
# scripts/kernel-series.sh list) that script names the newest image and
# headers whose version is that of linux-source-SERIES, and the Makefile's
# default KDIR is found by the same script.
set -euo pipefail
. "$(dirname "$0")/vm/lib.sh"

start=$SECONDS
build=(p2p)
part=all
list= no_root=
all_series=$("$NRP_TOP/scripts/kernel-series.sh" list)
while [ $# -gt 0 ]; do
	case $1 in
	--no-kernel)		build=(); shift ;;
	--no-root)		no_root=1; shift ;;
	--for)			part=$2; build=(); shift 2
				case $part in build | guest | root) ;;
				*) nrp_die "--for: build, guest or root, not '$part'" ;;
				esac ;;
	--list)			list=1; shift ;;
	--with-debug-kernel)	build+=(debug); shift ;;
	--series)		in_series=$2; shift 2
				[[ " $all_series " == *" $in_series "* ]] ||
					nrp_die "--series: one of $all_series, not '$in_series'"
				all_series=$in_series ;;
	*)			nrp_die "unknown option $1" ;;
	esac
done
# building a guest kernel (with linux-source-SERIES, below; patch for the
# debug kernel's tools/vm/patches)
build_tools=(make gcc bc flex bison libelf-dev libssl-dev dwarves cpio xz-utils kmod patch)
# a guest run: QEMU, its initramfs, the host tools it builds
# (tools/hostile-target: rdma-core's headers) and, since the guest's root
# is the host's over 9p, every tool the guest runs
guest_tools=(qemu-system-x86 busybox-static gawk mawk file python3
	nvme-cli rdma-core ibverbs-utils iproute2 fio e2fsprogs xfsprogs
	libibverbs-dev librdmacm-dev)
# the suite and the rest of the tree: style, packaging, docs, tracing
# (mmdebstrap: the Debian 13 root, tools/vm/debian-root.sh)
suite_tools=(sparse perl trace-cmd dkms python3-sphinx debhelper dh-dkms lintian dmsetup
	mmdebstrap)
root_tools=(mmdebstrap)
case $part in
build)	tools=("${build_tools[@]}") ;;
guest)	tools=("${guest_tools[@]}") ;;
root)	tools=("${root_tools[@]}") ;;
*)	tools=("${build_tools[@]}" "${guest_tools[@]}" "${suite_tools[@]}") ;;
esac

# Whether package $1 is installed at version $2.
installed_at() {
	[ "$(dpkg-query -W -f='${db:Status-Abbrev}${Version}' "$1" 2>/dev/null)" = "ii $2" ]
}

# The packages not installed at the version wanted, from the apt lists as
# they are now (with --list: all of them).
wanted() {
	local cand rel srcver img p series pkgs=("${tools[@]}")
	for series in $all_series; do
		[ "$part" != guest ] && [ "$part" != root ] || break
		# a series this machine's Debian does not carry is built and
		# booted from the Debian 13 root (below)
		"$NRP_TOP/scripts/kernel-series.sh" native "$series" || continue
		cand=$("$NRP_TOP/scripts/kernel-series.sh" candidate "$series") || return 1
		read -r rel srcver img <<<"$cand"
		# the source must move with the headers: the private headers come from it
		{ [ -z "$list" ] && installed_at "linux-source-$series" "$srcver"; } ||
			echo "linux-source-$series"
		# the guest kernels make demo boots are built from the source alone
		[ "$part" = all ] || continue
		[ -z "$list" ] || echo "$img"
		pkgs+=("linux-headers-$rel")
		# either image of the release will do (kernel-series.sh): the
		# unsigned one installed while the signed one lagged is kept
		installed_at "linux-image-$rel" "$srcver" ||
			installed_at "linux-image-$rel-unsigned" "$srcver" || echo "$img"
	done
	if [ -n "$list" ]; then
		printf '%s\n' "${pkgs[@]}"
		return 0
	fi
	for p in "${pkgs[@]}"; do
		dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^ii' ||
			echo "$p"
	done
}

if [ -n "$list" ]; then
	wanted | sort -u
	exit 0
fi
sudo=
[ "$(id -u)" = 0 ] || sudo=sudo
missing=$(wanted 2>/dev/null) || missing=unknown
if [ -n "$missing" ]; then
	# whatever is missing, resolve it against fresh package lists
	$sudo apt-get update -qq
	missing=$(wanted) || nrp_die "cannot resolve the packages to install"
fi
if [ -n "$missing" ]; then
	nrp_log "installing:" $missing
	# INITRD=No: the kernel image is for guests, which boot with an
	# initramfs of our own; the host's initramfs hook would only cost time.
	# apt's status lines (download, then install, each 0 to 100 %) show
	# how far it is.
	t0=$SECONDS
	errs=$(mktemp)
	# shellcheck disable=SC2086
	{ $sudo env DEBIAN_FRONTEND=noninteractive INITRD=No apt-get install -y -qq \
		--no-install-recommends -o APT::Status-Fd=3 $missing 3>&1 >/dev/null 2>"$errs"
	  echo $? >"$errs.rc"; } |
		while IFS=: read -r kind _ pct _; do
			pct=${pct%%.*}
			case $kind in
			dlstatus) nrp_progress "downloading packages" "$((pct / 2))" 100 % "$t0" ;;
			pmstatus) nrp_progress "installing packages" "$((50 + pct / 2))" 100 % "$t0" ;;
			esac
		done
	rc=$(cat "$errs.rc")
	rm -f "$errs.rc"
	nrp_progress_end
	[ "$rc" = 0 ] || { cat "$errs" >&2; nrp_die "apt-get install failed"; }
	rm -f "$errs"
fi
if [ "$part" != all ]; then
	nrp_log "packages ($part) ready in $((SECONDS - start)) s"
	exit 0
fi
stock=
for series in $all_series; do
	if "$NRP_TOP/scripts/kernel-series.sh" native "$series"; then
		stock+=" $("$NRP_TOP/scripts/kernel-series.sh" installed "$series")" ||
			nrp_die "no stock kernel of Linux $series after the set-up"
	elif [ -n "$no_root" ]; then
		stock+=" (Linux $series: the Debian 13 root, made later)"
	else
		# Debian 13's kernel (7.x from trixie-backports): its headers,
		# image and source in the Debian 13 root, kept as current as
		# this machine's own kernels
		"$NRP_TOP/tools/vm/debian-root.sh" path >/dev/null ||
			nrp_die "cannot make the Debian 13 root for Linux $series"
		stock+=" $("$NRP_TOP/tools/vm/debian-root.sh" release "$series") (Debian 13 root)" ||
			nrp_die "no stock kernel of Linux $series in the Debian 13 root"
	fi
done
nrp_log "packages ready in $((SECONDS - start)) s (stock kernels$stock)"

for k in "${build[@]}"; do
	"$NRP_TOP/tools/vm/build-kernel.sh" "$k" >/dev/null
done
nrp_log "setup done in $((SECONDS - start)) s"
