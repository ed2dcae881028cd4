#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The fixtures themselves: soft RDMA (rxe, and siw where the kernel has it)
# on a veth pair and an nvmet-rdma target, exercised with the in-tree
# nvme_rdma host, then torn down without leaving anything behind. Every
# other test stands on these.
. "$(dirname "$0")/lib.sh"

one_fabric() {
	local type=$1 dev sum1 sum2
	nrp_rdma_setup "$type"
	nrp_nvmet_setup
	modprobe nvme-rdma || nrp_fail "no in-tree nvme-rdma"
	nrp_cleanup_push "modprobe -r nvme-rdma"
	nrp_must nvme connect -t rdma -a "$NRP_TGT_IP4" -s "$NRP_PORT" -n "$NRP_SUBNQN"
	nrp_cleanup_push nrp_disconnect_all
	sleep 1
	dev=$(nvme list -o json | sed -n 's/.*"DevicePath" *: *"\(.*\)".*/\1/p' | head -n1)
	[ -b "$dev" ] || nrp_fail "$type: no namespace after connect"
	head -c 4194304 /dev/urandom >/tmp/nrp-fx
	sum1=$(sha256sum </tmp/nrp-fx)
	dd if=/tmp/nrp-fx of="$dev" bs=64k oflag=direct status=none || nrp_fail "$type: write"
	sum2=$(dd if="$dev" bs=64k count=64 iflag=direct status=none | sha256sum)
	[ "$sum1" = "$sum2" ] || nrp_fail "$type: data read back differs"
	echo "$type: 4 MiB written and read back through nvmet-rdma"
	_nrp_run_cleanups
	# nothing of the fixture may survive its teardown
	[ -z "$(rdma link show 2>/dev/null)" ] || nrp_fail "$type: rdma links left: $(rdma link show)"
	ip link show nrp-t >/dev/null 2>&1 && nrp_fail "$type: veth left behind"
	nrp_mod_loaded nvmet && nrp_fail "$type: nvmet still loaded"
	ls /sys/class/nvme/ 2>/dev/null | grep -q . && nrp_fail "$type: nvme controllers left"
	return 0
}

one_fabric rxe
if modinfo siw >/dev/null 2>&1; then
	one_fabric siw
else
	echo "siw: not in this kernel, rxe only"
fi
nrp_pass
