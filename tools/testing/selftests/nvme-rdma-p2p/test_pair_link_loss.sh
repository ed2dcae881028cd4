#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Two guests (tools/vm/run-pair.sh): the Ethernet link between host and
# target goes down under a write+verify load for longer than keep-alive
# takes to notice, then comes back. The controller leaves LIVE, reconnects
# every reconnect_delay until the link is back, queued I/O completes and
# every block verifies.
#
# Twice: a pulled cable for 20 s (both NICs lose carrier, the host's rxe
# port goes down) and a silent loss for 25 s (the target's NIC only: the
# host sees carrier and only keep-alive, timeouts and RC retries can
# tell). With keep_alive_tmo=5 the loss was noticed after 4 to 12 s under
# TCG.
. "$(dirname "$0")/lib.sh"

nrp_pair_host_setup
nrp_dmesg_mark
nrp_connect --reconnect-delay=1 --ctrl-loss-tmo=300 --keep-alive-tmo=5; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"

nrp_pair_fault_io "$ctrl" "$dev" "link off both" "link on both" 20
echo "cable pulled: $NRP_FAULT_REPORT"
nrp_pair_fault_io "$ctrl" "$dev" "link off target" "link on target" 25
echo "silent loss: $NRP_FAULT_REPORT"

nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_wait_gone "$ctrl" 30 || nrp_fail "$ctrl not removed by disconnect"
nrp_assert_no_splat
nrp_pass
