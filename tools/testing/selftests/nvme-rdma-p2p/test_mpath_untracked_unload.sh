#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Unloading the module after it could not track a controller of another
# transport (issue 44, finding 2). Our first controller registers a class
# interface on the nvme class; when the record of a foreign controller
# cannot be allocated, the module stops marking heads for P2P ("no memory
# to track"), but the interface stays registered and module exit must
# still unregister it: otherwise the next nvme controller added after the
# unload calls into freed module text. debugfs fault_track_nomem fails the
# record's allocation. Here: ours connected, the fault on, an in-tree
# nvme_rdma controller connects (the log says it was not tracked), all
# disconnect, the module is unloaded, and an in-tree controller connects
# again: it must connect and do I/O, with nothing in the kernel log.
. "$(dirname "$0")/lib.sh"

nrp_std_setup 64
nrp_connect
ours=$NRP_CTRL
nrp_must modprobe --ignore-install nvme-rdma
nrp_cleanup_push "modprobe -r nvme_rdma"

echo 1 >"$NRP_DEBUGFS/fault_track_nomem" || nrp_fail "no debugfs fault_track_nomem"
nrp_must nvme connect -t rdma -a "$NRP_TGT_IP4" -s "$NRP_PORT" -n "$NRP_SUBNQN"
nrp_dmesg_wait "no memory to track a controller of another transport" 10 ||
	nrp_fail "the in-tree controller was tracked despite fault_track_nomem: $(cat "$NRP_DEBUGFS/fault_track_nomem")"
echo "in-tree controller beside $ours: not tracked (fault_track_nomem), the module says so"

nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_wait_gone "$ours" 30 || nrp_fail "$ours still there after the disconnect"
nrp_must modprobe -r nvme-rdma-p2p
nrp_mod_loaded nvme_rdma_p2p && nrp_fail "nvme_rdma_p2p still loaded"
echo "module unloaded"

# the class interface, had it stayed registered, is called here
out=$(timeout 60 nvme connect -t rdma -a "$NRP_TGT_IP4" -s "$NRP_PORT" -n "$NRP_SUBNQN" 2>&1) ||
	nrp_fail "in-tree connect after the unload failed: $out; $(nrp_dmesg_since | grep -m3 -E 'BUG|Oops|RIP' | paste -sd' ')"
c=$(nrp_ctrl_of_subsys "$NRP_SUBNQN") || nrp_fail "no in-tree controller after the unload"
dev=$(nrp_ns_dev "$c") || nrp_fail "no namespace on $c"
nrp_fio_verify "$dev" --rw=write --bs=64k --size=4m
echo "in-tree $c connected after the unload and did verified I/O on $dev"
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_assert_no_splat
nrp_pass
