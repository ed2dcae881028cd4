#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The target goes away under load and comes back: the controller notices,
# reconnects every reconnect_delay seconds until the port is back, queued
# I/O completes and verifies. A target that stays away longer than
# ctrl_loss_tmo costs the controller, after ctrl_loss_tmo / reconnect_delay
# attempts, and I/O fails instead of hanging.
#
# Every step waits on what it needs, not for a time: writes in flight
# before the target goes, the controller leaving LIVE, four reconnect
# attempts counted (reconnect_attempts in debugfs). The attempts' spacing
# is read from the kernel log's timestamps of "Failed reconnect attempt N"
# and must be reconnect_delay (sysfs) and not much more.
#
# (Soft RDMA between two addresses of one guest loops back inside the
# driver whatever the link state, so a link flap needs two guests; taking
# the nvmet port away is the single-guest way to lose the connection.)
. "$(dirname "$0")/lib.sh"

cfs=/sys/kernel/config/nvmet
port_off() { rm "$cfs/ports/1/subsystems/$NRP_SUBNQN"; }
port_on() { ln -s "$cfs/subsystems/$NRP_SUBNQN" "$cfs/ports/1/subsystems/"; }
mib=48
log=/tmp/nrp-fio-restart.log

# "SECONDS N" of each "Failed reconnect attempt N" of controller $1 since
# the mark, from the kernel's timestamps
attempts_logged() {
	nrp_dmesg_since |
		sed -n "s/^\[ *\([0-9.]*\)\] nvme $1: Failed reconnect attempt \([0-9]*\):.*/\1 \2/p"
}

# Fail unless the attempts of controller $1 logged since the mark are
# numbered $2, $2+1, ... and each ended reconnect_delay ($3) after the one
# before, plus its own time: a refused connect, a tenth of a second under
# TCG on a loaded host (half a second allowed, times NRP_SLOW). No gap may
# be shorter than the delay; the median gap must not be longer: a vCPU
# the host did not run for a moment stretches one gap (a CI run saw 1.03,
# 1.03, 1.54), a driver that waits twice as long stretches them all.
check_spacing() {
	local ctrl=$1 first=$2 delay=$3 out
	attempts_logged "$ctrl" >/tmp/nrp-attempts.txt
	out=$(awk -v n="$first" -v d="$delay" -v slow="$NRP_SLOW" '
		$2 != n + NR - 1 { printf "attempt %s logged where %d was due; ", $2, n + NR - 1; bad = 1 }
		NR > 1 {
			g = $1 - t
			gaps = gaps sprintf(" %.2f", g)
			gap[NR - 1] = g
			# a jiffy early at most: the delayed work counts in jiffies
			if (g < d - 0.01) bad = 1
		}
		{ t = $1 }
		END {
			m = NR - 1
			# no gap to judge is a failure too
			if (m < 1) bad = 1
			# insertion sort: mawk and busybox awk have no asort()
			for (i = 2; i <= m; i++)
				for (j = i; j > 1 && gap[j - 1] > gap[j]; j--) {
					x = gap[j]; gap[j] = gap[j - 1]; gap[j - 1] = x
				}
			med = m % 2 ? gap[(m + 1) / 2] : (gap[m / 2] + gap[m / 2 + 1]) / 2
			if (m > 0 && med > d + 0.5 * slow) bad = 1
			printf "%d attempts, seconds between them:%s (median %.2f)", NR, gaps, med
			exit bad
		}' /tmp/nrp-attempts.txt) ||
		nrp_fail "reconnect attempts not every reconnect_delay=${delay}s: $out"
	echo "$out (reconnect_delay ${delay}s)"
}

nrp_std_setup 128
nrp_connect --reconnect-delay=1 --ctrl-loss-tmo=60 --keep-alive-tmo=5; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
delay=$(cat "/sys/class/nvme/$ctrl/reconnect_delay")
nrp_expect "reconnect_delay (sysfs)" "$delay" 1
nrp_expect "ctrl_loss_tmo (sysfs)" "$(cat "/sys/class/nvme/$ctrl/ctrl_loss_tmo")" 60
con0=$(nrp_stat "$ctrl" reconnects)
att0=$(nrp_stat "$ctrl" reconnect_attempts)

fio --name=nrp --filename="$dev" --direct=1 --ioengine=libaio --rw=randwrite \
	--bs=16k --iodepth=16 --size=${mib}m --verify=crc32c --verify_fatal=1 \
	--do_verify=1 --output-format=terse --terse-version=3 --output=$log &
fio_pid=$!
nrp_cleanup_push "kill $fio_pid 2>/dev/null || true"
nrp_wait_writing "$ctrl" $fio_pid 32 60
case $? in
1) nrp_fail "no writes in flight on $ctrl within $((60 * NRP_SLOW)) s" ;;
2) nrp_fail "fio ended before the target went away: $(tail -n 3 $log)" ;;
esac
nrp_dmesg_mark
port_off || nrp_fail "cannot disable the target port"
echo "target port down with $NRP_INFLIGHT writes in flight"
for _ in $(seq 100); do
	state=$(nrp_ctrl_state "$ctrl")
	[ "$state" != live ] && break
	nrp_nap 0.2
