#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Before a DKMS build (dkms.conf PRE_BUILD), and by hand: can
# nvme-rdma-p2p be built for this kernel? Prints one line per missing
# piece, saying what to install or enable; exit 1 if any.
#
#   scripts/dkms-check.sh KERNELRELEASE [KDIR]
#
# DKMS itself skips kernels that miss a BUILD_EXCLUSIVE_CONFIG option with a
# generic line; this names the option, and the linux-source package the
# private nvme headers come from, which DKMS cannot know about.
set -u
krel=$1
kdir=${2:-/lib/modules/$krel/build}
bad=0
say() { echo "nvme-rdma-p2p: $krel: $*" >&2; bad=1; }

if [ ! -f "$kdir/.config" ]; then
	say "no kernel build tree at $kdir (install linux-headers-$krel)"
	exit 1
fi
for opt in CONFIG_NVME_FABRICS:"NVMe over Fabrics" CONFIG_INFINIBAND:"InfiniBand/RDMA" \
	CONFIG_INFINIBAND_ADDR_TRANS:"the RDMA connection manager"; do
	grep -qE "^${opt%%:*}=[ym]" "$kdir/.config" ||
		say "kernel built without ${opt%%:*} (${opt#*:}): cannot build here"
done
series=$(echo "$krel" | sed -n 's/^\([0-9]*\.[0-9]*\)\..*/\1/p')
if [ ! -r "/usr/src/linux-source-$series.tar.xz" ] && [ -z "${KSRC:-}" ]; then
	say "/usr/src/linux-source-$series.tar.xz missing: install linux-source-$series of the same version as linux-headers-$krel (the nvme host's private headers come from it)"
fi
exit "$bad"
