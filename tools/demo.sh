#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The main job: boot the P2PDMA guest kernel, build a soft-RoCE fabric and a
# kernel NVMe target in it, connect with nvme-rdma-p2p through nvme-cli,
# write a checkpoint from simulated GPU memory (P2PDMA pages of a QEMU
# ivshmem BAR) to the remote namespace, read it back, verify it, and say
# what happened, counters included: nothing bounces through host memory.
#
#   tools/demo.sh [SIZE_MIB]
#
# On a guest kernel where user space can map P2P memory (Linux 6.2 and
# later: the 6.12 P2PDMA kernel) the checkpoint is a file on XFS on the
# remote namespace, written with O_DIRECT by a user process from P2P
# memory; on 6.1 the GPU stand-in's in-kernel mover writes the raw
# namespace. tools/demo-guest.sh decides by what the guest kernel offers.
# NRP_DEMO_KERNEL picks the kernel: demo (the default: Linux 6.1 with no
# more than the demo needs, tools/vm/config/base.config, so that a cold
# run builds little), p2p (the test suite's 6.1 kernel) or p2p-6.12. The
# guest runs nvme_core with its default, multipath=Y, as Debian does.
# The last lines give the time of each part.
set -euo pipefail
. "$(dirname "$0")/vm/lib.sh"

size=${1:-256}
kernel=${NRP_DEMO_KERNEL:-demo}
nrp_use_kernel "$kernel"
case $NRP_FLAVOUR in
demo | p2p) ;;
*) nrp_die "the demo needs a P2PDMA guest kernel (demo, p2p, p2p-6.12), not '$kernel'" ;;
esac
start=$SECONDS
parts=()
part() { parts+=("$(printf '  %-28s %s' "$1" "$(nrp_dur $((SECONDS - $2)))")"); }

t=$SECONDS
# Only the demo's packages, of its kernel series (make check installs the
# rest). What the kernel build needs first; QEMU and the tools the guest
# runs install while the kernel builds: on a fresh machine the build is
# most of the demo's time, and apt's downloads and unpacking hide in it.
# (sudo asks first, if it must: not under the build's progress line.)
[ "$(id -u)" = 0 ] || sudo -v || nrp_die "the set-up needs root (sudo)"
"$NRP_TOP/tools/setup.sh" --for build --series "$NRP_SERIES"
part "set-up (kernel build tools)" $t
t=$SECONDS
pkglog=$(mktemp /tmp/nrp-demo-setup.XXXXXX)
"$NRP_TOP/tools/setup.sh" --for guest --series "$NRP_SERIES" >"$pkglog" 2>&1 &
pk=$!
# never leave apt running behind us (Ctrl-C reaches the foreground only)
trap 'wait $pk 2>/dev/null' EXIT
"$NRP_TOP/tools/vm/build-kernel.sh" "$kernel" >/dev/null || {
	wait $pk || true
	nrp_die "building the $kernel kernel failed"
}
part "guest kernel ($kernel)" $t
wait $pk || { cat "$pkglog" >&2; nrp_die "installing the demo's packages failed (log: $pkglog)"; }
trap - EXIT
parts+=("$(printf '  %-28s %s' "set-up (QEMU, guest tools)" \
	"$(sed -n 's/.*packages (guest) ready in \([0-9]*\) s.*/\1/p' "$pkglog") s, beside the kernel build")")
rm -f "$pkglog"
t=$SECONDS
out=$(mktemp -d /tmp/nrp-demo.XXXXXX)
"$NRP_TOP/tools/vm/run-guest.sh" --kernel "$kernel" --out "$out" --timeout 900 \
	--gpu-mem $(((2 * size + 1023) / 1024))G --mem $((2048 + size)) \
	-- tools/demo-guest.sh "$size" || {
	cat "$out/output.txt" 2>/dev/null
	nrp_die "demo failed, guest output in $out"
}
part "guest (module, boot, checkpoint)" $t
cat "$out/output.txt"
echo "time per part:"
printf '%s\n' "${parts[@]}"
printf '  %-28s %s\n' total "$(nrp_dur $((SECONDS - start)))"
