#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Boot a guest kernel under QEMU TCG with our module and the host's root,
# run one job in it, bring its output and exit status back.
#
#   tools/vm/run-guest.sh [options] -- COMMAND...
#
#   --kernel NAME             guest kernel: stock, demo, p2p, debug (Linux
#                             6.1), or stock-6.12, p2p-6.12, stock-7.3
#                             (Debian 13's, from tools/vm/debian-root.sh)
#                             (default: stock)
#   --out DIR                 where console.log, output.txt, dmesg.txt go
#                             (default: a new directory under /tmp)
#   --timeout SECONDS         kill the guest after this long (default: 900)
#   --mem MB                  guest memory (default: 3072: room for a 1 GiB RAM-disk target)
#   --smp N                   guest CPUs, QEMU's -smp (default: 2);
#                             "2,maxcpus=240": 240 possible, 2 present
#   --online N                bring only N CPUs online (kernel maxcpus=N),
#                             the others present but offline, as on a host
#                             with SMT turned off at run time. On 6.12
#                             under TCG the only way to many possible CPUs:
#                             it counts QEMU's hotpluggable CPUs only under
#                             a hypervisor it recognises (TCG is none)
#   --qemu ARG                one extra QEMU argument (repeatable), e.g. a
#                             P2P memory device
#   --append ARGS             extra kernel command line arguments
#   --foreign-ko PATH         a module built for another kernel (tests
#                             that the module refuses to load); "later"
#                             when the caller puts it into DIR/foreign.ko
#                             while the guest runs (DIR/foreign.ko.failed
#                             if it cannot), and the test waits for it
#   --dkms                    build the module with DKMS on the host for this
#                             (stock) kernel, tools/vm/build-dkms.sh, and
#                             name the result in NRP_DKMS_DIR for
#                             test_dkms_load.sh, which installs it in the guest
#   --deb                     build the Debian package on the host, two
#                             versions of it (tools/vm/build-deb.sh), and
#                             name the result in NRP_DEB_DIR for
#                             test_deb_*.sh, which install it in the guest
#   --gpu-mem SIZE            size of the simulated GPU BAR, a QEMU ivshmem
#                             device backed outside guest RAM (default
#                             2G: two 1 GiB checkpoint regions; 0 for none)
#   --multipath Y|N           nvme_core's multipath default in the guest
#                             (modprobe.d; a test may still reload it with
#                             another value). Default: N on the debug
#                             kernel (see tools/vm/known-splats.conf),
#                             else the kernel's own (Y, as on Debian)
#   --root debian13           boot into the Debian 13 root
#                             (tools/vm/debian-root.sh --for user) instead
#                             of this host's root: a Debian 13 machine's
#                             userland, apt, DKMS and installed kernels,
#                             with the checkout at its own path (a kernel
#                             of Debian 13's: stock-7.3); --deb then
#                             builds the package test's headers from it
#   --icount                  tie the guest clock to executed instructions
#                             (QEMU -icount shift=0,sleep=off: 1 ns per
#                             instruction, idle time skipped), so that
#                             guest time measures cost independent of host
#                             load; one host thread runs all vCPUs
#
# While the guest runs, DIR/qemu.pid holds QEMU's pid; ending this script
# (any signal but KILL) ends QEMU too.
#
# COMMAND runs in the guest with bash, in the checkout. Its environment
# has NRP_HOST_SLOW (the caller's, default 1: how many times slower than
# the fastest machine of its kind this host is, tools/vm/calibrate.sh;
# the tests' time limits scale by it), NRP_KO (our module for this
# kernel), NRP_KO_DIR (the fixtures) and
# the caller's NRP_TIER (run-all.sh's tier, check or full; empty when run
# by hand), which tests with a costly size read to pick it per tier.
# The guest runs with -nic none: no packet leaves it.
#
# Exit status: 0 when the job passed and the kernel log is clean; 1 when
# the job failed (its own status is in DIR/exit-status), the console
# shows a kernel splat (BUG, WARNING, Oops, KASAN, lockdep, hung task,
# kmemleak) or the kernel log could not be checked (tools/vm/check-klog.sh
# leaves its verdict in DIR/klog-verdict); 2 when the guest timed out or
# ended without a result; 3 when nothing booted at all: the kernel, the
# module, a fixture or a host tool did not build, or the module index could
# not be made. A caller must not take 3 for a finished boot: no test ran.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# Until QEMU starts, any way out but a clean one (an nrp_die, a failing
# command under set -e) is a failure before boot.
NRP_PREBOOT_STATUS=3
preboot=1
trap 'rc=$?; [ "$rc" = 0 ] || [ -z "$preboot" ] || exit $NRP_PREBOOT_STATUS' EXIT

