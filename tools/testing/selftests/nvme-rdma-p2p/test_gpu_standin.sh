#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The GPU stand-in (tools/nrp-gpu, tools/p2p-checkpoint): a QEMU ivshmem
# BAR registered and published as P2PDMA memory, CPU fill and checksum
# through /dev/nrp-gpuN, the ioctls' input checks, a block device without
# the P2PDMA queue flag refused, and a forced round trip through brd with
# bios built from the BAR's own pages. Loads and unloads twice.
#
# Needs the guest started with an ivshmem device, e.g.
#   run-guest.sh --kernel p2p --qemu -object \
#     --qemu memory-backend-ram,id=gpumem,size=256M \
#     --qemu -device --qemu ivshmem-plain,memdev=gpumem -- ...
. "$(dirname "$0")/lib_p2p.sh"

GPU_MOD=$NRP_GPU_MOD
top=$(cd "$(dirname "$0")/../../../.." && pwd)
tool=$NRP_P2P_TOOL

nrp_gpu_find ||
	nrp_skip "no QEMU ivshmem device (PCI 1af4:1110): start QEMU with -object memory-backend-ram,id=gpumem,size=256M -device ivshmem-plain,memdev=gpumem"
ivshmem=$NRP_GPU_PCI
modinfo $GPU_MOD >/dev/null 2>&1 || nrp_fail "module $GPU_MOD not installed for $(uname -r)"
nrp_mod_loaded $GPU_MOD && nrp_fail "$GPU_MOD already loaded before the test"

if ! grep -qw pci_p2pdma_add_resource /proc/kallsyms; then
	# The module must still load and refuse the device with a reason.
	nrp_dmesg_mark
	nrp_must modprobe $GPU_MOD
	nrp_cleanup_push "modprobe -r $GPU_MOD"
	nrp_dmesg_since | grep -q "P2PDMA not available in this kernel" ||
		nrp_fail "no 'P2PDMA not available' message on a kernel without P2PDMA"
	[ -e "$ivshmem/driver" ] && nrp_fail "$GPU_MOD bound $ivshmem without P2PDMA"
	nrp_must modprobe -r $GPU_MOD
	nrp_skip "kernel $(uname -r) lacks P2PDMA (CONFIG_PCI_P2PDMA not set); module loads and refuses the device cleanly"
fi

# Normally built on the host before the guest boots; a no-op then.
make -s -C "$top/tools/p2p-checkpoint" >/tmp/nrp-ckpt-build.log 2>&1 ||
	nrp_fail "cannot build p2p-checkpoint: $(cat /tmp/nrp-ckpt-build.log)"

# BAR2 size from the PCI resource table (start, end, flags a line).
bar_size() {
	local start end
	read -r start end _ < <(sed -n 3p "$ivshmem/resource")
	echo $((end - start + 1))
}

# The /dev node of the nrp_gpu bound to our ivshmem.
gpu_node() {
	local m
	for m in "$ivshmem"/misc/nrp-gpu*; do
		[ -e "$m" ] && echo "/dev/$(basename "$m")" && return 0
	done
	return 1
}

# $1: expected window size in bytes
check_loaded() {
	local want_window=$1 p2p=$ivshmem/p2pmem bar info
	bar=$(bar_size)
	[ -d "$p2p" ] || nrp_fail "no $p2p after loading $GPU_MOD"
	[ "$(cat "$p2p/published")" = 1 ] || nrp_fail "p2pmem/published is not 1"
	[ "$(cat "$p2p/size")" = "$bar" ] ||
		nrp_fail "p2pmem/size $(cat "$p2p/size") is not the BAR size $bar"
	[ "$(cat "$p2p/available")" = $((bar - want_window)) ] ||
		nrp_fail "p2pmem/available $(cat "$p2p/available"), expected $((bar - want_window)) after a $want_window-byte window"
	gpu=$(gpu_node) || nrp_fail "no nrp-gpu misc device under $ivshmem"
	[ -c "$gpu" ] || nrp_fail "$gpu is not a character device"
	info=$("$tool" --gpu "$gpu" --info) || nrp_fail "INFO on $gpu failed"
	echo "$info" | grep -qx "bar_size $bar" || nrp_fail "INFO bar_size: $info"
	echo "$info" | grep -qx "window_size $want_window" || nrp_fail "INFO window_size: $info"
	echo "$info" | grep -qx "p2pdma 1" || nrp_fail "INFO: window pages are not P2PDMA pages"
	echo "$gpu: BAR2 $((bar >> 20)) MiB published, window $((want_window >> 20)) MiB, P2PDMA pages"
}

