#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The DKMS flow of the README, in a guest: the module DKMS built on the
# host for this kernel (tools/vm/build-dkms.sh, run-guest.sh --dkms) is
# installed by "dkms install" under updates/dkms/ of this guest's
# /lib/modules (a tmpfs overlay on the host's), with the module index that
# depmod made for exactly these files on the host (depmod here, reading
# every module over 9p under TCG, takes minutes); with the
# modprobe.d drop-in of the admin guide ("Replace it") "modprobe
# nvme-rdma-p2p" loads exactly that file, which registers "rdma", and
# "nvme connect -t rdma" is served by it, with I/O, also when nothing was
# loaded beforehand. "dkms remove" and removing the drop-in give "-t rdma"
# back to the in-tree nvme_rdma.
#
# Which module serves a controller is read from the module reference an
# open /dev/nvmeX takes on its transport's module. The copy of the module
# the runner installs for the other tests (updates/nvme-rdma-p2p/) is set
# aside meanwhile, so that the DKMS one is the only one there is, and put
# back with the module index as it was. NRP_DKMS_DEPMOD=1 lets DKMS run
# depmod in the guest instead (about 5 minutes).
#
# Skips where no DKMS build was made for this kernel: the runner makes one
# for Debian's stock kernels when asked (run-guest.sh --dkms; run-all.sh
# asks on stock and stock-6.12).
# nrp-timeout: 900
. "$(dirname "$0")/lib.sh"

krel=$(uname -r)
kmods=/lib/modules/$krel
dd=${NRP_DKMS_DIR:-}
[ -n "$dd" ] ||
	nrp_skip "no DKMS build for $krel: tools/vm/run-guest.sh --dkms makes one on the host for the stock kernels (run-all.sh does)"
[ "$dd" != failed ] ||
	nrp_fail "the host's dkms build failed: see dkms-build.log in the guest's output directory"
[ "$(cat "$dd/krel" 2>/dev/null)" = "$krel" ] ||
	nrp_fail "the DKMS build in $dd is for '$(cat "$dd/krel" 2>/dev/null)', not $krel"
command -v dkms >/dev/null || nrp_fail "dkms missing (tools/setup.sh installs it)"
ver=$(cat "$dd/version")
m=nvme-rdma-p2p/$ver
D=(dkms --dkmstree "$dd/dkms" --sourcetree "$dd/src")
conf=/etc/modprobe.d/nvme-rdma-p2p.conf
t0=$SECONDS
step() { echo "[$((SECONDS - t0))s] $*"; }