kernel=stock out= timeout=900 mem=3072 smp=2 online= foreign= gpu_mem=2G qemu_extra=() append=
icount=0 dkms=0 deb=0 multipath= root=
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel)	kernel=$2; shift 2 ;;
	--out)		out=$2; shift 2 ;;
	--timeout)	timeout=$2; shift 2 ;;
	--mem)		mem=$2; shift 2 ;;
	--smp)		smp=$2; shift 2 ;;
	--online)	online=$2; shift 2 ;;
	--qemu)		qemu_extra+=("$2"); shift 2 ;;
	--append)	append+=" $2"; shift 2 ;;
	--foreign-ko)	foreign=$2; shift 2 ;;
	--gpu-mem)	gpu_mem=$2; shift 2 ;;
	--dkms)		dkms=1; shift ;;
	--deb)		deb=1; shift ;;
	--icount)	icount=1; shift ;;
	--multipath)	multipath=$2; shift 2 ;;
	--root)		root=$2; shift 2
			[ "$root" = debian13 ] || nrp_die "--root: debian13, not '$root'" ;;
	--)		shift; break ;;
	-h|--help)	sed -n '3,/^set -euo/p' "$0" | sed 's/^# \{0,1\}//; /^set -euo/d'; exit 0 ;;
	*)		nrp_die "unknown option $1 (see --help)" ;;
	esac
done
[ $# -gt 0 ] || nrp_die "no command to run in the guest (see --help)"
[[ -z $online || $online =~ ^[1-9][0-9]*$ ]] || nrp_die "--online takes a CPU count, not '$online'"
job="$*"

nrp_use_kernel "$kernel"
# The guest's root: this host's, or the Debian 13 root with what a Debian
# 13 user has installed (and the kernel of its own it boots)
rootdir=/
if [ -n "$root" ]; then
	rootdir=$("$NRP_TOP/tools/vm/debian-root.sh" --for user path)
	[ "$NRP_FLAVOUR" = stock ] && [ "$NRP_STOCK_ROOT" = "$rootdir" ] ||
		nrp_die "--root debian13 boots a kernel of that root (stock-7.3), not '$kernel'"
fi
case $multipath in
Y|N)	;;
"")	[ "$NRP_FLAVOUR" != debug ] || multipath=N ;;
*)	nrp_die "--multipath takes Y or N, not '$multipath'" ;;
esac
case "$NRP_FLAVOUR" in
stock)
	# Debian's kernel: this machine's, or (a series its Debian does not
	# carry) the Debian 13 root's, whose modules the guest then mounts
	# as for a kernel we built
	[ -z "$NRP_STOCK_ROOT" ] || "$NRP_TOP/tools/vm/debian-root.sh" path >/dev/null
	NRP_STOCK_KVER=${NRP_STOCK_KVER:-$(nrp_stock_kver "$NRP_SERIES" "$NRP_STOCK_ROOT")}
	[ -n "$NRP_STOCK_KVER" ] || nrp_die "no stock kernel of Linux $NRP_SERIES installed (tools/setup.sh installs it)"
	kimage=$NRP_STOCK_ROOT/boot/vmlinuz-$NRP_STOCK_KVER
	kmods=$NRP_STOCK_ROOT/lib/modules/$NRP_STOCK_KVER
	guest_mods=
	# (booted into that root, the guest has them at their own place)
	[ -z "$NRP_STOCK_ROOT" ] || [ -n "$root" ] || guest_mods=$kmods
	[ -r "$kimage" ] || nrp_die "$kimage missing (apt-get install linux-image-$NRP_STOCK_KVER)"
	;;
