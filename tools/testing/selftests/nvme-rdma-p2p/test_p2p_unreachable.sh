#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# P2P memory the RDMA device cannot reach. Over soft RDMA without
# allow_soft_p2p the controller does not advertise P2PDMA: submitters that
# check the queue flag refuse by themselves, and requests that come anyway
# (forced) fail alone with -EREMOTEIO before anything goes on the wire:
# counted, no error recovery, no splat, the queue keeps working. A request
# mixing host and P2P pages fails whole.
. "$(dirname "$0")/lib_p2p.sh"

nrp_p2p_setup 64 0
ns=$(basename "$NRP_NS")

# The submitter checks the queue flag: exit 3, not a command sent.
nrp_snap
out=$("$NRP_P2P_TOOL" --gpu "$NRP_GPU" --dev "$NRP_NS" --size 1M --stats none 2>&1)
rc=$?
[ $rc = 3 ] || nrp_fail "checkpoint to a non-P2P controller: exit $rc, expected 3 (refused): $out"
echo "$out" | grep -q "refused: $NRP_NS does not advertise PCI P2PDMA" || nrp_fail "no refusal: $out"
nothing_moved() {
	local s
	for s in p2p_bytes_mapped host_bytes_mapped frwr_registrations inline_writes; do
		nrp_p2p_expect $s 0 "$1"
	done
}
nothing_moved "a refused checkpoint"
echo "without the P2PDMA queue flag the submitter refuses: exit 3, no data command"

# Forced: every request fails on its own with -EREMOTEIO.
for how in "" --mix; do
	nrp_dmesg_mark
	nrp_snap
	out=$("$NRP_P2P_TOOL" --gpu "$NRP_GPU" --dev "$NRP_NS" --size 1M --chunk 256K \
		--qd 1 --force $how --stats none 2>&1)
	rc=$?
	[ $rc = 1 ] || nrp_fail "forced ${how:-P2P} checkpoint: exit $rc, expected 1: $out"
	echo "$out" | grep -q "I/O error after 1 bios .*: Remote I/O error" ||
		nrp_fail "forced ${how:-P2P} write did not fail with EREMOTEIO: $out"
	nrp_p2p_expect p2p_unreachable 1 "one forced ${how:-P2P} request"
	nothing_moved "an unreachable ${how:-P2P} request (host pages included)"
	nrp_p2p_expect recoveries 0 "an unreachable request"
	nrp_p2p_expect errors 0 "an unreachable request"
	nrp_dmesg_since | grep -q "$NRP_CTRL: queue [0-9]*: P2P memory of tag [0-9]* not reachable from" ||
		nrp_fail "no kernel message naming the unreachable request"
	[ "$(nrp_ctrl_state "$NRP_CTRL")" = live ] ||
		nrp_fail "$NRP_CTRL is $(nrp_ctrl_state "$NRP_CTRL") after an unreachable request"
	echo "forced ${how:-P2P} request: -EREMOTEIO, counted, no data on the wire, no recovery"
done

# The queues are unharmed: host-memory I/O verifies.
nrp_snap
nrp_fio_verify "$NRP_NS" --rw=randwrite --bs=64k --size=8M --iodepth=8 --ioengine=libaio
nrp_p2p_expect recoveries 0
[ "$(nrp_delta host_bytes_mapped)" -ge $((16 << 20)) ] ||
	nrp_fail "fio moved only $(nrp_delta host_bytes_mapped) host bytes"
echo "fio verify on $ns afterwards: clean"
nrp_pass
