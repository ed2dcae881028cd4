#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# PID 1 inside the guest, after switch_root into the overlay of the host's
# root. Runs the job the host runner described in /nrp-job/job.env, leaves
# results in /nrp-job, and powers the guest off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8

# /tmp stays the overlay's own (already writable, and the checkout may
# live under the host's /tmp).
mount -t tmpfs tmpfs /run
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mount -t tmpfs tmpfs /dev/shm
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t configfs configfs /sys/kernel/config 2>/dev/null
hostname nrp-guest
ip link set lo up

. /nrp-job/job.env
export NRP_TOP NRP_KO NRP_KO_DIR NRP_FOREIGN_KO NRP_KERNEL NRP_DKMS_DIR NRP_DEB_DIR \
	NRP_TIER NRP_MULTIPATH NRP_SMP NRP_ONLINE NRP_HOST_SLOW
# nvme_core's multipath default for this boot, as an admin sets it
[ -z "$NRP_MULTIPATH" ] ||
	echo "options nvme_core multipath=$NRP_MULTIPATH" >/etc/modprobe.d/nrp-guest-multipath.conf

# Install our modules the way "make install" does, so that modprobe,
# dependencies and modprobe.d behave as on a user's machine.
# The host runner already ran depmod over the result.
kmods=/lib/modules/$(uname -r)
cp -r "/nrp-job/modules$kmods/." "$kmods/"

# A job that hangs is killed by the host; a job that ends stops the guest
# here: an immediate reboot, which QEMU's -no-reboot turns into its exit.
# Not a power-off: the demo's kernel has no ACPI to power off with.
poweroff_now() {
	sync
	echo b >/proc/sysrq-trigger
	# The reboot takes 9p away: nothing may be read or executed from it
	# any more, or init dies and the kernel panics. A loop in this
	# (already parsed) function needs nothing.
	while :; do :; done
}
cd "$NRP_TOP" || { echo "nrp-guest: no checkout at $NRP_TOP"; poweroff_now; }
echo "nrp-guest: $(uname -r), running: $NRP_JOB"
bash -c "$NRP_JOB" >/nrp-job/output.txt 2>&1 </dev/null &
job=$!
tail -n +1 -f /nrp-job/output.txt --pid=$job 2>/dev/null &
wait "$job"
rc=$?
sleep 1
if [ -w /sys/kernel/debug/kmemleak ]; then
	# two scans: kmemleak reports an object only once it stayed unreferenced
	echo scan >/sys/kernel/debug/kmemleak
	sleep 5
	echo scan >/sys/kernel/debug/kmemleak
	cat /sys/kernel/debug/kmemleak >/nrp-job/kmemleak.txt
	cat /nrp-job/kmemleak.txt
fi
dmesg >/nrp-job/dmesg.txt
echo "$rc" >/nrp-job/exit-status
echo "nrp-guest: job exited $rc"
poweroff_now
