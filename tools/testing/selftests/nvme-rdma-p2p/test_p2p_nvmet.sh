#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The target side: a kernel nvmet namespace backed by our remote
# namespace, re-exported over nvmet-tcp.
#
# nvmet checks two things before it takes p2pmem for a namespace: (1)
# the backing disk's queue has the P2PDMA flag, which is our
# supports_pci_p2pdma answer, and (2) a published p2pmem provider is
# reachable from the disk's device by PCI topology. (1) follows
# allow_soft_p2p here. (2) cannot hold for any fabrics namespace on 6.1:
# its disk hangs under the nvme-fabrics class device, which has no PCI
# parent, so pci_p2pmem_find() finds nothing. Both outcomes are asserted,
# and the re-export serves I/O without p2pmem.
. "$(dirname "$0")/lib_p2p.sh"

REX_NQN=nqn.2026-11.io.nvme-rdma-p2p:reexport
REX_PORT=4421
cfs=/sys/kernel/config/nvmet

# $1: expected error in the log when enabling with p2pmem=$2
enable_p2pmem_fails() {
	local want=$1 val=$2 ns=$cfs/subsystems/$REX_NQN/namespaces/1
	echo "$val" >"$ns/p2pmem" || nrp_fail "p2pmem=$val not accepted by configfs"
	nrp_dmesg_mark
	if echo 1 >"$ns/enable" 2>/dev/null; then
		echo 0 >"$ns/enable"
		nrp_fail "nvmet enabled p2pmem=$val on $NRP_NS"
	fi
	nrp_dmesg_since | grep -q "$want" ||
		nrp_fail "p2pmem=$val: expected '$want' in the log: $(nrp_dmesg_since | tail -n 3)"
	echo "  p2pmem=$val refused: $(nrp_dmesg_since | grep -o "$want.*" | head -n 1)"
}

reexport_setup() {
	local ns=$cfs/subsystems/$REX_NQN/namespaces/1
	mkdir "$cfs/subsystems/$REX_NQN" || nrp_fail "cannot create $REX_NQN"
	nrp_cleanup_push "rmdir $cfs/subsystems/$REX_NQN"
	echo 1 >"$cfs/subsystems/$REX_NQN/attr_allow_any_host"
	mkdir "$ns"
	nrp_cleanup_push "rmdir $ns"
	echo "$NRP_NS" >"$ns/device_path"
	[ -e "$ns/p2pmem" ] || nrp_fail "nvmet has no p2pmem attribute on a P2PDMA kernel"
}

nrp_p2p_setup 64 0
echo "$NRP_CTRL without allow_soft_p2p:"
reexport_setup
enable_p2pmem_fails "peer-to-peer DMA is not supported by the driver of $NRP_NS" 1
nrp_must rmdir "$cfs/subsystems/$REX_NQN/namespaces/1"
nrp_must rmdir "$cfs/subsystems/$REX_NQN"
nrp_must nvme disconnect -d "$NRP_CTRL"
nrp_must modprobe -r $NRP_MOD

nrp_load_ours "$NRP_TRANSPORT" allow_soft_p2p=1
nrp_connect
NRP_NS=$(nrp_ns_dev "$NRP_CTRL") || nrp_fail "no namespace on $NRP_CTRL"
[ "$(nrp_stat "$NRP_CTRL" p2p_capable)" = 1 ] || nrp_fail "$NRP_CTRL not P2P capable"
echo "$NRP_CTRL with allow_soft_p2p=1 (the queue flag is set):"
reexport_setup
enable_p2pmem_fails "no peer-to-peer memory is available for $NRP_NS" 1
enable_p2pmem_fails "cannot be used for peer-to-peer DMA as it is not a PCI device" \
	"$(basename "$NRP_GPU_PCI")"

# Without p2pmem the re-export serves I/O through our controller.
ns=$cfs/subsystems/$REX_NQN/namespaces/1
echo 0 >"$ns/p2pmem"
echo 1 >"$ns/enable" || nrp_fail "cannot enable the re-export of $NRP_NS"
nrp_cleanup_push "echo 0 >$ns/enable"
nrp_must modprobe nvmet-tcp
nrp_cleanup_push "modprobe -r nvmet-tcp"
mkdir "$cfs/ports/2"
nrp_cleanup_push "rmdir $cfs/ports/2"
echo tcp >"$cfs/ports/2/addr_trtype"
echo ipv4 >"$cfs/ports/2/addr_adrfam"
echo "$NRP_TGT_IP4" >"$cfs/ports/2/addr_traddr"
echo $REX_PORT >"$cfs/ports/2/addr_trsvcid"
ln -s "$cfs/subsystems/$REX_NQN" "$cfs/ports/2/subsystems/" || nrp_fail "cannot start the tcp port"
nrp_cleanup_push "rm $cfs/ports/2/subsystems/$REX_NQN"
nrp_must modprobe nvme-tcp
nrp_cleanup_push "modprobe -r nvme-tcp"
nrp_must nvme connect -t tcp -a "$NRP_TGT_IP4" -s $REX_PORT -n $REX_NQN
nrp_cleanup_push "nvme disconnect -n $REX_NQN"
tcp_ctrl=$(nrp_ctrl_of_subsys $REX_NQN) || nrp_fail "no controller for $REX_NQN"
tcp_ns=$(nrp_ns_dev "$tcp_ctrl") || nrp_fail "no namespace on $tcp_ctrl"
nrp_snap
nrp_fio_verify "$tcp_ns" --rw=randwrite --bs=16k --size=16M --iodepth=8 --ioengine=libaio
moved=$(nrp_delta host_bytes_mapped)
[ "$moved" -ge $((32 << 20)) ] || nrp_fail "the re-export moved only $moved bytes through $NRP_CTRL"
echo "nvme-tcp -> nvmet -> $NRP_NS -> nvme-rdma-p2p: fio verify clean, $((moved >> 20)) MiB through $NRP_CTRL"
nrp_pass
