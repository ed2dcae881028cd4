#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Two guests (tools/vm/run-pair.sh): an association that had to
# authenticate (DH-HMAC-CHAP, both directions) loses its link under a
# write+verify load and comes back. Every reconnect runs the Connect of
# every queue again, and a target that requires authentication answers
# commands only on queues that authenticated: so I/O verified after the
# reconnect, with a fresh "authenticated" line in the host's log, shows
# that the queues authenticated again. (That holds for the pair's kernels,
# 6.1 and 6.12, whose nvmet asks every queue to authenticate; 7.3's asks
# the admin queue alone: test_auth.sh.)
#
# Without a DH exchange (group null: HMAC challenge and response, both
# directions). nvmet abandons an authentication transaction in which the
# host stays silent for the association's keep-alive timeout (5 s here,
# for prompt link-loss detection) and then fails the controller; an
# ffdhe2048 exponentiation in a TCG guest starved by its host took longer
# than that (6.1 P2PDMA pair: "nvmet: ctrl 1 fatal error occurred!" during
# the keyed connect, the host's AUTH_SEND aborted). The DH groups
# themselves are test_auth.sh's.
. "$(dirname "$0")/lib.sh"

nrp_pair_host_setup
nrp_auth_host_require
hkey=$(nrp_dhchap_key 1 "$NRP_HOSTNQN") || nrp_fail "$hkey"
ckey=$(nrp_dhchap_key 1 "$NRP_HOSTNQN") || nrp_fail "$ckey"
nrp_auth_dh_load
if out=$(nrp_pair_ctl target auth "$NRP_HOSTNQN" "$hkey" "$ckey" null); then
	echo "target: $out"
	# the pair's next tests connect as any host, without a key
	nrp_cleanup_push "nrp_pair_ctl target any-host"
else
	case $out in
	*"no in-band authentication"*) nrp_skip "target: $out" ;;
	*) nrp_fail "target refused to set up authentication: $out" ;;
	esac
fi

# without the key the target refuses us: authentication is really required
if out=$(nvme connect -t "$NRP_TRANSPORT" -a "$NRP_TGT_IP4" -s "$NRP_PORT" \
	-n "$NRP_SUBNQN" -q "$NRP_HOSTNQN" 2>&1); then
	nvme disconnect -n "$NRP_SUBNQN" >/dev/null 2>&1
	nrp_fail "connected without a key: the target does not require authentication"
fi

nrp_dmesg_mark
nrp_connect -q "$NRP_HOSTNQN" --dhchap-secret="$hkey" --dhchap-ctrl-secret="$ckey" \
	--reconnect-delay=1 --ctrl-loss-tmo=300 --keep-alive-tmo=5
ctrl=$NRP_CTRL
nrp_ctrl_is_ours "$ctrl" || nrp_fail "$ctrl is not ours"
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
nrp_dmesg_since | grep -q "$ctrl: qid 0: authenticated" ||
	nrp_fail "no authentication in the log of the first connect"

nrp_dmesg_mark
nrp_pair_fault_io "$ctrl" "$dev" "link off both" "link on both" 20
echo "cable pulled: $NRP_FAULT_REPORT"
n=$(nrp_dmesg_since | grep -c "$ctrl: qid 0: authenticated")
[ "$n" -ge 1 ] || nrp_fail "reconnected without authenticating again"
nrp_dmesg_since | grep -qi 'authentication failed\|dhchap.*fail' &&
	nrp_fail "an authentication failed on reconnect: $(nrp_dmesg_since | grep -i auth | tail -n 3)"
echo "re-authenticated on reconnect: $n admin queue authentication(s) after the fault"

nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_wait_gone "$ctrl" 30 || nrp_fail "$ctrl not removed by disconnect"
nrp_assert_no_splat
nrp_pass
