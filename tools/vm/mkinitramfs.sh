#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build the tiny initramfs that mounts the host's root read-only over 9p,
# stacks a tmpfs on it and switches into it: the guest then runs the host's
# own nvme-cli, fio, iproute2 and mkfs tools without copying any binary.
#
#   tools/vm/mkinitramfs.sh MODULES_DIR OUT
#
# MODULES_DIR is /lib/modules/<release> of the guest kernel; the few modules
# needed to reach the root (virtio, 9p, overlay) are copied in when the
# kernel has them as modules. Built-in drivers need nothing.
set -euo pipefail

moddir=$1 out=$2
bb=/bin/busybox
[ -x "$bb" ] && file -L "$bb" | grep -q 'statically linked' ||
	{ echo "error: static busybox missing (apt-get install busybox-static)" >&2; exit 1; }

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,sbin,proc,sys,dev,host,upper,newroot,modules}
cp "$bb" "$root/bin/busybox"
for applet in $("$bb" --list); do
	# a link named busybox would replace the binary with a self-link
	[ "$applet" = busybox ] && continue
	ln -sf busybox "$root/bin/$applet"
done

# In load order: dependencies first (from 6.12 on 9pnet needs netfs).
# Debian compresses the modules of 6.12 (.ko.xz); busybox's insmod takes
# them uncompressed.
n=0
for m in virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev \
	 virtio_pci netfs fscache 9pnet 9pnet_virtio 9p overlay; do
	f=$(find "$moddir/kernel" \( -name "$m.ko" -o -name "$m.ko.xz" \) \
		2>/dev/null | head -n1)
	[ -n "$f" ] || continue
	n=$((n + 1))
	dst=$root/modules/$(printf %02d $n)-$m.ko
	case "$f" in
	*.xz)	xz -dc "$f" >"$dst" ;;
	*)	cp "$f" "$dst" ;;
	esac
done

cat >"$root/init" <<'INIT'
#!/bin/sh
# PID 1 of the initramfs: reach the host root, then hand over to the
# guest init that the runner named in the job file.
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in /modules/*.ko; do
	[ -e "$m" ] && insmod "$m"
done
fail() {
	echo "nrp-initramfs: $*"
	# QEMU -no-reboot exits (no ACPI power-off on the demo's kernel)
	echo b >/proc/sysrq-trigger
	sleep 10
}
# cache=loose: without a page cache in the guest, every exec faults the
# binary and its libraries in over 9p a page at a time, again for every
# run (fio, with 64 libraries, took 10 to 27 s to print its version). The
# host's root does not change under a running guest; what the host writes
# while a guest runs goes through the job share, which stays uncached.
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose hostroot /host ||
	fail "cannot mount hostroot"
mount -t tmpfs -o size=75% tmpfs /upper
mkdir -p /upper/upper /upper/work
mount -t overlay overlay -o lowerdir=/host,upperdir=/upper/upper,workdir=/upper/work \
	/newroot || fail "cannot mount overlay"
mkdir -p /newroot/nrp-job
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 job /newroot/nrp-job ||
	fail "cannot mount job share"
[ -r /newroot/nrp-job/job.env ] || fail "no job.env"
. /newroot/nrp-job/job.env
# A root other than the host's (run-guest.sh --root) gets the checkout
# at its own path, from a share of its own.
if [ -n "${NRP_TOP_SHARE:-}" ]; then
	mkdir -p "/newroot$NRP_TOP"
	mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose top "/newroot$NRP_TOP" ||
		fail "cannot mount the checkout"
fi
# The guest kernel's own modules, when they are not the host's; writable
# through an overlay so that the module under test can be installed there.
if [ -n "$NRP_GUEST_MODULES" ]; then
	kver=$(uname -r)
	mkdir -p "/newroot/lib/modules/$kver" /upper/mods /upper/mods-work
	mount -t overlay overlay \
		-o "lowerdir=/newroot$NRP_GUEST_MODULES,upperdir=/upper/mods,workdir=/upper/mods-work" \
		"/newroot/lib/modules/$kver" || fail "cannot mount guest modules"
fi
mount --move /proc /newroot/proc
mount --move /sys /newroot/sys
mount --move /dev /newroot/dev
exec switch_root /newroot /bin/bash "$NRP_TOP/tools/vm/guest-init.sh"
INIT
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$out.tmp"
mv "$out.tmp" "$out"
