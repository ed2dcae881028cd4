#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tools/nrp-check's provider and client pairs on a QEMU PCIe topology,
# against the kernel (tools/nrp-p2pdist: pci_p2pdma_distance_many() and
# the DMA API's mapping of a page of the provider for the client):
#  - providers: the GPU stand-in (tools/nrp-gpu on ivshmem) below a PCIe
#    switch, and a QEMU NVMe controller's CMB (the nvme driver publishes
#    it) as function 0 of a device below a root port;
#  - clients (--client: a NIC is no RDMA device; the kernel decides
#    between PCI devices, so the NIC's PCI function stands for an HCA):
#    virtio-net A below the same switch as the GPU, B alone below a root
#    port, C function 1 of the CMB's device;
#  - GPU-A is below one PCIe switch (distance 4), CMB-C two functions of
#    one device (distance 2): the peer's bus address; every other pair
#    crosses the host bridge (q35's 8086:29c0, not on the kernel's
#    whitelist): refused, unless the CPU is AMD Zen (-cpu EPYC), when
#    the kernel maps it through the host bridge;
#  - rxe on NIC A's netdev: soft RDMA, no PCI path whatever its NIC is;
#    allow_soft_p2p decides (the module is not loaded: unknown);
#  - ACS (QEMU gives root ports an ACS capability, its switch ports none;
#    the kernel reads it through q35's ECAM, CONFIG_PCI_MMCONFIG, which
#    the P2PDMA guest kernel and Debian's have): redirection on the root
#    port above the CMB's device sends CMB-C through the host bridge
#    (refused, or the host bridge on Zen) with the kernel's own fix
#    (pci=disable_acs_redir=); without it, the bus address again. The
#    test turns the root port's redirection off and on and compares each
#    decision with the kernel's. Where an IOMMU is on (-device
#    intel-iommu), the kernel turned ACS redirection on at boot and
#    nrp-check says so.
# On a kernel without P2PDMA (stock) the same verdicts are what a P2PDMA
# kernel would do, each pair refused by this one; no kernel comparison.
#
# Skips unless the guest has that topology (run-all.sh's topology_part
# boots it):
#   tools/vm/run-guest.sh --kernel p2p --gpu-mem 0 \
#     --qemu -machine --qemu q35 \
#     --qemu -object --qemu memory-backend-ram,id=gpum,size=64M \
#     --qemu -device --qemu pcie-root-port,id=rp1,chassis=1,bus=pcie.0,addr=0x10 \
#     --qemu -device --qemu x3130-upstream,id=up1,bus=rp1 \
#     --qemu -device --qemu xio3130-downstream,id=dn1,bus=up1,chassis=2,slot=1 \
#     --qemu -device --qemu xio3130-downstream,id=dn2,bus=up1,chassis=3,slot=2 \
#     --qemu -device --qemu ivshmem-plain,memdev=gpum,bus=dn1 \
#     --qemu -device --qemu virtio-net-pci,bus=dn2 \
#     --qemu -device --qemu pcie-root-port,id=rp2,chassis=4,bus=pcie.0,addr=0x11 \
#     --qemu -device --qemu virtio-net-pci,bus=rp2 \
#     --qemu -device --qemu pcie-root-port,id=rp3,chassis=5,bus=pcie.0,addr=0x12 \
#     --qemu -drive --qemu file=IMG,if=none,id=nv0,format=raw \
#     --qemu -device --qemu nvme,serial=cmb0,drive=nv0,cmb_size_mb=64,bus=rp3,addr=0.0,multifunction=on \
#     --qemu -device --qemu virtio-net-pci,bus=rp3,addr=0.1 \
#     -- tools/testing/selftests/nvme-rdma-p2p/run_tests.sh nrp_check_topology
# (IMG: any file of a few MiB; NIC without a -netdev: no packet goes
# anywhere), with --qemu -cpu --qemu EPYC for an AMD Zen CPU, or on the
# stock kernel with --qemu -device --qemu intel-iommu,intremap=off
# --append intel_iommu=on (before the other devices) for an IOMMU.
. "$(dirname "$0")/lib_check.sh"

command -v python3 >/dev/null || nrp_fail "python3 is not installed"

# The PCI address of the bridge above $1 ("" on the root bus).
up() {
	local p
	p=$(basename "$(dirname "$(readlink -f "/sys/bus/pci/devices/$1")")")
	[[ $p == pci* ]] || echo "$p"
}
# vendor:device of PCI device $1 (nothing for no device)
ids() {
	[ -n "$1" ] || return 0
	echo "$(cat "/sys/bus/pci/devices/$1/vendor"):$(cat "/sys/bus/pci/devices/$1/device")"
}

