#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A P2P checkpoint over an authenticated association: the host and the
# target prove their DH-HMAC-CHAP secrets on the Connect of each queue the
# target asks to (every queue on nvmet of 6.1 and 6.12, the admin queue
# alone on 7.3's: test_auth.sh), then 64 MiB go from simulated GPU memory
# to the remote namespace and back, byte-exact, with the same counters as without authentication:
# P2P bytes exactly twice the payload, host-memory bytes zero.
# Authentication is on the Connect only; the data path must not change.
. "$(dirname "$0")/lib_p2p.sh"

nrp_p2p_pre_connect() {
	local hkey ckey
	# (called inside nrp_p2p_setup: the nvme core is loaded by now)
	nrp_auth_host_require
	hkey=$(nrp_dhchap_key 1 "$NRP_HOSTNQN") || nrp_fail "$hkey"
	ckey=$(nrp_dhchap_key 1 "$NRP_HOSTNQN") || nrp_fail "$ckey"
	# not in $(...): the allowed-hosts entry's cleanup must reach this shell
	nrp_nvmet_auth_host "$NRP_HOSTNQN" "$hkey" "$ckey"
	case $? in
	0) ;;
	4) nrp_skip "the target has no in-band authentication (CONFIG_NVME_TARGET_AUTH)" ;;
	*) nrp_fail "cannot set the target's keys" ;;
	esac
	NRP_P2P_CONNECT=(-q "$NRP_HOSTNQN" --dhchap-secret="$hkey" --dhchap-ctrl-secret="$ckey")
	nrp_dmesg_mark
}

nrp_p2p_setup 80
nrp_dmesg_since | grep -q "$NRP_CTRL: qid 0: authenticated" ||
	nrp_fail "$NRP_CTRL connected without authenticating"
echo "$(nrp_dmesg_since | grep "$NRP_CTRL: qid 0: authenticated" | tail -n1 | sed 's/^\[[^]]*\] //')"

nrp_p2p_ckpt_exact $((64 << 20)) --chunk 1M --qd 16
echo "64 MiB checkpoint over the authenticated association: byte-exact, nothing bounced"
[ "$(nrp_ctrl_state "$NRP_CTRL")" = live ] || nrp_fail "$NRP_CTRL is $(nrp_ctrl_state "$NRP_CTRL")"
nrp_pass
