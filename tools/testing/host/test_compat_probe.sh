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
# nrp_add_ctrl() a no-op: controllers that never appear.
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