gpu= cmb= nic_a= nic_b= nic_c=
for d in /sys/bus/pci/devices/*; do
	b=$(basename "$d")
	case $(ids "$b") in
	0x1af4:0x1110) [ "$(ids "$(up "$b")")" = 0x104c:0x8233 ] && gpu=$b ;;
	0x1b36:0x0010) cmb=$b ;;
	esac
done
[ -n "$gpu" ] && [ -n "$cmb" ] ||
	nrp_skip "no GPU stand-in below a PCIe switch and NVMe CMB in this guest: start it with the topology of this test's header"
usp=$(up "$(up "$gpu")")
for d in /sys/bus/pci/devices/*; do
	b=$(basename "$d")
	[ "$(ids "$b")" = 0x1af4:0x1041 ] || continue
	if [ "$(up "$(up "$b")")" = "$usp" ]; then
		nic_a=$b
	elif [ "${b%.*}" = "${cmb%.*}" ]; then
		nic_c=$b
	else
		nic_b=$b
	fi
done
[ -n "$nic_a" ] && [ -n "$nic_b" ] && [ -n "$nic_c" ] ||
	nrp_fail "the topology lacks a NIC: A '$nic_a' (switch), B '$nic_b' (root port), C '$nic_c' (CMB's device)"
rp=$(up "$cmb")
echo "GPU stand-in $gpu (switch $usp), NVMe CMB $cmb (root port $rp); NICs A $nic_a, B $nic_b, C $nic_c"

zen=0
grep -q "^vendor_id.*AuthenticAMD" /proc/cpuinfo &&
	[ "$(awk -F': ' '/^cpu family/ { print $2; exit }' /proc/cpuinfo)" -ge 23 ] && zen=1
across=refused
[ "$zen" = 1 ] && across=host_bridge
has=0
grep -qw pci_p2pdma_add_resource /proc/kallsyms && has=1
echo "AMD Zen CPU: $zen, P2PDMA: $has; across the host bridge the kernel should decide: $across"

# the providers
nrp_must modprobe nvme
nrp_cleanup_push "modprobe -r nvme"
args=(--client "$nic_a" --client "$nic_b" --client "$nic_c")
if [ "$has" = 1 ]; then
	NRP_GPU_ARGS="window_mb=16" nrp_gpu_setup
	for _ in $(seq 150); do
		[ -e "/sys/bus/pci/devices/$cmb/p2pmem/published" ] && break
		sleep 0.2
	done
	[ "$(cat "/sys/bus/pci/devices/$cmb/p2pmem/published" 2>/dev/null)" = 1 ] ||
		nrp_fail "the nvme driver did not publish $cmb's CMB as P2PDMA memory"
	nrp_p2pdist_load
else
	args+=(--provider "$gpu" --provider "$cmb")
fi

# $1 provider, $2 client, $3 expected topology, $4 distance, $5 decision
expect_pair() {
	local id="pair:$1:$2" v=ok
	[ "$(nrp_check_val "$id" data.topology)" = "$3" ] ||
		nrp_fail "$1 -> $2: '$(nrp_check_val "$id" data.topology)', expected '$3'"
	[ "$(nrp_check_val "$id" data.distance)" = "$4" ] ||
		nrp_fail "$1 -> $2: distance $(nrp_check_val "$id" data.distance), expected $4"
	[ "$(nrp_check_val "$id" data.decision)" = "$5" ] ||
		nrp_fail "$1 -> $2: '$(nrp_check_val "$id" data.decision)', expected '$5'"
	[ "$5" = refused ] && v=fail
	if [ "$has" = 1 ]; then
		nrp_check_expect "$id" "$v"
		nrp_check_vs_kernel "$1" "$2"
	else
		nrp_check_expect "$id" fail "refused, no P2PDMA"
		echo "$1 -> $2: '$5' on a P2PDMA kernel, refused by this one"
	fi
}

# Soft RDMA on NIC A's netdev: a PCI NIC, but rxe copies with the CPU, so
# no PCI path decides for it; allow_soft_p2p does (module not loaded).
modprobe virtio_net || nrp_fail "no virtio_net driver"
nrp_cleanup_push "modprobe -r virtio_net"
modprobe rdma_rxe || nrp_fail "no rdma_rxe driver"
ifname=
for _ in $(seq 50); do
	ifname=$(ls /sys/bus/pci/devices/"$nic_a"/virtio*/net/ 2>/dev/null | head -n1)
	[ -n "$ifname" ] && break
	sleep 0.2
done
[ -n "$ifname" ] || nrp_fail "no netdev on $nic_a"
nrp_rdma_link rxe "$ifname" nrp_rxe_n

nrp_check "${args[@]}"
nrp_check_expect rdma:nrp_rxe_n info "soft RDMA (rxe on $ifname)"
nrp_check_expect rdma:nrp_rxe_n info "$ifname is PCI $nic_a, which never sees the P2P memory"
for p in "$gpu" "$cmb"; do
	nrp_check_expect "pair:$p:nrp_rxe_n" unknown "allow_soft_p2p decides"
	[ "$(nrp_check_val "pair:$p:nrp_rxe_n" data.kernel_decision)" = soft ] ||
		nrp_fail "rxe on a PCI NIC given a PCI decision"
