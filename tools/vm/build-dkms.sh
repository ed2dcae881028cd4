#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build the module with DKMS for a Debian stock guest kernel, on the host,
# so that a guest can install and load what DKMS built (test_dkms_load.sh).
#
#   tools/vm/build-dkms.sh stock|stock-SERIES
#
# Prints a directory with the private trees of one "dkms add" and
# "dkms build": src/ (the source tree, as dkms add leaves it in /usr/src),
# dkms/ (DKMS's tree: the built module, as in /var/lib/dkms), the module
# index of the guest with and without it installed (index-installed/,
# index-removed/, see below), and the files krel, version and mok.pub. The guest runs "dkms install" and
# "dkms remove" on these trees; /lib/modules and /var/lib/dkms of the host
# are never touched (the host cannot load modules, and other tests run
# beside this). The result is kept until the module's source changes: one
# build costs tens of seconds, a cached one nothing.
#
# Only the stock kernels: DKMS builds against an installed linux-headers
# package, which the P2PDMA guest kernels (tools/vm/build-kernel.sh) do not
# have.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kernel=${1:-stock}
nrp_use_kernel "$kernel"
[ "$NRP_FLAVOUR" = stock ] ||
	nrp_die "DKMS builds only for Debian's stock kernels (stock, stock-6.12), not $kernel"
krel=$NRP_STOCK_KVER
[ -n "$krel" ] && [ -d "/usr/src/linux-headers-$krel" ] ||
	nrp_die "no linux-headers of Linux $NRP_SERIES installed (run tools/setup.sh)"
command -v dkms >/dev/null || nrp_die "dkms missing (tools/setup.sh installs it)"
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$NRP_TOP/dkms.conf")
[ -n "$ver" ] || nrp_die "no PACKAGE_VERSION in dkms.conf"

# What "dkms add ." of a fresh clone copies: the tracked tree.
files() {
	if git -C "$NRP_TOP" rev-parse --git-dir >/dev/null 2>&1; then
		git -C "$NRP_TOP" ls-files -z --cached --others --exclude-standard
	else
		(cd "$NRP_TOP" && find . -path ./.build -prune -o -path ./.gen -prune -o \
			-type f ! -name '*.o' ! -name '*.ko' ! -name '.*.cmd' -print0)
	fi
}
# The key covers what the build reads (and this recipe), so that editing
# a test or a document does not cost a rebuild.
key=$( { (cd "$NRP_TOP" && files | grep -zE '^(dkms\.conf|Kbuild|Makefile|drivers/|include/|scripts/)' |
	  sort -z | xargs -0 sha256sum 2>/dev/null)
	 cat "$0"; dkms --version; echo "$krel"; } | sha256sum | cut -c1-12)
base=$NRP_TOP/.build/dkms
d=$base/$krel-$key
if [ -e "$d/.done" ]; then
	echo "$d"
	exit 0
fi
mkdir -p "$base"
# One build per release at a time (run-all's lanes, two callers).
exec 9>"$base/$krel.lock"
flock 9
if [ -e "$d/.done" ]; then
	echo "$d"
	exit 0
fi
# the builds of older trees for this release are of no use any more
rm -rf "$base/$krel"-*
mkdir -p "$d/src/nvme-rdma-p2p-$ver" "$d/dkms" "$d/lib/$krel"
(cd "$NRP_TOP" && files | xargs -0 cp --parents -t "$d/src/nvme-rdma-p2p-$ver" 2>/dev/null) || true
[ -e "$d/src/nvme-rdma-p2p-$ver/dkms.conf" ] || nrp_die "copying the tree to $d failed"

# DKMS signs what it builds; a private key instead of /var/lib/dkms/mok.key.
export mok_signing_key=$d/mok.key mok_certificate=$d/mok.pub
D=(dkms --dkmstree "$d/dkms" --sourcetree "$d/src" --installtree "$d/lib")
m=nvme-rdma-p2p/$ver
t0=$SECONDS
"${D[@]}" add "$m" >"$d/add.log" 2>&1 ||
	{ cat "$d/add.log" >&2; nrp_die "dkms add failed"; }
if ! "${D[@]}" build "$m" -k "$krel" >"$d/build.log" 2>&1; then
	cat "$d/build.log" >&2
	tail -n 20 "$d/dkms/nvme-rdma-p2p/$ver/build/make.log" >&2 2>/dev/null || true
	nrp_die "dkms build of $m for $krel failed"
fi
# the private key stays on the host; the guest needs only the certificate
rm -f "$d/mok.key"

# The module index (modules.dep and the rest) of the guest's /lib/modules
# with DKMS's module installed under updates/dkms/, and without it: made
# here by depmod over the very files the guest sees (the host's kernel/,
# through 9p, and the module DKMS built), because depmod in a TCG guest
# reads every module over 9p and takes minutes (a "dkms install" with its
# depmod took 346 s in the stock guest, on a loaded host).
built=$(find "$d/dkms/nvme-rdma-p2p/$ver/$krel" -path '*/module/nvme-rdma-p2p.ko*' | head -n1)
[ -n "$built" ] || nrp_die "no module in DKMS's tree for $krel"
index() { # NAME [MODULE]
	local st=$d/stage/lib/modules/$krel
	rm -rf "$d/stage"
	mkdir -p "$st/updates/dkms" "$d/index-$1"
	ln -s "/lib/modules/$krel/kernel" "$st/kernel"
	cp /lib/modules/"$krel"/modules.builtin* /lib/modules/"$krel"/modules.order "$st/" 2>/dev/null || true
	[ $# -lt 2 ] || cp "$2" "$st/updates/dkms/"
	depmod -b "$d/stage" "$krel" || nrp_die "depmod for $krel failed"
	mv "$st"/modules.* "$d/index-$1/"
	rm -rf "$d/stage"
}
index installed "$built"
index removed
echo "$krel" >"$d/krel"
echo "$ver" >"$d/version"
touch "$d/.done"
nrp_log "dkms build of $m for $krel in $((SECONDS - t0)) s: $d"
echo "$d"
