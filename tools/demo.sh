#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The main job: boot a P2PDMA guest kernel, build a soft-RoCE fabric and a
# kernel NVMe target in it, connect with nvme-rdma-p2p through nvme-cli,
# write a checkpoint from simulated GPU memory (P2PDMA pages of a QEMU
# ivshmem BAR) to the remote namespace, read it back, verify it, and say
# what happened, counters included: nothing bounces through host memory.
#
#   tools/demo.sh [SIZE_MIB]
#
# The route: Debian 13's own 7.x kernel (trixie-backports, stock-7.3), which
# has CONFIG_PCI_P2PDMA=y: nothing is compiled but our module, in a Debian
# 13 root of Debian's packages (tools/vm/debian-root.sh), and the
# checkpoint is a file on XFS on the remote namespace, written with
# O_DIRECT by a user process from P2P memory mapped through p2pmem/allocate,
# through the namespace's multipath head (nvme_core's default, as on
# Debian). NRP_DEMO_KERNEL picks another guest kernel: demo (Linux 6.1
# built from linux-source-6.1 with no more than the demo needs,
# tools/vm/config/base.config: the GPU stand-in's in-kernel mover writes
# the raw namespace, as 6.1 has no user-space P2PDMA), p2p (the suite's
# 6.1 kernel) or p2p-6.12 (6.12 built with P2PDMA, the file checkpoint).
# tools/demo-guest.sh decides by what the guest kernel offers. The last
# lines give the time of each part.
set -euo pipefail
. "$(dirname "$0")/vm/lib.sh"

size=${1:-256}
kernel=${NRP_DEMO_KERNEL:-stock-7.3}
nrp_use_kernel "$kernel"
case $NRP_FLAVOUR/$NRP_SERIES in
demo/* | p2p/*) ;;
# Debian's own kernel of a series whose stock kernel has P2PDMA
stock/7.*) ;;
*) nrp_die "the demo needs a P2PDMA guest kernel (stock-7.3, demo, p2p, p2p-6.12), not '$kernel'" ;;
esac
start=$SECONDS
parts=()
part() { parts+=("$(printf '  %-28s %s' "$1" "$(nrp_dur $((SECONDS - $2)))")"); }

t=$SECONDS
[ "$(id -u)" = 0 ] || sudo -v || nrp_die "the set-up needs root (sudo)"
if [ "$NRP_FLAVOUR" = stock ]; then
	# Debian 13's kernel: a Debian 13 root of Debian's packages (its
	# kernel, headers and source; a minute or two of downloads and
	# unpacking) and our module built in it, while QEMU and the tools
	# the guest runs install here. mmdebstrap first: the root needs it.
	"$NRP_TOP/tools/setup.sh" --for root
	pkglog=$(mktemp /tmp/nrp-demo-setup.XXXXXX)
	"$NRP_TOP/tools/setup.sh" --for guest >"$pkglog" 2>&1 &
	pk=$!
	trap 'wait $pk 2>/dev/null' EXIT
	"$NRP_TOP/tools/vm/debian-root.sh" --for build path >/dev/null || {
		wait $pk || true
		nrp_die "making the Debian 13 root failed"
	}
	part "Debian 13 root (Linux $NRP_SERIES)" $t
	t=$SECONDS
	"$NRP_TOP/tools/vm/build-module.sh" "$kernel" >/dev/null || {
		wait $pk || true
		nrp_die "building the module for $kernel failed"
	}
	part "module for $kernel" $t
	beside="beside the root"
else
	# Only the demo's packages, of its kernel series (make check
	# installs the rest). What the kernel build needs first; QEMU and
	# the tools the guest runs install while the kernel builds: on a
	# fresh machine the build is most of the demo's time, and apt's
	# downloads and unpacking hide in it.
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
	beside="beside the kernel build"
fi
wait $pk || { cat "$pkglog" >&2; nrp_die "installing the demo's packages failed (log: $pkglog)"; }
trap - EXIT
parts+=("$(printf '  %-28s %s' "set-up (QEMU, guest tools)" \
	"$(sed -n 's/.*packages (guest) ready in \([0-9]*\) s.*/\1/p' "$pkglog") s, $beside")")
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
