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
# Where the stock kernel of a series lives: this machine ("") where its
# Debian carries the series, else the Debian 13 root
# (tools/vm/debian-root.sh), whose /boot, /lib/modules and /usr/src hold
# it and in which its module is built.
nrp_series_root() { # SERIES
	"$NRP_TOP/scripts/kernel-series.sh" native "$1" 2>/dev/null ||
		echo "$NRP_CACHE/root/debian13"
}
nrp_stock_kver() { # SERIES ROOT
	NRP_ROOT=$2 "$NRP_TOP/scripts/kernel-series.sh" installed "$1" 2>/dev/null || true
}
NRP_STOCK_ROOT=${NRP_STOCK_ROOT-$(nrp_series_root "$NRP_SERIES")}
# (empty before the set-up installed it: callers that need it say so)
NRP_STOCK_KVER=${NRP_STOCK_KVER:-$(nrp_stock_kver "$NRP_SERIES" "$NRP_STOCK_ROOT")}

nrp_die() { echo "error: $*" >&2; exit 1; }

# Switch to another kernel series (6.1, 6.12, 7.3) and what follows from it.
nrp_set_series() {
	[ "$1" = "$NRP_SERIES" ] && return 0
	NRP_SERIES=$1
	NRP_SRC_TARBALL=/usr/src/linux-source-$NRP_SERIES.tar.xz
	NRP_STOCK_ROOT=$(nrp_series_root "$NRP_SERIES")
	NRP_STOCK_KVER=$(nrp_stock_kver "$NRP_SERIES" "$NRP_STOCK_ROOT")
	export NRP_SERIES NRP_SRC_TARBALL NRP_STOCK_ROOT NRP_STOCK_KVER
}

# Guest kernel names: a flavour (stock, demo, p2p, debug), of the series NRP_SERIES
# (6.1 by default), or with the series appended (stock-6.12, p2p-6.12,
# stock-7.3).
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
	stock|demo|p2p|debug) ;;
	*) nrp_die "unknown kernel '$name' (stock, demo, p2p, debug, or with a series: stock-6.12, p2p-6.12, stock-7.3)" ;;
	esac
}
nrp_log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

# "3 min 20 s" for a number of seconds.
nrp_dur() {
	if [ "$1" -ge 60 ]; then
		echo "$(($1 / 60)) min $(($1 % 60)) s"
	else
		echo "$1 s"
	fi
}

# Progress of a long step: LABEL, DONE of TOTAL (a count the step can
# know, 0 if it cannot), UNIT (% for a percentage), and the SECONDS it
# started at. With a total,
# a percentage and an estimate of the time left from the rate so far, or
# LEFT, the caller's own estimate in seconds (where items differ, like
# tests: run-all.sh's suite_left). On
# a terminal (stderr) one line updated in place, at most every 2 s; in a
# log (CI) a line every 30 s (NRP_PROGRESS_EVERY seconds: the host tests
# ask for 1). nrp_progress_end ends the line.
_nrp_progress_last=0
nrp_progress() { # LABEL DONE TOTAL UNIT START [LEFT]
	local label=$1 done=$2 total=$3 unit=$4 el=$((SECONDS - $5)) msg left=${6:-}
	if [ -t 2 ]; then
		[ $((SECONDS - _nrp_progress_last)) -ge 2 ] || return 0
	else
		[ $((SECONDS - _nrp_progress_last)) -ge "${NRP_PROGRESS_EVERY:-30}" ] || return 0
	fi
	_nrp_progress_last=$SECONDS
	msg="$label: $done"
	if [ "$unit" = % ]; then
		msg+="%, $(nrp_dur "$el")"
		[ "$done" -le 0 ] || [ "$done" -ge 100 ] ||
			msg+=", about $(nrp_dur $((el * (100 - done) / done))) left"
	elif [ "$total" -gt 0 ]; then
		[ "$done" -le "$total" ] || total=$done
		msg+=" of $total $unit ($((100 * done / total))%), $(nrp_dur "$el")"
		if [ -n "$left" ] && [ "$done" -lt "$total" ]; then
			msg+=", about $(nrp_dur "$left") left"
		elif [ "$done" -gt 0 ] && [ "$done" -lt "$total" ]; then
			msg+=", about $(nrp_dur $((el * (total - done) / done))) left"
		fi
	else
		msg+=" $unit, $(nrp_dur "$el")"
	fi
	if [ -t 2 ]; then
		printf '\r\033[K[%s] %s' "$(date +%H:%M:%S)" "$msg" >&2
	else
		nrp_log "$msg"
	fi
}
nrp_progress_end() { [ ! -t 2 ] || printf '\n' >&2; _nrp_progress_last=0; }

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

