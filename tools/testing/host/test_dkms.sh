#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# DKMS (dkms.conf, README): for each installed stock kernel series (6.1,
# 6.12; 7.3 with Debian 13's DKMS in the Debian 13 root, and 6.12 there
# too, +deb13) "dkms add/build/install" builds the module, installs it under
# updates/ and signs it with the DKMS MOK key; "dkms remove --all" leaves
# nothing behind. All of it in private dkms, source and install trees (and
# a private MOK key), so the host's own /lib/modules and /var/lib/dkms are
# never touched. A kernel without NVMe fabrics is skipped by DKMS itself
# (BUILD_EXCLUSIVE_CONFIG, exit 77) and scripts/dkms-check.sh names what is
# missing, linux-source included. "dkms autoinstall", which the kernel
# packages' hooks run, skips a kernel the check rules out without failing
# (a failure there fails the new kernel's headers package).
#
# Every supported series must build, install and sign: the set-up installs
# the headers and sources of each, so a failure of any one fails the test.
. "$(dirname "$0")/lib.sh"
command -v dkms >/dev/null || fail "dkms missing (tools/setup.sh installs it)"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$TOP/dkms.conf")
[ -n "$ver" ] || fail "no PACKAGE_VERSION in dkms.conf"
src=$(scratch_tree)
mkdir -p "$t/src" "$t/dkms" "$t/lib"
mv "$src" "$t/src/nvme-rdma-p2p-$ver"
# dkms reads these from the environment unless framework.conf sets them
export mok_signing_key=$t/mok.key mok_certificate=$t/mok.pub
D=(dkms --dkmstree "$t/dkms" --sourcetree "$t/src" --installtree "$t/lib")
m=nvme-rdma-p2p/$ver

"${D[@]}" add "$m" >"$t/add.log" 2>&1 || { cat "$t/add.log"; fail "dkms add failed"; }

one_kernel() { # SERIES
	local s=$1 krel ko log=$t/$1.log
	krel=$("$TOP/scripts/kernel-series.sh" installed "$s" 2>/dev/null) ||
		fail "$s: no headers of Linux $s installed (tools/setup.sh installs them)"
	mkdir -p "$t/lib/$krel"
	# the build tree as /lib/modules has it: Debian 13's DKMS looks for
	# it, and for sign-file in it, under --installtree
	ln -sfn "/usr/src/linux-headers-$krel" "$t/lib/$krel/build"
	if ! "${D[@]}" build "$m" -k "$krel" >"$log" 2>&1; then
		tail -n 20 "$log"
		tail -n 20 "$t"/dkms/nvme-rdma-p2p/"$ver"/build/make.log 2>/dev/null
		fail "$s: dkms build for $krel failed"
	fi
	"${D[@]}" install "$m" -k "$krel" --no-depmod >>"$log" 2>&1 ||
		{ tail -n 20 "$log"; fail "$s: dkms install for $krel failed"; }
	ko=$(find "$t/lib/$krel" -name 'nvme-rdma-p2p.ko*')
	case $ko in
	"$t/lib/$krel/updates/"*) ;;
	*) fail "$s: installed as '${ko#"$t/lib/"}', not under $krel/updates/" ;;
	esac
	[ "$(modinfo -F vermagic "$ko" | cut -d' ' -f1)" = "$krel" ] ||
		fail "$s: vermagic '$(modinfo -F vermagic "$ko")' is not $krel"
	[ -n "$(modinfo -F signer "$ko")" ] || fail "$s: DKMS did not sign the module"
	"${D[@]}" status "$m" -k "$krel" | grep -q installed ||
		fail "$s: dkms status: $("${D[@]}" status "$m" -k "$krel")"
	echo "$s: built and installed ${ko#"$t/lib/"}, signed by '$(modinfo -F signer "$ko")'"
	installed+=("$krel")
}

installed=()
for series in $(series_native); do
	one_kernel "$series"
done
# in the Debian 13 root, its 6.12 too: Debian 13's own kernel
[ -z "${NRP_TEST_SERIES:-}" ] || [ "$NRP_TEST_SERIES" = 6.12 ] || one_kernel 6.12

"${D[@]}" remove "$m" --all --no-depmod >"$t/remove.log" 2>&1 ||
	{ cat "$t/remove.log"; fail "dkms remove --all failed"; }
left=$(find "$t/lib" "$t/dkms" -name 'nvme-rdma-p2p*.ko*')
[ -z "$left" ] || fail "left behind by dkms remove: $left"
[ -z "$("${D[@]}" status 2>/dev/null)" ] || fail "dkms status after remove: $("${D[@]}" status)"
echo "dkms remove --all: nothing left in the install or dkms tree"
series_in_root
# the rest once, on the host
[ -z "${NRP_TEST_SERIES:-}" ] || exit 0

# A kernel without NVMe over Fabrics: DKMS refuses (77), our check says why.
fake=$t/fake-kdir
mkdir -p "$fake"
grep -v -e '^CONFIG_NVME_FABRICS=' "$STOCK_KDIR/.config" >"$fake/.config"
"${D[@]}" add "$m" >/dev/null 2>&1 || fail "dkms add (again) failed"
"${D[@]}" build "$m" -k 6.1.0-0-fake --kernelsourcedir "$fake" >"$t/fake.log" 2>&1
rc=$?
[ "$rc" = 77 ] || { cat "$t/fake.log"; fail "dkms build without CONFIG_NVME_FABRICS exited $rc, not 77"; }
out=$("$TOP/scripts/dkms-check.sh" 6.1.0-0-fake "$fake" 2>&1) && fail "dkms-check.sh accepted a kernel without NVMe fabrics"
echo "$out" | grep -q "CONFIG_NVME_FABRICS (NVMe over Fabrics)" || fail "dkms-check.sh said: $out"
echo "no NVMe fabrics: dkms exit 77; $out"
cp "$STOCK_KDIR/.config" "$fake/.config"
out=$("$TOP/scripts/dkms-check.sh" 6.99.0-1-amd64 "$fake" 2>&1) && fail "dkms-check.sh accepted a series without linux-source"
echo "$out" | grep -q "install linux-source-6.99" || fail "dkms-check.sh said: $out"
echo "no linux-source: $out"

# The kernel hooks' "dkms autoinstall" for a kernel of another series:
# dkms 3.0.10 fails an autoinstall whose build BUILD_EXCLUSIVE skips, so
# dkms.conf leaves such a kernel out of it (and says why).
mkdir -p "$t/lib/6.99.0-1-amd64"
out=$("${D[@]}" autoinstall -k 6.99.0-1-amd64 2>&1) ||
	fail "dkms autoinstall for a Linux 6.99 kernel failed ($?): $out"
echo "$out" | grep -q "Linux 6.99 is not supported" || fail "dkms autoinstall said: $out"
[ -z "$(find "$t/lib/6.99.0-1-amd64" "$t/dkms" -path '*6.99.0-1-amd64*' -name 'nvme-rdma-p2p.ko*')" ] ||
	fail "dkms autoinstall built for Linux 6.99"
echo "autoinstall for Linux 6.99: skipped, exit 0"
exit 0
