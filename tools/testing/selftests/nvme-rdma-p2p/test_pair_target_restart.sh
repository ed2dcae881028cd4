#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Two guests (tools/vm/run-pair.sh): the target restarts under a
# write+verify load, across a real link. First its nvmet port goes away and
# comes back; then the whole nvmet-rdma transport is unloaded and loaded
# again (the namespace, a RAM disk, keeps its data, as a target's disk
# would across a restart). The controller notices, reconnects until the
# target listens again, and every block verifies. The connection is bound
# to the host's own address (host_traddr), which reconnects keep.
. "$(dirname "$0")/lib.sh"

nrp_pair_host_setup
nrp_dmesg_mark
bound() { # WHEN
	grep -q "host_traddr=$NRP_HOST_IP4" "/sys/class/nvme/$ctrl/address" ||
		nrp_fail "$1: address lacks host_traddr: $(cat "/sys/class/nvme/$ctrl/address")"
}
nrp_connect --reconnect-delay=1 --ctrl-loss-tmo=300 --keep-alive-tmo=5 \
	--host-traddr="$NRP_HOST_IP4"; ctrl=$NRP_CTRL
bound "after connect"
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"

nrp_pair_fault_io "$ctrl" "$dev" "target port-off" "target port-on" 8
echo "port restart: $NRP_FAULT_REPORT"
nrp_pair_fault_io "$ctrl" "$dev" "target nvmet-stop" "target nvmet-start" 8
echo "nvmet-rdma restart: $NRP_FAULT_REPORT"
bound "after the reconnects"
echo "bound to host_traddr=$NRP_HOST_IP4 throughout"

nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_wait_gone "$ctrl" 30 || nrp_fail "$ctrl not removed by disconnect"
nrp_assert_no_splat
nrp_pass
