#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A test that skips where it must run fails the run (issue 45). run-all.sh
# runs on stand-ins whose guests skip every test (fixtures/stub-run-guest.sh
# mode skip, stub-run-pair.sh), the P2PDMA kernels marked built in a
# scratch cache, so nothing boots and nothing is built:
# - the P2P tests on the 6.1 P2PDMA kernel, as a guest without the ivshmem
#   GPU stand-in skips them: each fails;
# - p2p_user_raw and p2p_user_fs on 6.12's, as when p2pmem/allocate is
#   missing, also over siw: each fails;
# - nrp_check_topology in its topology boot, a pair test in a pair's host
#   guest: each fails;
# - where the kernel lacks what they need (the P2P tests on stock 6.1,
#   the user-space ones on 6.1's P2PDMA kernel, pair_auth on stock 6.1)
#   the same skips stay skips and the run passes;
# - a kernel run-all.sh has no kernel_has line for stops the run.
# Then the tables: each test they name exists, and every test that calls a
# fixture that skips (lib_p2p.sh's P2P fixtures, in-band authentication,
# the pair's guests) is in test_needs with that need. And lib_p2p.sh's
# nrp_p2p_user_require on the host, uname a stand-in: no p2pmem/allocate
# fails on 6.2 and later (and on 6.1 with the mapping code), skips on 6.1.
. "$(dirname "$0")/lib.sh"
stub=$TOP/tools/testing/host/fixtures/stub-run-guest.sh
stub_pair=$TOP/tools/testing/host/fixtures/stub-run-pair.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tdir=$TOP/tools/testing/selftests/nvme-rdma-p2p

# A scratch cache: the P2PDMA kernels "built", the source shared with the
# real cache.
cache=$work/cache
mkdir -p "$cache/kernel"
ln -s "$NRP_CACHE/src" "$cache/src"
for k in p2p p2p-6.12; do
	d=$(NRP_CACHE=$cache bash -c ". '$TOP/tools/vm/lib.sh'; nrp_use_kernel $k; nrp_kernel_dir $k")
	mkdir -p "$d" && touch "$d/.done"
done

# run-all.sh on guests that skip every test for WHY; EXPECT pass or fail
skips() { # NAME EXPECT WHY KERNELS TEST...
	local name=$1 want=$2 why=$3 ks=$4 rc=0
	shift 4
	NRP_CACHE=$cache NRP_STUB_MODE=skip NRP_STUB_SKIP_WHY=$why NRP_RUN_GUEST=$stub \
		NRP_RUN_PAIR=$stub_pair "$TOP/tools/testing/run-all.sh" --no-setup --no-host-tests \
		--kernels "$ks" --out "$work/$name" "$@" >"$work/$name.log" 2>&1 || rc=$?
	case $want/$rc in
	pass/0 | fail/[1-9]*) ;;
	*)	cat "$work/$name.log"; fail "$name: run-all.sh exited $rc, the run should $want" ;;
	esac
	if [ "$want" = fail ]; then
		grep -qE '^[0-9]+ passed, [1-9][0-9]* failed' "$work/$name.log" ||
			fail "$name: the summary does not count the failure"
	fi
}
# each RESULT must be a line of run NAME's output
has() { # NAME LINE...
	local name=$1 l
	shift
	for l in "$@"; do
		grep -q "^$l" "$work/$name.log" || { cat "$work/$name.log"; fail "$name: no '$l'"; }
	done
	echo "$name: $(grep -E '^(FAIL|SKIP) ' "$work/$name.log" | cut -d' ' -f1-3 | xargs)"
}

skips no-ivshmem fail "no QEMU ivshmem device (PCI 1af4:1110) to play the GPU (run-guest.sh --gpu-mem)" \
	p2p p2p_checkpoint gpu_standin p2p_multipath
has no-ivshmem "FAIL  p2p/p2p_checkpoint  (skipped where it must run (it needs p2pdma; the boot has p2pdma" \
	"FAIL  p2p/gpu_standin  (skipped where it must run" "FAIL  p2p/p2p_multipath  (skipped where it must run"
grep -q "no QEMU ivshmem device" "$work/no-ivshmem.log" || fail "no-ivshmem: the skip's reason is not shown"
skips no-ivshmem-stock pass "kernel 6.1.0-57-amd64 lacks P2PDMA" stock p2p_checkpoint gpu_standin
has no-ivshmem-stock "SKIP  stock/p2p_checkpoint" "SKIP  stock/gpu_standin"

skips no-allocate fail "no p2pmem/allocate" p2p-6.12 p2p_user_raw p2p_user_fs
has no-allocate "FAIL  p2p-6.12/p2p_user_raw  (skipped where it must run (it needs p2pdma p2p-user;" \
	"FAIL  p2p-6.12/p2p_user_fs  (skipped where it must run"
NRP_TIER=full NRP_SIW_KERNELS=p2p-6.12 NRP_MPN_KERNELS=p2p-6.12 \
	skips no-allocate-siw fail "no p2pmem/allocate" p2p-6.12 p2p_user_raw
has no-allocate-siw "FAIL  p2p-6.12/p2p_user_raw" "FAIL  p2p-6.12-siw/p2p_user_raw  (skipped where it must run (it needs p2pdma p2p-user siw;" \
	"FAIL  p2p-6.12-mpn/p2p_user_raw  (skipped where it must run"
skips no-allocate-61 pass "Linux 6.1.192-nrp has no user-space P2PDMA" p2p p2p_user_raw p2p_user_fs
has no-allocate-61 "SKIP  p2p/p2p_user_raw" "SKIP  p2p/p2p_user_fs"

