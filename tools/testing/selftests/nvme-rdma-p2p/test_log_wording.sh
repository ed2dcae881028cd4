#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The kernel log lines that admins and log scrapers grep keep the wording
# of the in-tree nvme_rdma (drivers/nvme/host/rdma.c of the same kernel):
# a command timeout, error recovery, reconnect scheduling, a failed and a
# successful attempt, creating and mapping I/O queues; what we add comes
# after the in-tree text, never instead of it.
#
# A command times out against a target whose backing device is a
# suspended device-mapper table (I/O waits there); the target then goes
# away and comes back (its port) for the reconnect lines.
. "$(dirname "$0")/lib.sh"

cfs=/sys/kernel/config/nvmet
# tools/setup.sh installs dmsetup: without it the test fails, not skips
command -v dmsetup >/dev/null ||
	nrp_fail "dmsetup not installed (Debian package dmsetup; tools/setup.sh installs it)"
# no udev in the guest: libdevmapper makes its nodes and waits for nobody
export DM_DISABLE_UDEV=1

nrp_rdma_setup "${NRP_RDMA_TYPE:-rxe}"
nrp_backing_dev ram 64
modprobe dm-mod 2>/dev/null
[ -c /dev/mapper/control ] ||
	nrp_skip "no device-mapper in this kernel (the stalled target needs dm-linear)"
dmsetup create nrp-stall --table "0 $((64 * 2048)) linear $NRP_DEV 0" ||
	nrp_fail "cannot create the device-mapper target"
nrp_cleanup_push "dmsetup remove nrp-stall"
nrp_cleanup_push "dmsetup resume nrp-stall"
# no udev in the guest to make /dev/mapper links: the kernel's own node
dm=$(dmsetup info -c --noheadings -o blkdevname nrp-stall) || nrp_fail "dmsetup info failed"
[ -b "/dev/$dm" ] || nrp_fail "no /dev/$dm"
nrp_nvmet_setup "/dev/$dm"
nrp_load_ours

# short I/O timeouts: the tag sets take the value when they are made
old_tmo=$(cat /sys/module/nvme_core/parameters/io_timeout)
echo 4 >/sys/module/nvme_core/parameters/io_timeout
nrp_cleanup_push "echo $old_tmo >/sys/module/nvme_core/parameters/io_timeout"

nrp_dmesg_mark
nrp_connect --nr-io-queues=1 --reconnect-delay=1 --ctrl-loss-tmo=60; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"

# 1. a timeout and the error recovery it starts
dmsetup suspend --nolockfs --noflush nrp-stall || nrp_fail "cannot suspend the target's device"
timeout 60 dd if="$dev" of=/dev/null bs=4k count=1 skip=77 iflag=direct status=none &
dd_pid=$!
nrp_dmesg_wait "$ctrl: starting error recovery" 20 ||
	nrp_fail "no error recovery 20 s after a command stalled on the target"
dmsetup resume nrp-stall || nrp_fail "cannot resume the target's device"
nrp_wait_state "$ctrl" 30 || nrp_fail "$ctrl not live after the timeout's recovery"
wait $dd_pid || echo "the timed-out read failed (allowed)"

# 2. reconnects: the target's port goes away for a few attempts
rm "$cfs/ports/1/subsystems/$NRP_SUBNQN" || nrp_fail "cannot disable the target port"
nrp_dmesg_wait "$ctrl: Failed reconnect attempt" 20 ||
	nrp_fail "no failed reconnect attempt 20 s after the target went away"
ln -s "$cfs/subsystems/$NRP_SUBNQN" "$cfs/ports/1/subsystems/" ||
	nrp_fail "cannot re-enable the target port"
nrp_wait_state "$ctrl" 30 || nrp_fail "$ctrl not live after the port came back"
nrp_dmesg_wait "$ctrl: Successfully reconnected" 10 ||
	nrp_fail "$ctrl live again, but no 'Successfully reconnected' in the log"
log=$(nrp_dmesg_since | grep " $ctrl: ")

# in-tree format strings, as egrep patterns over the whole line tail
want=(
	"creating [0-9]+ I/O queues\."
	"mapped [0-9]+/[0-9]+/[0-9]+ default/read/poll queues\."
	"I/O [0-9]+ QID [0-9]+ timeout"
	"starting error recovery"
	"Reconnecting in [0-9]+ seconds\.\.\."
	"Failed reconnect attempt [0-9]+"
	"Successfully reconnected \([0-9]+ attempts\)"
	"new ctrl: NQN \"$NRP_SUBNQN\", addr "
)
for w in "${want[@]}"; do
	line=$(echo "$log" | grep -E -m1 "$ctrl: $w") ||
		nrp_fail "no line in the in-tree wording '$w'; ours were: $(echo "$log" | tail -n 12)"
	echo "ok: ${line#*] }"
done
nrp_must nvme disconnect -n "$NRP_SUBNQN"
nrp_assert_no_splat
nrp_pass
