#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# scripts/compat-probe.sh cannot be fooled by a header's layout. Against
# the stock 6.12 headers and the private headers of its source, with
# nvme.h reformatted as a distribution might (each prototype split over
# lines, tabs for blanks), every probe comes out as with the original;
# exported functions are decided by Module.symvers, and a header that
# contradicts it (nvme_add_ctrl's prototype removed) stops the probe with
# both facts, as does a KDIR without Module.symvers. Before this, a
# reformatted nvme_add_ctrl() prototype made the module build with
# nrp_add_ctrl() a no-op: controllers that never appear. A P2PDMA kernel
# whose is_pci_p2pdma_page() the probe misses is refused, by the probe and
# by nrp_compat.h.
# Then the same against Debian 13's 7.3, in the Debian 13 root, where a
# get_virt_boundary op the probe cannot read must stop the build: a module
# that leaves the op unset oopses at its first connect.
. "$(dirname "$0")/lib.sh"
series=${NRP_TEST_SERIES:-6.12}
kdir=$("$TOP/scripts/kernel-series.sh" kdir "$series") || fail "no stock $series headers"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$TOP/scripts/private-headers.sh" "$kdir" "" "$work/orig" >/dev/null ||
	fail "no private headers for $kdir"
h=drivers/nvme/host
"$TOP/scripts/compat-probe.sh" "$kdir" "$work/orig" "$work/orig.h" || fail "probe of the original headers failed"
grep -q '^#define NRP_HAVE_NVME_ADD_CTRL 1' "$work/orig.h" || fail "$series without nvme_add_ctrl: $(cat "$work/orig.h")"

# Every prototype that the probes read, broken after its return type and
# after each comma, with tabs.
mkdir -p "$work/fmt/$h"
cp "$work/orig/$h/fabrics.h" "$work/fmt/$h/"
sed -E 's/^(int|void|bool) (nvme_[a-z_]+)\(/\1\n\2\t(/; s/, /,\n\t\t/g' \
	"$work/orig/$h/nvme.h" >"$work/fmt/$h/nvme.h"
sed -E 's/^(bool) (nvmf_should_reconnect)\(/\1\n\2(/; s/, /,\n\t/g' \
	"$work/orig/$h/fabrics.h" >"$work/fmt/$h/fabrics.h"
grep -q '^nvme_add_ctrl' "$work/fmt/$h/nvme.h" || fail "the reformatting did not split nvme_add_ctrl()"
"$TOP/scripts/compat-probe.sh" "$kdir" "$work/fmt" "$work/fmt.h" || fail "probe of reformatted headers failed"
diff <(grep -v '^/\* Generated' "$work/orig.h") <(grep -v '^/\* Generated' "$work/fmt.h") ||
	fail "reformatted headers probe differently"
echo "reformatted nvme.h and fabrics.h: $(grep -c '^#define NRP_HAVE' "$work/fmt.h") probes as with the originals"

# The header says nvme_add_ctrl() is gone, Module.symvers says exported.
mkdir -p "$work/gone/$h"
cp "$work/orig/$h/fabrics.h" "$work/gone/$h/"
grep -v 'nvme_add_ctrl' "$work/orig/$h/nvme.h" >"$work/gone/$h/nvme.h"
out=$("$TOP/scripts/compat-probe.sh" "$kdir" "$work/gone" "$work/gone.h" 2>&1) &&
	fail "a header contradicting Module.symvers was accepted"
echo "$out" | grep -q "nvme_add_ctrl: .*Module.symvers says exported" || fail "unclear refusal: $out"
echo "contradicting header: $out"

# No Module.symvers at all: no guessing.
mkdir -p "$work/kdir"
cp -a "$kdir/Makefile" "$work/kdir/"
ln -s "$kdir/include" "$work/kdir/include"
out=$("$TOP/scripts/compat-probe.sh" "$work/kdir" "$work/orig" "$work/nosym.h" 2>&1) &&
	fail "a KDIR without Module.symvers was accepted"
echo "$out" | grep -q "Module.symvers missing" || fail "unclear refusal: $out"
echo "no Module.symvers: $out"

