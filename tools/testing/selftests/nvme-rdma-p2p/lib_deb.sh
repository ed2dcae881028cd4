# SPDX-License-Identifier: GPL-2.0
# Helpers of the Debian package tests (test_deb_*.sh): the package as
# "make deb" built it on the host (tools/vm/build-deb.sh, run-guest.sh
# --deb: NRP_DEB_DIR has 1/ and 2/, a version and a newer one, and
# headers/, the stock kernels' linux-headers packages), installed with apt
# and dpkg into this guest's root, a tmpfs overlay of the host's, where
# DKMS builds and installs the module like on any Debian machine.
#
# The copy of the module the runner installs for the other tests
# (updates/nvme-rdma-p2p/) is set aside while a test runs, so that the
# package's is the only one there is, and put back with the module index
# as it was. The other series' headers are taken away for the install
# (dpkg -r), so that the package builds for the running kernel only and
# installing them afterwards is a real new kernel for DKMS's hooks.
. "$(dirname "$0")/lib.sh"

DEB_PKG=nvme-rdma-p2p-dkms
DEB_KREL=$(uname -r)
DEB_KMODS=/lib/modules/$DEB_KREL
DEB_CONF=/etc/modprobe.d/nvme-rdma-p2p.conf
DEB_T0=$SECONDS
# Each step with its time, also on the console: a test runs for an hour
# or more in a TCG guest on a loaded host, and its own output shows only
# when it ends.
deb_step() {
	echo "[$((SECONDS - DEB_T0))s] $*"
	echo "nrp-deb: [$((SECONDS - DEB_T0))s] $*" >/dev/kmsg 2>/dev/null
	return 0
}

DEB_DIR=${NRP_DEB_DIR:-}
[ -n "$DEB_DIR" ] ||
	nrp_skip "no package: tools/vm/run-guest.sh --deb builds it on the host"
[ "$DEB_DIR" != failed ] ||
	nrp_fail "make deb on the host failed: see deb-build.log in the guest's output directory"
for t in apt dpkg dkms; do
	command -v $t >/dev/null || nrp_fail "$t missing"
done
DEB_V1=$(cat "$DEB_DIR/version1") && DEB_V2=$(cat "$DEB_DIR/version2") ||
	nrp_fail "no versions in $DEB_DIR"

# The series of this kernel and the other one, whose headers come and go.
deb_series() { echo "$1" | sed -n 's/^\([0-9]*\.[0-9]*\)\..*/\1/p'; }
DEB_OTHER_REL=
for s in $("$NRP_TOP/scripts/kernel-series.sh" here); do
	[ "$s" = "$(deb_series "$DEB_KREL")" ] && continue
	DEB_OTHER_REL=$("$NRP_TOP/scripts/kernel-series.sh" installed "$s") ||
		nrp_fail "no headers of Linux $s installed on the host"
done
[ -n "$DEB_OTHER_REL" ] || nrp_fail "no other series than $DEB_KREL's"
DEB_OTHER_HDR=linux-headers-$DEB_OTHER_REL
DEB_OTHER_DEB=$(ls "$DEB_DIR"/headers/"${DEB_OTHER_HDR}"_*.deb 2>/dev/null | head -n1)
[ -n "$DEB_OTHER_DEB" ] || nrp_fail "no $DEB_OTHER_HDR package in $DEB_DIR/headers"

