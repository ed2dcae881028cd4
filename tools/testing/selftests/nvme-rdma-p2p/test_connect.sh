#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nvme-cli drives our transport unchanged: discover, connect, list,
# disconnect, over IPv4 and IPv6; nothing is left behind.
. "$(dirname "$0")/lib.sh"

one_family() {
	local fam=$1 addr ctrl dev out
	NRP_FAMILY=$fam
	addr=$NRP_TGT_IP4
	[ "$fam" = ipv6 ] && addr=$NRP_TGT_IP6
	nrp_std_setup 64

	out=$(nvme discover -t "$NRP_TRANSPORT" -a "$addr" -s "$NRP_PORT" 2>&1) ||
		nrp_fail "$fam: nvme discover failed: $out"
	echo "$out" | grep -q "subnqn: *$NRP_SUBNQN" ||
		nrp_fail "$fam: discovery log lacks $NRP_SUBNQN: $out"
	echo "$out" | grep -q "trtype: *rdma" || nrp_fail "$fam: discovery log lacks trtype rdma"
	echo "$fam: discovery log lists $NRP_SUBNQN"
	# the discovery controller is gone again after discover
	nrp_assert_no_ctrls

	nrp_connect; ctrl=$NRP_CTRL
	nrp_ctrl_is_ours "$ctrl" || nrp_fail "$fam: $ctrl is not driven by nvme-rdma-p2p"
	# the name the module registered under (transport=), as nvme-cli
	# needs it to reconnect
	[ "$(cat /sys/class/nvme/$ctrl/transport)" = "$NRP_TRANSPORT" ] ||
		nrp_fail "$fam: $ctrl transport reads '$(cat /sys/class/nvme/$ctrl/transport)'"
	grep -q "traddr=$addr" "/sys/class/nvme/$ctrl/address" ||
		nrp_fail "$fam: address reads '$(cat /sys/class/nvme/$ctrl/address)'"
	dev=$(nrp_ns_dev "$ctrl") || nrp_fail "$fam: no namespace block device"
	nvme list | grep -q "$(basename "$dev")" || nrp_fail "$fam: nvme list does not show $dev"
	echo "$fam: $ctrl live, namespace $dev, $(cat /sys/class/nvme/$ctrl/address)"
	nrp_fio_verify "$dev" --rw=write --bs=64k --size=8m

	out=$(nvme disconnect -n "$NRP_SUBNQN" 2>&1) || nrp_fail "$fam: disconnect failed: $out"
	echo "$out" | grep -q "disconnected 1 controller" || nrp_fail "$fam: disconnect said: $out"
	nrp_assert_no_ctrls
	_nrp_run_cleanups
	nrp_mod_loaded $NRP_MOD && nrp_fail "$fam: module still loaded after teardown"
	return 0
}

one_family ipv4
one_family ipv6
nrp_pass
