#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# NVMe in-band authentication (DH-HMAC-CHAP) over our transport, against
# nvmet-rdma with per-host keys in configfs. The nvme core runs the
# protocol on the fabrics Connect of every queue; what the transport must
# get right is that each of its queues is authenticated, that a refusal
# leaves nothing behind, and that re-authentication and reconnects keep I/O
# going.
#
# Hashes x DH groups: every hash with the null group and ffdhe2048, every
# group with hmac(sha256); NRP_AUTH_MATRIX=full runs all 18 pairs, and
# the check tier (NRP_TIER=check, or NRP_AUTH_MATRIX=cover) six that take
# every hash and every group once (sha256/null, sha384/ffdhe2048,
# sha512/ffdhe3072, sha256/ffdhe4096, sha384/ffdhe6144, sha512/ffdhe8192). Each
# must be offered by nvmet (a group it refuses fails: every guest kernel
# with in-band authentication has the FFDHE groups, CRYPTO_DH_RFC7919_GROUPS)
# and negotiated: the host's log names the hash and group it used.
#
# Re-authentication runs while fio writes: the trace shows the queues
# that authenticated at connect (every queue, admin and I/O, on 6.1 and
# 6.12; the admin queue on 7.3, below) exchanging their authentication
# messages again and no other queue any, the log the admin queue's
# result, and fio reads back all it wrote.
# nrp-timeout: 1200
. "$(dirname "$0")/lib.sh"

cfs=/sys/kernel/config/nvmet
host=$NRP_HOSTNQN
hostid=6c1c1d4b-8f2e-4d55-9d5e-5b2f0a1c0ff1

nrp_std_setup 128
# the host side: nvme core built with in-band authentication
nrp_auth_host_require
nrp_nvmet_allow_hosts "$host"
[ -e "$cfs/hosts/$host/dhchap_key" ] ||
	nrp_skip "the target has no in-band authentication (CONFIG_NVME_TARGET_AUTH)"


tgt_set() { # ATTR VALUE: host entry of the target
	echo "$2" >"$cfs/hosts/$host/$1" || nrp_fail "target: cannot set $1=$2"
}

conn() { # connect with extra options; prints nvme-cli's error on failure
	nvme connect -t "$NRP_TRANSPORT" -a "$NRP_TGT_IP4" -s "$NRP_PORT" \
		-n "$NRP_SUBNQN" -q "$host" -I "$hostid" "$@" 2>&1
}

# Nothing of ours left, and the module's references back to 0.
assert_clean() {
	local i
	for i in $(seq 50); do
		nrp_ctrl_of_subsys "$NRP_SUBNQN" >/dev/null || break
		sleep 0.2
	done
	nrp_ctrl_of_subsys "$NRP_SUBNQN" >/dev/null &&
		nrp_fail "$1: a controller was left behind"
	[ "$(cat /sys/module/$NRP_MOD/refcnt)" = 0 ] ||
		nrp_fail "$1: module refcount $(cat /sys/module/$NRP_MOD/refcnt), expected 0"
}

# Connect with $@, check every queue answered and a verified write/read
# went through, disconnect.
# The host logs what its admin queue negotiated: it must be the hash and
# group the target asks for, and with a controller key, the controller's
# proof must have been checked.
good() {
	local what=$1 out ctrl dev t0=$SECONDS want
	shift
	nrp_dmesg_mark
	out=$(conn "$@") || nrp_fail "$what: connect refused: $out"
	ctrl=$(nrp_ctrl_of_subsys "$NRP_SUBNQN") || nrp_fail "$what: no controller"
	nrp_ctrl_is_ours "$ctrl" || nrp_fail "$what: $ctrl is not ours"
	want="$ctrl: qid 0: authenticated with hash $(cat "$cfs/hosts/$host/dhchap_hash") dhgroup $(cat "$cfs/hosts/$host/dhchap_dhgroup")"
	nrp_dmesg_since | grep -qF "$want" ||
		nrp_fail "$what: no '$want' in the log: $(nrp_dmesg_since | grep "$ctrl: qid 0: auth" | tail -n 2)"
	case "$*" in
	*--dhchap-ctrl-secret=*)
		nrp_dmesg_since | grep -qF "$ctrl: qid 0: controller authenticated" ||
			nrp_fail "$what: the controller's response was not checked" ;;
	esac
	dev=$(nrp_ns_dev "$ctrl") || nrp_fail "$what: no namespace"
	nrp_fio_verify "$dev" --rw=randwrite --bs=4k --size=1m --ioengine=libaio --iodepth=4
	nvme disconnect -n "$NRP_SUBNQN" >/dev/null || nrp_fail "$what: disconnect failed"
	assert_clean "$what"
	echo "ok: $what ($((SECONDS - t0)) s)"
}

