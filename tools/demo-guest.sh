#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest half of tools/demo.sh (runs inside the QEMU guest).
set -u
. tools/testing/selftests/nvme-rdma-p2p/lib.sh
size=${1:-256}

step() { echo "==> $*"; }

step "soft-RoCE (rxe) on a veth pair, nvmet-rdma target on a $((size + 64)) MiB RAM disk"
modprobe brd rd_nr=1 rd_size=$(((size + 64) * 1024)) || nrp_fail "no RAM disk"
nrp_cleanup_push "modprobe -r brd"
nrp_rdma_setup rxe
nrp_nvmet_setup /dev/ram0
rdma link show | sed 's/^/    /'

step "installing the modprobe.d drop-in, loading nvme-rdma-p2p as transport 'rdma'"
cp tools/modprobe.d/nvme-rdma-p2p.conf /etc/modprobe.d/
modprobe nvme-rdma-p2p || nrp_fail "modprobe nvme-rdma-p2p failed"
nrp_cleanup_push "modprobe -r nvme-rdma-p2p"
dmesg | grep 'nvme_rdma_p2p' | tail -n 2 | sed 's/^/    /'

step "nvme discover -t rdma -a $NRP_TGT_IP4"
nvme discover -t rdma -a "$NRP_TGT_IP4" -s "$NRP_PORT" | grep -E 'trtype|subnqn|traddr' | sed 's/^/    /' ||
	nrp_fail "discovery failed"
step "nvme connect -t rdma -a $NRP_TGT_IP4 -n $NRP_SUBNQN"
nvme connect -t rdma -a "$NRP_TGT_IP4" -s "$NRP_PORT" -n "$NRP_SUBNQN" ||
	nrp_fail "connect failed"
nrp_cleanup_push "nvme disconnect -n $NRP_SUBNQN"
ctrl=$(nrp_ctrl_of_subsys "$NRP_SUBNQN") || nrp_fail "no controller for $NRP_SUBNQN"
nrp_ctrl_is_ours "$ctrl" || nrp_fail "$ctrl is not driven by nvme-rdma-p2p"
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace block device appeared"
nvme list | sed 's/^/    /'
echo "    $ctrl: $(cat /sys/class/nvme/$ctrl/address), driven by nvme-rdma-p2p"

step "writing a ${size} MiB checkpoint to $dev (O_DIRECT, 1 MiB commands)"
head -c $((size * 1024 * 1024)) /dev/urandom >/tmp/ckpt
want=$(sha256sum </tmp/ckpt | cut -d' ' -f1)
t0=$(date +%s.%N)
dd if=/tmp/ckpt of="$dev" bs=1M oflag=direct status=none || nrp_fail "write failed"
t1=$(date +%s.%N)
step "reading it back"
got=$(dd if="$dev" bs=1M count="$size" iflag=direct status=none | sha256sum | cut -d' ' -f1)
t2=$(date +%s.%N)
echo "    sha256 written: $want"
echo "    sha256 read:    $got"
[ "$want" = "$got" ] || nrp_fail "checkpoint does not read back byte-exact"
awk -v s="$size" -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN {
	printf "    write: %.2f s, %.1f MiB/s   read: %.2f s, %.1f MiB/s\n",
	       b - a, s / (b - a), c - b, s / (c - b) }'
stats=$NRP_DEBUGFS/$ctrl/stats
if [ -n "$stats" ]; then
	step "transport counters ($stats)"
	sed 's/^/    /' "$stats"
fi
step "checkpoint verified: $size MiB over nvme-rdma-p2p, byte-exact"