# Config fragments that make up a guest kernel flavour, in order: the
# demo's kernel (base.config) and what the tests of a flavour add to it.
nrp_flavour_fragments() {
	local c=$NRP_TOP/tools/vm/config
	local f
	case "$1" in
	demo)	f="$c/base.config" ;;
	p2p)	f="$c/base.config $c/p2p.config"
		# what one series names differently from the other
		[ ! -e "$c/p2p-$NRP_SERIES.config" ] || f="$f $c/p2p-$NRP_SERIES.config" ;;
	# the P2PDMA kernel with the checkers (tools/vm/build-kernel.sh
	# says how it is built)
	debug)	f=$(nrp_flavour_fragments p2p)
		f="$f $c/debug.config" ;;
	*)	nrp_die "unknown guest kernel flavour '$1' (demo, p2p, debug)" ;;
	esac
	echo "$f"
}

# Patches a flavour's source carries (tools/vm/patches/FLAVOUR/SERIES/, in
# order): only the debug kernel has any, fixes to upstream code whose
# reports would turn its checkers off. Each patch says why.
nrp_flavour_patches() {
	local d=$NRP_TOP/tools/vm/patches/$1/$NRP_SERIES
	[ -d "$d" ] || return 0
	find "$d" -maxdepth 1 -name '*.patch' | sort
}

# Apply patch $3 (-p1) to tree $2, a copy of tree $1: each file it changes
# is first copied from $1 as a file of its own (a tree of hard links keeps
# $1 intact; an empty $2 gets just those files).
nrp_apply_patch() { # SRC DEST PATCH
	local f
	while read -r f; do
		[ -f "$1/$f" ] || { echo "$3 changes $f, which $1 lacks" >&2; return 1; }
		mkdir -p "$(dirname "$2/$f")" && cp --remove-destination "$1/$f" "$2/$f" || return 1
	done < <(sed -n 's|^+++ b/||p' "$3")
	patch -s -p1 -d "$2" <"$3"
}

# The wishes of a merged config fragment that Kconfig did not keep: for
# each symbol, its last assignment in FRAGMENT (the one that wins) against
# the .config that allnoconfig made of it. Prints one "wanted '...', got
# '...'" line for each and returns 1 if there is any: a silently dropped
# option is a broken guest. An option asked off whose dependencies are
# gone is absent from .config, and off: that is kept.
nrp_config_unmet() { # FRAGMENT DOTCONFIG
	local want sym last got bad=0
	[ -r "$1" ] && [ -r "$2" ] || { echo "no ${1} or no ${2}"; return 1; }
	while IFS= read -r want; do
		case $want in
		CONFIG_*=* | "# CONFIG_"*" is not set") ;;
		*)	continue ;;
		esac
		sym=${want#\# }
		sym=${sym%%[= ]*}
		last=$(grep -E "^(# )?$sym[= ]" "$1" | tail -n1)
		[ "$last" = "$want" ] || continue
		grep -qxF -- "$want" "$2" && continue
		got=$(grep -E "^(# )?$sym[= ]" "$2") || {
			case $want in "# "*) continue ;; esac
			got="$sym absent"
		}
		echo "wanted '$want', got '$got'"
		bad=1
	done <"$1"
	return $bad
}

# Bump when the way a kernel is built changes (make targets, install
# layout); editing the script's comments or progress output does not.
NRP_KERNEL_RECIPE=1

# Cache key: source version, config fragments, patches and the build recipe.
nrp_kernel_key() {
	local frags
	frags=$(nrp_flavour_fragments "$1") || exit 1
	frags+=" $(nrp_flavour_patches "$1" | xargs)"
	# shellcheck disable=SC2086
	{ nrp_src_pkgver; cat $frags; echo "recipe $NRP_KERNEL_RECIPE"
	  [ "$1" != debug ] || echo "KASAN on the modules only"; } |
		sha256sum | cut -c1-12
}

# The cache directory of a built guest kernel, by flavour or by kernel name
# (p2p-6.12 is the p2p flavour of series 6.12, whatever NRP_SERIES says).
nrp_kernel_dir() {
	(
		local key
		nrp_use_kernel "$1"
		key=$(nrp_kernel_key "$NRP_FLAVOUR") || exit 1
		echo "$NRP_CACHE/kernel/$NRP_FLAVOUR-$key"
	)
}