demo|p2p|debug)
	kd=$("$NRP_TOP/tools/vm/build-kernel.sh" "$NRP_FLAVOUR")
	kimage=$kd/bzImage
	kmods=$(echo "$kd"/mods/lib/modules/*)
	guest_mods=$kmods
	;;
esac

kodir=$("$NRP_TOP/tools/vm/build-module.sh" "$kernel")
# User tools run in the guest from the host's build, like every binary there.
for t in "$NRP_TOP"/tools/*/Makefile; do
	[ -e "$t" ] || continue
	grep -q '^# nrp-host-tool' "$t" || continue
	make -s -C "$(dirname "$t")" || nrp_die "building $(dirname "$t") failed"
done

# The initramfs depends only on the kernel's modules and its own recipe.
initrd_key=$( { echo "$kmods"; cat "$NRP_TOP/tools/vm/mkinitramfs.sh"; } | sha256sum | cut -c1-12)
initrd=$NRP_CACHE/initramfs/$(basename "$kmods")-$initrd_key.cpio.gz
if [ ! -e "$initrd" ]; then
	mkdir -p "$(dirname "$initrd")"
	"$NRP_TOP/tools/vm/mkinitramfs.sh" "$kmods" "$initrd"
fi

[ -n "$out" ] || out=$(mktemp -d /tmp/nrp-guest.XXXXXX)
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -rf "$out"/{console.log,output.txt,dmesg.txt,dmesg-*.txt,kmemleak*.txt,exit-status,splats.txt,known-splats.txt,klog-verdict,klog-check.err,modules,qemu.pid}

# Install our modules as "make install" would, with the module index made
# here: depmod over 9p under TCG takes minutes, natively a second.
krel=$(basename "$kmods")
stage=$out/modules/lib/modules/$krel
mkdir -p "$stage/updates/nvme-rdma-p2p"
ln -s "$kmods/kernel" "$stage/kernel"
cp "$kmods"/modules.builtin* "$kmods"/modules.order "$stage/" 2>/dev/null || true
cp "$kodir"/*.ko "$stage/updates/nvme-rdma-p2p/"
depmod -b "$out/modules" "$krel" || nrp_die "depmod for $krel failed"
rm "$stage/kernel"
# DKMS's own build of the module (a few tens of seconds, then cached until
# the tree changes); a failed build fails test_dkms_load.sh, not the boot.
dkms_dir=
if [ "$dkms" = 1 ]; then
	dkms_dir=$("$NRP_TOP/tools/vm/build-dkms.sh" "$kernel" 2>"$out/dkms-build.log") ||
		{ nrp_log "dkms build failed, see $out/dkms-build.log"; dkms_dir=failed; }
fi
# The package, made by "make deb" (seconds, then cached until what it is
# made of changes); a failed build fails test_deb_*.sh, not the boot.
deb_dir=
if [ "$deb" = 1 ]; then
	deb_dir=$("$NRP_TOP/tools/vm/build-deb.sh" ${root:+--root} 2>"$out/deb-build.log") ||
		{ nrp_log "package build failed, see $out/deb-build.log"; deb_dir=failed; }
fi
cat >"$out/job.env" <<ENV
NRP_TOP='$NRP_TOP'
NRP_KERNEL='$kernel'
NRP_TIER='${NRP_TIER:-}'
NRP_KO='$kodir/nvme-rdma-p2p.ko'
NRP_KO_DIR='$kodir'
NRP_FOREIGN_KO='$([ "$foreign" = later ] && echo /nrp-job/foreign.ko || echo "$foreign")'
NRP_GUEST_MODULES='$guest_mods'
NRP_DKMS_DIR='$dkms_dir'
NRP_DEB_DIR='$deb_dir'
NRP_MULTIPATH='$multipath'
NRP_SMP='$smp'
NRP_ONLINE='$online'
NRP_HOST_SLOW='${NRP_HOST_SLOW:-1}'
NRP_TOP_SHARE='$([ -n "$root" ] && echo 1)'
NRP_JOB='$(printf '%s' "$job" | sed "s/'/'\\\\''/g")'
ENV

# TCG runs a guest many times slower than hardware, more so under KASAN and
# lockdep: the soft-lockup watchdog then fires on a healthy kernel, so it
# is off. Hung tasks are still detected (hung_task_timeout_secs).
cmdline="console=ttyS0 panic=-1 loglevel=6 nokaslr nosoftlockup"
cmdline+=" rcupdate.rcu_cpu_stall_timeout=300"
# The default 128 KiB log holds a few minutes of the suite: a CI run lost
# the blocked-task dump of a failing test to the fuzz test's thousand
# refusals that followed it. dmesg.txt keeps the whole boot.
cmdline+=" log_buf_len=16M"
# A guest without an RNG device and without RANDOM_TRUST_CPU (our
# allnoconfig kernels) may never initialize its CRNG, and then user space
# that asks getrandom() not to block gets EAGAIN (nvme gen-dhchap-key fails
# without a word). The emulated CPU has RDRAND: trust it, as Debian does.
cmdline+=" random.trust_cpu=on$append"
[ -z "$online" ] || cmdline+=" maxcpus=$online"
accel=tcg
qemu=(qemu-system-x86_64 -accel "$accel" -cpu max -smp "$smp" -m "$mem"
	-nographic -nic none -no-reboot
	-kernel "$kimage" -initrd "$initrd"
	-append "$cmdline"
	-virtfs "local,path=$rootdir,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
	-virtfs "local,path=$out,mount_tag=job,security_model=none,multidevs=remap"
	"${qemu_extra[@]}")
# sleep=off: an idle guest's clock jumps to its next timer instead of
# waiting for the host's, so guest time is instructions plus skipped idle.
[ "$icount" = 0 ] || qemu+=(-icount shift=0,sleep=off)
# another root has the checkout at its own path, as the host's has
[ -z "$root" ] ||
	qemu+=(-virtfs "local,path=$NRP_TOP,mount_tag=top,security_model=none,readonly=on,multidevs=remap")
# A GPU's memory window stand-in: BAR2 of ivshmem, outside guest RAM.
if [ "$gpu_mem" != 0 ]; then
	qemu+=(-object "memory-backend-ram,id=gpumem,size=$gpu_mem"
	       -device ivshmem-plain,memdev=gpumem)
fi
printf '%q ' "${qemu[@]}" >"$out/qemu-cmdline"

nrp_log "guest ($kernel) starting, output in $out"
# Whatever ends this script (a signal from a caller, an error) ends the
# guest too: a QEMU is never left behind.
qpid=
preboot=
trap '[ -z "$qpid" ] || kill "$qpid" 2>/dev/null' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT HUP
"${qemu[@]}" </dev/null >"$out/console.log" 2>&1 &
qpid=$!
echo "$qpid" >"$out/qemu.pid"
start=$SECONDS
timed_out=0
while kill -0 "$qpid" 2>/dev/null; do
	if [ $((SECONDS - start)) -ge "$timeout" ]; then
		timed_out=1
		kill "$qpid" 2>/dev/null
		sleep 2
		kill -9 "$qpid" 2>/dev/null || true
		break
	fi
	sleep 1
done
wait "$qpid" 2>/dev/null || true
qpid=
rm -f "$out/qemu.pid"
elapsed=$((SECONDS - start))

# Anything the kernel says is wrong fails the run, whatever the job said,
# except reports listed with their reason in known-splats.conf (upstream
# bugs this project does not cause); those are shown, not hidden. A check
# that could not decide (a malformed known-splats.conf line, the checker's
# own error) fails the run too: DIR/klog-verdict says which it was.
splat_rc=0
"$NRP_TOP/tools/vm/check-klog.sh" --kernel "$kernel" "$out" || splat_rc=$?
if [ -s "$out/known-splats.txt" ] || grep -q '^known ' "$out/splats.txt" 2>/dev/null; then
	nrp_log "guest ($kernel): known upstream kernel reports (not failures):"
	{ grep -h '^known ' "$out/known-splats.txt" "$out/splats.txt" 2>/dev/null || true; } |
		sort -u -t: -k3 | head -n 5 >&2
fi
if [ "$splat_rc" = 1 ]; then
	nrp_log "guest ($kernel): kernel reported problems:"
	grep '^unknown' "$out/splats.txt" | head -n 40 >&2
	rc=1
elif [ "$splat_rc" != 0 ]; then
	nrp_log "guest ($kernel): the kernel log could not be checked: $(cat "$out/klog-verdict" 2>/dev/null)"
	rc=1
elif [ "$timed_out" = 1 ]; then
	nrp_log "guest ($kernel): timed out after ${timeout}s; last console lines:"
	tail -n 30 "$out/console.log" >&2
	rc=2
elif [ ! -s "$out/exit-status" ]; then
	nrp_log "guest ($kernel): ended without a result; last console lines:"
	tail -n 30 "$out/console.log" >&2
	rc=2
else
	# the job's own status stays in exit-status; ours is 0 or 1
	rc=$(cat "$out/exit-status")
	[ "$rc" = 0 ] || rc=1
fi
nrp_log "guest ($kernel) done in ${elapsed}s, status $rc"
exit "$rc"
