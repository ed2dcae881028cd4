#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Before a DKMS build (dkms.conf), and by hand: can nvme-rdma-p2p be built
# for this kernel? Prints one line per missing piece, saying what to
# install or enable; exit 1 if any.
#
#   scripts/dkms-check.sh KERNELRELEASE [KDIR]
#
# DKMS itself skips kernels that miss a BUILD_EXCLUSIVE_CONFIG option with a
# generic line; this names the option, and the linux-source package the
# private nvme headers come from, which DKMS cannot know about. dkms.conf
# runs it for every kernel DKMS works on and excludes a kernel it rules
# out, so that such a kernel is skipped rather than failing its build.
set -u
krel=$1
kdir=${2:-/lib/modules/$krel/build}
here=$(dirname "$0")
bad=0
say() { echo "nvme-rdma-p2p: $krel: $*" >&2; bad=1; }
# The version of an installed package, or nothing.
pkgver() {
	dpkg-query -W -f='${db:Status-Abbrev}${Version}' "$1" 2>/dev/null | sed -n 's/^ii *//p'
}

series=$(echo "$krel" | sed -n 's/^\([0-9]*\.[0-9]*\)\..*/\1/p')
supported=$("$here/kernel-series.sh" list 2>/dev/null)
case " $supported " in
*" $series "*) ;;
*) say "Linux ${series:-$krel} is not supported (Linux ${supported// /, }): nothing to build" ;;
esac
if [ ! -f "$kdir/.config" ]; then
	say "no kernel build tree at $kdir (install linux-headers-$krel)"
	exit 1
fi
for opt in CONFIG_NVME_FABRICS:"NVMe over Fabrics" CONFIG_INFINIBAND:"InfiniBand/RDMA" \
	CONFIG_INFINIBAND_ADDR_TRANS:"the RDMA connection manager"; do
	grep -qE "^${opt%%:*}=[ym]" "$kdir/.config" ||
		say "kernel built without ${opt%%:*} (${opt#*:}): cannot build here"
done
if [ -z "${KSRC:-}" ]; then
	if [ ! -r "/usr/src/linux-source-$series.tar.xz" ]; then
		say "/usr/src/linux-source-$series.tar.xz missing: install linux-source-$series of the same version as linux-headers-$krel (the nvme host's private headers come from it)"
	else
		# Debian's headers and source of one kernel are packages of one
		# version; another version's private headers do not fit.
		hv=$(pkgver "linux-headers-$krel")
		sv=$(pkgver "linux-source-$series")
		[ -z "$hv" ] || [ -z "$sv" ] || [ "$hv" = "$sv" ] ||
			say "linux-source-$series is version $sv but linux-headers-$krel is $hv: the nvme host's private headers must be of the kernel's own version (upgrade both to one version)"
	fi
fi
exit "$bad"
