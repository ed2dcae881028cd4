#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Install what building and testing nvme-rdma-p2p needs on Debian 12, and
# build (or reuse) the cached P2PDMA guest kernel. Safe to run again.
#
#   tools/setup.sh [--with-debug-kernel]
set -euo pipefail
. "$(dirname "$0")/vm/lib.sh"

pkgs=(make gcc bc flex bison libelf-dev libssl-dev dwarves cpio xz-utils kmod
      file sparse perl python3
      "linux-image-$NRP_STOCK_KVER" "linux-headers-$NRP_STOCK_KVER" linux-source-6.1
      qemu-system-x86 busybox-static
      nvme-cli rdma-core ibverbs-utils iproute2 fio e2fsprogs xfsprogs)

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	sudo=
	[ "$(id -u)" = 0 ] || sudo=sudo
	nrp_log "installing: ${missing[*]}"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
		--no-install-recommends "${missing[@]}" >/dev/null
fi

"$NRP_TOP/tools/vm/build-kernel.sh" p2p >/dev/null
if [ "${1:-}" = --with-debug-kernel ]; then
	"$NRP_TOP/tools/vm/build-kernel.sh" debug >/dev/null
fi
nrp_log "setup done"
