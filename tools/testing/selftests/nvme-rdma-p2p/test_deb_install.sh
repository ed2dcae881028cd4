#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The Debian package as the README installs it: "apt install
# ./nvme-rdma-p2p-dkms_*.deb" has DKMS build and install the module for
# this kernel, and the package says which kernel it skipped and why (the
# other series' headers are not installed yet); "modprobe nvme-rdma-p2p"
# loads exactly that file, of the package's version. The modprobe.d
# drop-in ships off: "nvme connect -t rdma" is still served by the in-tree
# nvme_rdma until the admin enables it as README.Debian says, then by
# this module, with verified I/O; the package's nrp-check says READY on a
# kernel with P2PDMA (and that a Debian stock one needs no custom kernel),
# else names the Debian kernel that has it. Installing the other series' headers
# afterwards (dpkg -i, as an upgrade brings a new kernel) has DKMS's hook
# build it for that kernel too. "apt purge" leaves nothing: dkms status
# empty, no file of the package under /lib/modules, /usr/src,
# /var/lib/dkms or /etc/modprobe.d, and the in-tree module serves
# "-t rdma" again.
#
# Every DKMS build here compiles in this TCG guest, and every depmod reads
# the kernel's modules over 9p: minutes each (see the step times).
# nrp-timeout: 5400
. "$(dirname "$0")/lib_deb.sh"

deb_setup
nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
nrp_backing_dev ram 64
nrp_nvmet_setup "$NRP_DEV"

# --- install: built for this kernel, the other one skipped with the reason
deb_apt_install 1
echo "$DEB_OUT" | grep -A3 "  Linux $DEB_OTHER_REL: skipped" | grep -q "install $DEB_OTHER_HDR" ||
	nrp_fail "the install did not say that $DEB_OTHER_REL was skipped for want of its headers"
deb_dkms_installed "$DEB_V1" "$DEB_KREL"
ko=$DEB_KO
# the README's commands
nrp_expect "modinfo -n nvme-rdma-p2p" "$(modinfo -n nvme-rdma-p2p 2>&1)" "$ko"
nrp_expect "dkms status" "$(deb_dkms_status)" "nvme-rdma-p2p/$DEB_V1, $DEB_KREL, x86_64: installed"
if [ -e "$NRP_TOP/tools/nrp-check" ]; then
	[ -x /usr/bin/nrp-check ] || nrp_fail "no /usr/bin/nrp-check from the package"
fi
st=$(deb_dkms_status -m nvme-rdma-p2p)
echo "$st" | grep -q "$DEB_OTHER_REL" &&
	nrp_fail "dkms has a build for $DEB_OTHER_REL, whose headers are not installed: $st"
[ -e "$DEB_CONF" ] || nrp_fail "no $DEB_CONF"
grep -q '^install' "$DEB_CONF" && nrp_fail "the drop-in routes nvme_rdma before the admin enabled it"

# --- modprobe: that file -------------------------------------------------
deb_modprobe "$ko" "$DEB_V1"
nrp_must rmmod $NRP_MOD

# --- -t rdma: the in-tree module until the drop-in is enabled ------------
deb_step "connect -t rdma, drop-in as shipped"
deb_connect_io nvme_rdma dd
nrp_mod_loaded $NRP_MOD && nrp_fail "$NRP_MOD came up without the drop-in enabled"
deb_enable_dropin
deb_step "connect -t rdma, drop-in enabled"
deb_connect_io $NRP_MOD fio
nrp_mod_loaded nvme_rdma && nrp_fail "the in-tree nvme_rdma came up despite the enabled drop-in"
# --- nrp-check, the package's command: ready where the kernel has P2PDMA
deb_nrp_check

# --- the other series' headers: DKMS's hook builds for that kernel -------
deb_step "dpkg -i $(basename "$DEB_OTHER_DEB")"
out=$(dpkg -i "$DEB_OTHER_DEB" 2>&1) || nrp_fail "dpkg -i $DEB_OTHER_DEB failed: $(echo "$out" | tail -n 20)"
deb_step "headers of $DEB_OTHER_REL installed"
echo "$out" | grep -i 'dkms' | head -n 5
deb_dkms_installed "$DEB_V1" "$DEB_OTHER_REL"
echo "DKMS built $DEB_V1 for $DEB_OTHER_REL on its headers' install: $DEB_KO"

# --- purge: nothing left, the in-tree module serves -t rdma again --------
deb_purge
deb_step "connect -t rdma after the purge"
deb_connect_io nvme_rdma dd
nrp_mod_loaded $NRP_MOD && nrp_fail "$NRP_MOD is loaded after the purge"
deb_step "done"
nrp_pass