# Connect with $@ must be refused, with no controller left and a kernel
# log line that names authentication.
bad() {
	local what=$1 out t0=$SECONDS
	shift
	nrp_dmesg_mark
	if out=$(conn "$@"); then
		nvme disconnect -n "$NRP_SUBNQN" >/dev/null 2>&1
		nrp_fail "$what: connect succeeded"
	fi
	# The 6.12 target drops the association when it refuses; the host
	# must not sit out the 60 s admin timeout (six times over: 6.12
	# retries authentication commands) before it says so.
	[ $((SECONDS - t0)) -lt 45 ] ||
		nrp_fail "$what: refused only after $((SECONDS - t0)) s (a command timed out instead of failing when the target hung up)"
	assert_clean "$what"
	nrp_dmesg_since | grep -qi 'auth\|dhchap' ||
		nrp_fail "$what: refused, but the kernel log does not say why: $out"
	echo "refused: $what in $((SECONDS - t0)) s: $(nrp_dmesg_since | grep -i 'auth\|dhchap' | tail -n1 | sed 's/^\[[^]]*\] //')"
}

# Every secret up front, each checked: a refusal tested with an empty or
# malformed "wrong" key would pass for the wrong reason.
hkey=$(nrp_dhchap_key 1 "$host") || nrp_fail "$hkey"
ckey=$(nrp_dhchap_key 1 "$host") || nrp_fail "$ckey"
wrong_hkey=$(nrp_dhchap_key 1 "$host") || nrp_fail "$wrong_hkey"
wrong_ckey=$(nrp_dhchap_key 1 "$host") || nrp_fail "$wrong_ckey"
hkey2=$(nrp_dhchap_key 1 "$host") || nrp_fail "$hkey2"
tgt_set dhchap_key "$hkey"
tgt_set dhchap_hash "hmac(sha256)"
tgt_set dhchap_dhgroup null

good "unidirectional, sha256, null group" --dhchap-secret="$hkey"
tgt_set dhchap_ctrl_key "$ckey"
good "bidirectional, sha256, null group" --dhchap-secret="$hkey" --dhchap-ctrl-secret="$ckey"

