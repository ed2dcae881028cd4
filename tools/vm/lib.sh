# SPDX-License-Identifier: GPL-2.0
# Shared helpers of the host-side scripts: where things are cached, which
# kernel source is installed, how guest kernels are named.

NRP_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
NRP_CACHE=${NRP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nvme-rdma-p2p}
# The Debian stock kernel the stock guest boots and the module builds for by
# default: whatever scripts/kernel-series.sh finds installed (the set-up
# installs the newest one of the series), so no release is pinned here.
NRP_SERIES=${NRP_SERIES:-6.1}
NRP_SRC_TARBALL=${NRP_SRC_TARBALL:-/usr/src/linux-source-$NRP_SERIES.tar.xz}
# (empty before the set-up installed it: callers that need it say so)
NRP_STOCK_KVER=${NRP_STOCK_KVER:-$("$NRP_TOP/scripts/kernel-series.sh" installed "$NRP_SERIES" 2>/dev/null || true)}

nrp_die() { echo "error: $*" >&2; exit 1; }

# Switch to another kernel series (6.1, 6.12) and what follows from it.
nrp_set_series() {
	[ "$1" = "$NRP_SERIES" ] && return 0
	NRP_SERIES=$1
	NRP_SRC_TARBALL=/usr/src/linux-source-$NRP_SERIES.tar.xz
	NRP_STOCK_KVER=$("$NRP_TOP/scripts/kernel-series.sh" installed "$NRP_SERIES" 2>/dev/null || true)
	export NRP_SERIES NRP_SRC_TARBALL NRP_STOCK_KVER
}

# Guest kernel names: a flavour (stock, p2p, debug), of the series NRP_SERIES
# (6.1 by default), or with the series appended (stock-6.12, p2p-6.12).
# Sets NRP_FLAVOUR and switches to the name's series; the scripts taking a
# --kernel NAME all go through here, so the names mean the same everywhere.
nrp_use_kernel() {
	local name=$1
	case "$name" in
	*-[0-9]*.[0-9]*)
		NRP_FLAVOUR=${name%-*}
		nrp_set_series "${name##*-}"
		;;
	*)	NRP_FLAVOUR=$name ;;
	esac
	case "$NRP_FLAVOUR" in
	stock|p2p|debug) ;;
	*) nrp_die "unknown kernel '$name' (stock, p2p, debug, or with a series: stock-6.12, p2p-6.12)" ;;
	esac
}
nrp_log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

# Debian package version of the kernel source tarball (6.1.192-3).
nrp_src_pkgver() {
	dpkg-query -W -f='${Version}' "linux-source-$NRP_SERIES" 2>/dev/null ||
		nrp_die "linux-source-$NRP_SERIES is not installed (run tools/setup.sh)"
}

# Extract the whole source tree once; guest kernels and private headers use it.
nrp_src_tree() {
	local ver dir
	ver=$(nrp_src_pkgver) || exit 1
	dir=$NRP_CACHE/src/linux-source-$NRP_SERIES-$ver
	if [ ! -e "$dir/.extracted" ]; then
		# One extraction at a time: a background kernel build and the
		# host tests' style check may both want the tree first.
		mkdir -p "$NRP_CACHE/src"
		(
			flock 9
			[ -e "$dir/.extracted" ] && exit 0
			[ -r "$NRP_SRC_TARBALL" ] || nrp_die "$NRP_SRC_TARBALL missing"
			nrp_log "extracting $NRP_SRC_TARBALL to $dir"
			rm -rf "$dir.tmp" && mkdir -p "$dir.tmp" &&
				tar -xJf "$NRP_SRC_TARBALL" -C "$dir.tmp" --strip-components=1 &&
				rm -rf "$dir" && mv "$dir.tmp" "$dir" && touch "$dir/.extracted"
		) 9>"$NRP_CACHE/src/.lock" || nrp_die "extracting $NRP_SRC_TARBALL failed"
	fi
	echo "$dir"
}

# Config fragments that make up a guest kernel flavour, in order.
nrp_flavour_fragments() {
	local c=$NRP_TOP/tools/vm/config
	local f
	case "$1" in
	p2p)	f="$c/p2p.config" ;;
	debug)	f="$c/p2p.config $c/debug.config" ;;
	*)	nrp_die "unknown guest kernel flavour '$1' (p2p, debug)" ;;
	esac
	# what one series names differently from the other
	[ ! -e "$c/p2p-$NRP_SERIES.config" ] || f="$f $c/p2p-$NRP_SERIES.config"
	echo "$f"
}

# Bump when the way a kernel is built changes (make targets, install
# layout); editing the script's comments or progress output does not.
NRP_KERNEL_RECIPE=1

# Cache key: source version, config fragments and the build recipe.
nrp_kernel_key() {
	local frags
	frags=$(nrp_flavour_fragments "$1") || exit 1
	# shellcheck disable=SC2086
	{ nrp_src_pkgver; cat $frags; echo "recipe $NRP_KERNEL_RECIPE"; } |
		sha256sum | cut -c1-12
}

nrp_kernel_dir() {
	local key
	key=$(nrp_kernel_key "$1") || exit 1
	echo "$NRP_CACHE/kernel/$1-$key"
}
