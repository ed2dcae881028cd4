#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A P2P checkpoint over an authenticated association: the host and the
# target prove their DH-HMAC-CHAP secrets on the Connect of every queue,
# then 64 MiB go from simulated GPU memory to the remote namespace and
# back, byte-exact, with the same counters as without authentication:
# P2P bytes exactly twice the payload, host-memory bytes zero.
# Authentication is on the Connect only; the data path must not change.
. "$(dirname "$0")/lib_p2p.sh"

nrp_p2p_pre_connect() {
	# (called inside nrp_p2p_setup, whose locals this function sees)
	local h=/sys/kernel/config/nvmet/hosts/$NRP_HOSTNQN hkey ckey
	# (the nvme core is loaded by now)
	grep -qw nvme_auth_negotiate /proc/kallsyms ||
		nrp_skip "the host's nvme core has no in-band authentication (CONFIG_NVME_AUTH / NVME_HOST_AUTH)"
	nrp_nvmet_allow_hosts "$NRP_HOSTNQN"
	[ -e "$h/dhchap_key" ] ||
		nrp_skip "the target has no in-band authentication (CONFIG_NVME_TARGET_AUTH)"
	hkey=$(nvme gen-dhchap-key --hmac=1 --nqn="$NRP_HOSTNQN") && [ -n "$hkey" ] ||
		nrp_skip "nvme-cli cannot generate DH-HMAC-CHAP secrets"
	ckey=$(nvme gen-dhchap-key --hmac=1 --nqn="$NRP_HOSTNQN")
	echo "$hkey" >"$h/dhchap_key" && echo "$ckey" >"$h/dhchap_ctrl_key" &&
		echo "hmac(sha256)" >"$h/dhchap_hash" || nrp_fail "cannot set the target's keys"
	nrp_auth_dh_load
	echo ffdhe2048 2>/dev/null >"$h/dhchap_dhgroup" || echo null >"$h/dhchap_dhgroup"
	echo "target: host must authenticate, hmac(sha256), $(cat "$h/dhchap_dhgroup"), bidirectional"
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
