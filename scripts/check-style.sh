#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# checkpatch --strict, sparse (C=2) and W=1 over the module: any finding fails.
#
#   scripts/check-style.sh KDIR GEN
set -u
kdir=$1 gen=$2
top=$(cd "$(dirname "$0")/.." && pwd)
# checkpatch of the series we check against (6.1, 6.12)
kver=$(make -s -C "$kdir" kernelversion 2>/dev/null) || kver=
[ -z "$kver" ] || export NRP_SERIES=${kver%.*}
. "$top/tools/vm/lib.sh"
fail=0

src=$(nrp_src_tree) || exit 1
files=$(cd "$top" && git ls-files 'drivers/*.c' 'drivers/*.h' 'include/*.h' \
	'tools/*.c' 'tools/*.h' 2>/dev/null)
[ -n "$files" ] || files=$(cd "$top" && find drivers include -name '*.[ch]')

echo "== checkpatch --strict"
# shellcheck disable=SC2086
(cd "$top" && perl "$src/scripts/checkpatch.pl" --strict --no-tree --quiet \
	--ignore FILE_PATH_CHANGES -f $files) || fail=1

# sparse and W=1 in a scratch copy, so that a full rebuild does not
# disturb the objects of an ordinary build.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -a "$top/Kbuild" "$top/drivers" "$top/include" "$work/"
find "$work" -name '*.o' -o -name '*.cmd' -o -name '*.ko' | xargs rm -f

echo "== sparse (C=2) and W=1"
command -v sparse >/dev/null || { echo "sparse is not installed (apt-get install sparse)"; exit 1; }
make -s -C "$kdir" M="$work" NVME_RDMA_P2P_GEN="$gen" C=2 W=1 modules \
	>"$work/build.log" 2>&1 || fail=1
# Kbuild's own notes are not findings; everything else a checker says is.
if grep -vE '^(Skipping BTF generation|make\[[0-9]+\]: (Entering|Leaving))' \
	"$work/build.log" | grep -E 'warning|error|sparse' ; then
	fail=1
fi

# The fixture modules under tools/ are held to the same standard.
for kb in "$top"/tools/*/Kbuild; do
	[ -e "$kb" ] || continue
	d=$(dirname "$kb")
	w=$work/fixture-$(basename "$d")
	cp -a "$d" "$w"
	find "$w" -name '*.o' -o -name '*.cmd' -o -name '*.ko' | xargs rm -f
	make -s -C "$kdir" M="$w" C=2 W=1 modules >"$w.log" 2>&1 || fail=1
	if grep -vE '^(Skipping BTF generation|make\[[0-9]+\]: (Entering|Leaving))' \
		"$w.log" | grep -E 'warning|error|sparse'; then
		fail=1
	fi
done

if [ "$fail" = 0 ]; then
	echo "check-style: clean"
else
	echo "check-style: FAILED"
fi
exit "$fail"
