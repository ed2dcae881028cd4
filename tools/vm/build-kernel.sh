#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build (or reuse) a guest kernel flavour from linux-source-$NRP_SERIES
# (6.1 unless the environment says otherwise).
#
#   [NRP_SERIES=6.12] tools/vm/build-kernel.sh p2p|debug
#   tools/vm/build-kernel.sh demo|p2p-6.12|debug-6.12
#
# The result lives in $NRP_CACHE/kernel/<flavour>-<key>/, where key hashes
# the source version, the config fragments and patches, and the recipe
# (nrp_kernel_key in lib.sh): nothing is rebuilt unless one of those
# changes. Prints the kernel directory.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

nrp_use_kernel "${1:-p2p}"
flavour=$NRP_FLAVOUR
[ "$flavour" != stock ] || nrp_die "the stock kernel is Debian's, not built here"
frags=$(nrp_flavour_fragments "$flavour")
kdir=$(nrp_kernel_dir "$flavour")

if [ -e "$kdir/.done" ]; then
	echo "$kdir"
	exit 0
fi

mkdir -p "$NRP_CACHE/kernel"
exec 9>"$NRP_CACHE/kernel/.lock-$flavour"
flock 9
if [ -e "$kdir/.done" ]; then
	echo "$kdir"
	exit 0
fi

src=$(nrp_src_tree)
obj=$kdir/build
rm -rf "$kdir"
mkdir -p "$obj"

# The flavour's patches (nrp_flavour_patches: the debug kernel's) go on a
# copy of the tree made of hard links, each patched file a copy of its
# own, so that the shared tree, which the other flavours and the private
# headers come from, stays as Debian ships it.
patches=$(nrp_flavour_patches "$flavour")
if [ -n "$patches" ]; then
	nrp_log "patching a linked copy of the source: $(echo "$patches" | xargs -n1 basename | xargs)"
	cp -al "$src" "$kdir/src"
	for p in $patches; do
		nrp_apply_patch "$src" "$kdir/src" "$p" || nrp_die "$p does not apply to $src"
	done
	src=$kdir/src
fi

# allnoconfig plus our fragments keeps the build to what a test guest uses.
# shellcheck disable=SC2086
cat $frags >"$kdir/fragment.config"
nrp_log "configuring $flavour kernel in $kdir"
make -s -C "$src" O="$obj" KCONFIG_ALLCONFIG="$kdir/fragment.config" \
	allnoconfig >"$kdir/config.log" 2>&1 || {
	cat "$kdir/config.log" >&2
	nrp_die "kernel configuration failed"
}

# Every symbol the fragments ask for must have survived Kconfig's
# dependency resolution (nrp_config_unmet; test_kernel_config.sh).
unmet=$(nrp_config_unmet "$kdir/fragment.config" "$obj/.config") || {
	echo "$unmet" | sed 's/^/config: /' >&2
	nrp_die "config fragment not satisfiable (see above)"
}

# How many objects (kbuild's CC, LD, AR and AS steps) this kernel takes:
# the count of its last build, else the one measured for the flavour and
# series (config/objects.tsv), else unknown (no percentage then).
objects() { grep -cE '^\s+(CC|LD|AR|AS)\b' "$1" 2>/dev/null || true; }
total=$(cat "$NRP_CACHE/kernel/objects-$flavour-$NRP_SERIES" 2>/dev/null ||
	awk -v f="$flavour" -v s="$NRP_SERIES" '$1 == f && $2 == s { print $3 }' \
		"$NRP_TOP/tools/vm/config/objects.tsv")
jobs=$(($(nproc) + 1))
nrp_log "building $flavour kernel (make -j$jobs, ${total:-an unknown number of} objects), log: $kdir/build.log"
# The debug flavour puts KASAN on the modules, not on the core kernel: the
# core (bzImage) is built with KASAN_SANITIZE=n on the command line (only
# a per-object "KASAN_SANITIZE_x.o := y", 6.1's vDSO vma.o, still gets
# instrumented), then the modules without it. The modules are the stacks
# our queues run in (rxe and siw, ib_core, rdma_cm, the NVMe host, fabrics
# and target, null_blk, brd, veth) and, built against this tree, ours:
# every access they make, header inlines (lists, SG tables, skbs, blk-mq)
# included, is checked, against shadow that the slab and page allocators'
# KASAN hooks (poisoning, quarantine, double and invalid frees) keep for
# the whole kernel; so rxe copying from a buffer we freed is reported.
# Not checked: accesses made inside the core (blk-mq, skbuff, the block
# layer's and PCI P2PDMA's own code, core mem*() calls), and globals and
# stack frames of the core. Why: with the whole kernel instrumented, the
# guests ran about seven times slower under TCG than on the p2p kernel;
# this way about four times (the P2P tests, measured in a
# check-tier trial before 56d6b54).
# The caller's make flags stay out: under "make -s demo" (the full tier's
# runner calls it so) kbuild inherited -s, printed no CC lines, and the
# progress line read "0 of 1471 objects" for the whole build.
kmake() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make "$@"; }
build_steps() {
	if [ "$flavour" = debug ]; then
		kmake -C "$src" O="$obj" -j"$jobs" KASAN_SANITIZE=n bzImage &&
			kmake -C "$src" O="$obj" -j"$jobs" modules
	else
		kmake -C "$src" O="$obj" -j"$jobs" bzImage modules
	fi
}
build_steps >"$kdir/build.log" 2>&1 &
pid=$!
start=$SECONDS
while kill -0 "$pid" 2>/dev/null; do
	sleep 2
	nrp_progress "$flavour kernel" "$(objects "$kdir/build.log")" "${total:-0}" objects "$start"
done
nrp_progress_end
wait "$pid" || {
	tail -n 40 "$kdir/build.log" >&2
	nrp_die "kernel build failed"
}
n=$(objects "$kdir/build.log")
echo "$n" >"$NRP_CACHE/kernel/objects-$flavour-$NRP_SERIES"
if [ -n "$total" ] && { [ $((n * 10)) -lt $((total * 9)) ] || [ $((n * 10)) -gt $((total * 11)) ]; }; then
	nrp_log "$flavour kernel: $n objects where $total were expected (tools/vm/config/objects.tsv is out of date)"
fi
make -s -C "$src" O="$obj" INSTALL_MOD_PATH="$kdir/mods" \
	INSTALL_MOD_STRIP=1 modules_install >>"$kdir/build.log" 2>&1
make -s -C "$src" O="$obj" kernelrelease >"$kdir/kernelrelease"
cp "$obj/arch/x86/boot/bzImage" "$kdir/bzImage"
nrp_log "$flavour kernel $(cat "$kdir/kernelrelease") built in $((SECONDS - start)) s"
echo "$NRP_SERIES" >"$kdir/series"
touch "$kdir/.done"
# Older builds of this flavour and series are dead weight once their key
# changed; the other series' builds are not. (Builds from before the series
# was recorded are all 6.1.)
for old in "$NRP_CACHE/kernel/$flavour"-*; do
	[ "$old" = "$kdir" ] && continue
	[ "$(cat "$old/series" 2>/dev/null || echo 6.1)" = "$NRP_SERIES" ] || continue
	rm -rf "$old"
done
echo "$kdir"
