#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The commands that carry no block data: keep-alive keeps an idle
# controller alive at a short keep_alive_tmo, a flush travels as a
# zero-length command (no memory registration, nothing in-capsule), and
# asynchronous events from the target reach the core: a namespace added
# on the target appears on the host and one removed goes away, with no
# rescan asked for.
. "$(dirname "$0")/lib.sh"

cfs=/sys/kernel/config/nvmet
# wait up to $2 s for namespace $1 of $ctrl to be there (or gone with $3=gone)
wait_ns() {
	local nsid=$1 secs=$2 want=${3:-there} i n
	for ((i = 0; i < secs * 5; i++)); do
		n=$(ls -d /sys/class/nvme/"$ctrl"/nvme*n"$nsid" 2>/dev/null | head -n1)
		if [ "$want" = there ]; then [ -n "$n" ] && return 0
		else [ -z "$n" ] && return 0; fi
		sleep 0.2
	done
	return 1
}

nrp_std_setup 64
nrp_dmesg_mark
nrp_connect --keep-alive-tmo=4; ctrl=$NRP_CTRL
[ "$(cat /sys/class/nvme/$ctrl/kato)" = 4 ] ||
	nrp_fail "kato reads $(cat /sys/class/nvme/$ctrl/kato), asked for 4"
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
udevadm settle 2>/dev/null || sleep 2

# Idle for three keep-alive periods: the target would end the association
# after 4 s without a command; only keep-alives are sent meanwhile.
cmds=$(nrp_stat "$ctrl" commands) data=$(nrp_data_cmds "$ctrl")
sleep 12
ka=$(($(nrp_stat "$ctrl" commands) - cmds))
[ "$(nrp_data_cmds "$ctrl")" = "$data" ] || nrp_fail "data commands were sent while idle"
[ "$ka" -ge 3 ] || nrp_fail "only $ka commands in 12 s idle with keep_alive_tmo=4"
[ "$(nrp_ctrl_state "$ctrl")" = live ] || nrp_fail "$ctrl $(nrp_ctrl_state "$ctrl") after 12 s idle"
[ "$(nrp_stat "$ctrl" recoveries)" = 0 ] || nrp_fail "an error recovery ran while idle"
echo "keep-alive: $ka commands in 12 s idle at keep_alive_tmo=4, $ctrl live"

# A flush moves no data: one command, no registration, no payload.
cmds=$(nrp_stat "$ctrl" commands) data=$(nrp_data_cmds "$ctrl")
out=$(nvme flush "$dev" 2>&1) || nrp_fail "nvme flush failed: $out"
[ "$(nrp_data_cmds "$ctrl")" = "$data" ] || nrp_fail "the flush was mapped as a data command"
cmds=$(($(nrp_stat "$ctrl" commands) - cmds))
[ "$cmds" -ge 1 ] || nrp_fail "the flush sent no command"
echo "flush: zero-length command, $cmds command(s), no mapping"

# Asynchronous events: the target announces namespace changes.
nrp_backing_dev ram 16
mkdir "$cfs/subsystems/$NRP_SUBNQN/namespaces/2"
nrp_cleanup_push "rmdir $cfs/subsystems/$NRP_SUBNQN/namespaces/2"
echo "$NRP_DEV" >"$cfs/subsystems/$NRP_SUBNQN/namespaces/2/device_path"
echo 1 >"$cfs/subsystems/$NRP_SUBNQN/namespaces/2/enable" || nrp_fail "cannot enable namespace 2"
nrp_cleanup_push "echo 0 >$cfs/subsystems/$NRP_SUBNQN/namespaces/2/enable"
wait_ns 2 20 || nrp_fail "namespace 2 did not appear on $ctrl after the target added it"
echo "AEN: namespace 2 appeared on $ctrl"
echo 0 >"$cfs/subsystems/$NRP_SUBNQN/namespaces/2/enable"
wait_ns 2 20 gone || nrp_fail "namespace 2 is still on $ctrl after the target removed it"
echo "AEN: namespace 2 went away again"
nrp_fio_verify "$dev" --rw=randwrite --bs=4k --size=4m
[ "$(nrp_stat "$ctrl" recoveries)" = 0 ] || nrp_fail "an error recovery ran"
nrp_dmesg_since | grep -iE "keep.alive|error recovery|reconnect" &&
	nrp_fail "the kernel log shows keep-alive trouble or a recovery"
nrp_pass