check_unloaded() {
	nrp_must modprobe -r $GPU_MOD
	nrp_mod_loaded $GPU_MOD && nrp_fail "$GPU_MOD still loaded after modprobe -r"
	[ -e "$ivshmem/p2pmem" ] && nrp_fail "p2pmem left behind after unload"
	[ -e "$ivshmem/driver" ] && nrp_fail "ivshmem still bound after unload"
	ls /dev/nrp-gpu* >/dev/null 2>&1 && nrp_fail "/dev/nrp-gpu* left behind"
	return 0
}

indent() { sed 's/^/  /'; }

# FILL then CHECKSUM of one range; $1 offset $2 length $3 seed. Sets
# $sum (not echoed: nrp_fail in a $(...) would end only the subshell).
fill_checksum() {
	local want got
	want=$("$tool" --gpu "$gpu" --fill --region-a "$1" --size "$2" --seed "$3" | awk '{print $2}')
	got=$("$tool" --gpu "$gpu" --checksum --region-a "$1" --size "$2" | awk '{print $2}')
	if [ -z "$want" ] || [ "$want" != "$got" ]; then
		nrp_fail "FILL/CHECKSUM at $1+$2 seed $3: pattern gives '$want', BAR checksum '$got'"
	fi
	sum=$got
}

# --- first load: the whole BAR is the window
nrp_dmesg_mark
nrp_must modprobe $GPU_MOD
nrp_cleanup_push "modprobe -r $GPU_MOD"
bar=$(bar_size)
check_loaded "$bar"

# FILL + CHECKSUM: the CPU's view of the BAR matches the pattern, at the
# start, in the middle and at the very end of the window.
fill_checksum 0 1M 1
c1=$sum
fill_checksum $((bar / 2 + 4096)) 64K 7
fill_checksum $((bar - 8)) 8 9
# The same fill gives the same checksum; another seed another one.
fill_checksum 0 1M 1
[ "$sum" = "$c1" ] || nrp_fail "the same fill gave another checksum"
fill_checksum 0 1M 2
[ "$sum" != "$c1" ] || nrp_fail "a different seed gave the same checksum"
echo "FILL/CHECKSUM round trips match the pattern"

# Bad input is refused with a reason, not acted on.
expect_err() { # what errno-text args...
	local what=$1 want=$2 out
	shift 2
	out=$("$tool" --gpu "$gpu" "$@" 2>&1) && nrp_fail "$what: accepted ($out)"
	echo "$out" | grep -q "$want" || nrp_fail "$what: wanted '$want', got: $out"
}
expect_err "unaligned offset" "Invalid argument" --checksum --region-a 4 --size 8
expect_err "unaligned length" "Invalid argument" --checksum --size 12
expect_err "beyond the window" "Numerical result out of range" --checksum --region-a "$bar" --size 8
expect_err "wrapping range" "Numerical result out of range" --fill --region-a 0xfffffffffffffff8 --size 16
nrp_dmesg_since | grep -q "outside the .*-byte window" || nrp_fail "no kernel message for an out-of-window range"

