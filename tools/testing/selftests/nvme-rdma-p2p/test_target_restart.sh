#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The target goes away under load and comes back: the controller notices,
# reconnects every reconnect_delay seconds until the port is back, queued
# I/O completes and verifies. A target that stays away longer than
# ctrl_loss_tmo costs the controller, and I/O fails instead of hanging.
#
# (Soft RDMA between two addresses of one guest loops back inside the
# driver whatever the link state, so a link flap needs two guests; taking
# the nvmet port away is the single-guest way to lose the connection.)
. "$(dirname "$0")/lib.sh"

cfs=/sys/kernel/config/nvmet
port_off() { rm "$cfs/ports/1/subsystems/$NRP_SUBNQN"; }
port_on() { ln -s "$cfs/subsystems/$NRP_SUBNQN" "$cfs/ports/1/subsystems/"; }

nrp_std_setup 128
nrp_connect --reconnect-delay=1 --ctrl-loss-tmo=60 --keep-alive-tmo=5; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
before=$(nrp_stat "$ctrl" reconnects)

fio --name=nrp --filename="$dev" --direct=1 --ioengine=libaio --rw=randwrite \
	--bs=16k --iodepth=16 --size=48m --verify=crc32c --verify_fatal=1 \
	--do_verify=1 --output=/tmp/nrp-fio-restart.log &
fio_pid=$!
sleep 3
port_off || nrp_fail "cannot disable the target port"
echo "target port down"
for i in $(seq 100); do
	[ "$(nrp_ctrl_state "$ctrl")" != live ] && break
	sleep 0.2
done
state=$(nrp_ctrl_state "$ctrl")
echo "$ctrl state with the target gone: $state"
[ "$state" = connecting ] || [ "$state" = resetting ] ||
	nrp_fail "$ctrl did not start recovery ($state)"
sleep 4
attempts=$(nrp_stat "$ctrl" reconnect_attempts)
echo "reconnect attempts while the target is gone: $attempts"
port_on || nrp_fail "cannot re-enable the target port"
echo "target port up"
nrp_wait_state "$ctrl" 60 || nrp_fail "$ctrl did not come back live ($(nrp_ctrl_state "$ctrl"))"
wait $fio_pid || { cat /tmp/nrp-fio-restart.log; nrp_fail "fio failed across the target restart"; }
grep -q 'verify: bad' /tmp/nrp-fio-restart.log && nrp_fail "data corrupted across the target restart"
after=$(nrp_stat "$ctrl" reconnects)
echo "reconnects: $before -> $after; fio completed and verified"
[ "$after" != missing ] && [ "$after" -gt "$before" ] ||
	nrp_fail "no reconnect counted although the target went away"
nrp_must nvme disconnect -n "$NRP_SUBNQN"

# ctrl_loss_tmo: 4 s of absence with reconnect_delay 1 gives up the controller.
nrp_connect --reconnect-delay=1 --ctrl-loss-tmo=4; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
port_off
t0=$(date +%s)
timeout 60 dd if=/dev/zero of="$dev" bs=64k count=16 oflag=direct status=none &&
	nrp_fail "write succeeded with the target gone"
nrp_wait_gone "$ctrl" 30 || nrp_fail "$ctrl still exists after ctrl_loss_tmo"
echo "ctrl_loss_tmo=4: I/O failed and $ctrl was removed after $(($(date +%s) - t0)) s"
port_on
nrp_pass
