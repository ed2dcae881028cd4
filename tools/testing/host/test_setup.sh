#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tools/setup.sh's parts, as it resolves them (--list, which installs
# nothing): make demo installs "build" (the kernel build's tools and
# linux-source), then "guest" (QEMU and what the guest runs) beside the
# kernel build. The two together are part of the whole set, so make check
# never lacks what the demo installed; the guest part never touches
# linux-source, which the build is reading; each holds what its users
# call; a bad part is refused. The default make demo (Debian 13's 7.3)
# installs "root" (mmdebstrap for the Debian 13 root) and "guest".
. "$(dirname "$0")/lib.sh"
setup=$TOP/tools/setup.sh

list() { "$setup" --list "$@" --series "$NRP_SERIES" || fail "setup.sh --list $* failed"; }
build=$(list --for build)
guest=$(list --for guest)
all=$(list)
for p in make gcc flex bison bc libelf-dev libssl-dev cpio kmod patch "linux-source-$NRP_SERIES"; do
	echo "$build" | grep -qx -- "$p" || fail "the build part lacks $p: $(echo $build)"
done
for p in qemu-system-x86 busybox-static nvme-cli rdma-core iproute2 fio python3 libibverbs-dev; do
	echo "$guest" | grep -qx -- "$p" || fail "the guest part lacks $p, which a guest run uses: $(echo $guest)"
done
echo "$guest" | grep -q '^linux-' && fail "the guest part installs a kernel package: $(echo "$guest" | grep '^linux-')"
extra=$(comm -23 <(printf '%s\n%s\n' "$build" "$guest" | sort -u) <(echo "$all"))
[ -z "$extra" ] || fail "in make demo's parts but not in the whole set: $(echo $extra)"
echo "$all" | grep -q "^linux-headers-" || fail "the whole set has no kernel headers"
# nothing of the suite's own in the demo's parts
for p in lintian python3-sphinx dkms linux-headers-; do
	printf '%s\n%s\n' "$build" "$guest" | grep -q "^$p" && fail "make demo's parts install $p"
done
root=$(list --for root)
[ "$root" = mmdebstrap ] || fail "the root part is '$(echo $root)', not mmdebstrap"
echo "$all" | grep -qx mmdebstrap || fail "the whole set lacks mmdebstrap (the Debian 13 root)"
out=$("$setup" --for nothing 2>&1) && fail "--for nothing was accepted"
echo "$out" | grep -q -- "--for: build, guest or root, not 'nothing'" || fail "--for nothing: '$out'"
echo "parts: build $(echo "$build" | wc -l), guest $(echo "$guest" | wc -l), root 1, whole set $(echo "$all" | wc -l) packages"
exit 0