# the matrix
nrp_auth_dh_load
pairs=0 want_pairs=0
matrix=${NRP_AUTH_MATRIX:-}
[ -z "$matrix" ] && [ "${NRP_TIER:-}" = check ] && matrix=cover
hashes=("hmac(sha256)" "hmac(sha384)" "hmac(sha512)")
groups=(null ffdhe2048 ffdhe3072 ffdhe4096 ffdhe6144 ffdhe8192)
for h in "${hashes[@]}"; do
	for g in "${groups[@]}"; do
		case $matrix in
		full)	;;
		cover)	case "$h/$g" in
			*256\)/null | *384\)/ffdhe2048 | *512\)/ffdhe3072 | *256\)/ffdhe4096 | \
			*384\)/ffdhe6144 | *512\)/ffdhe8192) ;;
			*) continue ;;
			esac ;;
		*)	case "$h/$g" in
			*/null | */ffdhe2048 | "hmac(sha256)"/*) ;;
			*) continue ;;
			esac ;;
		esac
		want_pairs=$((want_pairs + 1))
		[ "$h/$g" = "hmac(sha256)/null" ] && continue # done above
		tgt_set dhchap_hash "$h"
		# nvmet takes only what the kernel's crypto offers: a refusal
		# here is a kernel or set-up without the group, and fails
		echo "$g" 2>/dev/null >"$cfs/hosts/$host/dhchap_dhgroup" ||
			nrp_fail "nvmet refuses DH group $g with $h (not offered by this kernel: CRYPTO_DH_RFC7919_GROUPS, dh_generic)"
		nrp_expect "target's DH group" "$(cat "$cfs/hosts/$host/dhchap_dhgroup")" "$g"
		good "bidirectional, $h, $g" --dhchap-secret="$hkey" --dhchap-ctrl-secret="$ckey"
		pairs=$((pairs + 1))
	done
done
nrp_expect "hash/group pairs offered and negotiated" $((pairs + 1)) "$want_pairs"
tgt_set dhchap_hash "hmac(sha256)"
# a DH exchange from here on
tgt_set dhchap_dhgroup ffdhe2048

# refusals
bad "wrong host key" --dhchap-secret="$wrong_hkey"
bad "wrong controller key" --dhchap-secret="$hkey" --dhchap-ctrl-secret="$wrong_ckey"
bad "no key where one is required"
# a malformed secret never reaches the wire: the kernel refuses the option
nrp_dmesg_mark
out=$(nrp_fabrics_write "transport=$NRP_TRANSPORT,nqn=$NRP_SUBNQN,traddr=$NRP_TGT_IP4,trsvcid=$NRP_PORT,hostnqn=$host,dhchap_secret=DHHC-1:00:not-base64!!:") &&
	{ nvme disconnect -n "$NRP_SUBNQN" >/dev/null 2>&1; nrp_fail "malformed secret accepted"; }
assert_clean "malformed secret"
echo "refused: malformed secret: $out"

# re-authentication under I/O: the target's key changes, the host is given
# the new one through sysfs and authenticates again; the old key is dead.
# Fabrics commands (opcode 0x7f) per queue, traced from the connect on: an
# I/O queue sends its Connect and, where the target asks it to
# authenticate, the five authentication messages (negotiate, challenge,
# reply, success1, and success2 with a controller key). The host
# re-authenticates the queues that authenticated at connect: every queue
# on nvmet of 6.1 and 6.12, the admin queue alone on 7.3, whose nvmet asks
# no I/O queue to authenticate ("Do not authenticate I/O queues" in
# nvmet_connect_result()).
nrp_tracefs_require
E=$T/events/nvme_rdma_p2p/nrp_submit
nrp_cleanup_push "echo 0 >$E/enable; echo 0 >$E/filter"
echo 'opcode == 0x7f' >$E/filter || nrp_fail "cannot filter nrp_submit"
echo >$T/trace
echo 1 >$E/enable
out=$(conn --dhchap-secret="$hkey" --dhchap-ctrl-secret="$ckey") ||
	nrp_fail "connect for re-authentication: $out"
echo 0 >$E/enable
ctrl=$(nrp_ctrl_of_subsys "$NRP_SUBNQN")
nrp_cleanup_push nrp_disconnect_all
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
[ -w "/sys/class/nvme/$ctrl/dhchap_secret" ] ||
	nrp_fail "$ctrl has no dhchap_secret attribute"
nq=$(cat "/sys/class/nvme/$ctrl/queue_count")
auth_msgs() { # "qid count" per queue of $ctrl in the trace
	awk -v c="$ctrl" '$0 ~ " nrp_submit: " c " qid=" {
		for (i = 1; i <= NF; i++) if ($i ~ /^qid=/) n[substr($i, 5)]++ }
		END { for (q in n) print q, n[q] }' $T/trace | sort -n
}
# the I/O queues' messages at connect: 1 (Connect) each, or 6 each
io_at_connect=$(auth_msgs | awk '$1 > 0 { print $2 }' | sort -u | paste -sd, -)
[ "$(auth_msgs | awk '$1 > 0' | wc -l)" = $((nq - 1)) ] ||
	nrp_fail "not every I/O queue of $ctrl was traced connecting: $(auth_msgs | paste -sd, -)"
case $io_at_connect in
6) reauth_nq=$nq io_auth="every I/O queue authenticated at connect" ;;
1) reauth_nq=1 io_auth="the target asked no I/O queue to authenticate" ;;
*) nrp_fail "I/O queues' fabrics commands at connect: $io_at_connect (1 or 6 each, all alike)" ;;
esac
echo "$io_auth: $reauth_nq of $nq queues re-authenticate"
echo >$T/trace
reauth_done() { # each queue that authenticated at connect sent 5 messages, no other any
	[ "$(auth_msgs | awk -v n="$reauth_nq" '$2 == 5 && $1 < n' | wc -l)" = "$reauth_nq" ] &&
		[ "$(auth_msgs | awk -v n="$reauth_nq" '$1 >= n' | wc -l)" = 0 ]
}
mib=48
log=/tmp/nrp-fio-reauth.log
fio --name=reauth --filename="$dev" --direct=1 --ioengine=libaio --rw=randwrite \
	--bs=16k --iodepth=8 --size=${mib}m --verify=crc32c --verify_fatal=1 \
	--do_verify=1 --output-format=terse --terse-version=3 --output=$log &
fio_pid=$!
nrp_cleanup_push "kill $fio_pid 2>/dev/null || true"
nrp_wait_writing "$ctrl" $fio_pid 32 60
case $? in
1) nrp_fail "no writes in flight on $ctrl within $((60 * NRP_SLOW)) s" ;;
2) nrp_fail "fio ended before the re-authentication: $(tail -n 3 $log)" ;;
esac
tgt_set dhchap_key "$hkey2"
nrp_dmesg_mark
echo 1 >$E/enable
echo "$hkey2" >"/sys/class/nvme/$ctrl/dhchap_secret" ||
	nrp_fail "writing the new secret to $ctrl failed"
end=$((SECONDS + 60 * NRP_SLOW))
until reauth_done || [ $SECONDS -gt $end ]; do
	nrp_nap 0.2
done
reauth_done ||
	nrp_fail "not the $reauth_nq queue(s) that authenticated at connect re-authenticated (qid, messages): $(auth_msgs | paste -sd, -)"
nrp_running $fio_pid ||
	nrp_fail "fio ended before the re-authentication did: it was not under I/O"
echo "re-authentication messages per queue (qid, messages): $(auth_msgs | paste -sd, -), fio still writing"
nrp_dmesg_wait "$ctrl: qid 0: authenticated with hash hmac(sha256) dhgroup ffdhe2048" 10 ||
	nrp_fail "no 'qid 0: authenticated' after the new secret: $(nrp_dmesg_since | grep -i auth | tail -n 3)"
nrp_dmesg_wait "$ctrl: qid 0: controller authenticated" 10 ||
	nrp_fail "the controller's response was not checked on re-authentication"
wait $fio_pid || { cat $log; nrp_fail "I/O failed across re-authentication"; }
# still traced until fio's end, seconds after the admin queue's: a 7.3
# host turns to the I/O queues only once qid 0 is done, so a queue that
# should not re-authenticate and did shows here, not at the first check
echo 0 >$E/enable
reauth_done ||
	nrp_fail "by fio's end, other queues than the $reauth_nq re-authenticated, or again (qid, messages): $(auth_msgs | paste -sd, -)"
grep -q 'verify: bad' $log && nrp_fail "data corrupted across re-authentication"
nrp_fio_all_verified $log $((mib * 1024)) "re-authentication under writes"
[ "$(nrp_ctrl_state "$ctrl")" = live ] || nrp_fail "$ctrl $(nrp_ctrl_state "$ctrl") after re-authentication"
[ "$(cat "/sys/class/nvme/$ctrl/dhchap_secret")" = "$hkey2" ] ||
	nrp_fail "$ctrl does not show the new secret"
nrp_dmesg_since | grep -qi 'authentication failed\|error .* setting up authentication' &&
	nrp_fail "re-authentication failed: $(nrp_dmesg_since | grep -i auth | tail -n 3)"
echo "ok: re-authenticated with the new key under I/O, verified"

# after a reset the admin queue authenticates again with the new key (the
# log shows qid 0; which I/O queues authenticate is the target's choice, above)
nrp_dmesg_mark
nvme reset "/dev/$ctrl" || nrp_fail "reset failed"
nrp_wait_state "$ctrl" 60 || nrp_fail "$ctrl not live after reset ($(nrp_ctrl_state "$ctrl"))"
nrp_dmesg_since | grep -qF "$ctrl: qid 0: authenticated with hash hmac(sha256) dhgroup ffdhe2048" ||
	nrp_fail "$ctrl live after the reset without authenticating"
nrp_fio_verify "$dev" --rw=randrw --bs=8k --size=4m --ioengine=libaio --iodepth=8
echo "ok: reset authenticated the admin queue again with the new key, verified"
nvme disconnect -n "$NRP_SUBNQN" >/dev/null
assert_clean "re-authentication"

bad "old host key after the change" --dhchap-secret="$hkey" --dhchap-ctrl-secret="$ckey"
good "new host key after the change" --dhchap-secret="$hkey2" --dhchap-ctrl-secret="$ckey"
nrp_pass