# The module as DKMS built it.
built=$(ls "$dd/dkms/nvme-rdma-p2p/$ver/$krel"/*/module/nvme-rdma-p2p.ko* 2>/dev/null | head -n1)
[ -n "$built" ] || nrp_fail "no module in DKMS's tree for $krel: $("${D[@]}" status 2>&1)"
# The guest's module index as depmod leaves it after "dkms install" (or
# "dkms remove"): depmod's own run, or the one made on the host for the
# same files.
depmod_step() { # installed|removed
	if [ "${NRP_DKMS_DEPMOD:-0}" = 1 ]; then
		nrp_must depmod -a "$krel"
	else
		cp -a "$dd/index-$1/." "$kmods/" || nrp_fail "cannot install the module index"
	fi
}
dkms_opts=()
[ "${NRP_DKMS_DEPMOD:-0}" = 1 ] || dkms_opts=(--no-depmod)

# A clean start: no transport loaded, the runner's copy set aside.
nrp_mod_loaded $NRP_MOD && nrp_must rmmod $NRP_MOD
nrp_mod_loaded nvme_rdma && nrp_must rmmod nvme_rdma
stash=/tmp/nrp-dkms-stash
rm -rf $stash && mkdir -p $stash/index || nrp_fail "cannot make $stash"
cp -a "$kmods"/modules.* $stash/index/
[ -d "$kmods/updates/nvme-rdma-p2p" ] && mv "$kmods/updates/nvme-rdma-p2p" $stash/
# (dkms remove takes updates/ away once it is empty)
restore() {
	rm -rf "$kmods/updates/dkms" $conf
	mkdir -p "$kmods/updates"
	[ ! -d $stash/nvme-rdma-p2p ] || mv $stash/nvme-rdma-p2p "$kmods/updates/"
	cp -a $stash/index/. "$kmods/"
}
nrp_cleanup_push restore
nrp_cleanup_push "rmmod $NRP_MOD; rmmod nvme_rdma"
# (updates/ only: a walk of the whole tree over 9p takes long)
left=$(find "$kmods/updates" "$kmods/extra" -name 'nvme-rdma-p2p.ko*' 2>/dev/null)
[ -z "$left" ] || nrp_fail "another nvme-rdma-p2p module is installed: $left"

nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
nrp_backing_dev ram 64
nrp_nvmet_setup "$NRP_DEV"

# --- install ---------------------------------------------------------------
"${D[@]}" status "$m" -k "$krel" | grep -q ': built' ||
	nrp_fail "dkms status before install: $("${D[@]}" status 2>&1)"
step "dkms install $m -k $krel"
out=$("${D[@]}" install "$m" -k "$krel" "${dkms_opts[@]}" 2>&1) || nrp_fail "dkms install failed: $out"
step "installed"
depmod_step installed
step "depmod done"
st=$("${D[@]}" status "$m" -k "$krel")
echo "dkms status: $st"
echo "$st" | grep -q ': installed' || nrp_fail "dkms status after install: $st"
ko=$(find "$kmods/updates" -name 'nvme-rdma-p2p.ko*')
case $ko in
"$kmods/updates/dkms/nvme-rdma-p2p.ko"*) ;;
*) nrp_fail "installed as '$ko', not under $kmods/updates/dkms/" ;;
esac
cmp -s "$ko" "$built" || nrp_fail "$ko is not the module DKMS built ($built)"
# depmod ran: modprobe's index resolves the name to that file
nrp_expect "modinfo -n nvme-rdma-p2p" "$(modinfo -n nvme-rdma-p2p 2>&1)" "$ko"
nrp_expect "vermagic release" "$(modinfo -F vermagic "$ko" | cut -d' ' -f1)" "$krel"
id=$(nrp_ko_build_id "$ko")
[ -n "$id" ] || nrp_fail "no build id in $ko"
echo "$ko: build id $id, signed by '$(modinfo -F signer "$ko")'"

# The admin guide's "Replace it": the drop-in routes nvme-rdma to us.
cp "$NRP_TOP/tools/modprobe.d/nvme-rdma-p2p.conf" $conf || nrp_fail "cannot install $conf"

# --- load by name, prove which file is in memory --------------------------
out=$(modprobe -v nvme-rdma-p2p 2>&1) || nrp_fail "modprobe nvme-rdma-p2p failed: $out"
echo "modprobe -v: $(echo "$out" | grep nvme-rdma-p2p)"
echo "$out" | grep -q "insmod $ko" || nrp_fail "modprobe did not insert $ko: $out"
nrp_mod_loaded $NRP_MOD || nrp_fail "$NRP_MOD is not loaded"
nrp_expect "loaded module's build id" "$(nrp_loaded_build_id)" "$id"
nrp_expect "registered transport" "$(cat /sys/module/$NRP_MOD/parameters/transport)" rdma

# --- connect -t rdma: served by the DKMS module ----------------------------
connect_rdma() {
	out=$(nvme connect -t rdma -a "$NRP_TGT_IP4" -s "$NRP_PORT" -n "$NRP_SUBNQN" 2>&1) ||
		nrp_fail "nvme connect -t rdma failed: $out"
	nrp_cleanup_push nrp_disconnect_all
	ctrl=$(nrp_ctrl_of_subsys "$NRP_SUBNQN") || nrp_fail "no controller for $NRP_SUBNQN: $out"
	nrp_expect "/sys/class/nvme/$ctrl/transport" "$(cat "/sys/class/nvme/$ctrl/transport")" rdma
}
connect_rdma
nrp_mod_loaded nvme_rdma && nrp_fail "the in-tree nvme_rdma came up despite the drop-in"
nrp_held_by $NRP_MOD "$ctrl" || nrp_fail "$ctrl does not hold $NRP_MOD"
nrp_ctrl_is_ours "$ctrl" || nrp_fail "$ctrl has no debugfs directory of $NRP_MOD"
echo "$ctrl: transport rdma, held by $NRP_MOD ($ko)"
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace on $ctrl"
nrp_fio_verify "$dev" --rw=randwrite --bs=16k --size=4m --iodepth=8 --ioengine=libaio
[ "$(nrp_stat "$ctrl" commands)" -gt 0 ] || nrp_fail "$ctrl counted no commands"
echo "fio: 4 MiB written and verified through $ctrl"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_must rmmod $NRP_MOD

# Nothing loaded: "-t rdma" asks for nvme-rdma, the drop-in loads ours.
step "connect -t rdma with nothing loaded"
connect_rdma
nrp_mod_loaded nvme_rdma && nrp_fail "the in-tree nvme_rdma came up despite the drop-in"
nrp_mod_loaded $NRP_MOD || nrp_fail "connect -t rdma did not load $NRP_MOD"
nrp_expect "autoloaded module's build id" "$(nrp_loaded_build_id)" "$id"
nrp_held_by $NRP_MOD "$ctrl" || nrp_fail "$ctrl (autoloaded) does not hold $NRP_MOD"
echo "$ctrl: $NRP_MOD loaded by the drop-in for nvme-rdma"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_must rmmod $NRP_MOD

# --- uninstall: the in-tree module serves -t rdma again --------------------
step "dkms remove $m -k $krel"
out=$("${D[@]}" remove "$m" -k "$krel" "${dkms_opts[@]}" 2>&1) || nrp_fail "dkms remove failed: $out"
step "removed"
depmod_step removed
rm -f $conf
left=$(find "$kmods/updates" -name 'nvme-rdma-p2p.ko*' 2>/dev/null)
[ -z "$left" ] || nrp_fail "left behind by dkms remove: $left"
"${D[@]}" status "$m" -k "$krel" 2>/dev/null | grep -q ': installed' &&
	nrp_fail "dkms status after remove: $("${D[@]}" status)"
out=$(modinfo -n nvme-rdma-p2p 2>&1) && nrp_fail "modinfo still finds nvme-rdma-p2p: $out"
echo "modinfo nvme-rdma-p2p: $out"

connect_rdma
nrp_mod_loaded $NRP_MOD && nrp_fail "$NRP_MOD is loaded after the uninstall"
nrp_mod_loaded nvme_rdma || nrp_fail "connect -t rdma did not load the in-tree nvme_rdma"
nrp_held_by nvme_rdma "$ctrl" || nrp_fail "$ctrl does not hold the in-tree nvme_rdma"
nrp_ctrl_is_ours "$ctrl" && nrp_fail "$ctrl has a debugfs directory of $NRP_MOD"
echo "$ctrl: transport rdma, held by the in-tree nvme_rdma ($(modinfo -n nvme_rdma))"
dd if=/dev/urandom of=/tmp/nrp-dkms.pat bs=64k count=4 status=none
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace on $ctrl"
nrp_must dd if=/tmp/nrp-dkms.pat of="$dev" bs=64k oflag=direct status=none
cmp -n 262144 /tmp/nrp-dkms.pat <(dd if="$dev" bs=64k count=4 iflag=direct status=none) ||
	nrp_fail "read back through the in-tree nvme_rdma differs"
echo "256 KiB written and read back through the in-tree nvme_rdma"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_must rmmod nvme_rdma

# the runner's copy back for the tests that follow in this boot
restore
if [ -d "$kmods/updates/nvme-rdma-p2p" ]; then
	out=$(modinfo -n nvme-rdma-p2p 2>&1)
	[ -e "$out" ] || nrp_fail "the runner's module is not back: modinfo -n says '$out'"
	echo "the runner's module is back: $out"
fi
step "done"
nrp_pass