# A block device whose queue does not advertise P2PDMA: refused without
# --force, and nothing written.
modprobe brd rd_nr=1 rd_size=65536 || nrp_fail "cannot create a RAM disk"
nrp_cleanup_push "modprobe -r brd"
[ -b /dev/ram0 ] || nrp_fail "no /dev/ram0"
dd if=/dev/zero of=/dev/ram0 bs=1M count=16 oflag=direct status=none
size=16M
[ $((bar / 2)) -ge $((16 << 20)) ] || size=$((bar / 2))
nrp_dmesg_mark
out=$("$tool" --gpu "$gpu" --dev /dev/ram0 --size "$size" --stats none 2>&1)
rc=$?
indent <<<"$out"
[ $rc = 3 ] || nrp_fail "p2p-checkpoint to /dev/ram0 without --force: exit $rc, expected 3 (refused)"
echo "$out" | grep -q "refused: /dev/ram0 does not advertise PCI P2PDMA" ||
	nrp_fail "no clear refusal message"
nrp_dmesg_since | grep -q "ram0 does not support PCI P2PDMA" ||
	nrp_fail "no refusal message in the kernel log"
[ "$(dd if=/dev/ram0 bs=1M count=16 iflag=direct status=none | tr -d '\0' | wc -c)" = 0 ] ||
	nrp_fail "the refused checkpoint wrote to /dev/ram0"
echo "refused without --force, /dev/ram0 untouched"

# Forced: brd copies with the CPU, so BAR pages in its bios are fine, and
# the whole mover path (bios from P2PDMA pages, qd in flight) round-trips.
# A buffered read first puts the old (zero) data in the page cache, which
# the mover must drop as O_DIRECT would; fd 8 keeps the device open, as
# the last close would drop the cache anyway.
exec 8</dev/ram0
nrp_cleanup_push "exec 8<&-"
dd if=/dev/ram0 of=/dev/null bs=1M count=1 status=none
out=$("$tool" --gpu "$gpu" --dev /dev/ram0 --size "$size" --chunk 256K --qd 4 \
	--force --verify-chunks --stats none 2>&1) ||
	nrp_fail "forced checkpoint through /dev/ram0 failed: $out"
indent <<<"$out"
echo "$out" | grep -q "^checkpoint verified" || nrp_fail "no verification line"
want_bios=$(( ($(numfmt --from=iec "$size") + 262143) / 262144 ))
echo "$out" | grep -q "^write .* $want_bios bios" ||
	nrp_fail "write did not use $want_bios bios of 256 KiB"
[ "$(dd if=/dev/ram0 bs=1M count=1 status=none | tr -d '\0' | wc -c)" -gt 0 ] ||
	nrp_fail "a buffered read after the checkpoint still sees the old cached zeros"
exec 8<&-
# The mover's own checks: a device offset or chunk off the logical block.
expect_err "unaligned device offset" "Invalid argument" --dev /dev/ram0 --size 1M --offset 100 --force --stats none
expect_err "unaligned chunk" "Invalid argument" --dev /dev/ram0 --size 1M --chunk 1000 --force --stats none
nrp_must modprobe -r brd

# Unbinding while /dev/nrp-gpuN is open: the device goes away at once,
# the open file keeps only a dead handle, and binding again works.
bdf=$(basename "$ivshmem")
exec 9<"$gpu"
nrp_cleanup_push "exec 9<&-"
echo "$bdf" >/sys/bus/pci/drivers/$GPU_MOD/unbind || nrp_fail "unbind with $gpu open failed"
[ -e "$ivshmem/p2pmem" ] && nrp_fail "p2pmem left behind after unbind"
[ -e "$gpu" ] && nrp_fail "$gpu left behind after unbind"
exec 9<&-
echo "$bdf" >/sys/bus/pci/drivers/$GPU_MOD/bind || nrp_fail "binding again failed"
check_loaded "$bar"
echo "unbind with the device open, then bind again: clean"

# --- second load with a smaller window: rebinding after a full teardown
# works, and what the window does not take stays in the published pool.
check_unloaded
win_mb=$((bar >> 21))
[ "$win_mb" -le 64 ] || win_mb=64
win=$((win_mb << 20))
nrp_must modprobe $GPU_MOD window_mb=$win_mb
check_loaded $win
fill_checksum $((win - 4096)) 4096 3
expect_err "beyond a $win_mb MiB window" "Numerical result out of range" --checksum --region-a $win --size 8
check_unloaded
nrp_pass
