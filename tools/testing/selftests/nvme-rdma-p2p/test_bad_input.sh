#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Bad connect input: each case fails with a clear error, quickly, and
# leaves no controller and no module reference behind.
. "$(dirname "$0")/lib.sh"

nrp_std_setup 64
base="transport=$NRP_TRANSPORT,nqn=$NRP_SUBNQN,trsvcid=$NRP_PORT"

expect_fail() { # DESCRIPTION MAX_SECONDS OPTIONS [KERNEL-LOG-REGEX]
	local what=$1 max=$2 opts=$3 why=${4:-} t0 out dt log
	t0=$(date +%s)
	nrp_dmesg_mark
	out=$(nrp_fabrics_write "$opts") && nrp_fail "$what: connect succeeded ($out)"
	dt=$(($(date +%s) - t0))
	echo "$what: refused in ${dt}s: ${out##*: }"
	# the kernel log says why, in words an admin can act on
	log=$(nrp_dmesg_since | grep -E 'nvme|nvme_rdma_p2p')
	echo "$log" | sed 's/^\[[ 0-9.]*\] /    kernel: /' | tail -n 3
	[ -z "$why" ] || echo "$log" | grep -qE "$why" ||
		nrp_fail "$what: the kernel log does not say /$why/"
	# quickly: seconds on the fastest host, scaled as every wait is
	max=$((max * NRP_SLOW))
	[ "$dt" -le "$max" ] || nrp_fail "$what: took ${dt}s (limit ${max}s)"
	nrp_assert_no_ctrls
	return 0
}

expect_fail "unknown option" 5 "$base,traddr=$NRP_TGT_IP4,bogus_opt=1" "unknown parameter.*bogus_opt"
expect_fail "malformed option" 5 "$base,traddr=$NRP_TGT_IP4,queue_size" "missing value .queue_size"
expect_fail "missing traddr" 5 "$base" "missing parameter .traddr"
expect_fail "bad address" 5 "$base,traddr=10.99.0.300" "malformed target address 10.99.0.300"
expect_fail "bad port" 5 "transport=$NRP_TRANSPORT,nqn=$NRP_SUBNQN,traddr=$NRP_TGT_IP4,trsvcid=notaport" \
	"malformed target address .* port notaport"
expect_fail "queue_size=0" 5 "$base,traddr=$NRP_TGT_IP4,queue_size=0" "Invalid queue_size 0"
expect_fail "queue_size huge" 5 "$base,traddr=$NRP_TGT_IP4,queue_size=1000000" "Invalid queue_size"
expect_fail "nr_io_queues=-1" 5 "$base,traddr=$NRP_TGT_IP4,nr_io_queues=-1" "Invalid number of IOQs"
expect_fail "bad host_traddr" 5 "$base,traddr=$NRP_TGT_IP4,host_traddr=bogus" "malformed host_traddr bogus"
# nobody listens there: IB-style CM (rxe) rejects, iWARP (siw) is refused
expect_fail "wrong port" 20 "transport=$NRP_TRANSPORT,nqn=$NRP_SUBNQN,traddr=$NRP_TGT_IP4,trsvcid=4999" \
	"Connect rejected: status 8 \\(invalid service ID\\)\\. queue 0, [^ ]*:4999|establishment failed \\(-111\\): queue 0, [^ ]*:4999"
expect_fail "wrong NQN" 20 "transport=$NRP_TRANSPORT,nqn=nqn.2026-11.io.example:nothing,traddr=$NRP_TGT_IP4,trsvcid=$NRP_PORT" \
	"Connect Invalid Data Parameter, subsysnqn"
# nobody answers ARP for this address: address resolution must time out
expect_fail "unreachable address" 30 "$base,traddr=10.99.0.99" "cannot reach 10.99.0.99"

# A subsystem that allows only another host.
cfs=/sys/kernel/config/nvmet
echo 0 >"$cfs/subsystems/$NRP_SUBNQN/attr_allow_any_host"
# A host NQN of its own needs a host ID of its own: from 6.12 on the
# fabrics core refuses one host ID under two NQNs before any connect.
expect_fail "host not allowed" 20 \
	"$base,traddr=$NRP_TGT_IP4,hostnqn=$NRP_HOSTNQN,hostid=6e72702d-6261-6469-6e70-757400000001" \
	"is not allowed"
echo 1 >"$cfs/subsystems/$NRP_SUBNQN/attr_allow_any_host"

# After all that, the module still works and still unloads.
nrp_connect; ctrl=$NRP_CTRL
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_assert_no_ctrls
refs=$(cat /sys/module/$NRP_MOD/refcnt)
[ "$refs" = 0 ] || nrp_fail "module reference count is $refs after all controllers are gone"
nrp_must rmmod $NRP_MOD
nrp_pass
