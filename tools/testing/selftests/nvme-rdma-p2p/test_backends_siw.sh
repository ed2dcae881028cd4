#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The other fixtures: namespaces on memory-backed null_blk and on a loop
# file, an allowed-hosts list, and the siw soft-iWARP device where the
# kernel has it; verified I/O through our transport on each.
. "$(dirname "$0")/lib.sh"

one() { # RDMA BACKING
	local ctrl dev
	NRP_RDMA_TYPE=$1 NRP_BACKING=$2
	nrp_std_setup 64
	nrp_nvmet_allow_hosts "$NRP_HOSTNQN"
	nrp_connect --hostnqn="$NRP_HOSTNQN"; ctrl=$NRP_CTRL
	dev=$(nrp_ns_dev "$ctrl") || nrp_fail "$1/$2: no namespace"
	nrp_fio_verify "$dev" --ioengine=libaio --rw=randwrite --bs=32k --iodepth=16 --size=16m
	echo "$1 on $2, allowed host only: verified"
	_nrp_run_cleanups
	nrp_assert_no_ctrls
}

one rxe null
one rxe loop
if modinfo siw >/dev/null 2>&1; then
	one siw ram
else
	echo "siw: not in this kernel"
fi
nrp_pass
