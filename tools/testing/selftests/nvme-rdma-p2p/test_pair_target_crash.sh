#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Two guests (tools/vm/run-pair.sh): the target guest loses power under a
# write+verify load (its QEMU is killed) and boots again with the same
# disk and identity. The controller notices, keeps reconnecting through
# the target's boot, comes back, and every block fio wrote verifies: what
# the target completed before the crash was on its disk, and what was in
# flight was sent again.
. "$(dirname "$0")/lib.sh"

nrp_pair_host_setup
nrp_dmesg_mark
nrp_connect --reconnect-delay=2 --ctrl-loss-tmo=900 --keep-alive-tmo=5; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"

# a boot of the target guest takes a minute or two under TCG
NRP_PAIR_LIVE_TMO=400 nrp_pair_fault_io "$ctrl" "$dev" target-kill target-boot 20
echo "target power loss and boot: $NRP_FAULT_REPORT"

nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_wait_gone "$ctrl" 30 || nrp_fail "$ctrl not removed by disconnect"
nrp_assert_no_splat
nrp_pass
