#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The debug kernel's patches (tools/vm/patches/debug/SERIES/) apply to the
# source of their series as the set-up installs it: a Debian update that
# moves their context fails here, in seconds, not in a background kernel
# build. Each patch says why it exists, names only files of the tree, and
# is part of the cache key of the debug kernel (a changed patch rebuilds
# it), not of the p2p kernel's.
. "$(dirname "$0")/lib.sh"
n=0
for series in 6.1 6.12; do
	d=$TOP/tools/vm/patches/debug/$series
	[ -d "$d" ] || continue
	src=$(NRP_SERIES=$series bash -c ". '$TOP/tools/vm/lib.sh'; nrp_src_tree") ||
		fail "no linux-source-$series tree"
	got=$(NRP_SERIES=$series bash -c ". '$TOP/tools/vm/lib.sh'; nrp_flavour_patches debug" | xargs)
	want=$(find "$d" -maxdepth 1 -name '*.patch' | sort | xargs)
	[ "$got" = "$want" ] || fail "$series: nrp_flavour_patches gives '$got', not '$want'"
	for p in $want; do
		work=$(mktemp -d)
		# a description before the diff, as a commit message
		head -n1 "$p" | grep -q '^---' && fail "$p has no description"
		grep -q '^+++ b/' "$p" || fail "$p changes no file"
		# as tools/vm/build-kernel.sh applies it, to the files alone
		nrp_apply_patch "$src" "$work" "$p" || fail "$p does not apply to linux-source-$series"
		rm -rf "$work"
		n=$((n + 1))
		echo "$series: $(basename "$p") applies"
	done
done
[ "$n" -gt 0 ] || fail "no debug kernel patch found"
# the key: the debug kernel with a patch changed is another build
scratch=$(scratch_tree)
trap 'rm -rf "$scratch"' EXIT
k1=$(bash -c ". '$scratch/tools/vm/lib.sh'; nrp_kernel_dir debug")
p=$(find "$scratch/tools/vm/patches/debug/6.1" -name '*.patch' | head -n1)
echo "# a comment line" >>"$p"
k2=$(bash -c ". '$scratch/tools/vm/lib.sh'; nrp_kernel_dir debug")
[ "$k1" != "$k2" ] || fail "a changed patch keeps the debug kernel's cache key ($k1)"
p2p1=$(bash -c ". '$scratch/tools/vm/lib.sh'; nrp_kernel_dir p2p")
p2p2=$(bash -c ". '$TOP/tools/vm/lib.sh'; nrp_kernel_dir p2p")
[ "${p2p1##*/}" = "${p2p2##*/}" ] || fail "the debug kernel's patch changed the p2p kernel's key"
echo "$n patch(es) apply; the debug kernel's key follows them, the p2p kernel's does not"
