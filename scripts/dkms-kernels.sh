#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# After "apt install nvme-rdma-p2p-dkms" (its postinst): build and install
# the module with DKMS for every installed kernel it can be built for, and
# say for each kernel what became of it; for a skipped one, why, and what
# to install (scripts/dkms-check.sh).
#
#   /usr/src/nvme-rdma-p2p-<version>/scripts/dkms-kernels.sh
#
# DKMS's own step before it (dh_dkms, /usr/lib/dkms/common.postinst)
# builds for the running and the newest kernel only, and says of a kernel
# it skips no more than "Skipped.". Exit 1 when a kernel that passed the
# check failed to build or install: the package's install fails then, as
# it does when DKMS's own step fails.
set -u
here=$(cd "$(dirname "$0")" && pwd)
m=nvme-rdma-p2p
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$here/../dkms.conf")
[ -n "$ver" ] || { echo "$m: no PACKAGE_VERSION in $here/../dkms.conf" >&2; exit 1; }
rc=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
installed() { dkms status -m $m -v "$ver" -k "$1" 2>/dev/null | grep -q ': installed'; }

echo "$m $ver, per installed kernel:"
for d in /lib/modules/*/; do
	k=$(basename "$d")
	# a removed kernel can leave its directory (DKMS's updates/ in it)
	[ -d "$d/kernel" ] || continue
	if installed "$k"; then
		echo "  Linux $k: built and installed ($(modinfo -k "$k" -n $m 2>/dev/null || echo "updates/dkms"))"
		continue
	fi
	if ! why=$("$here/dkms-check.sh" "$k" 2>&1); then
		echo "  Linux $k: skipped:"
		echo "$why" | sed "s/^$m: $k: /    /"
		continue
	fi
	if dkms install -m $m -v "$ver" -k "$k" >"$log" 2>&1 && installed "$k"; then
		echo "  Linux $k: built and installed ($(modinfo -k "$k" -n $m 2>/dev/null || echo "updates/dkms"))"
	else
		echo "  Linux $k: FAILED to build or install; dkms said:"
		sed 's/^/    /' "$log" | tail -n 20
		echo "    (the build log: /var/lib/dkms/$m/$ver/build/make.log)"
		rc=1
	fi
done
exit "$rc"