done
echo "$ctrl state with the target gone: $state"
[ "$state" = connecting ] || [ "$state" = resetting ] ||
	nrp_fail "$ctrl did not start recovery ($state)"
# four failed attempts: three gaps, so that the median is one of them
nrp_wait_stat "$ctrl" reconnect_attempts $((att0 + 4)) $((4 * delay + 30)) ||
	nrp_fail "fewer than 4 reconnect attempts in $((4 * delay + 30)) s: $(nrp_stat "$ctrl" reconnect_attempts) since $att0"
# the fourth attempt is counted when it starts: let it end and be logged
nrp_dmesg_wait "nvme $ctrl: Failed reconnect attempt 4:" 30 ||
	nrp_fail "attempt 4 was counted but never logged as failed"
nrp_running $fio_pid ||
	nrp_fail "fio ended while the target was away (queued I/O failed): $(tail -n 3 $log)"
[ "$(nrp_ctrl_state "$ctrl")" = connecting ] ||
	nrp_fail "$ctrl $(nrp_ctrl_state "$ctrl") while the target is away"
port_on || nrp_fail "cannot re-enable the target port"
echo "target port up"
nrp_wait_state "$ctrl" 60 || nrp_fail "$ctrl did not come back live ($(nrp_ctrl_state "$ctrl"))"
nrp_dmesg_wait "nvme $ctrl: Successfully reconnected" 10 ||
	nrp_fail "$ctrl live again without 'Successfully reconnected' in the kernel log"
failed=$(attempts_logged "$ctrl" | wc -l)
check_spacing "$ctrl" 1 "$delay"
nrp_expect "attempts counted (reconnect_attempts)" \
	$(($(nrp_stat "$ctrl" reconnect_attempts) - att0)) $((failed + 1))
nrp_expect "reconnects counted" $(($(nrp_stat "$ctrl" reconnects) - con0)) 1
ok=$(nrp_dmesg_since | grep -o "nvme $ctrl: Successfully reconnected ([0-9]* attempts)")
nrp_expect "attempts the kernel log reports" "$ok" \
	"nvme $ctrl: Successfully reconnected ($((failed + 1)) attempts)"
wait $fio_pid || { cat $log; nrp_fail "fio failed across the target restart"; }
grep -q 'verify: bad' $log && nrp_fail "data corrupted across the target restart"
nrp_fio_all_verified $log $((mib * 1024)) "target away under writes"
nrp_must nvme disconnect -n "$NRP_SUBNQN"

# ctrl_loss_tmo=4 with reconnect_delay=1 allows 4 attempts: after the
# fourth fails the controller is given up, and queued I/O fails.
nrp_connect --reconnect-delay=1 --ctrl-loss-tmo=4; ctrl=$NRP_CTRL
dev=$(nrp_ns_dev "$ctrl") || nrp_fail "no namespace"
nrp_dmesg_mark
port_off
t0=$(nrp_now)
# The write fails once the controller is given up: 4 attempts a second
# apart, each refused at once, so a few seconds. A write still hanging
# after 20 s (x NRP_SLOW) is the hang this asserts against, not a failure.
bound=$((20 * NRP_SLOW))
timeout $((bound + 5)) dd if=/dev/zero of="$dev" bs=64k count=16 oflag=direct status=none
rc=$?
secs=$(nrp_secs "$t0" "$(nrp_now)")
[ "$rc" != 0 ] || nrp_fail "write succeeded with the target gone"
[ "$rc" != 124 ] || nrp_fail "the write still hung $((bound + 5))s after the target went, ctrl_loss_tmo=4"
awk -v s="$secs" -v m="$bound" 'BEGIN { exit !(s <= m) }' ||
	nrp_fail "the write failed only after ${secs}s, ctrl_loss_tmo=4 (bound ${bound}s)"
nrp_wait_gone "$ctrl" 30 || nrp_fail "$ctrl still exists after ctrl_loss_tmo"
nrp_dmesg_wait "nvme $ctrl: giving up after 4 reconnect attempts" 10 ||
	nrp_fail "$ctrl removed, but not after 4 attempts: $(nrp_dmesg_since | grep "nvme $ctrl: " | tail -n 3)"
check_spacing "$ctrl" 1 1
echo "ctrl_loss_tmo=4: I/O failed after ${secs}s (bound ${bound}s), $ctrl removed after 4 attempts"
port_on
nrp_pass