deb_installed() { [ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null)" = "ii " ]; }

# Set the runner's module aside, and the other series' headers; both come
# back when the test ends, and the package goes (purge) if it is still
# there.
deb_setup() {
	local stash=/tmp/nrp-deb-stash
	nrp_mod_loaded $NRP_MOD && nrp_must rmmod $NRP_MOD
	nrp_mod_loaded nvme_rdma && nrp_must rmmod nvme_rdma
	rm -rf $stash && mkdir -p $stash/index || nrp_fail "cannot make $stash"
	cp -a "$DEB_KMODS"/modules.* $stash/index/
	[ ! -d "$DEB_KMODS/updates/nvme-rdma-p2p" ] || mv "$DEB_KMODS/updates/nvme-rdma-p2p" $stash/
	nrp_cleanup_push deb_restore
	nrp_cleanup_push deb_purge_quietly
	# what the test loaded, if it still is (a test that passed unloaded both)
	nrp_cleanup_push "! nrp_mod_loaded $NRP_MOD || rmmod $NRP_MOD; ! nrp_mod_loaded nvme_rdma || rmmod nvme_rdma"
	deb_installed $DEB_PKG && nrp_fail "$DEB_PKG is installed before the test"
	local left
	left=$(find "$DEB_KMODS/updates" -name 'nvme-rdma-p2p.ko*' 2>/dev/null)
	[ -z "$left" ] || nrp_fail "another nvme-rdma-p2p module is installed: $left"

	deb_step "dpkg -r $DEB_OTHER_HDR"
	nrp_must dpkg -r "$DEB_OTHER_HDR" >/dev/null
	[ ! -e "/lib/modules/$DEB_OTHER_REL/build" ] ||
		nrp_fail "/lib/modules/$DEB_OTHER_REL/build is still there after dpkg -r $DEB_OTHER_HDR"
	deb_step "headers of $DEB_OTHER_REL removed"
}
deb_restore() {
	local stash=/tmp/nrp-deb-stash
	deb_installed "$DEB_OTHER_HDR" || dpkg -i "$DEB_OTHER_DEB" >/dev/null 2>&1
	mkdir -p "$DEB_KMODS/updates"
	[ ! -d $stash/nvme-rdma-p2p ] || mv $stash/nvme-rdma-p2p "$DEB_KMODS/updates/"
	cp -a $stash/index/. "$DEB_KMODS/"
}
deb_purge_quietly() {
	dpkg-query -W $DEB_PKG >/dev/null 2>&1 || return 0
	rm -f "$DEB_CONF"
	DEBIAN_FRONTEND=noninteractive apt-get purge -y -q $DEB_PKG >/dev/null 2>&1
}

# "apt install ./nvme-rdma-p2p-dkms_*.deb" in 1/ or 2/ (README); its
# output in DEB_OUT. Checks the package's report of the running kernel.
deb_apt_install() { # 1|2
	local v
	v=$(cat "$DEB_DIR/version$1")
	deb_step "apt install ./${DEB_PKG}_${v}_all.deb"
	DEB_OUT=$(cd "$DEB_DIR/$1" && DEBIAN_FRONTEND=noninteractive \
		apt install -y -q ./nvme-rdma-p2p-dkms_*.deb 2>&1) ||
		nrp_fail "apt install failed: $(echo "$DEB_OUT" | tail -n 30)"
	deb_step "installed"
	echo "$DEB_OUT" | sed -n '/^nvme-rdma-p2p .*per installed kernel:/,$p' | grep -v '^Processing'
	deb_installed $DEB_PKG || nrp_fail "$DEB_PKG is not installed after apt install"
	[ "$(dpkg-query -W -f='${Version}' $DEB_PKG)" = "$v" ] ||
		nrp_fail "installed $(dpkg-query -W -f='${Version}' $DEB_PKG), not $v"
	echo "$DEB_OUT" | grep -q "  Linux $DEB_KREL: built and installed" ||
		nrp_fail "the install did not report a build for $DEB_KREL: $(echo "$DEB_OUT" | tail -n 20)"
}

# "dkms status" (its arguments $@), without the one line Debian 12's DKMS
# (3.0.10) writes to stderr for Debian's 6.12 headers at every command:
# it reads the headers' vmlinux with "readelf -p .comment" to see whether
# clang built the kernel, and that vmlinux has no .comment section. Any
# other line, stderr's included, stays for the caller to judge.
deb_dkms_status() {
	dkms status "$@" 2>&1 |
		grep -vxF "readelf: Warning: Section '.comment' was not dumped because it does not exist"
	return 0
}

# DKMS has version $1 installed for kernel $2, and modprobe's index names
# that file, which is left in DEB_KO.
deb_dkms_installed() { # VERSION KREL
	local st ko built
	st=$(deb_dkms_status -m nvme-rdma-p2p -v "$1" -k "$2")
	echo "$st" | grep -q ': installed' || nrp_fail "dkms status for $2: $st"
	ko=$(modinfo -k "$2" -n nvme-rdma-p2p 2>&1)
	case $ko in
	"/lib/modules/$2/updates/dkms/nvme-rdma-p2p.ko"*) ;;
	*) nrp_fail "modinfo -k $2 -n nvme-rdma-p2p: '$ko', not DKMS's under updates/dkms/" ;;
	esac
	built=$(ls /var/lib/dkms/nvme-rdma-p2p/"$1"/"$2"/*/module/nvme-rdma-p2p.ko* 2>/dev/null | head -n1)
	cmp -s "$ko" "$built" || nrp_fail "$ko is not DKMS's build of $1 ($built)"
	nrp_expect "vermagic of $ko" "$(modinfo -F vermagic "$ko" | cut -d' ' -f1)" "$2"
	nrp_expect "version of $ko" "$(modinfo -F version "$ko")" "$1"
	DEB_KO=$ko
}

# modprobe loads the file of $1 (a path), whose version is $2.
deb_modprobe() { # KO VERSION
	local out id
	out=$(modprobe -v nvme-rdma-p2p 2>&1) || nrp_fail "modprobe nvme-rdma-p2p failed: $out"
	echo "$out" | grep -q "insmod $1" || nrp_fail "modprobe did not insert $1: $out"
	id=$(nrp_ko_build_id "$1")
	[ -n "$id" ] || nrp_fail "no build id in $1"
	nrp_expect "loaded module's build id" "$(nrp_loaded_build_id)" "$id"
	nrp_expect "/sys/module/$NRP_MOD/version" "$(cat /sys/module/$NRP_MOD/version)" "$2"
	nrp_expect "registered transport" "$(cat /sys/module/$NRP_MOD/parameters/transport)" rdma
	echo "modprobe: $1 (version $2, build id $id) loaded, transport rdma"
}

# nvme connect -t rdma; which module serves it must be $1; $2 names the
# I/O: fio (verified, through our counters) or dd (read back).
deb_connect_io() { # MODULE fio|dd
	local dev out
	NRP_TRANSPORT=rdma nrp_connect
	nrp_held_by "$1" "$NRP_CTRL" || nrp_fail "$NRP_CTRL is not served by $1"
	dev=$(nrp_ns_dev "$NRP_CTRL") || nrp_fail "no namespace on $NRP_CTRL"
	if [ "$2" = fio ]; then
		nrp_fio_verify "$dev" --rw=randwrite --bs=16k --size=4m --iodepth=8 --ioengine=libaio
		[ "$(nrp_stat "$NRP_CTRL" commands)" -gt 0 ] || nrp_fail "$NRP_CTRL counted no commands"
		echo "$NRP_CTRL ($1): 4 MiB written with fio and verified"
		# the package's command, from /usr/bin
		out=$(nrp-stat --json "$NRP_CTRL" 2>&1) || nrp_fail "nrp-stat failed: $out"
		[ "$(command -v nrp-stat)" = /usr/bin/nrp-stat ] &&
			echo "$out" | grep -q "\"$NRP_CTRL\"" ||
			nrp_fail "nrp-stat ($(command -v nrp-stat)) does not show $NRP_CTRL: $out"
		echo "/usr/bin/nrp-stat shows $NRP_CTRL"
	else
		dd if=/dev/urandom of=/tmp/nrp-deb.pat bs=64k count=4 status=none
		nrp_must dd if=/tmp/nrp-deb.pat of="$dev" bs=64k oflag=direct status=none
		cmp -n 262144 /tmp/nrp-deb.pat <(dd if="$dev" bs=64k count=4 iflag=direct status=none) ||
			nrp_fail "read back through $1 differs"
		echo "$NRP_CTRL ($1): 256 KiB written and read back"
	fi
	nrp_must nvme disconnect -n "$NRP_SUBNQN" >/dev/null
	nrp_wait_gone "$NRP_CTRL" 30 || nrp_fail "$NRP_CTRL is still there after the disconnect"
	nrp_must rmmod "$1"
}

# The package's nrp-check, as a user runs it after the install, with the
# package's module (allow_soft_p2p=1: the fabric is soft RDMA) connected
# over -t rdma and the GPU stand-in as the P2P memory provider. On a
# kernel with P2PDMA: READY through the controller's namespace, and on a
# Debian stock kernel (7.3 from trixie-backports) it says that no custom
# kernel is needed. Without P2PDMA: NOT READY, and the fix names the
# Debian kernel that has it (Debian 13's trixie-backports 7.x).
deb_nrp_check() {
	local out gpu=
	for d in /sys/bus/pci/devices/*; do
		[ "$(cat "$d/vendor" 2>/dev/null):$(cat "$d/device" 2>/dev/null)" = 0x1af4:0x1110 ] && gpu=$d
	done
	[ -n "$gpu" ] || nrp_fail "no QEMU ivshmem device to play the GPU (run-guest.sh --gpu-mem)"
	nrp_must modprobe nvme-rdma-p2p allow_soft_p2p=1
	if grep -q '^available' /sys/module/nvme_rdma_p2p/parameters/p2p; then
		nrp_must insmod "$NRP_KO_DIR/nrp_gpu.ko" window_mb=16
		nrp_cleanup_push "rmmod nrp_gpu"
		NRP_TRANSPORT=rdma nrp_connect
		deb_step "/usr/bin/nrp-check"
		out=$(/usr/bin/nrp-check 2>&1) || nrp_fail "nrp-check: not ready: $out"
		echo "$out" | tail -n 3
		echo "$out" | grep -q "^READY: a P2P checkpoint can work through" ||
			nrp_fail "nrp-check is not READY through $NRP_CTRL's namespace: $out"
		if [[ $DEB_KREL =~ \+deb[0-9]+-amd64$ ]]; then
			echo "$out" | grep -q "no custom kernel is needed" ||
				nrp_fail "nrp-check on Debian's stock $DEB_KREL does not say that no custom kernel is needed: $out"
		fi
		nrp_must nvme disconnect -n "$NRP_SUBNQN" >/dev/null
		nrp_wait_gone "$NRP_CTRL" 30 || nrp_fail "$NRP_CTRL is still there after the disconnect"
		nrp_must rmmod nrp_gpu
	else
		deb_step "/usr/bin/nrp-check (no P2PDMA)"
		out=$(/usr/bin/nrp-check 2>&1) && nrp_fail "nrp-check says ready on a kernel without P2PDMA: $out"
		echo "$out" | grep -q "^NOT READY" || nrp_fail "nrp-check: $out"
		echo "$out" | grep -q "fix: .*trixie-backports" ||
			nrp_fail "nrp-check's fix does not name Debian 13's trixie-backports kernel: $out"
		echo "$out" | grep "fix: .*trixie-backports" | head -n1
	fi
	nrp_must rmmod nvme_rdma_p2p
}

# The admin's switch of README.Debian: the drop-in's install line on.
deb_enable_dropin() {
	grep -q '^#install nvme_rdma ' "$DEB_CONF" || nrp_fail "$DEB_CONF has no commented install line: $(cat "$DEB_CONF")"
	sed -i 's/^#install nvme_rdma /install nvme_rdma /' "$DEB_CONF"
}

# "apt purge": nothing of the package is left.
deb_purge() {
	local out left
	deb_step "apt purge $DEB_PKG"
	out=$(DEBIAN_FRONTEND=noninteractive apt purge -y -q $DEB_PKG 2>&1) ||
		nrp_fail "apt purge failed: $(echo "$out" | tail -n 20)"
	deb_step "purged"
	out=$(deb_dkms_status)
	[ -z "$out" ] || nrp_fail "dkms status after purge: $out"
	# (not into the headers' trees under /usr/src: thousands of files)
	left=$(find /lib/modules/*/updates /usr/src /var/lib/dkms /etc/modprobe.d \
		-maxdepth 2 -name '*nvme-rdma-p2p*' 2>/dev/null)
	[ -z "$left" ] || nrp_fail "left behind by apt purge: $left"
	[ -z "$(dpkg-query -W -f='${db:Status-Abbrev}' $DEB_PKG 2>/dev/null | tr -d ' ')" ] ||
		nrp_fail "dpkg still knows $DEB_PKG: $(dpkg-query -W -f='${db:Status-Abbrev}' $DEB_PKG)"
	out=$(modinfo -n nvme-rdma-p2p 2>&1) && nrp_fail "modinfo still finds nvme-rdma-p2p: $out"
	echo "apt purge: dkms status empty, no file under /lib/modules, /usr/src, /var/lib/dkms, /etc/modprobe.d"
}