NRP_TOPOLOGY=p2p:plain skips topology fail "no GPU stand-in below a PCIe switch and NVMe CMB in this guest" \
	p2p nrp_check_topology
has topology "FAIL  p2p-topology/nrp_check_topology  (skipped where it must run (it needs pcie-topology;"

NRP_PAIR_KERNELS=stock skips pair fail "needs the host guest of two (tools/vm/run-pair.sh)" \
	stock pair_link_loss pair_auth
has pair "FAIL  stock/pair_link_loss  (skipped where it must run (it needs pair;" "SKIP  stock/pair_auth"
[ "$(grep -c '^FAIL' "$work/pair.log")" = 1 ] || { cat "$work/pair.log"; fail "pair: pair_auth on stock 6.1 (no in-band authentication) failed"; }

rc=0
"$TOP/tools/testing/run-all.sh" --list --kernels "p2p p2p-6.1" --out "$work/unknown" \
	>"$work/unknown.log" 2>&1 || rc=$?
[ "$rc" != 0 ] && grep -q "does not know what kernel p2p-6.1 has" "$work/unknown.log" ||
	{ cat "$work/unknown.log"; fail "a kernel without a kernel_has line: status $rc"; }
echo "unknown kernel: $(cat "$work/unknown.log")"

# The tables, as run-all.sh has them, and the tests' fixtures.
eval "$(sed -n '/^kernel_has=(/,/^)/p; /^test_needs=(/,/^)/p' "$TOP/tools/testing/run-all.sh")"
[ ${#kernel_has[@]} -gt 0 ] && [ ${#test_needs[@]} -gt 0 ] || fail "no kernel_has or test_needs in run-all.sh"
for tier in check full; do
	for k in $("$TOP/tools/testing/run-all.sh" --tier $tier --list --out "$work/list-$tier" |
		sed -n 's/^guest \([^:]*\):.*/\1/p' | sed 's/#.*//'); do
		printf '%s\n' "${kernel_has[@]}" | grep -q "^$k:" || fail "the $tier tier boots $k, which has no kernel_has line"
	done
done
needs_of() { # TEST: its line's needs, "-" if in none
	local kv
	for kv in "${test_needs[@]}"; do
		[[ " $(echo ${kv#*:}) " == *" $1 "* ]] && { echo "${kv%%:*}"; return; }
	done
	echo -
}
for kv in "${test_needs[@]}"; do
	for t in ${kv#*:}; do
		[ -f "$tdir/test_$t.sh" ] || fail "test_needs names $t, which is no test"
	done
done
check_callers() { # NEED FUNCTION-REGEX
	local f t n
	for f in $(grep -lE "$2" "$tdir"/test_*.sh); do
		t=$(basename "$f" .sh)
		t=${t#test_}
		n=$(needs_of "$t")
		case $1 in
		any)	[ "$n" != - ] || fail "$t calls a fixture that skips ($2) but is not in run-all.sh's test_needs" ;;
		*)	[[ " $n " == *" $1 "* ]] || fail "$t calls $2 but test_needs gives it '$n', not $1" ;;
		esac
	done
	if [ "$1" = any ]; then
		echo "the tests calling $2: in test_needs"
	else
		echo "the tests calling $2: in test_needs, needing $1"
	fi
}
check_callers any 'nrp_p2p_require|nrp_p2p_setup|nrp_p2p_user_setup|nrp_gpu_setup|nrp_gpu_find'
check_callers p2p-user 'nrp_p2p_user_setup'
check_callers auth 'nrp_auth_host_require'
check_callers pair 'nrp_pair_need|nrp_pair_host_setup'

# nrp_p2p_user_require on the host: uname answers RELEASE, the kernel has
# the mapping code or not, the stand-in's p2pmem/allocate is there or not
mkdir -p "$work/bin"
user_require() { # RELEASE CAPABLE(0|1) FILE(0|1): its exit status
	local d=$work/pci-$1-$2-$3 rc=0
	mkdir -p "$d/p2pmem"
	[ "$3" = 0 ] || touch "$d/p2pmem/allocate"
	printf '#!/bin/sh\necho %s\n' "$1" >"$work/bin/uname"
	chmod +x "$work/bin/uname"
	PATH=$work/bin:$PATH LIB=$tdir/lib_p2p.sh CAP=$2 PCI=$d bash -c '. "$LIB"
		nrp_p2p_user_capable() { [ "$CAP" = 1 ]; }
		NRP_GPU_PCI=$PCI nrp_p2p_user_require' >"$work/require.out" 2>&1 || rc=$?
	echo "$rc"
}
for c in "6.12.57+deb13-amd64 0 0 1" "7.3.0-1-amd64 0 0 1" "6.2.0 0 0 1" "6.1.0-57-amd64 1 0 1" \
	"6.1.192-nrp 0 0 4" "6.12.57+deb13-amd64 1 1 0" "6.1.0-57-amd64 0 1 0"; do
	read -r rel cap file want <<<"$c"
	got=$(user_require "$rel" "$cap" "$file")
	[ "$got" = "$want" ] || fail "nrp_p2p_user_require on $rel (mapping code $cap, p2pmem/allocate $file): exit $got, not $want: $(cat "$work/require.out")"
	echo "nrp_p2p_user_require, $rel, mapping code $cap, p2pmem/allocate $file: exit $got $(head -c 70 "$work/require.out")"
done
exit 0