# A P2PDMA kernel (CONFIG_PCI_P2PDMA=y) whose is_pci_p2pdma_page() the
# probe does not find (a later kernel moved or renamed it): a module built
# so would take every P2P page for host memory and never refuse a P2P
# failover (issue 44, finding 7). The probe stops with both facts. The
# fake KDIR is the stock one, symlinked, with P2PDMA on in auto.conf and
# the function gone from the common part's memremap.h.
common=$(sed -n 's|^include \(.*\)/Makefile$|\1|p' "$kdir/Makefile")
[ -d "$common/include" ] || fail "no common headers for $kdir"
mkdir -p "$work/p2pk" "$work/p2pcommon"
cp -as "$kdir/." "$work/p2pk/"
cp -as "$common/include" "$work/p2pcommon/include"
# (the copies are symlinks into the installed headers: replace, never write)
rm "$work/p2pk/Makefile" "$work/p2pk/include/config/auto.conf"
printf 'include %s/Makefile\n' "$work/p2pcommon" >"$work/p2pk/Makefile"
{ grep -v '^CONFIG_PCI_P2PDMA=' "$kdir/include/config/auto.conf"; echo CONFIG_PCI_P2PDMA=y; } \
	>"$work/p2pk/include/config/auto.conf"
m=$work/p2pcommon/include/linux/memremap.h
sed '/is_pci_p2pdma_page/,/^}/d' "$(readlink -f "$m")" >"$m.new" && rm "$m" && mv "$m.new" "$m"
grep -q is_pci_p2pdma_page "$m" && fail "is_pci_p2pdma_page still in the fake memremap.h"
out=$("$TOP/scripts/compat-probe.sh" "$work/p2pk" "$work/orig" "$work/p2p.h" 2>&1) &&
	fail "a P2PDMA kernel without is_pci_p2pdma_page() was probed as usable: $(grep IS_PCI_P2PDMA_PAGE "$work/p2p.h")"
echo "$out" | grep -q "CONFIG_PCI_P2PDMA=y.*is_pci_p2pdma_page" || fail "unclear refusal: $out"
echo "P2PDMA kernel without is_pci_p2pdma_page(): $out"

# The header refuses it too, should a stale nrp_probed.h say so: the
# module's P2P file compiled with P2PDMA on and the probe line removed
# stops at nrp_compat.h's #error.
t=$(scratch_tree)
trap 'rm -rf "$work" "$t"' EXIT
mkdir -p "$work/gen"
cp -a "$work/orig" "$work/gen/priv"
grep -v IS_PCI_P2PDMA_PAGE "$work/orig.h" >"$work/gen/nrp_probed.h"
out=$(make -C "$kdir" M="$t" NVME_RDMA_P2P_GEN="$work/gen" KCFLAGS=-DCONFIG_PCI_P2PDMA=1 \
	drivers/nvme/host/rdma_p2p_map.o 2>&1) &&
	fail "rdma_p2p_map.c compiled for a P2PDMA kernel without is_pci_p2pdma_page()"
echo "$out" | grep -q "error: #error .*is_pci_p2pdma_page" || fail "no #error from nrp_compat.h: $out"
echo "stale probe on a P2PDMA kernel: $(echo "$out" | grep -m1 'error: #error' | sed 's/.*error: //')"

if [ "$series" = 6.12 ]; then
	grep -q 'NRP_HAVE_CTRL_OPS_GET_VIRT_BOUNDARY 1' "$work/orig.h" &&
		fail "6.12 probed with get_virt_boundary"
	series_in_root
	exit 0
fi
# 7.x: the op is there, and one of a form the probe does not know (a
# parameter more) stops the build instead of leaving the op unset
grep -q '^#define NRP_HAVE_CTRL_OPS_GET_VIRT_BOUNDARY 1' "$work/orig.h" ||
	fail "$series without get_virt_boundary: $(cat "$work/orig.h")"
mkdir -p "$work/vb/$h"
cp "$work/orig/$h/fabrics.h" "$work/vb/$h/"
sed 's/(\*get_virt_boundary)(struct nvme_ctrl \*ctrl, bool is_admin)/(*get_virt_boundary)(struct nvme_ctrl *ctrl, bool is_admin, int how)/' \
	"$work/orig/$h/nvme.h" >"$work/vb/$h/nvme.h"
cmp -s "$work/orig/$h/nvme.h" "$work/vb/$h/nvme.h" && fail "the edit of get_virt_boundary did not apply"
out=$("$TOP/scripts/compat-probe.sh" "$kdir" "$work/vb" "$work/vb.h" 2>&1) &&
	fail "a get_virt_boundary of unknown form was accepted"
echo "$out" | grep -q "names get_virt_boundary, but not in a form the probe knows" ||
	fail "unclear refusal: $out"
echo "get_virt_boundary of another form: $out"
exit 0
