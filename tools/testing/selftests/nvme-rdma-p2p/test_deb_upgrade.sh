#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# An upgrade of the Debian package: "dpkg -i" of a newer build (one commit
# later, tools/vm/build-deb.sh) over the installed one removes the old
# version's DKMS builds and source and builds and installs the new one:
# dkms status, /usr/src and /var/lib/dkms name only the new version,
# modprobe loads the new file (its version in modinfo and in
# /sys/module), which serves "-t rdma" with verified I/O, and the admin's
# enabled drop-in (a conffile) stays enabled. Then "apt purge" leaves
# nothing.
#
# The other series' headers are away meanwhile, so that each version is
# built once, for this kernel (test_deb_install covers both kernels).
# nrp-timeout: 5400
. "$(dirname "$0")/lib_deb.sh"

dpkg --compare-versions "$DEB_V2" gt "$DEB_V1" || nrp_fail "$DEB_V2 is not newer than $DEB_V1"
deb_setup
nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
nrp_backing_dev ram 64
nrp_nvmet_setup "$NRP_DEV"

deb_apt_install 1
deb_dkms_installed "$DEB_V1" "$DEB_KREL"
ko1=$DEB_KO
id1=$(nrp_ko_build_id "$ko1")
deb_modprobe "$ko1" "$DEB_V1"
nrp_must rmmod $NRP_MOD
deb_enable_dropin

# --- dpkg -i of the newer build -------------------------------------------
deb2=$(ls "$DEB_DIR"/2/nvme-rdma-p2p-dkms_*.deb)
deb_step "dpkg -i $(basename "$deb2")"
out=$(DEBIAN_FRONTEND=noninteractive dpkg -i "$deb2" 2>&1) ||
	nrp_fail "dpkg -i $deb2 failed: $(echo "$out" | tail -n 30)"
deb_step "upgraded"
echo "$out" | sed -n '/^nvme-rdma-p2p .*per installed kernel:/,$p'
nrp_expect "installed version" "$(dpkg-query -W -f='${Version}' $DEB_PKG)" "$DEB_V2"
echo "$out" | grep -q "  Linux $DEB_KREL: built and installed" ||
	nrp_fail "the upgrade did not report a build for $DEB_KREL: $(echo "$out" | tail -n 20)"
st=$(deb_dkms_status -m nvme-rdma-p2p)
echo "dkms status: $st"
echo "$st" | grep -q "$DEB_V1" && nrp_fail "dkms still has $DEB_V1: $st"
# (besides the versions, DKMS keeps a kernel-<release>-<arch> link there)
nrp_expect "DKMS's versions" "$(cd /var/lib/dkms/nvme-rdma-p2p && ls -d [0-9]*)" "$DEB_V2"
nrp_expect "sources in /usr/src" "$(cd /usr/src && ls -d nvme-rdma-p2p-*)" "nvme-rdma-p2p-$DEB_V2"
deb_dkms_installed "$DEB_V2" "$DEB_KREL"
ko2=$DEB_KO
[ "$(find "$DEB_KMODS/updates" -name 'nvme-rdma-p2p.ko*' | wc -l)" = 1 ] ||
	nrp_fail "more than one module installed: $(find "$DEB_KMODS/updates" -name 'nvme-rdma-p2p.ko*')"
id2=$(nrp_ko_build_id "$ko2")
[ "$id2" != "$id1" ] || nrp_fail "the module after the upgrade has the old build id $id1"
grep -q '^install nvme_rdma ' "$DEB_CONF" ||
	nrp_fail "the upgrade lost the admin's enabled drop-in: $(grep install "$DEB_CONF")"
echo "the enabled drop-in stayed enabled"

deb_modprobe "$ko2" "$DEB_V2"
deb_step "connect -t rdma with the new module"
deb_connect_io $NRP_MOD fio

deb_purge
deb_step "done"
nrp_pass
