#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Under transport=NAME, the name shows where nvme-cli and udev read it
# back: /sys/class/nvme/nvmeX/transport and the NVME_TRTYPE of the
# controller's uevents, so a second "nvme connect -t NAME" to the same
# target is refused as a duplicate and udev's autoconnect reuses NAME.
# A discovery log knows only trtype "rdma": "nvme connect-all -t NAME"
# discovers through us, and nvme-cli connects every entry as "rdma", that
# is, through whatever module registered "rdma" (the in-tree nvme_rdma,
# kept from loading here, or this module under its default name).
. "$(dirname "$0")/lib.sh"

nrp_std_setup 64
nrp_connect --nr-io-queues=1; ctrl=$NRP_CTRL
nrp_expect "/sys/class/nvme/$ctrl/transport" "$(cat /sys/class/nvme/$ctrl/transport)" "$NRP_TRANSPORT"
grep -qx "NVME_TRTYPE=$NRP_TRANSPORT" "/sys/class/nvme/$ctrl/uevent" ||
	nrp_fail "uevent of $ctrl: $(tr '\n' ' ' <"/sys/class/nvme/$ctrl/uevent")"
echo "uevent: NVME_TRTYPE=$NRP_TRANSPORT"

# the same target again: refused, no second controller
out=$(nvme connect -t "$NRP_TRANSPORT" -a "$NRP_TGT_IP4" -s "$NRP_PORT" -n "$NRP_SUBNQN" 2>&1) &&
	nrp_fail "a second connect to the same target succeeded: $out"
echo "second connect: $out"
n=$(grep -lx "$NRP_SUBNQN" /sys/class/nvme/nvme*/subsysnqn | wc -l)
nrp_expect "controllers of $NRP_SUBNQN" "$n" 1
nrp_must nvme disconnect -n "$NRP_SUBNQN"

# connect-all through us with the in-tree module kept out
conf=/etc/modprobe.d/nrp-no-nvme-rdma.conf
echo "install nvme_rdma /bin/false" >$conf
nrp_cleanup_push "rm -f $conf"
nrp_mod_loaded nvme_rdma && nrp_must rmmod nvme_rdma
out=$(nvme connect-all -t "$NRP_TRANSPORT" -a "$NRP_TGT_IP4" -s "$NRP_PORT" 2>&1)
rc=$?
echo "connect-all -t $NRP_TRANSPORT: exit $rc: $out"
nrp_cleanup_push nrp_disconnect_all
ctrl=$(nrp_ctrl_of_subsys "$NRP_SUBNQN") &&
	nrp_fail "connect-all made $ctrl ($(cat /sys/class/nvme/$ctrl/transport)) with no module for 'rdma'"
echo "no controller: the entries (trtype rdma) found no transport 'rdma'"
nrp_assert_no_ctrls

# with this module as "rdma" the same command connects through us
nrp_must rmmod $NRP_MOD
nrp_must modprobe nvme-rdma-p2p transport=rdma
out=$(nvme connect-all -t rdma -a "$NRP_TGT_IP4" -s "$NRP_PORT" 2>&1) ||
	nrp_fail "connect-all -t rdma failed: $out"
ctrl=$(nrp_ctrl_of_subsys "$NRP_SUBNQN") || nrp_fail "connect-all -t rdma made no controller"
nrp_ctrl_is_ours "$ctrl" || nrp_fail "$ctrl is not ours"
nrp_expect "/sys/class/nvme/$ctrl/transport" "$(cat /sys/class/nvme/$ctrl/transport)" rdma
nrp_must nvme disconnect-all
nrp_assert_no_ctrls
nrp_pass