done
for p in "$gpu" "$cmb"; do
	if [ "$has" = 1 ]; then
		nrp_check_expect "provider:$p" ok "published"
	else
		nrp_check_expect "provider:$p" fail "no P2PDMA memory registered"
	fi
done
if [ -n "$(ls /sys/class/iommu 2>/dev/null)" ]; then
	[ "$(nrp_check_val kernel.iommu data.mode)" = translated ] ||
		nrp_fail "an IOMMU is on, nrp-check says '$(nrp_check_val kernel.iommu data.mode)'"
	nrp_check_expect "pair:$gpu:$nic_a" "$(nrp_check_val "pair:$gpu:$nic_a" verdict)" \
		"IOMMU: provider $(cat "/sys/bus/pci/devices/$gpu/iommu_group/type")"
else
	[ "$(nrp_check_val kernel.iommu data.mode)" = none ] || nrp_fail "no IOMMU, nrp-check says otherwise"
fi

# ACS of the root port above the CMB's device: where its control register
# is, or nothing where the extended config space does not show.
acs_off=$(python3 - "/sys/bus/pci/devices/$rp/config" <<'PY'
import struct, sys
c = open(sys.argv[1], "rb").read()
pos = 0x100
while len(c) > 256 and pos:
    h = struct.unpack_from("<I", c, pos)[0]
    if h & 0xFFFF == 0x000D:
        print(pos + 6)
        break
    pos = (h >> 20) & 0xFFC
PY
)
acs_get() { od -An -tu2 -j "$acs_off" -N2 "/sys/bus/pci/devices/$rp/config" | tr -d ' '; }
acs_set() {
	python3 -c "import os, struct, sys; fd = os.open(sys.argv[1], os.O_WRONLY); os.pwrite(fd, struct.pack('<H', int(sys.argv[3])), int(sys.argv[2])); os.close(fd)" \
		"/sys/bus/pci/devices/$rp/config" "$acs_off" "$1" || nrp_fail "cannot write $rp's ACS control"
	[ "$(acs_get)" = "$1" ] || nrp_fail "$rp's ACS control reads $(acs_get) after writing $1"
}
cmb_c=below
if [ -n "$acs_off" ]; then
	acs0=$(acs_get)
	nrp_cleanup_push "acs_set $acs0"
	echo "root port $rp: ACS control $(printf %#x "$acs0") at boot"
	# redirect request (0x4), completion (0x8), egress control (0x20)
	[ $((acs0 & 0x2c)) != 0 ] && cmb_c=redirect
	# the kernel turns redirection on where an IOMMU isolates devices,
	# and leaves it as it found it (off, from QEMU) otherwise
	if [ -n "$(ls /sys/class/iommu 2>/dev/null)" ]; then
		[ "$cmb_c" = redirect ] || nrp_fail "an IOMMU is on, but $rp's ACS redirection is off"
	else
		[ "$cmb_c" = below ] || nrp_fail "no IOMMU, but $rp's ACS redirects ($(printf %#x "$acs0"))"
	fi
else
	# q35 has ECAM: a kernel without CONFIG_PCI_MMCONFIG sees no ACS,
	# and neither can nrp-check (its fake hosts cover that case)
	nrp_fail "root port $rp shows no ACS capability in $(stat -c %s "/sys/bus/pci/devices/$rp/config") bytes of config space: does this kernel lack CONFIG_PCI_MMCONFIG?"
fi

check_cmb_c() { # below|redirect: what the root port's ACS should make of CMB-C
	if [ "$1" = below ]; then
		expect_pair "$cmb" "$nic_c" "functions of one device" 2 bus_address
	else
		expect_pair "$cmb" "$nic_c" "functions of one device" 2 "$across"
		nrp_check_expect "pair:$cmb:$nic_c" "$(nrp_check_val "pair:$cmb:$nic_c" verdict)" "ACS redirect: $rp("
		# (without P2PDMA the fix is the kernel)
		[ "$across/$has" = refused/1 ] && nrp_check_fix "pair:$cmb:$nic_c" "pci=disable_acs_redir=$rp"
	fi
	return 0
}

expect_pair "$gpu" "$nic_a" "below one PCIe switch" 4 bus_address
expect_pair "$gpu" "$nic_b" "across the host bridge" 6 "$across"
expect_pair "$gpu" "$nic_c" "across the host bridge" 6 "$across"
expect_pair "$cmb" "$nic_a" "across the host bridge" 6 "$across"
expect_pair "$cmb" "$nic_b" "across the host bridge" 4 "$across"
check_cmb_c "$cmb_c"

if [ -n "$acs_off" ]; then
	acs_set 0
	nrp_check "${args[@]}"
	check_cmb_c below
	acs_set $((0x0c))
	nrp_check "${args[@]}"
	check_cmb_c redirect
	# the GPU's pair below the switch does not pass the root port
	expect_pair "$gpu" "$nic_a" "below one PCIe switch" 4 bus_address
	acs_set "$acs0"
fi
nrp_pass
